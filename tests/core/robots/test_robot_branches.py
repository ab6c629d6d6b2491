# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of a robot's IK branches: each branch once, joint values a whole turn apart counted as one."""

from __future__ import annotations

import numpy as np
import pytest

from ik_core.model.distance import branch_steps
from ik_core.model.kinematics import effector_poses
from ik_core.model.rotations import rotation_error
from ik_core.robots.branches import robot_branches
from ik_core.robots.presets import load_preset
from ik_core.solvers import make_solver
from ik_core.solvers.branches import distinct_solutions

SEPARATION = 0.1
UR5_MOST_BRANCHES = 8  # the UR5's closed form has at most 8 solutions per pose


@pytest.fixture(scope="module")
def ur5():
    skeleton = load_preset("ur5")
    solver = make_solver("dls", skeleton, "tool", mode="full", tolerance=1e-5, rotation_tolerance=1e-4, restarts=0)
    q = np.array([0.3, -1.2, 1.4, -0.9, 1.1, 0.4])
    return skeleton, solver, q, effector_poses(skeleton, q, "tool")


def test_ur5_lists_each_branch_once(ur5):
    """With many seeds the UR5 lists at most its 8 closed-form branches, where the plain distinct search lists
    every whole-turn copy; no two listed branches are the same modulo turns, and each reaches the target."""
    skeleton, solver, q, target = ur5
    plain = distinct_solutions(solver, target, reference=q, seeds=256)
    branches = robot_branches(solver, target, reference=q, seeds=256)
    assert 2 <= len(branches) <= UR5_MOST_BRANCHES < len(plain)
    for i in range(len(branches)):
        others = np.delete(branches.q, i, axis=0)
        assert np.min(branch_steps(skeleton, others, branches.q[i])) >= SEPARATION
    reached = effector_poses(skeleton, branches.q, "tool")
    assert np.max(np.linalg.norm(reached[:, :3, 3] - target[:3, 3], axis=-1)) < 1e-4
    assert np.max(rotation_error(reached[:, :3, :3], target[:3, :3])) < 1e-3
    assert np.all(skeleton.within_limits(branches.q))


def test_no_branch_is_lost_and_each_is_kept_nearest_the_reference(ur5):
    """Every solution the plain search finds is a whole-turn copy of a listed branch, and the listed copy is
    the one nearest the reference (the first listed is the reference's own branch, at distance 0)."""
    skeleton, solver, q, target = ur5
    plain = distinct_solutions(solver, target, reference=q, seeds=256)
    branches = robot_branches(solver, target, reference=q, seeds=256)
    assert branches.distance[0] == pytest.approx(0.0, abs=1e-4)
    assert np.all(np.diff(branches.distance) >= 0)
    for k, p in enumerate(plain.q):
        same = branch_steps(skeleton, branches.q, p) < SEPARATION
        assert same.any(), f"plain solution {k} is in no listed branch"
        assert branches.distance[np.argmax(same)] <= plain.distance[k] + 1e-9
