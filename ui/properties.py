# SPDX-License-Identifier: GPL-3.0-or-later
"""Settings stored in the .blend: IK chains on armature objects, bake options on the scene."""

import bpy

from ..ik_core.solvers import AUTO, SOLVER_CHOICES, SOLVER_LABELS
from ..ik_core.solvers.choice import SOLVER_DESCRIPTIONS
from ..operators.files import BLEND_RELATIVE
from ..operators.frames import RANGE_ITEMS

SOLVER_ITEMS = [(name, SOLVER_LABELS[name], SOLVER_DESCRIPTIONS[name]) for name in SOLVER_CHOICES]
MODE_ITEMS = [
    ("REACH", "Reach", "The chain's tip reaches the target"),
    ("AIM", "Aim", "An axis of the tip bone points at the target (heads, eyes, a turning spine, a turret)"),
]
AXIS_ITEMS = [(key, label, f"The tip bone's {label} axis") for key, label in
              (("X", "+X"), ("NEG_X", "-X"), ("Y", "+Y"), ("NEG_Y", "-Y"), ("Z", "+Z"), ("NEG_Z", "-Z"))]
UP_AXIS_ITEMS = [("NONE", "None", "No up axis: the twist about the aim axis is left to the smallest turn")] + AXIS_ITEMS


GROUND_ITEMS = [
    ("PLANE", "Plane", "A horizontal ground plane at Ground Height"),
    ("COLLECTION", "Collection", "The meshes of a collection, measured by casting rays down onto them"),
]
# The defaults of ik_core.contacts.ContactOptions, spelled out: a property's default must be a constant.
CONTACT_HEIGHT, CONTACT_SPEED, CONTACT_MIN_DURATION = 0.033, 0.1, 0.1


class ARTICULATE_PG_contact(bpy.types.PropertyGroup):
    """One contact interval of a chain's effector with the ground: frames start to end, both included."""

    name: bpy.props.StringProperty(name="Name", default="Contact", description="The contact's name in the list")
    frame_start: bpy.props.IntProperty(
        name="Start", description="First frame of the contact (as the timeline numbers it)"
    )
    frame_end: bpy.props.IntProperty(name="End", description="Last frame of the contact, included")


