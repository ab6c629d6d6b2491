# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of the held-variable helpers of the self-motion search (ik_core.take.held)."""

from __future__ import annotations

import numpy as np
import pytest

from ik_core.robots import presets as robots
from ik_core.solvers.dls.solver import DLSSolver
from ik_core.take.held import held_candidates, null_vectors


def solver_for(skeleton) -> DLSSolver:
    return DLSSolver(skeleton, 0, mode="full", tolerance=1e-6, rotation_tolerance=1e-6, restarts=4)


@pytest.mark.parametrize("rows", [6, 12])
def test_null_vectors_span_the_jacobians_null_space(rows: int) -> None:
    """Null vectors (cofactors for an arm's 6 x 7, QR for a two-arm tree's 12 x 13) are unit, annihilated by J,
    equal to the SVD's up to sign; rank-deficient J gives 0."""
    rng = np.random.default_rng(rows)
    J = rng.normal(size=(20, rows, rows + 1))
    n = null_vectors(J)
    np.testing.assert_allclose(np.linalg.norm(n, axis=-1), 1.0)
    np.testing.assert_allclose(n, np.abs(np.linalg.svd(J)[2][:, -1, :]), atol=1e-12)
    signs = np.sign(np.linalg.svd(J)[2][:, -1, :])  # |n| loses the sign; J annihilates the signed vector
    assert np.abs(np.einsum("kij,kj->ki", J, n * signs)).max() < 1e-12
    J[0, :, 1] = J[0, :, 0]  # two equal columns and another dependency: rank 5
    J[0, :, 2] = J[0, :, 3]
    assert np.all(null_vectors(J[:1]) == 0.0)


def test_null_vectors_by_qr_equal_the_cofactors() -> None:
    """Above _CRAMER_ROWS rows the QR route gives the normalised maximal minors, and zeros where they vanish."""
    rng = np.random.default_rng(5)
    J = rng.normal(size=(30, 12, 13)) * rng.uniform(0.01, 10.0, size=(30, 1, 1))
    J[0, :, 4] = 2.0 * J[0, :, 7]  # rank 11 with columns 4 and 7 dependent
    J[0, :, 9] = J[0, :, 1]
    drop = np.array([[j for j in range(13) if j != i] for i in range(13)])
    minors = np.abs(np.linalg.det(np.moveaxis(J[..., drop], -2, -3)))
    expected = minors / np.linalg.norm(minors, axis=-1, keepdims=True)
    n = null_vectors(J)
    np.testing.assert_allclose(n[1:], expected[1:], atol=1e-12)
    assert np.all(n[0] == 0.0)


def test_held_pair_covers_the_folds_of_each_variable_on_the_iiwa() -> None:
    """At q2 = 0 the self-motion is q1 against q3, at q6 = 0 q5 against q7: the pair holds one of each."""
    iiwa = robots.load_preset("lbr_iiwa_14_r820")
    rng = np.random.default_rng(3)
    q = rng.uniform(-1.2, 1.2, (40, 7))
    q[:20, 1] = 0.0  # shoulder axes 1 and 3 aligned
    q[20:, 5] = 0.0  # wrist axes 5 and 7 aligned
    *pairs, single = held_candidates(solver_for(iiwa), q)
    assert len(single) == 1 and len(pairs) == 3 and all(len(p) == 2 for p in pairs)
    pair = pairs[0]
    assert set(pair) & {0, 2}, pair
    assert set(pair) & {4, 6}, pair


def test_single_held_variable_first_where_no_sample_folds_it() -> None:
    """Away from the iiwa's aligned axes one variable comes first (a third of a pair's work), then the pairs."""
    iiwa = robots.load_preset("lbr_iiwa_14_r820")
    rng = np.random.default_rng(4)
    q = rng.uniform(-1.2, 1.2, (40, 7))
    for i in (1, 3, 5):  # shoulder, elbow and wrist well away from alignment
        q[:, i] = np.where(np.abs(q[:, i]) < 0.6, np.copysign(0.6, q[:, i]), q[:, i])
    solver = solver_for(iiwa)
    candidates = held_candidates(solver, q)
    assert len(candidates[0]) == 1 and len(candidates) == 4 and all(len(c) == 2 for c in candidates[1:])
    J = solver.model.poses_and_jacobians(q)[1]
    null = null_vectors(J.reshape(len(q), -1, J.shape[-1]))
    assert np.percentile(null[:, candidates[0]], 5) >= 0.5 * np.percentile(null[:, candidates[1]].max(axis=1), 5)
