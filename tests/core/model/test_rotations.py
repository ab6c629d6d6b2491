# SPDX-License-Identifier: GPL-3.0-or-later
"""Property tests of ik_core.model.rotations (and the Euler half it re-exports from ik_core.model.euler)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ik_core.errors import InvalidInputError
from ik_core.model.rotations import (
    EULER_ORDERS,
    axis_angle_to_matrix,
    euler_compatible,
    euler_to_matrix,
    euler_to_quat,
    make_transform,
    matrix_to_axis_angle,
    matrix_to_euler,
    matrix_to_quat,
    matrix_to_rotvec,
    quat_conjugate,
    quat_make_continuous,
    quat_multiply,
    quat_normalize,
    quat_rotate,
    quat_to_euler,
    quat_to_matrix,
    quat_to_rotvec,
    rotation_error,
    rotvec_to_matrix,
    rotvec_to_quat,
    rpy_to_matrix,
    skew,
    so3_left_jacobian,
    so3_right_jacobian,
    swing_twist,
    transform_inverse,
    twist_angle,
)

PI = np.pi
TIGHT = 1e-12  # "exact": a few ulps of entries of size 1, with headroom
HYPO = settings(max_examples=150, deadline=None, database=None)
# Angles where conversions classically break: 0, pi, and 1e-9 away from both.
SPECIAL_ANGLES = np.array([0.0, 1e-9, -1e-9, PI, PI - 1e-9, -PI, -(PI - 1e-9), 1e-300])
GIMBAL = np.array([PI / 2, -PI / 2, PI / 2 - 1e-9, PI / 2 + 1e-9, -PI / 2 + 1e-9, -PI / 2 - 1e-9])


def rx(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def ry(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rz(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


ELEMENTARY = {"X": rx, "Y": ry, "Z": rz}


def random_quats(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    q = rng.normal(size=shape + (4,))
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def random_axes(rng: np.random.Generator, n: int) -> np.ndarray:
    a = rng.normal(size=(n, 3))
    return a / np.linalg.norm(a, axis=-1, keepdims=True)


def special_rotvecs(rng: np.random.Generator) -> np.ndarray:
    """Every special angle about coordinate and random axes, shape (M, 3)."""
    axes = np.concatenate([np.eye(3), random_axes(rng, 5)])
    return (axes[:, None, :] * SPECIAL_ANGLES[None, :, None]).reshape(-1, 3)


def quat_close(q1: np.ndarray, q2: np.ndarray) -> np.ndarray:
    """Distance between quaternions up to the sign (q and -q are the same rotation)."""
    return np.minimum(np.abs(q1 - q2).max(axis=-1), np.abs(q1 + q2).max(axis=-1))


def assert_rotation(R: np.ndarray, tol: float = TIGHT) -> None:
    eye = np.broadcast_to(np.eye(3), R.shape)
    np.testing.assert_allclose(np.swapaxes(R, -1, -2) @ R, eye, atol=tol, rtol=0)
    np.testing.assert_allclose(np.linalg.det(R), 1.0, atol=tol, rtol=0)


# --- quaternions and matrices ---------------------------------------------------------------


def test_quat_matrix_round_trip_random_and_special():
    """matrix_to_quat inverts quat_to_matrix up to sign, including angles 0, pi and 1e-9 off."""
    rng = np.random.default_rng(1)
    q = np.concatenate([random_quats(rng, (200,)), rotvec_to_quat(special_rotvecs(rng))])
    back = matrix_to_quat(quat_to_matrix(q))
    assert quat_close(back, q).max() < TIGHT
    np.testing.assert_allclose(np.linalg.norm(back, axis=-1), 1.0, atol=TIGHT)
    assert np.all(back[..., 0] >= 0.0)


def test_matrix_to_quat_exact_half_turns():
    """Half turns about coordinate axes give exactly w = 0 and the axis as vector part."""
    for axis in range(3):
        R = -np.eye(3)
        R[axis, axis] = 1.0
        expected = np.zeros(4)
        expected[1 + axis] = 1.0
        assert quat_close(matrix_to_quat(R), expected) == 0.0


def test_matrices_are_orthonormal_with_det_one():
    """Every constructor returns orthonormal matrices with determinant 1."""
    rng = np.random.default_rng(2)
    assert_rotation(quat_to_matrix(rng.normal(size=(100, 4)) * 3.0))
    assert_rotation(rotvec_to_matrix(rng.normal(size=(100, 3)) * 4.0))
    assert_rotation(rotvec_to_matrix(special_rotvecs(rng)))
    assert_rotation(axis_angle_to_matrix(rng.normal(size=(100, 3)), rng.uniform(-10, 10, 100)))
    for order in EULER_ORDERS:
        assert_rotation(euler_to_matrix(rng.uniform(-7, 7, (100, 3)), order))


def test_quat_multiply_is_hamilton_and_composes_matrices():
    """i * j = k (Hamilton), and R(a * b) = R(a) @ R(b) (apply b first)."""
    i, j, k = np.eye(4)[1], np.eye(4)[2], np.eye(4)[3]
    np.testing.assert_array_equal(quat_multiply(i, j), k)
    np.testing.assert_array_equal(quat_multiply(j, i), -k)
    rng = np.random.default_rng(3)
    a, b = random_quats(rng, (50,)), random_quats(rng, (50,))
    np.testing.assert_allclose(quat_to_matrix(quat_multiply(a, b)),
                               quat_to_matrix(a) @ quat_to_matrix(b), atol=TIGHT)


def test_quat_rotate_conjugate_and_normalize():
    """quat_rotate equals R(q) @ v; q * conj(q) is the identity; a zero quaternion is the identity."""
    rng = np.random.default_rng(4)
    q, v = random_quats(rng, (50,)), rng.normal(size=(50, 3))
    np.testing.assert_allclose(quat_rotate(q, v), (quat_to_matrix(q) @ v[..., None])[..., 0], atol=TIGHT)
    np.testing.assert_allclose(quat_rotate(3.0 * q, v), quat_rotate(q, v), atol=TIGHT)
    np.testing.assert_allclose(quat_multiply(q, quat_conjugate(q)),
                               np.broadcast_to([1.0, 0, 0, 0], q.shape), atol=TIGHT)
    np.testing.assert_array_equal(quat_normalize(np.zeros(4)), [1.0, 0, 0, 0])
    np.testing.assert_array_equal(quat_to_matrix(np.zeros(4)), np.eye(3))
    np.testing.assert_allclose(quat_normalize([0.0, 3.0, 0.0, 4.0]), [0.0, 0.6, 0.0, 0.8], atol=0)
    np.testing.assert_allclose(quat_normalize([1e-300, 0, 0, 1e-300]), [2**-0.5, 0, 0, 2**-0.5], atol=TIGHT)


# --- rotation vectors and axis-angle --------------------------------------------------------


def test_rotvec_round_trip_below_pi():
    """matrix_to_rotvec and quat_to_rotvec invert the exponential for |v| < pi, also near 0."""
    rng = np.random.default_rng(5)
    axes = random_axes(rng, 300)
    angles = np.concatenate([rng.uniform(0, PI - 1e-6, 280), [0, 1e-9, 1e-12, 1e-300, PI - 1e-9] * 4])
    v = axes * angles[:, None]
    np.testing.assert_allclose(matrix_to_rotvec(rotvec_to_matrix(v)), v, atol=TIGHT, rtol=0)
    np.testing.assert_allclose(quat_to_rotvec(rotvec_to_quat(v)), v, atol=TIGHT, rtol=0)
    tiny = matrix_to_rotvec(rotvec_to_matrix(axes[:20] * 1e-9))
    np.testing.assert_allclose(tiny, axes[:20] * 1e-9, rtol=1e-6, atol=0)


def test_rotvec_at_and_beyond_pi():
    """At exactly pi the angle is exactly pi (axis up to sign); beyond pi it wraps to [0, pi]."""
    rng = np.random.default_rng(6)
    axes = np.concatenate([np.eye(3), random_axes(rng, 20)])
    v = matrix_to_rotvec(rotvec_to_matrix(axes * PI))
    np.testing.assert_allclose(np.linalg.norm(v, axis=-1), PI, atol=TIGHT, rtol=0)
    assert np.all(np.abs(np.abs(np.sum(v * axes, axis=-1)) - PI) < 1e-9)
    np.testing.assert_array_equal(matrix_to_rotvec(np.diag([1.0, -1.0, -1.0])), [PI, 0.0, 0.0])
    w = axes * rng.uniform(PI, 20.0, (len(axes), 1))
    back = matrix_to_rotvec(rotvec_to_matrix(w))
    assert np.all(np.linalg.norm(back, axis=-1) <= PI + 1e-15)
    np.testing.assert_allclose(rotvec_to_matrix(back), rotvec_to_matrix(w), atol=1e-11)


def test_axis_angle_round_trip_special_angles():
    """matrix_to_axis_angle recovers axis and angle in [0, pi], exactly near 0 and pi."""
    rng = np.random.default_rng(7)
    axes = random_axes(rng, 40)
    for angle in [1e-9, 0.5, 2.0, PI - 1e-9, PI]:
        axis, got = matrix_to_axis_angle(axis_angle_to_matrix(3.0 * axes, angle))
        np.testing.assert_allclose(got, angle, atol=TIGHT, rtol=0)
        agree = np.abs(np.sum(axis * axes, axis=-1))
        tol = 1e-6 if angle == 1e-9 else 1e-9  # a 1e-9 rad rotation only pins its axis to ~1e-7
        np.testing.assert_allclose(agree, 1.0, atol=tol)
        if angle < PI - 1e-6:  # below pi the axis sign is determined as well
            assert np.all(np.sum(axis * axes, axis=-1) > 0)


def test_axis_angle_zero_cases():
    """A zero axis or a zero angle gives the identity; the identity gives Blender's (0, 1, 0), 0."""
    np.testing.assert_array_equal(axis_angle_to_matrix(np.zeros(3), 1.3), np.eye(3))
    np.testing.assert_array_equal(axis_angle_to_matrix([0.0, 0.0, 2.0], 0.0), np.eye(3))
    axis, angle = matrix_to_axis_angle(np.eye(3))
    np.testing.assert_array_equal(axis, [0.0, 1.0, 0.0])
    assert angle == 0.0
    np.testing.assert_array_equal(rotvec_to_matrix(np.zeros(3)), np.eye(3))
    np.testing.assert_array_equal(matrix_to_rotvec(np.eye(3)), np.zeros(3))
    np.testing.assert_array_equal(quat_to_rotvec(np.zeros(4)), np.zeros(3))


