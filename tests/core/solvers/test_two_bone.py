# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of the closed-form two-bone solver and the law-of-cosines helper."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ik_core.errors import InvalidInputError
from ik_core.limits.swing_twist import SwingTwistLimit
from ik_core.model.kinematics import effector_poses
from ik_core.model.rotations import rotation_error, rotvec_to_matrix
from ik_core.model.skeleton import Effector, Joint, JointKind, Skeleton
from ik_core.solvers.base import Solver, as_targets
from ik_core.solvers.two_bone.solver import TwoBoneSolver, two_bone_angles

SETTINGS = settings(max_examples=30, deadline=None)
ROOT = np.array([0.1, -0.2, 1.0])


def transform(R: np.ndarray | None = None, p: object = 0.0) -> np.ndarray:
    T = np.eye(4)
    if R is not None:
        T[:3, :3] = R
    T[:3, 3] = p
    return T


def limb(l1: float = 0.3, l2: float = 0.25, lower: float = -np.inf, upper: float = np.inf) -> Skeleton:
    """Blender-like limb: bones along +y, elbow hinge about x, shoulder at ROOT."""
    joints = [
        Joint("shoulder", JointKind.BALL, origin=transform(p=ROOT)),
        Joint("elbow", JointKind.REVOLUTE, 0, transform(p=[0, l1, 0]), axis=(1, 0, 0), lower=lower, upper=upper),
    ]
    return Skeleton(joints, [Effector("hand", 1, transform(p=[0, l2, 0]))])


def random_limb(rng: np.random.Generator, general: bool) -> Skeleton:
    """Random lengths and rest rotations; ``general`` adds a fixed joint, offsets and a skew hinge axis."""
    root = transform(rotvec_to_matrix(rng.normal(size=3)), rng.normal(size=3))
    bone1 = rng.normal(size=3)
    bone1 *= rng.uniform(0.1, 1.0) / np.linalg.norm(bone1)
    R_hinge = rotvec_to_matrix(rng.normal(size=3))
    axis = rng.normal(size=3)  # in the ball frame first
    if not general:
        axis -= (axis @ bone1) / (bone1 @ bone1) * bone1  # perpendicular to the first bone
    axis = R_hinge.T @ axis  # joint axes are given in the joint's own frame
    joints = [Joint("root", JointKind.BALL, origin=root)]
    if general:
        joints.append(Joint("fixed", JointKind.FIXED, 0, transform(R_hinge, bone1)))
        hinge_origin = transform(rotvec_to_matrix(rng.normal(size=3)), rng.normal(scale=0.05, size=3))
    else:
        hinge_origin = transform(R_hinge, bone1)
    joints.append(Joint("hinge", JointKind.REVOLUTE, len(joints) - 1, hinge_origin, axis))
    bone2 = rng.normal(size=3)
    bone2 *= rng.uniform(0.1, 1.0) / np.linalg.norm(bone2)
    if not general:
        bone2 -= (bone2 @ axis) / (axis @ axis) * axis
    return Skeleton(joints, [Effector("tip", len(joints) - 1, transform(p=bone2))])


def random_targets(rng: np.random.Generator, solver: TwoBoneSolver, n: int) -> np.ndarray:
    """(n, 3) targets at random directions and reachable distances from the root pivot."""
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    r = rng.uniform(solver.min_reach, solver.max_reach, (n, 1))
    return solver._pivot + d * r


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), general=st.booleans(), with_pole=st.booleans())
def test_exact_reach_for_reachable_targets(seed: int, general: bool, with_pole: bool) -> None:
    """Every target within [min_reach, max_reach] is reached to 1e-9 m, with or without a pole."""
    rng = np.random.default_rng(seed)
    solver = TwoBoneSolver(random_limb(rng, general), tolerance=1e-9)
    targets = random_targets(rng, solver, 40)
    q0 = rng.uniform(-2, 2, (40, 4))
    pole = rng.normal(scale=2.0, size=(40, 3)) if with_pole else None
    res = solver.solve(targets, q0, pole=pole)
    assert np.all(res.position_error <= 1e-9)
    assert np.all(res.converged)
    assert np.all(res.iterations == 1)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), general=st.booleans())
