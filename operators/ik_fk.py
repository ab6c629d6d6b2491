# SPDX-License-Identifier: GPL-3.0-or-later
"""IK to FK and back, over a frame range, on Rigify's generated limbs and on plain IK constraints.

- **IK to FK**: the pose the IK produces is sampled with the IK on, the FK controls are keyed to
  it (each computed from its parent's evaluated pose), and the IK/FK switch is keyed to FK on
  the range (Rigify's ``IK_FK`` property; a plain constraint's influence), its value just
  outside the range kept.
- **FK to IK**: the pose the FK produces is sampled with FK on, the IK controls (Rigify's hand,
  foot, toe and limb-root controls; a constraint's target) are placed by evaluation (moved until
  the bones they drive land on that pose, see :mod:`.bridge.matching`), poles turned until the
  limb bends in the FK plane, keyed, and the switch keyed to IK.

Both are measured by playback afterwards: every limb bone's head and tail against where the
other mode put it, per frame.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import bpy
import numpy as np

from . import bridge, playback
from .baking import BakeFailed, frame_runs
from .bridge import body_controls, matching
from .chains import blender_chain
from .files import BLEND_RELATIVE, chosen_report_path, report_path_problem, write_report
from .frames import FrameRangeOptions
from .polls import armature_poll

TOLERANCE_M = 1e-3  # a limb bone further than this from where the other mode put it is reported
RIGIFY_SWITCH = body_controls.IK_FK_PROPERTY


@dataclass
class Limb:
    """One IK/FK pair of a rig.

    Attributes:
        name: A label (the switch bone, or the constraint and its bone).
        kind: "rigify" or "constraint".
        fk: FK controls, root first, each keyed to the pose of its ``result`` bone.
        result: The bones that show the limb's pose in either mode, root first.
        switch: RNA path (from the armature) of the IK/FK switch, and its IK and FK values.
        ik_controls: Per IK control, (armature or object, bone or "", result bone it drives).
        pole: (armature or object, bone or "") of a pole to turn, or None.
        follower_tail: The driven bone of a constraint's target is measured at its tail (use_tail).
        constraint: The plain IK constraint, or None.
    """

    name: str
    kind: str
    fk: list[str]
    result: list[str]
    switch: tuple[str, float, float]
    ik_controls: list[tuple] = field(default_factory=list)
    pole: tuple | None = None
    follower_tail: bool = False
    rotation: bool = True
    constraint: object = None


def _side_name(name: str, infix: str) -> str:
    """``forearm.L`` + ``_fk`` -> ``forearm_fk.L`` (Rigify's naming of a limb's controls)."""
    base, dot, side = name.rpartition(".")
    return f"{base}{infix}.{side}" if dot else f"{name}{infix}"


def rigify_limbs(arm: bpy.types.Object) -> list[Limb]:
    """The limbs of a generated Rigify rig: one per ``<limb>_parent.<side>`` bone holding ``IK_FK``.

    The limb's bones are its ``ORG-`` chain from ``ORG-<limb>.<side>`` down, as far as each has an
    FK control ``<bone>_fk.<side>``; IK controls are the ``<bone>_ik.<side>`` bones that exist
    (hand or foot, toe, and the limb's root), and the pole ``<limb>_ik_target.<side>`` when the
    limb's ``pole_vector`` is on.
    """
    bones = arm.pose.bones
    limbs = []
    for owner in bones:
        if RIGIFY_SWITCH not in owner.keys() or "_parent" not in owner.name:
            continue
        base = owner.name.replace("_parent", "")
        org = bones.get(f"ORG-{base}")
        result, fk = [], []
        while org is not None and bones.get(_side_name(org.name[4:], "_fk")) is not None:
            result.append(org.name)
            fk.append(_side_name(org.name[4:], "_fk"))
            org = next((c for c in org.children if c.name.startswith("ORG-")
                        and bones.get(_side_name(c.name[4:], "_fk")) is not None), None)
        if len(result) < 2:
            continue
        controls = [(arm, _side_name(r[4:], "_ik"), r) for r in result if bones.get(_side_name(r[4:], "_ik"))]
        pole_name = _side_name(base, "_ik_target")
        pole = (arm, pole_name) if owner.get("pole_vector") and bones.get(pole_name) is not None else None
        limbs.append(Limb(owner.name, "rigify", fk, result, (f'pose.bones["{owner.name}"]["{RIGIFY_SWITCH}"]',
                                                              0.0, 1.0), controls, pole))
    return limbs


def constraint_limbs(arm: bpy.types.Object) -> list[Limb]:
    """A limb per IK constraint with a target on a plain rig (not a mechanism bone of a control rig).

    Its bones are the ones Blender's IK moves (they are their own FK controls); the switch is
    the constraint's influence (IK at its current value, or 1 where that is 0, FK at 0); the IK
    control is its target (an object, or a bone of an armature) and its pole.
    """
    limbs = []
    for pb in arm.pose.bones:
        if pb.name.startswith(("MCH-", "ORG-", "DEF-")):
            continue
        for con in pb.constraints:
            if con.type != "IK" or con.target is None:
                continue
            chain = blender_chain(pb, con)
            if not chain:
                continue
            names = [b.name for b in chain]
            target = (con.target, con.subtarget if con.target.type == "ARMATURE" else "")
            pole = None
            if con.pole_target is not None:
                pole = (con.pole_target, con.pole_subtarget if con.pole_target.type == "ARMATURE" else "")
            ik_value = con.influence if con.influence > 0 else 1.0
            limbs.append(Limb(f"{pb.name}: {con.name}", "constraint", names, names,
                              (f"{con.path_from_id()}.influence", ik_value, 0.0),
                              [(target[0], target[1], pb.name if con.use_tail else names[-1])], pole,
                              follower_tail=True, rotation=con.use_rotation, constraint=con))
    return limbs


def find_limbs(arm: bpy.types.Object) -> list[Limb]:
    """Every IK/FK pair of the armature: Rigify's limbs, else its IK constraints.

    Raises:
        BakeFailed: Nothing to switch, with what was looked for.
    """
    limbs = rigify_limbs(arm) or constraint_limbs(arm)
    if not limbs:
        raise BakeFailed(
            f"armature {arm.name!r} has no IK/FK pair: looked for Rigify limbs (a '<limb>_parent' bone with an "
            f"'{RIGIFY_SWITCH}' property) and IK constraints with a target; for Articulate chains, Bake Chains "
            "keys the IK pose onto the bones")
    return limbs


def _hold(arm: bpy.types.Object, limbs: Sequence[Limb], mode: str) -> list[tuple]:
    """The switches held at ``mode`` ("ik" or "fk") while sampling or placing."""
    return [(arm, limb.switch[0], limb.switch[1] if mode == "ik" else limb.switch[2]) for limb in limbs]


def _measured(arm: bpy.types.Object, world: dict[str, np.ndarray]) -> np.ndarray:
    """(N, 2, 3) per bone-stack helper: heads and tails of sampled bone frames."""
    out = {}
    for name, M in world.items():
        length = arm.pose.bones[name].bone.length
        out[name] = np.stack([M[:, :3, 3], M[:, :3, 3] + length * M[:, :3, 1]], axis=1)
    return out


def _compare(arm, limbs, frames, before: dict, after: dict) -> list[dict]:
    """Per limb, how far playback now puts each bone's head and tail from where the other mode did."""
    a, b = _measured(arm, before), _measured(arm, after)
    out = []
    for limb in limbs:
        err = np.max([np.linalg.norm(a[n] - b[n], axis=-1).max(axis=-1) for n in limb.result], axis=0)
        out.append({"limb": limb.name, "kind": limb.kind, "max_error_m": float(err.max()),
                    "error_m": err.tolist(),
                    "frames_over_tolerance": [int(f) for f, e in zip(frames, err) if e > TOLERANCE_M]})
    return out


def key_switches(context, arm: bpy.types.Object, limbs: Sequence[Limb], mode: str, start: int, end: int) -> None:
    """Key every limb's switch to ``mode`` on the range (constant), keeping its value just outside it."""
    paths = [limb.switch[0] for limb in limbs]
    values = [limb.switch[1] if mode == "ik" else limb.switch[2] for limb in limbs]
    body_controls.key_constant(context, arm, paths, values, start, end)


def _control_parents(limbs: Sequence[Limb]) -> dict[str, str | None]:
    """Each limb's FK control -> the control it hangs from (None for a limb's first), parents first.

    Limbs may share controls (two arms' IK chains through one spine): a control that starts one
    limb and lies inside another keeps the other's parent.
    """
    parents: dict[str, str | None] = {}
    for limb in limbs:
        for k, fk in enumerate(limb.fk):
            if k or fk not in parents:
                parents[fk] = limb.fk[k - 1] if k else None
    ordered: dict[str, str | None] = {}

    def place(name: str) -> None:
        if name not in ordered:
            if parents[name] is not None:
                place(parents[name])
            ordered[name] = parents[name]

    for name in parents:
        place(name)
    return ordered


def ik_to_fk(context: bpy.types.Context, arm: bpy.types.Object, frames: Sequence[int]) -> dict:
    """Key the FK controls to the pose the IK gives on ``frames`` and the switches to FK; returns a report.

    Raises:
        BakeFailed: No IK/FK pair, or an invalid range.
    """
    limbs = find_limbs(arm)
    scene = context.scene
    bones = [n for limb in limbs for n in limb.result]
    with matching.forced(_hold(arm, limbs, "ik")):
        ik_pose = bridge.sample_bones(scene, frames, arm, bones)
    bad = ~np.all(np.isfinite(np.stack([ik_pose[b] for b in bones], axis=1)), axis=(1, 2, 3))
    if bad.any():
        where = frame_runs([int(f) for f in np.asarray(frames)[bad]])
        raise BakeFailed(f"the IK pose is not a number on frame(s) {where} (an IK target or pole with NaN keys "
                         "there, such as a tracker's dropouts): key the targets there, or bake a range without "
                         "those frames")
    fk_world = {fk: ik_pose[r] for limb in limbs for fk, r in zip(limb.fk, limb.result)}
    parents = _control_parents(limbs)
    current = scene.frame_current
    try:
        with matching.forced(_hold(arm, limbs, "fk")):
            levels = body_controls.evaluation_levels(arm, parents, with_scale=True)
            # Scale too: an IK limb that stretches (Rigify's IK Stretch) plays its bones scaled.
            # Locations of the controls not connected to their parent: where mechanism bones
            # between them do not carry the stretch along, the control is moved instead.
            loose = {fk for fk in fk_world if not arm.data.bones[fk].use_connect}
            basis = body_controls.evaluated_basis(context, arm, list(frames), fk_world, levels, loose,
                                                  scale_bones=set(fk_world))
    finally:
        scene.frame_set(current)
    keys = bridge.write_bone_poses(arm, np.asarray(frames, dtype=float), basis, location_bones=loose,
                                   scale_bones=set(basis))
    key_switches(context, arm, limbs, "fk", frames[0], frames[-1])
    after = bridge.sample_bones(scene, frames, arm, bones)
    return _report(arm, "ik_to_fk", limbs, frames, _compare(arm, limbs, frames, ik_pose, after), keys)


def _limb_controls(arm: bpy.types.Object, limb: Limb, fk_pose: dict[str, np.ndarray]) -> list[list]:
    """The IK controls of a limb to place (one group), then its pole (a second group)."""
    group = []
    for owner, bone, driven in limb.ik_controls:
        goal = fk_pose[driven].copy()
        tail = limb.follower_tail and limb.kind == "constraint"
        if tail:
            goal[:, :3, 3] += arm.pose.bones[driven].bone.length * goal[:, :3, 1]
        control = (matching.Control(matching.Follower(arm, driven, tail), goal, arm=owner, bone=bone)
                   if bone else matching.Control(matching.Follower(arm, driven, tail), goal, obj=owner))
        control.rotation = limb.rotation if limb.kind == "constraint" else True
        group.append(control)
    # The limb's end controls first, then its root control: Rigify's root hangs from a swing bone that
    # tracks the end control, so it is placed once the end is where it goes; then the pole.
    root = [c for c in group if c.follower.bone == limb.result[0]]
    groups = [g for g in ([c for c in group if c not in root], root) if g]
    if limb.pole is not None and len(limb.result) >= 2:
        owner, bone = limb.pole
        # The bend: the limb's root, its middle joint and its end (Rigify: the hand's head; a
        # constraint's chain: its last bone's tail, the middle that bone's head).
        if limb.kind == "rigify" and len(limb.result) >= 3:
            middle, end = limb.result[1], matching.Follower(arm, limb.result[2])
        else:
            middle, end = limb.result[-1], matching.Follower(arm, limb.result[-1], True)
        swivel = (matching.Follower(arm, limb.result[0]), matching.Follower(arm, middle))
        pole = matching.Control(end, fk_pose[middle], arm=owner if bone else None, bone=bone,
                                obj=None if bone else owner, rotation=False, swivel=swivel,
                                swivel_goal=fk_pose[middle][:, :3, 3])
        groups.append([pole])
    return groups


def fk_to_ik(context: bpy.types.Context, arm: bpy.types.Object, frames: Sequence[int]) -> dict:
    """Place and key the IK controls where the FK pose puts the limbs on ``frames``, switches to IK; returns a report.

    Raises:
        BakeFailed: No IK/FK pair, or an invalid range.
    """
    limbs = find_limbs(arm)
    scene = context.scene
    bones = [n for limb in limbs for n in limb.result]
    notes = []
    for limb in limbs:
        if limb.constraint is not None and limb.constraint.mute:
            limb.constraint.mute = False
            notes.append(f"{limb.name}: the IK constraint was muted; it is on now, its influence keyed")
    with matching.forced(_hold(arm, limbs, "fk")):
        fk_pose = bridge.sample_bones(scene, frames, arm, bones)
    groups = [g for limb in limbs for g in _limb_controls(arm, limb, fk_pose)]
    errors = matching.place_controls(context, list(frames), groups, hold=_hold(arm, limbs, "ik"))
    keys = 0
    numbers = np.asarray(frames, dtype=float)
    for control in (c for g in groups for c in g):
        if control.obj is not None:
            keys += bridge.write_object_poses(control.obj, numbers, control.keys)
        else:
            keys += bridge.write_bone_poses(control.arm, numbers, {control.bone: control.keys},
                                            location_bones={control.bone})
    key_switches(context, arm, limbs, "ik", frames[0], frames[-1])
    after = bridge.sample_bones(scene, frames, arm, bones)
    report = _report(arm, "fk_to_ik", limbs, frames, _compare(arm, limbs, frames, fk_pose, after), keys)
    report["placement_error_max"] = float(errors.max(initial=0.0))
    report["notes"] = notes + report["notes"]
    return report


def _report(arm, direction: str, limbs, frames, measured: list[dict], keys: int) -> dict:
    notes = []
    for m in measured:
        if m["frames_over_tolerance"]:
            notes.append(f"{m['limb']}: {len(m['frames_over_tolerance'])} frame(s) where playback puts a bone more "
                         f"than {TOLERANCE_M * 1000:.3g} mm from the pose it had (up to {m['max_error_m'] * 1000:.3g} "
                         "mm): a control could not follow (limits, locked channels, a target out of reach)")
    # A pair of IK constraints Blender solves in no set order: playback, and so the match, can flicker.
    notes += playback.unsteady_ik_warnings(arm, [n for limb in limbs for n in limb.result])
    return {"armature": arm.name, "direction": direction, "frames": [int(f) for f in frames],
            "limbs": measured, "tolerance_m": TOLERANCE_M, "keys_written": keys, "measured_by": "playback",
            "notes": notes}


class _SwitchOperator(FrameRangeOptions):
    bl_options = {"REGISTER", "UNDO"}

    report_path: bpy.props.StringProperty(name="Report", subtype="FILE_PATH",
                                          options={"HIDDEN", "SKIP_SAVE", *BLEND_RELATIVE},
                                          description="Write a JSON report to this file")

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return armature_poll(cls, context)

    def run(self, context, arm, frames) -> dict:
        raise NotImplementedError

    def draw(self, context: bpy.types.Context) -> None:
        self.draw_range(self.layout, context)  # every frame of it: switching keys each one

    def execute(self, context: bpy.types.Context) -> set[str]:
        report_path = chosen_report_path(self.report_path, context, self.use_scene_settings)
        if why := report_path_problem(report_path):
            self.report({"ERROR"}, why)
            return {"CANCELLED"}
        arm = context.object
        try:
            bridge.check_armature(arm, editable=True)
            report = self.run(context, arm, list(self.frames(context)))
        except (BakeFailed, bridge.BridgeError) as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        if report_path:
            write_report(report_path, report)
        worst = max(m["max_error_m"] for m in report["limbs"])
        text = (f"{len(report['limbs'])} limb(s) over {len(report['frames'])} frames, within "
                f"{worst * 1000:.3g} mm of the pose they had")
        for note in report["notes"]:
            self.report({"WARNING"}, note)
        self.report({"WARNING"} if worst > TOLERANCE_M else {"INFO"}, text)
        return {"FINISHED"}


class ARTICULATE_OT_ik_to_fk(_SwitchOperator, bpy.types.Operator):
    """Key the FK controls to the pose the IK gives over the range, and the IK/FK switches to FK"""

    bl_idname = "articulate.ik_to_fk"
    bl_label = "Bake IK to FK"

    def run(self, context, arm, frames) -> dict:
        return ik_to_fk(context, arm, frames)


class ARTICULATE_OT_fk_to_ik(_SwitchOperator, bpy.types.Operator):
    """Key the IK controls (hand, foot, pole) where the FK pose puts the limbs over the range, switches to IK"""

    bl_idname = "articulate.fk_to_ik"
    bl_label = "Bake FK to IK"

    def run(self, context, arm, frames) -> dict:
        return fk_to_ik(context, arm, frames)


classes = (ARTICULATE_OT_ik_to_fk, ARTICULATE_OT_fk_to_ik)
