# SPDX-License-Identifier: GPL-3.0-or-later
"""Solved body poses onto control rigs: bases through the rig's evaluated parents, IK/FK switches."""

from __future__ import annotations

from collections.abc import Sequence

import bpy
import numpy as np
from mathutils import Matrix

from .. import compat
from .rig import matrix_to_array
from .scope import evaluating_only

# Rigify limbs: ``<limb>_parent.<side>["IK_FK"]`` is 0 for IK and 1 for FK; the FK controls
# are ``<limb>_fk.<side>``.
IK_FK_PROPERTY = "IK_FK"
FK_VALUE = 1.0

# Constraints that override a bone's own transform: keys on a bone carrying one do not show.
DRIVING_CONSTRAINTS = frozenset(
    {"COPY_TRANSFORMS", "COPY_ROTATION", "CHILD_OF", "ARMATURE", "DAMPED_TRACK", "TRACK_TO"}
)
# Constraints that only change scale: with them a bone still passes its parent's rotation on.
_SCALE_ONLY = frozenset({"COPY_SCALE", "LIMIT_SCALE", "MAINTAIN_VOLUME"})


def _active(con: bpy.types.Constraint) -> bool:
    return not con.mute and con.influence > 0 and getattr(con, "enabled", True)


def driving_constraints(pb: bpy.types.PoseBone) -> list[str]:
    """The active constraints overriding a pose bone's keys, e.g. ``"Copy Transforms 'X' from hand_tweak.L"``."""
    out = []
    for con in pb.constraints:
        if con.type in DRIVING_CONSTRAINTS and _active(con):
            target = getattr(con, "subtarget", "") or (con.target.name if getattr(con, "target", None) else "")
            label = con.type.replace("_", " ").title()
            out.append(f"{label} {con.name!r}" + (f" from {target}" if target else ""))
    return out


def needs_evaluation(arm: bpy.types.Object, bones: Sequence[str]) -> bool:
    """True when a mapped bone hangs from its nearest mapped ancestor through constrained or
    non-inheriting bones (a control rig's mechanism bones): rest-pose arithmetic would then
    place it wrongly, and its basis must be computed from its parent's evaluated pose."""
    mapped = set(bones)
    for name in bones:
        pb = arm.pose.bones[name]
        if not pb.bone.use_inherit_rotation:
            return True
        parent = pb.parent
        while parent is not None and parent.name not in mapped:
            if not parent.bone.use_inherit_rotation or any(_active(c) for c in parent.constraints):
                return True
            parent = parent.parent
    return False


def _moves_rotation(pb: bpy.types.PoseBone) -> bool:
    """True when constraints or inheritance flags can change the rotation a bone passes to its children."""
    return not pb.bone.use_inherit_rotation or any(
        _active(c) and c.type not in _SCALE_ONLY for c in pb.constraints
    )


def _moves_scale(pb: bpy.types.PoseBone) -> bool:
    """True when constraints or inheritance flags can change the scale a bone passes to its children."""
    return pb.bone.inherit_scale != "FULL" or any(_active(c) for c in pb.constraints)


def _rigid_anchor(arm: bpy.types.Object, name: str, mapped: set[str], with_scale: bool = False) -> str | None:
    """The nearest mapped ancestor of ``name`` when every bone in between just follows it, else None.

    With ``with_scale`` a bone in between that changes the scale it passes on breaks the chain too.
    """
    pb = arm.pose.bones[name]
    if not pb.bone.use_inherit_rotation or (with_scale and pb.bone.inherit_scale != "FULL"):
        return None
    parent = pb.parent
    while parent is not None and parent.name not in mapped:
        if _moves_rotation(parent) or (with_scale and _moves_scale(parent)):
            return None
        parent = parent.parent
    return parent.name if parent is not None else None


def evaluation_levels(arm: bpy.types.Object, parents: dict[str, str | None],
                      with_scale: bool = False) -> list[list[str]]:
    """Mapped bones grouped so each group can be posed from one evaluation of the rig.

    Args:
        arm: The armature.
        parents: Mapped bone -> the mapped bone it hangs from in the role tree (None for the
            pelvis), parents first.
        with_scale: The poses carry scale (a stretched limb): bones between that change the
            scale passed on (inherit-scale modes, scale constraints) also need an evaluation.

    A bone that hangs from its role parent through plain bones joins its parent's group (its
    pose follows from the parent's by rest-pose arithmetic); any other bone, whose parent pose
    comes through constraints, goes one group after its role parent.
    """
    level: dict[str, int] = {}
    for name, role_parent in parents.items():
        anchor = _rigid_anchor(arm, name, set(parents), with_scale)
        if anchor is not None and anchor in level:
            level[name] = level[anchor]
        else:
            level[name] = 0 if role_parent is None else level[role_parent] + 1
    groups: list[list[str]] = [[] for _ in range(max(level.values(), default=-1) + 1)]
    for name, k in level.items():
        groups[k].append(name)
    return groups


