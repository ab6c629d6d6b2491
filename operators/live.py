# SPDX-License-Identifier: GPL-3.0-or-later
"""Live posing: re-solve an armature's chains when one of their targets or poles moves.

A depsgraph update handler (no modal loop). It reacts only to updates of target and pole
objects, never of the armature it poses, so setting the pose cannot trigger itself. It reads
the already evaluated matrices (no ``frame_set``, which would snap an animated target back to
its keys) and keeps each armature's prepared chains and solvers until their settings change.

One update costs a few bulk reads (``foreach_get`` of every pose bone's matrices), one
batched solve of all two-bone chains (:class:`~ik_core.solvers.two_bone.group.TwoBoneGroup`),
the other chains one ``solve`` each, and writes only the chains whose inputs changed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import bpy
import numpy as np
from bpy.app.handlers import persistent

from ..ik_core import ArticulateError
from ..ik_core.model import rotations as rot
from ..ik_core.model.kinematics import axis_terms
from ..ik_core.model.poles import chain_root, turn_poles
from ..ik_core.model.rotations import matrix_to_rotvec_unchecked
from ..ik_core.solvers.two_bone.group import TwoBoneGroup
from ..ik_core.solvers.two_bone.kernel import cross
from . import aiming, bridge
from .baking import (
    BakeFailed,
    PreparedChain,
    chain_rotations,
    initial_q,
    prepare_chains,
    solver_for,
    stretch_chain,
    stretch_scales,
    stretchy,
)
from .bridge.sampling import pose_matrices

_busy = False
last_update_ms: float = 0.0  # wall time of the last handler run that solved [ms]
last_update_cpu_ms: float = 0.0  # its CPU time in this thread [ms], steadier than wall time on a busy machine

_BONE_SETTINGS = tuple(
    f"{kind}_{axis}" for kind in ("lock_ik", "use_ik_limit", "ik_min", "ik_max", "ik_stiffness") for axis in "xyz"
) + ("rotation_mode", "ik_stretch")
_CHAIN_SETTINGS = (
    "name", "enabled", "tip_bone", "root_bone", "chain_length", "use_tail", "target_bone", "pole_bone", "pole_angle",
    "solver", "iterations", "tolerance", "weight_position", "use_rotation", "weight_rotation", "use_stretch",
    "mode", "aim_axis", "up_axis", "aim_spread", "aim_tolerance",
)


@dataclass
class _Rig:
    """An armature's prepared chains, with what one update needs precomputed."""

    signature: tuple
    settings: np.ndarray  # every pose bone's _BONE_SETTINGS, part of the signature
    prepared: list[PreparedChain]
    solvers: list
    bone_rows: list[np.ndarray]  # per chain, its bones' indices in pose.bones
    parent_rows: np.ndarray  # (C,) index of each chain root's parent in pose.bones, -1 without one
    rest_inv: np.ndarray  # (C, 4, 4) inverse rest matrix of each root's parent (identity without one)
    group: TwoBoneGroup | None = None
    grouped: list[int] = field(default_factory=list)  # chains the group solves, in its row order
    ball_bones: list = field(default_factory=list)  # per grouped chain, the ball bone
    hinge_bones: list = field(default_factory=list)
    q0_rows: np.ndarray | None = None  # (2G,) pose.bones index of the grouped chains' ball, then hinge bones
    hinge_axis: np.ndarray | None = None  # (G, 3) hinge axis in the hinge bone's frame
    hinge_terms: tuple = ()  # (eye, K, KK), each (G, 3, 3): Rodrigues' terms of the axes
    last: list = field(default_factory=list)  # per chain, its inputs at the last solve
    aim_chains: set = field(default_factory=set)  # chains in Aim mode
    scale: float = 1.0  # the armature's uniform world scale when the solvers were built


_cache: dict[str, _Rig] = {}


def _bone_settings(arm: bpy.types.Object) -> np.ndarray:
    """(S, B) every pose bone's limit settings and rotation mode, read in bulk."""
    bones = arm.pose.bones
    out = np.empty((len(_BONE_SETTINGS), len(bones)), dtype=np.float32)
    for k, attr in enumerate(_BONE_SETTINGS):
        if attr == "rotation_mode" or attr.startswith(("lock", "use")):
            buf = np.empty(len(bones), dtype=np.int32 if attr == "rotation_mode" else bool)
            bones.foreach_get(attr, buf)
            out[k] = buf
        else:
            bones.foreach_get(attr, out[k])
    return out


