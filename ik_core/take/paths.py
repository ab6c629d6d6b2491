# SPDX-License-Identifier: GPL-3.0-or-later
"""Dynamic-programming pieces shared by the take searches: step costs, paths back from the last frame."""

from __future__ import annotations

from functools import partial

import numpy as np

from ..model.distance import turning_variables

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


def free_turns(skeleton) -> np.ndarray:
    """(dof,) True for the variables of joints that turn without limits: their whole turns leave the pose.

    Not a variable that another joint mimics: that one moves by its multiplier times the turn (a
    finger following a continuous joint at half its angle), and the pose with it.
    """
    turns = turning_variables(skeleton) & ~np.isfinite(skeleton.lower) & ~np.isfinite(skeleton.upper)
    for i, joint in enumerate(skeleton.joints):
        if joint.mimic is not None:
            turns[skeleton.q_index[skeleton.mimic_source[i]]] = False
    return turns


def within_turn(diff: np.ndarray) -> np.ndarray:
    """Angle differences [rad] moved by whole turns into [-pi, pi)."""
    return np.remainder(diff + np.pi, 2.0 * np.pi) - np.pi


def turn_aware(steps_of, turns: np.ndarray):
    """``steps_of(qa, qb)`` measuring the ``turns`` (dof,) variables' steps modulo a whole turn.

    A joint that turns without limits (a continuous joint) holds every pose at each of its whole
    turns, and the states a search finds afresh (from random starts, on a grid of one turn) lie
    within a turn of zero where the take may have wound the joint on: a state arriving from the
    frame before and one found there can be one pose a whole turn apart. Measured modulo a turn,
    that is no step; :func:`candidate_paths` unwinds the path it returns. ``steps_of`` itself
    where no variable turns freely.
    """
    if not turns.any():
        return steps_of
    if steps_of is max_step:  # a robot arm's: the differences wrapped in place, no copies
        return partial(_max_step_within_turn, np.flatnonzero(turns))
    return partial(_steps_within_turn, steps_of, turns)


def _max_step_within_turn(turns: np.ndarray, qa: np.ndarray, qb: np.ndarray) -> np.ndarray:
    """:func:`max_step` (...,), the differences of variables ``turns`` (indices) moved by whole turns into [-pi, pi)."""
    diff = qb - qa
    diff[..., turns] = within_turn(diff[..., turns])
    return np.max(np.abs(diff), axis=-1)


def _steps_within_turn(steps_of, turns: np.ndarray, qa: np.ndarray, qb: np.ndarray) -> np.ndarray:
    """``steps_of(qa, qb)`` (...,) with qb's ``turns`` variables moved by whole turns next to qa's (..., dof)."""
    qa, qb = np.broadcast_arrays(qa, qb)
    nearest = qb.copy()
    nearest[..., turns] = qa[..., turns] + within_turn(qb[..., turns] - qa[..., turns])
    return steps_of(qa, nearest)


def unwound(q: np.ndarray, start: np.ndarray, turns: np.ndarray) -> np.ndarray:
    """(N, dof) path q with its ``turns`` variables moved by whole turns to step least from the frame before.

    The first frame steps from ``start`` (dof,). Only whole turns of joints without limits move:
    the poses, and the limits, stay as they were.
    """
    path = np.concatenate([np.asarray(start, dtype=float)[None], np.array(q, dtype=float)])
    path[:, turns] = np.unwrap(path[:, turns], axis=0)
    return path[1:]


def candidate_paths(
    Q, ok, D, back, with_incumbent: bool, start: np.ndarray | None = None, turns: np.ndarray | None = None,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The cheapest path, then (with an incumbent, the last state) the cheapest ending on it.

    Args:
        Q: (N, S, dof) states.
        ok: (N, S) which of them reach their targets.
        D: (S,) cost of the cheapest path to each state of the last frame.
        back: (N, S) predecessor of each state on its cheapest path.
        with_incumbent: Whether the last state is the incumbent.
        start: (dof,) configuration before the first frame; needed with ``turns``.
        turns: (dof,) variables whose steps the programme measured modulo a turn (see
            :func:`turn_aware`): the paths are :func:`unwound`; None for none.

    Returns:
        [(q (N, dof), converged (N,))], one or two paths.
    """
    ends = [int(np.argmin(D))]
    if with_incumbent and ends[0] != len(D) - 1:
        ends.append(len(D) - 1)
    frames = np.arange(len(Q))
    paths = [(Q[frames, path], ok[frames, path]) for path in (backtrack(back, k) for k in ends)]
    if turns is not None and turns.any():
        paths = [(unwound(q, start, turns), reached) for q, reached in paths]
    return paths


def backtrack(back: np.ndarray, k: int) -> np.ndarray:
    """(N,) states of the cheapest path ending in state k at the last frame."""
    n = len(back)
    path = np.empty(n, dtype=int)
    for t in range(n - 1, -1, -1):
        path[t] = k
        k = back[t, k]
    return path
