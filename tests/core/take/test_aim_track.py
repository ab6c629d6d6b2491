# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of an aim chain over a take: base frames, no twist creeping in, continuity behind a limited chain."""

from __future__ import annotations

import numpy as np

from ik_core.limits import SwingTwistLimit, limit_violation
from ik_core.model.kinematics import forward_kinematics
from ik_core.model.rotations import rotvec_to_matrix
from ik_core.model.skeleton import Joint, JointKind, Skeleton
from ik_core.solvers.aim import AimSolver
from ik_core.take.aim_track import track_aim
from ik_core.take.steps import take_steps


def translation(p) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = p
    return T


def neck_and_head(limit=None) -> Skeleton:
    return Skeleton([Joint("neck", JointKind.BALL, -1, limit=limit),
                     Joint("head", JointKind.BALL, 0, translation((0.0, 0.15, 0.0)), limit=limit)])


def moving_bases(n: int) -> np.ndarray:
    """(n, 4, 4) base frames that turn, move and carry a uniform scale of 2."""
    base = np.empty((n, 4, 4))
    for k in range(n):
        base[k] = translation((0.1 * k, 0.0, 1.0))
        base[k, :3, :3] = 2.0 * rotvec_to_matrix(np.array([0.0, 0.0, 0.02 * k]))
    return base


def test_world_targets_are_aimed_at_through_moving_scaled_bases():
    """The tip's world axis points at the world target on every frame, whatever the base does."""
    n = 24
    skel = neck_and_head()
    base = moving_bases(n)
    t = np.linspace(0, 2 * np.pi, n)
    targets = np.stack([3 * np.cos(t), 3 * np.sin(t), 1.0 + np.sin(2 * t)], axis=1)
    solver = AimSolver(skel, spread=0.5, up_axis=(0, 0, 1), tolerance=1e-5)
    res = track_aim(solver, base, targets, up=(0.0, 0.0, 1.0))
    head = base @ forward_kinematics(skel, res.q)[:, 1]
    axis = head[:, :3, 1] / np.linalg.norm(head[:, :3, 1], axis=-1, keepdims=True)
    d = targets - head[:, :3, 3]
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    assert res.converged.all()
    assert np.all(np.arccos(np.clip(np.sum(axis * d, axis=-1), -1, 1)) <= 2e-5)
    # The up axis (+Z of the head) is on the world-up side of the aim.
    up = head[:, :3, 2]
    assert np.all(up[:, 2] > 0)
    np.testing.assert_allclose(res.up_error, 0.0, atol=1e-3)


def test_no_twist_creeps_in_when_the_target_circles():
    """Every frame from one start: after a full circle the pose is the pose of the first frame."""
    n = 60
    skel = neck_and_head()
    base = np.broadcast_to(np.eye(4), (n, 4, 4))
    t = np.linspace(0, 2 * np.pi, n)
    targets = np.stack([np.sin(t), 3.0 + 0 * t, np.cos(t)], axis=1)  # circles in front of the face
    res = track_aim(AimSolver(skel, spread=0.5), base, targets, np.zeros(skel.dof))
    np.testing.assert_allclose(res.q[-1], res.q[0], atol=1e-9)
    # Chained smallest turns (each frame from the one before) do gather a twist over the circle.
    solver = AimSolver(skel, spread=0.5)
    q = np.zeros(skel.dof)
    for k in range(n):
        q = solver.solve(targets[k], q).q
    assert np.max(np.abs(q - res.q[0])) > 1e-3


def test_a_target_crossing_behind_the_chain_does_not_flip_the_pose():
    """Smallest turns from the start flip sides as the target crosses the back; warm starts keep the pose moving on."""
    n = 40
    skel = neck_and_head()
    base = np.broadcast_to(np.eye(4), (n, 4, 4))
    phi = np.linspace(0.6 * np.pi, 1.4 * np.pi, n)  # from the left, behind, to the right
    targets = np.stack([-4 * np.sin(phi), 4 * np.cos(phi), 0.3 + 0 * phi], axis=1)
    solver = AimSolver(skel, spread=0.5)
    plain = solver.solve(targets, np.zeros(skel.dof))
    assert take_steps(skel, plain.q, None).max() > 1.0  # a flip from one side to the other
    res = track_aim(solver, base, targets, np.zeros(skel.dof), max_jump=0.1)
    assert res.converged.all()
    assert take_steps(skel, res.q, None).max() < 0.1


def test_limits_hold_over_a_take_and_frames_out_of_range_say_so():
    """A limited chain over a target passing behind it: inside the limits, the misses reported with a reason."""
    n = 30
    skel = neck_and_head(SwingTwistLimit((-0.6, -0.2, -0.6), (0.6, 0.2, 0.6)))
    base = np.broadcast_to(np.eye(4), (n, 4, 4))
    phi = np.linspace(0.0, 2 * np.pi, n)
    targets = np.stack([-4 * np.sin(phi), 4 * np.cos(phi), 0.3 + 0 * phi], axis=1)
    res = track_aim(AimSolver(skel, spread=0.5), base, targets, np.zeros(skel.dof))
    assert np.all(limit_violation(skel, res.q) <= 1e-9)
    assert res.converged[0] and not res.converged[n // 2]
    assert all("deg short" in r for r in res.reason[~res.converged])


def test_fast_smooth_motion_keeps_every_frame_from_the_start():
    """Steps above max_jump that are no flip (a target moving fast in front) keep the answer from the start."""
    n = 12
    skel = neck_and_head()
    base = np.broadcast_to(np.eye(4), (n, 4, 4))
    phi = np.linspace(-1.2, 1.2, n)  # about 0.2 rad per frame
    targets = np.stack([3 * np.sin(phi), 3 * np.cos(phi), 1.0 + np.sin(3 * phi)], axis=1)
    solver = AimSolver(skel, spread=0.5)
    plain = solver.solve(targets, np.zeros(skel.dof))
    assert take_steps(skel, plain.q, None).max() > 0.1
    res = track_aim(solver, base, targets, np.zeros(skel.dof), max_jump=0.1)
    np.testing.assert_array_equal(res.q, plain.q)
