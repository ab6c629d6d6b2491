# SPDX-License-Identifier: GPL-3.0-or-later
"""Small batched vector and rotation helpers for the body solve (no validation: hot path)."""

from __future__ import annotations

import numpy as np

__all__ = [
    "exp_so3",
    "frame_from",
    "gaussian_smooth",
    "log_so3",
    "mv",
    "normalize",
    "orthonormalize_rotations",
    "rot_z",
    "twist_about",
]


def normalize(v: np.ndarray, fallback: np.ndarray | None = None) -> np.ndarray:
    """Unit vectors along the last axis; zero vectors become ``fallback`` (or stay zero)."""
    v = np.asarray(v, dtype=float)
    n = np.sqrt(np.sum(v * v, axis=-1, keepdims=True))
    out = v / np.where(n > 1e-12, n, 1.0)
    if fallback is not None:
        out = np.where(n > 1e-12, out, fallback)
    return out


def mv(A: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Batched matrix-vector product: (..., 3, 3) @ (..., 3) -> (..., 3), broadcasting both."""
    return np.einsum("...ij,...j->...i", A, v)  # several times faster than matmul on 3-vectors


def orthonormalize_rotations(R: np.ndarray) -> np.ndarray:
    """Nearest proper rotations (polar decomposition) of (..., 3, 3) matrices, e.g. scaled ones."""
    R = np.asarray(R, dtype=float)
    gram = np.swapaxes(R, -1, -2) @ R
    if R.size and np.max(np.abs(gram - np.eye(3))) < 1e-9 and np.all(np.linalg.det(R) > 0):
        return R.copy()  # already rotations: skip the (slow) batched SVD
    U, _, Vt = np.linalg.svd(R)
    d = np.sign(np.linalg.det(U @ Vt))
    U = U.copy()
    U[..., :, 2] *= np.where(d == 0, 1.0, d)[..., None]
    return U @ Vt


def exp_so3(v: np.ndarray) -> np.ndarray:
    """(..., 3, 3) rotations of rotation vectors (..., 3) [rad] (Rodrigues)."""
    theta = np.sqrt(np.sum(v * v, axis=-1))
    small = theta < 1e-8
    t = np.where(small, 1.0, theta)
    a = np.where(small, 1.0 - theta**2 / 6.0, np.sin(t) / t)
    b = np.where(small, 0.5 - theta**2 / 24.0, (1.0 - np.cos(t)) / t**2)
    x, y, z = v[..., 0], v[..., 1], v[..., 2]
    K = np.zeros(v.shape[:-1] + (3, 3))
    K[..., 0, 1], K[..., 0, 2], K[..., 1, 2] = -z, y, -x
    K[..., 1, 0], K[..., 2, 0], K[..., 2, 1] = z, -y, x
    return np.eye(3) + a[..., None, None] * K + b[..., None, None] * (K @ K)


def log_so3(R: np.ndarray) -> np.ndarray:
    """(..., 3) rotation vectors [rad] of rotations (..., 3, 3)."""
    from ..model.rotations import matrix_to_rotvec

    return matrix_to_rotvec(R)


def rot_z(angle: np.ndarray) -> np.ndarray:
    """(..., 3, 3) rotations about +z by ``angle`` (...) [rad]."""
    c, s = np.cos(angle), np.sin(angle)
    R = np.zeros(np.shape(angle) + (3, 3))
    R[..., 0, 0], R[..., 0, 1], R[..., 1, 0], R[..., 1, 1], R[..., 2, 2] = c, -s, s, c, 1.0
    return R


def frame_from(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(..., 3, 3) right-handed frames with columns (a, b', a x b'), b' = b made orthogonal to a.

    ``a`` must be unit; ``b`` must not be parallel to ``a``.
    """
    b = normalize(b - np.sum(a * b, axis=-1, keepdims=True) * a)
    return np.stack([a, b, np.cross(a, b)], axis=-1)


def twist_about(R: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """(...) signed twist angle [rad] of rotations (..., 3, 3) about unit ``axis`` (3,) or (..., 3)."""
    # Twist from the quaternion's projection on the axis (swing-twist decomposition).
    w2 = 1.0 + R[..., 0, 0] + R[..., 1, 1] + R[..., 2, 2]
    v = np.stack([R[..., 2, 1] - R[..., 1, 2], R[..., 0, 2] - R[..., 2, 0], R[..., 1, 0] - R[..., 0, 1]], -1)
    # v = 4 w * xyz and w2 = 4 w^2, so atan2(v . a, w2) = atan2(w (xyz . a), w^2) up to a positive factor.
    return 2.0 * np.arctan2(np.sum(v * axis, axis=-1), np.maximum(w2, 0.0))


def gaussian_smooth(x: np.ndarray, sigma: float, breaks: tuple[int, ...] = ()) -> np.ndarray:
    """Zero-phase Gaussian low-pass along axis 0 with edge padding; ``sigma`` in samples.

    ``breaks`` are indices where a new segment starts (a jump): each segment is smoothed on
    its own, so a jump stays a jump instead of smearing into the samples around it.
    """
    if breaks:
        edges = [0, *sorted(b for b in set(breaks) if 0 < b < x.shape[0]), x.shape[0]]
        return np.concatenate([gaussian_smooth(x[a:b], sigma) for a, b in zip(edges[:-1], edges[1:])], axis=0)
    if sigma <= 0 or x.shape[0] < 2:
        return np.array(x, dtype=float, copy=True)
    r = int(np.ceil(3 * sigma))
    k = np.exp(-0.5 * (np.arange(-r, r + 1) / sigma) ** 2)
    k /= k.sum()
    pad = np.concatenate([np.repeat(x[:1], r, axis=0), x, np.repeat(x[-1:], r, axis=0)], axis=0)
    flat = pad.reshape(pad.shape[0], -1)
    out = np.empty((x.shape[0], flat.shape[1]))
    for c in range(flat.shape[1]):
        out[:, c] = np.convolve(flat[:, c], k, mode="valid")
    return out.reshape(x.shape)
