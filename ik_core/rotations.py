# SPDX-License-Identifier: GPL-3.0-or-later
"""Batched rotations in pure numpy: quaternions, matrices, axis-angle, rotation vectors, Euler."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import InvalidInputError
from .euler import (
    EULER_ORDERS,
    euler_compatible,
    euler_to_matrix,
    euler_to_quat,
    make_transform,
    matrix_to_euler,
    quat_make_continuous,
    rpy_to_matrix,
    transform_inverse,
)
from .euler import _checked as _array

__all__ = [
    "EULER_ORDERS", "axis_angle_to_matrix", "euler_compatible", "euler_to_matrix", "euler_to_quat",
    "make_transform", "matrix_to_axis_angle", "matrix_to_euler", "matrix_to_quat",
    "matrix_to_rotvec", "quat_conjugate", "quat_make_continuous", "quat_multiply",
    "quat_normalize", "quat_rotate", "quat_to_euler", "quat_to_matrix", "quat_to_rotvec",
    "rotation_error", "rotvec_to_matrix", "rotvec_to_quat", "rpy_to_matrix", "skew",
    "so3_left_jacobian", "so3_right_jacobian", "swing_twist", "transform_inverse", "twist_angle",
]

FloatArray = NDArray[np.float64]

# Below this angle (theta - sin theta) / theta loses digits to cancellation; the series does not.
_SERIES_THRESHOLD = 0.1
# A twist part this short (for a unit quaternion) is rounding noise of a 180 degree swing.
_TWIST_EPS = 1e-12
# Blender's default axis for a zero rotation, so round trips through Blender stay unchanged.
_DEFAULT_AXIS = (0.0, 1.0, 0.0)


def _unit(v: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Split ``v`` into direction and norm along the last axis; zero vectors give zero directions."""
    # hypot neither overflows for huge entries nor underflows to 0 for tiny ones (sum of squares does).
    n = np.hypot.reduce(v, axis=-1)
    return v / np.where(n > 0.0, n, 1.0)[..., None], n


def _components(a: FloatArray) -> tuple[FloatArray, ...]:
    # Plain indexing: moveaxis costs more than the arithmetic for single rotations.
    return tuple(a[..., n] for n in range(a.shape[-1]))


def _qmul(a: FloatArray, b: FloatArray) -> FloatArray:
    aw, ax, ay, az = _components(a)
    bw, bx, by, bz = _components(b)
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = aw * bw - ax * bx - ay * by - az * bz
    out[..., 1] = aw * bx + ax * bw + ay * bz - az * by
    out[..., 2] = aw * by - ax * bz + ay * bw + az * bx
    out[..., 3] = aw * bz + ax * by - ay * bx + az * bw
    return out


def _qconj(q: FloatArray) -> FloatArray:
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def _qnormalize(q: FloatArray) -> FloatArray:
    u, n = _unit(q)
    return np.where((n > 0.0)[..., None], u, np.array([1.0, 0.0, 0.0, 0.0]))


def _q2m(q: FloatArray) -> FloatArray:
    """Matrix of a unit quaternion (or of (w, 0, 0, 0), which gives the identity for any w)."""
    w, x, y, z = _components(q)
    xx, yy, zz, xy, xz, yz, wx, wy, wz = x * x, y * y, z * z, x * y, x * z, y * z, w * x, w * y, w * z
    R = np.empty(np.shape(w) + (3, 3))
    R[..., 0, 0], R[..., 0, 1], R[..., 0, 2] = 1.0 - 2.0 * (yy + zz), 2.0 * (xy - wz), 2.0 * (xz + wy)
    R[..., 1, 0], R[..., 1, 1], R[..., 1, 2] = 2.0 * (xy + wz), 1.0 - 2.0 * (xx + zz), 2.0 * (yz - wx)
    R[..., 2, 0], R[..., 2, 1], R[..., 2, 2] = 2.0 * (xz - wy), 2.0 * (yz + wx), 1.0 - 2.0 * (xx + yy)
    return R


