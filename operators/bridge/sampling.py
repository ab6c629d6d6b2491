# SPDX-License-Identifier: GPL-3.0-or-later
"""World matrices of objects and bones sampled over frames, in one pass of ``frame_set``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import bpy
import numpy as np

from ...ik_core.errors import name_hint
from .errors import BridgeError
from .rig import matrix_to_array
from .scope import evaluating_only


def target_matrix(obj: bpy.types.Object, bone: str = "") -> np.ndarray:
    """(4, 4) current world matrix of an object, or of one bone of an armature object."""
    M = matrix_to_array(obj.matrix_world)
    if not bone:
        return M
    if obj.type != "ARMATURE" or obj.pose.bones.get(bone) is None:
        if obj.type != "ARMATURE":
            raise BridgeError(f"object {obj.name!r} is a {obj.type.lower()}, not an armature: it has no bone {bone!r}")
        raise BridgeError(f"object {obj.name!r} has no bone {bone!r}; {name_hint(bone, obj.pose.bones.keys(), 'bone')}")
    return M @ matrix_to_array(obj.pose.bones[bone].matrix)


def base_matrix(arm_obj: bpy.types.Object, root: bpy.types.PoseBone) -> np.ndarray:
    """(4, 4) current world matrix of a chain's base frame (see ``rig.chain_skeleton``)."""
    M = matrix_to_array(arm_obj.matrix_world)
    parent = root.parent
    if parent is None:
        return M
    return M @ matrix_to_array(parent.matrix) @ np.linalg.inv(matrix_to_array(parent.bone.matrix_local))


@dataclass
class ChainSamples:
    """What one chain needs on every frame.

    Attributes:
        base: (N, 4, 4) world matrix of the chain's base frame.
        target: (N, 4, 4) world matrix of the target.
        pole: (N, 3) world position of the pole, or None.
        free_tip: (N, 4, 4) world frame of the chain's end as the frame plays before the bake
            (the tip bone's frame moved to its tail, or at its head), or None.
        influence: (N,) the chain's influence on every frame, or None.
        full_target: (N, 4, 4) the target itself where ``target`` was replaced by the goal of a
            chain at partial influence (see ``operators.baking``), else None.
        foot: (N, 3, 3) world rotation of the chain's foot bone as the frame plays before the
            bake, or None (no foot bone).
        ball: (N, 3) world position of the ball of the foot (the foot bone's tail) before the
            bake, or None.
        free_rotations: (N, B, 3, 3) local rotations of the chain's bones (``ChainSource.free_bones``)
            as the frame plays before the bake, where its influence falls below 1 on some frame
            (the poses a chain at partial influence starts from), else None.
    """

    base: np.ndarray
    target: np.ndarray
    pole: np.ndarray | None
    free_tip: np.ndarray | None = None
    influence: np.ndarray | None = None
    full_target: np.ndarray | None = None
    foot: np.ndarray | None = None
    ball: np.ndarray | None = None
    free_rotations: np.ndarray | None = None


@dataclass
class ChainSource:
    """Where a chain's samples come from."""

    arm_obj: bpy.types.Object
    root: bpy.types.PoseBone
    target: bpy.types.Object
    target_bone: str = ""
    pole: bpy.types.Object | None = None
    pole_bone: str = ""
    tip_bone: str = ""  # the chain's end, sampled as ``free_tip`` ("" skips it)
    use_tail: bool = True
    influence: tuple | None = None  # (owner, attribute) read on every frame, e.g. (chain settings, "influence")
    foot_bone: str = ""  # the foot below the tip, sampled as ``foot`` and ``ball`` ("" skips it)
    free_bones: tuple[str, ...] = ()  # bones whose local rotations are ``free_rotations`` (influence below 1)


def _pose_buffer(arm_obj: bpy.types.Object, attr: str = "matrix") -> np.ndarray:
    """(B, 4, 4) one matrix property of every pose bone (``matrix``: armature space), in one call."""
    n = len(arm_obj.pose.bones)
    buf = np.empty(n * 16, dtype=np.float32)
    arm_obj.pose.bones.foreach_get(attr, buf)
    return buf.reshape(n, 4, 4).transpose(0, 2, 1)  # foreach_get is column-major


