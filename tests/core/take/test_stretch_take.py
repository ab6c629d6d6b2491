# SPDX-License-Identifier: GPL-3.0-or-later
"""Stretching a chain toward targets beyond its reach (the IK constraint's Stretch)."""

from __future__ import annotations

import numpy as np
import pytest

from ik_core import Effector, Joint, JointKind, Skeleton, effector_poses, make_solver
from ik_core.errors import InvalidInputError
from ik_core.take.stretch import MAX_STRETCH, stretch_take, stretch_weights, stretched_skeleton
from ik_core.take.tracking import solve_track

LENGTHS = (0.5, 0.4, 0.3)


def arm(tilt: float = 0.3) -> Skeleton:
    """Three ball joints, bones along local Y, the first tilted about X (an odd rest frame)."""
    joints = []
    for i in range(len(LENGTHS)):
        origin = np.eye(4)
        if i == 0:
            c, s = np.cos(tilt), np.sin(tilt)
            origin[:3, :3] = [[1, 0, 0], [0, c, -s], [0, s, c]]
        else:
            origin[1, 3] = LENGTHS[i - 1]
        joints.append(Joint(f"b{i}", JointKind.BALL, i - 1, origin))
    tip = np.eye(4)
    tip[1, 3] = LENGTHS[-1]
    return Skeleton(joints, [Effector("tip", 2, tip)])


def solve(skeleton: Skeleton, targets: np.ndarray, stretch, scale: float = 1.0):
    solver = make_solver("fabrik", skeleton, "tip", tolerance=1e-5)
    result = solve_track(solver, targets, np.zeros(skeleton.dof))

    def solve_frame(longer: Skeleton, f: int, q0: np.ndarray):
        return make_solver("fabrik", longer, "tip", tolerance=1e-5).solve(targets[f:f + 1], q0)

    return stretch_take(result, skeleton, stretch, LENGTHS, solve_frame, scale)


def test_frames_beyond_reach_stretch_onto_the_target_and_the_rest_keep_their_length():
    skeleton = arm()
    rng = np.random.default_rng(1)
    d = rng.normal(size=(12, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    dist = np.where(np.arange(12) % 3 == 0, 1.6, 0.8)  # reach is 1.2: every third frame is out
    targets = d * dist[:, None]
    out = solve(skeleton, targets, [0.2, 0.6, 1.0])
    assert out.result.converged.all(), out.result.reason
    np.testing.assert_array_equal(out.stretched, dist > 1.2)
    np.testing.assert_array_equal(out.factors[~out.stretched], 1.0)
    for f in np.flatnonzero(out.stretched):
        longer = stretched_skeleton(skeleton, out.factors[f])
        tip = effector_poses(longer, out.result.q[f], "tip")[:3, 3]
        assert np.linalg.norm(tip - targets[f]) <= 1e-5
        added = (out.factors[f] - 1.0) * LENGTHS
        # shared in proportion to Blender's stretch freedom, ik_stretch squared
        np.testing.assert_allclose(added / added.sum(), stretch_weights([0.2, 0.6, 1.0]) / 1.4, rtol=1e-9)
        assert 0.4 <= added.sum() <= 0.45  # the 0.4 m miss, plus a little more that keeps it reachable


def test_no_stretchy_bone_changes_nothing():
    skeleton = arm()
    targets = np.array([[0.0, 2.0, 0.0], [0.0, 0.5, 0.5]])
    out = solve(skeleton, targets, [0.0, 0.0, 0.0])
    assert not out.stretched.any() and not out.result.converged[0]
    np.testing.assert_array_equal(out.factors, 1.0)


def test_a_target_past_the_longest_stretch_is_a_best_effort_with_a_reason():
    skeleton = arm()
    targets = np.array([[0.0, 50.0, 0.0]])
    out = solve(skeleton, targets, [0.0, 0.0, 1.0])  # only the 0.3 m bone stretches: at most 3 m more
    assert not out.result.converged[0]
    assert out.factors[0, 2] == pytest.approx(MAX_STRETCH)
    assert "stretched bones up to 10x" in out.result.reason[0]
    assert np.all(np.isfinite(out.result.q))


def test_errors_in_world_units_are_converted_by_the_scale():
    skeleton = arm()
    targets = np.array([[0.0, 1.5, 0.0]])
    out = solve(skeleton, targets, [1.0, 1.0, 1.0], scale=1.0)
    assert out.result.converged[0]
    # the same take reported in centimetres: the first guess is scaled back, the answer is the same
    solver = make_solver("fabrik", skeleton, "tip", tolerance=1e-5)
    res = solve_track(solver, targets, np.zeros(skeleton.dof))
    res.position_error[:] *= 100.0

    def solve_frame(longer, f, q0):
        r = make_solver("fabrik", longer, "tip", tolerance=1e-5).solve(targets[f:f + 1], q0)
        r.position_error[:] *= 100.0
        return r

    cm = stretch_take(res, skeleton, [1.0, 1.0, 1.0], LENGTHS, solve_frame, scale=100.0)
    np.testing.assert_allclose(cm.factors, out.factors, rtol=1e-9)


def test_bad_input_is_named():
    skeleton = arm()
    with pytest.raises(InvalidInputError, match="3 finite values"):
        stretched_skeleton(skeleton, [1.0, 0.0, 1.0])
    out = solve(skeleton, np.array([[0.0, 0.5, 0.5]]), [1.0, 1.0, 1.0])
    with pytest.raises(InvalidInputError, match="3 values each"):
        stretch_take(out.result, skeleton, [1.0, 1.0], LENGTHS, lambda *a: None)
