# SPDX-License-Identifier: GPL-3.0-or-later
"""Synthetic foot trajectories for the contact tests: a walking foot with known stance frames."""

from __future__ import annotations

import numpy as np

FT = 1.0 / 120.0
REST = 0.08  # ankle height over the sole [m]


def walk(
    seconds: float = 5.0,
    frame_time: float = FT,
    stance: float = 0.6,
    swing: float = 0.4,
    stride: float = 0.6,
    lift: float = 0.1,
    noise: float = 0.0,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """An ankle stepping along +x: ``stance`` s still on the ground, then a ``swing`` s arc.

    Returns:
        (N, 3) positions [m] (ankle ``REST`` above a ground at z = 0, plus Gaussian ``noise``
        of that standard deviation on every coordinate), and (N,) True on stance frames.
    """
    n = int(round(seconds / frame_time))
    t = np.arange(n) * frame_time
    cycle = stance + swing
    phase = t % cycle
    s = np.clip((phase - stance) / swing, 0.0, 1.0)
    ease = s**3 * (10.0 - 15.0 * s + 6.0 * s * s)
    x = np.floor(t / cycle) * stride + ease * stride
    z = REST + lift * np.sin(np.pi * s)
    positions = np.stack([x, np.zeros(n), z], axis=1)
    if noise:
        positions = positions + np.random.default_rng(seed).normal(0.0, noise, positions.shape)
    return positions, phase < stance
