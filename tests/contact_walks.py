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
BALL = np.array([0.14, 0.0, -0.07])  # ankle -> ball of the foot in the foot's frame (x forward, z up) [m]


def _pitch(theta: np.ndarray) -> np.ndarray:
    """(N, 3, 3) rotations about -y: a positive angle lifts the toe of a foot facing +x [rad]."""
    c, s = np.cos(theta), np.sin(theta)
    R = np.zeros((len(theta), 3, 3))
    R[:, 0, 0], R[:, 0, 2], R[:, 2, 0], R[:, 2, 2], R[:, 1, 1] = c, -s, s, c, 1.0
    return R


def rolling_foot(
    steps: int = 4, frame_time: float = FT, stride: float = 0.7, rise: float = 0.2, glide: float = 0.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A foot walking along +x that lands on its heel and rolls over its ball, as captured feet do.

    Each 1 s step: the foot lands toe up (15 degrees) and flattens about the ankle (0.1 s), stands
    flat (until 0.45 s), rolls over its ball while the heel rises to 35 degrees (``rise`` s: the
    ankle rises and moves forward, the ball stays), then swings ``stride`` forward to the next
    landing. With ``glide`` [m/s] the landed foot first skids forward at that speed until 0.3 s
    (as captured feet do into a turn or out of a hop), then stands.

    Returns:
        (N, 3) ankle positions, (N, 3, 3) foot rotations, (N, 3) ball positions
        (``ankle + R @ BALL``) [m], and (N,) True on the frames the ball stays where it is.
        A step lands at ``stride`` past the last one's standing place.
    """
    t = np.arange(int(round(steps / frame_time))) * frame_time
    k, u = np.floor(t), t % 1.0
    land, flat = 0.1, 0.45
    rise = flat + rise
    up, heel = np.radians(15.0), np.radians(-35.0)
    smooth = lambda s: s**3 * (10.0 - 15.0 * s + 6.0 * s * s)  # noqa: E731
    theta = np.where(u < land, up * (1.0 - smooth(u / land)), 0.0)
    theta = np.where((u >= flat) & (u < rise), heel * smooth((u - flat) / (rise - flat)), theta)
    swing = np.clip((u - rise) / (1.0 - rise), 0.0, 1.0)
    theta = np.where(u >= rise, heel + (up - heel) * smooth(swing), theta)
    R = _pitch(theta)
    skid = 0.3 if glide else land
    planted_ankle = np.stack([k * stride + glide * np.clip(u, 0.0, skid), np.zeros_like(t), np.full_like(t, REST)],
                             axis=1)
    ball_still = planted_ankle + BALL  # where the ball stands from the flat foot to the toe-off
    ankle = planted_ankle.copy()
    rolling = (u >= flat) & (u < rise)
    ankle[rolling] = ball_still[rolling] - np.einsum("nij,j->ni", R[rolling], BALL)
    # The swing: from the toe-off pose to the next landing, lifted 10 cm on the way.
    off = ball_still - _pitch(np.full_like(t, heel)) @ BALL
    nxt = planted_ankle + [stride - glide * skid, 0.0, 0.0]  # the next landing, before its skid
    e = smooth(swing)[:, None]
    swinging = u >= rise
    lift = 0.1 * np.sin(np.pi * smooth(swing))  # lands and lifts off without a jump in speed
    ankle[swinging] = (off + (nxt - off) * e)[swinging] + [0.0, 0.0, 1.0] * lift[swinging, None]
    ball = ankle + np.einsum("nij,j->ni", R, BALL)
    return ankle, R, ball, (u >= skid) & (u < rise)
