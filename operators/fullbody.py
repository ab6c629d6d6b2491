# SPDX-License-Identifier: GPL-3.0-or-later
"""Full body from three trackers: map roles, import tracker recordings, bake the body."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import bpy
import numpy as np
from mathutils import Matrix

from ..ik_core import ArticulateError
from ..ik_core.errors import name_hint
from . import bridge, compat
from .baking import BakeFailed, frame_runs
from .bridge import body_controls
from .contacts import fill_contact_list
from .files import BLEND_RELATIVE, TimedImport, chosen_report_path, report_path_problem, write_report
from .frames import FrameRangeOptions
from .polls import armature_poll

if TYPE_CHECKING:  # the humanoid core is imported by the full-body operators when they run, not on registration
    from ..ik_core.humanoid import RoleMap

REQUIRED_COUNT = 3  # the first trackers (head, hand_l, hand_r) are required


class BodyFailed(Exception):
    """The full-body bake cannot run; nothing was changed. The message says why."""


def _armature(context: bpy.types.Context) -> bpy.types.Object:
    obj = context.object
    try:
        bridge.check_armature(obj)
    except bridge.BridgeError as err:
        raise BodyFailed(str(err)) from None
    return obj


def role_map(arm: bpy.types.Object, from_panel: bool = True) -> RoleMap:
    """The armature's role map: the panel's entries when set (and ``from_panel``), else detected from bone names.

    Raises:
        BodyFailed: Missing or duplicate roles, or bones that do not exist (the message names them and
            suggests the nearest bones).
    """
    from ..ik_core.humanoid import RoleMap, detect_roles

    entries = {r.role: r.bone for r in arm.articulate.body.roles if r.bone} if from_panel else {}
    try:
        if not entries:
            return detect_roles((b.name, b.parent.name if b.parent else None) for b in arm.data.bones)
        missing = {role: b for role, b in entries.items() if b not in arm.data.bones}
        if missing:
            shown = "; ".join(f"{role}: no bone {b!r}, {name_hint(b, arm.data.bones.keys(), 'bone')}"
                              for role, b in missing.items())
            raise BodyFailed(f"the role map names bones that {arm.name!r} does not have (deleted or renamed): {shown}; "
                             "pick them again in the Full Body panel's role list, or run Detect Roles")
        return RoleMap(entries, source="panel")
    except ArticulateError as err:
        raise BodyFailed(str(err)) from None


def _check_not_driven(arm: bpy.types.Object, roles: RoleMap) -> None:
    """Refuse bones whose pose constraints override their keys (a bake would change nothing)."""
    driven = {}
    for bone in roles.bones.values():
        found = body_controls.driving_constraints(arm.pose.bones[bone])
        if found:
            driven[bone] = found
    if driven:
        shown = "; ".join(f"{bone} ({', '.join(cons)})" for bone, cons in list(driven.items())[:6])
        more = " ..." if len(driven) > 6 else ""
        raise BodyFailed(
            f"{len(driven)} mapped bone(s) follow constraints that override keys: {shown}{more}; map the roles "
            "to bones you animate directly (Detect Roles maps a generated Rigify rig to its FK controls), or "
            "bake the metarig"
        )


def _tracker_objects(arm: bpy.types.Object) -> dict[str, bpy.types.Object]:
    from ..ik_core.humanoid import TRACKERS

    body = arm.articulate.body
    objs = {name: getattr(body, name) for name in TRACKERS if getattr(body, name) is not None}
    missing = [t for t in TRACKERS[:REQUIRED_COUNT] if t not in objs]
    if missing:
        raise BodyFailed(f"set the {', '.join(missing)} tracker(s); head, hand_l and hand_r are required")
    for name, obj in objs.items():
        if obj.name not in bpy.data.objects:
            raise BodyFailed(f"the {name} tracker was deleted; pick another object")
        if obj == arm:
            raise BodyFailed(f"the {name} tracker must be another object than the armature")
    return objs


FEET = ("l", "r")  # the Known Steps lists' feet: contacts_l, contacts_r


def known_contacts(body_settings, frames: range) -> np.ndarray | None:
    """(N, 2) True on the ``frames`` where the panel's Known Steps list a contact of the left / right foot.

    Returns:
        None when Known Steps is off.

    Raises:
        BodyFailed: Known Steps on with no contact listed, or a contact that ends before it starts.
    """
    if not body_settings.use_steps:
        return None
    lists = [getattr(body_settings, f"contacts_{foot}") for foot in FEET]
    if not any(len(items) for items in lists):
        raise BodyFailed("Known Steps is on but neither foot lists a contact: add the frames each foot rests on "
                         "the ground (Full Body > Known Steps), or turn Known Steps off to time the steps from "
                         "the head")
    f = np.asarray(frames)
    out = np.zeros((len(f), 2), dtype=bool)
    for k, items in enumerate(lists):
        for c in items:
            if c.frame_end < c.frame_start:
                raise BodyFailed(f"the {('left', 'right')[k]} foot's contact {c.name!r} ends on frame {c.frame_end}, "
                                 f"before it starts ({c.frame_start}): swap its frames")
            out[:, k] |= (f >= c.frame_start) & (f <= c.frame_end)
    return out


def read_contacts_csv(path: str) -> dict[str, list[tuple[int, int]]]:
    """Foot contacts from a CSV: a header ``foot,frame_start,frame_end``, then one contact per line.

    ``foot`` is ``l`` or ``r`` (``left``, ``right`` too); the frames are the timeline's, both included.

    Returns:
        ``{"l": [(start, end), ...], "r": [...]}``.

    Raises:
        BodyFailed: An unreadable file or a bad line, naming the file and the line.
    """
    import csv

    sides = {"l": "l", "left": "l", "r": "r", "right": "r"}
    out: dict[str, list[tuple[int, int]]] = {"l": [], "r": []}
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            rows = list(csv.reader(handle))
    except (OSError, UnicodeDecodeError) as err:
        raise BodyFailed(f"cannot read the contacts file {path!r}: {err}") from None
    header = [c.strip().lower() for c in rows[0]] if rows else []
    if header != ["foot", "frame_start", "frame_end"]:
        raise BodyFailed(f"{path}: line 1 must be the header foot,frame_start,frame_end; got {','.join(header)!r}")
    for line, row in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        try:
            foot, start, end = (c.strip() for c in row)
            side = sides[foot.lower()]
            first, last = int(start), int(end)
        except (ValueError, KeyError):
            raise BodyFailed(f"{path}: line {line} must be a foot (l or r) and two whole frame numbers, got "
                             f"{','.join(row)!r}") from None
        if last < first:
            raise BodyFailed(f"{path}: line {line}: the contact ends on frame {last}, before it starts ({first})")
        out[side].append((first, last))
    return out


def store_contacts(body_settings, contacts: dict[str, list[tuple[int, int]]]) -> int:
    """Replace the Known Steps lists by ``contacts`` (foot -> [(start, end)]) and turn Known Steps on.

    Returns:
        The number of contacts stored.
    """
    for foot in FEET:
        fill_contact_list(getattr(body_settings, f"contacts_{foot}"), contacts.get(foot, []))
        setattr(body_settings, f"active_contact_{foot}", 0)
    body_settings.use_steps = True
    return sum(len(v) for v in contacts.values())


def bake_body(context: bpy.types.Context, arm: bpy.types.Object, frames: range) -> dict:
    """Solve the body on ``frames`` from the trackers and key the mapped bones; returns a report.

    Raises:
        BodyFailed: Any invalid input, detected before the scene is changed.
    """
    from ..ik_core.humanoid import TRACKER_ROLES, TRACKERS, calibrate, solve_body, steps_from_contacts

    body_settings = arm.articulate.body
    roles = role_map(arm)
    _check_not_driven(arm, roles)
    trackers = _tracker_objects(arm)
    if len(frames) == 0:
        raise BodyFailed("the frame range is empty: the end frame must not precede the start frame")
    contact = known_contacts(body_settings, frames)
    steps = None if contact is None else steps_from_contacts(contact)
    scene = context.scene
    names = [t for t in TRACKERS if t in trackers]
    current = scene.frame_current
    t0 = time.perf_counter()
    try:
        scene.frame_set(body_settings.reference_frame)
        arm_world = bridge.matrix_to_array(arm.matrix_world)
        reference = {b: arm_world @ bridge.matrix_to_array(arm.pose.bones[b].matrix) for b in roles.bones.values()}
        ref_trackers = {n: bridge.matrix_to_array(trackers[n].matrix_world) for n in names}
        samples = np.empty((len(frames), len(names), 4, 4))
        with bridge.evaluating_only(scene, [trackers[n] for n in names]):
            for i, f in enumerate(frames):
                scene.frame_set(int(f))
                for k, n in enumerate(names):
                    samples[i, k] = bridge.matrix_to_array(trackers[n].matrix_world)
    finally:
        scene.frame_set(current)
    animated = [n for k, n in enumerate(names) if len(frames) > 1 and np.ptp(samples[:, k, :3, 3], axis=0).max() == 0]
    tracker_bones = {n: roles.bones[TRACKER_ROLES[n]] for n in names}
    offsets = {n: float(np.linalg.norm(ref_trackers[n][:3, 3] - reference[tracker_bones[n]][:3, 3])) for n in names}
    limit = body_settings.offset_warning
    warnings = [
        f"at the reference frame {body_settings.reference_frame} tracker {n} is {d:.3g} m from bone "
        f"{tracker_bones[n]!r} (warning above {limit:.3g} m): the bake keeps that offset; stand the rig "
        "where the trackers are (Align Rig to Trackers) or pick a reference frame where it stands there"
        for n, d in offsets.items() if d > limit
    ]
    try:
        body = calibrate(roles, reference, ref_trackers, floor=body_settings.floor)
        fps = scene.render.fps / scene.render.fps_base
        # solve_body reads trackers by column in TRACKERS order: one left out before another given
        # (feet without a pelvis) is a column of NaN, which it reads as absent.
        columns = np.full((len(frames), max(TRACKERS.index(n) for n in names) + 1, 4, 4), np.nan)
        columns[:, [TRACKERS.index(n) for n in names]] = samples
        pose = solve_body(body, columns, frames.step / fps, steps=steps)
    except ArticulateError as err:
        raise BodyFailed(str(err)) from None
    t_solved = time.perf_counter()
    world = {bone: pose.world[:, j] for j, bone in enumerate(pose.bones)}
    pelvis = roles.bones["pelvis"]
    mapped = list(roles.bones.values())
    # A control rig (generated Rigify) hangs its controls from constrained mechanism bones:
    # bases then come from the parents' evaluated poses rather than from rest-pose arithmetic.
    evaluated = body_controls.needs_evaluation(arm, mapped)
    if evaluated:
        try:
            levels = body_controls.evaluation_levels(arm, _role_parents(roles))
            basis = body_controls.evaluated_basis(context, arm, list(frames), world, levels, {pelvis})
        finally:
            scene.frame_set(current)
    else:
        basis = bridge.world_to_basis(arm, world)
    frame_numbers = np.asarray(frames, dtype=float)
    keys = bridge.write_bone_poses(arm, frame_numbers, basis, location_bones={pelvis})
    switches = body_controls.ik_fk_switches(arm, mapped)
    body_controls.key_fk(context, arm, switches, frames[0], frames[-1])
    error = pose.tracker_error[:, :3]
    reachable = pose.reachable[:, :3]
    # What playback shows, in world space: each tracked bone against its tracker.
    measured = bridge.sample_tips(scene, list(frames), [
        bridge.TipSource(arm, tracker_bones[n], False, trackers[n]) for n in names])
    world_error = np.stack([np.linalg.norm(tip[:, :3, 3] - trk[:, :3, 3], axis=-1) for tip, trk in measured], axis=1)
    report = {
        "armature": arm.name,
        "roles": dict(roles.bones),
        "role_source": roles.source,
        "trackers": names,
        "frames": [int(f) for f in frames],
        "tracker_error_m": error.tolist(),
        "reachable": reachable.tolist(),
        "held_frames": pose.held_counts,
        "jumps": {k: [int(frames[i]) for i in v] for k, v in pose.jumps.items()},
        "not_animated": animated,
        "max_reachable_error_m": float(np.max(np.where(reachable, error, 0.0), initial=0.0)),
        "world_error_m": np.where(np.isfinite(world_error), world_error, None).tolist(),
        "max_world_error_m": float(np.nanmax(world_error, initial=0.0)),
        "calibration_offsets_m": offsets,
        # The planned feet's step timing: the Known Steps lists' (how many steps) or read from the head.
        "steps": "from the head" if steps is None else {"known": len(steps),
                                                        "lift": [int(frames[i]) for i in steps.lift],
                                                        "land": [int(frames[i]) for i in steps.land],
                                                        "foot": ["lr"[f] for f in steps.foot]},
        "warnings": warnings,
        "keys_written": keys,
        "basis_from": "evaluated parents" if evaluated else "rest pose",
        "switched_to_fk": [pb.name for pb in switches],
        "seconds": {"solve": t_solved - t0, "total": time.perf_counter() - t0},
    }
    return report


def _role_parents(roles: RoleMap) -> dict[str, str | None]:
    """Mapped bone -> the mapped bone of its parent role (None for the pelvis), parents first."""
    return {roles[r]: (None if (p := roles.parent_role(r)) is None else roles[p]) for r in roles.roles}


def body_problems(report: dict) -> list[str]:
    """What a full-body bake's report says went wrong: the warnings, trackers not animated, held frames, jumps."""
    problems = list(report["warnings"])
    if report["not_animated"]:
        problems.append(f"trackers not animated: {', '.join(report['not_animated'])}")
    held = sum(report["held_frames"].values())
    if held:
        problems.append(f"{held} NaN tracker frame(s) held")
    jumps = sum(len(v) for v in report["jumps"].values())
    if jumps:
        problems.append(f"{jumps} tracker jump(s)")
    return problems


