# SPDX-License-Identifier: GPL-3.0-or-later
"""Operators that manage an armature's chains: add, remove, convert IK constraints, write limits back."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import bpy
import numpy as np

from . import bridge, compat, playback
from .polls import armature_poll, chain_poll

# Bones a limb's IK target stands for: Blender's IK constraint for them sits on their parent
# (the forearm for a hand target, the shin for a foot), whose tail is the wrist or ankle.
_LIMB_ENDS = re.compile(r"hand|foot|wrist|ankle|palm|paw|hoof")


def _armature(context: bpy.types.Context) -> bpy.types.Object | None:
    obj = context.object
    return obj if obj is not None and obj.type == "ARMATURE" else None


# Chain edits on an armature linked from a library would be lost on save: refused, as Bake does.
class _ArmatureOperator:
    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return armature_poll(cls, context, editable=True)


class _ChainOperator:
    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return chain_poll(cls, context, editable=True)


def blender_tip(arm: bpy.types.Object, chain) -> str:
    """The tip Blender's IK would give a chain ending at a hand or foot: the bone's parent ("" otherwise).

    A chain here ends at its tip bone's tail (``use_tail``), so a chain whose tip is the hand
    reaches the target with the hand's tail, the knuckles, and bends the wrist. Blender's IK for
    a hand target sits on the forearm (``use_tail`` on), or on the hand with ``use_tail`` off,
    which moves the parent and up and ends at the hand's head (see :func:`blender_chain`): both
    are the chain whose tip is the forearm, as :func:`chain_from_constraint` converts them.
    """
    pb = arm.pose.bones.get(chain.tip_bone) if chain.tip_bone else None
    if pb is None or pb.parent is None or not chain.use_tail or chain.mode != "REACH":
        return ""
    if chain.root_bone == pb.name:  # a one-bone chain on the hand itself is deliberate
        return ""
    return pb.parent.name if _LIMB_ENDS.search(pb.name.lower()) else ""


def tip_advice(arm: bpy.types.Object, chain) -> str:
    """One line for the panel and Add Chain: which bone Blender's IK would end at ("" when the same)."""
    parent = blender_tip(arm, chain)
    if not parent:
        return ""
    return (f"This chain ends at the tail of {chain.tip_bone!r}; Blender's IK for a target there would sit on "
            f"{parent!r} and end at the head of {chain.tip_bone!r}")


class ARTICULATE_OT_chain_add(_ArmatureOperator, bpy.types.Operator):
    """Add a chain ending at the active bone"""

    bl_idname = "articulate.chain_add"
    bl_label = "Add Chain"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context: bpy.types.Context) -> set[str]:
        arm = _armature(context)
        data = arm.articulate
        chain = data.chains.add()
        active = arm.data.bones.active
        chain.tip_bone = active.name if active is not None else ""
        chain.name = chain.tip_bone or f"Chain {len(data.chains)}"
        data.active_chain = len(data.chains) - 1
        advice = tip_advice(arm, chain)
        if advice:
            self.report({"INFO"}, f"{advice}: Use Blender's Tip in the Chain panel to end there")
        return {"FINISHED"}


class ARTICULATE_OT_chain_use_blender_tip(_ChainOperator, bpy.types.Operator):
    """End the active chain where Blender's IK would: at the parent of its hand or foot tip (same root or bone count)"""

    bl_idname = "articulate.chain_use_blender_tip"
    bl_label = "Use Blender's Tip"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context: bpy.types.Context) -> set[str]:
        arm = _armature(context)
        chain = arm.articulate.chains[arm.articulate.active_chain]
        parent = blender_tip(arm, chain)
        if not parent and chain.tip_bone not in arm.pose.bones:
            self.report({"ERROR"}, f"chain {chain.name!r} ends at bone {chain.tip_bone!r}, which armature "
                                   f"{arm.name!r} does not have (deleted or renamed): pick its Tip Bone again")
            return {"CANCELLED"}
        if not parent:
            self.report({"ERROR"}, f"chain {chain.name!r} already ends where Blender's IK would (at "
                                   f"{chain.tip_bone!r}'s tail)")
            return {"CANCELLED"}
        old = chain.tip_bone
        if chain.name == old:
            chain.name = parent
        chain.tip_bone = parent
        self.report({"INFO"}, f"chain {chain.name!r} now ends at {parent!r}'s tail, the head of {old!r}")
        return {"FINISHED"}


class ARTICULATE_OT_chain_remove(_ChainOperator, bpy.types.Operator):
    """Remove the active chain"""

    bl_idname = "articulate.chain_remove"
    bl_label = "Remove Chain"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context: bpy.types.Context) -> set[str]:
        arm = _armature(context)
        data = arm.articulate
        if not 0 <= data.active_chain < len(data.chains):
            self.report({"ERROR"}, "there is no active chain to remove")
            return {"CANCELLED"}
        remove_chain(arm, data.active_chain)
        data.active_chain = max(0, min(data.active_chain, len(data.chains) - 1))
        return {"FINISHED"}


