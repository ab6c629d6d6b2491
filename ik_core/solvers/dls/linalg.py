# SPDX-License-Identifier: GPL-3.0-or-later
"""Batched solves of small symmetric positive definite systems, fast for both tiny and huge batches."""

from __future__ import annotations

import numpy as np

# Above this batch size einsum's matrix-vector products beat batched matmul's.
_EINSUM_BATCH = 256
# Above this batch size a vectorised Cholesky over the batch axis beats LAPACK's per-matrix loop.
_SOA_BATCH = 256
try:  # numpy's own batched LAPACK solve, without np.linalg.solve's per-call Python checks
    from numpy.linalg import _umath_linalg

    _gufunc_solve = _umath_linalg.solve
except (ImportError, AttributeError):  # pragma: no cover - a future numpy may move it
    _gufunc_solve = None
# Pivots below this are replaced, so a (numerically) semi-definite matrix never divides by zero.
_TINY = 1e-300


def spd_solve(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Solve ``A X = B`` for a batch of symmetric positive definite matrices.

    Args:
        A: (P, m, m) symmetric positive definite matrices.
        B: (P, m, r) right-hand sides.

    Returns:
        (P, m, r) solutions.
    """
    P, m, _ = A.shape
    if P < _SOA_BATCH:
        if _gufunc_solve is not None:
            try:
                return _gufunc_solve(A, B, signature="dd->d")
            except (TypeError, ValueError):  # pragma: no cover - private API changed its signature
                pass
        return np.linalg.solve(A, B)
    # Batch axis last: every scalar operation of the factorisation is one contiguous vector op.
    a = np.ascontiguousarray(np.moveaxis(A, 0, -1))
    b = np.ascontiguousarray(np.moveaxis(B, 0, -1))
    L: list[list[np.ndarray]] = [[] for _ in range(m)]
    inv_diag = []
    for j in range(m):
        s = a[j, j].copy()
        for k in range(j):
            s -= L[j][k] * L[j][k]
        inv = 1.0 / np.sqrt(np.maximum(s, _TINY))
        inv_diag.append(inv)
        for i in range(j + 1, m):
            v = a[i, j].copy()
            for k in range(j):
                v -= L[i][k] * L[j][k]
            L[i].append(v * inv)
        L[j].append(None)  # type: ignore[arg-type]  # diagonal kept as inv_diag
    y: list[np.ndarray] = []
    for i in range(m):
        v = b[i].copy()
        for k in range(i):
            v -= L[i][k] * y[k]
        y.append(v * inv_diag[i])
    x: list[np.ndarray] = [None] * m  # type: ignore[list-item]
    for i in reversed(range(m)):
        v = y[i]
        for k in range(i + 1, m):
            v = v - L[k][i] * x[k]
        x[i] = v * inv_diag[i]
    return np.moveaxis(np.stack(x), -1, 0)


def dls_direction(ew: np.ndarray, Jw: np.ndarray, lam: np.ndarray, z: np.ndarray | None = None) -> np.ndarray:
    """Damped least-squares steps for a batch of weighted errors and Jacobians.

    Args:
        ew: (P, m) weighted errors.
        Jw: (P, m, n) weighted Jacobians.
        lam: (P,) damping (> 0).
        z: Optional (P, n) joint-space motion projected onto the (damped) null space (used when
            m <= n only).

    Returns:
        (P, n) steps ``Jw^T (Jw Jw^T + lam I)^-1 ew`` (plus the projected z), or the normal
        equations' equivalent when m > n.
    """
    P, m, n = Jw.shape
    big = P > _EINSUM_BATCH
    # A contiguous transpose makes the batched products several times faster.
    JwT = np.ascontiguousarray(Jw.transpose(0, 2, 1))
    if m <= n:
        A = Jw @ JwT
        A.reshape(P, m * m)[:, :: m + 1] += lam[:, None]
        if z is not None:
            # (I - Jw^+ Jw) z + Jw^+ ew = z + Jw^+ (ew - Jw z): one right-hand side, not two.
            ew = ew - (np.einsum("pij,pj->pi", Jw, z) if big else (Jw @ z[..., None])[..., 0])
        y = spd_solve(A, ew[..., None])
        dq = np.einsum("pij,pi->pj", Jw, y[..., 0]) if big else (JwT @ y)[..., 0]
        return dq if z is None else dq + z
    A = JwT @ Jw
    A.reshape(P, n * n)[:, :: n + 1] += lam[:, None]
    return spd_solve(A, (JwT @ ew[..., None]))[..., 0]


def limit_passes_rows(
    q: np.ndarray, q_new: np.ndarray, ew: np.ndarray, Jw: np.ndarray, lam: np.ndarray, z: np.ndarray | None,
    out: np.ndarray, lo: np.ndarray, hi: np.ndarray, col_scale: np.ndarray | None, passes: int,
) -> np.ndarray:
    """Stop the joints a step pushed past a limit on it and solve the step again for the others.

    The large-batch twin of :func:`~ik_core.solvers.dls.small.limit_passes`: only the rows with
    a joint past a limit are solved again, pass after pass, as long as some still are.

    Args:
        q: (P, dof) configurations before the step.
        q_new: (P, dof) configurations after the unconstrained step (updated in place).
        ew: (P, m) weighted errors at q.
        Jw: (P, m, dof) weighted (and stiffness-scaled) Jacobians at q.
        lam: (P,) damping.
        z: Optional (P, dof) null-space motion.
        out: (P, dof) joints the step pushed past a limit (updated in place).
        lo: (dof,) or (P, dof) lower limits.
        hi: (dof,) or (P, dof) upper limits.
        col_scale: (dof,) stiffness scale of the Jacobian's columns, or None.
        passes: Times the step is solved again at most.

    Returns:
        (P, dof) stepped configurations, not yet clamped.
    """
    per_row = lo.ndim == 2
    rows = np.nonzero(out.any(axis=-1))[0]
    for _ in range(passes):
        if not len(rows):
            break
        qr, held, Jr = q[rows], out[rows], Jw[rows]
        lo_r, hi_r = (lo[rows], hi[rows]) if per_row else (lo, hi)
        fixed = np.where(held, np.minimum(np.maximum(q_new[rows], lo_r), hi_r) - qr, 0.0)
        free = ~held
        # Columns are in scaled units when stiffness applies: undo the scale on the fixed part.
        fixed_scaled = fixed if col_scale is None else fixed / col_scale
        er = ew[rows] - (Jr @ fixed_scaled[..., None])[..., 0]
        zr = None if z is None else z[rows] * free
        d = dls_direction(er, Jr * free[:, None, :], lam[rows], zr) * free
        if col_scale is not None:
            d = d * col_scale
        qn = qr + fixed + d
        q_new[rows] = qn
        out_r = ((qn < lo_r) | (qn > hi_r)) & free
        out[rows] = held | out_r
        rows = rows[out_r.any(axis=-1)]
    return q_new