def test_axis_angle_matches_elementary_rotations():
    """axis_angle_to_matrix about X, Y, Z equals the textbook Rx, Ry, Rz (right-handed, active)."""
    for a in [0.3, -1.2, PI]:
        np.testing.assert_allclose(axis_angle_to_matrix([1.0, 0, 0], a), rx(a), atol=TIGHT)
        np.testing.assert_allclose(axis_angle_to_matrix([0, 2.0, 0], a), ry(a), atol=TIGHT)
        np.testing.assert_allclose(axis_angle_to_matrix([0, 0, 0.5], a), rz(a), atol=TIGHT)
        np.testing.assert_allclose(rotvec_to_matrix([0, 0, a]), rz(a), atol=TIGHT)


# --- rotation error -------------------------------------------------------------------------


def test_rotation_error_precise_for_tiny_and_half_turn_angles():
    """rotation_error is the geodesic angle, with relative precision 1e-6 down to 1e-12 rad."""
    rng = np.random.default_rng(8)
    base = quat_to_matrix(random_quats(rng, (30,)))
    axes = random_axes(rng, 30)
    for angle in [1e-12, 1e-9, 1e-7, 1e-5, 0.3, 2.5, PI - 1e-9, PI]:
        other = base @ axis_angle_to_matrix(axes, angle)
        got = rotation_error(base, other)
        tol = max(1e-6 * angle, 1e-14) if angle < 1e-3 else 1e-12
        np.testing.assert_allclose(got, angle, atol=tol, rtol=0)
        np.testing.assert_allclose(rotation_error(other, base), got, atol=1e-15)
    assert np.all(rotation_error(base, base) < 1e-15)
    np.testing.assert_array_equal(rotation_error(np.eye(3), np.diag([-1.0, 1.0, -1.0])), PI)


