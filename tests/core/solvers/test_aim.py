# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of the aim solver: exact aims, limits, spread, up axis, best effort with reasons, degenerate input."""

from __future__ import annotations

import numpy as np
import pytest

from ik_core.errors import InvalidInputError
from ik_core.limits import ConeTwistLimit, EulerLimit, SwingTwistLimit, limit_violation, project_configuration
from ik_core.model.kinematics import forward_kinematics
from ik_core.model.rotations import rotvec_to_matrix
from ik_core.model.skeleton import Joint, JointKind, Skeleton
from ik_core.solvers.aim import AimSolver, spread_weights

TOL = 1e-4


def frame(rng: np.random.Generator, offset: float) -> np.ndarray:
    """A rest frame with a random rotation and a random offset of about ``offset`` [m]."""
    T = np.eye(4)
    T[:3, :3] = rotvec_to_matrix(rng.normal(size=3))
    T[:3, 3] = rng.normal(size=3) * offset
    return T


def odd_chain(rng: np.random.Generator, n: int, limits: bool = False) -> Skeleton:
    """A chain of ball joints whose rest frames are turned every which way (no joint aligned with another)."""
    joints = []
    for i in range(n):
        limit = None
        if limits:
            limit = [ConeTwistLimit(rng.uniform(0.3, 1.0), rng.uniform(0.3, 1.0), -0.4, 0.4),
                     SwingTwistLimit((-0.6, -0.3, -0.5), (0.4, 0.3, 0.7)),
                     EulerLimit((-0.5, -0.4, -0.6), (0.5, 0.2, 0.6))][i % 3]
        joints.append(Joint(f"j{i}", JointKind.BALL, i - 1, frame(rng, 0.3 if i else 0.0), limit=limit))
    return Skeleton(joints)


def aim_of(skel: Skeleton, q: np.ndarray, axis, joint: int = -1, origin=(0.0, 0.0, 0.0)):
    """World aim origin and axis computed here from forward kinematics (not by the solver)."""
    T = forward_kinematics(skel, q)[..., joint, :, :]
    return T[..., :3, 3] + T[..., :3, :3] @ np.asarray(origin), T[..., :3, :3] @ np.asarray(axis, dtype=float)


def angle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    return np.arctan2(np.linalg.norm(np.cross(a, b), axis=-1), np.sum(a * b, axis=-1))


def bone_angles(skel: Skeleton, qa: np.ndarray, qb: np.ndarray) -> np.ndarray:
    """(..., joints) rotation angle of each ball joint between two configurations [rad]."""
    out = []
    for i in range(len(skel.joints)):
        s = skel.q_index[i]
        Ra, Rb = rotvec_to_matrix(qa[..., s : s + 3]), rotvec_to_matrix(qb[..., s : s + 3])
        out.append(angle_between(Ra, Rb))
    return np.stack(out, axis=-1)


def angle_between(Ra: np.ndarray, Rb: np.ndarray) -> np.ndarray:
    c = (np.trace(np.swapaxes(Ra, -1, -2) @ Rb, axis1=-2, axis2=-1) - 1.0) / 2.0
    return np.arccos(np.clip(c, -1.0, 1.0))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("axis", [(0.0, 1.0, 0.0), (-1.0, 0.0, 0.0), (0.3, -0.2, 0.9)])
def test_aims_exactly_at_any_direction_on_odd_chains(seed, axis):
    """Unlimited ball chains with turned rest frames aim any axis at targets all around, from any start."""
    rng = np.random.default_rng(seed)
    skel = odd_chain(rng, int(rng.integers(1, 5)))
    solver = AimSolver(skel, aim_axis=axis, spread=float(rng.uniform()), tolerance=TOL)
    targets = rng.normal(size=(40, 3)) * 3.0
    q0 = rng.normal(size=(40, skel.dof))
    res = solver.solve(targets, q0)
    o, a = aim_of(skel, res.q, axis)
    err = angle(a, targets - o)
    assert res.converged.all(), set(res.reason)
    assert np.all(err <= TOL)
    np.testing.assert_allclose(res.aim_error, err, atol=1e-9)
    assert set(res.reason) == {"converged"}
    assert np.isfinite(res.q).all()


