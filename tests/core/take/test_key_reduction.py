# SPDX-License-Identifier: GPL-3.0-or-later
"""Key reduction keeps the fewest frames whose interpolation stays within the tolerance where it is measured."""

from __future__ import annotations

import numpy as np
import pytest

from ik_core.errors import InvalidInputError
from ik_core.take.key_reduction import interpolate_kept, keep_frames


def _arm_tip(q: np.ndarray) -> np.ndarray:
    """(k, 2) tip of a planar 2-link arm (0.5 m links) for joint angles q (k, 2)."""
    a, b = q[:, 0], q[:, 0] + q[:, 1]
    return np.column_stack([0.5 * np.cos(a) + 0.5 * np.cos(b), 0.5 * np.sin(a) + 0.5 * np.sin(b)])


def test_a_straight_line_keeps_only_its_ends():
    values = np.linspace(0.0, 1.0, 50)[:, None] * np.array([1.0, -2.0])
    kept = keep_frames(values, lambda f, v: np.abs(v - values[f]).max(axis=1), 1e-9)
    np.testing.assert_array_equal(kept, [0, 49])


@pytest.mark.parametrize("tolerance", [1e-3, 3e-3, 1e-2])
def test_every_frame_stays_within_the_tolerance_and_keys_drop(tolerance):
    """A smooth two-joint motion: interpolating the kept frames moves the tip by at most the tolerance on every
    frame, and a looser tolerance keeps fewer frames."""
    t = np.linspace(0.0, 2.0 * np.pi, 400)
    q = np.column_stack([0.8 * np.sin(t), 1.0 + 0.6 * np.sin(2.0 * t + 0.3)])
    tips = _arm_tip(q)

    def deviation(frames, interpolated):
        return np.linalg.norm(_arm_tip(interpolated) - tips[frames], axis=1)

    kept = keep_frames(q, deviation, tolerance)
    played = _arm_tip(interpolate_kept(q, kept))
    assert np.linalg.norm(played - tips, axis=1).max() <= tolerance
    assert len(kept) < len(q) / 3
    if tolerance < 1e-2:
        assert len(keep_frames(q, deviation, tolerance * 10)) < len(kept)


def test_frames_that_must_stay_stay_and_a_jump_is_kept_sharp():
    values = np.concatenate([np.zeros(20), np.ones(20)])[:, None]
    must = np.zeros(40, dtype=bool)
    must[7] = True
    kept = keep_frames(values, lambda f, v: np.abs(v - values[f])[:, 0], 1e-6, must_keep=must)
    assert {0, 7, 19, 20, 39} <= set(kept.tolist())
    np.testing.assert_allclose(interpolate_kept(values, kept), values)


def test_a_nan_deviation_counts_as_too_far():
    values = np.linspace(0.0, 1.0, 9)[:, None]
    kept = keep_frames(values, lambda f, v: np.full(len(f), np.nan), 1.0)
    np.testing.assert_array_equal(kept, np.arange(9))


@pytest.mark.parametrize("values, tolerance", [(np.zeros((0, 2)), 0.1), (np.array([[np.nan]]), 0.1),
                                               (np.zeros((3, 1)), -1.0), (np.zeros((3, 1)), np.inf)])
def test_bad_input_is_named(values, tolerance):
    with pytest.raises(InvalidInputError):
        keep_frames(values, lambda f, v: np.zeros(len(f)), tolerance)


def test_grids_find_no_more_keys_than_splitting_alone_and_keep_the_bound():
    """On smooth motion played by Blender's curves, starting from even grids never keeps more frames than
    splitting at the worst frame, and every frame still plays within the tolerance."""
    from ik_core.take.key_reduction import fewest_keys, interpolate_auto_clamped

    t = np.linspace(0.0, 2.0 * np.pi, 240)
    q = np.column_stack([0.8 * np.sin(t), 1.0 + 0.6 * np.sin(2.0 * t + 0.3)])
    tips = _arm_tip(q)

    def deviation(frames, interpolated):
        return np.linalg.norm(_arm_tip(interpolated) - tips[frames], axis=1)

    split = keep_frames(q, deviation, 1e-3, interpolate=interpolate_auto_clamped)
    best = fewest_keys(q, deviation, 1e-3, interpolate=interpolate_auto_clamped)
    assert len(best) <= len(split)
    played = _arm_tip(interpolate_auto_clamped(q, best))
    assert np.linalg.norm(played - tips, axis=1).max() <= 1e-3
