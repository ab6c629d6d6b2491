# SPDX-License-Identifier: GPL-3.0-or-later
"""The DLS step for small batches (a lone target and its raced seeds), in as few numpy calls as possible."""

from __future__ import annotations

import numpy as np

from .linalg import spd_solve

# Up to this many particles a step runs these kernels: per-call overhead, not arithmetic, is the
# cost, so every row is solved again in a limit pass rather than gathered and scattered.
SMALL_STEP = 32
# Identity matrices by size, made once: np.eye per step is a measurable share of a small step.
_EYES: dict[int, np.ndarray] = {}


def _eye(k: int) -> np.ndarray:
    eye = _EYES.get(k)
    if eye is None:
        eye = _EYES[k] = np.eye(k)
    return eye


def small_direction(ew: np.ndarray, Jw: np.ndarray, lam: np.ndarray, z: np.ndarray | None = None) -> np.ndarray:
    """Damped least-squares steps for a small batch; the same maths as ``dls_linalg.dls_direction``.

    Args:
        ew: (P, m) weighted errors.
        Jw: (P, m, n) weighted Jacobians.
        lam: (P,) damping (> 0).
        z: Optional (P, n) joint-space motion projected onto the (damped) null space (m <= n).

    Returns:
        (P, n) steps ``Jw^T (Jw Jw^T + lam I)^-1 (ew - Jw z) + z`` when m <= n, otherwise
        ``(Jw^T Jw + lam I)^-1 Jw^T ew``.
    """
    m, n = Jw.shape[1:]
    JwT = Jw.transpose(0, 2, 1)
    if m <= n:
        A = Jw @ JwT + np.multiply.outer(lam, _eye(m))
        if z is not None:
            ew = ew - (Jw @ z[..., None])[..., 0]
        dq = (JwT @ spd_solve(A, ew[..., None]))[..., 0]
        return dq if z is None else dq + z
    A = JwT @ Jw + np.multiply.outer(lam, _eye(n))
    return spd_solve(A, JwT @ ew[..., None])[..., 0]


def limit_passes(
    q: np.ndarray, q_new: np.ndarray, ew: np.ndarray, Jw: np.ndarray, lam: np.ndarray, z: np.ndarray | None,
    out: np.ndarray, lo: np.ndarray, hi: np.ndarray, col_scale: np.ndarray | None, passes: int,
) -> np.ndarray:
    """Stop the joints a step pushed past a limit on it and solve the step again for the others.

    Every row is solved again: a row with no joint held solves the system of its unconstrained
    step once more and gets the same step.

    Args:
        q: (P, dof) configurations before the step.
        q_new: (P, dof) configurations after the unconstrained step.
        ew: (P, m) weighted errors at q.
        Jw: (P, m, dof) weighted (and stiffness-scaled) Jacobians at q.
        lam: (P,) damping.
        z: Optional (P, dof) null-space motion.
        out: (P, dof) joints the step pushed past a limit.
        lo: (dof,) or (P, dof) lower limits.
        hi: (dof,) or (P, dof) upper limits.
        col_scale: (dof,) stiffness scale of the Jacobian's columns, or None.
        passes: Times the step is solved again.

    Returns:
        (P, dof) stepped configurations, not yet clamped.
    """
    for _ in range(passes):
        held, free = out, ~out
        fixed = np.where(held, np.minimum(np.maximum(q_new, lo), hi) - q, 0.0)
        # Columns are in scaled units when stiffness applies: undo the scale on the fixed part.
        fixed_scaled = fixed if col_scale is None else fixed / col_scale
        er = ew - (Jw @ fixed_scaled[..., None])[..., 0]
        d = small_direction(er, Jw * free[:, None, :], lam, None if z is None else z * free) * free
        if col_scale is not None:
            d = d * col_scale
        q_new = q + fixed + d
        more = ((q_new < lo) | (q_new > hi)) & free
        if not more.any():
            break
        out = held | more
    return q_new