def test_elbow_lies_in_the_pole_half_plane(seed: int, general: bool) -> None:
    """The bend plane contains root, target and pole, and the elbow is on the pole's side of the root-target line."""
    rng = np.random.default_rng(seed)
    solver = TwoBoneSolver(random_limb(rng, general))
    targets = random_targets(rng, solver, 40)
    pole = rng.normal(scale=2.0, size=(40, 3))
    res = solver.solve(targets, pole=pole)
    elbow = solver.elbow_position(res.q)
    t = targets - solver._pivot
    n_elbow = np.cross(t, elbow - solver._pivot)
    n_pole = np.cross(t, pole - solver._pivot)
    bent = np.linalg.norm(n_elbow, axis=-1) > 1e-6 * np.linalg.norm(t, axis=-1)
    u_elbow = n_elbow[bent] / np.linalg.norm(n_elbow[bent], axis=-1, keepdims=True)
    u_pole = n_pole[bent] / np.linalg.norm(n_pole[bent], axis=-1, keepdims=True)
    np.testing.assert_allclose(u_elbow, u_pole, atol=1e-8)


def test_pole_picks_the_bend_side_of_a_standard_limb() -> None:
    """For a knee-like limb, moving the pole to the other side moves the elbow to the other side."""
    solver = TwoBoneSolver(limb(lower=0.0, upper=2.8))
    target = ROOT + [0.0, 0.4, 0.0]
    for side in (1.0, -1.0):
        res = solver.solve(target, pole=ROOT + [0.0, 0.2, side])
        elbow = solver.elbow_position(res.q)
        assert np.sign(elbow[2] - ROOT[2]) == side
        assert abs(elbow[0] - ROOT[0]) < 1e-12
        assert 0.0 <= res.q[3] <= 2.8
        assert res.position_error <= 1e-12


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_hinge_limit_is_respected_with_best_effort(seed: int) -> None:
    """The hinge stays in its range; when the range blocks the bend, the error is the least the range allows."""
    rng = np.random.default_rng(seed)
    l1, l2 = rng.uniform(0.1, 1.0, 2)
    lo = rng.uniform(-np.pi, np.pi)
    hi = min(lo + rng.uniform(0.05, 2.0), np.pi)
    solver = TwoBoneSolver(limb(l1, l2, lo, hi))
    d = rng.normal(size=(30, 3))
    targets = ROOT + d / np.linalg.norm(d, axis=-1, keepdims=True) * rng.uniform(0, l1 + l2 + 0.2, (30, 1))
    res = solver.solve(targets, pole=ROOT + rng.normal(size=3))
    assert np.all((res.q[:, 3] >= lo) & (res.q[:, 3] <= hi))
    grid = np.linspace(lo, hi, 20001)
    reach = np.sqrt(l1**2 + l2**2 + 2 * l1 * l2 * np.cos(grid))  # straight at 0
    D = np.linalg.norm(targets - ROOT, axis=-1)
    best = np.min(np.abs(reach[None, :] - D[:, None]), axis=-1)
    assert np.all(res.position_error <= best + 1e-9)
    blocked = ~res.converged
    assert all("range" in r or "reach" in r or "too close" in r for r in res.reason[blocked])


def test_unreachable_target_gives_a_straight_arm_pointing_at_it() -> None:
    """Beyond the reach: straight hinge, effector on the root-target ray, not converged, reason names both distances."""
    solver = TwoBoneSolver(limb(0.3, 0.25, -0.5, 2.5))
    rng = np.random.default_rng(1)
    d = rng.normal(size=(20, 3))
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    targets = ROOT + d * rng.uniform(0.6, 5.0, (20, 1))
    res = solver.solve(targets)
    np.testing.assert_allclose(res.q[:, 3], 0.0, atol=1e-12)
    hand = effector_poses(solver.skeleton, res.q, 0)[..., :3, 3] - ROOT
    np.testing.assert_allclose(hand / np.linalg.norm(hand, axis=-1, keepdims=True), d, atol=1e-12)
    np.testing.assert_allclose(res.position_error, np.linalg.norm(targets - ROOT, axis=-1) - 0.55, atol=1e-12)
    assert not np.any(res.converged)
    assert all("beyond the chain's reach 0.55 m" in r for r in res.reason)


def test_too_close_target_is_reported() -> None:
    """Closer than |l1 - l2| the arm folds fully toward the target and the reason says it is too close."""
    solver = TwoBoneSolver(limb(0.3, 0.2))
    target = ROOT + [0.03, 0.02, 0.0]
    res = solver.solve(target)
    assert not res.converged
    assert "too close: closer than |l1 - l2| = 0.1 m" in res.reason.item()
    assert abs(res.position_error - (0.1 - np.hypot(0.03, 0.02))) < 1e-12


