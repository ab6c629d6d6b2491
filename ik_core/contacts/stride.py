# SPDX-License-Identifier: GPL-3.0-or-later
"""Stride warping: the root's ground path scaled to the legs of a retarget, so planted feet need not slide."""

from __future__ import annotations

import numpy as np

from ..errors import InvalidInputError
from .inputs import as_trajectory, check_positive

__all__ = ["warp_root_path"]


def warp_root_path(root: np.ndarray, ratio: float, anchor: np.ndarray | None = None) -> np.ndarray:
    """A root's path with its horizontal part scaled by the legs' length ratio (world z up).

    A retarget that copies joint rotations onto legs ``ratio`` times as long as the capture's,
    but moves the root along the capture's ground path, makes each step ``ratio`` times as long
    as the root's travel over it: a planted foot must slide (or, held, drag the leg out of
    reach). Scaling the root's horizontal displacement from ``anchor`` by ``ratio`` gives the
    travel such legs make; heights are left as they are (scale them with the legs beforehand
    where the retarget does not).

    Args:
        root: (N, 3) world positions of the root (hips) over the take [m].
        ratio: Leg length of the target rig over the capture's (> 0); 1 returns the path unchanged.
        anchor: (2,) or (3,) the point the horizontal path is scaled about (its x and y) [m];
            None: the root's first position, so the rig starts where it stands.

    Returns:
        (N, 3) warped positions, a new array; z bit for bit the input's.

    Raises:
        InvalidInputError: On a wrong shape, NaN or infinite values, or a ratio that is not a
            finite number > 0.
    """
    p = as_trajectory("root", root, single=True)
    check_positive("ratio", ratio)
    if anchor is None:
        a = p[0, :2]
    else:
        a = np.asarray(anchor, dtype=float).ravel()
        if a.shape not in ((2,), (3,)) or not np.all(np.isfinite(a)):
            raise InvalidInputError(f"anchor must be a finite point (x, y) or (x, y, z) [m], got {anchor!r}")
        a = a[:2]
    out = p.copy()
    if ratio != 1.0:
        out[:, :2] = a + ratio * (p[:, :2] - a)
    return out
