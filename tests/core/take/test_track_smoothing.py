# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of ik_core.take.smoothing: the batched block solve and the look-ahead repair of jumps."""

from __future__ import annotations

import numpy as np
import pytest

from ik_core.model.kinematics import effector_poses
from ik_core.robots import presets as robots
from ik_core.solvers.base import IKResult
from ik_core.solvers.dls.solver import DLSSolver
from ik_core.take.smoothing import _reduce, smooth_windows, solver_targets, spread_jumps
from ik_core.take.tracking import joint_steps

MAX_JUMP = 0.1
FRAMES = 120


def dense(A: np.ndarray, D: np.ndarray, C: np.ndarray) -> np.ndarray:
    """(W n, W n) matrix of one block tridiagonal system."""
    W, n = D.shape[0], D.shape[-1]
    M = np.zeros((W * n, W * n))
    for i in range(W):
        M[i * n : (i + 1) * n, i * n : (i + 1) * n] = D[i]
        if i:
            M[i * n : (i + 1) * n, (i - 1) * n : i * n] = A[i]
        if i + 1 < W:
            M[i * n : (i + 1) * n, (i + 1) * n : (i + 2) * n] = C[i]
    return M


@pytest.mark.parametrize("W", [1, 2, 3, 4, 8, 33])
def test_cyclic_reduction_matches_a_dense_solve(W: int) -> None:
    """Every window of a batch solves its block tridiagonal system as a dense solve does, to 1e-10."""
    rng = np.random.default_rng(W)
    K, n = 3, 7
    M = rng.normal(size=(K, W, n, n))
    D = M @ M.swapaxes(-1, -2) + 4.0 * n * np.eye(n)  # diagonally dominant: well conditioned
    A, C = rng.normal(size=(2, K, W, n, n))
    A[:, 0] = 0.0
    C[:, -1] = 0.0
    r = rng.normal(size=(K, W, n, 1))
    x = _reduce(A, D, C, r)
    for k in range(K):
        expected = np.linalg.solve(dense(A[k], D[k], C[k]), r[k].ravel())
        np.testing.assert_allclose(x[k].ravel(), expected, atol=1e-10)


@pytest.fixture(scope="module")
def panda():
    return robots.load_preset("panda")


@pytest.fixture(scope="module")
def panda_take(panda) -> tuple[np.ndarray, np.ndarray]:
    """A slow joint path (<= 0.02 rad per frame) and its tool poses."""
    t = np.linspace(0.0, 1.0, FRAMES)[:, None]
    mid = 0.5 * (panda.lower + panda.upper)
    q_path = mid + 0.3 * np.sin(2 * np.pi * t * np.array([0.5, 0.7, 0.4, 0.6, 0.8, 0.5, 0.9]) + 0.3)
    return q_path, effector_poses(panda, q_path, 0)


def solver_for(skeleton) -> DLSSolver:
    return DLSSolver(skeleton, 0, mode="full", tolerance=1e-6, rotation_tolerance=1e-6, restarts=4)


def fields_of(solver: DLSSolver, targets: np.ndarray, q: np.ndarray) -> dict:
    """IKResult fields of configurations q as if a solve had returned them."""
    res = solver.solve(targets, q, radius=1e-3)
    return {f: np.array(getattr(res, f)) for f in IKResult.__dataclass_fields__}


def test_a_self_motion_jump_is_spread_below_max_jump(panda, panda_take) -> None:
    """A stretch moved along the Panda's self-motion (a jump in and out) is re-posed jump-free, on target."""
    q_path, targets = panda_take
    solver = solver_for(panda)
    # The same targets from starts shifted along joint 1 and 3: other points of the self-motion.
    shifted = q_path[40:70] + np.array([0.6, 0.0, -0.6, 0.0, 0.0, 0.0, 0.0])
    away = solver.solve(targets[40:70], np.clip(shifted, panda.lower, panda.upper), radius=0.8)
    assert away.converged.all()
    q = q_path.copy()
    q[40:70] = away.q
    fields = fields_of(solver, targets, q)
    steps = np.concatenate([[0.0], joint_steps(panda, q[:-1], q[1:])])
    assert steps.max() > 3 * MAX_JUMP  # the injected jump is real

    def steps_of(qs: np.ndarray) -> np.ndarray:
        return np.concatenate([[0.0], joint_steps(panda, qs[:-1], qs[1:])])

    kept = spread_jumps(solver, targets, fields, q_path[0], MAX_JUMP, steps_of, {})
    assert kept >= 1
    assert fields["converged"].all()
    assert steps_of(fields["q"]).max() <= MAX_JUMP
    assert panda.within_limits(fields["q"]).all()
    poses = effector_poses(panda, fields["q"], 0)
    assert np.abs(poses[:, :3, 3] - targets[:, :3, 3]).max() <= 1e-6