@pytest.mark.parametrize(
    "case",
    ["target_at_root", "pole_on_line", "pole_at_root", "pole_at_target", "collinear_bones", "equal_bones_at_root"],
)
def test_degenerate_cases_are_finite(case: str) -> None:
    """Degenerate targets, poles and straight warm starts give finite, in-range poses."""
    l2 = 0.3 if case == "equal_bones_at_root" else 0.25
    solver = TwoBoneSolver(limb(0.3, l2, 0.0, np.pi))
    target = ROOT + [0.0, 0.2, 0.3]
    pole = None
    q0 = np.array([0.0, 0.0, 0.0, 1.0])
    if case in ("target_at_root", "equal_bones_at_root"):
        target = ROOT.copy()
    elif case == "pole_on_line":
        pole = ROOT + 2.5 * (target - ROOT)
    elif case == "pole_at_root":
        pole = ROOT.copy()
    elif case == "pole_at_target":
        pole = target.copy()
    elif case == "collinear_bones":
        q0 = np.zeros(4)  # straight arm along +y, target exactly at full reach along it
        target = ROOT + [0.0, 0.55, 0.0]
    res = solver.solve(target, q0, pole=pole)
    assert np.all(np.isfinite(res.q))
    assert 0.0 <= res.q[3] <= np.pi
    assert np.isfinite(res.position_error)
    if case != "target_at_root":
        assert res.position_error <= 1e-9


def test_zero_length_bones_are_finite() -> None:
    """A hinge on the root pivot or an effector on the hinge still gives finite poses."""
    for l1, l2 in ((0.0, 0.3), (0.3, 0.0), (0.0, 0.0)):
        solver = TwoBoneSolver(limb(l1, l2))
        res = solver.solve(np.array([ROOT + [0.1, 0.2, 0.0], ROOT]), pole=ROOT + [0, 0, 1.0])
        assert np.all(np.isfinite(res.q))
        assert np.all(np.isfinite(res.position_error))


def test_without_pole_the_current_bend_plane_is_kept() -> None:
    """With no pole, targets in the current bend plane leave the elbow in that plane."""
    rng = np.random.default_rng(4)
    solver = TwoBoneSolver(limb(0.3, 0.25, 0.0, 2.8))
    # Warm starts turned about x keep the plane x = ROOT_x; a twist about y turns the plane.
    for q0, normal in ((np.array([0.4, 0.0, 0.0, 1.0]), np.array([1.0, 0, 0])),
                       (np.array([0.0, 0.7, 0.0, 0.5]), rotvec_to_matrix([0.0, 0.7, 0.0]) @ [1.0, 0, 0])):
        inplane = np.cross(normal, rng.normal(size=(25, 3)))
        inplane /= np.linalg.norm(inplane, axis=-1, keepdims=True)
        targets = ROOT + inplane * rng.uniform(0.1, 0.5, (25, 1))
        res = solver.solve(targets, q0)
        elbow = solver.elbow_position(res.q)
        np.testing.assert_allclose((elbow - ROOT) @ normal, 0.0, atol=1e-12)
        assert np.all(res.converged)


def test_full_mode_reports_rotation_error_honestly() -> None:
    """Mode 'full' reaches the position only; the rotation error is the true geodesic error and blocks convergence."""
    solver = TwoBoneSolver(limb(), mode="full")
    rng = np.random.default_rng(8)
    poses = np.broadcast_to(np.eye(4), (10, 4, 4)).copy()
    poses[:, :3, :3] = rotvec_to_matrix(rng.normal(size=(10, 3)))
    poses[:, :3, 3] = random_targets(rng, solver, 10)
    res = solver.solve(poses)
    assert np.all(res.position_error <= 1e-9)
    R = effector_poses(solver.skeleton, res.q, 0)[..., :3, :3]
    np.testing.assert_allclose(res.rotation_error, rotation_error(R, poses[:, :3, :3]), atol=1e-12)
    assert not np.any(res.converged)
    assert all("rotation error" in r for r in res.reason)