class ARTICULATE_PG_chain(bpy.types.PropertyGroup):
    """One IK chain of an armature: bones from a root to a tip, a target, a pole and a solver."""

    name: bpy.props.StringProperty(
        name="Name", default="Chain", description="The chain's name, shown in lists and reports"
    )
    enabled: bpy.props.BoolProperty(name="Enabled", default=True, description="Include this chain in bakes")
    tip_bone: bpy.props.StringProperty(name="Tip Bone", description="Last bone of the chain")
    root_bone: bpy.props.StringProperty(
        name="Root Bone", description="First bone of the chain; empty to use Chain Length instead"
    )
    chain_length: bpy.props.IntProperty(
        name="Chain Length", default=2, min=0, description="Bones in the chain when no root bone is set; 0 = all"
    )
    use_tail: bpy.props.BoolProperty(
        name="Use Tail", default=True, description="The tip bone's tail reaches the target (else its head)"
    )
    target: bpy.props.PointerProperty(name="Target", type=bpy.types.Object, description="Object the tip follows")
    target_bone: bpy.props.StringProperty(name="Target Bone", description="Bone of the target armature")
    pole: bpy.props.PointerProperty(name="Pole", type=bpy.types.Object, description="Object the chain bends toward")
    pole_bone: bpy.props.StringProperty(name="Pole Bone", description="Bone of the pole armature")
    pole_angle: bpy.props.FloatProperty(name="Pole Angle", subtype="ANGLE", description="Roll about the chain axis")
    solver: bpy.props.EnumProperty(
        name="Solver", items=SOLVER_ITEMS, default=AUTO,
        description="How the chain's pose is found; only Two-bone and FABRIK (and Auto when it picks them) honour "
                    "the pole",
    )
    iterations: bpy.props.IntProperty(
        name="Iterations", default=100, min=1, max=10000,
        description="Most solver steps per frame before it gives up (a missed frame is reported)",
    )
    tolerance: bpy.props.FloatProperty(
        name="Tolerance", default=1e-4, min=1e-9, subtype="DISTANCE", description="Position tolerance"
    )
    weight_position: bpy.props.FloatProperty(
        name="Position Weight", default=1.0, min=0.0, max=1.0,
        description="How much reaching the target's position counts against other chains solved together and "
                    "against the rotation (the IK constraint's Weight)",
    )
    use_rotation: bpy.props.BoolProperty(name="Rotation", description="Match the target's orientation too")
    weight_rotation: bpy.props.FloatProperty(
        name="Rotation Weight", default=1.0, min=0.0, max=1.0,
        description="How much matching the target's rotation counts against its position (the IK constraint's "
                    "Rotation weight)",
    )
    influence: bpy.props.FloatProperty(
        name="Influence", default=1.0, min=0.0, max=1.0, subtype="FACTOR",
        description="How far the chain reaches for its target, as the IK constraint's influence: the goal moves "
                    "from the chain's pose without IK toward the target by this much (animatable)",
    )
    use_stretch: bpy.props.BoolProperty(
        name="Stretch", description="Bones with IK Stretch above 0 lengthen toward a target beyond reach, keyed "
                                    "as scale (the IK constraint's Stretch)",
    )
    constraint: bpy.props.StringProperty(
        name="Constraint", description="The IK constraint this chain was created from (on Constraint Bone)"
    )
    constraint_bone: bpy.props.StringProperty(
        name="Constraint Bone", description="The bone that IK constraint sits on: the tip bone, or the bone below "
                                            "it where the constraint's Use Tail is off (empty: the tip bone)"
    )
    mode: bpy.props.EnumProperty(
        name="Mode", items=MODE_ITEMS, default="REACH",
        description="Reach the target with the chain's tip, or aim an axis of the tip bone at it",
    )
    aim_axis: bpy.props.EnumProperty(
        name="Aim Axis", items=AXIS_ITEMS, default="Y", description="Axis of the tip bone that points at the target"
    )
    up_axis: bpy.props.EnumProperty(
        name="Up Axis", items=UP_AXIS_ITEMS, default="NONE",
        description="Axis of the tip bone that turns toward the up direction (world +Z, or the Up Target)",
    )
    up_target: bpy.props.PointerProperty(
        name="Up Target", type=bpy.types.Object, description="Object the up axis turns toward; empty for world +Z"
    )
    aim_spread: bpy.props.FloatProperty(
        name="Spread", default=0.5, min=0.0, max=1.0, subtype="FACTOR",
        description="How the turn is shared along the chain: 0 = the tip bone turns all it can first, 1 = evenly",
    )
    aim_tolerance: bpy.props.FloatProperty(
        name="Aim Tolerance", default=0.000174533, min=1e-7, max=0.1, subtype="ANGLE", precision=3,
        description="Largest angle between the aim axis and the target that counts as aimed",
    )
    tool_link: bpy.props.StringProperty(
        name="Tool Link", description="Robot rigs: the link whose frame reaches the target (solved on the stored model)"
    )
    base_link: bpy.props.StringProperty(
        name="Base Link", description="Robot rigs: the link the chain starts from; empty for the robot's root"
    )
    use_contacts: bpy.props.BoolProperty(
        name="Contacts", default=False,
        description="Plant the target during the chain's contact intervals (held where it landed, blended in and "
                    "out) and keep it above the ground in bakes",
    )
    contacts: bpy.props.CollectionProperty(
        type=ARTICULATE_PG_contact, description="Contact intervals of the chain's effector (Detect Contacts fills it)"
    )
    active_contact: bpy.props.IntProperty(
        name="Active Contact", default=0, min=0, description="The contact selected in the list"
    )
    contact_height: bpy.props.FloatProperty(
        name="Contact Height", default=CONTACT_HEIGHT, min=1e-6, subtype="DISTANCE", unit="LENGTH", precision=3,
        description="Detect Contacts: largest height of the target above its resting height at which a contact "
                    "starts",
    )
    contact_speed: bpy.props.FloatProperty(
        name="Contact Speed", default=CONTACT_SPEED, min=1e-6, unit="VELOCITY", precision=3,
        description="Detect Contacts: largest speed of the target at which a contact starts [m/s]",
    )
    contact_min_duration: bpy.props.FloatProperty(
        name="Shortest Contact", default=CONTACT_MIN_DURATION, min=0.0, unit="TIME_ABSOLUTE", precision=3,
        description="Detect Contacts: contacts shorter than this many seconds are dropped",
    )
    rest_height_auto: bpy.props.BoolProperty(
        name="Auto Rest Height", default=True,
        description="The target's resting height above the ground is measured from its path (its 5th percentile "
                    "height over the range); off: Rest Height",
    )
    rest_height: bpy.props.FloatProperty(
        name="Rest Height", default=0.0, min=0.0, subtype="DISTANCE", unit="LENGTH",
        description="Height of the target above the ground when the effector rests on it (an ankle's height over "
                    "the sole; 0 for a point on the sole)",
    )
    ground: bpy.props.EnumProperty(
        name="Ground", items=GROUND_ITEMS, default="PLANE", description="What the effector stands on"
    )
    ground_height: bpy.props.FloatProperty(
        name="Ground Height", default=0.0, subtype="DISTANCE", unit="LENGTH",
        description="World height of the ground plane",
    )
    ground_collection: bpy.props.PointerProperty(
        name="Ground Collection", type=bpy.types.Collection,
        description="Meshes the effector stands on (stairs, terrain); the ground under it is found by ray casts",
    )
    contact_blend: bpy.props.FloatProperty(
        name="Blend", default=0.1, min=0.0, soft_max=1.0, unit="TIME_ABSOLUTE", precision=3,
        description="Seconds over which a planted target eases out of each contact (no pops)",
    )
    hips: bpy.props.PointerProperty(
        name="Lower Hips", type=bpy.types.Object,
        description="Where a planted target is out of the chain's reach, lower this object (or a bone of it) "
                    "until it is, as Grounder does; empty leaves the hips alone",
    )
    hips_bone: bpy.props.StringProperty(
        name="Hips Bone", description="The bone of Lower Hips to lower (its location is keyed); empty: the object"
    )
    use_foot: bpy.props.BoolProperty(
        name="Plant Foot", default=True,
        description="A leg chain whose tip bone has a foot below it: also hold the ball of the foot (the foot "
                    "bone's tail) through the heel rise, turning the foot about the ankle (its rotation is keyed)",
    )
    foot_bone: bpy.props.StringProperty(
        name="Foot Bone",
        description="The bone below the chain's tip whose tail is the ball of the foot; empty: found (a child at "
                    "the tip's tail reaching forward, e.g. foot.L, ORG-foot.L, LeftAnkle)",
    )


