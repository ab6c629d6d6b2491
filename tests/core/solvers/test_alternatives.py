# SPDX-License-Identifier: GPL-3.0-or-later
"""Alternative poses: every pose reaches, stays in limits, differs from the others, and the ranking holds."""

import numpy as np
import pytest

from ik_core.limits import EulerLimit, SwingTwistLimit, limit_violation
from ik_core.model.distance import joint_steps
from ik_core.model.euler import euler_to_matrix
from ik_core.model.kinematics import effector_poses
from ik_core.model.rotations import axis_angle_to_matrix, matrix_to_rotvec, rotvec_to_matrix
from ik_core.model.skeleton import Effector, Joint, JointKind, Skeleton
from ik_core.solvers.alternatives import alternative_poses, limit_margin, limit_margins, swivel_angles
from ik_core.solvers.dls.solver import DLSSolver

TOL = 1e-5


def _at(x: float = 0.0, y: float = 0.0, z: float = 0.0) -> np.ndarray:
    M = np.eye(4)
    M[:3, 3] = (x, y, z)
    return M


@pytest.fixture(scope="module")
def arm() -> Skeleton:
    """Shoulder (ball, swing-twist limits) + elbow hinge + two-axis wrist: 6 variables for a 3-D target."""
    joints = [
        Joint("shoulder", JointKind.BALL, -1, _at(), limit=SwingTwistLimit((-1.5, -1.0, -1.5), (1.5, 1.0, 1.5))),
        Joint("elbow", JointKind.REVOLUTE, 0, _at(y=0.3), axis=(1, 0, 0), lower=0.0, upper=2.6),
        Joint("wrist_x", JointKind.REVOLUTE, 1, _at(y=0.25), axis=(1, 0, 0), lower=-1.2, upper=1.2),
        Joint("wrist_z", JointKind.REVOLUTE, 2, _at(), axis=(0, 0, 1), lower=-0.6, upper=0.6),
    ]
    return Skeleton(joints, [Effector("tip", 3, _at(y=0.1))])


def _solver(skeleton: Skeleton, mode: str = "position") -> DLSSolver:
    return DLSSolver(skeleton, "tip", mode=mode, tolerance=TOL, restarts=0, null_space_gain=0.0)


def _inside(skeleton: Skeleton, q: np.ndarray) -> np.ndarray:
    """Box ranges, and each ball limit checked on its own rotation (independent of projection)."""
    ok = skeleton.within_limits(q)
    for i, joint in enumerate(skeleton.joints):
        if joint.kind is JointKind.BALL and joint.limit is not None:
            s = skeleton.q_index[i]
            ok &= joint.limit.contains_matrix(rotvec_to_matrix(q[..., s : s + 3]), 1e-7)
    return ok


CURRENT = np.array([0.2, 0.1, -0.3, 0.8, 0.2, 0.1])


def test_redundant_arm_poses_reach_stay_in_limits_and_differ(arm):
    """Several poses; each reaches the target by forward kinematics, inside every limit, pairwise apart."""
    target = effector_poses(arm, CURRENT, "tip")[:3, 3]
    found = alternative_poses(_solver(arm), target, CURRENT, separation=0.3)
    assert len(found) >= 4, found.reason
    tips = effector_poses(arm, found.q, "tip")[:, :3, 3]
    assert np.max(np.linalg.norm(tips - target, axis=-1)) <= TOL
    assert np.all(_inside(arm, found.q))
    assert np.max(limit_violation(arm, found.q)) == 0.0
    for i in range(len(found)):
        apart = joint_steps(arm, found.q[i], np.delete(found.q, i, axis=0))
        assert np.min(apart) >= 0.3
    assert np.all(np.isfinite(found.q)) and np.all(np.isfinite(found.swivel))


def test_ranked_by_score_and_the_current_pose_first(arm):
    """Scores ascend; each is distance plus the limit penalty; a current pose that reaches comes first."""
    target = effector_poses(arm, CURRENT, "tip")[:3, 3]
    found = alternative_poses(_solver(arm), target, CURRENT, comfort=0.25, limit_weight=1.0)
    assert np.all(np.diff(found.score) >= 0)
    np.testing.assert_allclose(found.distance, joint_steps(arm, CURRENT, found.q), atol=1e-12)
    np.testing.assert_allclose(found.margin, limit_margin(arm, found.q), atol=1e-12)
    np.testing.assert_allclose(found.score, found.distance + np.maximum(0.0, 0.25 - found.margin), atol=1e-12)
    assert found.distance[0] < 1e-6
    np.testing.assert_allclose(found.q[0], CURRENT, atol=1e-6)
    assert np.all(found.distance[1:] > 0.3)


