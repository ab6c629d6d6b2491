# SPDX-License-Identifier: GPL-3.0-or-later
"""Batched solves of small symmetric positive definite systems, fast for both tiny and huge batches."""

from __future__ import annotations

import numpy as np

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