def test_batch_shape_and_pole_broadcast() -> None:
    """Batch shape (2, 3) is kept and a single (3,) pole applies to every target."""
    solver = TwoBoneSolver(limb())
    rng = np.random.default_rng(0)
    targets = random_targets(rng, solver, 6).reshape(2, 3, 3)
    res = solver.solve(targets, pole=ROOT + [0, 0, 1.0])
    assert res.q.shape == (2, 3, 4)
    assert res.iterations.shape == (2, 3)
    assert np.all(res.iterations == 1)
    assert np.all(res.converged)


@SETTINGS
@given(
    l1=st.floats(0.0, 2.0), l2=st.floats(0.0, 2.0), distance=st.floats(0.0, 5.0),
)
def test_two_bone_angles_close_the_triangle(l1: float, l2: float, distance: float) -> None:
    """Bone 1 at the root offset angle and bone 2 bent by the hinge angle end at the clamped distance on the axis."""
    root, hinge = two_bone_angles(l1, l2, distance)
    assert 0.0 <= root <= np.pi and 0.0 <= hinge <= np.pi
    d = np.clip(distance, abs(l1 - l2), l1 + l2)
    end = l1 * np.array([np.cos(root), np.sin(root)]) + l2 * np.array([np.cos(root - hinge), np.sin(root - hinge)])
    np.testing.assert_allclose(end, [d, 0.0], atol=1e-12 * max(l1, l2))


def test_two_bone_angles_batched_and_validated() -> None:
    """The helper broadcasts its inputs and rejects negative or non-finite values."""
    root, hinge = two_bone_angles(np.array([0.3, 0.5]), 0.4, np.array([[0.5], [0.7]]))
    assert root.shape == hinge.shape == (2, 2)
    np.testing.assert_allclose(hinge[0, 0], np.pi / 2, atol=1e-12)  # 3-4-5 triangle
    for bad in ((-0.1, 0.2, 0.1), (0.1, np.nan, 0.1), (0.1, 0.2, np.inf)):
        with pytest.raises(InvalidInputError):
            two_bone_angles(*bad)


@pytest.mark.parametrize("variant", ["revolute_root", "two_balls", "extra_joint", "prismatic_hinge", "two_effectors"])
def test_structure_is_validated(variant: str) -> None:
    """Skeletons that are not ball-plus-hinge limbs are rejected with a message naming the valid structure."""
    ball = Joint("a", JointKind.BALL)
    kinds = {
        "revolute_root": [Joint("a", JointKind.REVOLUTE), Joint("b", JointKind.REVOLUTE, 0, transform(p=[0, 1, 0]))],
        "two_balls": [ball, Joint("b", JointKind.BALL, 0, transform(p=[0, 1, 0]))],
        "extra_joint": [
            ball,
            Joint("b", JointKind.REVOLUTE, 0, transform(p=[0, 1, 0])),
            Joint("c", JointKind.REVOLUTE, 1, transform(p=[0, 1, 0])),
        ],
        "prismatic_hinge": [ball, Joint("b", JointKind.PRISMATIC, 0, transform(p=[0, 1, 0]))],
        "two_effectors": [ball, Joint("b", JointKind.REVOLUTE, 0, transform(p=[0, 1, 0]))],
    }[variant]
    effs = [Effector("e", len(kinds) - 1)]
    names: object = 0
    if variant == "two_effectors":
        effs.append(Effector("f", 0))
        names = ["e", "f"]
    with pytest.raises(InvalidInputError, match="BALL joint"):
        TwoBoneSolver(Skeleton(kinds, effs), names)


def test_bad_options_raise() -> None:
    """A pole of the wrong shape, NaN pole, or unknown option raises InvalidInputError."""
    solver = TwoBoneSolver(limb())
    target = ROOT + [0, 0.3, 0.1]
    for kwargs in ({"pole": np.ones(2)}, {"pole": [np.nan, 0, 0]}, {"pole": np.ones((4, 3))}, {"swivel": 1.0}):
        with pytest.raises(InvalidInputError):
            solver.solve(np.stack([target, target]), **kwargs)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), general=st.booleans())
