# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of ik_core.solvers.reach: reach bounds, the excess of targets over them, stretched poses."""

from __future__ import annotations

import numpy as np
import pytest

from ik_core import EulerLimit, InvalidInputError
from ik_core.limits import limit_violation, project_configuration
from ik_core.model.kinematics import effector_poses, forward_kinematics
from ik_core.model.skeleton import Effector, Joint, JointKind, Skeleton
from ik_core.robots import presets as robots
from ik_core.solvers import make_solver
from ik_core.solvers.reach import ReachBound, stretch_toward

LIMIT = EulerLimit((-1.5, -0.7, -1.5), (1.5, 0.7, 1.5))


def offset(x: float = 0.0, y: float = 0.0, z: float = 0.0) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = (x, y, z)
    return T


def ball_chain(bones: int = 4, bone: float = 0.3, limit: EulerLimit | None = LIMIT) -> Skeleton:
    """Ball joints along local Y, ``bone`` metres apart, the effector one bone past the last."""
    joints = [
        Joint(f"b{k}", JointKind.BALL, k - 1, offset(0.5, 0.2, 0.1) if k == 0 else offset(y=bone), limit=limit)
        for k in range(bones)
    ]
    return Skeleton(joints, [Effector("tip", bones - 1, offset(y=bone))])


def test_bound_sums_the_links_from_the_first_moving_joint() -> None:
    """The base is the first moving joint's origin and the length sums the bones, fixed joints included."""
    joints = [
        Joint("mount", JointKind.FIXED, -1, offset(1.0, 2.0, 3.0)),
        Joint("a", JointKind.REVOLUTE, 0, offset(z=0.5), axis=(0, 0, 1)),
        Joint("bracket", JointKind.FIXED, 1, offset(x=0.3)),
        Joint("b", JointKind.REVOLUTE, 2, offset(x=0.4), axis=(0, 1, 0)),
        Joint("slide", JointKind.PRISMATIC, 3, offset(x=0.1), axis=(1, 0, 0), lower=-0.05, upper=0.2),
    ]
    skeleton = Skeleton(joints, [Effector("tool", 4, offset(x=0.25)), Effector("base", 0, offset(z=0.1))])
    bound = ReachBound.of(skeleton, (0, 1))
    np.testing.assert_allclose(bound.bases[0], (1.0, 2.0, 3.5))
    # 0.3 + 0.4 to b, 0.1 to the slide, 0.25 to the tool, plus the slide's largest stroke.
    np.testing.assert_allclose(bound.lengths[0], 0.3 + 0.4 + 0.1 + 0.25 + 0.2)
    # An effector that no joint moves reaches only its own position.
    np.testing.assert_allclose(bound.bases[1], (1.0, 2.0, 3.1))
    assert bound.lengths[1] == 0.0


def test_no_configuration_passes_the_bound() -> None:
    """Random configurations inside and outside the limits never put the effector beyond the bound."""
    skeleton = robots.load_preset("panda")
    bound = ReachBound.of(skeleton, (0,))
    q = np.random.default_rng(0).uniform(-np.pi, np.pi, (2000, skeleton.dof))
    tip = effector_poses(skeleton, q, 0)[:, None, :3, 3]
    assert np.all(bound.excess(tip) <= 1e-12)


def test_excess_is_the_distance_beyond_the_length() -> None:
    """excess = distance from the base - length, per effector, with any leading batch shape."""
    bound = ReachBound(np.array([[0.0, 0.0, 1.0]]), np.array([2.0]))
    points = np.array([[[3.0, 0.0, 1.0]], [[0.0, 1.0, 1.0]]])[None]  # (1, 2, E=1, 3)
    np.testing.assert_allclose(bound.excess(points), [[[1.0], [-1.0]]])


def test_solver_reach_excess_takes_positions_and_poses() -> None:
    """Solver.reach_excess reads the position part of pose targets and the largest excess over effectors."""
    skeleton = ball_chain(bones=2)
    solver = make_solver("dls", skeleton, "tip", mode="full")
    base, length = solver.reach_bound.bases[0], solver.reach_bound.lengths[0]
    poses = np.tile(np.eye(4), (2, 1, 1))
    poses[:, :3, 3] = base + np.array([[length + 0.25, 0.0, 0.0], [0.0, 0.1, 0.0]])
    np.testing.assert_allclose(solver.reach_excess(poses), [0.25, 0.1 - length])
    np.testing.assert_allclose(solver.reach_excess(poses[:, :3, 3]), [0.25, 0.1 - length])


