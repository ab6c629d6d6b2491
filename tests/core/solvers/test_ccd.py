# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of the cyclic-coordinate-descent solver: reach, limits, step caps, robustness."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ik_core.errors import InvalidInputError
from ik_core.limits import ConeTwistLimit, EulerLimit, limit_violation, project_configuration
from ik_core.model.kinematics import effector_poses, forward_kinematics
from ik_core.model.rotations import rotation_error, rotvec_to_matrix
from ik_core.model.skeleton import Effector, Joint, JointKind, Mimic, Skeleton
from ik_core.solvers.base import as_targets
from ik_core.solvers.ccd import REACH_SWEEPS, CCDSolver, minimal_rotation

SETTINGS = settings(max_examples=8, deadline=None)


def translation(p: object) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = p
    return T


def random_chain(
    rng: np.random.Generator,
    n: int,
    kinds: tuple[str, ...] = ("revolute", "continuous", "ball", "prismatic"),
    p: tuple[float, ...] | None = (0.4, 0.2, 0.3, 0.1),
    limited: bool = False,
) -> Skeleton:
    """A serial chain with random offsets and axes; ``limited`` gives random box ranges and cones."""
    joints = []
    for i, kind in enumerate(rng.choice(kinds, size=n, p=p)):
        kind = JointKind(kind)
        lo, hi, limit = -np.inf, np.inf, None
        if limited and kind is JointKind.REVOLUTE:
            lo = rng.uniform(-2.5, 0.0)
            hi = lo + rng.uniform(0.2, 3.0)
        elif limited and kind is JointKind.PRISMATIC:
            lo, hi = -rng.uniform(0.0, 0.3), rng.uniform(0.05, 0.3)
        elif limited and kind is JointKind.BALL:
            limit = ConeTwistLimit(rng.uniform(0.2, 1.5), rng.uniform(0.2, 1.5), -0.5, rng.uniform(0.0, 1.0))
        origin = translation(rng.uniform(-0.4, 0.4, 3) if i else 0.0)
        joints.append(Joint(f"j{i}", kind, i - 1, origin, rng.normal(size=3), lo, hi, limit=limit))
    return Skeleton(joints, [Effector("tip", n - 1, translation(rng.uniform(-0.4, 0.4, 3)))])


def reachable_targets(rng: np.random.Generator, skel: Skeleton, n: int, spread: float = 2.0) -> np.ndarray:
    """(n, 4, 4) effector poses of random configurations, so every target is reachable."""
    q = project_configuration(skel, rng.uniform(-spread, spread, (n, skel.dof)))
    return effector_poses(skel, q, 0)


def planar_arm(lengths: tuple[float, ...] = (0.5, 0.4, 0.3)) -> Skeleton:
    """Revolute joints about z with links along x: reach is the sum of the lengths."""
    joints = [
        Joint(f"j{i}", JointKind.REVOLUTE, i - 1, translation([lengths[i - 1], 0, 0] if i else 0.0))
        for i in range(len(lengths))
    ]
    return Skeleton(joints, [Effector("tip", len(lengths) - 1, translation([lengths[-1], 0, 0]))])


def test_reaches_random_reachable_targets() -> None:
    """On random unconstrained chains with at least 6 variables, >= 95 % of reachable targets converge."""
    rng = np.random.default_rng(7)
    ok = total = 0
    for _ in range(8):
        skel = random_chain(rng, int(rng.integers(3, 7)))
        while skel.dof < 6:
            skel = random_chain(rng, int(rng.integers(3, 7)))
        res = CCDSolver(skel).solve(reachable_targets(rng, skel, 20)[..., :3, 3])
        assert np.all(res.position_error[res.converged] <= 1e-4)
        ok += int(res.converged.sum())
        total += res.converged.size
    assert ok / total >= 0.95


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 5))
def test_limits_hold_on_limited_chains(seed: int, n: int) -> None:
    """With box ranges and cone-twist limits, every iterate stays feasible (checked before the base projection)."""
    rng = np.random.default_rng(seed)
    skel = random_chain(rng, n, limited=True)
    solver = CCDSolver(skel, max_iterations=15)
    targets = rng.uniform(-1.5, 1.5, (8, 3))
    q0 = solver.skeleton.preferred_q
    raw, _ = solver._solve(as_targets(targets, 1), np.broadcast_to(q0, (8, skel.dof)).copy())
    assert np.all(np.isfinite(raw))
    assert np.all(limit_violation(skel, raw) <= 1e-9)
    res = solver.solve(targets)
    assert np.all(limit_violation(skel, res.q) <= 1e-9)
    assert np.all(np.isfinite(res.position_error))


