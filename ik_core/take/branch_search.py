# SPDX-License-Identifier: GPL-3.0-or-later
"""Global branch choice over a take for a chain with as many variables as task rows (a 6-joint arm).

Such an arm has a few separate solutions per pose (elbow, shoulder and wrist branches). Near a
singularity two branches come within a step of each other; frame-by-frame tracking may slip
onto the other one there and then whip or jump a few frames later, where that branch turns
away. Knowing the whole take, every branch can be followed instead: at block boundaries every
branch is found by solves from many random starts, each is tracked forward to the next
boundary and backward to the last one, and dynamic programming picks the sequence of these
states with the fewest and smallest jumps. A branch that a tracker slipped off in one direction
is still followed by the tracker of the other direction, so the path can pass a near-singularity
on the branch it came on.

:func:`~ik_core.take.repair.search_repair` applies this (with ``search=track_branches``) to the
stretches of a frame-by-frame answer around its jumps.
"""

from __future__ import annotations

import numpy as np

from ..solvers.branches import random_configurations
from .paths import MISS_PENALTY, candidate_paths, free_turns, max_step, step_cost, turn_aware

# Frames between the boundaries where every branch is found afresh.
_BLOCK = 100
# Branches kept per boundary at most (a 6R arm has up to 16 solutions per pose).
_BRANCHES = 16
# Random starts per boundary to find the branches from.
_STARTS = 48
# Configurations closer than this are the same branch [rad or m].
_SAME = 1e-3


