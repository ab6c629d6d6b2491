# SPDX-License-Identifier: GPL-3.0-or-later
"""Swing-twist limits of many joints projected together (ik_core.limits.swing_twist.project_swing_twist_joints,
used by project_configuration): the same answers as each joint's own projection."""

from __future__ import annotations

import numpy as np
import pytest

from ik_core import Effector, Joint, JointKind, Skeleton
from ik_core.errors import InvalidInputError
from ik_core.limits import EulerLimit, SwingTwistLimit, limit_violation, project_configuration
from ik_core.limits.swing_twist import project_swing_twist_joints


def _random_limit(rng: np.random.Generator) -> SwingTwistLimit:
    """Ranges from locked to free, one-sided ones and single values included."""
    lo = -rng.uniform(0.0, np.pi, 3) * (rng.random(3) < 0.8)
    hi = rng.uniform(0.0, np.pi, 3) * (rng.random(3) < 0.8)
    return SwingTwistLimit(lo, hi, rng.random(3) < 0.15)


def _spine(rng: np.random.Generator, bones: int, euler_every: int = 0) -> Skeleton:
    joints = []
    for i in range(bones):
        origin = np.eye(4)
        origin[1, 3] = 0.2 if i else 0.0
        limit = EulerLimit((-0.3, -0.2, -0.1), (0.3, 0.2, 0.1)) if euler_every and i % euler_every == 0 else (
            _random_limit(rng))
        joints.append(Joint(f"b{i}", JointKind.BALL, i - 1, origin, limit=limit))
    return Skeleton(joints, [Effector("tip", bones - 1, np.eye(4))])


@pytest.mark.parametrize("seed", range(40))
def test_together_is_each_joint_on_its_own(seed: int) -> None:
    rng = np.random.default_rng(seed)
    limits = [_random_limit(rng) for _ in range(int(rng.integers(2, 10)))]
    v = rng.normal(0.0, 1.5, (int(rng.integers(1, 30)), len(limits), 3))
    together = project_swing_twist_joints(limits, v)
    alone = np.stack([limit.project(v[:, j]) for j, limit in enumerate(limits)], axis=1)
    np.testing.assert_allclose(together, alone, rtol=0.0, atol=1e-12)
    # Inside every limit, and feasible values come back bit for bit.
    again = project_swing_twist_joints(limits, together)
    assert all(limit.contains(together[:, j]).all() for j, limit in enumerate(limits))
    np.testing.assert_array_equal(again, together)


@pytest.mark.parametrize("seed", range(10))
def test_project_configuration_of_a_spine_with_mixed_limits(seed: int) -> None:
    """Swing-twist joints go together, the Euler ones on their own; the result lies inside every limit."""
    rng = np.random.default_rng(100 + seed)
    skeleton = _spine(rng, int(rng.integers(3, 10)), euler_every=3)
    q = rng.normal(0.0, 1.2, (16, skeleton.dof))
    out = project_configuration(skeleton, q)
    assert np.all(limit_violation(skeleton, out) <= 1e-9)
    for i, joint in enumerate(skeleton.joints):
        s = skeleton.q_index[i]
        np.testing.assert_allclose(out[:, s : s + 3], joint.limit.project(q[:, s : s + 3]), rtol=0.0, atol=1e-12)


def test_a_non_finite_value_is_refused() -> None:
    skeleton = _spine(np.random.default_rng(1), 4)
    q = np.zeros(skeleton.dof)
    q[4] = np.nan
    with pytest.raises(InvalidInputError, match="NaN or infinite"):
        project_configuration(skeleton, q)
