# SPDX-License-Identifier: GPL-3.0-or-later
"""Armatures created from numpy arrays (examples, tests, robot rigs)."""

from __future__ import annotations

from collections.abc import Sequence

import bpy
import numpy as np


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
