# SPDX-License-Identifier: GPL-3.0-or-later
"""Receding-horizon first pass of a take for redundant chains: windows smoothed ahead of the frames kept."""

from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np

from ..solvers.base import IKResult
from .smoothing import smooth_windows, solver_targets

# Frames optimised together, and frames kept from each window before the horizon moves on: the
# look-ahead lets a redundant arm start its self-motion before a near-singularity or a limit
# instead of whipping through it when it arrives (measured on the iiwa: 64/16 beat 32/8, 48/24,
# 96/32 and 128/16; longer windows let the soft first iterations pull too many frames off target).
_HORIZON = 64
_KEEP = 16
_ITERATIONS = 20
# Task weight schedule [1/m^2] of each window (soft first, so new frames can cross over to where
# the motion is smooth; restarting it per window measured better than carrying each frame's on)
# and of the closing pass over the whole take (pins every frame on target).
_MU_START = 10.0
_MU_GROWTH = 1.5
_FINAL_MU = 1e4
_FINAL_GROWTH = 2.0
_FINAL_ITERATIONS = 25
# Barrier keeping the self-motion out of the outer fifth of each joint's range.
_LIMIT_WEIGHT = 0.01


def horizon_pass(
    solver, targets: np.ndarray, start: np.ndarray, max_jump: float, options: dict, progress=None,
    after: np.ndarray | None = None,
) -> IKResult:
    """Solve a take window by window, each window optimised for smooth joint motion before its head is kept.

    Each window of ``_HORIZON`` frames starts from the frames the window before optimised (new
    frames from the last of them) and is re-posed by :func:`~ik_core.take.smoothing.smooth_windows`
    (joint smoothness, a growing task weight, a limit barrier), its frame before fixed; its first
    ``_KEEP`` frames are kept. A last pass over the whole take pins every frame on its target,
    then the DLS solver (no restarts, a box of a quarter of ``max_jump``) polishes each frame.

    Args:
        solver: A :class:`~ik_core.solvers.dls.solver.DLSSolver`.
        targets: (N, ...) the take's targets as ``solver.solve`` takes them.
        start: (dof,) configuration before the first frame.
        max_jump: Largest accepted step between frames [rad or m].
        options: Per-frame solver options with a leading N axis.
        progress: Optional ``progress(done, total)`` callback.
        after: (dof,) configuration after the last frame the closing pass joins up to, or None.

    Returns:
        An :class:`IKResult` of batch shape (N,); frames the polish missed are reported, not raised.
    """
    tp, tr = solver_targets(solver, targets)
    n = len(tp)
    dof = solver.skeleton.dof
    X = np.empty((n, dof))
    yes, no = np.array([True]), np.array([False])
    before = np.asarray(start, dtype=float)
    done = lo = 0
    while lo < n:
        hi = min(lo + _HORIZON, n)
        X0 = np.empty((hi - lo, dof))
        X0[: done - lo] = X[lo:done]
        X0[done - lo :] = X[done - 1] if done > 0 else before
        Y = smooth_windows(
            solver, tp[None, lo:hi], None if tr is None else tr[None, lo:hi], X0[None], np.array([hi - lo]),
            before[None], before[None], yes, no, _ITERATIONS, limit_weight=_LIMIT_WEIGHT,
            mu_start=_MU_START, mu_growth=_MU_GROWTH,
        )
        X[lo:hi], done = Y[0], hi
        kept = min(lo + _KEEP, n)
        before, lo = X[kept - 1], kept
        if progress is not None:
            progress(kept, n)
    end = np.asarray(start if after is None else after, dtype=float)
    X = smooth_windows(
        solver, tp[None], None if tr is None else tr[None], X[None], np.array([n]), np.asarray(start)[None],
        end[None], yes, no if after is None else yes, _FINAL_ITERATIONS, limit_weight=_LIMIT_WEIGHT,
        mu_start=_FINAL_MU, mu_growth=_FINAL_GROWTH,
    )[0]
    # Polished without restarts: a restart would bring back the very jumps this pass avoids.
    polisher = copy.copy(solver)
    polisher.policy = replace(solver.policy, restarts=0)
    return polisher.solve(targets, X, radius=0.25 * max_jump, **options)
