# SPDX-License-Identifier: GPL-3.0-or-later
"""Batched vector and rotation steps used by FABRIK: shortest rotations, hinge angles, fits."""

from __future__ import annotations

import functools

import numpy as np

from ...limits.ball import TWO_PI, circular_clamp
from ...model.rotations import matrix_to_rotvec, rotvec_to_matrix

# Vectors shorter than this carry no direction [m or unitless]; callers fall back to a default.
EPS = 1e-12


_I3 = np.eye(3)


def transpose(R: np.ndarray) -> np.ndarray:
    """(..., 3, 3) transposes (inverses of rotations)."""
    return np.swapaxes(R, -1, -2)


def apply(R: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(n, 3) ``R @ v`` for (n, 3, 3) or (3, 3) ``R`` and (n, 3) or (3,) ``v``."""
    if v.ndim == 1:
        return R @ v
    return (R @ v[..., None])[..., 0]


def weighted_hinge_angle(
    axis: np.ndarray, x: np.ndarray, y: np.ndarray, w: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Hinge angle (n,) about ``axis`` (3,) best turning points x onto y (m, n, 3), weights w (m, 1).

    Maximises sum_j w_j y_j . R(theta) x_j; for one point this is the classic FABRIK step.
    Returns the angle and (n,) where it is defined (not every point on the axis).
    """
    # axis . (x cross y) = x . (y cross axis); the perpendicular parts' dot is x.y - (x.a)(y.a).
    cross = (w * dot(x, np.cross(y, axis))).sum(axis=0)
    along = (w * (dot(x, y) - (x @ axis) * (y @ axis))).sum(axis=0)
    return np.arctan2(cross, along), np.hypot(cross, along) > 1e-15


def dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(...,) dot products of (..., 3) vectors (one C call: this runs per joint per pass)."""
    a, b = np.broadcast_arrays(a, b)
    return np.einsum("...i,...i->...", a, b)


def _norm(v: np.ndarray) -> np.ndarray:
    return np.sqrt(dot(v, v))


def unit(v: np.ndarray, fallback: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors of ``v`` (n, 3), ``fallback`` (broadcast) where ``v`` is too short.

    Returns:
        (n, 3) unit vectors and (n,) True where ``v`` had a direction.
    """
    n = _norm(v)[..., None]
    ok = n > EPS
    if np.all(ok):
        return v / n, ok[..., 0]
    return np.where(ok, v / np.where(ok, n, 1.0), fallback), ok[..., 0]


def perpendicular(a: np.ndarray) -> np.ndarray:
    """(n, 3) unit vectors perpendicular to unit vectors ``a`` (n, 3), chosen deterministically."""
    basis = np.eye(3)[np.argmin(np.abs(a), axis=-1)]
    p = np.cross(a, basis)
    return p / _norm(p)[..., None]


def shortest_rotation(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(n, 3, 3) smallest rotations taking unit vectors ``a`` onto unit vectors ``b``.

    Built as two reflections (across the planes normal to ``a`` and to the half vector), which
    stays accurate for nearly opposite vectors where the Rodrigues form divides by ``1 + a.b``.

    Args:
        a: (n, 3) or (3,) unit vectors.
        b: (n, 3) unit vectors.

    Returns:
        (n, 3, 3) rotations; exactly opposite vectors turn by pi about a perpendicular axis.
    """
    h = a + b
    hn = _norm(h)[..., None]
    short = hn <= EPS
    if np.any(short):
        h = np.where(short, perpendicular(np.broadcast_to(a, h.shape)), h / np.where(short, 1.0, hn))
    else:
        h = h / hn
    ha = dot(h, a)[..., None]
    # I - 2 a a^T - 2 h h^T + 4 (h.a) h a^T, with the h terms merged into one outer product.
    g = h - 2.0 * ha * a
    return _I3 - 2.0 * (h[..., :, None] * g[..., None, :]) - 2.0 * (a[..., :, None] * a[..., None, :])


@functools.lru_cache(maxsize=256)
def _axis_matrices(axis: tuple[float, float, float]) -> tuple[np.ndarray, np.ndarray]:
    x, y, z = axis
    K = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    return K, K @ K


def axis_rotation(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """(n, 3, 3) rotations by ``angle`` (n,) [rad] about one fixed unit ``axis`` (3,)."""
    K, KK = _axis_matrices(tuple(axis.tolist()))
    return _I3 + np.sin(angle)[..., None, None] * K + (1.0 - np.cos(angle))[..., None, None] * KK


def signed_angle(axis: np.ndarray, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Angle [rad] of the rotation about ``axis`` (3,) taking ``u`` towards ``v`` (both (n, 3) or (3,)).

    Only the components perpendicular to the axis count, so the answer is also right for a
    hinge whose bone is not perpendicular to its axis (it sweeps a cone, not a plane).

    Returns:
        (n,) angles in (-pi, pi] and (n,) True where both vectors have a perpendicular part.
    """
    K, _ = _axis_matrices(tuple(axis.tolist()))
    ua, va = u @ axis, v @ axis
    # axis . (u x v) = -u . (K v); the perpendicular parts' dot product is u.v - (u.a)(v.a).
    cross = -dot(u, v @ K.T)
    ok = (dot(u, u) - ua * ua > EPS * EPS) & (dot(v, v) - va * va > EPS * EPS)
    return np.arctan2(cross, dot(u, v) - ua * va), ok


def best_axis_angle(axis: np.ndarray, R: np.ndarray) -> np.ndarray:
    """(n,) angle [rad] of the rotation about ``axis`` (3,) closest to ``R`` (n, 3, 3) (max trace)."""
    w = np.stack([R[..., 2, 1] - R[..., 1, 2], R[..., 0, 2] - R[..., 2, 0], R[..., 1, 0] - R[..., 0, 1]], axis=-1)
    tr = np.trace(R, axis1=-2, axis2=-1)
    return np.arctan2(w @ axis, tr - np.einsum("i,...ij,j->...", axis, R, axis))


def hinge_fit(theta: np.ndarray, ref: np.ndarray, lower: float, upper: float) -> np.ndarray:
    """Hinge angles equal to ``theta`` modulo 2 pi, closest to ``ref`` and inside [lower, upper].

    Args:
        theta: (n,) wanted angles [rad], any branch.
        ref: (n,) current angles [rad] (inside the range), for continuity.
        lower: Lower limit [rad] (may be -inf).
        upper: Upper limit [rad] (may be inf).

    Returns:
        (n,) angles inside the range; where no branch fits, the circularly nearer limit.
    """
    t = theta + TWO_PI * np.round((ref - theta) / TWO_PI)
    if (np.isinf(lower) and np.isinf(upper)) or np.all((t >= lower) & (t <= upper)):
        return t
    cands = t + TWO_PI * np.array([[0.0], [-1.0], [1.0]])
    inside = (cands >= lower) & (cands <= upper)
    dist = np.where(inside, np.abs(cands - ref), np.inf)
    best = np.take_along_axis(cands, np.argmin(dist, axis=0)[None], axis=0)[0]
    if np.isfinite(lower) and np.isfinite(upper):
        fallback = np.clip(circular_clamp(t, lower, upper)[0], lower, upper)
    else:
        fallback = np.clip(t, lower, upper)
    return np.where(inside.any(axis=0), best, fallback)


def rotation_about(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """(n, 3, 3) rotations about per-element unit axes (n, 3) by angles (n,) [rad] (Rodrigues)."""
    K = np.zeros(axis.shape[:-1] + (3, 3))
    K[..., 0, 1], K[..., 0, 2], K[..., 1, 2] = -axis[..., 2], axis[..., 1], -axis[..., 0]
    K = K - np.swapaxes(K, -1, -2)
    s = np.sin(angle)[..., None, None]
    c = np.cos(angle)[..., None, None]
    return _I3 + s * K + (1.0 - c) * (K @ K)


def twist_fit(axis: np.ndarray, current: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """(n, 3, 3) rotations about unit ``axis`` (n, 3) best turning ``current`` onto ``wanted``.

    Args:
        axis: (n, 3) unit axes.
        current: (n, m, 3) vectors to turn.
        wanted: (n, m, 3) their wanted directions.

    Returns:
        Rotations maximising the sum of dot products; the identity where nothing is defined.
    """
    a = axis[:, None, :]
    cp = current - np.sum(current * a, axis=-1, keepdims=True) * a
    wp = wanted - np.sum(wanted * a, axis=-1, keepdims=True) * a
    s = np.sum(np.cross(cp, wp) * a, axis=(-2, -1))
    c = np.sum(cp * wp, axis=(-2, -1))
    return rotation_about(axis, np.where(np.hypot(s, c) > EPS, np.arctan2(s, c), 0.0))


def chordal_mean(rotations: list[np.ndarray]) -> np.ndarray:
    """(n, 3, 3) rotation closest (Frobenius) to the mean of several (n, 3, 3) rotation batches."""
    M = np.sum(rotations, axis=0)
    U, _, Vt = np.linalg.svd(M)
    d = np.sign(np.linalg.det(U @ Vt))
    U = U * np.stack([np.ones_like(d), np.ones_like(d), np.where(d == 0, 1.0, d)], axis=-1)[..., None, :]
    return U @ Vt


def project_into_limit(body, R: np.ndarray) -> np.ndarray:
    """Ball-joint rotations (n, 3, 3) moved inside the limit of ``body`` (a fabrik_tree.Body), if any."""
    limit = body.limit
    if limit is None:
        return R
    if hasattr(limit, "project_matrix"):
        return limit.project_matrix(R)
    return rotvec_to_matrix(limit.project(matrix_to_rotvec(R)))
