# SPDX-License-Identifier: GPL-3.0-or-later
"""Steps of a take: how far a configuration moves from one frame to the next, and the jumps they add up to."""

from __future__ import annotations

import numpy as np

from ..model.rotations import rotation_angle_unchecked, rotvec_to_matrix_unchecked


def joint_steps(skeleton, qa: np.ndarray, qb: np.ndarray) -> np.ndarray:
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


def take_steps(skeleton, q: np.ndarray, start: np.ndarray | None) -> np.ndarray:
    """(N,) step into each frame of a take q (N, dof) [rad or m]: from ``start``, or 0 for the first without one."""
    if start is None:
        return np.concatenate([[0.0], joint_steps(skeleton, q[:-1], q[1:])])
    seq = np.concatenate([np.asarray(start, dtype=float)[None], q])
    return joint_steps(skeleton, seq[:-1], seq[1:])


def jump_score(skeleton, q: np.ndarray, start: np.ndarray | None, max_jump: float) -> tuple[int, float]:
    """Steps of a take (N, dof) above ``max_jump``: their count and their total excess [rad or m]."""
    steps = take_steps(skeleton, q, start)
    return int(np.count_nonzero(steps > max_jump)), float(np.sum(np.maximum(steps - max_jump, 0.0)))