def test_single_target_lean_path_matches_the_general_solve(seed: int, general: bool) -> None:
    """One target in position mode (the lean path) returns what the base template returns, types included.

    Values to 1e-8 (numpy's vector loops round differently with the arrays' alignment in memory, and
    the best-effort descent carries a last-bit difference to about 1e-10: seen once under bpy 5.0.1's
    numpy, not reproducible); convergence, iterations, reasons and limit hits exactly.
    """
    rng = np.random.default_rng(seed)
    skel = random_limb(rng, general)
    limit = SwingTwistLimit((-0.7, -0.5, -1.0), (0.9, 0.5, 0.3))
    skel = Skeleton([dataclasses.replace(skel.joints[0], limit=limit), *skel.joints[1:]], skel.effectors)
    solver = TwoBoneSolver(skel, tolerance=1e-6)
    for trial in range(6):
        target = random_targets(rng, solver, 1)[0] * (3.0 if trial == 1 else 1.0)
        if trial == 2:
            target = solver._pivot.copy()
        q0 = None if trial == 3 else rng.uniform(-3.0, 3.0, 4)
        options = {} if trial % 2 else {"pole": rng.normal(size=3)}
        lean, general_ = solver.solve(target, q0, **options), Solver.solve(solver, target, q0, **options)
        for field in ("q", "converged", "position_error", "rotation_error", "iterations", "reason", "limit_hits"):
            a, b = getattr(lean, field), getattr(general_, field)
            assert type(a) is type(b) and np.shape(a) == np.shape(b), field
            if field in ("q", "position_error", "rotation_error"):
                np.testing.assert_allclose(a, b, rtol=0.0, atol=1e-8, err_msg=field)
            else:
                np.testing.assert_array_equal(a, b, err_msg=field)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), general=st.booleans())
def test_position_errors_match_forward_kinematics(seed: int, general: bool) -> None:
    """The closed-form effector position behind the reported errors is the forward kinematics' (to 1e-12 m)."""
    rng = np.random.default_rng(seed)
    solver = TwoBoneSolver(random_limb(rng, general))
    q = rng.uniform(-3.0, 3.0, (20, 4))
    targets = rng.normal(size=(20, 3))
    pos_err, rot_err = solver.errors(q, as_targets(targets, 1))
    expected = np.linalg.norm(effector_poses(solver.skeleton, q, 0)[..., :3, 3] - targets, axis=-1)
    np.testing.assert_allclose(pos_err, expected, atol=1e-12)
    assert np.all(rot_err == 0.0)


# --- a ball limit that forbids the pole's bend plane ------------------------------------------


def _twist_limited(twist_deg: float, order: str = "XYZ") -> TwoBoneSolver:
    """The Blender-like limb with its shoulder's twist (Y, the bone axis) limited to +-twist_deg."""
    from ik_core.limits import EulerLimit

    skel = limb()
    limit = EulerLimit.from_blender((False, True, False), (0.0, -np.radians(twist_deg), 0.0),
                                    (0.0, np.radians(twist_deg), 0.0), order=order)
    ball = dataclasses.replace(skel.joints[0], limit=limit)
    return TwoBoneSolver(Skeleton([ball, *skel.joints[1:]], skel.effectors), tolerance=1e-6)


def _plane_angle(solver: TwoBoneSolver, q: np.ndarray, target: np.ndarray, pole: np.ndarray) -> np.ndarray:
    """(...,) angle [rad] between the bend direction and the pole direction about the pivot-to-target line."""
    axis = target - ROOT
    axis = axis / np.linalg.norm(axis, axis=-1, keepdims=True)

    def perp(v):
        return v - np.sum(v * axis, axis=-1, keepdims=True) * axis

    bend, to_pole = perp(solver.elbow_position(q) - ROOT), perp(pole - ROOT)
    cos = np.sum(bend * to_pole, axis=-1) / (np.linalg.norm(bend, axis=-1) * np.linalg.norm(to_pole, axis=-1))
    return np.arccos(np.clip(cos, -1.0, 1.0))


def _best_feasible_plane(solver: TwoBoneSolver, q: np.ndarray, target: np.ndarray, pole: np.ndarray) -> float:
    """Brute force: the smallest plane angle [rad] any swivel inside the ball's limit gives (0.05 degree grid)."""
    limit = solver.skeleton.joints[0].limit
    axis = (target - ROOT) / np.linalg.norm(target - ROOT)
    psi = np.radians(np.arange(-180.0, 180.0, 0.05))
    turned = rotvec_to_matrix(axis * psi[:, None]) @ rotvec_to_matrix(q[:3])
    from ik_core.model.rotations import matrix_to_rotvec

    qs = np.repeat(q[None], len(psi), axis=0)
    qs[:, :3] = matrix_to_rotvec(turned)
    inside = limit.contains(qs[:, :3])
    return float(_plane_angle(solver, qs[inside], target, pole).min())