def _pole_angle_from_blender(bones: list, end: np.ndarray, con: bpy.types.Constraint) -> float:
    """Our pole angle [rad] for a Blender IK constraint's: the same bend, measured from the pole.

    Blender turns the chain until its root bone's axis ``X cos(a) + Z sin(a)`` points at the
    pole, so the angle depends on the bone's roll; ours is the turn of the bend direction
    away from the pole (0 = the chain bends toward the pole). The difference is the angle at
    which Blender's axis is the chain's own bend direction, read from the rest pose. A chain
    straight at rest has no bend direction; Blender's usual -90 degrees (bones bending about
    their X axis) is assumed there.

    Args:
        bones: The chain's pose bones, root first.
        end: (3,) the chain's end point at rest, armature space [m].
        con: The IK constraint.
    """
    root = np.array(bones[0].bone.head_local)
    joints = [np.array(b.bone.head_local) for b in bones[1:]]
    axis = end - root
    length = float(np.linalg.norm(axis))
    bend = np.zeros(3)
    if length > 0.0:
        axis /= length
        for j in joints:
            off = j - root
            bend += off - (off @ axis) * axis
    if length == 0.0 or np.linalg.norm(bend) < 1e-6 * length:
        neutral = -0.5 * math.pi
    else:
        local = np.array(bones[0].bone.matrix_local.to_3x3()).T @ bend
        neutral = math.atan2(local[2], local[0])
    return math.remainder(con.pole_angle - neutral, 2.0 * math.pi)


def blender_chain(pb: bpy.types.PoseBone, con: bpy.types.Constraint) -> list:
    """The bones Blender's IK constraint on ``pb`` moves, root first (empty when there are none).

    With ``use_tail`` off the owner bone is not in the chain: the chain is its parent and up,
    ``chain_count`` of them, and the end is the owner's head (the parent's tail when connected).
    """
    first = pb if con.use_tail else pb.parent
    if first is None:
        return []
    bones = [first]
    while bones[-1].parent is not None and (con.chain_count == 0 or len(bones) < con.chain_count):
        bones.append(bones[-1].parent)
    bones.reverse()
    return bones


def _driven(arm: bpy.types.Object, pb: bpy.types.PoseBone, con: bpy.types.Constraint) -> list[str]:
    """The constraint's properties a driver sets (``mute``, ``influence``, ...)."""
    if arm.animation_data is None:
        return []
    prefix = f'pose.bones["{pb.name}"].constraints["{con.name}"].'
    return [fc.data_path[len(prefix):] for fc in arm.animation_data.drivers
            if fc.data_path.startswith(prefix) and not fc.mute]


def constraint_skip_reason(con: bpy.types.Constraint, driven: Sequence[str] = (), keyed_influence: bool = False) -> str:
    """Why an IK constraint is not converted ("" when it is): Blender would not solve it either.

    ``driven`` names the properties a driver sets: a constraint a driver mutes (one of Rigify's
    IK pairs) is judged by its driven value at the evaluated frame. A constraint whose influence
    is keyed (``keyed_influence``) converts even where it is 0 at that frame: the chain's
    influence follows the same keys.
    """
    by_driver = " by a driver at this frame" if {"mute", "enabled", "influence"} & set(driven) else ""
    if con.mute or not getattr(con, "enabled", True):
        return f"IK constraint {con.name!r} is muted{by_driver}"
    if con.influence <= 0.0 and not keyed_influence:
        return f"IK constraint {con.name!r} has zero influence{by_driver}"
    if con.target is None:
        return f"IK constraint {con.name!r} has no target (Auto IK); posing it is Blender's interactive tool"
    return ""