def _summary(report: dict) -> str:
    held = sum(report["held_frames"].values())
    jumps = sum(len(v) for v in report["jumps"].values())
    offset = max(report["calibration_offsets_m"].values(), default=0.0)
    # The error is the bones against their goals (each tracker plus the offset kept from calibration, where the
    # controller sits in the palm); the distance to the trackers themselves includes those offsets.
    # Below a tenth of a micron the error is rounding, which differs between CPUs and numpy builds: it reads
    # as that bound, which it is within.
    reachable_mm = max(report["max_reachable_error_m"] * 1000, 1e-4)
    text = (f"{len(report['frames'])} frames, head and hands within {reachable_mm:.3g} mm "
            f"of their goals where reachable; {report['max_world_error_m'] * 1000:.3g} mm from the trackers in "
            f"playback, calibration offsets (up to {offset * 1000:.3g} mm) included")
    if held:
        text += f", {held} NaN tracker frames held"
    if jumps:
        text += f", {jumps} tracker jumps"
    if report["switched_to_fk"]:
        text += f", FK keyed on {', '.join(report['switched_to_fk'])}"
    if report["not_animated"]:
        text += f", not animated: {', '.join(report['not_animated'])}"
    return text


class ARTICULATE_OT_body_detect_roles(bpy.types.Operator):
    """Map the armature's bones to body roles from their names (Rigify, Mixamo, CMU/BVH, VRM, ...)"""

    bl_idname = "articulate.body_detect_roles"
    bl_label = "Detect Roles"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return armature_poll(cls, context, editable=True)

    def execute(self, context):
        arm = context.object
        try:  # detected before the list is cleared: a failure keeps the roles the panel had
            roles = role_map(arm, from_panel=False)
        except BodyFailed as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        arm.articulate.body.roles.clear()
        for role, bone in roles.bones.items():
            item = arm.articulate.body.roles.add()
            item.role, item.bone = role, bone
        arm.articulate.body.active_role = 0
        source = roles.source
        if source == "auto:rigify-controls":
            source = "FK controls of a generated Rigify rig; the bake keys its limbs' IK/FK switches to FK"
        self.report({"INFO"}, f"{len(roles.bones)} roles mapped ({source})")
        return {"FINISHED"}


