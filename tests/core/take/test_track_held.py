# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of the held-variable helpers of the self-motion search (ik_core.take.held)."""

from __future__ import annotations

import numpy as np

from ik_core.robots import presets as robots
from ik_core.solvers.dls.solver import DLSSolver
from ik_core.take.held import held_candidates, null_vectors


def solver_for(skeleton) -> DLSSolver:
    return DLSSolver(skeleton, 0, mode="full", tolerance=1e-6, rotation_tolerance=1e-6, restarts=4)


def test_null_vectors_span_the_jacobians_null_space() -> None:
    """Cofactor null vectors are unit, annihilated by J, equal to the SVD's up to sign; rank-deficient J gives 0."""
    rng = np.random.default_rng(0)
    J = rng.normal(size=(20, 6, 7))
    n = null_vectors(J)
    np.testing.assert_allclose(np.linalg.norm(n, axis=-1), 1.0)
    np.testing.assert_allclose(n, np.abs(np.linalg.svd(J)[2][:, -1, :]), atol=1e-12)
    signs = np.sign(np.linalg.svd(J)[2][:, -1, :])  # |n| loses the sign; J annihilates the signed vector
    assert np.abs(np.einsum("kij,kj->ki", J, n * signs)).max() < 1e-12
    J[0, :, 1] = J[0, :, 0]  # two equal columns and another dependency: rank 5
    J[0, :, 2] = J[0, :, 3]
    assert np.all(null_vectors(J[:1]) == 0.0)


def test_held_pair_covers_the_folds_of_each_variable_on_the_iiwa() -> None:
    """At q2 = 0 the self-motion is q1 against q3, at q6 = 0 q5 against q7: the pair holds one of each."""
    iiwa = robots.load_preset("lbr_iiwa_14_r820")
    rng = np.random.default_rng(3)
    q = rng.uniform(-1.2, 1.2, (40, 7))
    q[:20, 1] = 0.0  # shoulder axes 1 and 3 aligned
    q[20:, 5] = 0.0  # wrist axes 5 and 7 aligned
    single, pair, *others = held_candidates(solver_for(iiwa), q)
    assert len(single) == 1 and len(pair) == 2 and all(len(o) == 2 for o in others)
    assert set(pair) & {0, 2}, pair
    assert set(pair) & {4, 6}, pair
