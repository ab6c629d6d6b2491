# SPDX-License-Identifier: GPL-3.0-or-later
"""Tracker stream hygiene: hold NaN frames from the last good one, count them, find jumps."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError
from .geometry import orthonormalize_rotations

__all__ = ["TrackerStream", "clean_trackers"]


@dataclass(frozen=True, eq=False)
class TrackerStream:
    """Cleaned tracker poses.

    Attributes:
        names: Tracker names, one per column.
        poses: (N, T, 4, 4) finite poses with orthonormal rotations.
        held: (N, T) True where the input was NaN/infinite and the last good pose was held
            (the first good pose for leading bad frames).
        jumps: Tracker name -> frame indices where the pose jumped from the previous frame.
    """

    names: tuple[str, ...]
    poses: np.ndarray
    held: np.ndarray
    jumps: dict[str, tuple[int, ...]]

    @property
    def held_counts(self) -> dict[str, int]:
        """Number of held frames per tracker."""
        return {n: int(c) for n, c in zip(self.names, self.held.sum(axis=0))}


def clean_trackers(
    trackers: np.ndarray,
    names: tuple[str, ...],
    frame_time: float,
    jump_speed: float = 8.0,
    jump_turn: float = 40.0,
) -> TrackerStream:
    """Validate tracker poses, hold bad frames and detect jumps.

    Args:
        trackers: (N, T, 4, 4) world poses [m]; rows may hold NaN for lost tracking.
        names: T tracker names (for messages and the jump report).
        frame_time: Seconds per frame (> 0).
        jump_speed: Speed above which a frame-to-frame move counts as a jump [m/s].
        jump_turn: Angular speed above which a frame-to-frame turn counts as a jump [rad/s].

    Returns:
        The cleaned stream.

    Raises:
        InvalidInputError: On a wrong shape, a non-positive frame time, or a tracker with no
            good frame at all.
    """
    arr = np.asarray(trackers, dtype=float)
    if arr.ndim != 4 or arr.shape[1] != len(names) or arr.shape[2:] != (4, 4) or arr.shape[0] < 1:
        raise InvalidInputError(
            f"trackers must have shape (N, {len(names)}, 4, 4) for {', '.join(names)}; got {arr.shape}"
        )
    if not frame_time > 0:
        raise InvalidInputError(f"frame_time must be > 0 seconds, got {frame_time}")
    n = arr.shape[0]
    with np.errstate(invalid="ignore"):
        good = np.all(np.isfinite(arr[..., :3, :]), axis=(-1, -2))
        good &= np.abs(np.linalg.det(np.where(good[..., None, None], arr[..., :3, :3], np.eye(3)))) > 1e-9
    for t, name in enumerate(names):
        if not good[:, t].any():
            raise InvalidInputError(f"tracker {name!r} has no finite pose in any of the {n} frames")
    frames = np.arange(n)[:, None]
    last = np.maximum.accumulate(np.where(good, frames, -1), axis=0)
    first = np.argmax(good, axis=0)
    src = np.where(last >= 0, last, first[None, :])
    poses = arr[src, np.arange(len(names))[None, :]]
    poses[..., 3, :] = (0.0, 0.0, 0.0, 1.0)
    poses[..., :3, :3] = orthonormalize_rotations(poses[..., :3, :3])
    jumps: dict[str, tuple[int, ...]] = {}
    if n > 1:
        step = np.linalg.norm(np.diff(poses[..., :3, 3], axis=0), axis=-1) / frame_time
        rel = np.swapaxes(poses[:-1, :, :3, :3], -1, -2) @ poses[1:, :, :3, :3]
        cos = np.clip((np.trace(rel, axis1=-2, axis2=-1) - 1.0) / 2.0, -1.0, 1.0)
        turn = np.arccos(cos) / frame_time
        bad = (step > jump_speed) | (turn > jump_turn)
        jumps = {name: tuple(int(i) + 1 for i in np.flatnonzero(bad[:, t])) for t, name in enumerate(names)}
    else:
        jumps = {name: () for name in names}
    return TrackerStream(tuple(names), poses, ~good, jumps)
