# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of a timed file's clock: its sample rate, the rate as fps / fps_base, the frames of its samples."""

from __future__ import annotations

import numpy as np
import pytest

from ik_core.trajectory import MAX_FRAME_RATE, TrajectoryError, frame_rate_parts, sample_frames, sample_rate


@pytest.mark.parametrize("rate", [10.0, 24.0, 29.97, 100.0, 240.0, 1000.0])
def test_evenly_sampled_files_give_their_rate(rate):
    """Times k / rate give back the rate to rounding."""
    assert sample_rate(np.arange(50) / rate) == pytest.approx(rate, rel=1e-12)


def test_rounded_time_stamps_give_the_whole_rate():
    """60 Hz stamps written with 4 decimals (steps of 0.0166 and 0.0167 s) read as 60 Hz, not 59.88."""
    assert sample_rate(np.round(np.arange(61) / 60, 4)) == pytest.approx(60.0, rel=1e-12)


def test_dropped_samples_and_jitter_keep_the_rate():
    """A 100 Hz log missing 3 samples and jittering by 2 % of a step is still 100 Hz (within the jitter)."""
    rng = np.random.default_rng(0)
    t = np.delete(np.arange(200) / 100.0, [40, 41, 120, 170])
    t = t + rng.uniform(-0.0002, 0.0002, t.size)
    assert sample_rate(t) == pytest.approx(100.0, rel=1e-3)


@pytest.mark.parametrize("times", [[0.0], [0.0, 1.0, 5.0], [0.0, 0.1, 0.2, 1.0, 1.1, 3.0, 3.1]])
def test_waypoints_and_single_samples_have_no_rate(times):
    """Uneven steps (waypoints) and one sample give None: the scene's rate is kept."""
    assert sample_rate(np.array(times)) is None


@pytest.mark.parametrize(("rate", "fps", "base"), [(24.0, 24, 1.0), (100.0, 100, 1.0), (29.97, 30, 30 / 29.97),
                                                    (23.976, 24, 24 / 23.976), (0.5, 1, 2.0)])
def test_frame_rate_parts(rate, fps, base):
    """fps is a whole number, fps / fps_base the rate; whole rates keep fps_base exactly 1."""
    got_fps, got_base = frame_rate_parts(rate)
    assert got_fps == fps and got_base == pytest.approx(base, rel=1e-12)
    assert got_fps / got_base == pytest.approx(rate, rel=1e-12)
    if base == 1.0:
        assert got_base == 1.0


@pytest.mark.parametrize("rate", [0.0, -5.0, float("nan"), float("inf"), MAX_FRAME_RATE + 1.0])
def test_frame_rate_parts_refuses_bad_rates(rate):
    with pytest.raises(TrajectoryError, match="frame rate must be a number in"):
        frame_rate_parts(rate)


def test_sample_frames_put_the_first_sample_on_the_start_frame():
    """Samples from t0 = 2.5 s at 240 Hz on a 24 fps scene from frame 10 fall every tenth of a frame."""
    t = 2.5 + np.arange(21) / 240.0
    np.testing.assert_allclose(sample_frames(t, 24.0, 10), 10 + np.arange(21) / 10.0, atol=1e-12)
