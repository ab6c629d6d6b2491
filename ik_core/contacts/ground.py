# SPDX-License-Identifier: GPL-3.0-or-later
"""The ground plane: no effector target below it, and no foot segment through it."""

from __future__ import annotations

import numpy as np

from ..model.rotations import rotvec_to_matrix
from .inputs import as_segment, as_trajectory, check_finite, check_non_negative

__all__ = ["keep_above_ground", "lift_above_ground", "pitch_above_ground"]


def keep_above_ground(positions: np.ndarray, ground: float = 0.0, clearance: float = 0.0) -> np.ndarray:
    """Targets raised, where needed, to ``clearance`` above a horizontal ground plane (world z up).

    Only the height of a frame below the plane changes (to exactly ``ground + clearance``);
    every other value is returned bit for bit.

    Args:
        positions: (N, 3) or (N, L, 3) world target positions [m].
        ground: Height of the ground plane [m].
        clearance: Height of the effector above the ground when it stands on it (an ankle's
            height over the sole, 0 for a point on the sole) [m].

    Returns:
        The positions, a new array.

    Raises:
        InvalidInputError: On a wrong shape, NaN or infinite values, or a negative clearance.
    """
    p = as_trajectory("positions", positions).copy()
    check_finite("ground", ground)
    check_non_negative("clearance", clearance)
    floor = ground + clearance
    p[..., 2] = np.where(p[..., 2] < floor, floor, p[..., 2])
    return p


def _segment_over_ground(
    base: np.ndarray, rotations: np.ndarray, tip: np.ndarray, ground: float, clearance: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """A segment's checked inputs and the lowest height its tip may take.

    Returns:
        ``base`` (N, 3), ``rotations`` (N, 3, 3), the tip's world offsets from the base (N, 3)
        [m] and the tip's lowest height ``ground + clearance`` [m].
    """
    B, R, t = as_segment("base", base, rotations, "tip", tip, nonzero=False)
    check_finite("ground", ground)
    check_non_negative("clearance", clearance)
    return B, R, np.einsum("nij,j->ni", R, t), ground + clearance


def lift_above_ground(
    base: np.ndarray,
    rotations: np.ndarray,
    tip: np.ndarray,
    ground: float = 0.0,
    clearance: float = 0.0,
) -> np.ndarray:
    """Base positions raised, where needed, so a rigid segment's tip stays ``clearance`` above the ground.

    The alternative to :func:`pitch_above_ground` that never moves the segment sideways: on a
    frame whose tip is below ``ground + clearance`` the whole segment (its base, the rotation
    kept) rises by the tip's depth. A foot planted by its ankle and ball stays where it is
    planted horizontally (pitching it about the ankle would slide the ball along its arc
    whenever the tip's depth changes, as a captured toe rolling through the floor does);
    only its height changes. Frames whose tip is above are returned bit for bit.

    Args:
        base: (N, 3) world positions of the segment's base joint (the ankle) [m].
        rotations: (N, 3, 3) world rotations of the segment (or deltas from its reference pose).
        tip: (3,) tip offset from the base in the frame ``rotations`` act on [m]: the world tip is
            ``base + rotations @ tip``.
        ground: Height of the ground plane [m].
        clearance: Height of the tip above the ground when it rests on it [m].

    Returns:
        (N, 3) base positions, a new array; x and y bit for bit the input's.

    Raises:
        InvalidInputError: On wrong shapes, NaN or infinite values, or a negative clearance.
    """
    B, _, v, floor = _segment_over_ground(base, rotations, tip, ground, clearance)
    out = B.copy()
    depth = floor - (B[:, 2] + v[:, 2])
    out[:, 2] = np.where(depth > 0.0, B[:, 2] + depth, B[:, 2])
    return out


def pitch_above_ground(
    base: np.ndarray,
    rotations: np.ndarray,
    tip: np.ndarray,
    ground: float = 0.0,
    clearance: float = 0.0,
) -> np.ndarray:
    """Rotations pitched up, where needed, so a segment's tip stays ``clearance`` above the ground.

    A foot turned by its animation (or a tracker) can push its toe through the floor while the
    ankle stays above it. On such frames the rotation is turned about the horizontal axis
    through ``base`` across the segment, by the smallest angle that lifts the tip to
    ``ground + clearance`` (the heading is kept; a tip that cannot get that high, the base
    being too low, is raised as far as it goes: level with the base's height plus the segment
    length). Frames whose tip is above are returned bit for bit.

    Args:
        base: (N, 3) world positions of the segment's base joint (the ankle) [m].
        rotations: (N, 3, 3) world rotations of the segment (or deltas from its reference pose).
        tip: (3,) tip offset from the base in the frame ``rotations`` act on [m]: the world tip is
            ``base + rotations @ tip``.
        ground: Height of the ground plane [m].
        clearance: Height of the tip above the ground when it rests on it [m].

    Returns:
        (N, 3, 3) rotations, a new array.

    Raises:
        InvalidInputError: On wrong shapes, NaN or infinite values, or a negative clearance.
    """
    B, R, v, floor = _segment_over_ground(base, rotations, tip, ground, clearance)
    out = R.copy()
    low = B[:, 2] + v[:, 2] < floor
    length = float(np.linalg.norm(tip))
    if not low.any() or length < 1e-12:
        return out
    v_low = v[low]
    flat = np.linalg.norm(v_low[:, :2], axis=-1)
    # Pitch about the horizontal axis across the segment: its elevation grows, its heading stays.
    axis = np.stack([-v_low[:, 1], v_low[:, 0], np.zeros(len(v_low))], axis=1) / np.maximum(flat, 1e-12)[:, None]
    now = np.arctan2(v_low[:, 2], flat)
    want = np.arcsin(np.clip((floor - B[low, 2]) / length, -1.0, 1.0))
    lift = rotvec_to_matrix(-axis * (want - now)[:, None])
    out[low] = lift @ R[low]
    return out