def _signature(arm: bpy.types.Object, chains: list) -> tuple:
    """Everything the prepared chains depend on, except the bone settings; a change rebuilds them."""
    # Object identities, not names: after a file load, same-named objects are new structs and
    # the cached references to the old ones are invalid.
    # The object's scale too: solver tolerances and stretch are built for it (a non-uniform one is refused).
    parts = [arm.as_pointer(), len(arm.pose.bones), tuple(round(v, 9) for v in arm.matrix_world.to_scale())]
    for chain in chains:
        parts.append(tuple(getattr(chain, a) for a in _CHAIN_SETTINGS))
        parts.append(tuple(o.as_pointer() if o is not None else 0 for o in (chain.target, chain.pole, chain.up_target)))
        bone = arm.pose.bones.get(chain.tip_bone)
        while bone is not None:
            parts.append((bone.name, *(c.type for c in bone.constraints)))
            bone = bone.parent
    return tuple(parts)


def _build(arm: bpy.types.Object, chains: list, sig: tuple, settings: np.ndarray) -> _Rig:
    prepared = prepare_chains(arm, chains, shared_bones=False)
    scale = bridge.check_armature(arm)
    try:
        solvers = [aiming.solver_for(p, scale) if p.solver == aiming.SOLVER_NAME else solver_for(p, scale)
                   for p in prepared]
    except aiming.AimSettingsError as err:
        raise BakeFailed(str(err)) from None
    index = {b.name: k for k, b in enumerate(arm.pose.bones)}
    parents = [p.bones[0].parent for p in prepared]
    rig = _Rig(
        sig, settings, prepared, solvers,
        bone_rows=[np.array([index[b.name] for b in p.bones]) for p in prepared],
        parent_rows=np.array([index[pb.name] if pb is not None else -1 for pb in parents], dtype=int),
        rest_inv=np.stack([
            np.linalg.inv(bridge.matrix_to_array(pb.bone.matrix_local)) if pb is not None else np.eye(4)
            for pb in parents
        ]),
        last=[None] * len(prepared),
        scale=scale,
    )
    rig.aim_chains = {c for c, p in enumerate(prepared) if p.solver == aiming.SOLVER_NAME}
    # Stretching chains solve one by one: a miss is solved again on longer bones (see solve_live).
    grouped = [c for c, s in enumerate(solvers)
               if s.name == "two_bone" and s.mode == "position" and not stretchy(prepared[c])]
    if grouped:
        try:
            rig.group = TwoBoneGroup([solvers[c] for c in grouped])
        except ArticulateError:
            return rig  # limbs that cannot share one batch (never for rig chains): one solve each
        rig.grouped = grouped
        axes = []
        for c in grouped:
            joints = solvers[c].skeleton.joints
            # Joint i moves bone i (see chain_rotations); a two-bone chain has one ball, one hinge.
            hinge = next(i for i, j in enumerate(joints) if j.dof == 1)
            rig.ball_bones.append(prepared[c].bones[solvers[c]._ball])
            rig.hinge_bones.append(prepared[c].bones[hinge])
            axes.append(joints[hinge].axis)
        rig.q0_rows = np.array([index[b.name] for b in rig.ball_bones + rig.hinge_bones])
        rig.hinge_axis = np.stack(axes)
        terms = [axis_terms(*np.asarray(a, dtype=float).tolist()) for a in axes]
        rig.hinge_terms = tuple(np.stack([np.broadcast_to(t[n], (3, 3)) for t in terms]) for n in range(3))
    return rig


def _rig(arm: bpy.types.Object) -> _Rig:
    chains = [c for c in arm.articulate.chains if c.enabled]
    sig = _signature(arm, chains)
    settings = _bone_settings(arm)
    rig = _cache.get(arm.name)
    if rig is None or rig.signature != sig or not np.array_equal(rig.settings, settings):
        rig = _cache[arm.name] = _build(arm, chains, sig, settings)
    return rig


