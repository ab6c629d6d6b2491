# SPDX-License-Identifier: GPL-3.0-or-later
"""Contact detection: walks with noise, still feet on and above the ground, blips, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from contact_walks import FT, REST, walk
from hypothesis import given, settings
from hypothesis import strategies as st

from ik_core.contacts import ContactOptions, contact_intervals, detect_contacts
from ik_core.errors import InvalidInputError


def agreement(found: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean(found == truth))


@pytest.mark.parametrize("noise", [0.0, 0.002, 0.004])
def test_walk_contacts_match_the_stance_phases(noise: float) -> None:
    """Every stance phase gives exactly one contact, inside it, covering most of it, noise or not."""
    positions, stance = walk(noise=noise, seed=3)
    found = detect_contacts(positions, FT, rest_height=REST)
    runs, truth = contact_intervals(found), contact_intervals(stance)
    assert len(runs) == len(truth)
    for (start, stop), (t_start, t_stop) in zip(runs, truth):
        # The speed window sees the foot's motion a little before lift-off and after landing.
        assert t_start <= start <= t_start + 12 and t_stop - 12 <= stop <= t_stop + 2
    assert agreement(found, stance) > 0.9


@pytest.mark.parametrize(
    ("noise", "o"),
    # An animation's noise under the default thresholds; a tracker's (6 mm) under the looser
    # speed foot trackers use (ik_core.humanoid.options.TRACKER_CONTACTS).
    [(0.003, ContactOptions()), (0.006, ContactOptions(speed=0.25))],
)
@pytest.mark.parametrize("seed", range(5))
def test_noise_does_not_chatter(noise: float, o: ContactOptions, seed: int) -> None:
    """Noise around the thresholds does not toggle the contact: one per stance, none shorter than min_duration."""
    positions, _ = walk(noise=noise, seed=seed)
    runs = contact_intervals(detect_contacts(positions, FT, rest_height=REST, options=o))
    lengths = (runs[:, 1] - runs[:, 0]) * FT
    assert len(runs) == 5 and lengths.min() >= o.min_duration


def test_still_foot_on_the_ground_is_one_contact() -> None:
    """A foot that never lifts is in contact on every frame."""
    positions = np.tile([0.3, 0.1, REST], (200, 1))
    found = detect_contacts(positions, FT, rest_height=REST)
    assert found.all()
    assert contact_intervals(found).tolist() == [[0, 200]]


def test_foot_that_never_touches_has_no_contact() -> None:
    """A foot hovering still 10 cm above its resting height (a plateau in the air) never touches."""
    positions = np.tile([0.3, 0.1, REST + 0.1], (200, 1))
    assert not detect_contacts(positions, FT, rest_height=REST).any()
    swinging, _ = walk(lift=0.1)
    swinging[:, 2] += 0.2
    assert not detect_contacts(swinging, FT, rest_height=REST).any()


def test_plateau_on_a_raised_ground() -> None:
    """A foot resting on a raised plateau is in contact with a ground at the plateau's height, not below it."""
    positions = np.tile([0.0, 0.0, 0.3 + REST], (100, 1))
    assert not detect_contacts(positions, FT, ground=0.0, rest_height=REST).any()
    assert detect_contacts(positions, FT, ground=0.3, rest_height=REST).all()


def test_single_frame_blips() -> None:
    """A one-frame spike inside a stance does not split it; a one-frame dip in a swing makes no contact."""
    positions, stance = walk()
    clean = detect_contacts(positions, FT, rest_height=REST)
    spiked = positions.copy()
    spiked[30, 2] += 0.2  # inside the first stance
    assert np.array_equal(detect_contacts(spiked, FT, rest_height=REST), clean)
    hover = np.tile([0.0, 0.0, REST + 0.15], (120, 1))
    hover[60, 2] = REST  # one frame touches down
    assert not detect_contacts(hover, FT, rest_height=REST).any()


def test_thresholds_scale_with_options() -> None:
    """A stricter speed threshold never finds more contact frames than the default."""
    positions, _ = walk(noise=0.002)
    loose = detect_contacts(positions, FT, rest_height=REST)
    strict = detect_contacts(positions, FT, rest_height=REST, options=ContactOptions(speed=0.05))
    assert strict.sum() <= loose.sum() and not np.any(strict & ~loose)


