# SPDX-License-Identifier: GPL-3.0-or-later
"""Dynamic-programming pieces shared by the take searches: step costs, paths back from the last frame."""

from __future__ import annotations

import numpy as np

# Cost of a step above max_jump, plus as much per unit of excess, against squared steps below
# it: a jump is worth almost any detour, and fewer jumps beat smaller ones.
JUMP_PENALTY = 1e3
# Cost of a state that does not reach its target: only taken when nothing reaches.
MISS_PENALTY = 1e6


def step_cost(steps: np.ndarray, max_jump: float) -> np.ndarray:
    """(...,) path cost of joint steps [rad or m]: squared below ``max_jump``, a jump penalty above."""
    over = steps > max_jump
    return steps * steps + np.where(over, JUMP_PENALTY * (1.0 + steps - max_jump), 0.0)


def max_step(qa: np.ndarray, qb: np.ndarray) -> np.ndarray:
    """(...,) largest change of any variable between configurations (..., dof) [rad or m]."""
    return np.max(np.abs(qb - qa), axis=-1)


def candidate_paths(Q, ok, D, back, with_incumbent: bool) -> list[tuple[np.ndarray, np.ndarray]]:
    """The cheapest path, then (with an incumbent, the last state) the cheapest ending on it.

    Args:
        Q: (N, S, dof) states.
        ok: (N, S) which of them reach their targets.
        D: (S,) cost of the cheapest path to each state of the last frame.
        back: (N, S) predecessor of each state on its cheapest path.
        with_incumbent: Whether the last state is the incumbent.

    Returns:
        [(q (N, dof), converged (N,))], one or two paths.
    """
    ends = [int(np.argmin(D))]
    if with_incumbent and ends[0] != len(D) - 1:
        ends.append(len(D) - 1)
    frames = np.arange(len(Q))
    return [(Q[frames, path], ok[frames, path]) for path in (backtrack(back, k) for k in ends)]


def backtrack(back: np.ndarray, k: int) -> np.ndarray:
    """(N,) states of the cheapest path ending in state k at the last frame."""
    n = len(back)
    path = np.empty(n, dtype=int)
    for t in range(n - 1, -1, -1):
        path[t] = k
        k = back[t, k]
    return path