def pose_matrices(arm_obj: bpy.types.Object, attr: str = "matrix") -> np.ndarray:
    """(B, 4, 4) float64 ``matrix`` (armature space) or ``matrix_basis`` of every pose bone, in one call."""
    return _pose_buffer(arm_obj, attr).astype(float)


@dataclass
class TipSource:
    """A chain tip to measure against its target in playback."""

    arm_obj: bpy.types.Object
    tip_bone: str
    use_tail: bool
    target: bpy.types.Object
    target_bone: str = ""


# Objects are read in one batch when they number at least 1 / BATCH_SHARE of the file's objects.
BATCH_SHARE = 12


def _object_index(every: bpy.types.BlendDataObjects, obj: bpy.types.Object) -> int:
    """The index of ``obj`` in ``bpy.data.objects`` (by identity: a linked object may share a local one's name)."""
    pointer = obj.original.as_pointer()
    return next(k for k, other in enumerate(every) if other.as_pointer() == pointer)


def _sample(
    scene: bpy.types.Scene, frames: Sequence[int], objects: dict, armatures: dict, scalars: Sequence = ()
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, dict[str, int]], np.ndarray]:
    """World matrices of ``objects`` and ``armatures``, every pose bone's matrix, and ``scalars``, on every frame.

    The frame loop only copies raw matrices (one ``foreach_get`` per armature; objects one by
    one, or all in one ``foreach_get``) and reads ``scalars`` ((owner, attribute) pairs: animated
    properties), and evaluates only what these objects depend on (:func:`.scope.evaluating_only`); the current frame is
    restored. Returns (world (N, 4, 4) per object name, poses (N, B, 4, 4) per armature name,
    bone index per armature name, (N, S) scalar values).
    """
    n = len(frames)
    sampled = {**objects, **armatures}
    # Matrices are copied raw on each frame (float32, column-major, as foreach_get gives them) and
    # converted once after the loop. Pose bones: one foreach_get per armature. Objects: one
    # foreach_get of every object's matrix when they are a good share of the file's objects
    # (reading one object's matrix costs about as much as a dozen objects' in a batch), else each alone.
    every = bpy.data.objects
    batched = len(sampled) * BATCH_SHARE >= len(every)
    rows = [_object_index(every, obj) for obj in sampled.values()] if batched else []
    frame_buf = np.empty(len(every) * 16 if batched else 0, dtype=np.float32)
    world_raw = np.empty((n if batched else 0, len(sampled), 16), dtype=np.float32)
    world_all = np.empty((n, len(sampled), 4, 4))
    raw = {name: np.empty((n, len(obj.pose.bones) * 16), dtype=np.float32) for name, obj in armatures.items()}
    values = np.empty((n, len(scalars)))
    current = scene.frame_current, scene.frame_subframe
    with evaluating_only(scene, list(sampled.values())):
        try:
            for i, frame in enumerate(frames):
                scene.frame_set(int(frame))
                if batched:
                    every.foreach_get("matrix_world", frame_buf)
                    world_raw[i] = frame_buf.reshape(-1, 16)[rows]
                else:
                    for k, obj in enumerate(sampled.values()):
                        world_all[i, k] = obj.matrix_world
                for name, obj in armatures.items():
                    obj.pose.bones.foreach_get("matrix", raw[name][i])
                for j, (owner, attr) in enumerate(scalars):
                    values[i, j] = getattr(owner, attr)
        finally:
            scene.frame_set(current[0], subframe=current[1])
    if batched:
        world_all = world_raw.reshape(n, -1, 4, 4).transpose(0, 1, 3, 2).astype(float)
    world = {name: world_all[:, k].copy() for k, name in enumerate(sampled)}
    poses = {name: buf.reshape(n, -1, 4, 4).transpose(0, 1, 3, 2).astype(float) for name, buf in raw.items()}
    bone_index = {name: {b.name: k for k, b in enumerate(obj.pose.bones)} for name, obj in armatures.items()}
    return world, poses, bone_index, values


