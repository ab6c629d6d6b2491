# SPDX-License-Identifier: GPL-3.0-or-later
"""What playback shows after a bake: each chain tip against its target, and what overrides the keys.

A bake's report is measured here, on the baked range evaluated the way playback evaluates it
(every constraint and driver live, the converted IK constraints muted as the bake leaves them),
not on the solver's answer: a frame the solver reached but playback does not is reported as
overridden, naming the constraint or driver responsible where one is found.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import bpy
import numpy as np

from ..ik_core.model.rotations import matrix_to_rotvec
from . import aiming, bridge
from .bridge.body_controls import driving_constraints

# Blender evaluates poses in single precision: a solved pose keyed and played back lands within
# about 1e-6 of itself on a metre-sized rig. Residuals are judged against tolerance + this.
FLOAT_SLACK_M = 2e-6
FLOAT_SLACK_RAD = 2e-6
_BONE_PATH = re.compile(r'^pose\.bones\["((?:[^"\\]|\\.)*)"\]\.(rotation_\w+|location|scale)')


@dataclass
class PlaybackChain:
    """One baked chain as playback sees it."""

    name: str
    arm_obj: bpy.types.Object
    bones: list  # names of the bones the bake keyed
    tip_bone: str
    use_tail: bool
    target: bpy.types.Object
    target_bone: str
    use_rotation: bool
    tolerance: float  # [m]
    rotation_tolerance: float  # [rad]
    aim: aiming.AimCheck | None = None  # an aim chain: its axis against the direction to the target


def aim_chain(settings, arm_obj: bpy.types.Object, bones: list[str], tolerance: float) -> PlaybackChain:
    """An aim chain as playback measures it: the tip bone's aim axis, from its head, against the target.

    Its position error is how far the aim line passes the target (not judged); its rotation
    error is the aim angle, judged against ``tolerance`` [rad].
    """
    return PlaybackChain(settings.name, arm_obj, bones, bones[-1], False, settings.target, settings.target_bone,
                         True, np.inf, tolerance, aiming.check_for(settings))


def _active(con: bpy.types.Constraint) -> bool:
    return not con.mute and con.influence > 0 and getattr(con, "enabled", True)


def _ik_chain(pb: bpy.types.PoseBone, con: bpy.types.Constraint) -> list[str]:
    """Bones an IK constraint on ``pb`` moves (Blender's chain_count and use_tail semantics)."""
    bones = [pb] if con.use_tail else []
    at = pb if con.use_tail else pb.parent
    if not con.use_tail and at is not None:
        bones.append(at)
    while bones and bones[-1].parent is not None and (con.chain_count == 0 or len(bones) < con.chain_count):
        bones.append(bones[-1].parent)
    return [b.name for b in bones]


def unsteady_ik_warnings(arm: bpy.types.Object, bones: Sequence[str]) -> list[str]:
    """Warnings for IK constraints Blender may evaluate in a different order from one evaluation to the next.

    Two IK constraints (with targets) whose chains share bones but start at different root bones
    are two IK solves in Blender's dependency graph, both writing the shared bones, in no set order.
    Measured on Blender 4.2, 4.5 and 5.0: the pose of those bones, and of every bone below, then
    changes between evaluations of one frame, by up to the pose of the frame evaluated before
    (Blender's own IK flickers there; on 5.0 the keys of a bake flickered too with both muted). How
    often depends on thread timing, so a pair that played steadily once is no proof: every such
    pair is warned about. Removing either constraint, or giving both the same root bone, makes
    playback repeatable. One warning per pair whose shared bones or bones below hold one of ``bones``.
    """
    chains = [(pb, con, _ik_chain(pb, con)) for pb in arm.pose.bones for con in pb.constraints
              if con.type == "IK" and getattr(con, "target", None) is not None]
    wanted = set(bones)
    out = []
    for k, (first_pb, first, first_bones) in enumerate(chains):
        for second_pb, second, second_bones in chains[k + 1:]:
            shared = set(first_bones) & set(second_bones)
            if not shared or not first_bones or first_bones[-1] == second_bones[-1]:
                continue
            top = arm.pose.bones[next(b for b in reversed(first_bones) if b in shared)]  # the highest shared bone
            unsteady = {top.name, *(b.name for b in top.children_recursive)}
            if unsteady & wanted:
                state = "muted" if first.mute and second.mute else "live"
                out.append(
                    f"IK {first.name!r} on {first_pb.name} and IK {second.name!r} on {second_pb.name} share bones "
                    f"from {top.name} but start at different bones ({first_bones[-1]}, {second_bones[-1]}): Blender "
                    f"evaluates such a pair ({state}) in an order that can change between evaluations, so playback "
                    f"of {top.name} and the bones below it can show a stale pose and differ from this report; delete "
                    "the constraint you no longer need, or give both the same root bone (Chain Length)")
    return out


def overriding(arm: bpy.types.Object, bones: Sequence[str]) -> dict[str, list[str]]:
    """Per bone of ``bones``, the live constraints and drivers that override its keys.

    Counted: constraints that copy or follow another transform (Copy Transforms/Rotation,
    Child Of, Armature, Damped Track, Track To), any active IK constraint whose chain holds the
    bone (including one on a child bone), and drivers on the bone's rotation, location or scale.
    Limit constraints are not counted: the solvers respect them.
    """
    wanted = set(bones)
    found: dict[str, list[str]] = {name: [] for name in bones}
    for name in bones:
        found[name] += driving_constraints(arm.pose.bones[name])
    for pb in arm.pose.bones:
        for con in pb.constraints:
            if con.type == "IK" and _active(con) and getattr(con, "target", None) is not None:
                for name in set(_ik_chain(pb, con)) & wanted:
                    found[name].append(f"IK {con.name!r} on {pb.name}")
    if arm.animation_data is not None:
        for fc in arm.animation_data.drivers:
            match = _BONE_PATH.match(fc.data_path)
            if match and not fc.mute and match.group(1) in wanted:
                found[match.group(1)].append(f"a driver on {match.group(2)}")
    return {name: items for name, items in found.items() if items}


def describe(sources: dict[str, list[str]], most: int | None = None) -> str:
    """``sources`` of :func:`overriding` as a phrase: "Bone follows what, what; ..." (``most`` bones at most)."""
    return "; ".join(f"{bone} follows {', '.join(items)}" for bone, items in list(sources.items())[:most])


def keyable_around(sources: dict[str, list[str]]) -> bool:
    """Whether only constraints move the bones (keys can be corrected around them): no driver, no live IK."""
    found = [item for items in sources.values() for item in items]
    return bool(found) and not any(item.startswith(("a driver on", "IK ")) for item in found)


def override_warnings(label: str, sources: dict[str, list[str]]) -> list[str]:
    """One warning per chain whose bones something overrides: what, and what to do."""
    if not sources:
        return []
    shown = describe(sources, 4)
    return [f"{label}: {shown}; its keys will not show in playback: mute those, or bake onto the bones "
            "they follow (on a Rigify rig: the FK controls with the limb in FK)"]


def measure(scene: bpy.types.Scene, frames: Sequence[int], chains: Sequence[PlaybackChain],
            goals: Sequence[np.ndarray | None] = ()) -> list[tuple]:
    """Per chain, (N,) position error [m] and (N,) rotation error [rad] of its tip in playback.

    The rotation error is 0 for chains that do not match their target's orientation. ``goals``
    gives per chain (N, 4, 4) world frames to measure against instead of its target (the goal
    of a chain at partial influence), or None.
    """
    sources = [bridge.TipSource(c.arm_obj, c.tip_bone, c.use_tail, c.target, c.target_bone) for c in chains]
    goals = list(goals) + [None] * (len(chains) - len(goals))
    # Aim chains with an up target: the target's world position too (as the target of a second source).
    ups = [k for k, c in enumerate(chains) if c.aim is not None and c.aim.up_target is not None]
    sampled = bridge.sample_tips(scene, frames, sources + [
        bridge.TipSource(chains[k].arm_obj, chains[k].tip_bone, False, chains[k].aim.up_target) for k in ups])
    up_points = {k: sampled[len(sources) + j][1][:, :3, 3] for j, k in enumerate(ups)}
    out = []
    for k, (chain, (tip, target), goal) in enumerate(zip(chains, sampled, goals)):
        if goal is not None:
            target = goal
        if chain.aim is not None:
            out.append(aiming.playback_errors(chain.aim, tip, target, up_points.get(k)))
            continue
        pos = np.linalg.norm(tip[:, :3, 3] - target[:, :3, 3], axis=-1)
        rot = np.zeros(len(pos))
        if chain.use_rotation:
            a = tip[:, :3, :3] / np.linalg.norm(tip[:, :3, :3], axis=-2, keepdims=True)
            b = target[:, :3, :3] / np.linalg.norm(target[:, :3, :3], axis=-2, keepdims=True)
            rot = np.linalg.norm(matrix_to_rotvec(np.swapaxes(a, -1, -2) @ b), axis=-1)
        out.append((pos, rot))
    return out


def verify(scene: bpy.types.Scene, frames: Sequence[int], chains: Sequence[PlaybackChain], report: dict,
           goals: Sequence[np.ndarray | None] = ()) -> None:
    """Replace each chain's residuals and convergence in ``report`` by what playback shows.

    A chain with a goal in ``goals`` (at partial influence, or planted during contacts) is measured
    against it, not its target.

    Per chain the solver's own numbers stay as ``solver_position_error_m`` and
    ``solver_converged``; ``converged`` becomes "the solver reached it and playback shows it
    within tolerance"; frames the solver reached that playback misses are listed in
    ``overridden_frames``, with a reason naming what overrides the bones where found.
    """
    by_name = {c["chain"]: c for c in report["chains"]}
    for chain, measured in zip(chains, measure(scene, frames, chains, goals)):
        pos, rot = measured[:2]
        entry = by_name[chain.name]
        if chain.aim is not None:
            entry.update(solver_aim_error_rad=entry["aim_error_rad"], solver_up_error_rad=entry["up_error_rad"],
                         aim_error_rad=rot.tolist(), up_error_rad=measured[2].tolist(),
                         aim_tolerance_rad=chain.rotation_tolerance)
        solver_ok = np.asarray(entry["converged"], dtype=bool)
        aim = "goal" if "influence" in entry or "contacts" in entry else "target"
        shown = pos <= chain.tolerance + FLOAT_SLACK_M
        if chain.use_rotation:
            shown &= rot <= chain.rotation_tolerance + FLOAT_SLACK_RAD
        overridden = solver_ok & ~shown
        sources = overriding(chain.arm_obj, chain.bones) if overridden.any() else {}
        why = describe(sources) or (
            "the rig's constraints or drivers change the keyed pose")
        reasons = list(entry["reasons"])
        for k in np.flatnonzero(overridden):
            off = f"the aim is {np.degrees(rot[k]):.3g} deg off" if chain.aim is not None else (
                f"the tip ends {pos[k] * 1000:.3g} mm from the {aim}")
            reasons[k] = f"overridden in playback: {off} ({why})"
        entry.update(
            solver_converged=entry["converged"],
            solver_position_error_m=entry["position_error_m"],
            converged=(solver_ok & shown).tolist(),
            position_error_m=pos.tolist(),
            rotation_error_rad=rot.tolist(),
            reasons=reasons,
            missed_frames=[int(f) for f, ok in zip(frames, solver_ok & shown) if not ok],
            overridden_frames=[int(f) for f, o in zip(frames, overridden) if o],
        )
    report["missed_frames"] = sorted({f for c in report["chains"] for f in c["missed_frames"]})
    report["overridden_frames"] = sorted({f for c in report["chains"] for f in c.get("overridden_frames", [])})
    report["measured_by"] = "playback"