def _planar(lower: float = -np.pi, upper: float = np.pi) -> Skeleton:
    """Two hinges about Z, 1 m and 0.8 m, the elbow limited to [lower, upper]."""
    joints = [
        Joint("upper", JointKind.REVOLUTE, -1, _at(), axis=(0, 0, 1), lower=-np.pi, upper=np.pi),
        Joint("lower", JointKind.REVOLUTE, 0, _at(x=1.0), axis=(0, 0, 1), lower=lower, upper=upper),
    ]
    return Skeleton(joints, [Effector("tip", 1, _at(x=0.8))])


def _elbows(target: np.ndarray) -> list[np.ndarray]:
    """The closed form: cos(q2) from the law of cosines, q1 from the triangle; elbow +, then -."""
    a, b, d = 1.0, 0.8, np.linalg.norm(target[:2])
    c2 = (d * d - a * a - b * b) / (2 * a * b)
    out = []
    for q2 in (np.arccos(c2), -np.arccos(c2)):
        q1 = np.arctan2(target[1], target[0]) - np.arctan2(b * np.sin(q2), a + b * np.cos(q2))
        out.append(np.array([q1, q2]))
    return out


def test_a_pose_near_its_limits_is_penalised():
    """The nearer elbow rests 0.05 rad from its limit: first without a limit weight, second with a large one."""
    skeleton = _planar(-1.95, 2.6)
    q_plus = np.array([0.3, 1.9])
    target = effector_poses(skeleton, q_plus, "tip")[:3, 3]
    plus, minus = _elbows(target)
    np.testing.assert_allclose(plus, q_plus, atol=1e-9)
    current = minus + np.array([0.02, 0.03])  # next to the elbow that sits near its -1.95 limit
    plain = alternative_poses(_solver(skeleton), target, current, limit_weight=0.0)
    weighted = alternative_poses(_solver(skeleton), target, current, limit_weight=50.0, comfort=0.3)
    assert len(plain) == len(weighted) == 2
    np.testing.assert_allclose(plain.q[0], minus, atol=1e-4)
    np.testing.assert_allclose(weighted.q[0], plus, atol=1e-4)
    assert weighted.margin[1] == pytest.approx(1.95 - 1.9, abs=1e-4)
    assert weighted.score[1] == pytest.approx(weighted.distance[1] + 50.0 * (0.3 - weighted.margin[1]))


def test_planar_two_joint_chain_gives_exactly_the_two_elbows():
    """Two hinges about Z reaching a point in their plane: elbow one way and the other, nothing else."""
    target = np.array([1.1, 0.6, 0.0])
    found = alternative_poses(_solver(_planar()), target, np.array([0.1, 0.2]))
    assert len(found) == 2, found.reason
    expected = _elbows(target)
    for q in found.q:
        assert min(np.max(np.abs(q - e)) for e in expected) < 1e-4
    assert np.sign(found.q[0, 1]) != np.sign(found.q[1, 1])


def test_unreachable_target_gives_none_and_says_why(arm):
    """A target 5 m away: empty, a reason naming the reach, a finite in-limit best effort; no NaN."""
    found = alternative_poses(_solver(arm), np.array([5.0, 0.0, 0.0]), CURRENT)
    assert len(found) == 0
    assert "out of reach" in found.reason
    assert found.best_effort.shape == (arm.dof,) and np.all(np.isfinite(found.best_effort))
    assert _inside(arm, found.best_effort)


def test_no_nan_for_a_target_on_the_root(arm):
    """A target at the chain's root has no root-to-target line: still finite, whatever comes back."""
    found = alternative_poses(_solver(arm), np.zeros(3), CURRENT)
    assert np.all(np.isfinite(found.best_effort))
    assert np.all(np.isfinite(found.swivel)) and np.all(np.isfinite(found.score))
    assert found.reason


def test_deterministic(arm):
    """Equal inputs give equal poses, bit for bit."""
    target = effector_poses(arm, CURRENT, "tip")[:3, 3]
    a = alternative_poses(_solver(arm), target, CURRENT, rng_seed=3)
    b = alternative_poses(_solver(arm), target, CURRENT, rng_seed=3)
    np.testing.assert_array_equal(a.q, b.q)
    np.testing.assert_array_equal(a.score, b.score)


