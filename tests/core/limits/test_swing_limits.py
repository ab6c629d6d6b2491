# SPDX-License-Identifier: GPL-3.0-or-later
"""SwingTwistLimit: Blender's IK limit semantics (twist about Y, swing per side) hold after projection."""

import numpy as np
import pytest

from ik_core.errors import LimitError
from ik_core.limits.swing_twist import SwingTwistLimit
from ik_core.model.rotations import matrix_to_quat, rotvec_to_matrix, swing_twist, twist_angle


def _twist(R):
    return twist_angle(matrix_to_quat(R), np.array([0.0, 1.0, 0.0]))


def test_a_twist_range_bounds_large_twists_even_with_free_swing():
    """A 161 degree twist about Y (Euler XYZ (180, 19, 180)) is outside +/-40 degrees and projects to 40."""
    limit = SwingTwistLimit((-np.pi, np.radians(-40), -np.pi), (np.pi, np.radians(40), np.pi))
    v = np.array([0.0, np.radians(160.6), 0.0])
    assert not limit.contains(v)
    p = limit.project(v)
    assert np.degrees(_twist(rotvec_to_matrix(p))) == pytest.approx(40.0, abs=1e-6)


def test_projection_lands_inside_and_is_idempotent():
    """Any rotation projects into the limit; projecting again changes nothing; feasible input is kept."""
    rng = np.random.default_rng(0)
    limit = SwingTwistLimit((0.0, -0.3, -0.5), (2.6, 0.3, 0.2))
    v = rng.normal(size=(500, 3)) * 1.5
    p = limit.project(v)
    assert limit.contains(p, tol=1e-7).all()
    np.testing.assert_allclose(limit.project(p), p, atol=1e-9)
    inside = p[limit.contains(p)]
    np.testing.assert_array_equal(limit.project(inside), inside)


def test_one_sided_hinge_range():
    """An elbow limited to [0, 150] degrees about X: negative bends project to 0, in-range bends stay."""
    limit = SwingTwistLimit((0.0, 0.0, 0.0), (np.radians(150), 0.0, 0.0), (False, True, True))
    assert limit.contains(np.array([np.radians(90), 0.0, 0.0]))
    p = limit.project(np.array([np.radians(-30), 0.0, 0.0]))
    np.testing.assert_allclose(p, 0.0, atol=1e-12)
    swing, _ = swing_twist(matrix_to_quat(rotvec_to_matrix(np.array([1.0, 0.4, 0.2]))), np.array([0, 1.0, 0]))
    assert limit.contains(limit.project(np.array([1.0, 0.4, 0.2])), tol=1e-7)
    assert swing.shape == (4,)


def test_bad_ranges_are_rejected():
    """Bounds that do not bracket 0, or lie beyond pi, name the axis."""
    with pytest.raises(LimitError, match="axis X"):
        SwingTwistLimit((0.2, 0, 0), (0.5, 0, 0))
    with pytest.raises(LimitError, match="axis Z"):
        SwingTwistLimit((0, 0, -4.0), (0, 0, 0))
