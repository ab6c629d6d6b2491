# SPDX-License-Identifier: GPL-3.0-or-later
"""How far apart two configurations are, joint by joint: 1-DoF joints by their values, ball joints by angle.

:func:`joint_steps` measures the motion between two configurations; :func:`branch_steps` whether two
configurations are the same IK branch, where angles a whole turn apart put a joint in the same place.
"""

from __future__ import annotations

import numpy as np

from .rotations import rotation_angle_unchecked, rotvec_to_matrix_unchecked
from .skeleton import JointKind, Skeleton


def joint_steps(skeleton: Skeleton, qa: np.ndarray, qb: np.ndarray) -> np.ndarray:
    """(...,) largest per-joint change between configurations ``qa`` and ``qb`` (..., dof).

    1-DoF joints change by ``|qb - qa|`` [rad or m]; a ball joint by the angle of the relative
    rotation [rad], not by its rotation-vector components, which flip sign near half a turn
    while the rotation itself moves continuously.
    """
    qa, qb = np.broadcast_arrays(np.asarray(qa, dtype=float), np.asarray(qb, dtype=float))
    diff = np.abs(qb - qa)
    balls = skeleton.ball_q_starts
    if not balls:
        return np.max(diff, axis=-1, initial=0.0)
    ball_cols = np.concatenate([np.arange(s, s + 3) for s in balls])
    other = np.setdiff1d(np.arange(skeleton.dof), ball_cols)
    steps = [np.max(diff[..., other], axis=-1, initial=0.0)]
    for s in balls:
        steps.append(rotation_angle_unchecked(rotvec_to_matrix_unchecked(qa[..., s : s + 3]),
                                              rotvec_to_matrix_unchecked(qb[..., s : s + 3])))
    return np.max(np.stack(steps, axis=-1), axis=-1)


def turning_variables(skeleton: Skeleton) -> np.ndarray:
    """(dof,) True for the variables of revolute and continuous joints: a whole turn brings them back."""
    mask = np.zeros(skeleton.dof, dtype=bool)
    for i, joint in enumerate(skeleton.joints):
        if joint.dof == 1 and joint.kind in (JointKind.REVOLUTE, JointKind.CONTINUOUS):
            mask[skeleton.q_index[i]] = True
    return mask


def branch_steps(skeleton: Skeleton, qa: np.ndarray, qb: np.ndarray) -> np.ndarray:
    """(...,) largest per-joint difference between configurations ``qa`` and ``qb`` (..., dof), turns ignored.

    As :func:`joint_steps`, but a revolute or continuous joint's difference is taken modulo a whole
    turn, in [0, pi] [rad]: a UR joint at 0.5 and at 0.5 - 2 pi holds the arm in the same pose, so
    the two configurations are one IK branch (the values differ, and which one to key is the
    nearest to the current pose).
    """
    qa, qb = np.broadcast_arrays(np.asarray(qa, dtype=float), np.asarray(qb, dtype=float))
    diff = qb - qa
    turning = turning_variables(skeleton)
    diff[..., turning] = np.remainder(diff[..., turning] + np.pi, 2.0 * np.pi) - np.pi
    return joint_steps(skeleton, qa, qa + diff)
