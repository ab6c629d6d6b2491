# SPDX-License-Identifier: GPL-3.0-or-later
"""Live posing: re-solve an armature's chains when one of their targets or poles moves.

A depsgraph update handler (no modal loop). It reacts only to updates of target and pole
objects, never of the armature it poses, so setting the pose cannot trigger itself. It reads
the already evaluated matrices (no ``frame_set``, which would snap an animated target back to
its keys) and keeps each armature's prepared chains and solvers until their settings change.
"""

from __future__ import annotations

import time

import bpy
import numpy as np
from bpy.app.handlers import persistent

from ..ik_core import ArticulateError
from ..ik_core import rotations as rot
from ..ik_core.tracking import to_base_frame
from . import bridge
from .baking import BakeFailed, chain_rotations, initial_q, prepare_chains, solver_for

_busy = False
last_update_ms: float = 0.0
_cache: dict[str, tuple[tuple, list]] = {}

_BONE_SETTINGS = tuple(
    f"{kind}_{axis}" for kind in ("lock_ik", "use_ik_limit", "ik_min", "ik_max", "ik_stiffness") for axis in "xyz"
) + ("rotation_mode",)
_CHAIN_SETTINGS = ("name", "enabled", "tip_bone", "root_bone", "chain_length", "use_tail", "target_bone", "pole_bone",
                   "solver", "iterations", "tolerance", "weight_position", "use_rotation", "weight_rotation")


def _signature(arm: bpy.types.Object, chains: list) -> tuple:
    """Everything the prepared chains depend on; a change rebuilds them."""
    # Object identities, not names: after a file load, same-named objects are new structs and
    # the cached references to the old ones are invalid.
    parts = [arm.as_pointer()]
    for chain in chains:
        parts.append(tuple(getattr(chain, a) for a in _CHAIN_SETTINGS))
        parts.append(tuple(o.as_pointer() if o is not None else 0 for o in (chain.target, chain.pole)))
        bone = arm.pose.bones.get(chain.tip_bone)
        while bone is not None:
            parts.append((bone.name, *(getattr(bone, a) for a in _BONE_SETTINGS),
                          *(tuple(c.type for c in bone.constraints))))
            bone = bone.parent
    return tuple(parts)


def _prepared(arm: bpy.types.Object) -> list:
    chains = [c for c in arm.articulate.chains if c.enabled]
    sig = _signature(arm, chains)
    cached = _cache.get(arm.name)
    if cached is None or cached[0] != sig:
        prepared = prepare_chains(arm, chains)
        scale = bridge.check_armature(arm)
        cached = (sig, [(p, solver_for(p.settings, p.skeleton, scale)) for p in prepared])
        _cache[arm.name] = cached
    return cached[1]


def solve_live(arm: bpy.types.Object) -> None:
    """Pose every enabled chain of ``arm`` toward its target's current (evaluated) pose."""
    prepared = _prepared(arm)
    all_bones = [pb for p, _ in prepared for pb in p.bones]
    rotvecs = rot.matrix_to_rotvec(bridge.pose_rotations(all_bones)) if all_bones else np.zeros((0, 3))
    moved_bones, moved_R, start = [], [], 0
    for p, solver in prepared:
        base = bridge.base_matrix(arm, p.bones[0])[None]
        target = to_base_frame(base, bridge.target_matrix(p.source.target, p.source.target_bone)[None])[0]
        q0 = initial_q(p, rotvecs[start : start + len(p.bones)])
        start += len(p.bones)
        options = {}
        if p.source.pole is not None and "pole" in solver.call_options:
            pole = np.append(bridge.target_matrix(p.source.pole, p.source.pole_bone)[:3, 3], 1.0)
            options["pole"] = np.linalg.solve(base[0], pole)[:3]
        goal = target if p.settings.use_rotation else target[:3, 3]
        result = solver.solve(goal, q0, **options)
        bones, R = chain_rotations(p, result.q[None])
        moved_bones += bones
        moved_R.append(R[0])
    if moved_bones:
        bridge.set_pose_rotations(moved_bones, np.concatenate(moved_R))


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
            try:
                solve_live(arm)
            except (BakeFailed, ArticulateError, bridge.BridgeError) as err:
                print(f"Articulate live: {arm.name}: {err}")
    finally:
        _busy = False
        last_update_ms = (time.perf_counter() - t0) * 1000.0


def _watched(arm: bpy.types.Object) -> set[str]:
    names = set()
    for chain in arm.articulate.chains:
        if chain.enabled:
            for obj in (chain.target, chain.pole):
                if obj is not None and obj != arm:
                    names.add(obj.name)
    return names


def register() -> None:
    """Install the handler; it does nothing until an armature's Live toggle is on."""
    bpy.app.handlers.depsgraph_update_post.append(on_depsgraph_update)


def unregister() -> None:
    """Remove the handler (the add-on is being disabled) and forget cached chains."""
    while on_depsgraph_update in bpy.app.handlers.depsgraph_update_post:
        bpy.app.handlers.depsgraph_update_post.remove(on_depsgraph_update)
    _cache.clear()
