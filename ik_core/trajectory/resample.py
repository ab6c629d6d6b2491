# SPDX-License-Identifier: GPL-3.0-or-later
"""Resampling of trajectories onto a uniform time grid (for example the scene's frame rate)."""

from __future__ import annotations

import math

import numpy as np

from ..model.rotations import quat_slerp
from .model import JointTrajectory, PoseTrajectory, TrajectoryError

# A grid point this close (relative to the step) past the end still counts as inside.
_END_SLACK = 1e-9
# ... and so does one a nanosecond past it [s]: stamps rounded to the nanosecond (ROS messages, MCAP
# files) end up to that much early (4/30 s is stored as 0.133333333 s).
_END_SLACK_S = 1e-9


def uniform_times(start: float, end: float, rate_hz: float) -> np.ndarray:
    """(M,) times ``start + k / rate_hz`` for k = 0, 1, ... up to ``end`` inclusive [s].

    Each time is computed from its index (no accumulated rounding), and an end that falls
    on the grid up to rounding, or up to a nanosecond early (stamps rounded to it), is included.

    Raises:
        TrajectoryError: A non-finite or non-positive rate, or ``end < start``.
    """
    if not (isinstance(rate_hz, (int, float)) and math.isfinite(rate_hz) and rate_hz > 0):
        raise TrajectoryError(f"rate_hz must be a finite number > 0 [Hz], got {rate_hz!r}")
    if not (math.isfinite(start) and math.isfinite(end)) or end < start:
        raise TrajectoryError(f"need finite start <= end, got start={start!r}, end={end!r}")
    count = math.floor((end - start + _END_SLACK_S) * rate_hz + _END_SLACK) + 1
    return start + np.arange(count) / float(rate_hz)


def _segments(times: np.ndarray, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Left sample index (M,) and blend weight (M,) in [0, 1]; outside the range values hold."""
    if len(times) == 1:
        return np.zeros(len(grid), dtype=int), np.zeros(len(grid))
    idx = np.clip(np.searchsorted(times, grid, side="right") - 1, 0, len(times) - 2)
    w = (grid - times[idx]) / (times[idx + 1] - times[idx])
    return idx, np.clip(w, 0.0, 1.0)


def resample(
    trajectory: JointTrajectory | PoseTrajectory,
    rate_hz: float,
    *,
    start: float | None = None,
    end: float | None = None,
) -> JointTrajectory | PoseTrajectory:
    """Resample onto the uniform grid ``start + k / rate_hz`` by interpolation.

    Joint values and positions interpolate linearly, quaternions by slerp. Grid times before
    the first or after the last sample hold the end values. Velocities and accelerations of
    a joint trajectory are dropped (the finite differences in :mod:`.check` recompute them).

    Args:
        trajectory: The trajectory to resample.
        rate_hz: Samples per second [Hz], e.g. ``scene.render.fps / scene.render.fps_base``.
        start: First grid time [s]; defaults to the first sample time.
        end: Last time the grid may reach [s]; defaults to the last sample time.

    Returns:
        A trajectory of the same type on the new grid.

    Raises:
        TrajectoryError: A bad rate or ``end < start``.
    """
    t = trajectory.times
    grid = uniform_times(float(t[0] if start is None else start), float(t[-1] if end is None else end), rate_hz)
    idx, w = _segments(t, grid)
    nxt = np.minimum(idx + 1, len(t) - 1)

    def lerp(values: np.ndarray) -> np.ndarray:
        a, b = values[idx], values[nxt]
        # a + w (b - a) would not return b exactly at w = 1; this blend does at both ends.
        return (1.0 - w)[:, None] * a + w[:, None] * b

    if isinstance(trajectory, PoseTrajectory):
        q = quat_slerp(trajectory.quaternions[idx], trajectory.quaternions[nxt], w)
        return PoseTrajectory(grid, lerp(trajectory.positions), q)
    return JointTrajectory(trajectory.joint_names, grid, lerp(trajectory.positions))