def test_a_take_without_jumps_is_left_alone(panda, panda_take) -> None:
    """No step above max_jump: nothing is re-posed and the fields are unchanged."""
    q_path, targets = panda_take
    solver = solver_for(panda)
    fields = fields_of(solver, targets, q_path)
    before = {f: v.copy() for f, v in fields.items()}

    def steps_of(qs: np.ndarray) -> np.ndarray:
        return np.concatenate([[0.0], joint_steps(panda, qs[:-1], qs[1:])])

    assert spread_jumps(solver, targets, fields, q_path[0], MAX_JUMP, steps_of, {}) == 0
    for f, v in before.items():
        np.testing.assert_array_equal(fields[f], v)


def test_smoothed_windows_stay_inside_the_limits_and_meet_their_targets(panda, panda_take) -> None:
    """From a straight joint-space blend across a window, the result is in limits, smooth and on target."""
    q_path, targets = panda_take
    solver = solver_for(panda)
    tp, tr = solver_targets(solver, targets)
    a, b = 30, 90
    L = b - a
    w = np.arange(1, L + 1)[:, None] / (L + 1)
    blend = (1.0 - w) * q_path[a - 1] + w * q_path[b]
    X = smooth_windows(
        solver, tp[None, a:b], tr[None, a:b], blend[None], np.array([L]), q_path[a - 1][None], q_path[b][None],
        np.array([True]), np.array([True]), 150,
    )[0]
    assert np.all((X >= panda.lower) & (X <= panda.upper))
    assert np.abs(np.diff(np.vstack([q_path[a - 1], X, q_path[b]]), axis=0)).max() <= MAX_JUMP
    poses = effector_poses(panda, X, 0)
    assert np.abs(poses[:, :3, 3] - targets[a:b, :3, 3]).max() <= 1e-4


def test_horizon_pass_is_smooth_on_target_and_joins_the_frame_after(panda, panda_take) -> None:
    """The receding horizon over a stretch: every frame converged, in limits, no step > 0.1 rad, joins included."""
    from ik_core.take.horizon import horizon_pass

    q_path, targets = panda_take
    solver = solver_for(panda)
    b = 100
    res = horizon_pass(solver, targets[:b], q_path[0], MAX_JUMP, {}, after=q_path[b])
    assert res.converged.all()
    assert panda.within_limits(res.q).all()
    assert np.abs(np.diff(np.vstack([q_path[0], res.q, q_path[b]]), axis=0)).max() <= MAX_JUMP


def test_per_frame_task_weights_equal_to_a_scalar_give_the_same_windows(panda, panda_take) -> None:
    """mu_start as a (K, W) array of one value reproduces the scalar schedule exactly; the barrier keeps limits."""
    q_path, targets = panda_take
    solver = solver_for(panda)
    tp, tr = solver_targets(solver, targets)
    X0 = np.repeat(q_path[:1], 60, axis=0)[None]
    args = (solver, tp[None, :60], tr[None, :60], X0, np.array([60]), q_path[:1], q_path[:1], np.array([True]),
            np.array([False]), 30)
    scalar = smooth_windows(*args, limit_weight=0.01, mu_start=10.0)
    per_frame, mu = smooth_windows(*args, limit_weight=0.01, mu_start=np.full((1, 60), 10.0), return_mu=True)
    np.testing.assert_array_equal(scalar, per_frame)
    assert mu.shape == (1, 60) and np.all(mu > 10.0)
    assert np.all((scalar >= panda.lower) & (scalar <= panda.upper))


def test_limit_barrier_leaves_continuous_joints_free_and_finite() -> None:
    """The Kinova Gen3's continuous joints have infinite limits: the barrier skips them instead of turning NaN."""
    from ik_core.robots import presets as robots

    gen3 = robots.load_preset("kinova_gen3_7dof")
    assert not np.all(np.isfinite(gen3.lower))  # the case under test
    rng = np.random.default_rng(5)
    lo, hi = np.maximum(gen3.lower, -2.0), np.minimum(gen3.upper, 2.0)
    q_path = np.linspace(rng.uniform(lo, hi) * 0.5, rng.uniform(lo, hi) * 0.5, 40)
    targets = effector_poses(gen3, q_path, 0)
    solver = solver_for(gen3)
    tp, tr = solver_targets(solver, targets)
    X0 = np.repeat(q_path[:1], 40, axis=0)[None]
    X = smooth_windows(
        solver, tp[None], tr[None], X0, np.array([40]), q_path[:1], q_path[-1:], np.array([True]),
        np.array([True]), 150, limit_weight=0.01,
    )[0]
    assert np.all(np.isfinite(X))
    poses = effector_poses(gen3, X, 0)
    assert np.abs(poses[:, :3, 3] - targets[:, :3, 3]).max() <= 1e-4
