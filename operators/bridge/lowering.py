# SPDX-License-Identifier: GPL-3.0-or-later
"""Lowering an object or a bone in world space over frames, keyed on its location channels."""

from __future__ import annotations

from collections.abc import Sequence

import bpy
import numpy as np

from .. import compat
from .errors import BridgeError
from .keys import keyed_values
from .rig import matrix_to_array
from .sampling import sample_targets


def check_lowerable(obj: bpy.types.Object, bone: str) -> None:
    """Refuse an object or bone whose location channels cannot move it straight down.

    Raises:
        BridgeError: No such bone, a bone connected to its parent, a location locked on an axis,
            or an object parented to a bone or vertex (the message names the fix).
    """
    if bone:
        if obj.type != "ARMATURE" or obj.pose.bones.get(bone) is None:
            raise BridgeError(f"{obj.name!r} has no bone {bone!r} to lower; pick the hips bone of the armature")
        pb = obj.pose.bones[bone]
        if pb.bone.use_connect:
            raise BridgeError(f"bone {bone!r} is connected to its parent, so its location cannot move it; pick the "
                              "bone it hangs from (the root or hips bone) or the armature object")
        locked = pb.lock_location
    else:
        if obj.parent is not None and obj.parent_type != "OBJECT":
            raise BridgeError(f"object {obj.name!r} is parented to a {obj.parent_type.lower()}; lowering needs an "
                              "object without a parent or parented to an object")
        locked = obj.lock_location
    if any(locked):
        what = f"bone {bone!r}" if bone else f"object {obj.name!r}"
        raise BridgeError(f"{what} has its location locked; unlock it to let the hips lower")


def _current_locations(obj: bpy.types.Object, bone: str, frames: Sequence[int]) -> np.ndarray:
    """(N, 3) the location channels as their F-curves give them on ``frames`` (unkeyed: the current value)."""
    path = compat.bone_data_path(bone, "location") if bone else "location"
    static = obj.pose.bones[bone].location if bone else obj.location
    return np.stack([keyed_values(obj, path, i, frames, static[i]) for i in range(3)], axis=1)


def lower_location(
    scene: bpy.types.Scene, frames: Sequence[int], obj: bpy.types.Object, bone: str, drop: np.ndarray
) -> int:
    """Key an object's (or a bone's) location so it sits ``drop`` (N,) lower in the world on ``frames`` [m].

    The location on every frame of the range is keyed (replacing the keys inside it): its
    animated value plus the world drop expressed in the frame its location moves in.

    Returns:
        The keys written.

    Raises:
        BridgeError: As :func:`check_lowerable`.
    """
    check_lowerable(obj, bone)
    if bone:
        pb = obj.pose.bones[bone]
        rest = matrix_to_array(pb.bone.matrix_local)
        if pb.parent is not None:
            W = sample_targets(scene, frames, [(obj, pb.parent.name)])[0] @ np.linalg.inv(
                matrix_to_array(pb.parent.bone.matrix_local)) @ rest
        else:
            W = sample_targets(scene, frames, [(obj, "")])[0] @ rest
        channels = compat.bone_channels(bone, "location", 3)
    else:
        if obj.parent is not None:
            W = sample_targets(scene, frames, [(obj.parent, "")])[0] @ matrix_to_array(obj.matrix_parent_inverse)
        else:
            W = np.broadcast_to(np.eye(4), (len(frames), 4, 4))
        channels = [compat.Channel("location", i, "Object Transforms") for i in range(3)]
    down = np.zeros((len(frames), 3))
    down[:, 2] = -np.asarray(drop, dtype=float)
    local = np.linalg.solve(W[:, :3, :3], down[..., None])[..., 0]
    values = _current_locations(obj, bone, frames) + local
    compat.ensure_action(obj)
    compat.write_channels(obj, channels, np.asarray(frames, dtype=float), values, replace=(frames[0], frames[-1]))
    return values.size
