# SPDX-License-Identifier: GPL-3.0-or-later
"""The ground plane: nothing below it, nothing else changed."""

from __future__ import annotations

import numpy as np
import pytest

from ik_core.contacts import keep_above_ground
from ik_core.errors import InvalidInputError


def test_no_target_below_the_ground() -> None:
    """After the clamp no height is below ground + clearance: zero penetration, every other value untouched."""
    p = np.random.default_rng(2).normal(0.1, 0.1, (500, 2, 3))
    out = keep_above_ground(p, ground=0.05, clearance=0.08)
    assert out[..., 2].min() >= 0.13
    above = p[..., 2] >= 0.13
    assert np.array_equal(out[above], p[above])
    assert np.array_equal(out[..., :2], p[..., :2])
    assert np.all(out[~above, 2] == 0.13)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((np.zeros((4, 4)),), r"shape \(N, 3\) or \(N, L, 3\)"),
        ((np.full((4, 3), np.inf),), "NaN or infinite"),
        ((np.zeros((4, 3)), 0.0, -0.01), "clearance must be a finite number >= 0"),
        ((np.zeros((4, 3)), float("nan")), "ground must be a finite number"),
    ],
)
def test_bad_input_is_named(args, message) -> None:
    with pytest.raises(InvalidInputError, match=message):
        keep_above_ground(*args)
