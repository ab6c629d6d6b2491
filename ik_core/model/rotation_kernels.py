# SPDX-License-Identifier: GPL-3.0-or-later
"""Unvalidated batched rotation kernels (quaternions (w, x, y, z), matrices, rotation vectors) behind ``rotations``."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]


def unit_and_norm(v: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Split ``v`` into direction and norm along the last axis; zero vectors give zero directions."""
    # hypot neither overflows for huge entries nor underflows to 0 for tiny ones (sum of squares does).
    n = np.hypot.reduce(v, axis=-1)
    return v / np.where(n > 0.0, n, 1.0)[..., None], n


def quat_components(a: FloatArray) -> tuple[FloatArray, ...]:
    """The last axis of ``a`` (..., k) as k arrays (...)."""
    # Plain indexing: moveaxis costs more than the arithmetic for single rotations.
    return tuple(a[..., n] for n in range(a.shape[-1]))


def quat_multiply_unchecked(a: FloatArray, b: FloatArray) -> FloatArray:
    """Hamilton product ``a * b`` of (..., 4) quaternions (w, x, y, z), unvalidated."""
    aw, ax, ay, az = quat_components(a)
    bw, bx, by, bz = quat_components(b)
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = aw * bw - ax * bx - ay * by - az * bz
    out[..., 1] = aw * bx + ax * bw + ay * bz - az * by
    out[..., 2] = aw * by - ax * bz + ay * bw + az * bx
    out[..., 3] = aw * bz + ax * by - ay * bx + az * bw
    return out


def quat_conjugate_unchecked(q: FloatArray) -> FloatArray:
    """Conjugates of (..., 4) quaternions (w, x, y, z), unvalidated."""
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def quat_normalize_unchecked(q: FloatArray) -> FloatArray:
    """(..., 4) quaternions scaled to unit length (the identity where zero), unvalidated."""
    u, n = unit_and_norm(q)
    return np.where((n > 0.0)[..., None], u, np.array([1.0, 0.0, 0.0, 0.0]))


def quat_to_matrix_unchecked(q: FloatArray) -> FloatArray:
    """Matrix of a unit quaternion (or of (w, 0, 0, 0), which gives the identity for any w)."""
    w, x, y, z = quat_components(q)
    xx, yy, zz, xy, xz, yz, wx, wy, wz = x * x, y * y, z * z, x * y, x * z, y * z, w * x, w * y, w * z
    R = np.empty(np.shape(w) + (3, 3))
    R[..., 0, 0], R[..., 0, 1], R[..., 0, 2] = 1.0 - 2.0 * (yy + zz), 2.0 * (xy - wz), 2.0 * (xz + wy)
    R[..., 1, 0], R[..., 1, 1], R[..., 1, 2] = 2.0 * (xy + wz), 1.0 - 2.0 * (xx + zz), 2.0 * (yz - wx)
    R[..., 2, 0], R[..., 2, 1], R[..., 2, 2] = 2.0 * (xz - wy), 2.0 * (yz + wx), 1.0 - 2.0 * (xx + yy)
    return R


def matrix_to_quat_unchecked(R: FloatArray) -> FloatArray:
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
    q = unit_and_norm(q)[0]
    return np.where(q[..., :1] < 0.0, -q, q)


def axis_angle_to_quat_unchecked(u: FloatArray, angle: FloatArray) -> FloatArray:
    """Quaternion of a rotation by ``angle`` about unit (or zero) ``u``."""
    half = 0.5 * np.asarray(angle)
    xyz = np.sin(half)[..., None] * u
    q = np.empty(xyz.shape[:-1] + (4,))
    q[..., 0] = np.cos(half)
    q[..., 1:] = xyz
    return q


def quat_to_axis_angle_unchecked(q: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Axis (unit, or zero for no rotation) and angle in [0, pi] of a quaternion of any length."""
    xyz = np.where(q[..., :1] < 0.0, -q[..., 1:], q[..., 1:])
    u, n = unit_and_norm(xyz)
    # atan2 of the half-angle sine and cosine is exact at both ends, unlike arccos or arcsin.
    return u, 2.0 * np.arctan2(n, np.abs(q[..., 0]))


def rotvec_to_matrix_unchecked(v: FloatArray) -> FloatArray:
    """Unvalidated :func:`rotvec_to_matrix` for hot paths whose input is already checked."""
    return quat_to_matrix_unchecked(axis_angle_to_quat_unchecked(*unit_and_norm(v)))


def matrix_to_rotvec_unchecked(R: FloatArray) -> FloatArray:
    """Unvalidated :func:`matrix_to_rotvec` for hot paths whose input is already checked."""
    u, angle = quat_to_axis_angle_unchecked(matrix_to_quat_unchecked(R))
    return u * angle[..., None]


def rotation_angle_unchecked(R_a: FloatArray, R_b: FloatArray) -> FloatArray:
    """Unvalidated :func:`rotation_error` for hot paths whose input is already checked."""
    return quat_to_axis_angle_unchecked(matrix_to_quat_unchecked(np.swapaxes(R_a, -1, -2) @ R_b))[1]
