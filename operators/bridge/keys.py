# SPDX-License-Identifier: GPL-3.0-or-later
"""Solved rotations to pose-bone channels in each bone's rotation mode, keyed in bulk."""

from __future__ import annotations

from collections.abc import Sequence

import bpy
import numpy as np

from ...ik_core.model import rotations as rot
from ...ik_core.model.rotations import rotation_part
from .. import compat
from .errors import BridgeError
from .rig import matrix_to_array

EULER_ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")


def pose_rotations(bones: Sequence[bpy.types.PoseBone]) -> np.ndarray:
    """(B, 3, 3) current pose rotation of each bone (``matrix_basis`` rotation part)."""
    if not len(bones):
        return np.empty((0, 3, 3))
    return rotation_part(np.stack([matrix_to_array(pb.matrix_basis) for pb in bones]))


def bone_rotation_channels(
    pb: bpy.types.PoseBone, R: np.ndarray, previous: np.ndarray | None = None
) -> tuple[list[compat.Channel], np.ndarray]:
    """Channels and (N, C) values expressing rotations ``R`` (N, 3, 3) in the bone's mode.

    Quaternions are made sign-continuous and Euler angles continuous over the frames,
    starting from the bone's current value so the first key does not spin.
    """
    mode = pb.rotation_mode
    if mode == "QUATERNION":
        q = rot.matrix_to_quat(R)
        start = np.array(pb.rotation_quaternion, dtype=float)
        if len(q) and np.dot(q[0], start) < 0:
            q[0] = -q[0]
        q = rot.quat_make_continuous(q, axis=0)
        return compat.bone_channels(pb.name, "rotation_quaternion", 4), q
    if mode in EULER_ORDERS:
        e = rot.matrix_to_euler(R, mode)
        ref = np.array(pb.rotation_euler, dtype=float) if previous is None else previous
        for i in range(len(e)):
            e[i] = rot.euler_compatible(e[i], ref, mode)
            ref = e[i]
        return compat.bone_channels(pb.name, "rotation_euler", 3), e
    if mode == "AXIS_ANGLE":
        q = rot.quat_make_continuous(rot.matrix_to_quat(R), axis=0)
        vec = q[:, 1:]
        norm = np.linalg.norm(vec, axis=-1)
        angle = 2.0 * np.arctan2(norm, q[:, 0])
        axis = np.where(norm[:, None] > 1e-12, vec / np.maximum(norm, 1e-300)[:, None], (0.0, 1.0, 0.0))
        return compat.bone_channels(pb.name, "rotation_axis_angle", 4), np.column_stack([angle, axis])
    raise BridgeError(f"bone {pb.name!r} has unknown rotation mode {mode!r}")


def channel_rotations(bones: Sequence[bpy.types.PoseBone], values: np.ndarray) -> np.ndarray:
    """(N, B, 3, 3) rotations that channel values (N, C) express, the bones' channels side by side.

    The inverse of :func:`bone_rotation_channels` for each bone's rotation mode, as Blender reads
    an F-curve's value: a quaternion normalised, Euler angles in the bone's order, axis-angle as
    angle then axis (normalised).
    """
    values = np.asarray(values, dtype=float)
    out = np.empty((len(values), len(bones), 3, 3))
    col = 0
    for k, pb in enumerate(bones):
        mode = pb.rotation_mode
        if mode == "QUATERNION":
            q = values[:, col : col + 4]
            norm = np.linalg.norm(q, axis=-1, keepdims=True)
            out[:, k] = rot.quat_to_matrix(np.where(norm > 1e-12, q / np.maximum(norm, 1e-300), (1.0, 0.0, 0.0, 0.0)))
            col += 4
        elif mode in EULER_ORDERS:
            out[:, k] = rot.euler_to_matrix(values[:, col : col + 3], mode)
            col += 3
        elif mode == "AXIS_ANGLE":
            angle, axis = values[:, col], values[:, col + 1 : col + 4]
            norm = np.linalg.norm(axis, axis=-1, keepdims=True)
            unit = np.where(norm > 1e-12, axis / np.maximum(norm, 1e-300), (0.0, 1.0, 0.0))
            out[:, k] = rot.rotvec_to_matrix(unit * angle[:, None])
            col += 4
        else:
            raise BridgeError(f"bone {pb.name!r} has unknown rotation mode {mode!r}")
    return out


def rotation_channel_values(bones: Sequence[bpy.types.PoseBone], R: np.ndarray) -> np.ndarray:
    """(N, C) the channel values :func:`write_bone_rotations` keys for rotations ``R`` (N, B, 3, 3)."""
    columns = [bone_rotation_channels(pb, R[:, k])[1] for k, pb in enumerate(bones)]
    return np.concatenate(columns, axis=1) if columns else np.zeros((len(R), 0))