class ARTICULATE_OT_body_bake(FrameRangeOptions, bpy.types.Operator):
    """Solve the whole body from the head and hand trackers on every frame and key the bones"""

    bl_idname = "articulate.body_bake"
    bl_label = "Bake Full Body"
    bl_options = {"REGISTER", "UNDO"}

    frame_step: bpy.props.IntProperty(
        name="Step", default=1, min=1, description="Solve and key every this many frames, when Use Panel Settings "
                                                   "is off (1: every frame)",
    )
    use_scene_range: bpy.props.BoolProperty(
        name="Scene Range", default=True, options={"HIDDEN", "SKIP_SAVE"},
        description="The earlier name of Use Panel Settings, kept for scripts: off takes Start and End",
    )
    report_path: bpy.props.StringProperty(
        name="Report", subtype="FILE_PATH", options={"HIDDEN", "SKIP_SAVE", *BLEND_RELATIVE},
        description="Write a JSON report (per frame: tracker errors, held frames, jumps) to this file",
    )

    @classmethod
    def poll(cls, context):
        return armature_poll(cls, context)

    def draw(self, context):
        self.draw_range(self.layout, context, "frame_step")

    def execute(self, context):
        if not self.use_scene_range:
            self.use_scene_settings = False
        report_path = chosen_report_path(self.report_path, context, self.use_scene_settings)
        if why := report_path_problem(report_path):
            self.report({"ERROR"}, why)
            return {"CANCELLED"}
        step = context.scene.articulate.frame_step if self.use_scene_settings else self.frame_step
        try:
            arm = _armature(context)
            frames = self.frames(context, step)
            report = bake_body(context, arm, frames)
        except BakeFailed as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        except BodyFailed as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        if report_path:
            write_report(report_path, report)
        arm.articulate.body.last_summary = _summary(report)
        problems = body_problems(report)
        for warning in report["warnings"]:
            self.report({"WARNING"}, warning)
        self.report({"WARNING"} if problems else {"INFO"}, arm.articulate.body.last_summary)
        return {"FINISHED"}


