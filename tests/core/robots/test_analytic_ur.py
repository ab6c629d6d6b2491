# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of the closed-form UR inverse kinematics: exactness, completeness, branches, limits."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ik_core.errors import InvalidInputError, UnknownNameError
from ik_core.model.kinematics import effector_poses, forward_kinematics
from ik_core.robots.analytic_ur import (
    BRANCHES,
    URParams,
    select_branch,
    ur_forward,
    ur_ik,
    ur_params_from_preset,
)
from ik_core.robots.presets import load_preset

UR = ("ur5", "ur5e", "ur10e")
PI, TWO_PI = math.pi, 2 * math.pi


def wrapped(a: np.ndarray) -> np.ndarray:
    return np.mod(a + PI, TWO_PI) - PI


def random_q(params: URParams, n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(params.lower, params.upper, (n, 6))


@pytest.mark.parametrize("name", UR)
def test_every_valid_branch_reproduces_the_target_by_preset_fk(name):
    """FK of the preset skeleton maps every valid solution onto its target within 1e-9 m / rad."""
    skeleton, params = load_preset(name), ur_params_from_preset(name)
    q = random_q(params, 1000, seed=1)
    targets = effector_poses(skeleton, q, "tool")
    sol, valid = ur_ik(targets, params)
    assert valid.any(axis=-1).all()
    reached = effector_poses(skeleton, sol, "tool")
    err = np.abs(reached - targets[:, None]).max(axis=(-2, -1))
    assert err[valid].max() < 1e-9
    assert skeleton.within_limits(sol)[valid].all()
    assert np.isfinite(sol).all()


@pytest.mark.parametrize("name", UR)
def test_dh_model_matches_the_preset(name):
    """ur_forward (DH + base/tool frames) equals the preset FK: 1e-12 m for the e-series, 1e-9 m for UR5."""
    skeleton, params = load_preset(name), ur_params_from_preset(name)
    q = random_q(params, 300, seed=2)
    tol = 1e-9 if name == "ur5" else 1e-12  # the UR5 URDF rounds pi/2 to 1.570796327
    np.testing.assert_allclose(ur_forward(q, params), effector_poses(skeleton, q, "tool"), rtol=0, atol=tol)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), name=st.sampled_from(UR))
def test_generating_configuration_is_the_nearest_solution(seed, name):
    """With the generating q as reference, the nearest valid solution equals it to 1e-9 rad."""
    params = ur_params_from_preset(name)
    q = random_q(params, 20, seed)
    sol, valid = ur_ik(ur_forward(q, params), params, q_ref=q)
    best, found, index = select_branch(sol, valid, q_prev=q)
    assert found.all() and (index >= 0).all()
    np.testing.assert_allclose(best, q, rtol=0, atol=1e-9)


def test_generating_configuration_found_modulo_two_pi_without_reference():
    """With the default reference 0, the generating q is among the solutions modulo 2 pi."""
    params = ur_params_from_preset("ur10e")
    q = random_q(params, 500, seed=3)
    sol, valid = ur_ik(ur_forward(q, params), params)
    hit = np.abs(wrapped(sol - q[:, None])).max(axis=-1) < 1e-9
    assert (hit & valid).any(axis=-1).all()
    assert (np.abs(sol[valid]) <= PI + 1e-12).all()  # nearest representative of 0


def test_generic_poses_have_eight_distinct_solutions():
    """Most random poses have all 8 branches valid, and those 8 are pairwise distinct (mod 2 pi)."""
    params = ur_params_from_preset("ur5e")
    q = random_q(params, 2000, seed=4)
    sol, valid = ur_ik(ur_forward(q, params), params)
    full = valid.all(axis=-1)
    assert full.mean() > 0.7
    s = sol[full]
    diff = np.abs(wrapped(s[:, :, None] - s[:, None, :])).max(axis=-1)
    off_diag = ~np.eye(8, dtype=bool)
    assert diff[:, off_diag].min() > 1e-6


def test_a_hand_picked_pose_in_front_of_the_robot_has_all_branches():
    """A tool pose half a metre in front of the UR5e, pointing down, has 8 valid solutions."""
    params = ur_params_from_preset("ur5e")
    T = np.diag([1.0, -1.0, -1.0, 1.0])
    T[:3, 3] = (0.5, 0.2, 0.3)
    sol, valid = ur_ik(T, params)
    assert valid.all()
    np.testing.assert_allclose(ur_forward(sol, params), np.broadcast_to(T, (8, 4, 4)), rtol=0, atol=1e-12)