# --- SO(3) Jacobians ------------------------------------------------------------------------

JACOBIAN_NORMS = [0.0, 1e-8, 1e-3, 0.05, 0.1 - 1e-9, 0.1, 0.1 + 1e-9, 0.7, 2.0, 3.0]


@pytest.mark.parametrize("norm", JACOBIAN_NORMS)
def test_so3_jacobians_match_finite_differences(norm):
    """d/dt exp(v + t d) = skew(J_l d) exp(v) = exp(v) skew(J_r d), by central differences."""
    rng = np.random.default_rng(9)
    v = random_axes(rng, 8) * norm
    d = rng.normal(size=(8, 3))
    h = 1e-6
    R0 = rotvec_to_matrix(v)
    Rp, Rm = rotvec_to_matrix(v + h * d), rotvec_to_matrix(v - h * d)
    R0t = np.swapaxes(R0, -1, -2)
    left = (matrix_to_rotvec(Rp @ R0t) - matrix_to_rotvec(Rm @ R0t)) / (2 * h)
    right = (matrix_to_rotvec(R0t @ Rp) - matrix_to_rotvec(R0t @ Rm)) / (2 * h)
    np.testing.assert_allclose((so3_left_jacobian(v) @ d[..., None])[..., 0], left, atol=1e-8)
    np.testing.assert_allclose((so3_right_jacobian(v) @ d[..., None])[..., 0], right, atol=1e-8)