@pytest.mark.parametrize(
    ("bases", "lengths"),
    [(np.zeros((2, 3)), np.ones(3)), (np.zeros(3), np.ones(1)), (np.zeros((1, 3)), [-1.0]), ([[np.nan] * 3], [1.0])],
)
def test_bad_bounds_are_rejected(bases, lengths) -> None:
    """Shapes that do not match, negative lengths and NaN bases raise InvalidInputError."""
    with pytest.raises(InvalidInputError):
        ReachBound(bases, lengths)


def test_stretch_points_a_free_chain_straight_at_its_targets() -> None:
    """Without limits every joint origin and the effector of a chain short of its target end up on the ray to it."""
    skeleton = ball_chain(limit=None)
    bound = ReachBound.of(skeleton, (0,))
    rng = np.random.default_rng(1)
    q0 = rng.normal(scale=0.8, size=(50, skeleton.dof))
    direction = rng.normal(size=(50, 3))
    direction /= np.linalg.norm(direction, axis=-1, keepdims=True)
    targets = bound.bases[0] + direction * rng.uniform(1.01, 5.0, (50, 1)) * bound.lengths[0]
    q = stretch_toward(skeleton, q0, 0, targets)
    points = np.concatenate(
        [forward_kinematics(skeleton, q)[:, :, :3, 3], effector_poses(skeleton, q, 0)[:, None, :3, 3]], axis=1
    )
    rel = points - bound.bases[0]
    along = np.einsum("nkj,nj->nk", rel, direction)
    np.testing.assert_allclose(rel, along[..., None] * direction[:, None], atol=1e-9)
    np.testing.assert_allclose(along[:, -1], bound.lengths[0], atol=1e-9)


def test_stretch_respects_limits_and_comes_nearer() -> None:
    """With limits the stretched pose stays inside them and is never farther from a target beyond reach."""
    skeleton = ball_chain()
    bound = ReachBound.of(skeleton, (0,))
    rng = np.random.default_rng(2)
    q0 = project_configuration(skeleton, rng.normal(scale=0.6, size=(200, skeleton.dof)))
    direction = rng.normal(size=(200, 3))
    direction /= np.linalg.norm(direction, axis=-1, keepdims=True)
    targets = bound.bases[0] + direction * 1.5 * bound.lengths[0]
    q = stretch_toward(skeleton, q0, 0, targets)
    assert np.all(np.isfinite(q)) and np.all(limit_violation(skeleton, q) <= 1e-9)
    before = np.linalg.norm(effector_poses(skeleton, q0, 0)[:, :3, 3] - targets, axis=-1)
    after = np.linalg.norm(effector_poses(skeleton, q, 0)[:, :3, 3] - targets, axis=-1)
    assert np.all(after <= before + 1e-9)
    # Targets straight ahead of the rest pose: the limits allow the straight chain.
    ahead = bound.bases[0] + np.array([0.0, 2.0 * bound.lengths[0], 0.0])
    q = stretch_toward(skeleton, q0[:5], 0, np.tile(ahead, (5, 1)))
    reached = np.linalg.norm(effector_poses(skeleton, q, 0)[:, :3, 3] - ahead, axis=-1)
    np.testing.assert_allclose(reached, bound.lengths[0], atol=1e-9)


def test_stretch_caps_and_scales_each_turn() -> None:
    """max_step caps every joint's turn and use_stiffness scales it by (1 - stiffness)."""
    joint = Joint("h", JointKind.REVOLUTE, -1, np.eye(4), axis=(0, 0, 1), stiffness=0.5)
    skeleton = Skeleton([joint], [Effector("tip", 0, offset(x=1.0))])
    targets = np.array([[0.0, 3.0, 0.0]])  # a quarter turn away
    np.testing.assert_allclose(stretch_toward(skeleton, np.zeros((1, 1)), 0, targets), [[np.pi / 2]])
    np.testing.assert_allclose(stretch_toward(skeleton, np.zeros((1, 1)), 0, targets, max_step=0.3), [[0.3]])
    scaled = stretch_toward(skeleton, np.zeros((1, 1)), 0, targets, use_stiffness=True)
    np.testing.assert_allclose(scaled, [[np.pi / 4]])