def test_branch_labels_are_geometric():
    """Elbow 'up' lies above the shoulder-wrist line, shoulder 'left' puts the wrist left, flip has q5 < 0."""
    skeleton, params = load_preset("ur5e"), ur_params_from_preset("ur5e")
    assert len(BRANCHES) == 8 and len(set(BRANCHES)) == 8
    q = random_q(params, 1000, seed=5)
    sol, valid = ur_ik(ur_forward(q, params), params)
    F = forward_kinematics(skeleton, sol)
    idx = {n: i for i, n in enumerate(skeleton.joint_names)}
    sh, el = F[..., idx["shoulder_lift_joint"], :3, 3], F[..., idx["elbow_joint"], :3, 3]
    w1, w2 = F[..., idx["wrist_1_joint"], :3, 3], F[..., idx["wrist_2_joint"], :3, 3]
    axis = F[..., idx["shoulder_lift_joint"], :3, 2]  # normal of the arm plane

    def in_plane(p):
        return p - sh - np.sum((p - sh) * axis, -1, keepdims=True) * axis

    horizontal = np.cross(axis, [0.0, 0.0, 1.0])
    e, w = in_plane(el), in_plane(w1)
    ex, wx = np.sum(e * horizontal, -1), np.sum(w * horizontal, -1)
    above = (wx * e[..., 2] - w[..., 2] * ex) * wx > 0
    facing = w2[..., :2] / np.linalg.norm(w2[..., :2], axis=-1, keepdims=True)
    left_dir = np.stack([-facing[..., 1], facing[..., 0]], -1)
    left = np.sum(axis[..., :2] * left_dir, -1) * np.sum((w2 - sh) * axis, -1) > 0
    flip = np.sin(sol[..., 4]) < 0
    for name, i, observed in (("shoulder", 0, left), ("elbow", 1, above), ("wrist", 2, ~flip)):
        expected = np.array([b[i] in ("left", "up", "no_flip") for b in BRANCHES])
        assert (observed == expected)[valid].all(), name


def test_wrist_singularity_uses_the_reference_for_joint_six():
    """At q5 = 0 joint 6 takes its reference value, and the solutions still reach the target."""
    params = ur_params_from_preset("ur5e")
    q = np.array([0.3, -1.0, 1.2, -0.5, 0.0, 0.7])
    T = ur_forward(q, params)
    for ref6 in (0.25, -2.0):
        ref = np.array([0, 0, 0, 0, 0, ref6])
        sol, valid = ur_ik(T, params, q_ref=ref)
        singular = valid & (np.abs(np.sin(sol[:, 4])) < 1e-9)
        assert singular.sum() >= 2
        np.testing.assert_allclose(sol[singular, 5], ref6, rtol=0, atol=1e-12)
        np.testing.assert_allclose(ur_forward(sol[valid], params), np.broadcast_to(T, (valid.sum(), 4, 4)),
                                   rtol=0, atol=1e-12)


def test_angles_are_unwrapped_next_to_the_reference_inside_the_limits():
    """Each angle is the representative nearest q_ref; beyond +/-2 pi the next one inside is used."""
    params = ur_params_from_preset("ur5e")
    q = random_q(params, 300, seed=6)
    sol, valid = ur_ik(ur_forward(q, params), params, q_ref=q)
    room = (q[:, None] - PI >= params.lower) & (q[:, None] + PI <= params.upper)
    assert (np.abs(sol - q[:, None])[valid & room.all(-1)] <= PI + 1e-9).all()
    assert ((sol >= params.lower) & (sol <= params.upper))[valid].all()


def test_solutions_outside_narrow_limits_are_invalid():
    """Shrinking the limits invalidates exactly the solutions that no longer fit (mod 2 pi)."""
    wide = ur_params_from_preset("ur5e")
    lower = np.array([-1.0, -PI, -2.0, -PI, -PI, -PI])
    narrow = URParams(wide.d1, wide.a2, wide.a3, wide.d4, wide.d5, wide.d6,
                      lower=lower, upper=-lower, base=wide.base, tool=wide.tool)
    q = random_q(narrow, 400, seed=7)
    targets = ur_forward(q, wide)
    sol_w, valid_w = ur_ik(targets, wide)
    sol_n, valid_n = ur_ik(targets, narrow)
    fits = np.all(np.abs(wrapped(sol_w)) <= -lower + 1e-12, axis=-1)
    np.testing.assert_array_equal(valid_n, valid_w & fits)
    assert np.all((sol_n >= lower) & (sol_n <= -lower), axis=-1)[valid_n].all()


def test_unreachable_targets_are_invalid_but_finite():
    """Targets 3 m away or on the base axis have no valid branch; the angles stay finite."""
    params = ur_params_from_preset("ur5")
    far, axis = np.eye(4), np.eye(4)
    far[:3, 3] = (3.0, 0.0, 0.5)
    axis[:3, 3] = (0.0, 0.0, 0.5)
    axis[:3, :3] = np.diag([1.0, -1.0, -1.0])
    sol, valid = ur_ik(np.stack([far, axis]), params)
    assert not valid.any()
    assert np.isfinite(sol).all()


