# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of the self-motion search (ik_core.take.grid) and the take repair built on it (ik_core.take.repair)."""

from __future__ import annotations

import numpy as np
import pytest

from ik_core.model.kinematics import effector_poses
from ik_core.model.rotations import rotation_error
from ik_core.robots import presets as robots
from ik_core.solvers.base import IKResult
from ik_core.solvers.dls.solver import DLSSolver
from ik_core.take.grid import track_grid
from ik_core.take.held import held_candidates
from ik_core.take.repair import jump_score, search_repair
from ik_core.take.tracking import solve_track

MAX_JUMP = 0.1
TOL = 1e-6


def solver_for(skeleton) -> DLSSolver:
    return DLSSolver(skeleton, 0, mode="full", tolerance=TOL, rotation_tolerance=TOL, restarts=4)


def cartesian_path(skeleton, frames: int, seed: int = 0) -> np.ndarray:
    """(frames, dof) slow sinusoids inside 60 % of each range at 100 Hz (bench_cartesian's paths)."""
    rng = np.random.default_rng(seed)
    lo, hi = np.maximum(skeleton.lower, -np.pi), np.minimum(skeleton.upper, np.pi)
    mid, amp = (lo + hi) / 2, 0.6 * (hi - lo) / 2
    t = np.linspace(0.0, frames / 100.0, frames)[:, None, None]
    freq = rng.uniform(0.02, 0.15, size=(1, 3, skeleton.dof))
    phase = rng.uniform(0, 2 * np.pi, size=(1, 3, skeleton.dof))
    return mid + amp * np.mean(np.sin(2 * np.pi * freq * t + phase), axis=1)


@pytest.fixture(scope="module")
def panda():
    return robots.load_preset("panda")


def test_searched_path_reaches_every_target_in_small_steps(panda) -> None:
    """The cheapest grid path over a Panda take converges on every frame and never steps above max_jump."""
    q_path = cartesian_path(panda, 400)
    targets = effector_poses(panda, q_path, 0)
    solver = solver_for(panda)
    held = held_candidates(solver, q_path[::10])[0]
    (q, ok), *_ = track_grid(solver, targets, q_path[0], MAX_JUMP, held)
    assert ok.all()
    assert jump_score(panda, q, q_path[0], MAX_JUMP) == (0, 0.0)
    reached = effector_poses(panda, q, 0)
    assert np.abs(reached[:, :3, 3] - targets[:, :3, 3]).max() <= TOL
    assert rotation_error(reached[:, :3, :3], targets[:, :3, :3]).max() <= TOL
    assert panda.within_limits(q).all()


def test_search_keeps_a_smooth_incumbent_smooth(panda) -> None:
    """With the generating path as the incumbent, the cheapest path is no worse: converged, no jump."""
    q_path = cartesian_path(panda, 200, seed=1)
    targets = effector_poses(panda, q_path, 0)
    solver = solver_for(panda)
    paths = track_grid(solver, targets, q_path[0], MAX_JUMP, (0,), incumbent=q_path, incumbent_ok=np.ones(200, bool))
    q, ok = paths[0]
    assert ok.all()
    assert jump_score(panda, q, q_path[0], MAX_JUMP)[0] == 0


def test_repair_leaves_a_clean_take_alone(panda) -> None:
    q_path = cartesian_path(panda, 300, seed=2)
    targets = effector_poses(panda, q_path, 0)
    solver = solver_for(panda)
    res = solve_track(solver, targets, q_path[0])
    assert jump_score(panda, res.q, q_path[0], MAX_JUMP)[0] == 0
    fields = {f: np.array(getattr(res, f)) for f in IKResult.__dataclass_fields__}
    before = {f: v.copy() for f, v in fields.items()}

    def never(*args):
        raise AssertionError("a clean take needs no tracking")

    assert search_repair(solver, targets, fields, q_path[0], MAX_JUMP, never) is False
    for f in fields:
        np.testing.assert_array_equal(fields[f], before[f])


def test_repair_clears_a_hard_iiwa_take() -> None:
    """A 1,500-frame iiwa take that jumps 42 times frame by frame is repaired without a jump.

    Its path crosses the folds of every single held variable (q3 where q6 = 0, q5 where
    q2 = 0, the elbow near q4 = 0): only the paired grids, with second layers seeded where the
    other variable folds, carry a path across all of them.
    """
    iiwa = robots.load_preset("lbr_iiwa_14_r820")
    q_path = cartesian_path(iiwa, 1500, seed=4)
    targets = effector_poses(iiwa, q_path, 0)
    solver = solver_for(iiwa)
    res = solve_track(solver, targets, q_path[0])
    fields = {f: np.array(getattr(res, f)) for f in IKResult.__dataclass_fields__}
    before = jump_score(iiwa, fields["q"], q_path[0], MAX_JUMP)

    def track(rest, q0):
        return solve_track(solver, rest, q0)

    assert before[0] > 10  # the frame-by-frame take this repair exists for
    assert search_repair(solver, targets, fields, q_path[0], MAX_JUMP, track)
    assert jump_score(iiwa, fields["q"], q_path[0], MAX_JUMP) == (0, 0.0)
    assert fields["converged"].all()
    assert iiwa.within_limits(fields["q"]).all()


def test_panda_ten_thousand_frame_path_tracks_without_a_flip(panda) -> None:
    """Issue 5's Cartesian path: frame by frame the self-motion drifts onto q1's limit and flips; a bake does not."""
    q_path = cartesian_path(panda, 10_000)
    targets = effector_poses(panda, q_path, 0)
    solver = DLSSolver(panda, "tool", mode="full", tolerance=1e-5, rotation_tolerance=1e-5, restarts=4)
    plain = solve_track(solver, targets, q_path[0])
    assert jump_score(panda, plain.q, q_path[0], MAX_JUMP)[0] >= 1  # the flip this pass exists for
    res = solve_track(solver, targets, q_path[0], look_ahead=True)
    assert res.converged.all()
    assert jump_score(panda, res.q, q_path[0], MAX_JUMP) == (0, 0.0)
    assert panda.within_limits(res.q).all()
