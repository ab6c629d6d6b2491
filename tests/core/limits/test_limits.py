# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests for ik_core.limits: Euler and cone-twist ball-joint limits, projections, helpers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ik_core import Effector, Joint, JointKind, LimitError, Skeleton
from ik_core.errors import InvalidInputError
from ik_core.limits import (
    ConeTwistLimit,
    EulerLimit,
    SwingTwistLimit,
    circular_clamp,
    ellipse_project,
    free_directions,
    fully_locked,
    limit_violation,
    project_configuration,
)
from ik_core.model.rotations import (
    EULER_ORDERS,
    euler_to_matrix,
    matrix_to_euler,
    matrix_to_rotvec,
    quat_to_rotvec,
    rotation_error,
    rotvec_to_matrix,
    rotvec_to_quat,
    swing_twist,
    twist_angle,
)

ROT_TOL = 1e-9  # rad: idempotency and identity checks
HYP = settings(max_examples=30, deadline=None)


def random_rotvecs(rng: np.random.Generator, n: int, scale: float = 1.5) -> np.ndarray:
    """Rotation vectors with norms past pi too, so every representation is exercised."""
    return rng.normal(size=(n, 3)) * scale


angle = st.floats(-3.0, 3.0, allow_nan=False)
half_width = st.floats(0.0, 1.5, allow_nan=False)


@st.composite
def euler_limits(draw: st.DrawFn) -> EulerLimit:
    """Random Euler limits: any order, ranges of any width, some axes locked."""
    centers = [draw(angle) for _ in range(3)]
    widths = [draw(half_width) for _ in range(3)]
    locked = [draw(st.booleans()) for _ in range(3)]
    order = draw(st.sampled_from(EULER_ORDERS))
    lower = [c - w for c, w in zip(centers, widths)]
    upper = [c + w for c, w in zip(centers, widths)]
    return EulerLimit(lower, upper, locked, order)


@st.composite
def cone_limits(draw: st.DrawFn) -> ConeTwistLimit:
    """Random cone-twist limits, circular and elliptical, with arbitrary twist axes."""
    sx = draw(st.floats(0.0, np.pi))
    sz = draw(st.floats(0.0, np.pi))
    lo = draw(st.floats(-np.pi, np.pi))
    hi = draw(st.floats(lo, np.pi))
    axis = draw(st.sampled_from([(0.0, 1.0, 0.0), (1.0, 0.0, 0.0), (0.0, -1.0, 0.0), (0.3, -0.5, 0.8)]))
    return ConeTwistLimit(sx, sz, lo, hi, axis)


# --- helpers --------------------------------------------------------------------------------


def test_circular_clamp_inside_is_unchanged_modulo_two_pi():
    """Angles inside the range (modulo 2 pi) keep their rotation and have distance 0."""
    a = np.linspace(-9.0, 9.0, 2001)
    c, d = circular_clamp(a, -1.0, 0.5)
    inside = np.abs(np.mod(a + 1.0, 2 * np.pi)) <= 1.5
    assert np.all(d[inside] == 0.0)
    assert np.allclose(np.exp(1j * c[inside]), np.exp(1j * a[inside]), atol=1e-12)


def test_circular_clamp_goes_to_the_circularly_nearer_end():
    """Outside angles land on the end with the shorter way round, at that distance."""
    a = np.linspace(-9.0, 9.0, 2001)
    lo, hi = -1.0, 0.5
    c, d = circular_clamp(a, lo, hi)
    to_lo = np.abs(np.angle(np.exp(1j * (a - lo))))
    to_hi = np.abs(np.angle(np.exp(1j * (a - hi))))
    out = d > 0
    assert np.allclose(d[out], np.minimum(to_lo, to_hi)[out], atol=1e-12)
    assert np.all((c[out] == lo) | (c[out] == hi))


def test_circular_clamp_full_circle_and_infinite_ranges_are_free():
    """A range of 2 pi or more (or infinite) never moves an angle."""
    a = np.linspace(-20.0, 20.0, 101)
    for lo, hi in ((-np.pi, np.pi), (-np.inf, np.inf), (0.0, 7.0)):
        c, d = circular_clamp(a, lo, hi)
        assert np.array_equal(c, a) and np.all(d == 0.0)
    c, d = circular_clamp(a, np.array([-np.inf]), np.array([np.inf]))
    assert np.array_equal(c, a) and np.all(d == 0.0)