def test_so3_jacobian_identities():
    """J(0) = I, J_r(v) = J_l(-v), J_l(v) = exp(v) J_r(v), and J is smooth across the series switch."""
    np.testing.assert_array_equal(so3_left_jacobian(np.zeros(3)), np.eye(3))
    rng = np.random.default_rng(10)
    v = random_axes(rng, 50) * rng.uniform(0, 3, (50, 1))
    np.testing.assert_allclose(so3_right_jacobian(v), so3_left_jacobian(-v), atol=1e-15)
    np.testing.assert_allclose(so3_left_jacobian(v), rotvec_to_matrix(v) @ so3_right_jacobian(v), atol=TIGHT)
    a = random_axes(rng, 1)[0]
    below, above = so3_left_jacobian(a * (0.1 - 1e-13)), so3_left_jacobian(a * (0.1 + 1e-13))
    np.testing.assert_allclose(below, above, atol=1e-13)
    # Closed form against a long Taylor series of the coefficients at a moderate angle.
    th = 0.05
    coeff2 = sum((-1) ** n * th ** (2 * n) / np.prod(np.arange(1.0, 2 * n + 4)) for n in range(10))
    K = skew(a * th)
    expected = np.eye(3) + (1 - np.cos(th)) / th**2 * K + coeff2 * K @ K
    np.testing.assert_allclose(so3_left_jacobian(a * th), expected, atol=1e-15)


def test_skew_is_cross_product():
    """skew(v) @ w equals cross(v, w) and skew(v) is antisymmetric."""
    rng = np.random.default_rng(11)
    v, w = rng.normal(size=(2, 20, 3))
    np.testing.assert_allclose((skew(v) @ w[..., None])[..., 0], np.cross(v, w), atol=1e-15)
    np.testing.assert_array_equal(skew(v), -np.swapaxes(skew(v), -1, -2))


# --- Euler angles ---------------------------------------------------------------------------


def test_euler_known_small_cases():
    """Blender's conventions: 'XYZ' is Rz @ Ry @ Rx (X first), 'ZYX' is Rx @ Ry @ Rz."""
    a, b, c = 0.3, -0.7, 1.1
    np.testing.assert_allclose(euler_to_matrix([a, 0, 0], "XYZ"), rx(a), atol=TIGHT)
    np.testing.assert_allclose(euler_to_matrix([0, b, 0], "XYZ"), ry(b), atol=TIGHT)
    np.testing.assert_allclose(euler_to_matrix([0, 0, c], "ZYX"), rz(c), atol=TIGHT)
    np.testing.assert_allclose(euler_to_matrix([a, b, c], "XYZ"), rz(c) @ ry(b) @ rx(a), atol=TIGHT)
    np.testing.assert_allclose(euler_to_matrix([a, b, c], "ZYX"), rx(a) @ ry(b) @ rz(c), atol=TIGHT)
    np.testing.assert_allclose(euler_to_matrix([a, b, c], "YXZ"), rz(c) @ rx(a) @ ry(b), atol=TIGHT)
    # Euler((pi/2, 0, 0)).to_matrix() in Blender maps +Y to +Z.
    np.testing.assert_allclose(euler_to_matrix([PI / 2, 0, 0]) @ [0, 1.0, 0], [0, 0, 1.0], atol=TIGHT)
    np.testing.assert_allclose(rpy_to_matrix([a, b, c]), rz(c) @ ry(b) @ rx(a), atol=TIGHT)


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_euler_matches_explicit_products(order):
    """For every order 'ABC', R = R_C(angle_C) @ R_B(angle_B) @ R_A(angle_A), angles stored (x, y, z)."""
    rng = np.random.default_rng(12)
    for angles in rng.uniform(-PI, PI, (10, 3)):
        first, second, third = (ELEMENTARY[ax](angles["XYZ".index(ax)]) for ax in order)
        np.testing.assert_allclose(euler_to_matrix(angles, order), third @ second @ first, atol=TIGHT)
        np.testing.assert_allclose(quat_to_matrix(euler_to_quat(angles, order)),
                                   third @ second @ first, atol=TIGHT)


