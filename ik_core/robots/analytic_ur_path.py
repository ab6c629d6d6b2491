# SPDX-License-Identifier: GPL-3.0-or-later
"""A UR arm along a path of tool poses in closed form: the branch sequence chosen over the whole path."""

from __future__ import annotations

import numpy as np

from ..errors import InvalidInputError
from ..take.paths import MISS_PENALTY, backtrack, max_step, step_cost
from .analytic_ur import URParams, reference_configurations, ur_ik


def ur_ik_path(
    targets: np.ndarray,
    params: URParams,
    q_start: np.ndarray | None = None,
    *,
    max_jump: float = 0.1,
    tolerance: float = 1e-9,
) -> tuple[np.ndarray, np.ndarray]:
    """Follow a sequence of tool poses continuously, choosing branches over the whole path.

    Dynamic programming over the 8 branch solutions of every frame picks the sequence with
    the fewest and smallest steps above ``max_jump``, then the least squared motion. Near a
    wrist or elbow singularity, where two branches meet, the path may change branch; choosing
    the nearest solution frame by frame instead can follow the wrong one past the meeting
    point and flip later.

    Args:
        targets: (N, 4, 4) tool poses [m], in time order.
        params: The arm.
        q_start: (6,) configuration before the first frame [rad]; defaults to zeros.
        max_jump: Largest step between frames [rad] the path may take without a penalty (> 0).
        tolerance: As in :func:`ur_ik`: a path through the edge of the workspace (the arm
            stretched, where the elbow branches meet) needs near misses accepted there.

    Returns:
        ``(q, found)``: q (N, 6) [rad] and found (N,) bool; a frame without a valid solution
        repeats the previous configuration.

    Raises:
        InvalidInputError: Bad shapes or non-finite input, or ``max_jump`` not > 0.
    """
    T = np.asarray(targets, dtype=float)
    if T.ndim != 3 or T.shape[1:] != (4, 4):
        raise InvalidInputError(f"targets must have shape (N, 4, 4), got {T.shape}")
    if not (np.isfinite(max_jump) and max_jump > 0):
        raise InvalidInputError(f"max_jump must be a finite number > 0 [rad], got {max_jump!r}")
    n = len(T)
    out, found = np.zeros((n, 6)), np.zeros(n, dtype=bool)
    if n == 0:
        return out, found
    start = reference_configurations(np.zeros(6) if q_start is None else q_start, ())
    rows = np.arange(8)
    # Dynamic programming with one state per branch and frame. Each branch's solution is
    # computed from every state of the frame before (angles unwrapped next to it, a
    # wrist-singular joint 6 held at its value) and keeps the cheapest: a branch can take
    # over from another where the two meet, on the same side of 2 pi and with the same split
    # of the singular wrist's motion.
    Q, V = np.empty((n, 8, 6)), np.empty((n, 8), dtype=bool)
    back = np.zeros((n, 8), dtype=int)
    prev, D = start[None], np.zeros(1)
    for k in range(n):
        sols, ok = ur_ik(np.broadcast_to(T[k], (len(prev), 4, 4)), params, prev, tolerance=tolerance)  # (S, 8, 6)
        cost = D[:, None] + step_cost(max_step(prev[:, None], sols), max_jump) + np.where(ok, 0.0, MISS_PENALTY)
        back[k] = np.argmin(cost, axis=0)
        Q[k], V[k], D = sols[back[k], rows], ok[back[k], rows], cost[back[k], rows]
        prev = Q[k]
    path = backtrack(back, int(np.argmin(D)))
    frames = np.arange(n)
    out, found = Q[frames, path], V[frames, path]
    # A frame without a valid solution repeats the frame before (the start before the first).
    for k in np.flatnonzero(~found):
        out[k] = out[k - 1] if k > 0 else start
    return out, found
