# SPDX-License-Identifier: GPL-3.0-or-later
"""Live posing: re-solve an armature's chains when one of their targets or poles moves.

A depsgraph update handler (no modal loop): it reacts only to updates of target and pole
objects, never of the armature it poses, so setting the pose cannot trigger itself.
"""

from __future__ import annotations

import time

import bpy
from bpy.app.handlers import persistent

from .baking import BakeFailed, bake_chains

_busy = False
last_update_ms: float = 0.0


def _watched(arm: bpy.types.Object) -> set[str]:
    names = set()
    for chain in arm.articulate.chains:
        if chain.enabled:
            for obj in (chain.target, chain.pole):
                if obj is not None and obj != arm:
                    names.add(obj.name)
    return names


@persistent
def on_depsgraph_update(scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph) -> None:
    """Re-solve live armatures whose targets or poles were updated."""
    global _busy, last_update_ms
    if _busy or not depsgraph.updates:
        return
    moved = {
        u.id.original.name
        for u in depsgraph.updates
        if isinstance(u.id, bpy.types.Object) and u.is_updated_transform
    }
    if not moved:
        return
    live = [o for o in scene.objects if o.type == "ARMATURE" and o.articulate.live and _watched(o) & moved]
    if not live:
        return
    _busy = True
    t0 = time.perf_counter()
    try:
        for arm in live:
            chains = [c for c in arm.articulate.chains if c.enabled]
            try:
                bake_chains(bpy.context, arm, chains, range(scene.frame_current, scene.frame_current + 1),
                            write_keys=False)
            except BakeFailed as err:
                print(f"Articulate live: {arm.name}: {err}")
    finally:
        _busy = False
        last_update_ms = (time.perf_counter() - t0) * 1000.0


def register() -> None:
    """Install the handler; it does nothing until an armature's Live toggle is on."""
    bpy.app.handlers.depsgraph_update_post.append(on_depsgraph_update)


def unregister() -> None:
    """Remove the handler (the add-on is being disabled)."""
    while on_depsgraph_update in bpy.app.handlers.depsgraph_update_post:
        bpy.app.handlers.depsgraph_update_post.remove(on_depsgraph_update)