@pytest.mark.parametrize("a,b", [(0.7, 0.2), (0.3, 0.9), (0.5, 0.5), (1e-3, 1.0), (1.0, 1.4e-8)])
def test_ellipse_project_is_the_closest_boundary_point(a, b):
    """Outside points go to the closest point of the ellipse (checked by dense sampling)."""
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(2, 200)) * 1.5
    px, py = ellipse_project(x, y, a, b)
    th = np.linspace(0.0, 2 * np.pi, 100_001)
    ex, ey = a * np.cos(th), b * np.sin(th)
    outside = (x / a) ** 2 + (y / b) ** 2 > 1
    assert np.allclose(((px / a) ** 2 + (py / b) ** 2)[outside], 1.0, atol=1e-9, rtol=0)
    i = np.nonzero(outside)[0][:20]
    # Dense samples over-estimate the true distance, so ours must not exceed theirs.
    best = np.hypot(ex - x[i, None], ey - y[i, None]).min(axis=-1)
    assert np.all(np.hypot(px[i] - x[i], py[i] - y[i]) <= best + 1e-12)
    assert np.array_equal(px[~outside], x[~outside]) and np.array_equal(py[~outside], y[~outside])


def test_ellipse_project_degenerate_axes_clamp_onto_segments():
    """A zero semi-axis collapses the ellipse onto a segment; both zero onto the origin."""
    x, y = np.array([2.0, -0.1, 0.3]), np.array([1.0, -3.0, 0.0])
    px, py = ellipse_project(x, y, 0.5, 0.0)
    assert np.allclose(px, [0.5, -0.1, 0.3]) and np.all(py == 0.0)
    px, py = ellipse_project(x, y, 0.0, 0.0)
    assert np.all(px == 0.0) and np.all(py == 0.0)


# --- Euler limits ---------------------------------------------------------------------------


@HYP
@given(euler_limits(), st.integers(0, 2**32 - 1))
def test_euler_project_is_idempotent_and_lands_inside(limit, seed):
    """Projecting twice changes nothing, and the result is contained."""
    v = random_rotvecs(np.random.default_rng(seed), 64)
    p = limit.project(v)
    assert np.all(limit.contains(p))
    pp = limit.project(p)
    assert np.all(rotation_error(rotvec_to_matrix(p), rotvec_to_matrix(pp)) <= ROT_TOL)


@HYP
@given(euler_limits(), st.integers(0, 2**32 - 1))
def test_euler_project_is_identity_on_feasible_values(limit, seed):
    """Rotations built from in-range Euler angles come back bit for bit."""
    rng = np.random.default_rng(seed)
    lo = np.where(limit.locked, 0.0, limit.lower)
    hi = np.where(limit.locked, 0.0, limit.upper)
    angles = rng.uniform(lo, hi, size=(64, 3))
    v = matrix_to_rotvec(euler_to_matrix(angles, limit.order))
    assert np.all(limit.contains(v))
    assert np.array_equal(limit.project(v), v)


@HYP
@given(st.sampled_from(EULER_ORDERS), st.integers(0, 7), st.integers(0, 2**32 - 1))
def test_euler_locked_axes_stay_zero(order, mask, seed):
    """After projection an Euler decomposition exists with every locked axis exactly at 0."""
    locked = [(mask >> i) & 1 == 1 for i in range(3)]
    limit = EulerLimit((-0.7, -0.4, -1.0), (0.5, 0.9, 0.2), locked, order)
    R = rotvec_to_matrix(limit.project(random_rotvecs(np.random.default_rng(seed), 64)))
    i, j, k = ("XYZ".index(c) for c in order)
    e0 = matrix_to_euler(R, order)
    e1 = e0.copy()
    e1[:, i] += np.pi
    e1[:, j] = np.pi - e0[:, j]
    e1[:, k] += np.pi
    lo = np.where(locked, 0.0, limit.lower)
    hi = np.where(locked, 0.0, limit.upper)

    def fits(e: np.ndarray) -> np.ndarray:
        wrapped = lo + np.mod(e - lo + 1e-9, 2 * np.pi) - 1e-9
        return np.all(wrapped <= hi + 1e-9, axis=-1)

    assert np.all(fits(e0) | fits(e1))


