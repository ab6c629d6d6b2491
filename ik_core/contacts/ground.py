# SPDX-License-Identifier: GPL-3.0-or-later
"""The ground plane: no effector target below it."""

from __future__ import annotations

import numpy as np

from .inputs import as_trajectory, check_finite, check_non_negative

__all__ = ["keep_above_ground"]


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
