# SPDX-License-Identifier: GPL-3.0-or-later
"""Holding variables of a one-redundant chain: which to hold (null vectors), and Gauss-Newton with one held."""

from __future__ import annotations

import copy

import numpy as np

from ..model.skeleton import Skeleton

# Pairs of held variables tried in turn on a stretch until one leaves it without a jump.
_PAIRS = 3
# A single held variable whose |n| is, on the worst samples (5th percentile), under this share
# of the best pair's folds on the take: it is tried after the pairs, not before.
_FOLDED = 0.5
# Null vectors of Jacobians with up to this many rows by Cramer's minors, of larger ones by QR.
_CRAMER_ROWS = 8


def held_candidates(solver, q: np.ndarray, pairs: int = _PAIRS) -> list[tuple[int, ...]]:
    """Sets of variables to hold on grids, cheapest first, for the self-motion along a take.

    For a chain with one redundant variable the self-motion direction is the Jacobian's null
    vector n (unit, in joint space). Holding variable i leaves a regular arm where |n_i| is
    large (the reduced Jacobian's determinant is proportional to it); where n_i = 0 the
    self-motion folds over i's grid and a grid value's solution disappears. One variable may
    do for a whole take (the Panda's q1 measured best), but on a 7-joint arm with aligned axes
    none avoids every fold (the iiwa's q3 folds where q6 = 0, its q5 where q2 = 0), so the
    next sets hold two variables, each on its own grid, that cover each other's folds.

    Args:
        solver: A DLS solver of a chain with one more variable than task rows.
        q: (F, dof) sample configurations of the take.
        pairs: Pairs to propose (the samples are only the answer so far, not the path the
            search will take, so the best-scored pair is not always the one that works).

    Returns:
        The best single variable (largest median |n_i|), then the ``pairs`` pairs whose
        better |n| has the largest 5th percentile over the samples, best first; the single
        variable comes after the pairs instead when it folds on the samples (its own 5th
        percentile of |n| under ``_FOLDED`` times the best pair's). A locked variable (a range
        that is a single value) is never held, and the null vectors leave it out.
    """
    _, J = solver.model.poses_and_jacobians(q)
    free = moving_variables(solver.skeleton)
    null = null_vectors(J.reshape(len(q), -1, J.shape[-1]), free)
    median = np.median(null, axis=0)
    ranked = [int(i) for i in np.argsort(-median, kind="stable") if free[i]]
    scored = []
    movable = [int(i) for i in np.flatnonzero(free)]
    for a, i in enumerate(movable):
        for j in movable[a + 1 :]:
            # The worst samples decide (a low percentile of the better of the two), then the median.
            both = np.maximum(null[:, i], null[:, j])
            score = float(np.percentile(both, 5)) + 1e-3 * float(np.median(both))
            scored.append((-score, (i, j) if median[i] >= median[j] else (j, i)))
    scored.sort(key=lambda item: item[0])
    single, best_pairs = [(ranked[0],)], [pair for _, pair in scored[:pairs]]
    if best_pairs and np.percentile(null[:, ranked[0]], 5) < _FOLDED * -scored[0][0]:
        # Its grid folds where the answer so far goes (the rail arm's wrist, the two-arm tree's
        # wrist): a search over it alone leaves a jump there, at a third of a pair's cost spent
        # for nothing, so the pairs come first and the single variable is the last resort.
        return best_pairs + single
    return single + best_pairs


def moving_variables(skeleton: Skeleton) -> np.ndarray:
    """(dof,) True for the variables that can move: a range that is a single value is a locked axis."""
    return np.asarray(skeleton.lower) != np.asarray(skeleton.upper)


