# SPDX-License-Identifier: GPL-3.0-or-later
"""Euler angles (Blender's six orders), URDF roll-pitch-yaw and rigid transforms, keyframe continuity."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import InvalidInputError, require_finite

__all__ = [
    "EULER_ORDERS", "euler_compatible", "euler_to_matrix", "euler_to_quat", "make_transform",
    "matrix_to_euler", "quat_make_continuous", "rpy_to_matrix", "transform_inverse",
]

FloatArray = NDArray[np.float64]

EULER_ORDERS: tuple[str, ...] = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")
AXIS_INDICES = {o: tuple("XYZ".index(c) for c in o) for o in EULER_ORDERS}
# Below this cos(middle angle) the first and last angles are coupled (gimbal lock); the extraction
# below stays exact for any split, so the threshold only picks the tidy one (last angle 0).
_GIMBAL_EPS = 1e-14


def checked_array(x: ArrayLike, name: str, tail: tuple[int, ...]) -> FloatArray:
    """Convert ``x`` to float64 and check its trailing shape and finiteness."""
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be a real numeric array ({exc})") from exc
    if a.ndim < len(tail) or a.shape[a.ndim - len(tail):] != tail:
        want = ", ".join(["..."] + [str(n) for n in tail])
        raise InvalidInputError(f"{name} must have shape ({want}), got {a.shape}")
    require_finite(name, a)
    return a


def _order_axes(order: str) -> tuple[int, int, int, float]:
    """Axis indices (first, second, third applied) and parity (+1 cyclic, -1 otherwise)."""
    if not isinstance(order, str) or order not in EULER_ORDERS:
        raise InvalidInputError(
            f"unknown Euler order {order!r}; valid orders: {', '.join(repr(o) for o in EULER_ORDERS)}"
        )
    i, j, k = ("XYZ".index(c) for c in order)
    return i, j, k, 1.0 if (j - i) % 3 == 1 else -1.0


def _axis_matrix(axis: int, angle: FloatArray) -> FloatArray:
    """(..., 3, 3) active rotations by ``angle`` about coordinate axis ``axis``."""
    c, s = np.cos(angle), np.sin(angle)
    a, b = (axis + 1) % 3, (axis + 2) % 3
    R = np.zeros(np.shape(angle) + (3, 3))
    R[..., axis, axis] = 1.0
    R[..., a, a] = c
    R[..., b, b] = c
    R[..., a, b] = -s
    R[..., b, a] = s
    return R


def euler_to_matrix(angles: ArrayLike, order: str = "XYZ") -> FloatArray:
    """Rotation matrices of Blender Euler angles (like ``mathutils.Euler.to_matrix``).

    Order 'XYZ' rotates about world X first, then world Y, then world Z:
    ``R = Rz(z) @ Ry(y) @ Rx(x)``; the other orders permute the factors the same way.

    Args:
        angles: (..., 3) angles [rad] stored as (x, y, z) whatever the order.
        order: One of 'XYZ', 'XZY', 'YXZ', 'YZX', 'ZXY', 'ZYX'.

    Returns:
        (..., 3, 3) rotation matrices.

    Raises:
        InvalidInputError: If the shape or order is wrong or an entry is not finite.
    """
    _order_axes(order)
    return euler_to_matrix_unchecked(checked_array(angles, "angles", (3,)), order)


def euler_to_matrix_unchecked(a: FloatArray, order: str) -> FloatArray:
    """Unvalidated :func:`euler_to_matrix` for hot paths whose input is already checked."""
    i, j, k = AXIS_INDICES[order]
    return _axis_matrix(k, a[..., k]) @ _axis_matrix(j, a[..., j]) @ _axis_matrix(i, a[..., i])


def euler_to_quat(angles: ArrayLike, order: str = "XYZ") -> FloatArray:
    """Unit quaternions of Blender Euler angles (like ``mathutils.Euler.to_quaternion``).

    Args:
        angles: (..., 3) angles [rad] stored as (x, y, z).
        order: One of 'XYZ', 'XZY', 'YXZ', 'YZX', 'ZXY', 'ZYX'.

    Returns:
        (..., 4) unit quaternions (w, x, y, z), continuous in ``angles`` (w may be negative).

    Raises:
        InvalidInputError: If the shape or order is wrong or an entry is not finite.
    """
    i, j, k, p = _order_axes(order)
    half = 0.5 * checked_array(angles, "angles", (3,))
    c, s = np.cos(half), np.sin(half)
    ci, cj, ck, si, sj, sk = c[..., i], c[..., j], c[..., k], s[..., i], s[..., j], s[..., k]
    # Expanded q_k * q_j * q_i; the parity sign carries e_j x e_i = -p e_k for every order.
    q = np.empty(c.shape[:-1] + (4,))
    q[..., 0] = ck * cj * ci + p * sk * sj * si
    q[..., 1 + i] = ck * cj * si - p * sk * sj * ci
    q[..., 1 + j] = ck * sj * ci + p * sk * cj * si
    q[..., 1 + k] = sk * cj * ci - p * ck * sj * si
    return q


def matrix_to_euler(R: ArrayLike, order: str = "XYZ") -> FloatArray:
    """Blender Euler angles of rotation matrices, exact also at and near gimbal lock.

    The last rotation is read first and undone, so the other two angles come from
    well-conditioned entries; at gimbal lock the last angle is set to 0.

    Args:
        R: (..., 3, 3) rotation matrices.
        order: One of 'XYZ', 'XZY', 'YXZ', 'YZX', 'ZXY', 'ZYX'.

    Returns:
        (..., 3) angles [rad] stored as (x, y, z); the middle axis's angle lies in
        [-pi/2, pi/2], the others in [-pi, pi].

    Raises:
        InvalidInputError: If the shape or order is wrong or an entry is not finite.
    """
    _order_axes(order)
    return matrix_to_euler_unchecked(checked_array(R, "R", (3, 3)), order)


def matrix_to_euler_unchecked(R: FloatArray, order: str) -> FloatArray:
    """Unvalidated :func:`matrix_to_euler` for hot paths whose input is already checked."""
    i, j, k = AXIS_INDICES[order]
    p = 1.0 if (j - i) % 3 == 1 else -1.0
    Rii, Rji = R[..., i, i], R[..., j, i]
    lock = np.hypot(Rii, Rji) < _GIMBAL_EPS
    tk = np.where(lock, 0.0, np.arctan2(p * Rji, Rii))
    ck, sk = np.cos(tk), np.sin(tk)
    # Rows i and j of N = Rk(tk)^T @ R; row k is unchanged. N is Rj @ Ri up to rounding.
    n_ii = ck * Rii + p * sk * Rji
    n_jj = ck * R[..., j, j] - p * sk * R[..., i, j]
    n_jk = ck * R[..., j, k] - p * sk * R[..., i, k]
    out = np.empty(R.shape[:-1])
    out[..., i] = np.arctan2(-p * n_jk, n_jj)
    out[..., j] = np.arctan2(-p * R[..., k, i], n_ii)
    out[..., k] = tk
    return out


def euler_compatible(angles: ArrayLike, reference: ArrayLike, order: str = "XYZ") -> FloatArray:
    """The Euler triple for the same rotation as ``angles`` closest to ``reference``.

    Like ``mathutils.Euler.make_compatible``, for continuity of Euler keyframes: each angle
    may move by multiples of 2 pi, the alternative decomposition (first + pi, pi - middle,
    last + pi) is also tried, and at gimbal lock the coupled angles are shared out to match
    the reference. The closest candidate in Euclidean distance wins.

    Args:
        angles: (..., 3) angles [rad] stored as (x, y, z).
        reference: (..., 3) reference angles [rad], e.g. the previous frame's; broadcast.
        order: One of 'XYZ', 'XZY', 'YXZ', 'YZX', 'ZXY', 'ZYX'.

    Returns:
        (..., 3) angles [rad] representing the same rotation as ``angles``.

    Raises:
        InvalidInputError: If a shape or the order is wrong or an entry is not finite.
    """
    i, j, k, p = _order_axes(order)
    a = checked_array(angles, "angles", (3,))
    r = checked_array(reference, "reference", (3,))
    a, r = np.broadcast_arrays(a, r)
    alt = a.copy()
    alt[..., i] += np.pi
    alt[..., j] = np.pi - a[..., j]
    alt[..., k] += np.pi
    two_pi = 2.0 * np.pi
    cand = np.stack([a, alt])
    cand = cand + two_pi * np.round((r - cand) / two_pi)
    # At gimbal lock only angle_i - m * angle_k matters; move along that line towards r.
    lock = np.abs(np.cos(cand[..., j])) < _GIMBAL_EPS
    m = p * np.where(np.sin(cand[..., j]) < 0.0, -1.0, 1.0)
    t = np.where(lock, 0.5 * ((r[..., i] - cand[..., i]) + m * (r[..., k] - cand[..., k])), 0.0)
    cand[..., i] += t
    cand[..., k] += m * t
    dist = np.sum((cand - r) ** 2, axis=-1)
    return np.where((dist[1] < dist[0])[..., None], cand[1], cand[0])


def rpy_to_matrix(rpy: ArrayLike) -> FloatArray:
    """Rotation matrices of URDF roll-pitch-yaw: ``R = Rz(yaw) @ Ry(pitch) @ Rx(roll)``.

    Args:
        rpy: (..., 3) fixed-axis angles [rad] (roll about X, pitch about Y, yaw about Z).

    Returns:
        (..., 3, 3) rotation matrices (the same as Blender's 'XYZ' Euler order).

    Raises:
        InvalidInputError: If the shape is wrong or an entry is not finite.
    """
    return euler_to_matrix(rpy, "XYZ")


def quat_make_continuous(q: ArrayLike, axis: int = 0) -> FloatArray:
    """Flip quaternion signs so neighbours along ``axis`` have non-negative dot products.

    The first quaternion keeps its sign and every rotation is unchanged, so keyframed
    quaternions interpolate the short way.

    Args:
        q: (N, ..., 4) quaternions (w, x, y, z), a sequence along ``axis``.
        axis: Batch axis holding the sequence; negative values count from the last batch
            axis, never the component axis.

    Returns:
        Quaternions of the same shape as ``q``.

    Raises:
        InvalidInputError: If the shape is wrong, ``axis`` is out of range or an entry is
            not finite.
    """
    q = checked_array(q, "q", (4,))
    nb = q.ndim - 1
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or not -nb <= axis < nb:
        raise InvalidInputError(f"axis must be an integer in [{-nb}, {nb - 1}] for q of shape {q.shape}")
    ax = int(axis) % nb
    qm = np.moveaxis(q, ax, 0)
    if qm.shape[0] < 2:
        return q.copy()
    flips = np.where(np.sum(qm[1:] * qm[:-1], axis=-1) < 0.0, -1.0, 1.0)
    # A sign depends on every earlier flip, hence the running product.
    signs = np.concatenate([np.ones((1,) + flips.shape[1:]), np.cumprod(flips, axis=0)])
    return np.moveaxis(qm * signs[..., None], 0, ax)


def make_transform(R: ArrayLike, p: ArrayLike) -> FloatArray:
    """Homogeneous transforms from rotations and translations.

    Args:
        R: (..., 3, 3) rotation matrices.
        p: (..., 3) translations; broadcast against ``R``.

    Returns:
        (..., 4, 4) transforms ``[[R, p], [0, 1]]``.

    Raises:
        InvalidInputError: If a shape is wrong or an entry is not finite.
    """
    R = checked_array(R, "R", (3, 3))
    p = checked_array(p, "p", (3,))
    try:
        batch = np.broadcast_shapes(R.shape[:-2], p.shape[:-1])
    except ValueError as exc:
        raise InvalidInputError(f"R {R.shape} and p {p.shape} do not broadcast") from exc
    T = np.zeros(batch + (4, 4))
    T[..., :3, :3] = R
    T[..., :3, 3] = p
    T[..., 3, 3] = 1.0
    return T


def transform_inverse(T: ArrayLike) -> FloatArray:
    """Inverse of rigid homogeneous transforms, using ``R^T`` instead of a general inverse.

    Args:
        T: (..., 4, 4) rigid transforms (orthonormal rotation block, last row 0 0 0 1).

    Returns:
        (..., 4, 4) inverse transforms.

    Raises:
        InvalidInputError: If the shape is wrong or an entry is not finite.
    """
    T = checked_array(T, "T", (4, 4))
    Rt = np.swapaxes(T[..., :3, :3], -1, -2)
    out = np.zeros(T.shape)
    out[..., :3, :3] = Rt
    out[..., :3, 3] = -(Rt @ T[..., :3, 3:])[..., 0]
    out[..., 3, 3] = 1.0
    return out
