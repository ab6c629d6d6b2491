# SPDX-License-Identifier: GPL-3.0-or-later
"""Batched forward kinematics and geometric Jacobians for any :class:`Skeleton`."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..errors import InvalidInputError
from .rotation_kernels import rotvec_to_matrix_unchecked
from .skeleton import JointKind, Skeleton


def _check_q(skeleton: Skeleton, q: np.ndarray) -> np.ndarray:
    q = np.asarray(q, dtype=float)
    if q.ndim == 0 or q.shape[-1] != skeleton.dof:
        raise InvalidInputError(
            f"q must have shape (..., {skeleton.dof}) for skeleton {skeleton.name!r} "
            f"(one value per variable of {', '.join(skeleton.moving_joint_names) or 'no joint'}), "
            f"got shape {q.shape}"
        )
    return q


def joint_values(skeleton: Skeleton, q: np.ndarray, joint: int) -> np.ndarray:
    """Values (..., k) of one joint's variables, resolving mimic joints.

    Args:
        skeleton: The skeleton.
        q: (..., dof) configuration [rad or m].
        joint: Joint index.

    Returns:
        (..., 1) for 1-DoF joints (a mimic joint computes its value from its source),
        (..., 3) rotation vector for ball joints, (..., 0) for fixed joints.
    """
    j = skeleton.joints[joint]
    if j.mimic is not None:
        src = skeleton.q_index[skeleton.mimic_source[joint]]
        return q[..., src : src + 1] * j.mimic.multiplier + j.mimic.offset
    s = skeleton.q_index[joint]
    if s < 0:
        return q[..., :0]
    return q[..., s : s + j.dof]


@lru_cache(maxsize=256)
def axis_terms(x: float, y: float, z: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Identity, K and K @ K of a fixed axis, built once per axis rather than once per call."""
    K = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    terms = (np.eye(3), K, K @ K)
    for t in terms:
        t.setflags(write=False)  # shared between calls
    return terms