def null_vectors(J: np.ndarray, free: np.ndarray | None = None) -> np.ndarray:
    """(..., r + 1) |n|: the unit null vectors of Jacobians J (..., r, r + 1), componentwise absolute.

    With ``free`` (dof,) the Jacobians' locked columns (False) are left out, and their components
    are 0: an arm with a locked joint moves along the null vector of its other columns.

    The null vector of an r x (r + 1) matrix is its vector of signed maximal minors (Cramer),
    n_i = (-1)^i det(J without column i), normalised: for up to ``_CRAMER_ROWS`` rows, r + 1
    small determinants are cheaper than a factorization. Larger Jacobians (a two-arm tree's
    12 x 13) take the last column of the complete QR factorization of J^T instead, one
    factorization in place of r + 1 (five times faster at 12 rows), the same vector up to
    rounding. A rank-deficient J has no unique null vector and gives zeros (the minors' norm,
    the product of J's singular values, is |det R| for the QR). Other shapes (a square J whose
    rows over-count the task) get the SVD's least-moving direction instead.
    """
    if free is not None and not np.all(free):
        out = np.zeros(J.shape[:-2] + J.shape[-1:])
        out[..., free] = null_vectors(J[..., free])
        return out
    rows, cols = J.shape[-2:]
    if rows != cols - 1:
        # Not r x (r + 1) (an aim task's 6 Jacobian rows for 5 task rows): the right singular
        # vector of the smallest singular value is the direction the task moves least along.
        return np.abs(np.linalg.svd(J)[2][..., -1, :])
    # Volumes at rounding level (relative to the entries' scale to the r-th power) are zeros.
    scale = np.max(np.abs(J), axis=(-2, -1))[..., None] ** rows
    if rows > _CRAMER_ROWS:
        Q, R = np.linalg.qr(np.swapaxes(J, -1, -2), mode="complete")
        volume = np.abs(np.prod(np.diagonal(R, axis1=-2, axis2=-1), axis=-1))[..., None]
        return np.where(volume > 1e-12 * scale, np.abs(Q[..., -1]), 0.0)
    drop = np.array([[j for j in range(cols) if j != i] for i in range(cols)], dtype=int)
    minors = np.abs(np.linalg.det(np.moveaxis(J[..., drop], -2, -3)))  # (..., r + 1)
    norm = np.linalg.norm(minors, axis=-1, keepdims=True)
    return np.divide(minors, norm, out=np.zeros_like(minors), where=norm > 1e-12 * scale)


# From this iteration on (the first few steps of a damped Gauss-Newton may be slow ones), a
# configuration whose error would stay above _HOPELESS_ERROR times the tolerance however many
# iterations are left, shrinking at its last step's rate, stops.
_HOPELESS_AFTER = 4
_HOPELESS_ERROR = 100.0
# A configuration whose step was refused this many times in a row (the damping raised 8-fold each
# time) is stalled: at a fold of its held value's solutions or pressed on a limit, where the steps
# it is offered no longer change (measured on 500-frame iiwa takes: 14-20 states a segment refused
# for all 12 retry iterations). It stops; the retry gives it one fresh start, as a second run would.
_STALL_REFUSALS = 3


