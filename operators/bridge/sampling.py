# SPDX-License-Identifier: GPL-3.0-or-later
"""World matrices of objects and bones sampled over frames, in one pass of ``frame_set``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import bpy
import numpy as np

from .errors import BridgeError
from .rig import matrix_to_array


def target_matrix(obj: bpy.types.Object, bone: str = "") -> np.ndarray:
    """(4, 4) current world matrix of an object, or of one bone of an armature object."""
    M = matrix_to_array(obj.matrix_world)
    if not bone:
        return M
    if obj.type != "ARMATURE" or obj.pose.bones.get(bone) is None:
        valid = ", ".join(b.name for b in obj.pose.bones) if obj.type == "ARMATURE" else "none (not an armature)"
        raise BridgeError(f"object {obj.name!r} has no bone {bone!r}; its bones: {valid}")
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
    """

    base: np.ndarray
    target: np.ndarray
    pole: np.ndarray | None


@dataclass
class ChainSource:
    """Where a chain's samples come from."""

    arm_obj: bpy.types.Object
    root: bpy.types.PoseBone
    target: bpy.types.Object
    target_bone: str = ""
    pole: bpy.types.Object | None = None
    pole_bone: str = ""


def _pose_buffer(arm_obj: bpy.types.Object, attr: str = "matrix") -> np.ndarray:
    """(B, 4, 4) one matrix property of every pose bone (``matrix``: armature space), in one call."""
    n = len(arm_obj.pose.bones)
    buf = np.empty(n * 16, dtype=np.float32)
    arm_obj.pose.bones.foreach_get(attr, buf)
    return buf.reshape(n, 4, 4).transpose(0, 2, 1)  # foreach_get is column-major


def pose_matrices(arm_obj: bpy.types.Object, attr: str = "matrix") -> np.ndarray:
    """(B, 4, 4) float64 ``matrix`` (armature space) or ``matrix_basis`` of every pose bone, in one call."""
    return _pose_buffer(arm_obj, attr).astype(float)


def sample_chains(
    scene: bpy.types.Scene, frames: Sequence[int], sources: Sequence[ChainSource]
) -> list[ChainSamples]:
    """Evaluate every chain's base, target and pole on every frame; the current frame is restored.

    The frame loop only copies raw matrices (one ``foreach_get`` per armature, one matrix per
    object); all products and inverses happen afterwards on whole arrays.
    """
    n = len(frames)
    objects: dict[str, bpy.types.Object] = {}
    armatures: dict[str, bpy.types.Object] = {}
    for src in sources:
        armatures[src.arm_obj.name] = src.arm_obj
        for obj, bone in ((src.target, src.target_bone), (src.pole, src.pole_bone)):
            if obj is not None:
                (armatures if bone else objects)[obj.name] = obj
                if bone:
                    target_matrix(obj, bone)  # validates the bone name before the loop
    world = {name: np.empty((n, 4, 4)) for name in {**objects, **armatures}}
    poses = {name: np.empty((n, len(obj.pose.bones), 4, 4)) for name, obj in armatures.items()}
    current = scene.frame_current, scene.frame_subframe
    try:
        for i, frame in enumerate(frames):
            scene.frame_set(int(frame))
            for name, obj in objects.items():
                world[name][i] = obj.matrix_world
            for name, obj in armatures.items():
                world[name][i] = obj.matrix_world
                poses[name][i] = _pose_buffer(obj)
    finally:
        scene.frame_set(current[0], subframe=current[1])
    bone_index = {name: {b.name: k for k, b in enumerate(obj.pose.bones)} for name, obj in armatures.items()}

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
        out.append(ChainSamples(base, world_of(src.target, src.target_bone).copy(), pole))
    return out