def test_hinge_limits_reached_targets_inside_range() -> None:
    """Targets made by in-range hinge configurations are mostly reached without leaving the ranges."""
    rng = np.random.default_rng(3)
    ok = total = 0
    for _ in range(4):
        skel = random_chain(rng, 6, kinds=("revolute",), p=None, limited=True)
        lo, hi = skel.lower, skel.upper
        q = rng.uniform(lo, hi, (15, skel.dof))
        res = CCDSolver(skel).solve(effector_poses(skel, q, 0)[..., :3, 3])
        assert np.all((res.q >= lo - 1e-12) & (res.q <= hi + 1e-12))
        ok += int(res.converged.sum())
        total += res.converged.size
    # CCD with hard stops has local minima; most targets still converge.
    assert ok / total >= 0.6


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 6), max_step=st.floats(0.01, 1.5))
def test_one_sweep_moves_each_joint_at_most_max_step(seed: int, n: int, max_step: float) -> None:
    """A single iteration turns every revolute joint and every ball joint by at most max_step."""
    rng = np.random.default_rng(seed)
    skel = random_chain(rng, n, kinds=("revolute", "continuous", "ball"), p=(0.4, 0.2, 0.4))
    q0 = rng.uniform(-1.0, 1.0, (12, skel.dof))
    solver = CCDSolver(skel, max_step=max_step, max_iterations=1)
    solver.best_effort = False  # the sweep itself, not the best effort that finishes a missed target
    res = solver.solve(rng.uniform(-2, 2, (12, 3)), q0)
    assert np.all(res.iterations <= 1)
    for i, joint in enumerate(skel.joints):
        s = skel.q_index[i]
        if joint.kind is JointKind.BALL:
            moved = rotation_error(rotvec_to_matrix(q0[:, s : s + 3]), rotvec_to_matrix(res.q[:, s : s + 3]))
        else:
            moved = np.abs(res.q[:, s] - q0[:, s])
        assert np.all(moved <= max_step + 1e-9)


@pytest.mark.parametrize("kind", ["revolute", "ball"])
def test_stiffness_scales_the_step(kind: str) -> None:
    """A one-joint chain with stiffness s moves (1 - s) times as far as the free joint in one sweep."""
    rng = np.random.default_rng(11)
    targets = rng.uniform(-1, 1, (20, 3))

    def moved(stiffness: float) -> np.ndarray:
        joint = Joint("j", JointKind(kind), axis=(0.3, 0.2, 1.0), stiffness=stiffness)
        skel = Skeleton([joint], [Effector("tip", 0, translation([0.5, 0.1, 0.0]))])
        solver = CCDSolver(skel, max_step=np.pi, max_iterations=1)
        solver.best_effort = False  # one sweep, not the best effort that finishes a missed target
        res = solver.solve(targets)
        if kind == "ball":
            return rotation_error(np.eye(3), rotvec_to_matrix(res.q))
        return res.q[:, 0]

    np.testing.assert_allclose(moved(0.6), 0.4 * moved(0.0), atol=1e-12)


def test_single_hinge_is_solved_in_one_sweep() -> None:
    """A target on the circle of a single hinge is reached exactly in one sweep (the atan2 closed form)."""
    skel = Skeleton([Joint("j0", JointKind.CONTINUOUS)], [Effector("tip", 0, translation([0.7, 0.0, 0.0]))])
    angles = np.linspace(-3.1, 3.1, 25)
    targets = 0.7 * np.stack([np.cos(angles), np.sin(angles), np.zeros_like(angles)], axis=-1)
    res = CCDSolver(skel, max_step=np.pi).solve(targets, np.zeros(1))
    assert np.all(res.converged)
    assert np.all(res.iterations <= 1)
    np.testing.assert_allclose(res.q[:, 0], angles, atol=1e-12)


def test_prismatic_chain_is_exact() -> None:
    """Three orthogonal unbounded slides reach any target in a single sweep."""
    joints = [Joint(f"p{i}", JointKind.PRISMATIC, i - 1, axis=np.eye(3)[i]) for i in range(3)]
    skel = Skeleton(joints, [Effector("tip", 2, translation([0.1, 0.2, 0.3]))])
    targets = np.random.default_rng(5).uniform(-3, 3, (30, 3))
    res = CCDSolver(skel).solve(targets)
    assert np.all(res.converged)
    assert np.all(res.iterations <= 1)
    np.testing.assert_allclose(res.q, targets - [0.1, 0.2, 0.3], atol=1e-12)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 5))