def test_frame_rate_does_not_change_the_contacts() -> None:
    """The same walk at 30 and 120 Hz gives the same contact times (thresholds are in seconds and m/s)."""
    fast, _ = walk(frame_time=1 / 120)
    slow, _ = walk(frame_time=1 / 30)
    fast_runs = contact_intervals(detect_contacts(fast, 1 / 120, rest_height=REST)) / 120
    slow_runs = contact_intervals(detect_contacts(slow, 1 / 30, rest_height=REST)) / 30
    assert fast_runs.shape == slow_runs.shape
    assert np.max(np.abs(fast_runs - slow_runs)) <= 0.06


def test_intervals_of_masks() -> None:
    """Intervals are [start, stop) runs; an empty mask gives an empty (0, 2) array."""
    mask = np.array([1, 1, 0, 0, 1, 0, 1, 1, 1], dtype=bool)
    assert contact_intervals(mask).tolist() == [[0, 2], [4, 5], [6, 9]]
    assert contact_intervals(np.zeros(5, dtype=bool)).shape == (0, 2)


@pytest.mark.parametrize(
    ("positions", "frame_time", "message"),
    [
        (np.zeros((10, 2)), FT, r"shape \(N, 3\)"),
        (np.zeros((0, 3)), FT, "N >= 1"),
        (np.full((10, 3), np.nan), FT, "NaN or infinite values on 10 frame"),
        (np.zeros((10, 3)), 0.0, "frame_time must be a finite number > 0"),
        (np.zeros((10, 3)), -FT, "frame_time must be a finite number > 0"),
    ],
)
def test_bad_input_is_named(positions, frame_time, message) -> None:
    """Wrong shapes, NaN and a non-positive frame time raise InvalidInputError saying what is valid."""
    with pytest.raises(InvalidInputError, match=message):
        detect_contacts(positions, frame_time)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("height", -0.01, "height must be a finite number > 0"),
        ("speed", 0.0, "speed must be a finite number > 0"),
        ("min_duration", -1.0, "min_duration must be a finite number >= 0"),
        ("release", 0.5, "release must be >= 1"),
        ("speed_window", float("nan"), "speed_window must be a finite number >= 0"),
    ],
)
def test_bad_options_are_named(field: str, value: float, message: str) -> None:
    """Negative, zero and NaN thresholds are refused when the options are made."""
    with pytest.raises(InvalidInputError, match=message):
        ContactOptions(**{field: value})


def test_bad_ground_is_named() -> None:
    with pytest.raises(InvalidInputError, match="rest_height must be a finite number"):
        detect_contacts(np.zeros((5, 3)), FT, rest_height=float("inf"))


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    noise=st.floats(0.0, 0.01),
    height=st.floats(0.01, 0.08),
    speed=st.floats(0.05, 0.6),
    release=st.floats(1.0, 2.0),
)
def test_contacts_respect_their_thresholds(
    seed: int, noise: float, height: float, speed: float, release: float
) -> None:
    """On any walk and thresholds: contact frames lie within the release band, no contact shorter than allowed.

    Closing a gap keeps frames beyond the band (fewer than ``min_gap`` in a row, never at a
    contact's ends); every other contact frame is within ``release`` times both thresholds.
    """
    positions, _ = walk(noise=noise, seed=seed, stance=0.3 + (seed % 5) * 0.1)
    o = ContactOptions(height=height, speed=speed, release=release)
    found = detect_contacts(positions, FT, rest_height=REST, options=o)
    runs = contact_intervals(found)
    assert np.all(runs[:, 1] - runs[:, 0] >= round(o.min_duration / FT))
    lift = positions[:, 2] - REST
    k = max(int(round(o.speed_window / (2 * FT))), 1)
    idx = np.arange(len(positions))
    after, before = np.minimum(idx + k, len(idx) - 1), np.maximum(idx - k, 0)
    v = np.linalg.norm(positions[after] - positions[before], axis=-1) / ((after - before) * FT)
    outside_band = found & ((lift >= release * height) | (v >= release * speed))
    gap = int(round(o.min_gap / FT))
    stretches = contact_intervals(outside_band)
    assert np.all(stretches[:, 1] - stretches[:, 0] < gap)  # only closed gaps lie outside the band
    assert not np.any(outside_band[runs[:, 0]]) and not np.any(outside_band[runs[:, 1] - 1])
