# SPDX-License-Identifier: GPL-3.0-or-later
"""Stride warping: the root's ground path scaled about an anchor, heights and a ratio of 1 untouched."""

from __future__ import annotations

import numpy as np
import pytest

from ik_core.contacts import warp_root_path
from ik_core.errors import InvalidInputError


def _walk(n: int = 200, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(n) / 120.0
    return np.column_stack([1.3 * t + 0.3, 0.2 * np.sin(t), 0.95 + 0.02 * np.sin(9.0 * t)]) + rng.normal(0, 1e-3,
                                                                                                         (n, 3))


def test_horizontal_travel_scales_by_the_ratio_and_heights_stay() -> None:
    """Every horizontal displacement from the first frame grows by the ratio; z is the input's bit for bit."""
    root = _walk()
    out = warp_root_path(root, 1.1)
    assert np.array_equal(out[:, 2], root[:, 2])
    assert np.allclose(out[:, :2] - out[0, :2], 1.1 * (root[:, :2] - root[0, :2]))
    assert np.array_equal(out[0], root[0])  # the rig starts where it stands
    speed = np.linalg.norm(np.diff(out[:, :2], axis=0), axis=1)
    assert np.allclose(speed, 1.1 * np.linalg.norm(np.diff(root[:, :2], axis=0), axis=1))


def test_a_ratio_of_one_returns_the_path_unchanged() -> None:
    """No warp, no rounding: the path bit for bit, as a new array."""
    root = _walk()
    out = warp_root_path(root, 1.0, anchor=(5.0, -2.0))
    assert np.array_equal(out, root) and out is not root


def test_the_anchor_stays_put() -> None:
    """Scaling about the origin equals scaling the whole horizontal path (a capture scaled with its legs)."""
    root = _walk()
    out = warp_root_path(root, 0.8, anchor=np.zeros(3))
    assert np.allclose(out[:, :2], 0.8 * root[:, :2])


def test_warping_back_undoes_the_warp() -> None:
    """Ratio r then 1/r about the same anchor returns the path (to rounding)."""
    root = _walk()
    assert np.allclose(warp_root_path(warp_root_path(root, 1.25, (1.0, 2.0)), 0.8, (1.0, 2.0)), root, atol=1e-12)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"ratio": 0.0}, "ratio"),
        ({"ratio": float("nan")}, "ratio"),
        ({"anchor": (1.0,)}, "anchor"),
        ({"anchor": (np.nan, 0.0)}, "anchor"),
        ({"root": np.zeros((4, 2))}, "shape"),
    ],
)
def test_bad_input_is_refused_naming_it(kwargs: dict, match: str) -> None:
    """Each bad argument is named with what it must be."""
    args = {"root": np.zeros((4, 3)), "ratio": 1.1, **kwargs}
    with pytest.raises(InvalidInputError, match=match):
        warp_root_path(**args)
