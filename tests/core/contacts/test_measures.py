# SPDX-License-Identifier: GPL-3.0-or-later
"""Foot-skate measures: a still foot does not skate, a sliding one does, by the amounts the definition gives."""

from __future__ import annotations

import numpy as np
import pytest

from ik_core.contacts import foot_skate, planted_frames
from ik_core.errors import InvalidInputError

FT = 1.0 / 30.0


def test_a_still_foot_on_the_ground_has_no_skate_and_no_penetration() -> None:
    """Zero displacement: skate 0, ratio 0, every frame after the first a contact frame."""
    p = np.tile([0.3, -0.2, 0.0], (40, 1))
    m = foot_skate(p, FT, 0.0, planted_frames(p, FT))
    assert m == (0.0, 0.0, 0.0, 39, 0.0)


def test_a_foot_sliding_on_the_ground_skates_at_its_speed() -> None:
    """On the ground (weight 1) at 0.5 m/s: skate = 0.5 * FT per frame, every contact frame slides."""
    n = 30
    p = np.column_stack([0.5 * FT * np.arange(n), np.zeros(n), np.zeros(n)])
    m = foot_skate(p, FT, 0.0, np.ones(n, dtype=bool))
    assert m.skate == pytest.approx(0.5 * FT)
    assert m.skate_ratio == 1.0 and m.near_ratio == 1.0 and m.contact_frames == n - 1


def test_the_weight_fades_out_at_the_top_of_the_band() -> None:
    """At h = H/2 the weight is 2 - sqrt(2); at or above H the frames are not near the ground."""
    n = 10
    p = np.column_stack([0.01 * np.arange(n), np.zeros(n), np.full(n, 0.0165)])
    assert foot_skate(p, FT).skate == pytest.approx(0.01 * (2.0 - np.sqrt(2.0)))
    p[:, 2] = 0.033
    m = foot_skate(p, FT)
    assert m.skate == 0.0 and m.contact_frames == 0


def test_penetration_is_the_deepest_point_below_its_ground_level() -> None:
    """Per-frame ground levels: the depth is measured against each frame's own level."""
    p = np.zeros((5, 3))
    p[:, 2] = [0.0, 0.1, 0.095, 0.2, 0.0]
    ground = np.array([0.0, 0.1, 0.1, 0.1, -0.01])
    assert foot_skate(p, FT, ground).penetration == pytest.approx(0.005)


def test_several_effectors_are_measured_together() -> None:
    """(N, F, 3) with a ground level per effector equals the pooled frames of each effector alone."""
    rng = np.random.default_rng(4)
    p = rng.normal(0.0, 0.01, (50, 2, 3)) + np.array([0.0, 0.0, 0.01])
    ground = np.array([0.0, 0.005])
    both = foot_skate(p, FT, ground, planted_frames(p, FT, ground))
    alone = [foot_skate(p[:, k], FT, ground[k], planted_frames(p[:, k], FT, ground[k])) for k in range(2)]
    assert both.contact_frames == sum(a.contact_frames for a in alone)
    assert both.penetration == max(a.penetration for a in alone)


def test_planted_frames_need_both_low_and_slow() -> None:
    """A high still foot and a low fast one are not planted; frame 0 never is."""
    n = 6
    p = np.zeros((n, 3))
    p[3:, 0] = 0.1 * np.arange(n - 3)  # 3 m/s from frame 4 on
    p[1, 2] = 0.2  # lifted on frame 1
    assert planted_frames(p, FT).tolist() == [False, False, True, True, False, False]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"positions": np.zeros((3, 2))}, "shape"),
        ({"frame_time": 0.0}, "frame_time"),
        ({"contact": np.ones(4, dtype=bool)}, "contact must have shape"),
        ({"ground": np.zeros(7)}, "ground"),
        ({"ground": np.nan}, "ground"),
    ],
)
def test_bad_input_is_refused_with_what_is_valid(kwargs: dict, match: str) -> None:
    """Each wrong argument names itself and what it must be."""
    args = {"positions": np.zeros((3, 3)), "frame_time": FT, **kwargs}
    with pytest.raises(InvalidInputError, match=match):
        foot_skate(**args)
