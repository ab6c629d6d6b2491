# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of joint distances: steps between configurations, and branch distances with whole turns ignored."""

from __future__ import annotations

import numpy as np
import pytest

from ik_core import Joint, JointKind, Mimic, Skeleton
from ik_core.model.distance import branch_steps, joint_steps, turning_variables

TURN = 2 * np.pi


def mixed_skeleton() -> Skeleton:
    """Revolute, prismatic, continuous, ball and mimic joints: variables r, p, c, b0 b1 b2."""
    joints = [
        Joint("r", JointKind.REVOLUTE, -1, np.eye(4), axis=(0, 0, 1), lower=-TURN, upper=TURN),
        Joint("p", JointKind.PRISMATIC, 0, np.eye(4), axis=(1, 0, 0), lower=-5.0, upper=5.0),
        Joint("c", JointKind.CONTINUOUS, 1, np.eye(4), axis=(0, 1, 0)),
        Joint("m", JointKind.REVOLUTE, 2, np.eye(4), axis=(1, 0, 0), mimic=Mimic("r", 0.5, 0.0)),
        Joint("b", JointKind.BALL, 3, np.eye(4)),
    ]
    return Skeleton(joints)


def test_turning_variables_are_the_revolute_and_continuous_ones():
    """Revolute and continuous variables turn; the prismatic one and the ball's three do not; a mimic has none."""
    skeleton = mixed_skeleton()
    assert skeleton.dof == 6
    np.testing.assert_array_equal(turning_variables(skeleton), [True, False, True, False, False, False])


def test_whole_turns_apart_is_the_same_branch():
    """Adding whole turns to revolute and continuous joints changes joint_steps but not branch_steps."""
    skeleton = mixed_skeleton()
    rng = np.random.default_rng(5)
    qa = rng.uniform(-1, 1, (20, skeleton.dof))
    turns = rng.integers(-2, 3, (20, 2)) * TURN
    qb = qa.copy()
    qb[:, [0, 2]] += turns
    np.testing.assert_allclose(branch_steps(skeleton, qa, qb), 0.0, atol=1e-12)
    moved = np.any(turns != 0, axis=1)
    assert np.all(joint_steps(skeleton, qa, qb)[moved] >= TURN - 1e-9)


def test_other_differences_are_measured_as_joint_steps():
    """Within half a turn, and on prismatic and ball variables, branch_steps equals joint_steps;
    a prismatic difference of a whole 'turn' in metres is not wrapped."""
    skeleton = mixed_skeleton()
    rng = np.random.default_rng(6)
    qa = rng.uniform(-1, 1, (50, skeleton.dof))
    qb = qa + rng.uniform(-1.5, 1.5, qa.shape)
    np.testing.assert_allclose(branch_steps(skeleton, qa, qb), joint_steps(skeleton, qa, qb), atol=1e-12)
    slid = qa.copy()
    slid[:, 1] += TURN
    np.testing.assert_allclose(branch_steps(skeleton, qa, slid), TURN, atol=1e-12)


@pytest.mark.parametrize("delta", [0.3, np.pi - 0.01, np.pi + 0.01, TURN - 0.2, -TURN - 0.2, 3 * TURN + 0.4])
def test_a_turning_difference_is_the_shortest_way_round(delta):
    """A revolute joint's branch difference is its change modulo a turn, in [0, pi], symmetric in qa and qb."""
    skeleton = mixed_skeleton()
    qa = np.zeros(skeleton.dof)
    qb = qa.copy()
    qb[0] = delta
    expected = abs((delta + np.pi) % TURN - np.pi)
    assert branch_steps(skeleton, qa, qb) == pytest.approx(expected, abs=1e-12)
    assert branch_steps(skeleton, qb, qa) == pytest.approx(expected, abs=1e-12)
    assert 0.0 <= expected <= np.pi