def test_never_nan_on_degenerate_targets(seed: int, n: int) -> None:
    """Targets on pivots, on the effector, at the origin, very far, and zero-length links give finite poses."""
    rng = np.random.default_rng(seed)
    skel = random_chain(rng, n, limited=bool(rng.integers(2)))
    joints = [Joint("z0", JointKind.BALL), Joint("z1", JointKind.REVOLUTE, 0)]
    flat = Skeleton(joints, [Effector("tip", 1)])  # every link has zero length
    for sk in (skel, flat):
        frames = forward_kinematics(sk, sk.preferred_q)
        targets = np.concatenate([
            frames[:, :3, 3],
            effector_poses(sk, sk.preferred_q, 0)[None, :3, 3],
            np.zeros((1, 3)),
            [[1e6, -1e6, 3e5]],
        ])
        res = CCDSolver(sk, max_iterations=20).solve(targets)
        assert np.all(np.isfinite(res.q))
        assert np.all(np.isfinite(res.position_error))
        assert np.all(limit_violation(sk, res.q) <= 1e-9)
        assert all(isinstance(r, str) and r for r in res.reason)


def test_unreachable_target_reports_reach_and_stretches() -> None:
    """A target beyond the reach gives converged False, a reason naming distance and reach, and a straight arm."""
    skel = planar_arm()
    solver = CCDSolver(skel, max_iterations=300)
    np.testing.assert_allclose(solver.reach(), [1.2])
    res = solver.solve(np.array([[3.0, 4.0, 0.0]]), np.array([0.3, -0.4, 0.5]))
    assert not res.converged[0]
    assert "beyond the chain's reach 1.2 m" in res.reason[0]
    assert "5 m" in res.reason[0]
    assert abs(res.position_error[0] - (5.0 - 1.2)) < 1e-6


def test_targets_beyond_reach_end_stretched_within_a_few_sweeps() -> None:
    """Beyond reach a five-bone chain with Euler limits ends stretched at its target (error = distance -
    length) inside the limits, within REACH_SWEEPS sweeps, whatever bent start it had."""
    limit = EulerLimit((-1.5, -0.7, -1.5), (1.5, 0.7, 1.5))
    joints = [
        Joint(f"b{k}", JointKind.BALL, k - 1, np.eye(4) if k == 0 else translation([0, 0.3, 0]), limit=limit)
        for k in range(5)
    ]
    skel = Skeleton(joints, [Effector("tip", 4, translation([0, 0.3, 0]))])
    solver = CCDSolver(skel, "tip")
    rng = np.random.default_rng(6)
    q0 = project_configuration(skel, rng.normal(scale=0.6, size=(30, skel.dof)))
    direction = rng.normal(size=(30, 3)) * [0.4, 0.0, 0.4] + [0.0, 1.0, 0.0]  # where the limits allow straight
    direction /= np.linalg.norm(direction, axis=-1, keepdims=True)
    targets = direction * rng.uniform(1.6, 5.0, (30, 1))
    res = solver.solve(targets, q0)
    assert np.all(res.iterations <= REACH_SWEEPS) and not res.converged.any()
    np.testing.assert_allclose(res.position_error, np.linalg.norm(targets, axis=-1) - 1.5, atol=1e-5)
    assert np.all(limit_violation(skel, res.q) <= 1e-9)
    assert all(r.startswith("target out of reach: effector 'tip'") for r in res.reason)


def test_warm_start_at_solution_and_frozen_targets() -> None:
    """Targets already met by the warm start keep q exactly and report 0 iterations; others still converge."""
    rng = np.random.default_rng(2)
    skel = random_chain(rng, 5, kinds=("revolute", "ball"), p=(0.5, 0.5))
    q_goal = rng.uniform(-1, 1, (10, skel.dof))
    targets = effector_poses(skel, q_goal, 0)[..., :3, 3]
    q0 = q_goal.copy()
    q0[5:] = 0.0
    res = CCDSolver(skel).solve(targets, q0)
    np.testing.assert_array_equal(res.q[:5], q_goal[:5])
    assert np.all(res.iterations[:5] == 0)
    assert np.all(res.iterations[5:] > 0)
    assert np.all(res.converged)


def test_batch_shape_is_kept() -> None:
    """Targets with batch shape (2, 3) give results with batch shape (2, 3)."""
    skel = planar_arm()
    targets = np.random.default_rng(0).uniform(-0.6, 0.6, (2, 3, 3)) * [1, 1, 0]
    res = CCDSolver(skel).solve(targets)
    assert res.q.shape == (2, 3, 3)
    assert res.converged.shape == res.iterations.shape == res.reason.shape == (2, 3)