def test_full_pose_target_is_reached_in_position_and_rotation(arm):
    """In full mode (3 of 6 variables left free by a 6-D target on a 6-variable arm) each pose matches the frame."""
    target = effector_poses(arm, CURRENT, "tip")
    found = alternative_poses(_solver(arm, "full"), target, CURRENT + 0.05)
    assert len(found) >= 1, found.reason
    got = effector_poses(arm, found.q, "tip")
    np.testing.assert_allclose(got, np.broadcast_to(target, got.shape), atol=1e-4)


def test_limit_margin_of_hinges_is_the_distance_to_the_nearer_end(arm):
    """1-DoF margins are exact; a pose outside gets 0."""
    m = limit_margins(arm, CURRENT)
    np.testing.assert_allclose(m[1:], [0.8, 1.2 - 0.2, 0.6 - 0.1])
    assert limit_margin(arm, np.array([0.2, 0.1, -0.3, 3.0, 0.2, 0.1])) == 0.0


def _ball(limit) -> Skeleton:
    return Skeleton([Joint("ball", JointKind.BALL, -1, _at(), limit=limit)], [Effector("tip", 0, _at(y=1.0))])


def test_swing_twist_margin_is_the_nearer_of_twist_end_and_swing_edge():
    """Blender's IK limits: a twist 0.2 rad from its end, a swing 0.3 rad from its ellipse's vertex, a
    swing 0.417 rad inside a 0.7 rad circle with the twist locked (a locked axis does not count)."""
    limit = SwingTwistLimit((-1.0, -0.5, -0.8), (1.2, 0.5, 0.8))
    ball = _ball(limit)
    np.testing.assert_allclose(limit_margin(ball, np.array([[0.0, 0.3, 0.0], [0.9, 0.0, 0.0], [0.0, 0.0, 0.0]])),
                               [0.2, 0.3, 0.5], atol=1e-9)
    locked = _ball(SwingTwistLimit((-0.7, 0.0, -0.7), (0.7, 0.0, 0.7), (False, True, False)))
    assert limit_margin(locked, np.array([0.2, 0.0, 0.2])) == pytest.approx(0.7 - np.hypot(0.2, 0.2), abs=1e-3)
    assert limit_margin(locked, np.array([0.2, 0.1, 0.2])) == 0.0  # twisted: outside


def test_euler_margin_is_the_nearest_range_end():
    """Euler ranges: the smallest distance of an angle to an end of its range."""
    limit = EulerLimit((-0.5, -0.4, -1.0), (0.6, 0.4, 1.0), order="XYZ")
    R = euler_to_matrix(np.array([[0.1, 0.2, -0.3], [0.1, 0.5, -0.3]]), "XYZ")
    q = matrix_to_rotvec(R)
    np.testing.assert_allclose(limit_margin(_ball(limit), q), [0.2, 0.0], atol=1e-9)


def test_swivel_turns_with_the_pose():
    """A two-bone pose turned about the root-to-target line by a known angle shows that swivel."""
    joints = [
        Joint("upper", JointKind.BALL, -1, _at()),
        Joint("lower", JointKind.REVOLUTE, 0, _at(y=1.0), axis=(1, 0, 0), lower=0.0, upper=2.5),
    ]
    two = Skeleton(joints, [Effector("tip", 1, _at(y=1.0))])
    q = np.array([0.0, 0.0, 0.0, 1.0])
    target = effector_poses(two, q, "tip")[:3, 3]
    axis = target / np.linalg.norm(target)
    turned = [np.concatenate([matrix_to_rotvec(axis_angle_to_matrix(axis, a)), [1.0]]) for a in (0.0, 0.7, -1.9)]
    sw = swivel_angles(two, np.array(turned), target)
    np.testing.assert_allclose(sw - sw[0], [0.0, 0.7, -1.9], atol=1e-9)


def test_with_a_pole_swivels_are_measured_from_it(arm):
    """Given a pole, each pose's swivel is its bend's turn from the pole's direction; the starts still find poses."""
    target = effector_poses(arm, CURRENT, "tip")[:3, 3]
    pole = np.array([0.0, 0.2, 0.5])
    found = alternative_poses(_solver(arm), target, CURRENT, pole)
    assert len(found) >= 2
    np.testing.assert_allclose(found.swivel, swivel_angles(arm, found.q, target, pole), atol=1e-12)
    other = swivel_angles(arm, found.q, target, np.array([0.0, 0.2, -0.5]))
    assert np.max(np.abs(np.angle(np.exp(1j * (found.swivel - other))))) > 0.5  # the reference matters
