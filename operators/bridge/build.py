# SPDX-License-Identifier: GPL-3.0-or-later
"""Armatures created from numpy arrays (examples, tests, robot rigs)."""

from __future__ import annotations

import math
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


def sphere_mesh_data(radius: float, rings: int = 8, segments: int = 12) -> tuple[list, list, list]:
    """Vertices, edges and faces of a UV sphere of ``radius`` [m] centred on the origin."""
    verts = [(0.0, 0.0, radius)]
    for i in range(1, rings):
        phi = math.pi * i / rings
        verts += [(radius * math.sin(phi) * math.cos(2 * math.pi * j / segments),
                   radius * math.sin(phi) * math.sin(2 * math.pi * j / segments), radius * math.cos(phi))
                  for j in range(segments)]
    verts.append((0.0, 0.0, -radius))
    last = len(verts) - 1
    faces = [(0, 1 + j, 1 + (j + 1) % segments) for j in range(segments)]
    for i in range(rings - 2):
        a, b = 1 + i * segments, 1 + (i + 1) * segments
        faces += [(a + j, b + j, b + (j + 1) % segments, a + (j + 1) % segments) for j in range(segments)]
    a = 1 + (rings - 2) * segments
    faces += [(a + j, last, a + (j + 1) % segments) for j in range(segments)]
    return verts, [], faces