def test_euler_projection_of_a_single_axis_overshoot_clamps_that_axis():
    """A rotation past one range, about that axis only, stops exactly at the range's end."""
    limit = EulerLimit((-0.5, -0.5, -0.5), (0.5, 0.5, 0.5), order="XYZ")
    for axis in range(3):
        v = np.zeros(3)
        v[axis] = 0.9
        expected = np.zeros(3)
        expected[axis] = 0.5
        assert np.allclose(limit.project(v), expected, atol=1e-12)


def test_euler_projection_at_gimbal_lock_is_idempotent():
    """Rotations at exactly +-90 degrees about the middle axis project to fixed points."""
    limit = EulerLimit((-0.3, -2.0, -0.4), (0.2, 2.0, 0.6), order="XYZ")
    rng = np.random.default_rng(3)
    angles = np.stack([rng.uniform(-3, 3, 50), np.full(50, np.pi / 2), rng.uniform(-3, 3, 50)], axis=-1)
    R = euler_to_matrix(angles, "XYZ")
    P = limit.project_matrix(R)
    assert np.all(limit.contains_matrix(P))
    assert np.all(rotation_error(P, limit.project_matrix(P)) <= ROT_TOL)


def test_euler_limit_rejects_lower_above_upper_naming_the_axis():
    """lower > upper raises LimitError whose message names the axis."""
    with pytest.raises(LimitError, match="axis Y"):
        EulerLimit((-1.0, 0.5, -1.0), (1.0, 0.2, 1.0))
    with pytest.raises(LimitError, match="order"):
        EulerLimit(order="XYX")
    with pytest.raises(LimitError, match="3 values"):
        EulerLimit((0.0, 0.0), (1.0, 1.0))


def test_euler_from_blender_maps_pose_bone_settings():
    """Unlimited axes become (-pi, pi) (free); limited ones keep ik_min/ik_max; locks pass through."""
    settings_ = ((True, False, True), (-0.2, -0.1, -0.3), (0.4, 0.1, 0.5), (False, False, True))
    limit = EulerLimit.from_blender(*settings_)
    assert limit.lower == (-0.2, -np.pi, -0.3) and limit.upper == (0.4, np.pi, 0.5)
    assert limit.locked == (False, False, True)
    v = np.array([0.0, 3.0, 0.0])  # any Y rotation is fine: Y has no limit
    assert np.array_equal(limit.project(v), v)
    assert limit == EulerLimit.from_blender(*settings_)  # frozen and comparable


# --- cone-twist limits ----------------------------------------------------------------------


@HYP
@given(cone_limits(), st.integers(0, 2**32 - 1))
def test_cone_project_is_idempotent_and_lands_inside(limit, seed):
    """Projecting twice changes nothing, and the result is contained."""
    v = random_rotvecs(np.random.default_rng(seed), 64)
    p = limit.project(v)
    assert np.all(limit.contains(p))
    assert np.all(rotation_error(rotvec_to_matrix(p), rotvec_to_matrix(limit.project(p))) <= ROT_TOL)


@HYP
@given(cone_limits(), st.integers(0, 2**32 - 1))
def test_cone_project_is_identity_on_feasible_values(limit, seed):
    """Rotations composed from an in-ellipse swing and an in-range twist come back bit for bit."""
    rng = np.random.default_rng(seed)
    r = np.sqrt(rng.uniform(size=64)) * 0.999
    phi = rng.uniform(0, 2 * np.pi, 64)
    tw = rng.uniform(limit.twist_min, limit.twist_max, 64)
    R = limit.compose(r * limit.swing_x * np.cos(phi), r * limit.swing_z * np.sin(phi), tw)
    v = matrix_to_rotvec(R)
    assert np.all(limit.contains(v))
    assert np.array_equal(limit.project(v), v)


