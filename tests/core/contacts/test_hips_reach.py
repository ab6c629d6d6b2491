# SPDX-License-Identifier: GPL-3.0-or-later
"""The reach check: the hips lower just enough, smoothly, only for planted legs."""

from __future__ import annotations

import numpy as np
import pytest
from contact_walks import FT

from ik_core.contacts import root_drop_for_reach
from ik_core.errors import InvalidInputError

REACH = 0.85


def hips_and_targets(n: int = 240):
    """A body walking away (+x, 1 m/s) from a left foot planted at the origin; the right foot under its hip."""
    t = np.arange(n) * FT
    hips = np.zeros((n, 2, 3))
    hips[:, :, 0] = t[:, None]
    hips[:, 0, 1], hips[:, 1, 1] = 0.1, -0.1
    hips[:, :, 2] = 0.9
    targets = np.zeros((n, 2, 3))
    targets[:, 0] = (0.0, 0.1, 0.08)
    targets[:, 1] = hips[:, 1] - (0.0, 0.0, 0.8)
    return hips, targets


def test_planted_foot_is_reached_after_the_drop() -> None:
    """Lowered by the drop, every hip is within reach of its planted target wherever that is possible at all."""
    hips, targets = hips_and_targets()
    drop = root_drop_for_reach(hips, targets, REACH, frame_time=FT)
    lowered = hips - drop[:, None, None] * np.array([0, 0, 1.0])
    dist = np.linalg.norm(targets - lowered, axis=-1)
    side = np.linalg.norm(targets[..., :2] - hips[..., :2], axis=-1)
    possible = side <= REACH
    assert np.all(dist[possible] <= REACH + 1e-9)
    assert np.all(drop >= 0) and drop[0] == 0.0 and drop.max() > 0.1
    # where it cannot reach, the hip comes down level with the target: the nearest it gets
    far = ~possible[:, 0]
    assert far.any() and np.allclose(lowered[far, 0, 2], targets[far, 0, 2])


def test_drop_is_minimal_without_smoothing() -> None:
    """Unsmoothed, the drop puts the farthest planted foot exactly at full reach (or none is needed)."""
    hips, targets = hips_and_targets()
    drop = root_drop_for_reach(hips, targets, REACH, frame_time=FT, smoothing_time=0.0)
    lowered = hips - drop[:, None, None] * np.array([0, 0, 1.0])
    dist = np.linalg.norm(targets - lowered, axis=-1)
    side = np.linalg.norm(targets[..., :2] - hips[..., :2], axis=-1)
    need = (drop > 0) & (side[:, 0] <= REACH)
    assert np.allclose(dist[need, 0], REACH)


def test_smoothing_never_undercuts_and_has_no_pops() -> None:
    hips, targets = hips_and_targets()
    raw = root_drop_for_reach(hips, targets, REACH, frame_time=FT, smoothing_time=0.0)
    smooth = root_drop_for_reach(hips, targets, REACH, frame_time=FT, smoothing_time=0.1)
    assert np.all(smooth >= raw - 1e-12)
    assert np.abs(np.diff(smooth, n=2)).max() <= np.abs(np.diff(raw, n=2)).max() + 1e-12


def test_only_planted_legs_lower_the_hips() -> None:
    hips, targets = hips_and_targets()
    planted = np.zeros((len(hips), 2), dtype=bool)
    assert np.all(root_drop_for_reach(hips, targets, REACH, planted, frame_time=FT) == 0.0)
    planted[:, 0] = True
    assert root_drop_for_reach(hips, targets, REACH, planted, frame_time=FT).max() > 0.1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"hips": np.zeros((5, 3))}, r"shape \(N, L, 3\)"),
        ({"targets": np.zeros((4, 2, 3))}, "targets must have 5 frames"),
        ({"reach": -1.0}, r"reach\[0\] must be a finite number > 0"),
        ({"reach": np.ones(3)}, r"reach must be a number or one per leg \(2,\)"),
        ({"planted": np.ones((5, 3), dtype=bool)}, r"planted must have shape \(5, 2\)"),
        ({"hips": np.full((5, 2, 3), np.nan)}, "hips has NaN"),
        ({"smoothing_time": -0.1}, "smoothing_time must be a finite number >= 0"),
    ],
)
def test_bad_input_is_named(kwargs, message) -> None:
    args = {"hips": np.zeros((5, 2, 3)), "targets": np.zeros((5, 2, 3)), "reach": 0.9, "frame_time": FT, **kwargs}
    with pytest.raises(InvalidInputError, match=message):
        root_drop_for_reach(**args)