def _affine_inverse(T: np.ndarray) -> np.ndarray:
    """(..., 4, 4) inverses of affine matrices by the 3x3 adjugate (no LAPACK call per update)."""
    A = T[..., :3, :3]
    r0, r1, r2 = A[..., 0, :], A[..., 1, :], A[..., 2, :]
    adj = np.stack([cross(r1, r2), cross(r2, r0), cross(r0, r1)], axis=-1)
    det = np.einsum("...i,...i->...", r0, adj[..., :, 0])
    inv = np.zeros(T.shape)
    inv[..., :3, :3] = adj / det[..., None, None]
    inv[..., :3, 3] = -np.einsum("...ij,...j->...i", inv[..., :3, :3], T[..., :3, 3])
    inv[..., 3, 3] = 1.0
    return inv


def _pose_q0(rig: _Rig, basis: np.ndarray) -> np.ndarray:
    """(G, 4) warm starts of the grouped chains from their bones' current pose (``initial_q``, batched)."""
    rotvec = matrix_to_rotvec_unchecked(bridge.rotation_part(basis[rig.q0_rows]))
    G = len(rig.grouped)
    v, h = rotvec[:G], rotvec[G:]
    t = np.sqrt(np.einsum("ni,ni->n", h, h))
    ratio = np.where(t > 1e-12, np.sin(t / 2) / np.where(t > 1e-12, t, 1.0), 0.5)
    along = np.einsum("ni,ni->n", h, rig.hinge_axis) * ratio
    q0 = np.empty((G, 4))
    q0[:, rig.group._bq : rig.group._bq + 3] = v
    q0[:, rig.group._hq] = 2.0 * np.arctan2(along, np.cos(t / 2))
    return q0


def solve_live(arm: bpy.types.Object) -> int:
    """Pose every enabled chain of ``arm`` toward its target's current (evaluated) pose.

    Returns:
        Number of chains re-solved (those whose base, target, pole or bones changed).
    """
    rig = _rig(arm)
    pose = pose_matrices(arm)
    basis = pose_matrices(arm, "matrix_basis")
    parent = np.where(rig.parent_rows[:, None, None] >= 0, pose[rig.parent_rows], np.eye(4))
    base = bridge.matrix_to_array(arm.matrix_world) @ parent @ rig.rest_inv
    C = len(rig.prepared)
    world = np.empty((C, 2, 4, 4))
    changed = np.zeros(C, dtype=bool)
    for c, p in enumerate(rig.prepared):
        src = p.source
        world[c, 0] = bridge.target_matrix(src.target, src.target_bone)
        world[c, 1] = bridge.target_matrix(src.pole, src.pole_bone) if src.pole is not None else np.eye(4)
        inputs = np.concatenate([base[c].ravel(), world[c].ravel(), basis[rig.bone_rows[c]].ravel()])
        last = rig.last[c]
        changed[c] = last is None or not np.array_equal(last, inputs)
        rig.last[c] = inputs
    if not changed.any():
        return 0
    inv_base = _affine_inverse(base)
    local = inv_base[:, None] @ world  # (C, 2, 4, 4): target and pole in each chain's base frame
    for c, p in enumerate(rig.prepared):
        if changed[c] and p.source.pole is not None and p.settings.pole_angle and c not in rig.aim_chains:
            local[c, 1, :3, 3] = turn_poles(
                local[c, 1, :3, 3], chain_root(p.skeleton), local[c, 0, :3, 3], p.settings.pole_angle
            )
    moved_bones, moved_R = [], []
    if rig.group is not None and changed[rig.grouped].any():
        g = rig.grouped
        # As the bake does (track_chain): a pole only for solvers that declare the option.
        poles = [
            local[c, 1, :3, 3] if rig.prepared[c].source.pole is not None and "pole" in rig.solvers[c].call_options
            else None
            for c in g
        ]
        res = rig.group.solve(local[g, 0, :3, 3], _pose_q0(rig, basis), poles)
        bq, hq = rig.group._bq, rig.group._hq
        eye, K, KK = rig.hinge_terms
        theta = res.q[:, hq][:, None, None]
        R_ball = rot.rotvec_to_matrix(res.q[:, bq : bq + 3])
        R_hinge = eye + np.sin(theta) * K + (1.0 - np.cos(theta)) * KK
        for k, c in enumerate(g):
            if changed[c]:
                moved_bones += [rig.ball_bones[k], rig.hinge_bones[k]]
                moved_R += [R_ball[k], R_hinge[k]]
    rotvecs = None
    moved_scales: list = []  # (bones, (B,) uniform scales) of stretching chains
    for c, (p, solver) in enumerate(zip(rig.prepared, rig.solvers)):
        if not changed[c] or c in rig.grouped:
            continue
        if c in rig.aim_chains:  # from the rest pose, as the bake: what live shows is what the bake keys
            up = world[c, 1, :3, 3][None] if p.source.pole is not None else None
            samples = bridge.ChainSamples(base[c][None], world[c, 0][None], up)
            result = aiming.track(solver, p, samples, aiming.REST)[0]
            bones, R = chain_rotations(p, result.q)
            moved_bones += bones
            moved_R += list(R[0])
            continue
        if rotvecs is None:
            rotvecs = rot.matrix_to_rotvec(bridge.rotation_part(basis))
        options = {}
        if p.source.pole is not None and "pole" in solver.call_options:
            options["pole"] = local[c, 1, :3, 3]
        goal = local[c, 0] if p.settings.use_rotation else local[c, 0, :3, 3]
        result = solver.solve(goal, initial_q(p, rotvecs[rig.bone_rows[c]]), **options)
        if stretchy(p):
            result = _stretch_live(rig, p, result, goal, options, moved_scales)
        bones, R = chain_rotations(p, result.q[None])
        moved_bones += bones
        moved_R += list(R[0])
    for bones, scales in moved_scales:
        bridge.set_pose_scales(bones, scales)
    if moved_bones:
        bridge.set_pose_rotations(moved_bones, np.stack(moved_R))
        # Remember the bones as written, so the next update sees them unchanged.
        basis = pose_matrices(arm, "matrix_basis")
        for c in np.flatnonzero(changed):
            n = 16 * len(rig.bone_rows[c])
            rig.last[c][-n:] = basis[rig.bone_rows[c]].ravel()
    return int(changed.sum())


