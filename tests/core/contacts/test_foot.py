# SPDX-License-Identifier: GPL-3.0-or-later
"""A foot planted by its ankle and its ball: still while it stands, no slide at the heel rise, nothing else changed."""

from __future__ import annotations

import numpy as np
import pytest
from contact_walks import BALL, FT, REST, rolling_foot

from ik_core.contacts import ContactOptions, contact_intervals, foot_skate, plant_foot, planted_frames
from ik_core.errors import InvalidInputError

BALL_REST = REST + BALL[2]  # the ball's height over the sole when the foot stands flat [m]


def planted_ball(foot) -> np.ndarray:
    return foot.ankle + np.einsum("nij,j->ni", foot.rotations, BALL)


@pytest.mark.parametrize("frame_time", [FT, 1.0 / 30.0])
@pytest.mark.parametrize("glide", [0.0, 0.15])
def test_a_rolling_foot_never_slides_where_the_animation_stands(frame_time: float, glide: float) -> None:
    """On every frame where the animated ankle or ball stands (near the ground, under 20 cm/s) the
    planted one is under 20 cm/s too: holding the ankle and releasing it at the heel rise adds no slide,
    and a foot that skids 15 cm/s after landing is not held through the skid (at 30 fps, holding it,
    as a 25 cm/s contact speed did, slides the ball on 4 % of its standing frames at the release)."""
    ankle, R, ball, _ = rolling_foot(frame_time=frame_time, glide=glide)
    foot = plant_foot(ankle, R, BALL, frame_time, rest_height=REST, ball_rest_height=BALL_REST)
    for planted, animated, level in ((foot.ankle, ankle, REST), (planted_ball(foot), ball, BALL_REST)):
        standing = planted_frames(animated, frame_time, level)
        assert standing.sum() > 0.3 * len(standing)
        assert foot_skate(planted, frame_time, level, standing).skate_ratio == 0.0


def test_the_ball_stays_through_the_heel_rise() -> None:
    """The ball is held within 1 mm of where it came down until its release, while the heel rises
    and the foot turns about the ankle; the ankle's contacts end before the ball's."""
    ankle, R, ball, still = rolling_foot()
    foot = plant_foot(ankle, R, BALL, FT, rest_height=REST, ball_rest_height=BALL_REST)
    out = planted_ball(foot)
    ramp = int(round(0.1 / FT))
    truth = contact_intervals(still)
    assert len(contact_intervals(foot.ball_contact)) == len(truth)
    for (start, stop), (_, t_stop) in zip(contact_intervals(foot.ball_contact), truth):
        assert np.abs(out[start : stop - ramp] - out[start]).max() < 1e-3
        assert stop >= t_stop - ramp  # it lasts through the heel rise, until the toe-off
    ankle_stops = contact_intervals(foot.contact)[:, 1]
    assert np.all(ankle_stops < contact_intervals(foot.ball_contact)[:, 1])


def test_frames_outside_contacts_are_kept() -> None:
    """Off both contacts, where the ankle was neither held nor clamped, ankle and rotation are the animation's."""
    ankle, R, _, _ = rolling_foot()
    foot = plant_foot(ankle, R, BALL, FT, rest_height=REST, ball_rest_height=BALL_REST)
    free = ~(foot.contact | foot.ball_contact)
    assert free.sum() > 0.2 * len(free)
    assert np.array_equal(foot.rotations[free], R[free]) and np.array_equal(foot.ankle[free, :2], ankle[free, :2])
    assert np.abs(foot.ankle[free, 2] - ankle[free, 2]).max() < 1e-12  # a flat ball's rounding may lift it 1e-17 m


def test_no_foot_below_the_ground() -> None:
    """A foot animated 2 cm through the floor: no ankle below its rest height, no ball below its own,
    and off the contacts the ankle only rises, never moves sideways."""
    ankle, R, _, _ = rolling_foot()
    sunk = ankle - [0.0, 0.0, 0.02]
    foot = plant_foot(sunk, R, BALL, FT, rest_height=REST, ball_rest_height=BALL_REST)
    assert foot.ankle[:, 2].min() >= REST - 1e-12
    assert planted_ball(foot)[:, 2].min() >= BALL_REST - 1e-12
    free = ~(foot.contact | foot.ball_contact)
    assert np.array_equal(foot.ankle[free, :2], sunk[free, :2]) and np.all(foot.ankle[free, 2] >= sunk[free, 2])


def test_given_contacts_are_used_as_they_are() -> None:
    """A stored contact list is planted as given: none at all leaves the foot as animated."""
    ankle, R, _, _ = rolling_foot()
    none = np.zeros(len(ankle), dtype=bool)
    foot = plant_foot(ankle, R, BALL, FT, rest_height=REST, ball_rest_height=BALL_REST, contact=none,
                      ball_contact=none)
    assert not foot.contact.any() and not foot.ball_contact.any()
    assert np.allclose(foot.ankle, ankle, atol=1e-12) and np.allclose(foot.rotations, R, atol=1e-12)


def test_a_gliding_foot_is_not_planted() -> None:
    """A foot that glides 15 cm/s along the ground (a skid) is no contact under the default thresholds:
    holding it would only make it catch up with the animation faster than it ever moved."""
    n = 240
    glide = np.column_stack([0.15 * FT * np.arange(n), np.zeros(n), np.full(n, REST)])
    R = np.tile(np.eye(3), (n, 1, 1))
    foot = plant_foot(glide, R, BALL, FT, rest_height=REST, ball_rest_height=BALL_REST)
    assert not foot.contact.any() and not foot.ball_contact.any()
    loose = plant_foot(glide, R, BALL, FT, rest_height=REST, ball_rest_height=BALL_REST,
                       options=ContactOptions(speed=0.25))
    assert loose.contact.all()  # a looser speed (foot trackers') holds it


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ball": np.zeros(3)}, "ball must be a finite non-zero 3-vector"),
        ({"rotations": np.zeros((2, 3, 3))}, r"rotations must be finite with shape \(4, 3, 3\)"),
        ({"contact": np.zeros(3, dtype=bool)}, r"contact must have shape \(4,\)"),
        ({"ball_contact": np.full(4, 2)}, "ball_contact must hold booleans"),
        ({"ankle": np.full((4, 3), np.nan)}, "ankle has NaN or infinite values"),
    ],
)
def test_bad_input_is_named(kwargs, message) -> None:
    args = {"ankle": np.zeros((4, 3)), "rotations": np.tile(np.eye(3), (4, 1, 1)), "ball": BALL,
            "frame_time": FT, **kwargs}
    with pytest.raises(InvalidInputError, match=message):
        plant_foot(**args)
