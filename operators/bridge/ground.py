# SPDX-License-Identifier: GPL-3.0-or-later
"""The ground under points: the meshes of a collection, measured by ray casts straight down (Blender's BVH)."""

from __future__ import annotations

import bpy
import numpy as np
from mathutils import Vector
from mathutils.bvhtree import BVHTree

from .errors import BridgeError
from .rig import matrix_to_array

# Rays start this far above each point [m], so a point that sank into a step still finds the step's top.
RAY_START = 0.5


class GroundMeshes:
    """The evaluated meshes of a collection (nested collections included) in world space, as one BVH tree.

    The meshes are read once, as they are on the current frame: a ground that moves over the
    frames is measured where it stands now.

    Raises:
        BridgeError: No collection, or one without a mesh with faces (the message names it).
    """

    def __init__(self, collection: bpy.types.Collection | None, depsgraph: bpy.types.Depsgraph) -> None:
        if collection is None:
            raise BridgeError("no ground collection is set; pick the collection of the ground's meshes, or use "
                              "a ground plane")
        vertices, triangles, offset = [], [], 0
        for obj in collection.all_objects:
            if obj.type != "MESH":
                continue
            evaluated = obj.evaluated_get(depsgraph)
            mesh = evaluated.to_mesh()
            try:
                mesh.calc_loop_triangles()
                co = np.empty(len(mesh.vertices) * 3)
                mesh.vertices.foreach_get("co", co)
                tri = np.empty(len(mesh.loop_triangles) * 3, dtype=np.int64)
                mesh.loop_triangles.foreach_get("vertices", tri)
            finally:
                evaluated.to_mesh_clear()
            if not len(tri):
                continue
            M = matrix_to_array(obj.matrix_world)
            co = co.reshape(-1, 3) @ M[:3, :3].T + M[:3, 3]
            vertices.append(co)
            triangles.append(tri.reshape(-1, 3) + offset)
            offset += len(co)
        if not vertices:
            kinds = sorted({o.type.lower() for o in collection.all_objects}) or ["nothing"]
            raise BridgeError(f"ground collection {collection.name!r} holds no mesh with faces (it holds "
                              f"{', '.join(kinds)}); put the ground's meshes in it, or use a ground plane")
        points = np.concatenate(vertices)
        self.name = collection.name
        self.top = float(points[:, 2].max())
        self.tree = BVHTree.FromPolygons(points.tolist(), np.concatenate(triangles).tolist(), all_triangles=True)

    def heights(self, points: np.ndarray) -> np.ndarray:
        """(N,) height of the first surface below ``RAY_START`` above each of ``points`` (N, 3) [m]; NaN where none."""
        out = np.full(len(points), np.nan)
        down = Vector((0.0, 0.0, -1.0))
        for i, (x, y, z) in enumerate(np.asarray(points, dtype=float)):
            start = min(float(z) + RAY_START, self.top + 1.0)
            hit = self.tree.ray_cast(Vector((x, y, start)), down)
            if hit[0] is not None:
                out[i] = hit[0].z
        return out