def _axis_rotation(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """(..., 3, 3) rotations about one fixed unit ``axis`` by ``angle`` (...,) [rad]."""
    eye, K, KK = axis_terms(*axis.tolist())
    s = np.sin(angle)[..., None, None]
    c = np.cos(angle)[..., None, None]
    return eye + s * K + (1.0 - c) * KK


def _skew(v: np.ndarray) -> np.ndarray:
    K = np.zeros((*v.shape[:-1], 3, 3))
    K[..., 0, 1], K[..., 0, 2], K[..., 1, 2] = -v[..., 2], v[..., 1], -v[..., 0]
    K[..., 1, 0], K[..., 2, 0], K[..., 2, 1] = v[..., 2], -v[..., 1], v[..., 0]
    return K


def _rotvec_coefficients(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(1-cos t)/t^2 and (t-sin t)/t^3 for t = |v|, by series near 0."""
    t2 = np.einsum("...i,...i->...", v, v)
    t = np.sqrt(t2)
    small = t < 1e-4
    ts = np.where(small, 1.0, t)
    b = np.where(small, 0.5 - t2 / 24.0, (1.0 - np.cos(ts)) / ts**2)
    c = np.where(small, 1.0 / 6.0 - t2 / 120.0, (ts - np.sin(ts)) / ts**3)
    return b, c


def ball_left_jacobian(v: np.ndarray) -> np.ndarray:
    """(..., 3, 3) SO(3) left Jacobian of rotation vectors (..., 3)."""
    b, c = _rotvec_coefficients(v)
    K = _skew(v)
    return np.eye(3) + b[..., None, None] * K + c[..., None, None] * (K @ K)


def joint_motion(skeleton: Skeleton, q: np.ndarray, joint: int) -> np.ndarray:
    """(..., 4, 4) motion of one joint away from its rest frame for configurations ``q``."""
    j = skeleton.joints[joint]
    batch = q.shape[:-1]
    M = np.broadcast_to(np.eye(4), (*batch, 4, 4)).copy()
    if j.kind is JointKind.FIXED:
        return M
    v = joint_values(skeleton, q, joint)
    if j.kind in (JointKind.REVOLUTE, JointKind.CONTINUOUS):
        M[..., :3, :3] = _axis_rotation(j.axis, v[..., 0])
    elif j.kind is JointKind.PRISMATIC:
        M[..., :3, 3] = v[..., :1] * j.axis
    elif j.kind is JointKind.BALL:
        M[..., :3, :3] = rotvec_to_matrix_unchecked(v)
    return M


def forward_kinematics(skeleton: Skeleton, q: np.ndarray) -> np.ndarray:
    """World transforms of every joint frame.

    Args:
        skeleton: The skeleton.
        q: (..., dof) configurations [rad or m]; any leading batch shape.

    Returns:
        (..., joints, 4, 4) world transform of each joint frame (after its own motion).

    Raises:
        InvalidInputError: If the last axis of ``q`` is not ``skeleton.dof``.
    """
    q = _check_q(skeleton, q)
    batch = q.shape[:-1]
    out = np.empty((*batch, len(skeleton.joints), 4, 4))
    for i, joint in enumerate(skeleton.joints):
        local = _local_transform(skeleton, q, i)
        out[..., i, :, :] = local if joint.parent < 0 else out[..., joint.parent, :, :] @ local
    return out


def _local_transform(skeleton: Skeleton, q: np.ndarray, joint: int) -> np.ndarray:
    """``origin @ joint_motion``, built without the 4x4 products for rotating and fixed joints.

    Origins end in the row (0, 0, 0, 1) (the skeleton checks it), so only the rotation block
    needs a product; a fixed joint's local transform is its origin, broadcast by the caller.
    """
    j = skeleton.joints[joint]
    if j.kind is JointKind.FIXED:
        return j.origin
    if j.kind is JointKind.PRISMATIC:
        return j.origin @ joint_motion(skeleton, q, joint)
    v = joint_values(skeleton, q, joint)
    R = rotvec_to_matrix_unchecked(v) if j.kind is JointKind.BALL else _axis_rotation(j.axis, v[..., 0])
    local = np.empty((*q.shape[:-1], 4, 4))
    local[..., :3, :3] = j.origin[:3, :3] @ R
    local[..., :3, 3] = j.origin[:3, 3]
    local[..., 3, :] = (0.0, 0.0, 0.0, 1.0)
    return local


def rest_transforms(skeleton: Skeleton) -> np.ndarray:
    """(joints, 4, 4) world transforms of every joint at q = 0."""
    return forward_kinematics(skeleton, np.zeros(skeleton.dof))


def effector_poses(
    skeleton: Skeleton,
    q: np.ndarray,
    effectors: str | int | list[str] | None = None,
    frames: np.ndarray | None = None,
) -> np.ndarray:
    """World poses of effector frames.

    Args:
        skeleton: The skeleton.
        q: (..., dof) configurations.
        effectors: One effector (name or index) or a list; ``None`` means all effectors.
        frames: Optional (..., joints, 4, 4) result of :func:`forward_kinematics` for ``q``,
            to avoid computing it twice.

    Returns:
        (..., 4, 4) for a single effector, else (..., E, 4, 4).
    """
    if frames is None:
        frames = forward_kinematics(skeleton, q)
    single = isinstance(effectors, (str, int, np.integer))
    names = [effectors] if single else (effectors if effectors is not None else range(len(skeleton.effectors)))
    effs = [skeleton.effector(n) for n in names]
    poses = np.stack([frames[..., e.joint, :, :] @ e.offset for e in effs], axis=-3)
    return poses[..., 0, :, :] if single else poses


def jacobian(
    skeleton: Skeleton,
    q: np.ndarray,
    effector: str | int = 0,
    frames: np.ndarray | None = None,
) -> np.ndarray:
    """Geometric Jacobian of an effector frame.

    Rows 0-2 map joint velocities to the linear velocity of the effector origin, rows 3-5 to
    its angular velocity, both in world coordinates. Ball-joint columns use the SO(3) left
    Jacobian of the rotation-vector parametrisation, so the result equals the derivative of
    :func:`effector_poses` with respect to ``q`` (checked against finite differences in tests).
    Mimic joints add ``multiplier`` times their column to their source joint's column.

    Args:
        skeleton: The skeleton.
        q: (..., dof) configurations.
        effector: Effector name or index.
        frames: Optional (..., joints, 4, 4) result of :func:`forward_kinematics` for ``q``.

    Returns:
        (..., 6, dof) Jacobian [m/rad or m/m for rows 0-2, rad/rad for rows 3-5].
    """
    q = _check_q(skeleton, q)
    if frames is None:
        frames = forward_kinematics(skeleton, q)
    eff = skeleton.effector(effector)
    p_eff = (frames[..., eff.joint, :, :] @ eff.offset)[..., :3, 3]
    J = np.zeros((*q.shape[:-1], 6, skeleton.dof))
    for i in skeleton.ancestors(eff.joint):
        joint = skeleton.joints[i]
        if joint.kind is JointKind.FIXED:
            continue
        col = skeleton.q_index[i] if joint.mimic is None else skeleton.q_index[skeleton.mimic_source[i]]
        scale = 1.0 if joint.mimic is None else joint.mimic.multiplier
        R = frames[..., i, :3, :3]
        origin = frames[..., i, :3, 3]
        if joint.kind is JointKind.BALL:
            # Angular velocity of exp(v) in the pre-motion frame is J_l(v) v_dot.
            v = joint_values(skeleton, q, i)
            R_parent = frames[..., joint.parent, :3, :3] if joint.parent >= 0 else np.eye(3)
            R_pre = R_parent @ joint.origin[:3, :3]
            W = R_pre @ ball_left_jacobian(v)
            J[..., 3:, col : col + 3] += W
            J[..., :3, col : col + 3] += np.cross(W, (p_eff - origin)[..., :, None], axis=-2)
            continue
        z = R @ joint.axis
        if joint.kind is JointKind.PRISMATIC:
            J[..., :3, col] += scale * z
        else:
            J[..., :3, col] += scale * np.cross(z, p_eff - origin)
            J[..., 3:, col] += scale * z
    return J