def read_tracker_csv(path: str) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Times (N,) and tracker poses name -> (N, 7) [x, y, z, qw, qx, qy, qz] from a CSV.

    Read by :func:`ik_core.trajectory.read_tracker_csv`: ``time`` then ``<tracker>_x, _y, _z,
    _qw, _qx, _qy, _qz`` for head, hand_l, hand_r (required) and optionally pelvis, foot_l,
    foot_r. Empty or ``nan`` cells are NaN (held by the solve and counted).

    Raises:
        BodyFailed: Anything the reader refuses, with the file and the line.
    """
    from ..ik_core.humanoid import TRACKERS
    from ..ik_core.trajectory import read_tracker_csv as read_tracker_file

    try:
        return read_tracker_file(path, TRACKERS, TRACKERS[:REQUIRED_COUNT])
    except ArticulateError as err:
        raise BodyFailed(str(err)) from None


class ARTICULATE_OT_trackers_import(TimedImport, bpy.types.Operator):
    """Import a tracker recording (CSV: time, then position and quaternion per tracker) as animated empties"""

    bl_idname = "articulate.trackers_import"
    bl_label = "Import Trackers"
    bl_options = {"REGISTER", "UNDO"}

    filename_ext = ".csv"
    filter_glob: bpy.props.StringProperty(default="*.csv", options={"HIDDEN"},
                                           description="File names the file browser lists")

    def execute(self, context):
        scene = context.scene
        try:
            times, poses = read_tracker_csv(bpy.path.abspath(self.filepath))
        except BodyFailed as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        rate = self.key_rate(scene, times)
        frames = self.start_frame + (times - times[0]) * rate.rate
        if rate.from_file:  # each sample is a frame: rounded or jittering stamps snap onto theirs
            frames = np.round(frames)
        self.apply_timing(scene, rate, int(np.ceil(frames[-1])))
        arm = context.object if context.object is not None and context.object.type == "ARMATURE" else None
        for name, values in poses.items():
            empty = bpy.data.objects.new(f"tracker.{name}", None)
            empty.empty_display_type, empty.empty_display_size = "ARROWS", 0.1
            empty.rotation_mode = "QUATERNION"
            scene.collection.objects.link(empty)
            channels = [compat.Channel("location", i, "Object Transforms") for i in range(3)]
            channels += [compat.Channel("rotation_quaternion", i, "Object Transforms") for i in range(4)]
            # NaN samples (dropouts) are keyed as they are: the body solve holds the last good
            # pose on those frames and counts them in its report.
            compat.write_channels(empty, channels, frames, values)
            if arm is not None:
                setattr(arm.articulate.body, name, empty)
        if rate.warning:
            self.report({"WARNING"}, rate.warning)
        self.report({"INFO"}, f"Imported {len(poses)} trackers, {len(times)} samples")
        return {"FINISHED"}


def align_to_trackers(context: bpy.types.Context, arm: bpy.types.Object, by: str = "HEIGHT") -> dict:
    """Move, turn and scale the armature so it stands where the trackers are at the reference frame.

    The rig's head goes over the head tracker, its left-right line (hand to hand) turns onto the
    trackers' about the vertical, and it is scaled about the floor by the ratio of heights (head
    tracker over the head bone) or of arm spans (hand to hand). The rig should stand in its T or
    A pose at the reference frame, as the trackers' wearer does.

    Returns:
        {"scale": s, "heading_deg": turn, "moved_m": distance the head moved}.

    Raises:
        BodyFailed: No role map, missing trackers, or a rig or trackers without a height or span.
    """
    from ..ik_core.humanoid import TRACKER_ROLES

    body_settings = arm.articulate.body
    roles = role_map(arm)
    trackers = _tracker_objects(arm)
    scene = context.scene
    current = scene.frame_current
    try:
        scene.frame_set(body_settings.reference_frame)
        M = bridge.matrix_to_array(arm.matrix_world)
        bone = {n: (M @ bridge.matrix_to_array(arm.pose.bones[roles.bones[TRACKER_ROLES[n]]].matrix))[:3, 3]
                for n in ("head", "hand_l", "hand_r")}
        track = {n: bridge.matrix_to_array(trackers[n].matrix_world)[:3, 3] for n in ("head", "hand_l", "hand_r")}
    finally:
        scene.frame_set(current)
    floor = body_settings.floor
    if by == "SPAN":
        rig_size, trk_size = (np.linalg.norm(bone["hand_l"] - bone["hand_r"]),
                              np.linalg.norm(track["hand_l"] - track["hand_r"]))
    else:
        rig_size, trk_size = bone["head"][2] - floor, track["head"][2] - floor
    if not (rig_size > 1e-6 and trk_size > 1e-6):
        raise BodyFailed(f"cannot scale by {by.lower()}: the rig's is {rig_size:.3g} m and the trackers' "
                         f"{trk_size:.3g} m at the reference frame; both must be above zero")
    scale = trk_size / rig_size
    lateral = [(v["hand_l"] - v["hand_r"])[:2] for v in (bone, track)]
    if min(np.linalg.norm(x) for x in lateral) < 1e-6:
        raise BodyFailed("the hands coincide at the reference frame: cannot tell which way the rig faces")
    turn = np.arctan2(lateral[1][1], lateral[1][0]) - np.arctan2(lateral[0][1], lateral[0][0])
    c, s = np.cos(turn), np.sin(turn)
    R = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    pivot = np.array([bone["head"][0], bone["head"][1], floor])
    goal = np.array([track["head"][0], track["head"][1], floor])
    A = np.eye(4)
    A[:3, :3] = scale * R
    A[:3, 3] = goal - scale * R @ pivot
    arm.matrix_world = Matrix((A @ M).tolist())
    context.view_layer.update()
    return {"scale": float(scale), "heading_deg": float(np.degrees(turn)),
            "moved_m": float(np.linalg.norm(goal - pivot))}


class ARTICULATE_OT_body_align(bpy.types.Operator):
    """Move, turn and scale the rig so it stands where the trackers are at the reference frame"""

    bl_idname = "articulate.body_align"
    bl_label = "Align Rig to Trackers"
    bl_options = {"REGISTER", "UNDO"}

    by: bpy.props.EnumProperty(
        name="Scale By", description="What sets the rig's scale: its height or its arm span against the trackers'",
        items=[("HEIGHT", "Height", "Head tracker height over the head bone's"),
               ("SPAN", "Arm Span", "Hand-to-hand distance of the trackers over the rig's (T or A pose)")],
    )

    @classmethod
    def poll(cls, context):
        return armature_poll(cls, context, editable=True)

    def execute(self, context):
        arm = context.object
        if arm.animation_data is not None and any(
            fc.data_path in ("location", "rotation_euler", "rotation_quaternion", "scale")
            for fc in compat.iter_fcurves(arm)
        ):
            self.report({"ERROR"}, f"armature {arm.name!r} has animated object transforms; aligning would be "
                        "undone on the next frame: clear them or align its parent")
            return {"CANCELLED"}
        try:
            done = align_to_trackers(context, arm, self.by)
        except BodyFailed as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        self.report({"INFO"}, f"Moved the rig {done['moved_m']:.3g} m, turned it {done['heading_deg']:.1f} degrees, "
                    f"scaled it {done['scale']:.4g}x")
        return {"FINISHED"}


class _FootContacts:
    """A Known Steps list operator: which foot's list, editable armatures only."""

    bl_options = {"REGISTER", "UNDO"}

    foot: bpy.props.EnumProperty(
        name="Foot", description="Which foot's contact list",
        items=[("l", "Left", "The left foot's contacts"), ("r", "Right", "The right foot's contacts")],
    )

    @classmethod
    def poll(cls, context):
        return armature_poll(cls, context, editable=True)

    def contacts(self, context):
        """The armature's body settings and this foot's contact list."""
        body = context.object.articulate.body
        return body, getattr(body, f"contacts_{self.foot}")