def chain_from_constraint(chain, pb: bpy.types.PoseBone, con: bpy.types.Constraint) -> str:
    """Fill a chain's settings from a Blender IK constraint on ``pb``; returns a note ("" when exact).

    The chain holds the bones Blender's IK moves (see :func:`blender_chain`).
    """
    bones = blender_chain(pb, con)
    note = ""
    if con.use_tail:
        chain.tip_bone, chain.use_tail, end = pb.name, True, np.array(pb.bone.tail_local)
    else:
        parent = bones[-1]
        chain.tip_bone, chain.use_tail, end = parent.name, True, np.array(pb.bone.head_local)
        if not np.allclose(parent.bone.tail_local, pb.bone.head_local, atol=1e-5 * max(parent.bone.length, 1e-3)):
            note = (f"{pb.name}: IK constraint {con.name!r} ends at the head of {pb.name!r}, away from its parent's "
                    "tail; the converted chain ends at the parent's tail")
    chain.root_bone = bones[0].name
    chain.chain_length = len(bones)
    chain.target = con.target
    chain.target_bone = con.subtarget if con.target is not None and con.target.type == "ARMATURE" else ""
    chain.pole = con.pole_target
    chain.pole_bone = con.pole_subtarget if con.pole_target is not None and con.pole_target.type == "ARMATURE" else ""
    chain.pole_angle = _pole_angle_from_blender(bones, end, con) if con.pole_target is not None else 0.0
    chain.iterations = max(con.iterations, 1)
    chain.weight_position = con.weight
    chain.use_rotation = con.use_rotation
    chain.weight_rotation = con.orient_weight
    chain.use_stretch = con.use_stretch
    chain.constraint, chain.constraint_bone = con.name, pb.name
    return note


def _influence_path(con: bpy.types.Constraint) -> str:
    return f"{con.path_from_id()}.influence"


def chain_path(index: int) -> str:
    """RNA path, from the armature object, of its chain ``index``.

    By index, as Blender keys it (a chain's own name property does not resolve in an F-curve's
    path): removing a chain re-points the F-curves of the chains after it (:func:`remove_chain`).
    """
    return f"articulate.chains[{index}]"


def remove_chain(arm: bpy.types.Object, index: int) -> None:
    """Remove chain ``index`` with its animation; the F-curves of later chains follow them down one place."""
    prefix = "articulate.chains["
    for fc in list(compat.iter_fcurves(arm)):
        if not fc.data_path.startswith(prefix):
            continue
        head, _, rest = fc.data_path[len(prefix):].partition("]")
        if not head.isdigit():
            continue
        k = int(head)
        if k == index:
            compat.remove_fcurve(arm, fc)
        elif k > index:
            compat.will_change(fc)
            fc.data_path = f"{chain_path(k - 1)}{rest}"
    arm.articulate.chains.remove(index)


def copy_influence(arm: bpy.types.Object, con: bpy.types.Constraint, chain, driven: Sequence[str]) -> str:
    """Give the chain the constraint's influence: its value, and its keys when it is keyed; returns a note.

    Keys are copied onto the chain's own F-curve (a stale one from an earlier conversion is
    replaced or removed). A driver on the influence is not carried over: the note says which
    value was taken.
    """
    chain.influence = con.influence
    source = compat.find_fcurve(arm, _influence_path(con), 0)
    index = next(k for k, c in enumerate(arm.articulate.chains) if c == chain)
    path = f"{chain_path(index)}.influence"
    dest = compat.find_fcurve(arm, path, 0)
    if source is None:
        if dest is not None:
            compat.remove_fcurve(arm, dest)
        if "influence" in driven and con.influence < 1.0:
            return (f"IK constraint {con.name!r}: its influence is driven; the chain takes its value at this frame "
                    f"({con.influence:.3g}), not the driver")
        return ""
    if dest is None:
        dest = compat.ensure_fcurve(arm, compat.Channel(path, 0, "Articulate"))
    compat.copy_keys(source, dest)
    # A new F-curve animates nothing until the armature's animation is evaluated anew.
    arm.update_tag(refresh={"OBJECT", "DATA", "TIME"})
    return ""


def unique_chain_name(data, wanted: str, chain) -> str:
    """``wanted``, or ``wanted.001``, ``.002``... : a name no other chain of ``data`` has."""
    taken = {c.name for c in data.chains if c != chain}
    name, k = wanted, 1
    while name in taken:
        name, k = f"{wanted}.{k:03d}", k + 1
    return name


def itasc_skip_reason(con: bpy.types.Constraint) -> str:
    """Why an IK constraint solved by iTaSC has no Articulate chain ("" when it converts).

    iTaSC's Copy Pose goal with a location target converts (rotation and weights as for the
    standard solver); a Distance goal, a rotation-only goal or a location goal on some axes only
    have no counterpart in a chain.
    """
    if con.ik_type == "DISTANCE":
        return (f"iTaSC IK constraint {con.name!r} is a Distance goal (keep the tip {con.limit_mode.lower()} "
                f"{con.distance:.3g} from the target), which chains do not have; skipped")
    if not con.use_location:
        return f"iTaSC IK constraint {con.name!r} matches rotation only, which chains do not; skipped"
    free = [a for a in "xyz" if not getattr(con, f"lock_location_{a}")]  # True: the goal holds that axis
    if free:
        return (f"iTaSC IK constraint {con.name!r} leaves its location goal free along {', '.join(free).upper()}, "
                "which chains do not; skipped")
    return ""