class HeldSolver:
    """Gauss-Newton on the solver's residual, each configuration with one variable held fixed."""

    def __init__(self, solver) -> None:
        self.solver = copy.copy(solver)
        self.solver._null = False  # the grid decides the self-motion, not a pull

    def run(
        self, q: np.ndarray, held: np.ndarray, tp: np.ndarray, tr: np.ndarray | None, iterations: int,
        retry: int = 0,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Iterate configurations q (P, dof) toward their targets, variable ``held[p]`` of each fixed.

        Only configurations still short of their target iterate (an active set), each with
        its own Levenberg-Marquardt damping; a step that does not lower the error is undone,
        and a configuration whose steps are undone ``_STALL_REFUSALS`` times in a row stops
        (stalled). Those still short after ``iterations``, stalled ones included, get ``retry``
        more from a fresh damping, as a second call on them would give them, in the same loop
        (one evaluation fewer, and no second pass of the call's fixed costs).

        Returns:
            q (P, dof) and converged (P,).
        """
        s = self.solver
        q = q.copy()
        if not len(q):
            return q, np.zeros(0, dtype=bool)
        ew, Jw, E, pe, re = s._evaluate(q, tp, tr)
        conv = (pe <= s.tolerance) & (re <= s.rotation_tolerance)
        act = np.flatnonzero(~conv)
        # The active rows' targets, held variables and Jacobians, subset only when rows stop.
        ew, Jw, E = ew[act], Jw[act], E[act]
        tp_a, tr_a, held_a, rows = tp[act], None if tr is None else tr[act], held[act], np.arange(len(act))
        # The held variable never moves: its Jacobian column is zeroed once per evaluation, in
        # place, rather than a zeroed copy made for every step.
        Jw[rows, :, held_a] = 0.0
        lam = s.damping * np.minimum(E, 1.0) * 1e-2 + s.min_damping
        # Error (0.5 |ew|^2) of a configuration _HOPELESS_ERROR times the tolerance off its target.
        hopeless = 0.5 * (_HOPELESS_ERROR * s.tolerance) ** 2
        first = iterations
        refused = np.zeros(len(act), dtype=int)
        # Rows the first run stopped as stalled, with their state, until the retry starts them over.
        parked: list[tuple[np.ndarray, ...]] = []
        for count in range(first + retry):
            if count == first and parked:
                act, ew, Jw, E, tp_a, tr_a, held_a = (
                    np.concatenate([part, *(p[k] for p in parked)]) if part is not None else None
                    for k, part in enumerate((act, ew, Jw, E, tp_a, tr_a, held_a))
                )
                rows = np.arange(len(act))
            if not len(act):
                if parked and count < first:
                    continue  # every row left is parked: on to the retry
                break
            iteration = count if count < first else count - first
            if count == first:
                # The retry starts over, damping, refusals and budget, from where the first run left.
                lam = s.damping * np.minimum(E, 1.0) * 1e-2 + s.min_damping
                refused = np.zeros(len(act), dtype=int)
                iterations = retry
            q_new = s._step(q[act], ew, Jw, E, lam)
            ew2, Jw2, E2, pe2, re2 = s._evaluate(q_new, tp_a, tr_a)
            Jw2[rows, :, held_a] = 0.0
            take = E2 < E
            done = take & (pe2 <= s.tolerance) & (re2 <= s.rotation_tolerance)
            conv[act[done]] = True
            # Bounded work that stops when progress stalls: from _HOPELESS_AFTER on, a configuration
            # that would still be far off its target after shrinking its error at this step's rate
            # in every iteration left (a grid value the target cannot be reached from) stops now.
            check = iteration >= _HOPELESS_AFTER
            rate = E2 / np.maximum(E, 1e-300) if check else None
            if take.all():
                # Every step lowered its error (most iterations): the new evaluation is the state.
                q[act] = q_new
                ew, Jw, E = ew2, Jw2, E2
            else:
                q[act[take]] = q_new[take]
                ew[take], Jw[take], E[take] = ew2[take], Jw2[take], E2[take]
            lam = np.where(take, np.maximum(lam * 0.2, s.min_damping), lam * 8.0)
            refused = np.where(take, 0, refused + 1)
            stalled = refused >= _STALL_REFUSALS
            keep = ~done & ~stalled
            if check:
                left = iterations - 1 - iteration
                keep &= ~(take & (E2 * rate**left > hopeless))
            if count < first and retry and stalled.any():
                park = np.flatnonzero(stalled & ~done)
                parked.append(tuple(None if a is None else a[park] for a in (act, ew, Jw, E, tp_a, tr_a, held_a)))
            if not keep.all():
                act, ew, Jw, E, lam, refused = act[keep], ew[keep], Jw[keep], E[keep], lam[keep], refused[keep]
                tp_a, held_a, rows = tp_a[keep], held_a[keep], rows[: len(act)]
                tr_a = None if tr_a is None else tr_a[keep]
        return q, conv