def _m2q(R: FloatArray) -> FloatArray:
    """Shepperd's method, branch-free: build all four candidates, keep the best conditioned one."""
    m00, m01, m02 = R[..., 0, 0], R[..., 0, 1], R[..., 0, 2]
    m10, m11, m12 = R[..., 1, 0], R[..., 1, 1], R[..., 1, 2]
    m20, m21, m22 = R[..., 2, 0], R[..., 2, 1], R[..., 2, 2]
    tr = m00 + m11 + m22
    d21, d02, d10 = m21 - m12, m02 - m20, m10 - m01
    s01, s02, s12 = m01 + m10, m02 + m20, m12 + m21
    cand = np.empty(tr.shape + (4, 4))
    cand[..., 0, 0], cand[..., 0, 1], cand[..., 0, 2], cand[..., 0, 3] = d21, 1.0 + m00 - m11 - m22, s01, s02
    cand[..., 1, 0], cand[..., 1, 1], cand[..., 1, 2], cand[..., 1, 3] = d02, s01, 1.0 - m00 + m11 - m22, s12
    cand[..., 2, 0], cand[..., 2, 1], cand[..., 2, 2], cand[..., 2, 3] = d10, s02, s12, 1.0 - m00 - m11 + m22
    cand[..., 3, 0], cand[..., 3, 1], cand[..., 3, 2], cand[..., 3, 3] = 1.0 + tr, d21, d02, d10
    # The chosen candidate's largest entry is >= 1 for any finite matrix, so the norm is never 0.
    diag = np.empty(tr.shape + (4,))
    diag[..., 0], diag[..., 1], diag[..., 2], diag[..., 3] = m00, m11, m22, tr
    choice = np.argmax(diag, axis=-1).ravel()
    # take_along_axis's pick, by flat fancy indexing (a fraction of its per-call overhead).
    q = cand.reshape(-1, 4, 4)[np.arange(choice.size), choice].reshape(tr.shape + (4,))
    q = _unit(q)[0]
    return np.where(q[..., :1] < 0.0, -q, q)


def _aa2q(u: FloatArray, angle: FloatArray) -> FloatArray:
    """Quaternion of a rotation by ``angle`` about unit (or zero) ``u``."""
    half = 0.5 * np.asarray(angle)
    xyz = np.sin(half)[..., None] * u
    q = np.empty(xyz.shape[:-1] + (4,))
    q[..., 0] = np.cos(half)
    q[..., 1:] = xyz
    return q