def keyed_values(obj: bpy.types.ID, path: str, index: int, frames: Sequence[float], static: float) -> np.ndarray:
    """(N,) the values of the channel ``path[index]`` at ``frames`` as its F-curve plays them; ``static`` unkeyed."""
    fc = compat.find_fcurve(obj, path, index)
    if fc is None:
        return np.full(len(frames), float(static))
    return np.array([fc.evaluate(float(f)) for f in frames])


def write_bone_rotations(
    arm_obj: bpy.types.Object,
    bones: Sequence[bpy.types.PoseBone],
    frames: np.ndarray,
    R: np.ndarray,
    replace: tuple[float, float] | None = None,
    smoothing: str | None = None,
) -> int:
    """Key rotations ``R`` (N, B, 3, 3) on ``bones`` at ``frames`` (N,) in bulk.

    Args:
        smoothing: The F-curves' auto-handle smoothing ("NONE" or "CONT_ACCEL"); None leaves it.

    Returns:
        Number of keys written.
    """
    channels: list[compat.Channel] = []
    columns: list[np.ndarray] = []
    for k, pb in enumerate(bones):
        ch, values = bone_rotation_channels(pb, R[:, k])
        channels += ch
        columns.append(values)
    values = np.concatenate(columns, axis=1) if columns else np.zeros((len(frames), 0))
    compat.ensure_action(arm_obj)
    curves = compat.write_channels(arm_obj, channels, frames, values, replace=replace)
    if smoothing is not None:
        for fc in curves:
            if fc.auto_smoothing != smoothing:
                fc.auto_smoothing = smoothing
                fc.update()
    return values.size


def local_scales(bones: Sequence[bpy.types.PoseBone], factors: np.ndarray) -> np.ndarray:
    """(N, B) the uniform ``scale`` each bone is keyed with so it plays at ``factors`` (N, B) of its size.

    ``bones`` is a chain, each bone the child of the one before; a child inherits its parent's
    scale unless its ``inherit_scale`` is NONE (or NONE_LEGACY), so its own key divides it out.
    """
    local = np.array(factors, dtype=float)
    for k in range(1, len(bones)):
        if not bones[k].bone.inherit_scale.startswith("NONE"):
            local[:, k] = factors[:, k] / factors[:, k - 1]
    return local


def write_bone_scales(
    arm_obj: bpy.types.Object,
    bones: Sequence[bpy.types.PoseBone],
    frames: np.ndarray,
    scales: np.ndarray,
    replace: tuple[float, float] | None = None,
) -> int:
    """Key uniform scales ``scales`` (N, B) on ``bones`` at ``frames`` (N,) in bulk; returns the keys written."""
    channels = [ch for pb in bones for ch in compat.bone_channels(pb.name, "scale", 3)]
    values = np.repeat(np.asarray(scales, dtype=float), 3, axis=1)
    compat.ensure_action(arm_obj)
    compat.write_channels(arm_obj, channels, frames, values, replace=replace)
    return values.size


def set_pose_scales(bones: Sequence[bpy.types.PoseBone], scales: np.ndarray) -> None:
    """Pose uniform scales ``scales`` (B,) on ``bones``."""
    for pb, s in zip(bones, scales):
        pb.scale = (float(s),) * 3


def set_pose_rotations(bones: Sequence[bpy.types.PoseBone], R: np.ndarray) -> None:
    """Set the current pose rotation of ``bones`` from ``R`` (B, 3, 3), in each bone's mode.

    Bones are converted per rotation mode in one batch (this runs on every live update).
    """
    by_mode: dict[str, list[int]] = {}
    for k, pb in enumerate(bones):
        by_mode.setdefault(pb.rotation_mode, []).append(k)
    for mode, idx in by_mode.items():
        Rm = R[idx]
        if mode == "QUATERNION":
            _set_quaternions([bones[k] for k in idx], rot.matrix_to_quat(Rm))
        elif mode in EULER_ORDERS:
            e = rot.matrix_to_euler(Rm, mode)
            ref = np.array([tuple(bones[k].rotation_euler) for k in idx])
            e = rot.euler_compatible(e, ref, mode)
            for k, value in zip(idx, e):
                bones[k].rotation_euler = value.tolist()
        elif mode == "AXIS_ANGLE":
            axis, angle = rot.matrix_to_axis_angle(Rm)
            for k, a, ang in zip(idx, axis, angle):
                bones[k].rotation_axis_angle = (float(ang), *a.tolist())
        else:
            raise BridgeError(f"bone {bones[idx[0]].name!r} has unknown rotation mode {mode!r}")


