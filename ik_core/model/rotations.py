# SPDX-License-Identifier: GPL-3.0-or-later
"""Batched rotations in pure numpy: quaternions, matrices, axis-angle, rotation vectors, Euler."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import InvalidInputError
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
from .euler import checked_array as _array
from .rotation_kernels import (
    axis_angle_to_quat_unchecked,
    matrix_to_quat_unchecked,
    matrix_to_rotvec_unchecked,
    quat_components,
    quat_conjugate_unchecked,
    quat_multiply_unchecked,
    quat_normalize_unchecked,
    quat_to_axis_angle_unchecked,
    quat_to_matrix_unchecked,
    rotation_angle_unchecked,
    rotvec_to_matrix_unchecked,
    unit_and_norm,
)

__all__ = [
    "EULER_ORDERS", "axis_angle_to_matrix", "euler_compatible", "euler_to_matrix", "euler_to_quat",
    "make_transform", "matrix_to_axis_angle", "matrix_to_euler", "matrix_to_quat",
    "matrix_to_rotvec", "quat_conjugate", "quat_make_continuous", "quat_multiply",
    "quat_normalize", "quat_rotate", "quat_slerp", "quat_to_euler", "quat_to_matrix", "quat_to_rotvec",
    "rotation_error", "rotation_part", "rotvec_to_matrix", "rotvec_to_quat", "rpy_to_matrix", "skew",
    "so3_left_jacobian", "so3_right_jacobian", "swing_twist", "transform_inverse", "twist_angle",
]

FloatArray = NDArray[np.float64]

# Below this angle (theta - sin theta) / theta loses digits to cancellation; the series does not.
_SERIES_THRESHOLD = 0.1
# A twist part this short (for a unit quaternion) is rounding noise of a 180 degree swing.
_TWIST_EPS = 1e-12
# Blender's default axis for a zero rotation, so round trips through Blender stay unchanged.
_DEFAULT_AXIS = (0.0, 1.0, 0.0)



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
    return quat_multiply_unchecked(_array(a, "a", (4,)), _array(b, "b", (4,)))


def quat_conjugate(q: ArrayLike) -> FloatArray:
    """Conjugate (the inverse, for unit quaternions).

    Args:
        q: (..., 4) quaternions (w, x, y, z).

    Returns:
        (..., 4) quaternions (w, -x, -y, -z).

    Raises:
        InvalidInputError: If the shape is wrong or an entry is not finite.
    """
    return quat_conjugate_unchecked(_array(q, "q", (4,)))


def quat_normalize(q: ArrayLike) -> FloatArray:
    """Scale quaternions to unit length; zero quaternions become the identity (1, 0, 0, 0).

    Args:
        q: (..., 4) quaternions (w, x, y, z).

    Returns:
        (..., 4) unit quaternions, sign unchanged.

    Raises:
        InvalidInputError: If the shape is wrong or an entry is not finite.
    """
    return quat_normalize_unchecked(_array(q, "q", (4,)))


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
    q = quat_normalize_unchecked(_array(q, "q", (4,)))
    v = _array(v, "v", (3,))
    t = 2.0 * np.cross(q[..., 1:], v)
    return v + q[..., :1] * t + np.cross(q[..., 1:], t)


def rotation_part(M: ArrayLike) -> FloatArray:
    """(..., 3, 3) rotations of (..., 4, 4) matrices whose columns may carry scale (columns normalised).

    A column of zero length (a zero scale) stays zero rather than becoming NaN.
    """
    R = np.asarray(M, dtype=float)[..., :3, :3]
    norms = np.linalg.norm(R, axis=-2, keepdims=True)
    return R / np.where(norms > 1e-12, norms, 1.0)


def quat_slerp(a: ArrayLike, b: ArrayLike, w: ArrayLike) -> FloatArray:
    """Spherical interpolation of unit quaternions along the shorter arc.

    Args:
        a: (N, 4) start quaternions (w, x, y, z), unit length.
        b: (N, 4) end quaternions, unit length (``-b`` is taken where it is the shorter way).
        w: (N,) or scalar fraction of the way from ``a`` to ``b`` (0 gives ``a``).

    Returns:
        (N, 4) unit quaternions.

    Raises:
        InvalidInputError: If a shape is wrong or an entry is not finite.
    """
    a = _array(a, "a", (4,))
    b = _array(b, "b", (4,))
    w = np.broadcast_to(np.asarray(w, dtype=float), a.shape[:-1])
    dot = np.sum(a * b, axis=-1)
    b = np.where(dot[..., None] < 0, -b, b)
    angle = np.arccos(np.clip(np.abs(dot), -1.0, 1.0))
    s = np.sin(angle)
    small = s < 1e-9  # nearly equal: a linear blend is exact to rounding
    safe = np.where(small, 1.0, s)
    wa = np.where(small, 1.0 - w, np.sin((1.0 - w) * angle) / safe)
    wb = np.where(small, w, np.sin(w * angle) / safe)
    q = wa[..., None] * a + wb[..., None] * b
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def quat_to_matrix(q: ArrayLike) -> FloatArray:
    """Rotation matrices of quaternions (normalised inside; zero quaternion -> identity).

    Args:
        q: (..., 4) quaternions (w, x, y, z).

    Returns:
        (..., 3, 3) rotation matrices acting on column vectors.

    Raises:
        InvalidInputError: If the shape is wrong or an entry is not finite.
    """
    return quat_to_matrix_unchecked(quat_normalize_unchecked(_array(q, "q", (4,))))


def matrix_to_quat(R: ArrayLike) -> FloatArray:
    """Unit quaternions of rotation matrices (Shepperd's method, exact at 0 and pi).

    Args:
        R: (..., 3, 3) rotation matrices.

    Returns:
        (..., 4) unit quaternions (w, x, y, z) with w >= 0.

    Raises:
        InvalidInputError: If the shape is wrong or an entry is not finite.
    """
    return matrix_to_quat_unchecked(_array(R, "R", (3, 3)))


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
    u = unit_and_norm(_array(axis, "axis", (3,)))[0]
    return quat_to_matrix_unchecked(axis_angle_to_quat_unchecked(u, _array(angle, "angle", ())))


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
    u, angle = quat_to_axis_angle_unchecked(matrix_to_quat_unchecked(_array(R, "R", (3, 3))))
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
    u, n = unit_and_norm(_array(v, "v", (3,)))
    return axis_angle_to_quat_unchecked(u, n)


def rotvec_to_matrix(v: ArrayLike) -> FloatArray:
    """Rotation matrices of rotation vectors (the SO(3) exponential map).

    Args:
        v: (..., 3) rotation vectors [rad].

    Returns:
        (..., 3, 3) rotation matrices.

    Raises:
        InvalidInputError: If the shape is wrong or an entry is not finite.
    """
    return rotvec_to_matrix_unchecked(_array(v, "v", (3,)))


def quat_to_rotvec(q: ArrayLike) -> FloatArray:
    """Rotation vectors of quaternions (any non-zero length; zero -> zero vector).

    Args:
        q: (..., 4) quaternions (w, x, y, z).

    Returns:
        (..., 3) rotation vectors [rad] with norm in [0, pi].

    Raises:
        InvalidInputError: If the shape is wrong or an entry is not finite.
    """
    u, angle = quat_to_axis_angle_unchecked(_array(q, "q", (4,)))
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
    return matrix_to_rotvec_unchecked(_array(R, "R", (3, 3)))


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
    return matrix_to_euler(quat_to_matrix_unchecked(quat_normalize_unchecked(_array(q, "q", (4,)))), order)


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
    return rotation_angle_unchecked(a, b)


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
    x, y, z = quat_components(v)
    o = np.zeros_like(x)
    return np.stack([o, -z, y, z, o, -x, -y, x, o], axis=-1).reshape(v.shape[:-1] + (3, 3))


def _so3_jacobian(v: ArrayLike, sign: float) -> FloatArray:
    u, th = unit_and_norm(_array(v, "v", (3,)))
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
    q = quat_normalize_unchecked(_array(q, "q", (4,)))
    a, n = unit_and_norm(_array(twist_axis, "twist_axis", (3,)))
    if np.any(n == 0.0):
        raise InvalidInputError("twist_axis must be non-zero")
    proj = np.sum(q[..., 1:] * a, axis=-1)
    t = np.concatenate([np.broadcast_to(q[..., :1], proj.shape + (1,)), proj[..., None] * a], axis=-1)
    t, tn = unit_and_norm(t)
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
    return quat_multiply_unchecked(q, quat_conjugate_unchecked(twist)), twist


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
