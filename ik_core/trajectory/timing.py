# SPDX-License-Identifier: GPL-3.0-or-later
"""A timed file's own clock: its sample rate, that rate as a frame rate, and the frames its samples fall on."""

from __future__ import annotations

import math

import numpy as np

from .model import TrajectoryError

# Frame rates are stored as an integer over a divisor (29.97 = 30 / 1.001); integers up to this.
MAX_FRAME_RATE = 32767


def sample_rate(times: np.ndarray, *, tolerance: float = 0.1, share: float = 0.9) -> float | None:
    """The rate a file was recorded at [Hz], or ``None`` when its samples are not evenly spaced.

    A file counts as evenly sampled when at least ``share`` of its steps lie within
    ``tolerance`` (relative) of the median step, so a log with jitter or a few dropped samples
    still has its rate while sparse waypoints (steps of 1 s, then 4 s) do not. The rate is the
    number of median steps the file spans (a dropped sample's gap counts two) over its duration:
    time stamps rounded to 4 decimals at 60 Hz still give 60 Hz, not the 59.88 of one step.

    Args:
        times: (N,) strictly increasing sample times [s].
        tolerance: Largest relative deviation of a step from the median step.
        share: Smallest fraction of steps that must be within ``tolerance``, in (0, 1].

    Returns:
        Samples per second [Hz], or ``None`` for uneven steps or fewer than two samples.
    """
    t = np.asarray(times, dtype=float)
    if t.ndim != 1 or t.size < 2:
        return None
    steps = np.diff(t)
    median = float(np.median(steps))
    if not median > 0:
        return None
    even = np.abs(steps - median) <= tolerance * median
    if np.mean(even) < share:
        return None
    return float(np.sum(np.maximum(np.round(steps / median), 1.0)) / (t[-1] - t[0]))


def frame_rate_parts(rate_hz: float) -> tuple[int, float]:
    """``rate_hz`` as an integer rate and a divisor, ``rate = fps / fps_base`` (Blender's form).

    Whole rates keep a divisor of exactly 1; 29.97 Hz gives (30, 1.001...).

    Args:
        rate_hz: Frames per second [Hz], finite and in (0, ``MAX_FRAME_RATE``].

    Returns:
        (fps, fps_base): fps an integer in [1, ``MAX_FRAME_RATE``], fps_base > 0.

    Raises:
        TrajectoryError: A rate that is not finite, not positive or above ``MAX_FRAME_RATE``.
    """
    if not (isinstance(rate_hz, (int, float)) and math.isfinite(rate_hz) and 0 < rate_hz <= MAX_FRAME_RATE):
        raise TrajectoryError(f"a frame rate must be a number in (0, {MAX_FRAME_RATE}] Hz, got {rate_hz!r}")
    fps = min(max(round(rate_hz), 1), MAX_FRAME_RATE)
    base = fps / rate_hz
    # A rate read from rounded time stamps (0.01 s steps written as 0.0099999) is the whole rate.
    return fps, 1.0 if abs(base - 1.0) < 1e-6 else base


def sample_frames(times: np.ndarray, fps: float, start_frame: float) -> np.ndarray:
    """(N,) fractional frames of samples at ``times`` when the first one is put on ``start_frame``.

    Args:
        times: (N,) sample times [s].
        fps: The scene's frames per second [Hz].
        start_frame: Frame of the first sample.
    """
    t = np.asarray(times, dtype=float)
    return start_frame + (t - t[0]) * fps