def _set_quaternions(bones: Sequence[bpy.types.PoseBone], q: np.ndarray) -> None:
    """Set quaternions q (B, 4) on bones, each with the sign nearer its current value.

    Several bones of one armature go through one ``foreach_get`` and one ``foreach_set`` of its
    whole pose (live posing writes every update); ``foreach_set`` runs no property update, so one
    ordinary assignment afterwards tags the depsgraph and the viewport for the whole pose.
    """
    arm = bones[0].id_data if bones else None
    if len(bones) < 2 or any(pb.id_data != arm for pb in bones):
        for pb, value in zip(bones, q):
            current = np.array(pb.rotation_quaternion)
            pb.rotation_quaternion = (value if np.dot(value, current) >= 0 else -value).tolist()
        return
    pose_bones = arm.pose.bones
    current = np.empty(4 * len(pose_bones), dtype=np.float32)
    pose_bones.foreach_get("rotation_quaternion", current)
    current = current.reshape(-1, 4)
    rows = [pose_bones.find(pb.name) for pb in bones]
    flip = np.einsum("ni,ni->n", q, current[rows].astype(float)) < 0
    current[rows] = np.where(flip[:, None], -q, q)
    pose_bones.foreach_set("rotation_quaternion", current.ravel())
    bones[0].rotation_quaternion = bones[0].rotation_quaternion


def world_to_basis(arm_obj: bpy.types.Object, bone_world: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Pose-bone ``matrix_basis`` (N, 4, 4) that put bones at world frames (N, 4, 4).

    Bones missing from ``bone_world`` keep their current basis and follow their parents, so
    every solved bone's basis is computed from the pose its parent really has.
    """
    inv_obj = np.linalg.inv(matrix_to_array(arm_obj.matrix_world))
    n = len(next(iter(bone_world.values())))
    pose: dict[str, np.ndarray] = {}
    basis: dict[str, np.ndarray] = {}
    for bone in arm_obj.data.bones:  # parents come before children
        rest = matrix_to_array(bone.matrix_local)
        rest_rel = rest if bone.parent is None else np.linalg.inv(matrix_to_array(bone.parent.matrix_local)) @ rest
        parent_pose = pose[bone.parent.name] if bone.parent is not None else np.eye(4)
        if bone.name in bone_world:
            P = inv_obj @ bone_world[bone.name]
            basis[bone.name] = np.linalg.solve(parent_pose @ rest_rel, P)
            pose[bone.name] = P
        else:
            current = matrix_to_array(arm_obj.pose.bones[bone.name].matrix_basis)
            pose[bone.name] = parent_pose @ rest_rel @ np.broadcast_to(current, (n, 4, 4))
    return basis


def write_bone_poses(
    arm_obj: bpy.types.Object, frames: np.ndarray, basis: dict[str, np.ndarray], location_bones: set[str],
    scale_bones: frozenset[str] | set[str] = frozenset(),
) -> int:
    """Key rotations (each bone's mode) of every bone in ``basis``, locations of ``location_bones``, scales of
    ``scale_bones`` (the lengths of the basis' axes)."""
    names = list(basis)
    bones = [arm_obj.pose.bones[n] for n in names]
    R = np.stack([basis[n][:, :3, :3] for n in names], axis=1)
    R = R / np.linalg.norm(R, axis=-2, keepdims=True)  # drop any scale picked up on the way
    keys = write_bone_rotations(arm_obj, bones, frames, R, replace=(frames[0], frames[-1]))
    channels, columns = [], []
    for n in names:
        if n in location_bones:
            channels += compat.bone_channels(n, "location", 3)
            columns.append(basis[n][:, :3, 3])
        if n in scale_bones:
            channels += compat.bone_channels(n, "scale", 3)
            columns.append(np.linalg.norm(basis[n][:, :3, :3], axis=-2))
    if channels:
        compat.write_channels(arm_obj, channels, frames, np.concatenate(columns, axis=1),
                              replace=(frames[0], frames[-1]))
        keys += len(frames) * len(channels)
    return keys


def write_object_poses(obj: bpy.types.Object, frames: np.ndarray, basis: np.ndarray) -> int:
    """Key an object's location and rotation (its rotation mode) to ``matrix_basis`` frames (N, 4, 4); returns keys."""
    R = rotation_part(basis)
    mode = obj.rotation_mode
    if mode == "QUATERNION":
        rotation = rot.quat_make_continuous(rot.matrix_to_quat(R), axis=0)
        channels = [compat.Channel("rotation_quaternion", i, "Object Transforms") for i in range(4)]
    elif mode in EULER_ORDERS:
        rotation = rot.matrix_to_euler(R, mode)
        ref = np.array(obj.rotation_euler, dtype=float)
        for i in range(len(rotation)):
            rotation[i] = rot.euler_compatible(rotation[i], ref, mode)
            ref = rotation[i]
        channels = [compat.Channel("rotation_euler", i, "Object Transforms") for i in range(3)]
    else:
        raise BridgeError(f"object {obj.name!r}: keying rotation mode {mode!r} is not supported; use Euler or "
                          "quaternion")
    channels = [compat.Channel("location", i, "Object Transforms") for i in range(3)] + channels
    values = np.concatenate([basis[:, :3, 3], rotation], axis=1)
    compat.ensure_action(obj)
    compat.write_channels(obj, channels, frames, values, replace=(frames[0], frames[-1]))
    return values.size
