# SPDX-License-Identifier: GPL-3.0-or-later
"""Distinct solutions: every branch reaches the target, branches differ, the nearest comes first."""

import numpy as np
import pytest

from ik_core import effector_poses
from ik_core.robots import presets as robots
from ik_core.robots.analytic_ur import ur_ik, ur_params_from_preset
from ik_core.solvers.branches import distinct_solutions
from ik_core.solvers.dls.solver import DLSSolver


@pytest.fixture(scope="module")
def ur5():
    return robots.load_preset("ur5")


def test_every_branch_reaches_and_they_differ(ur5):
    """All returned configurations reach the pose, lie in the limits and are pairwise separated."""
    q_true = np.array([0.4, -1.1, 1.3, -1.2, 1.4, 0.2])
    target = effector_poses(ur5, q_true, "tool")
    solver = DLSSolver(ur5, "tool", mode="full", tolerance=1e-6, rotation_tolerance=1e-6, restarts=0)
    branches = distinct_solutions(solver, target, reference=q_true + 0.05, seeds=48)
    assert len(branches) >= 2
    np.testing.assert_allclose(effector_poses(ur5, branches.q, "tool"), np.broadcast_to(target, (len(branches), 4, 4)),
                               atol=1e-5)
    assert np.all(ur5.within_limits(branches.q))
    for i in range(len(branches)):
        for k in range(i):
            assert np.max(np.abs(branches.q[i] - branches.q[k])) >= 0.1
    assert np.all(np.diff(branches.distance) >= 0)
    assert np.max(np.abs(branches.q[0] - q_true)) < 1e-4  # the nearest branch is the one we came from


def test_numerical_branches_are_among_the_analytic_ones(ur5):
    """For a UR5, each numerically found branch matches one closed-form solution (mod 2 pi)."""
    q_true = np.array([-0.7, -1.9, 1.1, -0.4, -1.2, 0.9])
    target = effector_poses(ur5, q_true, "tool")
    solver = DLSSolver(ur5, "tool", mode="full", tolerance=1e-7, rotation_tolerance=1e-7, restarts=0)
    branches = distinct_solutions(solver, target, seeds=64, rng_seed=1)
    sols, valid = ur_ik(target, ur_params_from_preset("ur5"))
    analytic = sols[valid]
    for q in branches.q:
        diff = np.angle(np.exp(1j * (analytic - q)))
        assert np.min(np.max(np.abs(diff), axis=1)) < 1e-4


def test_unreachable_target_gives_no_branch(ur5):
    """A pose 5 m away has no solution: an empty result, no exception."""
    target = np.eye(4)
    target[:3, 3] = (5.0, 0.0, 0.0)
    solver = DLSSolver(ur5, "tool", mode="full", restarts=0, max_iterations=30)
    assert len(distinct_solutions(solver, target, seeds=8)) == 0