def _q2aa(q: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Axis (unit, or zero for no rotation) and angle in [0, pi] of a quaternion of any length."""
    xyz = np.where(q[..., :1] < 0.0, -q[..., 1:], q[..., 1:])
    u, n = _unit(xyz)
    # atan2 of the half-angle sine and cosine is exact at both ends, unlike arccos or arcsin.
    return u, 2.0 * np.arctan2(n, np.abs(q[..., 0]))


def _rotvec_to_matrix(v: FloatArray) -> FloatArray:
    """Unvalidated :func:`rotvec_to_matrix` for hot paths whose input is already checked."""
    return _q2m(_aa2q(*_unit(v)))


def _matrix_to_rotvec(R: FloatArray) -> FloatArray:
    """Unvalidated :func:`matrix_to_rotvec` for hot paths whose input is already checked."""
    u, angle = _q2aa(_m2q(R))
    return u * angle[..., None]


def _rotation_angle(R_a: FloatArray, R_b: FloatArray) -> FloatArray:
    """Unvalidated :func:`rotation_error` for hot paths whose input is already checked."""
    return _q2aa(_m2q(np.swapaxes(R_a, -1, -2) @ R_b))[1]


def quat_multiply(a: ArrayLike, b: ArrayLike) -> FloatArray:
    """Hamilton product ``a * b`` (apply ``b`` first, then ``a``).

    Args:
        a: (..., 4) quaternions (w, x, y, z).
        b: (..., 4) quaternions (w, x, y, z); broadcast against ``a``.

    Returns:
        (..., 4) product quaternions.

    Raises:
        InvalidInputError: If a shape is wrong or an entry is not finite.
    """
    return _qmul(_array(a, "a", (4,)), _array(b, "b", (4,)))


def quat_conjugate(q: ArrayLike) -> FloatArray:
    """Conjugate (the inverse, for unit quaternions).

    Args:
        q: (..., 4) quaternions (w, x, y, z).

    Returns:
        (..., 4) quaternions (w, -x, -y, -z).

    Raises:
        InvalidInputError: If the shape is wrong or an entry is not finite.
    """
    return _qconj(_array(q, "q", (4,)))


def quat_normalize(q: ArrayLike) -> FloatArray:
    """Scale quaternions to unit length; zero quaternions become the identity (1, 0, 0, 0).

    Args:
        q: (..., 4) quaternions (w, x, y, z).

    Returns:
        (..., 4) unit quaternions, sign unchanged.

    Raises:
        InvalidInputError: If the shape is wrong or an entry is not finite.
    """
    return _qnormalize(_array(q, "q", (4,)))


def quat_rotate(q: ArrayLike, v: ArrayLike) -> FloatArray:
    """Rotate vectors by quaternions (normalised inside).

    Args:
        q: (..., 4) quaternions (w, x, y, z).
        v: (..., 3) vectors; broadcast against ``q``.

    Returns:
        (..., 3) rotated vectors ``R(q) @ v``.

    Raises:
        InvalidInputError: If a shape is wrong or an entry is not finite.
    """
    q = _qnormalize(_array(q, "q", (4,)))
    v = _array(v, "v", (3,))
    t = 2.0 * np.cross(q[..., 1:], v)
    return v + q[..., :1] * t + np.cross(q[..., 1:], t)


def quat_to_matrix(q: ArrayLike) -> FloatArray:
    """Rotation matrices of quaternions (normalised inside; zero quaternion -> identity).

    Args:
        q: (..., 4) quaternions (w, x, y, z).

    Returns:
        (..., 3, 3) rotation matrices acting on column vectors.

    Raises:
        InvalidInputError: If the shape is wrong or an entry is not finite.
    """
    return _q2m(_qnormalize(_array(q, "q", (4,))))


def matrix_to_quat(R: ArrayLike) -> FloatArray:
    """Unit quaternions of rotation matrices (Shepperd's method, exact at 0 and pi).

    Args:
        R: (..., 3, 3) rotation matrices.

    Returns:
        (..., 4) unit quaternions (w, x, y, z) with w >= 0.

    Raises:
        InvalidInputError: If the shape is wrong or an entry is not finite.
    """
    return _m2q(_array(R, "R", (3, 3)))


def axis_angle_to_matrix(axis: ArrayLike, angle: ArrayLike) -> FloatArray:
    """Rotation matrices from axes (normalised inside; zero axis -> identity) and angles.

    Args:
        axis: (..., 3) rotation axes, any non-negative length.
        angle: (...) angles [rad], right-handed about ``axis``; broadcast against it.

    Returns:
        (..., 3, 3) rotation matrices.

    Raises:
        InvalidInputError: If a shape is wrong or an entry is not finite.
    """
    u = _unit(_array(axis, "axis", (3,)))[0]
    return _q2m(_aa2q(u, _array(angle, "angle", ())))


def matrix_to_axis_angle(R: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Axis-angle of rotation matrices, via the quaternion so it stays exact near pi.

    Args:
        R: (..., 3, 3) rotation matrices.

    Returns:
        axis: (..., 3) unit axes; (0, 1, 0) (Blender's default) where the angle is 0.
        angle: (...) angles [rad] in [0, pi].

    Raises:
        InvalidInputError: If the shape is wrong or an entry is not finite.
    """
    u, angle = _q2aa(_m2q(_array(R, "R", (3, 3))))
    zero = ~np.any(u != 0.0, axis=-1)
    return np.where(zero[..., None], np.array(_DEFAULT_AXIS), u), angle


def rotvec_to_quat(v: ArrayLike) -> FloatArray:
    """Unit quaternions of rotation vectors (axis times angle).

    Args:
        v: (..., 3) rotation vectors [rad].

    Returns:
        (..., 4) unit quaternions (w, x, y, z); w < 0 when |v| > pi (continuous in ``v``).

    Raises:
        InvalidInputError: If the shape is wrong or an entry is not finite.
    """
    u, n = _unit(_array(v, "v", (3,)))
    return _aa2q(u, n)


def rotvec_to_matrix(v: ArrayLike) -> FloatArray:
    """Rotation matrices of rotation vectors (the SO(3) exponential map).

    Args:
        v: (..., 3) rotation vectors [rad].

    Returns:
        (..., 3, 3) rotation matrices.

    Raises:
        InvalidInputError: If the shape is wrong or an entry is not finite.
    """
    return _rotvec_to_matrix(_array(v, "v", (3,)))


def quat_to_rotvec(q: ArrayLike) -> FloatArray:
    """Rotation vectors of quaternions (any non-zero length; zero -> zero vector).

    Args:
        q: (..., 4) quaternions (w, x, y, z).

    Returns:
        (..., 3) rotation vectors [rad] with norm in [0, pi].

    Raises:
        InvalidInputError: If the shape is wrong or an entry is not finite.
    """
    u, angle = _q2aa(_array(q, "q", (4,)))
    return u * angle[..., None]


def matrix_to_rotvec(R: ArrayLike) -> FloatArray:
    """Rotation vectors of rotation matrices (the SO(3) logarithm).

    Args:
        R: (..., 3, 3) rotation matrices.

    Returns:
        (..., 3) rotation vectors [rad] with norm in [0, pi].

    Raises:
        InvalidInputError: If the shape is wrong or an entry is not finite.
    """
    return _matrix_to_rotvec(_array(R, "R", (3, 3)))


def quat_to_euler(q: ArrayLike, order: str = "XYZ") -> FloatArray:
    """Blender Euler angles of quaternions (normalised inside), exact at gimbal lock.

    Args:
        q: (..., 4) quaternions (w, x, y, z).
        order: One of 'XYZ', 'XZY', 'YXZ', 'YZX', 'ZXY', 'ZYX'.

    Returns:
        (..., 3) angles [rad] stored as (x, y, z), as :func:`matrix_to_euler` returns them.

    Raises:
        InvalidInputError: If the shape or order is wrong or an entry is not finite.
    """
    return matrix_to_euler(_q2m(_qnormalize(_array(q, "q", (4,)))), order)


def rotation_error(R_a: ArrayLike, R_b: ArrayLike) -> FloatArray:
    """Geodesic angle between rotations, accurate to ~1e-16 rad even for tiny angles.

    Args:
        R_a: (..., 3, 3) rotation matrices.
        R_b: (..., 3, 3) rotation matrices; broadcast against ``R_a``.

    Returns:
        (...) angles [rad] in [0, pi] of ``R_a^T @ R_b``.

    Raises:
        InvalidInputError: If a shape is wrong or an entry is not finite.
    """
    a = _array(R_a, "R_a", (3, 3))
    b = _array(R_b, "R_b", (3, 3))
    # arccos((tr - 1) / 2) would be flat at 0 and lose half the digits below 1e-8 rad.
    return _rotation_angle(a, b)


def skew(v: ArrayLike) -> FloatArray:
    """Cross-product matrices: ``skew(v) @ w == cross(v, w)``.

    Args:
        v: (..., 3) vectors.

    Returns:
        (..., 3, 3) skew-symmetric matrices.

    Raises:
        InvalidInputError: If the shape is wrong or an entry is not finite.
    """
    return _skew(_array(v, "v", (3,)))


def _skew(v: FloatArray) -> FloatArray:
    x, y, z = _components(v)
    o = np.zeros_like(x)
    return np.stack([o, -z, y, z, o, -x, -y, x, o], axis=-1).reshape(v.shape[:-1] + (3, 3))


def _so3_jacobian(v: ArrayLike, sign: float) -> FloatArray:
    u, th = _unit(_array(v, "v", (3,)))
    K = _skew(u)
    safe = np.where(th > 0.0, th, 1.0)
    # Written with the unit axis, so huge |v| cannot overflow K @ K.
    a1 = 2.0 * np.sin(0.5 * th) ** 2 / safe  # (1 - cos th) / th, without cancellation
    t2 = np.minimum(th, _SERIES_THRESHOLD) ** 2  # clipped: only used below the threshold
    series = t2 * (1 / 6 - t2 * (1 / 120 - t2 * (1 / 5040 - t2 * (1 / 362880 - t2 / 39916800))))
    a2 = np.where(th < _SERIES_THRESHOLD, series, 1.0 - np.sin(th) / safe)  # 1 - sin th / th
    return np.eye(3) + sign * a1[..., None, None] * K + a2[..., None, None] * (K @ K)


def so3_left_jacobian(v: ArrayLike) -> FloatArray:
    """Left Jacobian of the SO(3) exponential: ``d/dt exp(v) = skew(J_l(v) @ dv/dt) @ exp(v)``.

    Args:
        v: (..., 3) rotation vectors [rad].

    Returns:
        (..., 3, 3) Jacobians; the identity at v = 0.

    Raises:
        InvalidInputError: If the shape is wrong or an entry is not finite.
    """
    return _so3_jacobian(v, 1.0)


def so3_right_jacobian(v: ArrayLike) -> FloatArray:
    """Right Jacobian of the SO(3) exponential: ``d/dt exp(v) = exp(v) @ skew(J_r(v) @ dv/dt)``.

    Args:
        v: (..., 3) rotation vectors [rad].

    Returns:
        (..., 3, 3) Jacobians, equal to ``so3_left_jacobian(-v)``.

    Raises:
        InvalidInputError: If the shape is wrong or an entry is not finite.
    """
    return _so3_jacobian(v, -1.0)


def _twist_parts(q: ArrayLike, twist_axis: ArrayLike) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Unit q, unit twist axis, and the unit twist quaternion (identity where degenerate)."""
    q = _qnormalize(_array(q, "q", (4,)))
    a, n = _unit(_array(twist_axis, "twist_axis", (3,)))
    if np.any(n == 0.0):
        raise InvalidInputError("twist_axis must be non-zero")
    proj = np.sum(q[..., 1:] * a, axis=-1)
    t = np.concatenate([np.broadcast_to(q[..., :1], proj.shape + (1,)), proj[..., None] * a], axis=-1)
    t, tn = _unit(t)
    # A 180 degree swing leaves (w, proj) as rounding noise; any twist is then valid, pick none.
    t = np.where((tn < _TWIST_EPS)[..., None], np.array([1.0, 0.0, 0.0, 0.0]), t)
    return q, a, np.where(t[..., :1] < 0.0, -t, t)


def swing_twist(q: ArrayLike, twist_axis: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Split rotations into a swing and a twist about ``twist_axis``: ``q = swing * twist``.

    The twist is applied first (about ``twist_axis``), then the swing, whose axis is
    perpendicular to ``twist_axis``. For a 180 degree swing the split is not unique and the
    twist is the identity.

    Args:
        q: (..., 4) quaternions (w, x, y, z), normalised inside.
        twist_axis: (..., 3) or (3,) non-zero twist axes, normalised inside.

    Returns:
        swing: (..., 4) unit quaternions.
        twist: (..., 4) unit quaternions about ``twist_axis`` with w >= 0.

    Raises:
        InvalidInputError: If a shape is wrong, an entry is not finite, or an axis is zero.
    """
    q, _, twist = _twist_parts(q, twist_axis)
    return _qmul(q, _qconj(twist)), twist


def twist_angle(q: ArrayLike, axis: ArrayLike) -> FloatArray:
    """Signed angle of the twist part of ``q`` about ``axis`` (see :func:`swing_twist`).

    Args:
        q: (..., 4) quaternions (w, x, y, z).
        axis: (..., 3) or (3,) non-zero axes.

    Returns:
        (...) angles [rad] in (-pi, pi], right-handed about ``axis``; 0 where degenerate.

    Raises:
        InvalidInputError: If a shape is wrong, an entry is not finite, or an axis is zero.
    """
    _, a, twist = _twist_parts(q, axis)
    angle = 2.0 * np.arctan2(np.sum(twist[..., 1:] * a, axis=-1), twist[..., 0])
    return np.where(angle <= -np.pi, angle + 2.0 * np.pi, angle)
