# SPDX-License-Identifier: GPL-3.0-or-later
"""Hips moved toward planted feet out of reach: the trunk swung about the head, which stays exact."""

from __future__ import annotations

import numpy as np

from ..contacts import upper_envelope
from .geometry import gaussian_smooth, normalize

__all__ = ["trunk_swing_for_reach"]

# Rounds of the alternating projection onto the legs' reachable caps (two legs: two rounds settle
# it where the caps meet; more change nothing measurable).
_ROUNDS = 3
# The spine's base moves at most this many times the largest gap between a planted ankle and its
# leg's reach that the swing closes.
_BASE_PER_GAP = 3.0


def _toward(u: np.ndarray, w: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """Unit vectors ``u`` (K, 3) turned toward unit ``w`` (K, 3) by ``angle`` (K,) [rad] in their plane."""
    t = w - np.sum(u * w, axis=-1, keepdims=True) * u
    t = normalize(t, fallback=np.array([0.0, 0.0, 1.0]))
    return np.cos(angle)[:, None] * u + np.sin(angle)[:, None] * t


def _soft_bound(x: np.ndarray, bound: float) -> np.ndarray:
    """``x`` (>= 0) unchanged up to half of ``bound``, then eased toward ``bound`` without a corner.

    A hard clip would put corners (pops in the hips) where a need exceeds the bound.
    """
    knee = 0.5 * bound
    if knee <= 0.0:
        return np.zeros_like(x)
    return np.where(x <= knee, x, knee + knee * np.tanh((x - knee) / knee))


def trunk_swing_for_reach(
    head: np.ndarray,
    base: np.ndarray,
    hips: np.ndarray,
    ankles: np.ndarray,
    reach: np.ndarray,
    planted: np.ndarray,
    frame_time: float,
    smoothing_time: float,
    max_angle: float,
) -> np.ndarray:
    """Swings of the trunk about the head that bring planted ankles within their legs' reach.

    With the head on its tracker, the hips can only move as the trunk swings about the head:
    the spine, rigid from its base to the head, turns about the head (the pelvis keeps its
    rotation and moves with the base), as Final IK's Grounder lowers the pelvis toward planted
    feet but with the head held. For each frame the base lies on the sphere about the head of
    the spine's length; each planted leg allows a cap of that sphere (the bases from which its
    hip is within ``reach`` of its ankle). The trunk's direction is projected onto the caps in
    turn (the smallest swing into one cap; alternated, into both where they meet); a leg that
    no point of the sphere brings within reach is left out (no swing can help it), and the base
    moves at most three times the gap it closes (near that edge a small gain needs a large
    swing; the heel raise takes the rest). The swing's size is then smoothed with
    :func:`ik_core.contacts.upper_envelope` over ``smoothing_time`` (it eases in before the
    need and out after, never below what a frame needs) and its axis low-passed, and it is
    bounded by ``max_angle`` (exactly as needed up to half of it, then eased toward
    it: a need beyond it is not met, such a foot stays out of reach). Frames farther than
    ``smoothing_time`` from every need get exactly zero.

    Args:
        head: (N, 3) world position of the head joint, the pivot [m].
        base: (N, 3) world position of the spine's base (its first joint above the pelvis) [m].
        hips: (N, L, 3) world positions of each leg's hip joint [m].
        ankles: (N, L, 3) world targets of each leg's ankle [m].
        reach: (L,) largest hip-to-ankle distance of each leg [m].
        planted: (N, L) True where a leg's ankle is held and must be reached.
        frame_time: Seconds per frame.
        smoothing_time: Half-width of the ease in and out [s].
        max_angle: Largest swing [rad].

    Returns:
        (N, 3) rotation vectors [rad] of the swing, to apply to the spine's world rotations.
    """
    n = head.shape[0]
    v = head - base
    length = np.linalg.norm(v, axis=-1)
    u0 = v / np.maximum(length, 1e-12)[:, None]
    u = u0.copy()
    # The base, at head - length * u, puts a hip at hips - base from it.
    centre = ankles - (hips - base[:, None])
    w = head[:, None] - centre
    b = np.maximum(np.linalg.norm(w, axis=-1), 1e-12)
    w_unit = w / b[..., None]
    r = np.asarray(reach, dtype=float)[None, :]
    # |w - length * u| <= reach  <=>  u . w_unit >= (b^2 + length^2 - reach^2) / (2 length b)
    cos_cap = (b**2 + length[:, None] ** 2 - r**2) / (2.0 * np.maximum(length, 1e-12)[:, None] * b)
    cap = np.arccos(np.clip(cos_cap, -1.0, 1.0))
    # A leg whose ankle no point of the sphere reaches (cos_cap > 1) is left to the heel raise: the
    # nearest point could be far round the sphere while bringing the ankle hardly nearer (a head
    # above standing height over both feet would swing the trunk for nothing).
    active = planted & (cos_cap > -1.0) & (cos_cap <= 1.0)
    for _ in range(_ROUNDS):
        for k in range(w.shape[1]):
            cos_now = np.sum(u * w_unit[:, k], axis=-1)
            out = active[:, k] & (cos_now < np.cos(cap[:, k]) - 1e-12)
            if out.any():
                angle = np.arccos(np.clip(cos_now[out], -1.0, 1.0)) - cap[out, k]
                u[out] = _toward(u[out], w_unit[out, k], angle)
    axis = np.cross(u0, u)
    sin = np.linalg.norm(axis, axis=-1)
    angle = np.arctan2(sin, np.sum(u0 * u, axis=-1))
    # Near the edge of what a swing can reach, the caps are small and far round the sphere: a large
    # swing for a few millimetres. The base moves at most _BASE_PER_GAP times the largest gap it
    # closes (the rest is left to the heel raise), which also makes the swing grow from zero with the
    # gap (no steep onset).
    gap = np.where(active, np.linalg.norm(w - length[:, None, None] * u0[:, None], axis=-1) - r, 0.0)
    angle = np.minimum(angle, _BASE_PER_GAP * np.maximum(gap.max(axis=1), 0.0) / np.maximum(length, 1e-12))
    swing = np.where(sin[:, None] > 1e-12, axis / np.maximum(sin, 1e-12)[:, None] * angle[:, None], 0.0)
    if not np.any(angle > 0.0):
        return np.zeros((n, 3))
    radius = int(round(smoothing_time / frame_time))
    size = _soft_bound(upper_envelope(angle, radius), max_angle)
    # The axis is low-passed over the same window as the size's ease; where it cancels (needs
    # pulling opposite ways within the window) the nearest needing frame's own axis is kept.
    smooth = gaussian_smooth(swing, float(radius)) if radius > 0 else swing
    norm = np.linalg.norm(smooth, axis=-1)
    needing = np.flatnonzero(angle > 0.0)
    after = np.clip(np.searchsorted(needing, np.arange(n)), 0, needing.size - 1)
    before = np.clip(after - 1, 0, needing.size - 1)
    frames = np.arange(n)
    closer = np.abs(needing[before] - frames) < np.abs(needing[after] - frames)
    nearest = np.where(closer, needing[before], needing[after])
    own = swing[nearest] / angle[nearest, None]
    direction = np.where(norm[:, None] > 1e-9, smooth / np.maximum(norm, 1e-300)[:, None], own)
    return direction * size[:, None]
