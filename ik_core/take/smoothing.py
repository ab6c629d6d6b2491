# SPDX-License-Identifier: GPL-3.0-or-later
"""Look-ahead repair of a solved take: windows around jumps re-posed by damped Gauss-Newton on smoothness."""

from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np

# Task weight (1/m^2) of the first iteration, its growth per accepted step and its cap: a soft task
# lets a window leave a wrong branch or a near-singular whip, the growing weight pins it back on
# the targets (a homotopy from the straight joint-space blend to the targets).
_MU_START = 10.0
_MU_GROWTH = 1.15
_MU_MAX = 1e10
# Levenberg-Marquardt damping of the windows' systems: start, after an accepted and a rejected step.
_LAM_START = 0.1
_LAM_DOWN = 0.3
_LAM_UP = 5.0
# Largest change of any joint per iteration [rad or m]: the linearisation holds over small steps.
_MAX_DELTA = 0.2
# Fraction of each joint's half range from its middle where the limit barrier starts.
_MARGIN = 0.8


def _reduce(A: np.ndarray, D: np.ndarray, C: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Solve ``A_i x_(i-1) + D_i x_i + C_i x_(i+1) = r_i`` for a batch of block tridiagonal systems.

    Args:
        A: (K, W, n, n) blocks left of the diagonal, ``A[:, 0]`` zero.
        D: (K, W, n, n) diagonal blocks.
        C: (K, W, n, n) blocks right of the diagonal, ``C[:, -1]`` zero.
        r: (K, W, n, 1) right-hand sides.

    Returns:
        (K, W, n, 1) solutions.

    Block cyclic reduction: log2(W) levels of batched small solves rather than a Python loop over
    the W frames (block Thomas) or one dense (W n x W n) solve per window.
    """
    W = D.shape[1]
    if W == 1:
        return np.linalg.solve(D, r)
    if W == 2:
        K, _, n, _ = D.shape
        M = np.concatenate(
            [np.concatenate([D[:, 0], C[:, 0]], axis=-1), np.concatenate([A[:, 1], D[:, 1]], axis=-1)], axis=-2
        )
        return np.linalg.solve(M, r.reshape(K, 2 * n, -1)).reshape(r.shape)
    if W % 2 == 0:
        # A decoupled identity row (C of the last row is zero) makes the row count odd.
        pad = np.zeros_like(D[:, :1])
        eye = np.broadcast_to(np.eye(D.shape[-1]), pad.shape)
        x = _reduce(
            np.concatenate([A, pad], 1), np.concatenate([D, eye], 1), np.concatenate([C, pad], 1),
            np.concatenate([r, np.zeros_like(r[:, :1])], 1),
        )
        return x[:, :W]
    # Odd rows are eliminated into their even neighbours; the evens form a half-size system. The
    # first row has A = 0 and the last C = 0, so their missing neighbour only meets zero blocks.
    Dinv = np.linalg.inv(D[:, 1::2])
    A_o, C_o, r_o = A[:, 1::2], C[:, 1::2], r[:, 1::2]

    def before(v: np.ndarray) -> np.ndarray:
        return np.concatenate([v[:, :1], v], 1)

    def after(v: np.ndarray) -> np.ndarray:
        return np.concatenate([v, v[:, -1:]], 1)

    alpha = A[:, ::2] @ before(Dinv)
    gamma = C[:, ::2] @ after(Dinv)
    D2 = D[:, ::2] - alpha @ before(C_o) - gamma @ after(A_o)
    r2 = r[:, ::2] - alpha @ before(r_o) - gamma @ after(r_o)
    x_even = _reduce(-alpha @ before(A_o), D2, -gamma @ after(C_o), r2)
    x = np.empty_like(r)
    x[:, ::2] = x_even
    x[:, 1::2] = Dinv @ (r_o - A_o @ x_even[:, :-1] - C_o @ x_even[:, 1:])
    return x


def smooth_windows(
    solver,
    tp: np.ndarray,
    tr: np.ndarray | None,
    X: np.ndarray,
    length: np.ndarray,
    before: np.ndarray,
    after: np.ndarray,
    has_before: np.ndarray,
    has_after: np.ndarray,
    iterations: int,
    limit_weight: float = 0.0,
    mu_start: float | np.ndarray = _MU_START,
    mu_growth: float = _MU_GROWTH,
    limit_margin: float = _MARGIN,
    return_mu: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Re-pose K windows of frames so their joint motion is smooth and every frame meets its target.

    Minimises ``sum |q[i+1] - q[i]|^2 + mu sum |e_i(q[i])|^2`` per window (the fixed frames
    before and after it included in the first sum) by Levenberg-Marquardt, with the task weight
    ``mu`` growing as steps succeed. Joint motion that a frame-by-frame solve crammed into a few
    frames (a redundant arm whipping its self-motion past a near-singularity, or a branch kept
    past the singularity where the motion crossed to the other) is spread over the window: the
    solution moves early, with the look-ahead a take offers. Every iterate stays in the limits.

    Args:
        solver: A :class:`~ik_core.solvers.dls.solver.DLSSolver` (its weighted residual and Jacobian).
        tp: (K, W, E, 3) target positions [m] (padding frames: anything finite).
        tr: (K, W, ...) target rotations or aim directions as the solver takes them, or None.
        X: (K, W, dof) start configurations; frames past ``length`` are padding.
        length: (K,) frames of each window (>= 1).
        before: (K, dof) fixed frame before each window (ignored where ``has_before`` is False).
        after: (K, dof) fixed frame after each window (ignored where ``has_after`` is False).
        has_before: (K,) whether each window has a fixed frame before it.
        has_after: (K,) whether each window has a fixed frame after it.
        iterations: Levenberg-Marquardt iterations (accepted or not).
        limit_weight: Weight of a barrier keeping joints out of the outer fifth of their
            ranges (0: none); the task still wins, so it only moves the self-motion.
        mu_start: Task weight [1/m^2] of the first iteration: scalar, (K,) or per frame (K, W).
        mu_growth: Factor on the task weight per accepted step.
        limit_margin: Where the barrier starts, as a fraction of each half range from its middle.
        return_mu: Also return the (K, W) task weights reached (to continue from them).

    Returns:
        (K, W, dof) configurations; the caller polishes them onto the targets and decides
        whether to keep them.
    """
    X = np.array(X, dtype=float)
    K, W, n = X.shape
    lo, hi = np.asarray(solver.skeleton.lower), np.asarray(solver.skeleton.upper)
    idx = np.arange(W)
    valid = idx[None, :] < length[:, None]
    # Coupling of each frame to the one before and after it (none for padding).
    c_prev = np.where(idx[None, :] == 0, has_before[:, None], valid).astype(float) * valid
    c_next = np.where(idx[None, :] + 1 == length[:, None], has_after[:, None], idx[None, :] + 1 < length[:, None])
    c_next = c_next.astype(float) * valid
    last = np.maximum(length - 1, 0)
    eye = np.eye(n)
    A = -(c_prev * (idx[None, :] > 0))[..., None, None] * eye
    C = -(c_next * (idx[None, :] + 1 < length[:, None]))[..., None, None] * eye
    flat_tp = tp.reshape(K * W, *tp.shape[2:])
    flat_tr = None if tr is None else tr.reshape(K * W, *tr.shape[2:])
    vmask = valid[..., None]

    def evaluate(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ew, Jw = solver._evaluate(x.reshape(K * W, n), flat_tp, flat_tr)[:2]
        return ew.reshape(K, W, -1) * vmask, Jw.reshape(K, W, *Jw.shape[1:]) * vmask[..., None]

    def neighbours(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        prev = np.concatenate([before[:, None], x[:, :-1]], 1)
        nxt = np.concatenate([x[:, 1:], x[:, -1:]], 1)
        nxt[np.arange(K), last] = after
        return prev, nxt

    # Continuous joints (infinite limits) get no barrier: u = 0 for them.
    bounded = np.isfinite(lo) & np.isfinite(hi)
    mid = np.where(bounded, 0.5 * (np.where(bounded, lo, 0.0) + np.where(bounded, hi, 0.0)), 0.0)
    half = np.where(bounded, np.maximum(0.5 * (np.where(bounded, hi, 0.0) - np.where(bounded, lo, 0.0)), 1e-9), np.inf)
    # The barrier: (excess of |u| over _MARGIN, scaled to 1 at the limit)^2 per joint, u = q in -1..1.
    scale = limit_weight / (1.0 - limit_margin) ** 2

    def barrier(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        u = (x - mid) / half
        over = np.maximum(np.abs(u) - limit_margin, 0.0)
        value = scale * np.sum(over * over * vmask, axis=(1, 2))
        grad = 2.0 * scale * over * np.sign(u) / half * vmask
        hess = 2.0 * scale * (np.abs(u) >= limit_margin) / (half * half) * vmask
        return value, grad, hess

    def cost(x: np.ndarray, ew: np.ndarray, mu: np.ndarray) -> np.ndarray:
        prev, _ = neighbours(x)
        d = (x - prev) * c_prev[..., None]
        tail = (after - x[np.arange(K), last]) * has_after[:, None]
        smooth = np.sum(d * d, axis=(1, 2)) + np.sum(tail * tail, axis=1) + np.sum(mu[..., None] * ew * ew, axis=(1, 2))
        return smooth + barrier(x)[0] if limit_weight else smooth

    mu_start = np.asarray(mu_start, dtype=float)
    mu = np.broadcast_to(mu_start[:, None] if mu_start.ndim == 1 else mu_start, (K, W)).copy()
    lam = np.full(K, _LAM_START)
    ew, Jw = evaluate(X)
    F = cost(X, ew, mu)
    for _ in range(iterations):
        prev, nxt = neighbours(X)
        lap = c_prev[..., None] * (prev - X) + c_next[..., None] * (nxt - X)
        rhs = lap + mu[..., None] * np.einsum("kwmn,kwm->kwn", Jw, ew)
        D = mu[..., None, None] * np.einsum("kwmi,kwmj->kwij", Jw, Jw)
        D = D + (c_prev + c_next + lam[:, None])[..., None, None] * eye
        if limit_weight:
            _, grad, hess = barrier(X)
            rhs = rhs - grad
            D = D + hess[..., None] * eye
        dx = _reduce(A, D, C, rhs[..., None])[..., 0] * vmask
        big = np.max(np.abs(dx), axis=(1, 2))
        dx *= np.minimum(1.0, _MAX_DELTA / np.maximum(big, 1e-300))[:, None, None]
        X_new = np.clip(X + dx, lo, hi)
        ew_new, Jw_new = evaluate(X_new)
        F_new = cost(X_new, ew_new, mu)
        take = F_new < F
        X = np.where(take[:, None, None], X_new, X)
        ew = np.where(take[:, None, None], ew_new, ew)
        Jw = np.where(take[:, None, None, None], Jw_new, Jw)
        lam = np.where(take, np.maximum(lam * _LAM_DOWN, 1e-9), lam * _LAM_UP)
        mu = np.where(take[:, None], np.minimum(mu * mu_growth, _MU_MAX), mu)
        F = cost(X, ew, mu)
    if return_mu:
        return X, mu
    return X


def solver_targets(solver, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """(N, E, 3) positions and the rotations or aim directions a DLS solver's residual takes."""
    from ..solvers.base import as_targets

    E = len(solver.effector_ids)
    tg = as_targets(np.asarray(targets, dtype=float), E)
    N = int(np.prod(tg.batch_shape, dtype=int))
    tp = tg.positions.reshape(N, E, 3)
    if solver.mode == "position" or tg.rotations is None:
        return tp, None
    tr = tg.rotations.reshape(N, E, 3, 3)
    return tp, (tr @ solver.aim_axis if solver.mode == "aim" else tr)


def _windows(bad: np.ndarray, half: int, n: int) -> list[list[int]]:
    out: list[list[int]] = []
    for i in bad:
        a, b = max(int(i) - half, 0), min(int(i) + half, n)
        if out and a <= out[-1][1]:
            out[-1][1] = b
        else:
            out.append([a, b])
    return out


def spread_jumps(
    solver,
    targets: np.ndarray,
    fields: dict,
    start: np.ndarray | None,
    max_jump: float,
    steps_of,
    options: dict,
    rounds: tuple[tuple[int, int], ...] = ((40, 100), (100, 200)),
    budget: float = 0.25,
) -> int:
    """Re-pose windows around the take's remaining jumps with :func:`smooth_windows`; returns windows kept.

    Each window starts from the straight joint-space blend between its fixed neighbours (no
    jump by construction) and is pulled onto its targets. A window is kept only when, polished
    onto its targets, it leaves no more missed frames, no larger largest step, and fewer steps
    above ``max_jump`` or a smaller largest step, its borders included. Jumps left after a round get wider windows and
    more iterations in the next.

    Args:
        solver: The take's :class:`~ik_core.solvers.dls.solver.DLSSolver`.
        targets: (N, ...) the take's targets as ``solver.solve`` takes them.
        fields: IKResult fields over the take, updated in place.
        start: (dof,) configuration before the first frame, or None.
        max_jump: Largest accepted step between frames [rad or m].
        steps_of: ``steps_of(q (M, dof)) -> (M,)`` step of each frame from the one before (0 first).
        options: Per-frame solver options with a leading N axis.
        rounds: (frames on each side of a jump, iterations) per round.
        budget: Window frames per round, as a fraction of the take's frames (bounds the work).

    Returns:
        The number of windows kept.
    """
    kept = 0
    for half, iterations in rounds:
        kept += _spread_round(solver, targets, fields, start, max_jump, steps_of, options, half, iterations, budget)
    return kept


def _spread_round(
    solver, targets: np.ndarray, fields: dict, start: np.ndarray | None, max_jump: float, steps_of,
    options: dict, half: int, iterations: int, budget: float,
) -> int:
    """One round of :func:`spread_jumps` with windows of ``half`` frames on each side of a jump."""
    q, ok = fields["q"], fields["converged"]
    n, dof = q.shape
    steps = steps_of(q)
    bad = np.flatnonzero((steps > max_jump) & ok & np.concatenate([[True], ok[:-1]]))
    if not len(bad):
        return 0
    wins = _windows(bad, half, n)
    # Bounded work: the shortest windows first, at most ``budget`` times the take's length in all
    # (or two windows' worth on a short take).
    wins.sort(key=lambda w: w[1] - w[0])
    total = np.cumsum([b - a for a, b in wins])
    wins = sorted(w for w, t in zip(wins, total) if t <= max(budget * n, 4 * half))
    if not wins:
        return 0
    K, W = len(wins), max(b - a for a, b in wins)
    tp_all, tr_all = solver_targets(solver, targets)
    X = np.empty((K, W, dof))
    tp = np.empty((K, W, *tp_all.shape[1:]))
    tr = None if tr_all is None else np.empty((K, W, *tr_all.shape[1:]))
    length = np.array([b - a for a, b in wins])
    before, after = np.empty((K, dof)), np.empty((K, dof))
    has_before = np.array([a > 0 or start is not None for a, _ in wins])
    has_after = np.array([b < n for _, b in wins])
    for k, (a, b) in enumerate(wins):
        before[k] = q[a - 1] if a > 0 else (start if start is not None else q[a])
        after[k] = q[b] if b < n else q[b - 1]
        L = b - a
        if has_before[k] and has_after[k]:
            w = np.arange(1, L + 1)[:, None] / (L + 1)
            X[k, :L] = (1.0 - w) * before[k] + w * after[k]
        else:
            X[k, :L] = q[a:b]
        # Padding repeats the window's last frame and target: finite, and masked out.
        X[k, L:] = X[k, L - 1]
        tp[k, :L], tp[k, L:] = tp_all[a:b], tp_all[b - 1]
        if tr is not None:
            tr[k, :L], tr[k, L:] = tr_all[a:b], tr_all[b - 1]
    X = smooth_windows(solver, tp, tr, X, length, before, after, has_before, has_after, iterations)
    # Polished without restarts: a restart would bring back the very jumps this pass removes.
    polisher = copy.copy(solver)
    polisher.policy = replace(solver.policy, restarts=0)
    kept = 0
    for k, (a, b) in enumerate(wins):
        frame_options = {o: v[a:b] for o, v in options.items()}
        res = polisher.solve(targets[a:b], X[k, : b - a], radius=0.25 * max_jump, **frame_options)
        lo_i, hi_i = max(a - 1, 0), min(b + 1, n)
        old = q[lo_i:hi_i].copy()
        trial = old.copy()
        trial[a - lo_i : a - lo_i + b - a] = res.q
        if a == 0 and start is not None:
            old, trial = np.concatenate([start[None], old]), np.concatenate([start[None], trial])
        new_max = float(np.max(steps_of(trial), initial=0.0))
        old_max = float(np.max(steps_of(old), initial=0.0))
        new_over = int(np.count_nonzero(steps_of(trial) > max_jump))
        old_over = int(np.count_nonzero(steps_of(old) > max_jump))
        # Never a larger largest step: fewer jumps bought with a bigger one would be worse.
        better = new_max <= old_max and (new_over < old_over or new_max < old_max)
        if np.count_nonzero(res.converged) >= np.count_nonzero(ok[a:b]) and better:
            for f in fields:
                fields[f][a:b] = getattr(res, f)
            kept += 1
    return kept