@pytest.mark.parametrize("mode", ["aim", "full"])
def test_orientation_modes_converge(mode: str) -> None:
    """Aim and full modes reach most reachable poses of a redundant chain, within both tolerances."""
    rng = np.random.default_rng(3)
    skel = random_chain(rng, 4, kinds=("revolute", "ball"), p=(0.5, 0.5))
    while skel.dof < 7:
        skel = random_chain(rng, 4, kinds=("revolute", "ball"), p=(0.5, 0.5))
    poses = reachable_targets(rng, skel, 24)
    res = CCDSolver(skel, mode=mode, max_iterations=300).solve(poses)
    assert np.all(res.position_error[res.converged] <= 1e-4)
    assert np.all(res.rotation_error[res.converged] <= 1e-3)
    # Full-pose CCD converges slowly near the goal; most targets still finish in the budget.
    assert res.success_rate >= 0.75
    # The orientation terms matter: position-only CCD leaves far larger rotation errors.
    pos_only = CCDSolver(skel, max_iterations=30).solve(poses[..., :3, 3])
    R = effector_poses(skel, pos_only.q, 0)[..., :3, :3]
    assert np.median(res.rotation_error) < 0.1 * np.median(rotation_error(R, poses[..., :3, :3]))


def test_two_effectors_on_a_tree() -> None:
    """Two branches sharing a trunk reach targets made by one configuration."""
    rng = np.random.default_rng(9)
    joints = [
        Joint("trunk", JointKind.BALL),
        Joint("a1", JointKind.BALL, 0, translation([0, 0.5, 0])),
        Joint("a2", JointKind.REVOLUTE, 1, translation([0.4, 0, 0]), axis=(0, 0, 1)),
        Joint("b1", JointKind.BALL, 0, translation([0, 0.5, 0.1])),
        Joint("b2", JointKind.REVOLUTE, 3, translation([-0.4, 0, 0]), axis=(0, 0, 1)),
    ]
    effs = [Effector("ha", 2, translation([0.3, 0, 0])), Effector("hb", 4, translation([-0.3, 0, 0]))]
    skel = Skeleton(joints, effs)
    q = rng.uniform(-0.8, 0.8, (30, skel.dof))
    targets = effector_poses(skel, q, ["ha", "hb"])[..., :3, 3]
    res = CCDSolver(skel, ["ha", "hb"]).solve(targets)
    assert res.success_rate >= 0.85
    assert np.all(res.position_error[res.converged] <= 1e-4)


def test_mimic_joint_chain_stays_consistent() -> None:
    """With a mimic joint the solver recomputes poses each step: errors it reports match forward kinematics."""
    joints = [
        Joint("a", JointKind.REVOLUTE, -1, axis=(0, 0, 1), lower=-2, upper=2),
        Joint("b", JointKind.REVOLUTE, 0, translation([0.5, 0, 0]), axis=(0, 0, 1)),
        Joint("c", JointKind.REVOLUTE, 1, translation([0.4, 0, 0]), axis=(0, 0, 1), mimic=Mimic("b", 0.5)),
    ]
    skel = Skeleton(joints, [Effector("tip", 2, translation([0.3, 0, 0]))])
    q = np.random.default_rng(1).uniform(-1.5, 1.5, (20, 2))
    targets = effector_poses(skel, q, 0)[..., :3, 3]
    res = CCDSolver(skel).solve(targets)
    err = np.linalg.norm(effector_poses(skel, res.q, 0)[..., :3, 3] - targets, axis=-1)
    np.testing.assert_allclose(res.position_error, err, atol=1e-12)
    assert res.success_rate >= 0.7


def test_minimal_rotation_properties() -> None:
    """minimal_rotation maps a onto b's direction with an axis perpendicular to both, also for opposite vectors."""
    rng = np.random.default_rng(0)
    a = rng.normal(size=(50, 3))
    b = rng.normal(size=(50, 3))
    b[0] = -2.0 * a[0]
    b[1] = 3.0 * a[1]
    v = minimal_rotation(a, b)
    mapped = np.einsum("nij,nj->ni", rotvec_to_matrix(v), a)
    np.testing.assert_allclose(
        mapped / np.linalg.norm(mapped, axis=-1, keepdims=True),
        b / np.linalg.norm(b, axis=-1, keepdims=True),
        atol=1e-12,
    )
    assert np.all(np.abs(np.sum(v * a, axis=-1)) <= 1e-9 * np.linalg.norm(a, axis=-1))
    np.testing.assert_allclose(v[1], 0.0, atol=1e-15)
    np.testing.assert_array_equal(minimal_rotation(np.zeros(3), [1.0, 0, 0]), np.zeros(3))


def test_invalid_arguments_raise() -> None:
    """Bad step caps, weights and unknown per-call options raise InvalidInputError naming the value."""
    skel = planar_arm()
    for kwargs in ({"max_step": 0.0}, {"max_step": np.nan}, {"orientation_weight": -1.0}, {"max_slide": 0.0}):
        with pytest.raises(InvalidInputError):
            CCDSolver(skel, **kwargs)
    with pytest.raises(InvalidInputError, match="pole"):
        CCDSolver(skel).solve(np.zeros(3), pole=np.ones(3))