def test_an_origin_off_the_joint_converges_by_iterating():
    """Eyes in front of the head's pivot: turning the head moves the origin, and the solve still meets the aim."""
    rng = np.random.default_rng(5)
    skel = odd_chain(rng, 2)
    origin = (0.0, 0.08, 0.12)
    solver = AimSolver(skel, origin=origin, tolerance=TOL)
    targets = rng.normal(size=(30, 3)) * 2.0
    targets += np.sign(targets) * 0.5  # keep them off the origin's sphere
    res = solver.solve(targets)
    o, a = aim_of(skel, res.q, (0, 1, 0), origin=origin)
    assert res.converged.all()
    assert np.all(angle(a, targets - o) <= TOL)
    assert res.iterations.max() > 1  # the origin moved: one pass did not suffice


@pytest.mark.parametrize("seed", range(3))
def test_limits_hold_and_misses_say_how_far_short(seed):
    """Limited chains never leave their limits; a frame aims within tolerance or says how far short it stops."""
    rng = np.random.default_rng(seed)
    skel = odd_chain(rng, 3, limits=True)
    solver = AimSolver(skel, spread=0.7, up_axis=(0, 0, 1), tolerance=TOL)
    targets = rng.normal(size=(60, 3)) * 3.0
    res = solver.solve(targets, rng.normal(size=(60, skel.dof)), up=(0.0, 0.0, 1.0))
    assert np.all(limit_violation(skel, res.q) <= 1e-9)
    o, a = aim_of(skel, res.q, (0, 1, 0))
    err = angle(a, targets - o)
    assert np.array_equal(res.converged, err <= TOL)
    assert res.converged.any() and not res.converged.all()  # the case tests both outcomes
    for r, e in zip(res.reason[~res.converged], err[~res.converged]):
        assert "deg short" in r and f"{np.degrees(e):.1f}" in r


def test_spread_zero_turns_the_tip_alone_and_spread_one_shares_the_turn():
    """With spread 0 the joints above the tip keep their start; with spread 1 the root turns a real share."""
    rng = np.random.default_rng(11)
    skel = odd_chain(rng, 3)
    targets = rng.normal(size=(30, 3)) * 4.0
    q0 = np.zeros((30, skel.dof))
    alone = AimSolver(skel, spread=0.0, tolerance=TOL).solve(targets, q0)
    shared = AimSolver(skel, spread=1.0, tolerance=TOL).solve(targets, q0)
    assert alone.converged.all() and shared.converged.all()
    a_alone, a_shared = bone_angles(skel, q0, alone.q), bone_angles(skel, q0, shared.q)
    np.testing.assert_allclose(a_alone[:, :2], 0.0, atol=1e-12)
    big = a_alone[:, 2] > 0.3
    assert big.sum() > 10
    # Shared: the root takes about a third of the turn, the tip much less than alone.
    assert np.all(a_shared[big, 0] > 0.15 * a_alone[big, 2])
    assert np.mean(a_shared[big, 2]) < 0.7 * np.mean(a_alone[big, 2])


def test_explicit_weights_decide_which_joint_turns_most():
    """Weights (1, 0, 0) turn the root first; the tip only corrects what the root's turn left."""
    rng = np.random.default_rng(12)
    skel = odd_chain(rng, 3)
    targets = rng.normal(size=(20, 3)) * 20.0  # far: the root's turn leaves little to correct
    q0 = np.zeros((20, skel.dof))
    res = AimSolver(skel, weights=(1.0, 0.0, 0.0), tolerance=TOL).solve(targets, q0)
    assert res.converged.all()
    turns = bone_angles(skel, q0, res.q)
    np.testing.assert_allclose(turns[:, 1], 0.0, atol=1e-12)
    assert np.all(turns[:, 0] > turns[:, 2])


def test_a_tip_stopped_by_its_limit_passes_the_rest_on_even_with_spread_zero():
    """Spread 0 with a stiffly limited tip: the parents take what the tip cannot, and the aim is met."""
    joints = [
        Joint("spine", JointKind.BALL, -1),
        Joint("neck", JointKind.BALL, 0, np.array([[1, 0, 0, 0], [0, 1, 0, 0.5], [0, 0, 1, 0], [0, 0, 0, 1.0]])),
        Joint("head", JointKind.BALL, 1, np.array([[1, 0, 0, 0], [0, 1, 0, 0.2], [0, 0, 1, 0], [0, 0, 0, 1.0]]),
              limit=SwingTwistLimit((-0.2, -0.1, -0.2), (0.2, 0.1, 0.2))),
    ]
    skel = Skeleton(joints)
    targets = np.array([[3.0, 1.0, 0.5], [-2.0, 2.0, -1.0], [0.5, 1.5, 3.0]])
    res = AimSolver(skel, spread=0.0, tolerance=TOL).solve(targets, np.zeros(9))
    assert res.converged.all()
    assert np.all(limit_violation(skel, res.q) <= 1e-9)
    turns = bone_angles(skel, np.zeros(9), res.q)
    assert np.all(turns[:, :2].max(axis=1) > 0.3)