class ARTICULATE_PG_role(bpy.types.PropertyGroup):
    """One humanoid role (pelvis, head, hand_l, ...) and the bone that plays it."""

    role: bpy.props.StringProperty(name="Role", description="The body part (pelvis, spine_1, hand_l, ...)")
    bone: bpy.props.StringProperty(name="Bone", description="The armature's bone that plays this role")


class ARTICULATE_PG_body(bpy.types.PropertyGroup):
    """Full-body settings of a humanoid armature: its role map and its trackers."""

    roles: bpy.props.CollectionProperty(
        type=ARTICULATE_PG_role, description="Body roles and their bones (Detect Roles fills it; edit any bone)"
    )
    active_role: bpy.props.IntProperty(
        name="Active Role", default=0, min=0, description="The role selected in the list"
    )
    head: bpy.props.PointerProperty(name="Head", type=bpy.types.Object, description="Head tracker")
    hand_l: bpy.props.PointerProperty(name="Left Hand", type=bpy.types.Object, description="Left hand tracker")
    hand_r: bpy.props.PointerProperty(name="Right Hand", type=bpy.types.Object, description="Right hand tracker")
    pelvis: bpy.props.PointerProperty(name="Pelvis", type=bpy.types.Object, description="Optional pelvis tracker")
    foot_l: bpy.props.PointerProperty(name="Left Foot", type=bpy.types.Object, description="Optional tracker")
    foot_r: bpy.props.PointerProperty(name="Right Foot", type=bpy.types.Object, description="Optional tracker")
    reference_frame: bpy.props.IntProperty(
        name="Reference Frame", default=1, description="Frame where the body stands with its trackers on (calibration)"
    )
    floor: bpy.props.FloatProperty(
        name="Floor Height", default=0.0, subtype="DISTANCE",
        description="World height of the floor the feet stand on",
    )
    offset_warning: bpy.props.FloatProperty(
        name="Offset Warning", default=0.1, min=0.0, subtype="DISTANCE",
        description="Warn when a tracker is farther than this from its bone at the reference frame",
    )
    last_summary: bpy.props.StringProperty(
        name="Last Full-Body Bake", description="Outcome of the last full-body bake (read only)"
    )
    use_steps: bpy.props.BoolProperty(
        name="Known Steps", default=False,
        description="Time the planned feet's steps by the foot contacts listed here (an annotation, a foot pedal, "
        "a reference motion's contacts) instead of reading them from the head: each gap between two contacts of "
        "a foot is one step (feet with trackers follow their trackers)",
    )
    contacts_l: bpy.props.CollectionProperty(
        type=ARTICULATE_PG_contact, description="Frames on which the left foot rests on the ground (Known Steps)"
    )
    contacts_r: bpy.props.CollectionProperty(
        type=ARTICULATE_PG_contact, description="Frames on which the right foot rests on the ground (Known Steps)"
    )
    active_contact_l: bpy.props.IntProperty(
        name="Active Left Contact", default=0, min=0, description="The left foot's contact selected in its list"
    )
    active_contact_r: bpy.props.IntProperty(
        name="Active Right Contact", default=0, min=0, description="The right foot's contact selected in its list"
    )