class ARTICULATE_OT_body_contact_add(_FootContacts, bpy.types.Operator):
    """Add a contact of a foot to the Known Steps, starting and ending on the current frame"""

    bl_idname = "articulate.body_contact_add"
    bl_label = "Add Foot Contact"

    def execute(self, context):
        body, items = self.contacts(context)
        frame = context.scene.frame_current
        item = items.add()
        item.name, item.frame_start, item.frame_end = f"{frame}-{frame}", frame, frame
        setattr(body, f"active_contact_{self.foot}", len(items) - 1)
        return {"FINISHED"}


class ARTICULATE_OT_body_contact_remove(_FootContacts, bpy.types.Operator):
    """Remove the selected contact of a foot from the Known Steps"""

    bl_idname = "articulate.body_contact_remove"
    bl_label = "Remove Foot Contact"

    def execute(self, context):
        body, items = self.contacts(context)
        active = getattr(body, f"active_contact_{self.foot}")
        if not 0 <= active < len(items):
            self.report({"ERROR"}, f"no contact of the {('left', 'right')[FEET.index(self.foot)]} foot is selected")
            return {"CANCELLED"}
        items.remove(active)
        setattr(body, f"active_contact_{self.foot}", max(0, min(active, len(items) - 1)))
        return {"FINISHED"}


