# SPDX-License-Identifier: GPL-3.0-or-later
"""Steps of a take: how far a configuration moves from one frame to the next, and the jumps they add up to."""

from __future__ import annotations

import numpy as np

from ..model.distance import joint_steps

__all__ = ["joint_steps", "jump_score", "take_steps"]


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