def _euler_grid(rng: np.random.Generator, order: str) -> np.ndarray:
    """Random triples plus every combination of special and gimbal-lock middle angles, shape (M, 3)."""
    j = "XYZ".index(order[1])
    values = np.concatenate([SPECIAL_ANGLES, [0.4, -2.0]])
    outer = np.stack(np.meshgrid(values, values, indexing="ij"), -1).reshape(-1, 2)
    rows = []
    for middle in np.concatenate([values, GIMBAL]):
        rows.append(np.insert(outer, j, middle, axis=1))
    rows.append(rng.uniform(-2 * PI, 2 * PI, (300, 3)))
    return np.concatenate(rows)


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_euler_round_trips_including_gimbal_lock(order):
    """matrix_to_euler / quat_to_euler reproduce the rotation exactly, also at and near gimbal lock."""
    rng = np.random.default_rng(13)
    angles = _euler_grid(rng, order)
    R = euler_to_matrix(angles, order)
    back = matrix_to_euler(R, order)
    np.testing.assert_allclose(euler_to_matrix(back, order), R, atol=TIGHT, rtol=0)
    j = "XYZ".index(order[1])
    assert np.all(np.abs(back[:, j]) <= PI / 2 + 1e-15)
    assert np.all(np.abs(back) <= PI + 1e-15)
    from_quat = quat_to_euler(euler_to_quat(angles, order), order)
    np.testing.assert_allclose(euler_to_matrix(from_quat, order), R, atol=TIGHT, rtol=0)
    # Within the canonical range the angles themselves come back (away from lock and from +-pi).
    inside = rng.uniform(-3.0, 3.0, (200, 3))
    inside[:, j] = rng.uniform(-1.5, 1.5, 200)
    np.testing.assert_allclose(matrix_to_euler(euler_to_matrix(inside, order), order), inside, atol=1e-11)


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_euler_exact_gimbal_lock_sets_last_angle_zero(order):
    """At exact gimbal lock the decomposition is valid and puts the whole coupled angle first."""
    i, j, k = ("XYZ".index(c) for c in order)
    angles = np.zeros(3)
    angles[i], angles[j], angles[k] = 0.4, PI / 2, 0.9
    back = matrix_to_euler(euler_to_matrix(angles, order), order)
    assert back[k] == 0.0
    np.testing.assert_allclose(euler_to_matrix(back, order), euler_to_matrix(angles, order), atol=TIGHT)