class ARTICULATE_PG_branch(bpy.types.PropertyGroup):
    """One IK solution of a robot for its current target."""

    name: bpy.props.StringProperty(name="Branch", description="The branch's joint values, in degrees")
    values: bpy.props.FloatVectorProperty(
        name="Joint Values", size=32, description="The joint values [rad or m], in the order of Joints"
    )
    joints: bpy.props.StringProperty(name="Joints", description="Comma-separated joints the values belong to")


class ARTICULATE_PG_alternative(bpy.types.PropertyGroup):
    """One alternative pose of a chain reaching its target on one frame (see operators/alternatives.py)."""

    name: bpy.props.StringProperty(name="Pose", description="The pose's rank, best first")
    chain: bpy.props.StringProperty(name="Chain", description="The chain the pose belongs to")
    frame: bpy.props.IntProperty(name="Frame", description="The frame whose target the pose reaches")
    dof: bpy.props.IntProperty(name="Variables", description="How many of the values the chain uses")
    values: bpy.props.FloatVectorProperty(
        name="Joint Values", size=32, description="The chain's joint variables [rad], the first Variables of them"
    )
    score: bpy.props.FloatProperty(name="Score", description="Distance plus limit penalty; lower is better")
    distance: bpy.props.FloatProperty(
        name="Distance", subtype="ANGLE", description="Largest joint rotation from the pose the chain had"
    )
    margin: bpy.props.FloatProperty(
        name="Limit Margin", subtype="ANGLE", description="Smallest turn of any joint that reaches a limit"
    )


