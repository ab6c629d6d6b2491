# SPDX-License-Identifier: GPL-3.0-or-later
"""Frame stepping that evaluates only what a bake reads: the sampled objects and everything they depend on.

``scene.frame_set`` evaluates every visible object of the scene. A character's skinned meshes
(hundreds of thousands of deformed vertices) then cost far more per frame than the armature
and targets a bake samples, and a bake steps through its range twice (sampling, then the
playback measurement). Objects the sampled ones cannot depend on are disabled in viewports
(``hide_viewport``) for the loop and enabled again after it, failure or not. What the sampled
objects read is followed through every ID reference Blender knows (``bpy.data.user_map``):
parents, constraint and modifier targets, driver variables, node trees, actions; so their
matrices are exactly what full playback evaluates.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator

import bpy

from .. import compat

# ID types not followed: a collection or a scene "uses" every object in it, which says nothing
# about what an object's evaluation reads (the scene itself is evaluated anyway).
_NOT_FOLLOWED = frozenset({"COLLECTION", "SCENE", "SCREEN", "WORKSPACE", "WINDOWMANAGER", "LIBRARY", "WORLD"})


def dependencies(objects: Iterable[bpy.types.Object]) -> set[bpy.types.Object]:
    """``objects`` and every object whose evaluation theirs can read, transitively."""
    uses: dict[bpy.types.ID, set[bpy.types.ID]] = {}
    for used, users in bpy.data.user_map().items():
        for user in users:
            uses.setdefault(user, set()).add(used)
    seen: set[bpy.types.ID] = {obj.original for obj in objects}
    todo = list(seen)
    while todo:
        for used in uses.get(todo.pop(), ()):
            if used not in seen and used.id_type not in _NOT_FOLLOWED:
                seen.add(used)
                todo.append(used)
    return {i for i in seen if isinstance(i, bpy.types.Object)}


def _visibility_animated(obj: bpy.types.Object) -> bool:
    """True when a key or driver sets the object's viewport visibility (the loop would fight it)."""
    anim = obj.animation_data
    if anim is None:
        return False
    curves = list(anim.drivers) + (compat.iter_fcurves(obj) if anim.action is not None else [])
    return any(fc.data_path == "hide_viewport" for fc in curves)


@contextlib.contextmanager
def evaluating_only(scene: bpy.types.Scene, objects: Iterable[bpy.types.Object]) -> Iterator[int]:
    """Within the block, ``scene``'s evaluation leaves out every object ``objects`` cannot depend on.

    Yields:
        How many objects were left out.
    """
    keep = dependencies(objects)
    left_out: list[bpy.types.Object] = []
    try:
        for obj in scene.objects:
            if obj in keep or obj.hide_viewport or obj.library is not None or _visibility_animated(obj):
                continue
            obj.hide_viewport = True
            left_out.append(obj)
        yield len(left_out)
    finally:
        for obj in left_out:
            obj.hide_viewport = False