@pytest.mark.parametrize("bad", ["xyz", "XYX", "XY", "", None, 3])
def test_unknown_euler_order_names_the_valid_ones(bad):
    """An unknown order raises InvalidInputError whose message lists all six valid orders."""
    for func in (euler_to_matrix, matrix_to_euler, euler_to_quat):
        arg = np.eye(3) if func is matrix_to_euler else np.zeros(3)
        with pytest.raises(InvalidInputError) as info:
            func(arg, bad)
        assert all(order in str(info.value) for order in EULER_ORDERS)


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_euler_compatible_same_rotation_and_closer(order):
    """euler_compatible keeps the rotation and is never farther from the reference than a plain wrap."""
    rng = np.random.default_rng(14)
    ref = rng.uniform(-8, 8, (400, 3))
    angles = rng.uniform(-8, 8, (400, 3))
    got = euler_compatible(angles, ref, order)
    np.testing.assert_allclose(euler_to_matrix(got, order), euler_to_matrix(angles, order), atol=1e-11)
    wrapped = angles + 2 * PI * np.round((ref - angles) / (2 * PI))
    assert np.all(np.linalg.norm(got - ref, axis=-1) <= np.linalg.norm(wrapped - ref, axis=-1) + 1e-12)
    assert np.all(np.abs(got - ref) <= PI + 1e-9)  # each wrapped angle is within pi of its reference


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_euler_compatible_recovers_the_reference(order):
    """The reference comes back from its 2 pi shifts, its alternative triple and its gimbal-lock split."""
    i, j, k = ("XYZ".index(c) for c in order)
    ref = np.array([0.1, 0.2, 0.3])
    shifted = ref + 2 * PI * np.array([1.0, -2.0, 3.0])
    np.testing.assert_allclose(euler_compatible(shifted, ref, order), ref, atol=TIGHT)
    alt = ref.copy()
    alt[i] += PI
    alt[j] = PI - ref[j]
    alt[k] -= PI
    np.testing.assert_allclose(euler_compatible(alt, ref, order), ref, atol=TIGHT)
    locked = ref.copy()
    locked[j] = -PI / 2
    decomposed = matrix_to_euler(euler_to_matrix(locked, order), order)
    np.testing.assert_allclose(euler_compatible(decomposed, locked, order), locked, atol=TIGHT)
    np.testing.assert_allclose(euler_compatible([0, 0, 3.2], [0, 0, -3.1], "XYZ"), [0, 0, 3.2 - 2 * PI])


# --- sign continuity, swing-twist, transforms -----------------------------------------------


def test_quat_make_continuous():
    """Consecutive dots become non-negative, the first sign is kept, rotations are unchanged."""
    rng = np.random.default_rng(15)
    q = random_quats(rng, (40, 3))
    q = q * rng.choice([-1.0, 1.0], (40, 3, 1))
    for axis, seq in [(0, q), (1, np.swapaxes(q, 0, 1)), (-1, np.swapaxes(q, 0, 1))]:
        out = quat_make_continuous(seq, axis=axis)
        assert out.shape == seq.shape
        moved = np.moveaxis(out, axis % 2, 0)
        assert np.all(np.sum(moved[1:] * moved[:-1], axis=-1) >= 0.0)
        np.testing.assert_array_equal(np.moveaxis(out, axis % 2, 0)[0], np.moveaxis(seq, axis % 2, 0)[0])
        np.testing.assert_array_equal(np.abs(out), np.abs(seq))
    np.testing.assert_array_equal(quat_make_continuous(q[:1]), q[:1])
    with pytest.raises(InvalidInputError):
        quat_make_continuous(q, axis=2)
    with pytest.raises(InvalidInputError):
        quat_make_continuous(np.zeros(4))


def test_swing_twist_decomposition():
    """q = swing * twist, twist is about the axis, swing's axis is perpendicular to it."""
    rng = np.random.default_rng(16)
    q = random_quats(rng, (300,)) * rng.choice([-1.0, 1.0], (300, 1))
    for axis in [np.array([0.0, 0, 2.0]), random_axes(rng, 300) * 5.0]:
        unit = axis / np.linalg.norm(axis, axis=-1, keepdims=True)
        swing, twist = swing_twist(q, axis)
        assert swing.shape == twist.shape == (300, 4)
        np.testing.assert_allclose(quat_multiply(swing, twist), q, atol=TIGHT)
        np.testing.assert_allclose(np.cross(twist[..., 1:], unit), 0.0, atol=TIGHT)
        np.testing.assert_allclose(np.sum(swing[..., 1:] * unit, axis=-1), 0.0, atol=TIGHT)
        assert np.all(twist[..., 0] >= 0)
        angle = twist_angle(q, axis)
        assert quat_close(rotvec_to_quat(unit * angle[..., None]), twist).max() < TIGHT


