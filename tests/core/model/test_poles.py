# SPDX-License-Identifier: GPL-3.0-or-later
"""Pole angles turn the bend direction about the root-to-target axis."""

import numpy as np
import pytest

from ik_core.errors import InvalidInputError
from ik_core.model.kinematics import forward_kinematics
from ik_core.model.poles import chain_root, turn_poles
from ik_core.model.skeleton import Effector, Joint, JointKind, Skeleton
from ik_core.solvers.two_bone.solver import TwoBoneSolver
from ik_core.take.tracking import track_chain


def _perp(v, axis):
    u = axis / np.linalg.norm(axis)
    return v - np.sum(v * u, axis=-1, keepdims=True) * u


def test_turn_is_a_right_handed_rotation_about_the_axis():
    """Distances to the axis are kept, the turn is the given angle, and +90 degrees takes X to Y about Z."""
    rng = np.random.default_rng(3)
    root, target = np.zeros(3), np.array([0.0, 0.0, 2.0])
    pole = rng.normal(size=(50, 3))
    angle = 0.7
    out = turn_poles(pole, root, target, angle)
    a, b = _perp(pole, target), _perp(out, target)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1), atol=1e-12)
    np.testing.assert_allclose(out @ target, pole @ target, atol=1e-12)  # height along the axis kept
    cos = np.sum(a * b, axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    np.testing.assert_allclose(cos, np.cos(angle), atol=1e-12)
    np.testing.assert_allclose(turn_poles([1.0, 0.0, 0.0], root, target, np.pi / 2), [0.0, 1.0, 0.0], atol=1e-12)


def test_zero_angle_and_degenerate_axis_keep_the_pole():
    """No turn, or a target on the root (no axis), returns the pole unchanged; NaN angles are refused."""
    pole = np.array([[0.3, 0.2, 0.1]])
    np.testing.assert_array_equal(turn_poles(pole, np.zeros(3), np.ones(3), 0.0), pole)
    np.testing.assert_allclose(turn_poles(pole, np.ones(3), np.ones((1, 3)), 1.0), pole, atol=1e-15)
    with pytest.raises(InvalidInputError, match="pole angle"):
        turn_poles(pole, np.zeros(3), np.ones(3), float("nan"))


def _limb() -> Skeleton:
    T = np.eye(4)
    T[1, 3] = 1.0
    return Skeleton([
        Joint("upper", JointKind.BALL, parent=-1, origin=np.eye(4)),
        Joint("lower", JointKind.REVOLUTE, parent=0, origin=T, axis=(1.0, 0.0, 0.0), lower=0.0, upper=2.5),
    ], [Effector("tip", 1, T)])


def test_track_chain_bends_the_pole_angle_away_from_the_pole():
    """With a pole on +Z and a pole angle of 90 degrees the elbow points along the turned direction."""
    skeleton = _limb()
    assert np.allclose(chain_root(skeleton), 0.0)
    solver = TwoBoneSolver(skeleton, "tip")
    n = 3
    base = np.repeat(np.eye(4)[None], n, axis=0)
    target = base.copy()
    target[:, :3, 3] = [0.0, 1.5, 0.0]
    pole = np.tile([0.0, 0.75, 1.0], (n, 1))
    for angle, want in ((0.0, [0.0, 0.0, 1.0]), (np.pi / 2, [1.0, 0.0, 0.0])):
        res = track_chain(solver, base, target, pole=pole, pole_angle=angle)
        elbow = forward_kinematics(skeleton, res.q)[:, 1, :3, 3]
        bend = _perp(elbow, np.array([0.0, 1.5, 0.0]))
        bend /= np.linalg.norm(bend, axis=1, keepdims=True)
        np.testing.assert_allclose(bend, np.tile(want, (n, 1)), atol=1e-6)
        assert res.converged.all()