def yaw_chain(range_deg: float) -> Skeleton:
    """Two yaw hinges (about Z) at the same point, each limited to +/- range_deg: aim +Y turns +/- 2 range."""
    r = np.radians(range_deg)
    return Skeleton([Joint("neck", JointKind.REVOLUTE, -1, axis=(0, 0, 1), lower=-r, upper=r),
                     Joint("head", JointKind.REVOLUTE, 0, axis=(0, 0, 1), lower=-r, upper=r)])


def test_a_target_behind_a_limited_chain_gets_the_closest_aim_and_a_reason():
    """Yaw limited to +/-120 degrees in all: a target straight behind is missed by exactly 60 degrees."""
    skel = yaw_chain(60.0)
    res = AimSolver(skel, spread=0.5, tolerance=TOL).solve(np.array([[0.2, -5.0, 0.0], [-0.2, -5.0, 0.0]]))
    expected = np.pi - np.radians(120.0) - np.arctan2(0.2, 5.0)
    np.testing.assert_allclose(res.aim_error, expected, atol=1e-6)
    assert not res.converged.any()
    assert all(r.startswith("limits stop the aim") and f"{np.degrees(expected):.1f} deg short" in r for r in res.reason)
    assert np.all(limit_violation(skel, res.q) <= 1e-12)
    assert res.q[0, 0] < 0 < res.q[1, 0]  # turned the short way to each side
    assert np.all(res.limit_hits == 2)


def test_hinges_aim_within_their_plane():
    """A yaw-only chain aims exactly at targets in its plane of turn."""
    skel = yaw_chain(90.0)
    phi = np.linspace(-2.5, 2.5, 21)
    targets = np.stack([-np.sin(phi), np.cos(phi), np.zeros_like(phi)], axis=1) * 3.0
    res = AimSolver(skel, spread=1.0, tolerance=TOL).solve(targets)
    assert res.converged.all()
    np.testing.assert_allclose(res.q.sum(axis=1), phi, atol=2 * TOL)
    np.testing.assert_allclose(res.q[:, 0], res.q[:, 1], atol=2 * TOL)  # spread 1: equal shares


@pytest.mark.parametrize("seed", range(3))
def test_up_axis_turns_toward_the_up_direction(seed):
    """With an up axis the tip's up axis lies in the plane of the aim and the up direction, on the up side."""
    rng = np.random.default_rng(seed)
    skel = odd_chain(rng, 3)
    up_dir = rng.normal(size=3)
    solver = AimSolver(skel, aim_axis=(0, 1, 0), up_axis=(0, 0, 1), spread=0.5, tolerance=TOL, up_tolerance=1e-6)
    targets = rng.normal(size=(30, 3)) * 3.0
    res = solver.solve(targets, rng.normal(size=(30, skel.dof)), up=up_dir)
    T = forward_kinematics(skel, res.q)[:, -1]
    d = targets - T[:, :3, 3]
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    u = T[:, :3, 2]
    want = up_dir - (d @ up_dir)[:, None] * d
    assert res.converged.all()
    assert np.all(angle(u, want) <= 1e-5)
    assert np.all(res.up_error <= 1e-5)
    # Without an up the twist is whatever the smallest turns leave: far from the up on some frames.
    free = AimSolver(skel, spread=0.5, tolerance=TOL).solve(targets, rng.normal(size=(30, skel.dof)))
    T = forward_kinematics(skel, free.q)[:, -1]
    assert np.max(angle(T[:, :3, 2], want)) > 0.5