def _distinct(found: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """(_BRANCHES, dof) the distinct converged rows of ``found`` (M, dof), in order; unused rows NaN."""
    out = np.full((_BRANCHES, found.shape[1]), np.nan)
    kept = 0
    for q in found[ok]:
        if kept == _BRANCHES:
            break
        if kept and np.min(np.max(np.abs(out[:kept] - q), axis=-1)) < _SAME:
            continue
        out[kept] = q
        kept += 1
    return out


def track_branches(
    solver, targets: np.ndarray, start: np.ndarray, max_jump: float, steps_of=None,
    incumbent: np.ndarray | None = None, incumbent_ok: np.ndarray | None = None,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The smoothest joint paths over a take among the IK branches of a non-redundant chain.

    Args:
        solver: A :class:`~ik_core.solvers.dls.solver.DLSSolver` (its ``radius`` option keeps each
            tracker in a box around its last configuration).
        targets: (N, ...) the take's targets as ``solver.solve`` takes them.
        start: (dof,) configuration before the first frame (the path starts next to it).
        max_jump: Largest accepted step between frames [rad or m].
        steps_of: ``steps_of(qa, qb)`` -> (...,) joint step measure; default max |qb - qa|.
        incumbent: (N, dof) an answer to improve on, one more state per frame, or None.
        incumbent_ok: (N,) which frames of ``incumbent`` reach their targets.

    Returns:
        Candidate paths, each q (N, dof) and converged (N,): the cheapest, then (with an
        incumbent, when that one leaves it) the cheapest that ends on the incumbent.
    """
    steps_of = max_step if steps_of is None else steps_of
    # The branches found afresh at a boundary lie within a turn of zero, where the take may have
    # wound a continuous joint on: the tracker arriving at a boundary and the branch found there
    # can be one pose a whole turn apart (see turn_aware).
    turns = free_turns(solver.skeleton)
    steps_of = turn_aware(steps_of, turns)
    n = len(targets)
    start = np.asarray(start, dtype=float)
    dof = len(start)
    bounds = np.unique(np.r_[np.arange(0, n, _BLOCK), n - 1])
    # Every branch at every boundary: solves of the boundary's target from random starts, plus
    # (at the first) the continuation of the configuration before the take.
    rng = np.random.default_rng(0)
    starts = random_configurations(solver.skeleton, len(bounds) * _STARTS, rng).reshape(len(bounds), _STARTS, dof)
    starts[0, 0] = start
    # Only converged solves are kept, and the path found is solved again by the caller: the
    # searches' missed solves need no best effort of their own.
    quick = solver.deferring_best_effort()
    found = quick.solve(np.repeat(targets[bounds], _STARTS, axis=0), starts.reshape(-1, dof))
    fq = found.q.reshape(len(bounds), _STARTS, dof)
    fok = np.asarray(found.converged).reshape(len(bounds), _STARTS)
    seeds = np.stack([_distinct(fq[i], fok[i]) for i in range(len(bounds))])

    # Forward trackers run from each boundary to the next, arriving on it; backward ones from
    # the next back to the frame after it. Boundary frames keep every branch found there as
    # the backward states, so a path may change trackers there.
    K = _BRANCHES
    Q = np.zeros((n, 2 * K, dof))
    ok = np.zeros((n, 2 * K), dtype=bool)
    known = np.zeros((n, 2 * K), dtype=bool)  # states a tracker has (the others are never picked)
    found_live = np.all(np.isfinite(seeds), axis=-1)
    Q[bounds, K:] = np.where(found_live[..., None], seeds, 0.0)
    ok[bounds, K:] = known[bounds, K:] = found_live
    Q[bounds[:-1], :K] = Q[bounds[:-1], K:]
    ok[bounds[:-1], :K] = known[bounds[:-1], :K] = found_live[:-1]
    length = np.diff(bounds)
    for direction, col in ((1, 0), (-1, K)):
        origin = bounds[:-1] if direction == 1 else bounds[1:]
        # (blocks, K, dof), a copy: the trackers move on from it, the seeds stay for the other way.
        q = (seeds[:-1] if direction == 1 else seeds[1:]).copy()
        live = np.all(np.isfinite(q), axis=-1)
        steps = length if direction == 1 else length - 1
        velocity = np.zeros_like(q)
        for step in range(1, int(steps.max(initial=0)) + 1):
            active = (step <= steps)[:, None] & live
            if not active.any():
                break
            frames = origin + direction * step
            b, k = np.nonzero(active)
            guess = q[b, k] + velocity[b, k]
            res = quick.solve(targets[frames[b]], guess, radius=max_jump)
            new = res.q
            velocity[b, k] = np.where(
                (np.max(np.abs(new - q[b, k]), axis=-1) <= max_jump)[:, None], new - q[b, k], 0.0
            )
            q[b, k] = new
            Q[frames[b], col + k] = new
            ok[frames[b], col + k] = np.asarray(res.converged)
            known[frames[b], col + k] = True
    if incumbent is not None:
        # The answer so far is one more state per frame, kept where it is smooth.
        Q = np.concatenate([Q, np.asarray(incumbent, dtype=float)[:, None]], axis=1)
        ok = np.concatenate([ok, np.asarray(incumbent_ok, dtype=bool)[:, None]], axis=1)
        known = np.concatenate([known, np.ones((n, 1), dtype=bool)], axis=1)
    D, back = _cheapest(Q, ok, known, start, max_jump, steps_of)
    return candidate_paths(Q, ok, D, back, incumbent is not None, start=start, turns=turns)


def _cheapest(Q, ok, known, start, max_jump: float, steps_of) -> tuple[np.ndarray, np.ndarray]:
    """Cheapest paths through all states of consecutive frames, by dynamic programming.

    Returns:
        (S,) cost of the cheapest path to each state of the last frame, and (N, S) the state
        of the frame before that each state is best reached from.
    """
    n, S, _ = Q.shape

    def cost(steps: np.ndarray) -> np.ndarray:
        return step_cost(steps, max_jump)

    extra = np.where(ok, 0.0, MISS_PENALTY) + np.where(known, 0.0, np.inf)
    D = cost(steps_of(start[None], Q[0])) + extra[0]
    back = np.zeros((n, S), dtype=np.int32)
    for t in range(1, n):
        c = D[:, None] + cost(steps_of(Q[t - 1][:, None], Q[t][None, :]))
        arg = np.argmin(c, axis=0)
        D = c[arg, np.arange(S)] + extra[t]
        back[t] = arg
    return D, back
