# SPDX-License-Identifier: GPL-3.0-or-later
"""The reach check: how far the hips must lower so every planted foot stays within its leg's reach."""

from __future__ import annotations

import numpy as np

from ..errors import InvalidInputError
from .inputs import as_mask, as_trajectory, check_non_negative, check_positive

__all__ = ["root_drop_for_reach", "upper_envelope"]


def upper_envelope(x: np.ndarray, radius: int) -> np.ndarray:
    """A smooth curve >= ``x`` (N,) everywhere: a running maximum, then a moving average of it.

    Every frame within ``radius`` of t holds a running maximum >= x[t], so the average of those
    frames is too; the average removes the corners of the maximum (no pops in the hips). The
    curve rises ``radius`` frames ahead of a need and falls back as gradually after it.

    Args:
        x: (N,) values, e.g. how far the hips must move on each frame [m] or [rad].
        radius: Half-width of the running maximum and of the average [frames]; 0 returns a copy.

    Returns:
        (N,) the envelope, a new array.
    """
    if radius <= 0 or x.size < 2:
        return x.copy()
    pad = np.concatenate([np.full(radius, x[0]), x, np.full(radius, x[-1])])
    windows = np.lib.stride_tricks.sliding_window_view(pad, 2 * radius + 1)
    peak = windows.max(axis=1)
    pad = np.concatenate([np.full(radius, peak[0]), peak, np.full(radius, peak[-1])])
    kernel = np.hanning(2 * radius + 3)[1:-1]
    kernel /= kernel.sum()
    return np.maximum(np.convolve(pad, kernel, mode="valid"), x)


def root_drop_for_reach(
    hips: np.ndarray,
    targets: np.ndarray,
    reach: np.ndarray | float,
    planted: np.ndarray | None = None,
    frame_time: float = 1.0 / 30.0,
    smoothing_time: float = 0.1,
) -> np.ndarray:
    """How far to lower the root so planted feet are within reach, as Final IK's Grounder does.

    For each leg and frame, the smallest drop ``d >= 0`` of the hip with
    ``|target - (hip - d z)| <= reach``; where even a hip level with the target cannot reach
    (the target farther sideways than the reach) the drop brings the hip to the target's height,
    the nearest it can get. The largest drop over the planted legs is then smoothed over
    ``smoothing_time`` without ever going below what a frame needs, so the hips lower ahead of
    the need and rise back gradually.

    Args:
        hips: (N, L, 3) world positions of each leg's hip joint, before any drop [m].
        targets: (N, L, 3) world targets of each leg's end joint (ankle) [m].
        reach: (L,) or scalar largest hip-to-ankle distance of each leg [m] (keep a margin
            below full extension so knees do not snap straight).
        planted: (N, L) booleans: legs whose reach counts on each frame; None: all.
        frame_time: Seconds per frame (> 0).
        smoothing_time: Half-width of the smoothing [s]; 0 returns the raw drops.

    Returns:
        (N,) drop of the root [m], >= 0; subtract it from the root's height.

    Raises:
        InvalidInputError: On wrong shapes, NaN or infinite values, or a non-positive reach.
    """
    H = as_trajectory("hips", hips)
    n = H.shape[0]
    T = as_trajectory("targets", targets, frames=n)
    if H.ndim != 3 or T.shape != H.shape:
        raise InvalidInputError(
            f"hips and targets must both have shape (N, L, 3), one row per leg, got {H.shape} and {T.shape}"
        )
    legs = H.shape[1]
    r = np.asarray(reach, dtype=float)
    if r.shape not in ((), (legs,)):
        raise InvalidInputError(f"reach must be a number or one per leg ({legs},), got shape {r.shape}")
    r = np.broadcast_to(r, (legs,))
    for k, value in enumerate(r):
        check_positive(f"reach[{k}]", float(value))
    check_positive("frame_time", frame_time)
    check_non_negative("smoothing_time", smoothing_time)
    mask = np.ones((n, legs), dtype=bool) if planted is None else as_mask("planted", planted, n)
    if mask.shape != (n, legs):
        raise InvalidInputError(
            f"planted must have shape ({n}, {legs}), one flag per frame and leg, got {mask.shape}"
        )
    side = np.sum((T[..., :2] - H[..., :2]) ** 2, axis=-1)
    below = H[..., 2] - T[..., 2]
    room = np.sqrt(np.maximum(r**2 - side, 0.0))
    need = np.where(side <= r**2, below - room, below)
    need = np.where(mask, np.maximum(need, 0.0), 0.0)
    drop = need.max(axis=1) if legs else np.zeros(n)
    return upper_envelope(drop, int(round(smoothing_time / frame_time)))
