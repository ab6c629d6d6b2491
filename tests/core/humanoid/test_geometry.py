# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of the body solve's geometry helpers: the Gaussian low-pass and its segments."""

from __future__ import annotations

import numpy as np

from ik_core.humanoid.geometry import gaussian_smooth


def test_gaussian_smooth_keeps_constants_and_lowers_noise() -> None:
    """A constant path is returned as is; white noise comes out several times quieter."""
    flat = np.full((50, 3), 0.7)
    np.testing.assert_allclose(gaussian_smooth(flat, 4.0), flat, rtol=0, atol=1e-12)
    noise = np.random.default_rng(0).normal(size=(2000, 2))
    assert np.std(gaussian_smooth(noise, 6.0)) < 0.25 * np.std(noise)


def test_gaussian_smooth_breaks_keep_a_jump_sharp() -> None:
    """With a break at a jump each side is smoothed on its own: the jump is not smeared into its
    neighbours (without the break it is)."""
    x = np.where(np.arange(40) < 20, 0.0, 1.0)[:, None]
    kept = gaussian_smooth(x, 3.0, breaks=(20,))
    np.testing.assert_allclose(kept, x, rtol=0, atol=1e-12)
    smeared = gaussian_smooth(x, 3.0)
    assert 0.0 < smeared[19, 0] < 0.5 < smeared[20, 0] < 1.0
    # Breaks outside the samples, or repeated, change nothing.
    np.testing.assert_array_equal(gaussian_smooth(x, 3.0, breaks=(0, 20, 20, 40)), kept)