def test_swing_twist_degenerate_and_pure_twist():
    """A 180 degree swing gives the identity twist; a pure twist gives the identity swing and its angle."""
    q = np.array([0.0, 1.0, 0.0, 0.0])  # half turn about X, twist axis Z
    swing, twist = swing_twist(q, [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(twist, [1.0, 0, 0, 0])
    np.testing.assert_allclose(swing, q, atol=0)
    assert twist_angle(q, [0.0, 0.0, 1.0]) == 0.0
    for angle in [0.0, 1e-9, 1.0, -2.5, PI - 1e-9, PI, -PI]:
        qt = rotvec_to_quat([0.0, 0.0, angle])
        swing, twist = swing_twist(qt, [0.0, 0.0, 1.0])
        np.testing.assert_allclose(quat_close(swing, np.array([1.0, 0, 0, 0])), 0.0, atol=TIGHT)
        expected = PI if abs(angle) == PI else angle  # the range is (-pi, pi]
        np.testing.assert_allclose(twist_angle(qt, [0.0, 0.0, 1.0]), expected, atol=TIGHT)
    with pytest.raises(InvalidInputError):
        swing_twist(q, np.zeros(3))


def test_transforms():
    """make_transform builds [[R, p], [0, 1]] and transform_inverse inverts it."""
    rng = np.random.default_rng(17)
    R = quat_to_matrix(random_quats(rng, (2, 3)))
    p = rng.normal(size=(3,))
    T = make_transform(R, p)
    assert T.shape == (2, 3, 4, 4)
    np.testing.assert_array_equal(T[..., 3, :], np.broadcast_to([0, 0, 0, 1.0], (2, 3, 4)))
    np.testing.assert_array_equal(T[..., :3, 3], np.broadcast_to(p, (2, 3, 3)))
    np.testing.assert_allclose(transform_inverse(T) @ T, np.broadcast_to(np.eye(4), T.shape), atol=TIGHT)
    np.testing.assert_allclose(transform_inverse(T), np.linalg.inv(T), atol=TIGHT)
    with pytest.raises(InvalidInputError):
        make_transform(R, np.zeros((4, 3)))


# --- shapes, validation, no NaN -------------------------------------------------------------

SHAPES = [(), (5,), (2, 3)]


@pytest.mark.parametrize("shape", SHAPES)
def test_batch_shapes_are_preserved(shape):
    """Every function keeps the leading batch shape (), (5,), (2, 3)."""
    rng = np.random.default_rng(18)
    q = random_quats(rng, shape)
    v = rng.normal(size=shape + (3,))
    R = quat_to_matrix(q)
    s = rng.normal(size=shape)
    checks = [
        (quat_multiply(q, q), (4,)), (quat_conjugate(q), (4,)), (quat_normalize(q), (4,)),
        (quat_rotate(q, v), (3,)), (R, (3, 3)), (matrix_to_quat(R), (4,)),
        (axis_angle_to_matrix(v, s), (3, 3)), (matrix_to_axis_angle(R)[0], (3,)),
        (matrix_to_axis_angle(R)[1], ()), (rotvec_to_matrix(v), (3, 3)), (matrix_to_rotvec(R), (3,)),
        (quat_to_rotvec(q), (3,)), (rotvec_to_quat(v), (4,)), (so3_left_jacobian(v), (3, 3)),
        (so3_right_jacobian(v), (3, 3)), (skew(v), (3, 3)), (euler_to_matrix(v, "ZXY"), (3, 3)),
        (matrix_to_euler(R, "YZX"), (3,)), (euler_to_quat(v, "XZY"), (4,)), (quat_to_euler(q), (3,)),
        (euler_compatible(v, v, "YXZ"), (3,)), (swing_twist(q, v)[0], (4,)), (swing_twist(q, v)[1], (4,)),
        (twist_angle(q, [0, 0, 1.0]), ()), (make_transform(R, v), (4, 4)),
        (transform_inverse(make_transform(R, v)), (4, 4)), (rpy_to_matrix(v), (3, 3)),
        (rotation_error(R, R), ()),
    ]
    for i, (out, tail) in enumerate(checks):
        assert out.shape == shape + tail, i
        assert out.dtype == np.float64, i
    if shape:
        assert quat_make_continuous(q).shape == q.shape


@pytest.mark.parametrize(
    ("func", "args"),
    [
        (quat_to_matrix, (np.zeros(3),)),
        (matrix_to_quat, (np.zeros((3, 4)),)),
        (rotvec_to_matrix, (np.zeros(4),)),
        (axis_angle_to_matrix, (np.zeros(2), 0.0)),
        (euler_to_matrix, (np.zeros((2, 2)),)),
        (quat_rotate, (np.array([1.0, 0, 0, 0]), np.array([np.nan, 0, 0]))),
        (rotation_error, (np.eye(3), np.full((3, 3), np.inf))),
        (skew, ("abc",)),
        (quat_multiply, (np.zeros(4), np.zeros(())),),
    ],
)
def test_bad_input_raises_invalid_input_error(func, args):
    """Wrong shapes, NaN, infinities and non-numbers raise InvalidInputError."""
    with pytest.raises(InvalidInputError):
        func(*args)


finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


@HYPO
@given(v=arrays(np.float64, (3,), elements=finite), q=arrays(np.float64, (4,), elements=finite),
       m=arrays(np.float64, (3, 3), elements=finite), order=st.sampled_from(EULER_ORDERS))
def test_no_nan_for_finite_inputs(v, q, m, order):
    """No function returns NaN or infinity for finite inputs, zero vectors and quaternions included."""
    outputs = [
        quat_multiply(q, q), quat_normalize(q), quat_rotate(q, v), quat_to_matrix(q), matrix_to_quat(m),
        axis_angle_to_matrix(v, v[0]), *matrix_to_axis_angle(m), rotvec_to_matrix(v), matrix_to_rotvec(m),
        quat_to_rotvec(q), rotvec_to_quat(v), so3_left_jacobian(v), so3_right_jacobian(v),
        euler_to_matrix(v, order), matrix_to_euler(m, order), euler_to_quat(v, order),
        quat_to_euler(q, order),
        euler_compatible(v, v[::-1], order), rotation_error(m, m), make_transform(m, v), rpy_to_matrix(v),
        transform_inverse(make_transform(m, v)), twist_angle(q, [1.0, 2.0, 3.0]),
        *swing_twist(q, [0.0, 1.0, 0.0]), quat_make_continuous(np.stack([q, -q, q])),
    ]
    for out in outputs:
        assert np.all(np.isfinite(out))


def test_no_nan_for_zero_tiny_and_huge_vectors():
    """Zero, subnormal and huge vectors and quaternions still give finite rotations."""
    for scale in [0.0, 5e-324, 1e-300, 1e-170, 1e150, 1e300]:
        v = np.array([1.0, -2.0, 0.5]) * scale
        q = np.array([0.3, 1.0, -2.0, 0.5]) * scale
        for out in [rotvec_to_matrix(v), rotvec_to_quat(v), so3_left_jacobian(v), quat_to_matrix(q),
                    quat_normalize(q), quat_rotate(q, v), axis_angle_to_matrix(v, 1.0), quat_to_rotvec(q),
                    *swing_twist(q, v + 1.0), twist_angle(q, v + 1.0)]:
            assert np.all(np.isfinite(out)), scale
        assert_rotation(rotvec_to_matrix(v), tol=1e-12)


@HYPO
@given(q=arrays(np.float64, (4,), elements=st.floats(-1.0, 1.0)).filter(lambda q: np.linalg.norm(q) > 1e-3))
def test_hypothesis_quat_round_trips(q):
    """quat -> matrix -> quat and quat -> rotvec -> quat return the normalised input up to sign."""
    u = q / np.linalg.norm(q)
    assert quat_close(matrix_to_quat(quat_to_matrix(q)), u) < TIGHT
    assert quat_close(rotvec_to_quat(quat_to_rotvec(q)), u) < TIGHT
    axis, angle = matrix_to_axis_angle(quat_to_matrix(q))
    assert quat_close(rotvec_to_quat(axis * angle), u) < TIGHT


@HYPO
@given(angles=arrays(np.float64, (3,), elements=st.floats(-10.0, 10.0)), order=st.sampled_from(EULER_ORDERS))
def test_hypothesis_euler_round_trip(angles, order):
    """Euler -> matrix -> Euler and Euler -> quat -> Euler reproduce the rotation for any angles."""
    R = euler_to_matrix(angles, order)
    np.testing.assert_allclose(euler_to_matrix(matrix_to_euler(R, order), order), R, atol=TIGHT)
    np.testing.assert_allclose(euler_to_matrix(quat_to_euler(euler_to_quat(angles, order), order), order),
                               R, atol=TIGHT)