def test_workspace_edge_targets_are_solved():
    """The fully stretched arm (q3 = 0) is found although its cosine may round past 1."""
    params = ur_params_from_preset("ur10e")
    q = np.array([[0.4, -0.7, 0.0, 0.3, 1.1, -0.2], [-2.0, -1.5, 0.0, -1.0, -0.6, 2.5]])
    sol, valid = ur_ik(ur_forward(q, params), params, q_ref=q)
    best, found, _ = select_branch(sol, valid, q_prev=q)
    assert found.all()
    np.testing.assert_allclose(best, q, rtol=0, atol=1e-6)
    np.testing.assert_allclose(ur_forward(best, params), ur_forward(q, params), rtol=0, atol=1e-9)


def test_batch_shapes_and_reference_broadcast():
    """Targets (2, 3, 4, 4) give (2, 3, 8, 6) and (2, 3, 8); a (6,) reference broadcasts."""
    params = ur_params_from_preset("ur5e")
    q = random_q(params, 6, seed=8).reshape(2, 3, 6)
    sol, valid = ur_ik(ur_forward(q, params), params, q_ref=np.zeros(6))
    assert sol.shape == (2, 3, 8, 6) and valid.shape == (2, 3, 8)
    flat, flat_valid = ur_ik(ur_forward(q.reshape(6, 6), params), params)
    np.testing.assert_array_equal(sol.reshape(6, 8, 6), flat)
    np.testing.assert_array_equal(valid.reshape(6, 8), flat_valid)
    single, single_valid = ur_ik(ur_forward(q[0, 0], params), params)
    assert single.shape == (8, 6) and single_valid.shape == (8,)


def test_tool_offset_is_honoured():
    """With a tool 10 cm along the flange z axis, solutions place that tool frame on the target."""
    base = ur_params_from_preset("ur5e")
    tool = np.eye(4)
    tool[:3, 3] = (0.0, 0.02, 0.1)
    params = URParams(base.d1, base.a2, base.a3, base.d4, base.d5, base.d6, base=base.base, tool=tool)
    q = random_q(params, 100, seed=9)
    targets = ur_forward(q, params)
    sol, valid = ur_ik(targets, params)
    reached = ur_forward(np.where(valid[..., None], sol, 0.0), params)
    assert np.abs(reached - targets[:, None]).max(axis=(-2, -1))[valid].max() < 1e-12


def test_select_branch_by_index_and_errors():
    """Branch mode returns that row; an invalid branch reports found=False; bad calls raise."""
    params = ur_params_from_preset("ur5e")
    q = random_q(params, 50, seed=10)
    sol, valid = ur_ik(ur_forward(q, params), params)
    for b in range(8):
        picked, found, index = select_branch(sol, valid, branch=b)
        np.testing.assert_array_equal(picked, sol[:, b])
        np.testing.assert_array_equal(found, valid[:, b])
        np.testing.assert_array_equal(index, np.where(valid[:, b], b, -1))
    none = np.zeros_like(valid)
    picked, found, index = select_branch(sol, none, q_prev=q)
    assert not found.any() and (index == -1).all()
    np.testing.assert_array_equal(picked, q)
    with pytest.raises(InvalidInputError, match="exactly one"):
        select_branch(sol, valid)
    with pytest.raises(InvalidInputError, match="exactly one"):
        select_branch(sol, valid, branch=0, q_prev=q)
    with pytest.raises(InvalidInputError, match="0-7"):
        select_branch(sol, valid, branch=8)


def test_invalid_input_raises_project_errors():
    """Bad shapes, NaN targets, zero link lengths and non-UR presets raise named errors."""
    params = ur_params_from_preset("ur5e")
    with pytest.raises(InvalidInputError, match=r"\(\.\.\., 4, 4\)"):
        ur_ik(np.zeros((3, 4)), params)
    bad = np.eye(4)
    bad[0, 3] = np.nan
    with pytest.raises(InvalidInputError, match="NaN"):
        ur_ik(bad, params)
    with pytest.raises(InvalidInputError, match="q_ref"):
        ur_ik(np.eye(4), params, q_ref=np.zeros(5))
    with pytest.raises(InvalidInputError, match="a2"):
        URParams(0.1, 0.0, -0.4, 0.1, 0.1, 0.1)
    with pytest.raises(InvalidInputError, match="ur10e"):
        ur_params_from_preset("panda")
    with pytest.raises(UnknownNameError):
        ur_params_from_preset("ur3000")