def _stretch_live(rig: _Rig, p: PreparedChain, result, goal: np.ndarray, options: dict, moved_scales: list):
    """A stretching chain's pose: on a miss, solved again on longer bones; its bones' scales go to ``moved_scales``.

    Errors here are in the chain's base frame (the solver's units), as a bare ``solve`` gives them.
    """

    def solve_frame(solver, _f: int, q0: np.ndarray):
        return solver.solve(goal[None], q0, **options)

    take = stretch_chain(p, result[None], rig.scale, solve_frame, world_errors=False)
    bones, scales = stretch_scales(p, take.factors)
    moved_scales.append((bones, scales[0]))
    return take.result[0]


@persistent
def on_depsgraph_update(scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph) -> None:
    """Re-solve live armatures whose targets or poles were updated."""
    global _busy, last_update_ms, last_update_cpu_ms
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
    t0, c0 = time.perf_counter(), time.thread_time()
    try:
        for arm in live:
            try:
                solve_live(arm)
            except (BakeFailed, ArticulateError, bridge.BridgeError) as err:
                print(f"Articulate live: {arm.name}: {err}")
    finally:
        _busy = False
        last_update_ms = (time.perf_counter() - t0) * 1000.0
        last_update_cpu_ms = (time.thread_time() - c0) * 1000.0


def _watched(arm: bpy.types.Object) -> set[str]:
    names = set()
    for chain in arm.articulate.chains:
        if chain.enabled:
            for obj in (chain.target, chain.pole, chain.up_target):
                if obj is not None and obj != arm:
                    names.add(obj.name)
    return names


@persistent
def _forget(*_args: object) -> None:
    """Drop the cached chains: after a file load or an undo step their bone references are stale."""
    _cache.clear()


_HANDLERS = (("depsgraph_update_post", on_depsgraph_update), ("load_post", _forget), ("undo_post", _forget),
             ("redo_post", _forget))


def register() -> None:
    """Install the handlers; they do nothing until an armature's Live toggle is on."""
    for name, handler in _HANDLERS:
        getattr(bpy.app.handlers, name).append(handler)


def unregister() -> None:
    """Remove the handlers (the add-on is being disabled) and forget cached chains."""
    for name, handler in _HANDLERS:
        handlers = getattr(bpy.app.handlers, name)
        while handler in handlers:
            handlers.remove(handler)
    _cache.clear()
