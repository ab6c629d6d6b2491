# SPDX-License-Identifier: GPL-3.0-or-later
"""The one module that converts between Blender data and the numpy arrays ``ik_core`` uses."""

from __future__ import annotations

from collections.abc import Sequence

import bpy
import numpy as np

from ..ik_core import Effector, Joint, JointKind, Skeleton
from ..ik_core import rotations as rot
from . import compat

EULER_ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")


class BridgeError(Exception):
    """Blender data cannot be turned into a valid IK problem; the message says why."""


def matrix_to_array(matrix) -> np.ndarray:
    """(4, 4) numpy copy of a ``mathutils.Matrix`` (row-major, as printed by Blender)."""
    return np.array(matrix, dtype=float)


def pose_bone_chain(arm_obj: bpy.types.Object, tip: str, length: int = 0) -> list[bpy.types.PoseBone]:
    """Pose bones from the chain's root down to ``tip``.

    Args:
        arm_obj: The armature object.
        tip: Name of the tip bone.
        length: Number of bones in the chain; 0 means up to the top of the hierarchy
            (Blender's IK constraint ``chain_count`` semantics).

    Raises:
        BridgeError: If the tip bone does not exist (the message lists the bones).
    """
    bone = arm_obj.pose.bones.get(tip)
    if bone is None:
        names = ", ".join(b.name for b in arm_obj.pose.bones)
        raise BridgeError(f"armature {arm_obj.name!r} has no bone {tip!r}; its bones: {names}")
    chain = [bone]
    while chain[-1].parent is not None and (length <= 0 or len(chain) < length):
        chain.append(chain[-1].parent)
    return chain[::-1]


def _rest_relative(bone: bpy.types.Bone) -> np.ndarray:
    """(4, 4) rest transform of ``bone`` in its parent's frame (the armature for a root)."""
    local = matrix_to_array(bone.matrix_local)
    if bone.parent is None:
        return local
    return np.linalg.inv(matrix_to_array(bone.parent.matrix_local)) @ local


def chain_skeleton(arm_obj: bpy.types.Object, bones: Sequence[bpy.types.PoseBone]) -> Skeleton:
    """A skeleton of ball joints for a chain of pose bones, placed in world space.

    Each bone is a BALL joint whose variables are the rotation vector of its pose rotation
    (``matrix_basis`` without location); the root's origin folds in the object's world matrix
    and the current pose of the bones above the chain. The effector ``"tip"`` sits at the tail
    of the last bone.

    Raises:
        BridgeError: For a zero-length bone.
    """
    joints = []
    for k, pb in enumerate(bones):
        if pb.bone.length <= 1e-9:
            raise BridgeError(f"bone {pb.name!r} has zero length; IK needs bones with a length")
        origin = _rest_relative(pb.bone)
        if k == 0:
            above = np.eye(4)
            if pb.parent is not None:
                # The parent's current pose times the inverse of its rest: where the chain hangs.
                above = matrix_to_array(pb.parent.matrix) @ np.linalg.inv(matrix_to_array(pb.parent.bone.matrix_local))
            origin = matrix_to_array(arm_obj.matrix_world) @ above @ matrix_to_array(pb.bone.matrix_local)
        translate = np.eye(4)
        translate[:3, 3] = tuple(pb.location)
        joints.append(Joint(pb.name, JointKind.BALL, parent=k - 1, origin=origin @ translate))
    tip = np.eye(4)
    tip[1, 3] = bones[-1].bone.length
    return Skeleton(joints, [Effector("tip", len(joints) - 1, tip)], name=arm_obj.name)


def pose_rotations(bones: Sequence[bpy.types.PoseBone]) -> np.ndarray:
    """(B, 3, 3) current pose rotation of each bone (``matrix_basis`` rotation part)."""
    out = np.empty((len(bones), 3, 3))
    for k, pb in enumerate(bones):
        m = matrix_to_array(pb.matrix_basis)[:3, :3]
        # matrix_basis may carry scale: keep only the rotation.
        out[k] = m / np.linalg.norm(m, axis=0, keepdims=True)
    return out


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


def write_bone_rotations(
    arm_obj: bpy.types.Object,
    bones: Sequence[bpy.types.PoseBone],
    frames: np.ndarray,
    R: np.ndarray,
    replace: tuple[float, float] | None = None,
) -> int:
    """Key rotations ``R`` (N, B, 3, 3) on ``bones`` at ``frames`` (N,) in bulk.

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
    compat.write_channels(arm_obj, channels, frames, values, replace=replace)
    return values.size


def set_pose_rotations(bones: Sequence[bpy.types.PoseBone], R: np.ndarray) -> None:
    """Set the current pose rotation of ``bones`` from ``R`` (B, 3, 3), in each bone's mode."""
    for k, pb in enumerate(bones):
        channels, values = bone_rotation_channels(pb, R[k : k + 1])
        value = values[0]
        prop = channels[0].data_path.rsplit(".", 1)[1]
        setattr(pb, prop, value.tolist())


def world_positions(obj: bpy.types.Object, scene: bpy.types.Scene, frames: Sequence[int]) -> np.ndarray:
    """(N, 3) world position of ``obj`` at each frame, evaluated through the depsgraph."""
    out = np.empty((len(frames), 3))
    current = scene.frame_current
    try:
        for i, f in enumerate(frames):
            scene.frame_set(int(f))
            out[i] = tuple(obj.matrix_world.translation)
    finally:
        scene.frame_set(current)
    return out


def create_armature(
    name: str,
    heads: np.ndarray,
    tails: np.ndarray,
    parents: Sequence[int],
    bone_names: Sequence[str] | None = None,
    collection: bpy.types.Collection | None = None,
) -> bpy.types.Object:
    """A new armature object whose bones go from ``heads`` to ``tails`` (B, 3) [m].

    Args:
        name: Name of the object and its armature data.
        heads: (B, 3) bone heads in armature space.
        tails: (B, 3) bone tails.
        parents: Parent bone index per bone (-1 for none); a child whose head is its parent's
            tail is connected.
        bone_names: Names of the bones (default ``Bone.000`` ...).
        collection: Where to link the object (default: the scene's master collection).
    """
    heads, tails = np.asarray(heads, dtype=float), np.asarray(tails, dtype=float)
    names = list(bone_names) if bone_names is not None else [f"Bone.{i:03d}" for i in range(len(heads))]
    data = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, data)
    (collection or bpy.context.scene.collection).objects.link(obj)
    previous_active = bpy.context.view_layer.objects.active
    previous_mode = bpy.context.object.mode if bpy.context.object else "OBJECT"
    if previous_mode != "OBJECT":
        bpy.ops.object.mode_set(mode="OBJECT")
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    try:
        edit_bones = []
        for i, bone_name in enumerate(names):
            eb = data.edit_bones.new(bone_name)
            eb.head, eb.tail = heads[i].tolist(), tails[i].tolist()
            if parents[i] >= 0:
                eb.parent = edit_bones[parents[i]]
                eb.use_connect = bool(np.allclose(heads[i], tails[parents[i]]))
            edit_bones.append(eb)
    finally:
        bpy.ops.object.mode_set(mode="OBJECT")
        bpy.context.view_layer.objects.active = previous_active or obj
    return obj
