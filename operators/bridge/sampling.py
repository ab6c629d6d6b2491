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


def sample_chains(
    scene: bpy.types.Scene, frames: Sequence[int], sources: Sequence[ChainSource]
) -> list[ChainSamples]:
    """Evaluate every chain's base, target and pole on every frame; the current frame is restored."""
    n = len(frames)
    out = [
        ChainSamples(np.empty((n, 4, 4)), np.empty((n, 4, 4)), np.empty((n, 3)) if s.pole is not None else None)
        for s in sources
    ]
    current = scene.frame_current, scene.frame_subframe
    try:
        for i, frame in enumerate(frames):
            scene.frame_set(int(frame))
            for src, samples in zip(sources, out):
                samples.base[i] = base_matrix(src.arm_obj, src.root)
                samples.target[i] = target_matrix(src.target, src.target_bone)
                if src.pole is not None:
                    samples.pole[i] = target_matrix(src.pole, src.pole_bone)[:3, 3]
    finally:
        scene.frame_set(current[0], subframe=current[1])
    return out


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
