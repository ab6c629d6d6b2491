# SPDX-License-Identifier: GPL-3.0-or-later
"""Euler limits of several joints projected together give each joint's own projection."""

import numpy as np
import pytest

from ik_core.errors import LimitError
from ik_core.limits import EulerLimit
from ik_core.limits.euler import project_euler_joints
from ik_core.model.rotations import EULER_ORDERS


def _random_limit(rng: np.random.Generator, order: str) -> EulerLimit:
    """Ranges of every kind: narrow, single-value (locked by range), free (2 pi or wider), locked."""
    lower, upper, locked = [], [], []
    for _ in range(3):
        kind = rng.integers(4)
        if kind == 0:  # free
            lo, hi = -np.pi, np.pi + rng.uniform(0.0, 1.0)
        elif kind == 1:  # a single value
            lo = hi = rng.uniform(-1.0, 1.0)
        else:
            lo = rng.uniform(-2.0, 0.5)
            hi = lo + rng.uniform(0.05, 2.5)
        lower.append(lo)
        upper.append(hi)
        locked.append(bool(rng.random() < 0.1))
    return EulerLimit(tuple(lower), tuple(upper), tuple(locked), order)


@pytest.mark.parametrize("seed", range(12))
def test_together_is_each_joint_on_its_own(seed: int) -> None:
    rng = np.random.default_rng(seed)
    order = EULER_ORDERS[seed % len(EULER_ORDERS)]
    limits = [_random_limit(rng, order) for _ in range(int(rng.integers(2, 9)))]
    v = rng.normal(0.0, 1.5, (int(rng.integers(1, 40)), len(limits), 3))
    # Rows at gimbal lock of the order's middle axis, where only the coupled angle is checked.
    middle = "XYZ".index(order[1])
    v[::5, :, middle] = np.pi / 2
    v[::5, :, [a for a in range(3) if a != middle]] = 0.0
    together = project_euler_joints(limits, v)
    alone = np.stack([limit.project(v[:, j]) for j, limit in enumerate(limits)], axis=1)
    np.testing.assert_allclose(together, alone, rtol=0.0, atol=1e-12)
    # Inside every limit, and feasible values come back bit for bit.
    assert all(limit.contains(together[:, j]).all() for j, limit in enumerate(limits))
    np.testing.assert_array_equal(project_euler_joints(limits, together), together)


def test_limits_of_different_orders_are_refused() -> None:
    with pytest.raises(LimitError, match="one Euler order"):
        project_euler_joints([EulerLimit(order="XYZ"), EulerLimit(order="ZXY")], np.zeros((2, 3)))