def sample_bones(
    scene: bpy.types.Scene, frames: Sequence[int], arm: bpy.types.Object, names: Sequence[str]
) -> dict[str, np.ndarray]:
    """(N, 4, 4) world frame (object world @ pose matrix) of each named pose bone of ``arm`` on every frame.

    One pass of :func:`_sample`; the current frame and subframe are restored.
    """
    world, poses, bone_index, _values = _sample(scene, frames, {}, {arm.name: arm})
    index = bone_index[arm.name]
    return {name: world[arm.name] @ poses[arm.name][:, index[name]] for name in names}


def _unscaled(R: np.ndarray) -> np.ndarray:
    """Rotation matrices (..., 3, 3) with each axis' (uniform) scale divided out."""
    return R / np.linalg.norm(R, axis=-2, keepdims=True)


def sample_local_rotations(
    scene: bpy.types.Scene, frames: Sequence[int], arm: bpy.types.Object, names: Sequence[str],
    world: np.ndarray | None = None,
) -> np.ndarray:
    """(N, B, 3, 3) each named bone's local rotation as playback evaluates it, constraints included.

    The rotation a bone's pose channels would need to give its evaluated matrix: relative to its
    rest, in its parent's evaluated frame (the armature's for a root bone). Scale is divided out
    (uniform scale only). One pass of :func:`_sample`; the current frame is restored.

    ``world``: (N, B, 3, 3) world rotations wanted instead of the evaluated ones: the local
    rotations that give them under each bone's evaluated parent (a bone that inherits rotation).
    """
    W, poses, bone_index, _values = _sample(scene, frames, {}, {arm.name: arm})
    wanted = None if world is None else (_unscaled(W[arm.name][:, :3, :3]), world)
    return _local_rotations(arm, poses[arm.name], bone_index[arm.name], names, wanted)