class ARTICULATE_PG_armature(bpy.types.PropertyGroup):
    """The chains of one armature object, and its full-body settings."""

    chains: bpy.props.CollectionProperty(type=ARTICULATE_PG_chain, description="The armature's IK chains")
    body: bpy.props.PointerProperty(type=ARTICULATE_PG_body, description="Full-body roles and trackers")
    branches: bpy.props.CollectionProperty(
        type=ARTICULATE_PG_branch, description="IK branches of a robot's target (Find IK Branches fills it)"
    )
    active_branch: bpy.props.IntProperty(
        name="Branch", default=0, min=0, description="The branch selected in the list (Use Branch keys it)"
    )
    active_chain: bpy.props.IntProperty(
        name="Active Chain", default=0, min=0, description="The chain selected in the list, shown in the Chain panel"
    )
    alternatives: bpy.props.CollectionProperty(
        type=ARTICULATE_PG_alternative, description="Alternative poses of a chain (Find Alternative Poses fills it)"
    )
    active_alternative: bpy.props.IntProperty(
        name="Alternative Pose", default=0, min=0, description="The pose selected in the list (Use Pose keys it)"
    )
    live: bpy.props.BoolProperty(
        name="Live", description="Re-solve chains whenever a target or pole moves"
    )
    # No update= callback here: on Blender 4.2 a property update function keeps the add-on's
    # module alive past its uninstall and Blender crashes on exit. The live handler polls instead.


class ARTICULATE_PG_settings(bpy.types.PropertyGroup):
    """Scene-wide bake options and the last bake's outcome."""

    frame_range: bpy.props.EnumProperty(
        name="Frames", items=RANGE_ITEMS, default="SCENE",
        description="Which frames chain bakes, full-body bakes, IK/FK switching and Clear work on",
    )
    frame_start: bpy.props.IntProperty(
        name="Start", default=1, description="First frame of the custom range (as the timeline numbers it)"
    )
    frame_end: bpy.props.IntProperty(name="End", default=250, description="Last frame of the custom range, included")
    frame_step: bpy.props.IntProperty(
        name="Step", default=1, min=1, description="Solve and key every this many frames (1: every frame)"
    )
    only_selected: bpy.props.BoolProperty(name="Selected Chain Only", description="Bake only the active chain")
    mute_constraints: bpy.props.BoolProperty(
        name="Mute IK Constraints", default=True, description="Mute the IK constraints chains were converted from"
    )
    mark_missed: bpy.props.BoolProperty(
        name="Mark Missed Frames", default=True, description="Add timeline markers on frames that missed"
    )
    key_tolerance: bpy.props.FloatProperty(
        name="Reduce Keys", default=0.0, min=0.0, soft_max=0.01, subtype="DISTANCE", unit="LENGTH", precision=4,
        description="Key only the frames needed for every chain tip to play within this distance of the full bake "
                    "(0 keys every frame)",
    )
    report_path: bpy.props.StringProperty(
        name="Report File", default="", subtype="FILE_PATH", options=set(BLEND_RELATIVE),
        description="Write each bake's JSON report here (chain, full-body and IK/FK bakes run from the panel; "
                    "per frame: residual, convergence, limits, reasons); empty writes none",
    )
    last_summary: bpy.props.StringProperty(
        name="Last Bake", default="", description="Outcome of the last bake or trajectory check (read only)"
    )


classes = (
    ARTICULATE_PG_contact,
    ARTICULATE_PG_chain,
    ARTICULATE_PG_role,
    ARTICULATE_PG_body,
    ARTICULATE_PG_branch,
    ARTICULATE_PG_alternative,
    ARTICULATE_PG_armature,
    ARTICULATE_PG_settings,
)
