# SPDX-License-Identifier: GPL-3.0-or-later
"""The goal of a chain at partial influence: Blender's IK moves the goal, not the pose."""

import numpy as np
import pytest

from ik_core.errors import InvalidInputError
from ik_core.model.rotations import rotation_error, rotvec_to_matrix
from ik_core.take.influence import blend_goals


def _frames(rotvecs, positions, scale=1.0):
    M = np.tile(np.eye(4), (len(positions), 1, 1))
    M[:, :3, :3] = rotvec_to_matrix(np.asarray(rotvecs, float)) * scale
    M[:, :3, 3] = positions
    return M


def test_ends_are_the_free_pose_and_the_target():
    rng = np.random.default_rng(3)
    free = _frames(rng.normal(size=(5, 3)), rng.normal(size=(5, 3)), scale=1.7)  # a scaled bone
    target = _frames(rng.normal(size=(5, 3)), rng.normal(size=(5, 3)))
    at0, at1 = blend_goals(free, target, 0.0), blend_goals(free, target, 1.0)
    np.testing.assert_allclose(at0[:, :3, 3], free[:, :3, 3], atol=1e-12)
    np.testing.assert_allclose(at1, target, atol=1e-9)
    assert np.all(rotation_error(at0[:, :3, :3], free[:, :3, :3] / 1.7) < 1e-9)


def test_partial_influence_moves_the_goal_part_way_along_both():
    free = _frames([[0.0, 0.0, 0.0]] * 3, [[0.0, 0.0, 0.0]] * 3)
    target = _frames([[0.0, 0.0, 1.2]] * 3, [[1.0, 2.0, 0.0]] * 3)
    w = np.array([0.25, 0.5, 0.9])
    goal = blend_goals(free, target, w)
    np.testing.assert_allclose(goal[:, :3, 3], w[:, None] * [1.0, 2.0, 0.0], atol=1e-12)
    # the slerp: the rotation about Z is w of the way
    angle = np.arctan2(goal[:, 1, 0], goal[:, 0, 0])
    np.testing.assert_allclose(angle, 1.2 * w, atol=1e-9)
    np.testing.assert_allclose(goal[:, :3, :3] @ np.swapaxes(goal[:, :3, :3], 1, 2), np.tile(np.eye(3), (3, 1, 1)),
                               atol=1e-12)


def test_takes_the_shorter_way_and_clamps_influence():
    free = _frames([[0.0, 0.0, 0.0]], [[0.0, 0.0, 0.0]])
    target = _frames([[0.0, 0.0, np.pi - 0.2]], [[1.0, 0.0, 0.0]])  # 169 degrees about +Z
    half = blend_goals(free, target, 0.5)
    assert np.arctan2(half[0, 1, 0], half[0, 0, 0]) == pytest.approx((np.pi - 0.2) / 2, abs=1e-9)
    np.testing.assert_allclose(blend_goals(free, target, 1.5), blend_goals(free, target, 1.0), atol=1e-12)
    np.testing.assert_allclose(blend_goals(free, target, -1.0)[:, :3, 3], free[:, :3, 3], atol=1e-12)


def test_bad_input_is_named():
    free = _frames([[0.0, 0.0, 0.0]], [[0.0, 0.0, 0.0]])
    with pytest.raises(InvalidInputError, match="N, 4, 4"):
        blend_goals(free[0], free[0], 1.0)
    with pytest.raises(InvalidInputError, match="finite"):
        blend_goals(free, free, np.nan)