def _local_rotations(
    arm: bpy.types.Object, P: np.ndarray, index: dict[str, int], names: Sequence[str],
    wanted: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """(N, B, 3, 3) the named bones' local rotations in sampled poses P (N, all bones, 4, 4) (see
    :func:`sample_local_rotations`); ``wanted``: the armature's (N, 3, 3) world rotation and the
    (N, B, 3, 3) world rotations wanted instead of the evaluated ones."""
    out = np.empty((len(P), len(names), 3, 3))
    for k, name in enumerate(names):
        bone = arm.data.bones[name]
        rest = matrix_to_array(bone.matrix_local)
        if bone.parent is not None:
            rest = P[:, index[bone.parent.name]] @ np.linalg.inv(matrix_to_array(bone.parent.matrix_local)) @ rest
        pose = P[:, index[name]]
        if wanted is not None:  # in armature space, with the evaluated bone's scale
            pose = pose.copy()
            pose[:, :3, :3] = (np.swapaxes(wanted[0], -1, -2) @ wanted[1][:, k]
                               * np.linalg.norm(pose[:, :3, :3], axis=-2, keepdims=True))
        out[:, k] = _unscaled((np.linalg.inv(rest) @ pose)[..., :3, :3])
    return out


def sample_tips(
    scene: bpy.types.Scene, frames: Sequence[int], sources: Sequence[TipSource]
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per source, (N, 4, 4) world frame of the chain tip as playback shows it, and (N, 4, 4) of its target.

    The tip frame is the tip bone's posed frame moved to its tail (or kept at its head).
    """
    objects: dict[str, bpy.types.Object] = {}
    armatures: dict[str, bpy.types.Object] = {}
    for src in sources:
        armatures[src.arm_obj.name] = src.arm_obj
        (armatures if src.target_bone else objects)[src.target.name] = src.target
    world, poses, bone_index, _values = _sample(scene, frames, objects, armatures)
    out = []
    for src in sources:
        arm = src.arm_obj.name
        tip = world[arm] @ poses[arm][:, bone_index[arm][src.tip_bone]]
        if src.use_tail:
            length = src.arm_obj.pose.bones[src.tip_bone].bone.length
            tip = tip.copy()
            tip[:, :3, 3] += length * tip[:, :3, 1]
        target = world[src.target.name]
        if src.target_bone:
            target = target @ poses[src.target.name][:, bone_index[src.target.name][src.target_bone]]
        out.append((tip, target))
    return out


def sample_chains(
    scene: bpy.types.Scene, frames: Sequence[int], sources: Sequence[ChainSource]
) -> list[ChainSamples]:
    """Evaluate every chain's base, target and pole on every frame; the current frame is restored.

    All products and inverses happen after the frame loop, on whole arrays.
    """
    objects: dict[str, bpy.types.Object] = {}
    armatures: dict[str, bpy.types.Object] = {}
    for src in sources:
        armatures[src.arm_obj.name] = src.arm_obj
        for obj, bone in ((src.target, src.target_bone), (src.pole, src.pole_bone)):
            if obj is not None:
                (armatures if bone else objects)[obj.name] = obj
                if bone:
                    target_matrix(obj, bone)  # validates the bone name before the loop
    scalars = [src.influence for src in sources if src.influence is not None]
    world, poses, bone_index, values = _sample(scene, frames, objects, armatures, scalars)
    column = iter(range(len(scalars)))

    def world_of(obj: bpy.types.Object, bone: str) -> np.ndarray:
        if not bone:
            return world[obj.name]
        return world[obj.name] @ poses[obj.name][:, bone_index[obj.name][bone]]

    out = []
    for src in sources:
        arm = src.arm_obj
        parent = src.root.parent
        if parent is None:
            base = world[arm.name].copy()
        else:
            rest_inv = np.linalg.inv(matrix_to_array(parent.bone.matrix_local))
            base = world[arm.name] @ poses[arm.name][:, bone_index[arm.name][parent.name]] @ rest_inv
        pole = world_of(src.pole, src.pole_bone)[:, :3, 3].copy() if src.pole is not None else None
        free_tip = None
        if src.tip_bone:
            free_tip = world[arm.name] @ poses[arm.name][:, bone_index[arm.name][src.tip_bone]]
            if src.use_tail:
                free_tip[:, :3, 3] += arm.pose.bones[src.tip_bone].bone.length * free_tip[:, :3, 1]
        influence = values[:, next(column)].copy() if src.influence is not None else None
        out.append(ChainSamples(base, world_of(src.target, src.target_bone).copy(), pole, free_tip, influence))
        if src.free_bones and influence is not None and np.any(influence < 1.0):
            out[-1].free_rotations = _local_rotations(arm, poses[arm.name], bone_index[arm.name], src.free_bones)
        if src.foot_bone:
            foot = world_of(arm, src.foot_bone)
            out[-1].foot = _unscaled(foot[:, :3, :3])
            out[-1].ball = foot[:, :3, 3] + arm.pose.bones[src.foot_bone].bone.length * foot[:, :3, 1]
    return out


def sample_targets(
    scene: bpy.types.Scene, frames: Sequence[int], targets: Sequence[tuple[bpy.types.Object, str]]
) -> list[np.ndarray]:
    """Per (object, bone) pair, its (N, 4, 4) world matrix on every frame (bone "": the object's).

    One pass of the frames; the current frame is restored.

    Raises:
        BridgeError: A bone named on an object that is not an armature or has no such bone.
    """
    objects: dict[str, bpy.types.Object] = {}
    armatures: dict[str, bpy.types.Object] = {}
    for obj, bone in targets:
        if bone:
            target_matrix(obj, bone)  # validates the bone name before the loop
            armatures[obj.name] = obj
        else:
            objects[obj.name] = obj
    world, poses, bone_index, _values = _sample(scene, frames, objects, armatures)
    return [world[obj.name] @ poses[obj.name][:, bone_index[obj.name][bone]] if bone else world[obj.name].copy()
            for obj, bone in targets]
