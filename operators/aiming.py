# SPDX-License-Identifier: GPL-3.0-or-later
"""Aim chains in bakes, live posing and playback: settings to the core's aim solver, errors in world space.

An aim chain (``mode`` AIM) points an axis of its tip bone at the target, drawn from the tip
bone's head; the optional up axis turns toward world +Z or toward the Up Target object. The
solve is :class:`~ik_core.solvers.aim.AimSolver` over the chain's own skeleton (the same one a
reach chain gets, with the bones' limits), over a take :func:`~ik_core.take.aim_track.track_aim`.
"""

from __future__ import annotations

from dataclasses import dataclass

import bpy
import numpy as np

from ..ik_core import IKResult
from ..ik_core.model.kinematics import forward_kinematics
from ..ik_core.solvers.aim import AimResult, AimSolver
from ..ik_core.take.aim_track import track_aim
from . import bridge

AIM = "AIM"
SOLVER_NAME = "aim"
AXES = {
    "X": (1.0, 0.0, 0.0), "NEG_X": (-1.0, 0.0, 0.0),
    "Y": (0.0, 1.0, 0.0), "NEG_Y": (0.0, -1.0, 0.0),
    "Z": (0.0, 0.0, 1.0), "NEG_Z": (0.0, 0.0, -1.0),
}
WORLD_UP = np.array([0.0, 0.0, 1.0])
# Aim chains turn from the rest pose (the nearest pose inside the limits) on every frame: a bake is
# repeatable, live posing shows what the bake keys, and the pose is a function of the target.
REST = None


class AimSettingsError(Exception):
    """An aim chain's settings cannot be solved (an up axis along the aim axis); the message says why."""


def is_aim(chain) -> bool:
    """True for an ``ARTICULATE_PG_chain`` in Aim mode."""
    return getattr(chain, "mode", "REACH") == AIM


def axes(chain) -> tuple[tuple[float, float, float], tuple[float, float, float] | None]:
    """The chain's aim axis and up axis (None) in the tip bone's frame.

    Raises:
        AimSettingsError: An up axis along the aim axis (+Y and -Y, ...).
    """
    aim = AXES[chain.aim_axis]
    up = None if chain.up_axis == "NONE" else AXES[chain.up_axis]
    if up is not None and abs(float(np.dot(aim, up))) > 0.5:
        raise AimSettingsError(f"chain {chain.name!r}: the up axis {chain.up_axis} lies along the aim axis "
                               f"{chain.aim_axis}; pick an up axis across it")
    return aim, up


def solver_for(p, scale: float) -> AimSolver:
    """The aim solver of a prepared aim chain (``baking.PreparedChain``): its tip bone aims, from its head.

    ``scale`` is unused (angles do not scale); it keeps the signature of ``baking.solver_for``.
    """
    chain = p.settings
    aim, up = axes(chain)
    return AimSolver(p.skeleton, len(p.skeleton.joints) - 1, aim_axis=aim, up_axis=up, spread=chain.aim_spread,
                     tolerance=chain.aim_tolerance, max_iterations=chain.iterations)


def chain_source(arm: bpy.types.Object, bones: list, chain) -> bridge.ChainSource:
    """Where an aim chain's samples come from: its target, its Up Target in the pole's place, its influence.

    The sampler reads a pole as a world position per frame, which is what an up target is. No
    free tip is sampled: an aim chain's influence blends its pose from rest (see :func:`track`),
    it does not move its target.
    """
    return bridge.ChainSource(arm, bones[0], chain.target, chain.target_bone, chain.up_target,
                              influence=(chain, "influence"))


def up_inputs(chain, up_points: np.ndarray | None) -> dict:
    """``up`` / ``up_points`` options for the chain: none without an up axis, world +Z without an Up Target."""
    if chain.up_axis == "NONE":
        return {}
    if chain.up_target is not None and up_points is not None:
        return {"up_points": up_points}
    return {"up": WORLD_UP}


