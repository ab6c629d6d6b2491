# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of the closed-form UR path (ik_core.robots.analytic_ur_path): continuity through singularities."""

from __future__ import annotations

import numpy as np
import pytest

from ik_core.errors import InvalidInputError
from ik_core.model.kinematics import effector_poses
from ik_core.robots.analytic_ur import ur_forward, ur_params_from_preset
from ik_core.robots.analytic_ur_path import ur_ik_path
from ik_core.robots.presets import load_preset


def test_path_following_is_continuous():
    """A smooth joint path mapped to poses and back by ur_ik_path returns the same path."""
    params = ur_params_from_preset("ur5e")
    t = np.linspace(0.0, 1.0, 120)[:, None]
    start = np.array([0.2, -1.2, 1.4, -1.5, 1.2, 0.4])
    q = start + np.array([2.5, 0.6, -0.9, 1.0, -0.8, 3.5]) * t  # joint 6 crosses pi, where atan2 wraps
    path, found = ur_ik_path(ur_forward(q, params), params, q_start=q[0])
    assert found.all()
    np.testing.assert_allclose(path, q, rtol=0, atol=1e-9)
    assert np.abs(np.diff(path, axis=0)).max() < 0.1


def test_path_through_the_stretched_arm_stays_continuous():
    """A UR5 path passing the elbow and wrist singularities together (q3 = q5 = 0) is followed without a flip.

    The stretch of bench_cartesian's 10,000-frame path where the arm straightens: with exact
    solutions only (tolerance 1e-9) the gen branch has no valid solution at the edge and the path
    jumps 1.4 rad; with near misses accepted to 1e-5 (the benchmark's tolerance) it stays on its
    branch.
    """
    skeleton = load_preset("ur5")
    params = ur_params_from_preset("ur5")
    rng = np.random.default_rng(0)
    lo, hi = np.maximum(skeleton.lower, -np.pi), np.minimum(skeleton.upper, np.pi)
    mid, amp = (lo + hi) / 2, 0.6 * (hi - lo) / 2
    freq = rng.uniform(0.02, 0.15, size=(1, 3, 6))
    phase = rng.uniform(0, 2 * np.pi, size=(1, 3, 6))
    t = (np.arange(9700, 9850) * 100.0 / 9999)[:, None, None]  # frames 9,700-9,849 at 100 Hz
    q_path = mid + amp * np.mean(np.sin(2 * np.pi * freq * t + phase), axis=1)
    assert np.abs(q_path[:, 2]).min() < 0.01 and np.abs(q_path[:, 4]).min() < 0.01  # the double singularity
    targets = effector_poses(skeleton, q_path, "tool")
    path, found = ur_ik_path(targets, params, q_start=q_path[0], tolerance=1e-5)
    assert found.all()
    assert np.abs(np.diff(np.vstack([q_path[:1], path]), axis=0)).max() <= 0.1
    reached = effector_poses(skeleton, path, "tool")
    assert np.abs(reached[:, :3, 3] - targets[:, :3, 3]).max() <= 1e-5
    with pytest.raises(InvalidInputError, match="max_jump"):
        ur_ik_path(targets, params, max_jump=0.0)