def test_up_points_turn_the_up_axis_toward_a_point():
    """An up object: the up axis turns toward the direction from the aim origin to it."""
    rng = np.random.default_rng(3)
    skel = odd_chain(rng, 2)
    targets = rng.normal(size=(20, 3)) * 3.0
    points = rng.normal(size=(20, 3)) * 3.0
    res = AimSolver(skel, up_axis=(1, 0, 0), tolerance=TOL, up_tolerance=1e-6).solve(targets, up_points=points)
    T = forward_kinematics(skel, res.q)[:, -1]
    d = targets - T[:, :3, 3]
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    p = points - T[:, :3, 3]
    want = p - np.sum(p * d, axis=-1, keepdims=True) * d
    assert res.converged.all()
    assert np.all(angle(T[:, :3, 0], want) <= 1e-5)


def test_the_aim_comes_before_the_up_when_limits_cannot_give_both():
    """A tip whose twist is locked and a parent that cannot twist: the aim is met, the up stays best effort."""
    lim = SwingTwistLimit((-1.2, 0.0, -1.2), (1.2, 0.0, 1.2), (False, True, False))
    skel = Skeleton([Joint("neck", JointKind.BALL, -1, limit=lim),
                     Joint("head", JointKind.BALL, 0, np.array([[1, 0, 0, 0], [0, 1, 0, 0.3], [0, 0, 1, 0],
                                                                 [0, 0, 0, 1.0]]), limit=lim)])
    solver = AimSolver(skel, up_axis=(0, 0, 1), tolerance=TOL)
    targets = np.array([[2.0, 2.0, 0.5], [-1.0, 3.0, 1.0]])
    res = solver.solve(targets, up=(1.0, 0.0, 0.0))  # an up far from where the locked twist allows
    assert res.converged.all()
    assert np.all(limit_violation(skel, res.q) <= 1e-9)
    assert np.all(res.up_error > 0.1)


def test_a_target_on_the_origin_keeps_the_start_pose():
    """No direction to aim along: the start pose (inside the limits), converged False, a reason, no NaN."""
    rng = np.random.default_rng(4)
    skel = odd_chain(rng, 3, limits=True)
    q0 = rng.normal(size=skel.dof)
    origin = forward_kinematics(skel, project_configuration(skel, q0))[-1, :3, 3]
    res = AimSolver(skel, up_axis=(0, 0, 1)).solve(np.stack([origin, origin + 1.0]), q0, up=(0, 0, 1))
    np.testing.assert_array_equal(res.q[0], project_configuration(skel, q0))
    assert not res.converged[0]
    assert "aim origin" in res.reason[0]
    assert np.isfinite(res.q).all() and np.isfinite(res.aim_error).all() and np.isfinite(res.up_error).all()


def test_an_up_along_the_aim_is_ignored_without_nan():
    """An up direction parallel to the aim leaves the twist undefined: the aim is met, up error 0."""
    skel = odd_chain(np.random.default_rng(6), 2)
    target = np.array([0.0, 0.0, 10.0])
    res = AimSolver(skel, up_axis=(0, 0, 1), tolerance=TOL).solve(target[None], up=(0.0, 0.0, 1.0))
    assert res.converged.all() and np.isfinite(res.q).all()
    assert res.up_error[0] < 1e-3  # within the parallax of the origin above the root


def test_a_batch_equals_frame_by_frame():
    """Solving N frames in one call gives what N single calls give (limits and up included)."""
    rng = np.random.default_rng(8)
    skel = odd_chain(rng, 3, limits=True)
    solver = AimSolver(skel, up_axis=(1, 0, 0), spread=0.4)
    targets = rng.normal(size=(12, 3)) * 3.0
    up = rng.normal(size=(12, 3))
    q0 = project_configuration(skel, rng.normal(size=(12, skel.dof)) * 0.3)
    batch = solver.solve(targets, q0, up=up)
    for k in range(12):
        one = solver.solve(targets[k], q0[k], up=up[k])
        np.testing.assert_allclose(one.q, batch.q[k], atol=1e-12)
        assert one.converged == batch.converged[k] and one.reason == batch.reason[k]


def test_nested_batches_keep_their_shape():
    skel = odd_chain(np.random.default_rng(9), 2)
    res = AimSolver(skel).solve(np.random.default_rng(1).normal(size=(2, 3, 3)) * 2.0)
    assert res.q.shape == (2, 3, skel.dof) and res.aim_error.shape == (2, 3) and res.reason.shape == (2, 3)
    assert res[1, 2].q.shape == (skel.dof,)