def convert_constraints(arm: bpy.types.Object, frame: int | None = None) -> tuple[int, list[str]]:
    """Create or update one chain per IK constraint Blender would solve; returns (count, notes).

    Muted, disabled, zero-influence and targetless (Auto IK) constraints are skipped, each with
    a note; chain names are unique. Drivers that mute or fade constraints (Rigify's IK pairs)
    are read at ``frame`` (default: the current frame), the start of the range to bake. On an
    armature solved by iTaSC, goals chains cannot hold are skipped with a note naming them
    (:func:`itasc_skip_reason`), and a note says the solver's own settings are not carried over.
    Influence (keyed too, see :func:`copy_influence`) and stretch carry over.
    """
    if frame is not None and bpy.context.scene.frame_current != frame:
        bpy.context.scene.frame_set(frame)
    data = arm.articulate
    # Keyed by the bone the constraint sits on: with Use Tail off that is the bone below the tip, whose
    # own constraint of the same name ("IK") would otherwise claim the same chain.
    by_constraint = {(c.constraint_bone or c.tip_bone, c.constraint): c for c in data.chains if c.constraint}
    made, notes = 0, []
    itasc = arm.pose.ik_solver == "ITASC"
    for pb in arm.pose.bones:
        for con in pb.constraints:
            if con.type != "IK":
                continue
            driven = _driven(arm, pb, con)
            keyed = compat.find_fcurve(arm, _influence_path(con), 0) is not None
            reason = constraint_skip_reason(con, driven, keyed_influence=keyed)
            if not reason and itasc:
                reason = itasc_skip_reason(con)
            if reason:
                notes.append(f"{pb.name}: {reason}")
                continue
            bones = blender_chain(pb, con)
            if not bones:
                notes.append(f"{pb.name}: IK constraint {con.name!r} moves no bone (use_tail off on a root bone)")
                continue
            tip = pb.name if con.use_tail else bones[-1].name
            chain = by_constraint.get((pb.name, con.name))
            if chain is None and tip != pb.name:
                # A chain converted before the constraint's bone was kept is keyed by its tip bone.
                earlier = by_constraint.get((tip, con.name))
                chain = earlier if earlier is not None and not earlier.constraint_bone else None
            chain = chain or data.chains.add()
            note = chain_from_constraint(chain, pb, con)
            chain.name = unique_chain_name(data, f"{pb.name} IK", chain)
            notes += [f"{pb.name}: {n}" if n.startswith("IK") else n
                      for n in (note, copy_influence(arm, con, chain, driven)) if n]
            made += 1
    if made:
        notes += playback.unsteady_ik_warnings(arm, [b.name for b in arm.pose.bones])
    if itasc and made:
        notes.append(f"armature {arm.name!r} is solved by iTaSC: its solver settings (precision, iterations, "
                     "reiteration) are not carried over; the chains use Articulate's solvers")
    return made, notes


class ARTICULATE_OT_chains_from_constraints(_ArmatureOperator, bpy.types.Operator):
    """Create a chain for every IK constraint of the armature (target, pole, chain length, weights)"""

    bl_idname = "articulate.chains_from_constraints"
    bl_label = "Chains from IK Constraints"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context: bpy.types.Context) -> set[str]:
        arm = _armature(context)
        made, notes = convert_constraints(arm)
        if not made:
            self.report({"ERROR"}, f"armature {arm.name!r} has no IK constraint with a target to convert")
            return {"CANCELLED"}
        msg = f"{made} chain(s) from IK constraints"
        self.report({"WARNING"} if notes else {"INFO"}, msg + (f"; notes: {'; '.join(notes)}" if notes else ""))
        return {"FINISHED"}


class ARTICULATE_OT_limits_to_ik(_ChainOperator, bpy.types.Operator):
    """Write each chain bone's effective limits (IK limits and Limit Rotation constraints) as Blender IK limits"""

    bl_idname = "articulate.limits_to_ik"
    bl_label = "Write Limits to Blender IK"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context: bpy.types.Context) -> set[str]:
        arm = _armature(context)
        try:
            bones = {pb.name: pb for chain in arm.articulate.chains for pb in bridge.chain_bones(arm, chain)}
            limits = {name: bridge.bone_limit(pb) for name, pb in bones.items()}
        except bridge.BridgeError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        for name, limit in limits.items():
            bridge.write_ik_limits(bones[name], limit)
        self.report({"INFO"}, f"Wrote IK limits on {len(limits)} bone(s)")
        return {"FINISHED"}


classes = (
    ARTICULATE_OT_chain_add,
    ARTICULATE_OT_chain_use_blender_tip,
    ARTICULATE_OT_chain_remove,
    ARTICULATE_OT_chains_from_constraints,
    ARTICULATE_OT_limits_to_ik,
)