def world_errors(solver: AimSolver, base: np.ndarray, q: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """(N,) distance [m] by which the aim line passes the world targets (N, 3) (their distance when behind).

    Args:
        solver: The chain's aim solver.
        base: (N, 4, 4) world matrices of the chain's base frame.
        q: (N, dof) configurations.
        targets: (N, 3) world target positions [m].
    """
    tip = base @ forward_kinematics(solver.skeleton, q)[:, solver.joint]
    axis = np.einsum("nij,j->ni", tip[:, :3, :3], solver.aim_axis)
    return _miss(tip[:, :3, 3], axis, targets)


def _miss(origin: np.ndarray, axis: np.ndarray, targets: np.ndarray) -> np.ndarray:
    axis = axis / np.linalg.norm(axis, axis=-1, keepdims=True)
    v = targets - origin
    along = np.einsum("ni,ni->n", v, axis)
    across = np.linalg.norm(v - along[:, None] * axis, axis=-1)
    return np.where(along > 0, across, np.linalg.norm(v, axis=-1))


def track(
    solver: AimSolver, p, samples: bridge.ChainSamples, q0: np.ndarray, progress=None
) -> tuple[IKResult, AimResult]:
    """Aim a prepared chain over the sampled frames.

    On frames where the chain's influence is below 1 the pose is blended from rest toward the
    aim (:meth:`~ik_core.solvers.aim.AimSolver.blend`, as a constraint's influence blends), and
    ``samples`` is changed as the bake changes a reach chain's at partial influence: its
    ``target`` becomes, on those frames, the point the blended aim axis points at (at the
    target's distance), which playback then measures against, and ``full_target`` keeps the
    target.

    Returns:
        The result as the bake reports every chain (position error: how far the aim line
        passes the target [m]; rotation error: the aim angle [rad], both of the full aim), and
        the aim solver's own.
    """
    targets = samples.target[:, :3, 3]
    res = track_aim(solver, samples.base, targets, q0, progress=progress, **up_inputs(p.settings, samples.pole))
    miss = world_errors(solver, samples.base, res.q, targets)
    q = res.q
    w = samples.influence
    if w is not None and np.any(w < 1.0):
        q = solver.blend(res.q, np.nan_to_num(w, nan=1.0))
        tip = samples.base @ forward_kinematics(solver.skeleton, q)[:, solver.joint]
        origin = tip[:, :3, 3]
        axis = np.einsum("nij,j->ni", bridge.rotation_part(tip), solver.aim_axis)
        goal = samples.target.copy()
        goal[:, :3, 3] = origin + axis * np.linalg.norm(targets - origin, axis=-1, keepdims=True)
        samples.full_target = samples.target
        samples.target = np.where((w < 1.0)[:, None, None], goal, samples.target)
    return IKResult(q, res.converged, miss, res.aim_error, res.iterations, res.reason, res.limit_hits), res


def report_entry(chain, res: AimResult) -> dict:
    """What an aim chain adds to its entry of the bake report."""
    return {"mode": "aim", "aim_axis": chain.aim_axis, "up_axis": chain.up_axis,
            "up_target": chain.up_target.name if chain.up_target is not None else "",
            "aim_spread": chain.aim_spread, "aim_tolerance_rad": chain.aim_tolerance,
            "aim_error_rad": res.aim_error.tolist(), "up_error_rad": res.up_error.tolist()}


@dataclass
class AimCheck:
    """What playback measures on an aim chain: its axes and the up it turns toward."""

    aim_axis: tuple[float, float, float]
    up_axis: tuple[float, float, float] | None
    up_target: bpy.types.Object | None


def check_for(chain) -> AimCheck:
    """The playback check of an aim chain."""
    aim, up = axes(chain)
    return AimCheck(aim, up, chain.up_target if up is not None else None)


def playback_errors(check: AimCheck, tip: np.ndarray, target: np.ndarray, up_points: np.ndarray | None):
    """(N,) miss distance [m], aim angle [rad] and up angle [rad] of a tip bone's frame (at its head) in playback.

    Args:
        check: The chain's axes.
        tip: (N, 4, 4) world frames of the tip bone at its head, as playback shows them.
        target: (N, 4, 4) world frames of the target.
        up_points: (N, 3) world positions of the Up Target, or None for world +Z.
    """
    R = bridge.rotation_part(tip)
    o = tip[:, :3, 3]
    a = R @ np.asarray(check.aim_axis)
    d = target[:, :3, 3] - o
    dist = np.linalg.norm(d, axis=-1)
    d = d / np.where(dist > 0, dist, 1.0)[:, None]
    aim = np.arctan2(np.linalg.norm(np.cross(a, d), axis=-1), np.einsum("ni,ni->n", a, d))
    up_err = np.zeros(len(tip))
    if check.up_axis is not None:
        v = up_points - o if up_points is not None else np.broadcast_to(WORLD_UP, o.shape)
        across = v - np.einsum("ni,ni->n", v, a)[:, None] * a
        n = np.linalg.norm(across, axis=-1)
        u = R @ np.asarray(check.up_axis)
        ang = np.arctan2(np.linalg.norm(np.cross(u, across), axis=-1), np.einsum("ni,ni->n", u, across))
        up_err = np.where(n > 1e-9, ang, 0.0)
    return _miss(o, a, target[:, :3, 3]), aim, up_err