@pytest.mark.parametrize("twist_deg", [5.0, 20.0, 45.0])
def test_a_twist_limit_keeps_the_target_and_takes_the_plane_nearest_the_pole(twist_deg: float) -> None:
    """A pole whose plane needs more twist than the limit allows: the limb still reaches every target,
    inside its limit, in the allowed bend plane nearest the pole (not the pole's plane clamped afterwards,
    which left the hand off a reachable target)."""
    solver = _twist_limited(twist_deg)
    rng = np.random.default_rng(7)
    n = 40
    direction = rng.normal(size=(n, 3)) + np.array([0.0, 1.5, 0.0])
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    targets = ROOT + direction * rng.uniform(0.15, 0.5, size=(n, 1))
    poles = ROOT + rng.normal(size=(n, 3))
    res = solver.solve(targets, np.zeros((n, 4)), pole=poles)
    limit = solver.skeleton.joints[0].limit
    assert limit.contains(res.q[:, :3]).all()
    assert res.converged.all(), res.reason[~res.converged]
    assert res.position_error.max() <= 1e-6
    angles = _plane_angle(solver, res.q, targets, poles)
    free = TwoBoneSolver(limb(), tolerance=1e-6).solve(targets, np.zeros((n, 4)), pole=poles)
    forbidden = ~limit.contains(free.q[:, :3])
    assert forbidden.sum() >= 5  # the case is really exercised
    for k in np.flatnonzero(forbidden):
        assert angles[k] <= _best_feasible_plane(solver, res.q[k], targets[k], poles[k]) + np.radians(0.1)
    # Where the pole's own plane is allowed, the answer is the unlimited closed form, bit for bit.
    np.testing.assert_array_equal(res.q[~forbidden], free.q[~forbidden])


def test_the_plane_moves_smoothly_as_the_target_does() -> None:
    """A target sweeping slowly past a pole the twist limit forbids: the elbow never jumps (no pop)."""
    solver = _twist_limited(20.0)
    t = np.linspace(0.0, 1.0, 400)[:, None]
    targets = ROOT + np.hstack([0.25 * np.cos(2.0 * t), 0.3 + 0.1 * np.sin(3.0 * t), 0.2 * t - 0.1])
    pole = ROOT + np.array([0.0, 0.2, -1.0])  # asks for the elbow down: a twist far past 20 degrees
    res = solver.solve(targets, np.zeros((len(t), 4)), pole=np.broadcast_to(pole, targets.shape))
    assert res.converged.all()
    elbow = solver.elbow_position(res.q)
    assert np.linalg.norm(np.diff(elbow, axis=0), axis=1).max() < 0.01  # targets move ~2 mm a frame


@pytest.mark.parametrize("seed", range(6))
def test_reach_is_exact_inside_the_hinge_range(seed: int) -> None:
    """The reach bound is the largest distance the hinge's own range allows, found by a fine sweep of it;
    beyond it a stretched arm is certified as the best effort: its error is the distance beyond, exactly."""
    rng = np.random.default_rng(seed)
    skeleton = random_limb(rng, general=True)
    h = next(i for i, j in enumerate(skeleton.joints) if j.kind is JointKind.REVOLUTE)
    # A range that leaves out the straightest bend (the peak of the reach) in some seeds.
    lo = rng.uniform(-3.0, 2.0)
    joints = list(skeleton.joints)
    joints[h] = dataclasses.replace(joints[h], lower=lo, upper=lo + rng.uniform(0.2, 2.5))
    skeleton = Skeleton(joints, list(skeleton.effectors))
    solver = TwoBoneSolver(skeleton, "tip")
    sweep = np.zeros((20001, skeleton.dof))
    sweep[:, skeleton.q_index[h]] = np.linspace(joints[h].lower, joints[h].upper, len(sweep))
    pivot = solver.reach_bound.bases[0]
    farthest = np.linalg.norm(effector_poses(skeleton, sweep, "tip")[:, :3, 3] - pivot, axis=1).max()
    assert abs(solver.limited_reach - farthest) < 1e-7
    assert solver.limited_reach <= solver.max_reach + 1e-12
    direction = rng.normal(size=3)
    target = pivot + (farthest + 0.2) * direction / np.linalg.norm(direction)
    res = solver.solve(target)
    assert not res.converged
    np.testing.assert_allclose(res.position_error, 0.2, atol=1e-7)
    assert "beyond the chain's reach" in str(res.reason)