def test_cone_swing_twist_matches_the_rotations_module():
    """The matrix-based split equals rotations.swing_twist for several twist axes."""
    v = random_rotvecs(np.random.default_rng(1), 500, scale=1.0)
    for axis in ((0.0, 1.0, 0.0), (1.0, 0.0, 0.0), (0.3, -0.5, 0.8)):
        limit = ConeTwistLimit(0.5, 0.4, -0.3, 0.3, axis)
        su, sw, tw = limit.swing_twist_angles(rotvec_to_matrix(v))
        swing, _ = swing_twist(rotvec_to_quat(v), np.array(limit.twist_axis))
        s = quat_to_rotvec(swing)
        assert np.allclose(su ** 2 + sw ** 2, np.sum(s * s, axis=-1), atol=1e-12)
        ref = twist_angle(rotvec_to_quat(v), np.array(limit.twist_axis))
        assert np.allclose(np.exp(1j * tw), np.exp(1j * ref), atol=1e-10)
        assert np.allclose(limit.compose(su, sw, tw), rotvec_to_matrix(v), atol=1e-12)


def test_cone_swing_components_follow_the_named_axes():
    """For the default Y twist axis, swing_x bounds rotation about X and swing_z about Z."""
    limit = ConeTwistLimit(0.2, 0.6, -1.0, 1.0)
    assert np.allclose(limit.project([0.5, 0.0, 0.0]), [0.2, 0.0, 0.0], atol=1e-12)
    assert np.allclose(limit.project([0.0, 0.0, 0.5]), [0.0, 0.0, 0.5], atol=1e-12)
    assert np.allclose(limit.project([0.0, 0.0, 0.9]), [0.0, 0.0, 0.6], atol=1e-12)
    assert np.allclose(limit.project([0.0, 1.4, 0.0]), [0.0, 1.0, 0.0], atol=1e-12)


def test_cone_project_direction_stays_in_the_cone():
    """Projected bone directions are unit vectors within the circular cone's half-angle."""
    limit = ConeTwistLimit(0.4, 0.4, -0.1, 0.1)
    d = np.random.default_rng(2).normal(size=(300, 3))
    p = limit.project_direction(d)
    assert np.allclose(np.linalg.norm(p, axis=-1), 1.0)
    assert np.all(np.arccos(np.clip(p[:, 1], -1, 1)) <= 0.4 + 1e-12)
    inside = np.arccos(d[:, 1] / np.linalg.norm(d, axis=-1)) <= 0.4
    assert np.allclose(p[inside], d[inside] / np.linalg.norm(d[inside], axis=-1, keepdims=True))


def test_cone_limit_rejects_bad_values():
    """Out-of-range swings, reversed twist ranges and zero axes raise LimitError."""
    with pytest.raises(LimitError, match="swing_x"):
        ConeTwistLimit(-0.1, 0.3, -1, 1)
    with pytest.raises(LimitError, match="twist"):
        ConeTwistLimit(0.3, 0.3, 0.5, 0.2)
    with pytest.raises(LimitError, match="twist_axis"):
        ConeTwistLimit(0.3, 0.3, -1, 1, (0, 0, 0))


def test_project_rejects_bad_rotvecs():
    """Wrong shapes and NaN raise InvalidInputError."""
    limit = ConeTwistLimit(0.3, 0.3, -1, 1)
    with pytest.raises(InvalidInputError):
        limit.project(np.zeros(4))
    with pytest.raises(InvalidInputError):
        limit.project([np.nan, 0, 0])


# --- configurations -------------------------------------------------------------------------


def test_project_configuration_applies_ball_and_box_limits():
    """Projected configurations have zero violation and feasible ones are unchanged."""
    offset = np.eye(4)
    offset[1, 3] = 0.1
    joints = [
        Joint("a", JointKind.BALL, -1, limit=ConeTwistLimit(0.5, 0.3, -0.2, 0.2)),
        Joint("b", JointKind.REVOLUTE, 0, offset, lower=-1.0, upper=0.5),
        Joint("c", JointKind.BALL, 1, offset, limit=EulerLimit((-0.1, -0.2, -0.3), (0.1, 0.2, 0.3))),
        Joint("d", JointKind.BALL, 2, offset),
    ]
    skeleton = Skeleton(joints, [Effector("tip", 3, offset)])
    q = np.random.default_rng(4).normal(size=(100, skeleton.dof)) * 2
    p = project_configuration(skeleton, q)
    assert np.all(limit_violation(skeleton, p) <= 1e-9)
    assert np.all(limit_violation(skeleton, q[:10]) > 0)
    assert np.array_equal(project_configuration(skeleton, p), p)


