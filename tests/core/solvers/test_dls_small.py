# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of the small-batch DLS step kernels (ik_core.solvers.dls.small)."""

from __future__ import annotations

import numpy as np
import pytest

from ik_core.solvers.dls.linalg import dls_direction
from ik_core.solvers.dls.small import limit_passes, small_direction


@pytest.mark.parametrize(("m", "n", "null"), [(6, 7, True), (6, 7, False), (6, 6, False), (3, 7, True), (6, 4, False)])
def test_small_direction_matches_the_batched_direction(m: int, n: int, null: bool) -> None:
    """Both kernels solve one system: steps agree to 1e-12, with and without a null-space motion."""
    rng = np.random.default_rng(m * 10 + n)
    P = 12
    Jw, ew = rng.normal(size=(P, m, n)), rng.normal(size=(P, m))
    lam = rng.uniform(1e-6, 1.0, P)
    z = rng.normal(size=(P, n)) if null else None
    np.testing.assert_allclose(small_direction(ew, Jw, lam, z), dls_direction(ew, Jw, lam, z), atol=1e-12)


def test_limit_passes_hold_the_joints_that_left_their_limits() -> None:
    """Joints pushed past a limit end on it; the others are re-solved and the rows without a hit keep their step."""
    rng = np.random.default_rng(3)
    P, m, n = 8, 3, 5
    Jw, ew = rng.normal(size=(P, m, n)), rng.normal(size=(P, m))
    lam = np.full(P, 1e-3)
    lo, hi = np.full(n, -0.2), np.full(n, 0.2)
    q = rng.uniform(-0.1, 0.1, (P, n))
    q_new = q + small_direction(ew, Jw, lam)
    out = (q_new < lo) | (q_new > hi)
    assert out.any() and not out.all(axis=1).all()
    got = limit_passes(q, q_new, ew, Jw, lam, None, out, lo, hi, None, 1)
    np.testing.assert_allclose(np.where(out, got, 0.0), np.where(out, np.clip(q_new, lo, hi), 0.0), atol=1e-15)
    clean = ~out.any(axis=1)
    np.testing.assert_allclose(got[clean], q_new[clean], atol=1e-12)
    # The free joints of a held row absorb the error the held joints leave: the linearised error drops.
    row = np.flatnonzero(out.any(axis=1))[0]
    before = np.linalg.norm(ew[row] - Jw[row] @ (np.clip(q_new[row], lo, hi) - q[row]))
    after = np.linalg.norm(ew[row] - Jw[row] @ (got[row] - q[row]))
    assert after < before
