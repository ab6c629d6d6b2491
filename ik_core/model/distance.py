# SPDX-License-Identifier: GPL-3.0-or-later
"""How far apart two configurations are, joint by joint: 1-DoF joints by their values, ball joints by angle."""

from __future__ import annotations

import numpy as np

from .rotations import rotation_angle_unchecked, rotvec_to_matrix_unchecked
from .skeleton import Skeleton


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