def evaluated_basis(
    context: bpy.types.Context,
    arm: bpy.types.Object,
    frames: Sequence[int],
    world: dict[str, np.ndarray],
    levels: Sequence[Sequence[str]],
    location_bones: set[str],
    scale_bones: frozenset[str] | set[str] = frozenset(),
) -> dict[str, np.ndarray]:
    """Pose-bone ``matrix_basis`` (N, 4, 4) putting each bone at its world pose (N, 4, 4) on a control rig.

    Frame by frame, bones are posed group by group (see :func:`evaluation_levels`) and the
    scene re-evaluated in between, so each basis is computed from the pose its parent really
    has once the rig's constraints and drivers ran. Bones not in ``location_bones`` keep their
    current location (only their rotation is solved); bones in ``scale_bones`` take the scale
    their world pose has (an IK limb that stretched), the others keep theirs. The caller
    restores the scene frame; the bones' current bases are restored here.
    """
    n = len(frames)
    bones = [b for level in levels for b in level]
    mapped = set(bones)
    saved = {b: arm.pose.bones[b].matrix_basis.copy() for b in bones}
    out = {b: np.empty((n, 4, 4)) for b in bones}
    scene = context.scene
    try:
        with evaluating_only(scene, [arm]):
            for i, frame in enumerate(frames):
                scene.frame_set(int(frame))
                inv_obj = np.linalg.inv(matrix_to_array(arm.matrix_world))
                for k, level in enumerate(levels):
                    if k:
                        context.view_layer.update()
                    posed: dict[str, np.ndarray] = {}
                    for name in level:
                        pb = arm.pose.bones[name]
                        frame_rest = _parent_frame(pb, posed, mapped)
                        basis = _basis(pb, frame_rest, inv_obj @ world[name][i], name in location_bones,
                                       name in scale_bones)
                        pb.matrix_basis = Matrix(basis.tolist())
                        posed[name] = frame_rest @ basis
                        out[name][i] = basis
    finally:
        for name, basis in saved.items():
            arm.pose.bones[name].matrix_basis = basis
    return out


def _rest_relative(bone: bpy.types.Bone) -> np.ndarray:
    rest = matrix_to_array(bone.matrix_local)
    return rest if bone.parent is None else np.linalg.inv(matrix_to_array(bone.parent.matrix_local)) @ rest


def _parent_frame(pb: bpy.types.PoseBone, posed: dict[str, np.ndarray], mapped: set[str]) -> np.ndarray:
    """Armature-space frame the bone's basis applies in: its parent's pose times its rest offset.

    The parent's pose is the evaluated one, unless a mapped ancestor was posed in this same
    group: then the plain bones in between are chained from that pose (not yet evaluated).
    """
    chain = []
    parent = pb.parent
    while parent is not None and parent.name not in mapped:
        chain.append(parent)
        parent = parent.parent
    if parent is None or parent.name not in posed:
        if pb.parent is None:
            return matrix_to_array(pb.bone.matrix_local)
        return matrix_to_array(pb.parent.matrix) @ _rest_relative(pb.bone)
    pose = posed[parent.name]
    for link in reversed(chain):
        pose = pose @ _rest_relative(link.bone) @ matrix_to_array(link.matrix_basis)
    return pose @ _rest_relative(pb.bone)


def _basis(pb: bpy.types.PoseBone, frame_rest: np.ndarray, target: np.ndarray, keep_location: bool,
           keep_scale: bool = False) -> np.ndarray:
    """Basis putting ``pb`` at armature-space ``target`` (rotation, location and scale as asked) in ``frame_rest``."""
    basis = np.linalg.solve(frame_rest, target)
    current = matrix_to_array(pb.matrix_basis)
    if not keep_scale:
        R = basis[:3, :3] / np.linalg.norm(basis[:3, :3], axis=0)
        basis[:3, :3] = R * np.linalg.norm(current[:3, :3], axis=0)
    if not keep_location:
        basis[:3, 3] = current[:3, 3]
    return basis


def ik_fk_switches(arm: bpy.types.Object, bones: Sequence[str]) -> list[bpy.types.PoseBone]:
    """Pose bones holding an IK/FK switch of a limb whose FK controls are mapped (Rigify's
    ``upper_arm_parent.L["IK_FK"]`` for ``upper_arm_fk.L``)."""
    mapped = set(bones)
    out = []
    for pb in arm.pose.bones:
        if IK_FK_PROPERTY in pb.keys() and pb.name.replace("_parent", "_fk") in mapped:
            out.append(pb)
    return out


def key_fk(context: bpy.types.Context, arm: bpy.types.Object, owners: Sequence[bpy.types.PoseBone],
           start: int, end: int) -> None:
    """Key each switch to FK on ``start``..``end`` (constant keys), keeping its value just outside the range."""
    paths = [f'pose.bones["{pb.name}"]["{IK_FK_PROPERTY}"]' for pb in owners]
    key_constant(context, arm, paths, [FK_VALUE] * len(owners), start, end)


def key_constant(context: bpy.types.Context, arm: bpy.types.Object, paths: Sequence[str],
                 values: Sequence[float], start: int, end: int) -> None:
    """Key each property (RNA path from ``arm``) to its value on ``start``..``end`` (constant keys), keeping
    the value it has just outside the range (an IK/FK switch, a constraint's influence)."""
    if not paths:
        return
    scene = context.scene
    current = scene.frame_current
    outside = {}
    try:
        for frame in (start - 1, end + 1):
            scene.frame_set(frame)
            outside[frame] = [float(arm.path_resolve(path)) for path in paths]
    finally:
        scene.frame_set(current)
    frames = np.array(sorted({start - 1, start, end, end + 1}), dtype=float)
    table = np.array([outside[int(f)] if int(f) in outside else list(values) for f in frames])
    groups = [path.split('"')[1] if path.startswith("pose.bones[") else "" for path in paths]
    channels = [compat.Channel(path, 0, group) for path, group in zip(paths, groups)]
    compat.ensure_action(arm)
    compat.write_channels(arm, channels, frames, table, interpolation="CONSTANT", replace=(start - 1, end + 1))
