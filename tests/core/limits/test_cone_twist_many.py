# SPDX-License-Identifier: GPL-3.0-or-later
"""Cone-twist limits of several joints projected together give each joint's own projection."""

import numpy as np
import pytest

from ik_core.limits import ConeTwistLimit
from ik_core.limits.cone_twist import project_cone_twist_joints


def _random_limit(rng: np.random.Generator) -> ConeTwistLimit:
    """Ellipses, circles, slits (a zero semi-axis), locked twists and odd twist axes."""
    kind = rng.integers(4)
    swing_x = float(rng.uniform(0.0, np.pi))
    swing_z = swing_x if kind == 0 else 0.0 if kind == 1 else float(rng.uniform(0.0, np.pi))
    lo = float(rng.uniform(-np.pi, 0.5))
    hi = lo if kind == 2 else float(rng.uniform(lo, np.pi))
    axis = (0.0, 1.0, 0.0) if rng.random() < 0.5 else tuple(rng.normal(size=3))
    return ConeTwistLimit(swing_x, swing_z, lo, hi, axis)


@pytest.mark.parametrize("seed", range(12))
def test_together_is_each_joint_on_its_own(seed: int) -> None:
    rng = np.random.default_rng(seed)
    limits = [_random_limit(rng) for _ in range(int(rng.integers(2, 9)))]
    v = rng.normal(0.0, 1.5, (int(rng.integers(1, 40)), len(limits), 3))
    together = project_cone_twist_joints(limits, v)
    alone = np.stack([limit.project(v[:, j]) for j, limit in enumerate(limits)], axis=1)
    np.testing.assert_allclose(together, alone, rtol=0.0, atol=1e-9)
    assert all(limit.contains(together[:, j], tol=1e-9).all() for j, limit in enumerate(limits))
    # Feasible values come back bit for bit.
    inside = np.stack([limit.project(together[:, j]) for j, limit in enumerate(limits)], axis=1)
    np.testing.assert_array_equal(project_cone_twist_joints(limits, inside), inside)