def _one_joint(joint: Joint) -> Skeleton:
    tip = np.eye(4)
    tip[1, 3] = 0.3
    return Skeleton([joint], [Effector("tip", 0, tip)])


@pytest.mark.parametrize(
    ("joint", "locked"),
    [
        # Ranges that are a single value, and ball joints with nothing left to turn: locked.
        (Joint("h", JointKind.REVOLUTE, -1, np.eye(4), axis=(0, 0, 1), lower=0.4, upper=0.4), True),
        (Joint("b", JointKind.BALL, -1, np.eye(4), limit=EulerLimit((0.2, -0.1, 0.3), (0.2, -0.1, 0.3))), True),
        (Joint("c", JointKind.BALL, -1, np.eye(4), limit=ConeTwistLimit(0.0, 0.0, 0.5, 0.5)), True),
        # Narrow ranges that far-apart probes all miss on the same side (they met at the lower end of
        # the hinge's range, and the solvers refused the rig as "every joint is locked").
        (Joint("h", JointKind.REVOLUTE, -1, np.eye(4), axis=(0, 0, 1), lower=2.9144, upper=2.9965), False),
        (Joint("p", JointKind.PRISMATIC, -1, np.eye(4), axis=(1, 0, 0), lower=5.0, upper=5.001), False),
        (Joint("b", JointKind.BALL, -1, np.eye(4), limit=EulerLimit((3.0, 3.0, 3.0), (3.01, 3.0, 3.0))), False),
    ],
)
def test_fully_locked_means_a_single_pose_not_a_narrow_range(joint: Joint, locked: bool) -> None:
    assert fully_locked(_one_joint(joint)) is locked


@pytest.mark.parametrize(
    ("joint", "directions"),
    [
        (Joint("h", JointKind.REVOLUTE, -1, np.eye(4), axis=(0, 0, 1), lower=0.4, upper=0.4), 0),
        (Joint("h", JointKind.REVOLUTE, -1, np.eye(4), axis=(0, 0, 1), lower=2.9144, upper=2.9965), 1),
        (Joint("p", JointKind.PRISMATIC, -1, np.eye(4), axis=(1, 0, 0), lower=5.0, upper=5.001), 1),
        (Joint("c", JointKind.CONTINUOUS, -1, np.eye(4), axis=(0, 1, 0)), 1),
        (Joint("b", JointKind.BALL, -1, np.eye(4)), 3),
        # Ball joints: each axis their limit leaves room about.
        (Joint("b", JointKind.BALL, -1, np.eye(4), limit=EulerLimit((0.2, -0.1, 0.3), (0.2, -0.1, 0.3))), 0),
        (Joint("b", JointKind.BALL, -1, np.eye(4), limit=EulerLimit((3.0, 3.0, 3.0), (3.01, 3.0, 3.0))), 1),
        (Joint("b", JointKind.BALL, -1, np.eye(4), limit=EulerLimit(locked=(True, False, True))), 1),
        (Joint("b", JointKind.BALL, -1, np.eye(4), limit=ConeTwistLimit(0.0, 0.0, 0.5, 0.5)), 0),
        (Joint("b", JointKind.BALL, -1, np.eye(4), limit=ConeTwistLimit(0.4, 0.0, -np.pi, np.pi)), 2),
        (Joint("b", JointKind.BALL, -1, np.eye(4), limit=SwingTwistLimit(locked=(True, True, True))), 0),
        (Joint("b", JointKind.BALL, -1, np.eye(4), limit=SwingTwistLimit((0.0, -0.3, -0.2), (0.0, 0.3, 0.0))), 2),
    ],
)
def test_free_directions_count_the_axes_the_limits_leave_room_about(joint: Joint, directions: int) -> None:
    assert free_directions(_one_joint(joint)) == directions