def detect_steps(scene: bpy.types.Scene, arm: bpy.types.Object, frames: range) -> dict[str, list[tuple[int, int]]]:
    """The frames each foot rests on the floor in the armature's own animation (a capture, a reference motion).

    A foot rests while its ankle (role ``foot``) or its ball (role ``toe``, where mapped) is near
    its resting height and still, by the thresholds of a chain's Detect Contacts; each bone's
    resting height is its 5th percentile over the frames (the motion's own floor and the rig's
    proportions, whatever the Floor setting).

    Returns:
        ``{"l": [(start, end), ...], "r": [...]}``, frames included, as :func:`store_contacts` takes them.

    Raises:
        BodyFailed: Fewer than two frames, roles without feet, or a foot that never rests (the
            message says which and what to check).
    """
    from ..ik_core.contacts import contact_intervals, detect_contacts
    from .planting import frame_time

    if len(frames) < 2:
        raise BodyFailed(f"detecting steps needs at least two frames to measure speeds; the range has {len(frames)}")
    roles = role_map(arm).bones
    bones = {foot: [roles[r] for r in (f"foot_{foot}", f"toe_{foot}") if r in roles] for foot in FEET}
    try:
        paths = bridge.sample_targets(scene, list(frames), [(arm, b) for foot in FEET for b in bones[foot]])
    except bridge.BridgeError as err:
        raise BodyFailed(str(err)) from None
    dt = frame_time(scene, frames.step)
    out: dict[str, list[tuple[int, int]]] = {}
    k = 0
    for foot in FEET:
        rests = np.zeros(len(frames), dtype=bool)
        for bone in bones[foot]:
            p = paths[k][:, :3, 3]
            k += 1
            bad = ~np.isfinite(p).all(axis=1)
            if bad.any():  # a bone driven from NaN (a tracker's dropout keyed as NaN, say) has no path to read
                raise BodyFailed(f"bone {bone!r} has no position (NaN) on frame(s) "
                                 f"{frame_runs([int(frames[i]) for i in np.flatnonzero(bad)])}; pick a range "
                                 "where the motion is whole")
            rests |= detect_contacts(p, dt, float(np.percentile(p[:, 2], 5)))
        if not rests.any():
            side = ("left", "right")[FEET.index(foot)]
            raise BodyFailed(f"the {side} foot ({', '.join(bones[foot])}) never rests on frames {frames[0]}-"
                             f"{frames[-1]}: it moves on every one; pick a range where the motion stands or walks")
        out[foot] = [(int(frames[a]), int(frames[b - 1])) for a, b in contact_intervals(rests)]
    return out


class ARTICULATE_OT_body_steps_detect(FrameRangeOptions, bpy.types.Operator):
    """Fill the Known Steps from the armature's own foot animation (a capture or a reference motion) over the frame
    range, and turn Known Steps on"""

    bl_idname = "articulate.body_steps_detect"
    bl_label = "Detect Known Steps"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return armature_poll(cls, context, editable=True)

    def draw(self, context):
        self.draw_range(self.layout, context)

    def execute(self, context):
        arm = context.object
        try:
            frames = self.frames(context)
            contacts = detect_steps(context.scene, arm, frames)
        except (BakeFailed, BodyFailed) as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        store_contacts(arm.articulate.body, contacts)
        self.report({"INFO"}, f"Frames {frames[0]}-{frames[-1]}: left foot {len(contacts['l'])} contact(s), "
                              f"right foot {len(contacts['r'])}")
        return {"FINISHED"}


classes = (ARTICULATE_OT_body_detect_roles, ARTICULATE_OT_body_bake, ARTICULATE_OT_body_align,
           ARTICULATE_OT_trackers_import, ARTICULATE_OT_body_contact_add, ARTICULATE_OT_body_contact_remove,
           ARTICULATE_OT_body_steps_detect)