def test_bad_input_is_refused_with_a_message():
    skel = odd_chain(np.random.default_rng(0), 2)
    with pytest.raises(InvalidInputError, match="finite"):
        AimSolver(skel).solve(np.array([[np.nan, 0.0, 1.0]]))
    with pytest.raises(InvalidInputError, match="along aim_axis"):
        AimSolver(skel, aim_axis=(0, 1, 0), up_axis=(0, -2, 0))
    with pytest.raises(InvalidInputError, match="spread"):
        AimSolver(skel, spread=1.5)
    with pytest.raises(InvalidInputError, match="weights"):
        AimSolver(skel, weights=(0.0, 0.0))
    with pytest.raises(InvalidInputError, match="shape"):
        AimSolver(skel).solve(np.zeros((3, 2)))
    prismatic = Skeleton([Joint("slide", JointKind.PRISMATIC, -1, axis=(0, 1, 0))])
    with pytest.raises(InvalidInputError, match="no rotating joint"):
        AimSolver(prismatic)


def test_spread_weights_sum_to_one_and_blend():
    np.testing.assert_allclose(spread_weights(3, 0.0), [0, 0, 1])
    np.testing.assert_allclose(spread_weights(4, 1.0), [0.25] * 4)
    w = spread_weights(3, 0.6)
    assert np.isclose(w.sum(), 1.0) and w[0] == w[1] < w[2]


def test_mixed_joints_and_extreme_targets_give_finite_poses_inside_the_limits():
    """Hinges, slides, fixed joints and limited balls; targets far, near, behind and exactly opposite: never NaN."""
    T = np.eye(4)
    T[1, 3] = 0.3
    skel = Skeleton([
        Joint("slide", JointKind.PRISMATIC, -1, axis=(0, 0, 1), lower=-0.1, upper=0.1),
        Joint("yaw", JointKind.REVOLUTE, 0, axis=(0, 0, 1), lower=-1.0, upper=1.0),
        Joint("fixed", JointKind.FIXED, 1, T),
        Joint("neck", JointKind.BALL, 2, T, limit=SwingTwistLimit((-0.5, -0.5, -0.5), (0.5, 0.5, 0.5))),
        Joint("head", JointKind.BALL, 3, T),
    ])
    o = forward_kinematics(skel, np.zeros(skel.dof))[-1, :3, 3]
    targets = np.array([
        o + [0.0, 1e6, 0.0], o + [0.0, -1e6, 0.0], o + [1e-12, 0.0, 0.0], o + [0.0, -1.0, 0.0],
        o + [0.0, 0.0, 2.0], o + [3.0, -1.0, -2.0],
    ])
    solver = AimSolver(skel, up_axis=(1, 0, 0), spread=1.0)
    res = solver.solve(targets, up=(0.0, 1.0, 0.0))
    for field in ("q", "aim_error", "up_error"):
        assert np.isfinite(getattr(res, field)).all()
    assert np.all(limit_violation(skel, res.q) <= 1e-9)
    assert res.converged[[0, 1, 3, 4, 5]].all()  # the free head turns any way, even straight back
    assert not res.converged[2] and "aim origin" in res.reason[2]
    np.testing.assert_array_equal(res.q[:, 0], 0.0)  # the slide never moves: an aim does not slide


def test_influence_blends_each_joint_from_rest():
    """Influence 1 keeps the aim, 0 gives the rest pose, 0.5 turns every joint half its angle (limits held)."""
    rng = np.random.default_rng(13)
    skel = odd_chain(rng, 3)
    solver = AimSolver(skel, spread=1.0)
    targets = rng.normal(size=(10, 3)) * 3.0
    full = solver.solve(targets)
    np.testing.assert_allclose(solver.blend(full.q, 1.0), full.q)
    np.testing.assert_array_equal(solver.blend(full.q, np.zeros(10)), 0.0)
    half = solver.blend(full.q, 0.5)
    zero = np.zeros_like(full.q)
    np.testing.assert_allclose(bone_angles(skel, zero, half), 0.5 * bone_angles(skel, zero, full.q), atol=1e-9)
    o, a = aim_of(skel, half, (0, 1, 0))
    assert np.all(angle(a, targets - o) > 1e-3)  # half way: not aimed
    limited = odd_chain(np.random.default_rng(14), 3, limits=True)
    lim_solver = AimSolver(limited)
    blended = lim_solver.blend(lim_solver.solve(targets).q, rng.uniform(size=10))
    assert np.all(limit_violation(limited, blended) <= 1e-9)
    with pytest.raises(InvalidInputError, match="broadcast"):
        solver.blend(full.q, np.ones(3))
