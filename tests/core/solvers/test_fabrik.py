# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests for the FABRIK solver: reaching, limits, trees, poles, orientation, edge cases."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ik_core import Effector, InvalidInputError, Joint, JointKind, Skeleton
from ik_core.limits import ConeTwistLimit, EulerLimit, limit_violation, project_configuration
from ik_core.limits.swing_twist import SwingTwistLimit
from ik_core.model.kinematics import effector_poses, forward_kinematics
from ik_core.model.rotations import rotvec_to_matrix
from ik_core.solvers import make_solver
from ik_core.solvers.base import as_targets
from ik_core.solvers.fabrik.solver import FabrikSolver
from ik_core.take.tracking import track_chain

TOL = 1e-4  # m, the solvers' default position tolerance
CONE = ConeTwistLimit(np.pi / 4, np.pi / 4, -np.pi / 6, np.pi / 6)
EULER = EulerLimit((-0.6, -0.3, -0.8), (0.6, 0.3, 0.4), (False, False, False), "XYZ")


def offset(x: float = 0.0, y: float = 0.0, z: float = 0.0, R: np.ndarray | None = None) -> np.ndarray:
    """A 4x4 transform translating by (x, y, z) [m], optionally rotating by ``R``."""
    T = np.eye(4)
    T[:3, 3] = (x, y, z)
    if R is not None:
        T[:3, :3] = R
    return T


def chain(n: int = 10, bone: float = 0.1, kind: str = "ball", limit: object | None = None) -> Skeleton:
    """n joints, bones along local Y; hinges alternate X and Z axes with +-90 degree ranges."""
    joints = []
    for i in range(n):
        origin = np.eye(4) if i == 0 else offset(y=bone)
        k = kind if kind != "mixed" else ("ball" if i % 2 == 0 else "hinge")
        if k == "hinge":
            axis = (1.0, 0.0, 0.0) if i % 2 == 0 else (0.0, 0.0, 1.0)
            joints.append(
                Joint(f"j{i}", JointKind.REVOLUTE, i - 1, origin, axis=axis, lower=-np.pi / 2, upper=np.pi / 2)
            )
        else:
            joints.append(Joint(f"j{i}", JointKind.BALL, i - 1, origin, limit=limit))
    return Skeleton(joints, [Effector("tip", n - 1, offset(y=bone))])


def reachable(skeleton: Skeleton, n: int, seed: int, effectors: object = "tip") -> tuple[np.ndarray, np.ndarray]:
    """(n, dof) in-limit configurations and their effector poses."""
    rng = np.random.default_rng(seed)
    q = project_configuration(skeleton, rng.uniform(-1.6, 1.6, (n, skeleton.dof)))
    return q, effector_poses(skeleton, q, effectors)


def raw_solve(solver: FabrikSolver, targets: np.ndarray, q0: np.ndarray) -> np.ndarray:
    """FABRIK's own answer, before the base class projects it onto the limits."""
    q0 = np.broadcast_to(q0, (*np.shape(targets)[:-1], solver.skeleton.dof)).copy()
    return solver._solve(as_targets(targets, 1), q0)[0]


# --- reaching -------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_unconstrained_ball_chain_reaches_reachable_targets(seed):
    """A 10-ball chain reaches >= 99 % of reachable targets, in fewer than 15.5 mean iterations."""
    skeleton = chain()
    _, poses = reachable(skeleton, 200, seed)
    res = FabrikSolver(skeleton, "tip").solve(poses[:, :3, 3])
    assert res.success_rate >= 0.99
    assert res.iterations.mean() < 15.5
    assert np.all(res.position_error[res.converged] <= TOL)


@st.composite
def ball_chains(draw: st.DrawFn) -> Skeleton:
    """Random unconstrained ball chains: 2-6 bones of random length, direction and frame."""
    n = draw(st.integers(2, 6))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    joints, previous = [], rng.normal(size=3) * 0.1
    for i in range(n):
        R = rotvec_to_matrix(rng.normal(size=3))
        joints.append(Joint(f"j{i}", JointKind.BALL, i - 1, offset(*previous, R=R)))
        bone = rng.normal(size=3)
        previous = bone * rng.uniform(0.05, 0.5) / np.linalg.norm(bone)
    return Skeleton(joints, [Effector("tip", n - 1, offset(*previous))])


@settings(max_examples=15, deadline=None)
@given(ball_chains(), st.integers(0, 1000))
def test_random_unconstrained_chains_reach_their_workspace(skeleton, seed):
    """Random ball chains reach >= 90 % of 30 reachable targets (misses sit at the workspace rim)."""
    _, poses = reachable(skeleton, 30, seed)
    res = FabrikSolver(skeleton, "tip").solve(poses[:, :3, 3])
    assert res.success_rate >= 0.9
    assert np.all(np.isfinite(res.q))


def test_batched_solve_equals_one_at_a_time():
    """Vectorising over the batch changes no answer."""
    skeleton = chain(6, kind="mixed", limit=CONE)
    _, poses = reachable(skeleton, 6, 5)
    solver = FabrikSolver(skeleton, "tip", max_iterations=15)
    batched = solver.solve(poses[:, :3, 3])
    for i, pose in enumerate(poses):
        single = solver.solve(pose[:3, 3])
        assert np.allclose(single.q, batched.q[i], atol=1e-12)
        assert single.iterations == batched.iterations[i]


def test_warm_start_at_a_solution_takes_no_iteration():
    """Starting from a configuration that already meets the target returns it untouched."""
    skeleton = chain(5)
    q, poses = reachable(skeleton, 4, 6)
    res = FabrikSolver(skeleton, "tip").solve(poses[:, :3, 3], q0=q)
    assert np.all(res.converged) and np.all(res.iterations == 0)
    assert np.allclose(res.q, q)


@pytest.mark.parametrize("kind,limit,rate", [("hinge", None, 0.97), ("ball", CONE, 0.97), ("ball", EULER, 0.95)])
def test_constrained_chains_reach_reachable_targets(kind, limit, rate):
    """Hinge, cone-twist and Euler-limited chains reach most in-limit targets."""
    skeleton = chain(10, kind=kind, limit=limit)
    _, poses = reachable(skeleton, 40, 7)
    res = FabrikSolver(skeleton, "tip").solve(poses[:, :3, 3])
    assert res.success_rate >= rate


def test_ball_rotations_have_no_introduced_twist():
    """Recovered ball rotations are pure swings: their axes are perpendicular to the bone (Y)."""
    skeleton = chain(6)
    _, poses = reachable(skeleton, 50, 8)
    res = FabrikSolver(skeleton, "tip").solve(poses[:, :3, 3])
    assert np.all(np.abs(res.q.reshape(50, 6, 3)[..., 1]) <= 1e-9)


# --- limits and robustness ------------------------------------------------------------------


@pytest.mark.parametrize(
    "kind,limit",
    [("hinge", None), ("ball", CONE), ("ball", EULER), ("mixed", ConeTwistLimit(0.3, 0.8, -0.2, 0.1))],
)
def test_solutions_never_violate_limits(kind, limit):
    """FABRIK's own output (before the base class's safety projection) respects every limit."""
    skeleton = chain(6, kind=kind, limit=limit)
    rng = np.random.default_rng(9)
    targets = rng.normal(size=(40, 3)) * 0.4
    targets[:5] *= 10.0  # some far out of reach
    q0 = project_configuration(skeleton, rng.uniform(-2, 2, (40, skeleton.dof)))
    q = raw_solve(FabrikSolver(skeleton, "tip", max_iterations=30), targets, q0)
    assert np.all(np.isfinite(q))
    assert np.all(limit_violation(skeleton, q) <= 1e-9)


@pytest.mark.parametrize("kind,limit", [("ball", None), ("hinge", None), ("ball", CONE), ("mixed", EULER)])
def test_no_nan_for_any_finite_target(kind, limit):
    """The root itself, the rest tip, points on the chain's line and far points give finite answers."""
    skeleton = chain(4, kind=kind, limit=limit)
    targets = np.array([
        [0.0, 0.0, 0.0], [0.0, 0.4, 0.0], [0.0, 0.2, 0.0], [0.0, -0.3, 0.0], [1e-300, 0.0, 0.0],
        [1e6, -1e6, 3.0], [0.0, 1e9, 0.0], [0.05, 0.05, 0.05],
    ])
    solver = FabrikSolver(skeleton, "tip", max_iterations=20)
    q = raw_solve(solver, targets, np.zeros(skeleton.dof))
    assert np.all(np.isfinite(q))
    res = solver.solve(targets)
    assert np.all(np.isfinite(res.position_error))
    assert not any("numerical failure" in r for r in res.reason)


def test_folded_targets_on_the_chain_line_are_reached():
    """A straight chain bends out of line (it is not stuck) to reach a point on that line."""
    skeleton = chain(4)
    res = FabrikSolver(skeleton, "tip").solve(np.array([[0.0, 0.2, 0.0], [0.0, 0.05, 0.0], [0.0, -0.1, 0.0]]))
    assert np.all(res.converged)


def test_unreachable_targets_straighten_the_chain_and_say_why():
    """Out-of-reach targets: converged False, a reason with both lengths, a straight chain towards them."""
    skeleton = chain(5)
    targets = np.array([[2.0, 0.0, 0.0], [0.3, 0.3, 0.3], [0.0, -1e6, 0.0]])
    res = FabrikSolver(skeleton, "tip").solve(targets)
    assert not np.any(res.converged)
    for r, t in zip(res.reason, targets):
        d = np.linalg.norm(t)
        assert r.startswith(
            f"target out of reach: effector 'tip' target {d:.4g} m from the chain root, {d - 0.5:.3g} m beyond "
            "the chain's reach 0.5 m"
        )
    points = np.concatenate([forward_kinematics(skeleton, res.q)[:, :, :3, 3],
                             effector_poses(skeleton, res.q, "tip")[:, None, :3, 3]], axis=1)
    direction = targets / np.linalg.norm(targets, axis=-1, keepdims=True)
    along = np.einsum("nkj,nj->nk", points, direction)
    assert np.allclose(points, along[..., None] * direction[:, None], atol=1e-9)
    assert np.allclose(along[:, -1], 0.5)


def test_zero_length_bones_and_unsupported_joints_are_rejected():
    """Zero-length bones, zero-length chains and prismatic joints raise InvalidInputError."""
    joints = [Joint("a", JointKind.BALL), Joint("b", JointKind.BALL, 0, offset(y=0.1))]
    with pytest.raises(InvalidInputError, match="zero-length"):
        FabrikSolver(Skeleton(joints, [Effector("tip", 1)]), "tip")
    with pytest.raises(InvalidInputError, match="zero-length"):
        FabrikSolver(Skeleton([Joint("a", JointKind.BALL)]), 0)
    joints = [Joint("a", JointKind.BALL), Joint("s", JointKind.PRISMATIC, 0, offset(y=0.1), lower=0, upper=1)]
    with pytest.raises(InvalidInputError, match="prismatic"):
        FabrikSolver(Skeleton(joints, [Effector("tip", 1, offset(y=0.1))]), "tip")


def test_bad_options_are_rejected():
    """Unknown options and badly shaped or non-finite poles raise InvalidInputError."""
    solver = FabrikSolver(chain(3), "tip")
    with pytest.raises(InvalidInputError, match="pole"):
        solver.solve(np.array([0.0, 0.2, 0.0]), polar=1)
    with pytest.raises(InvalidInputError, match="pole"):
        solver.solve(np.zeros((4, 3)), pole=np.zeros((3, 3)))
    with pytest.raises(InvalidInputError, match="pole"):
        solver.solve(np.zeros(3), pole=[np.nan, 0, 0])


def test_registered_under_its_name():
    """make_solver('fabrik', ...) builds a FabrikSolver."""
    assert isinstance(make_solver("fabrik", chain(3), "tip"), FabrikSolver)


# --- trees, poles, orientation ---------------------------------------------------------------


def tree(spread: bool) -> Skeleton:
    """Spine of three balls forking into two three-bone arms (from one point, or spread apart)."""
    B = JointKind.BALL
    joints = [Joint("root", B), Joint("spine", B, 0, offset(y=0.1)), Joint("chest", B, 1, offset(y=0.1))]
    for side, sx in (("L", 1.0), ("R", -1.0)):
        first = len(joints)
        joints.append(Joint(f"upper{side}", B, 2, offset(x=0.05 * sx if spread else 0.0, y=0.1)))
        joints.append(Joint(f"lower{side}", B, first, offset(y=0.1)))
        joints.append(Joint(f"hand{side}", B, first + 1, offset(y=0.1)))
    return Skeleton(joints, [Effector("L", 5, offset(y=0.1)), Effector("R", 8, offset(y=0.1))])


@pytest.mark.parametrize("spread", [False, True])
def test_tree_with_two_effectors_reaches_both(spread):
    """Both hands reach their (jointly reachable) targets."""
    skeleton = tree(spread)
    _, poses = reachable(skeleton, 60, 10, ["L", "R"])
    res = FabrikSolver(skeleton, ["L", "R"]).solve(poses[..., :3, 3])
    assert res.success_rate >= 0.95
    reached = np.linalg.norm(effector_poses(skeleton, res.q, ["L", "R"])[..., :3, 3] - poses[..., :3, 3], axis=-1)
    assert np.all(reached[res.converged] <= TOL)


def test_unreachable_tree_target_names_the_effector():
    """In a tree the reason names the effector whose target is out of reach."""
    skeleton = tree(False)
    targets = np.array([[5.0, 0.0, 0.0], [-0.1, 0.3, 0.0]])
    res = FabrikSolver(skeleton, ["L", "R"]).solve(targets)
    assert not res.converged
    assert str(res.reason).startswith(
        "target out of reach: effector 'L' target 5 m from the chain root, 4.4 m beyond the chain's reach 0.6 m"
    )


@pytest.mark.parametrize("side", [1.0, -1.0])
@pytest.mark.parametrize("plane", [0, 2])
def test_pole_turns_the_bend_towards_its_side(side, plane):
    """With a pole on one side of the root-target line, the middle joints bend to that side."""
    skeleton = chain(3)
    pole = np.zeros(3)
    pole[plane] = side
    pole[1] = 0.1
    for q0 in (np.zeros(skeleton.dof), np.tile([0.0, 0.0, 0.3], 3), np.tile([-0.3, 0.0, 0.0], 3)):
        res = FabrikSolver(skeleton, "tip").solve(np.array([0.0, 0.2, 0.0]), q0=q0, pole=pole)
        assert res.converged
        joints = forward_kinematics(skeleton, res.q)[1:, :3, 3]
        assert np.all(joints[:, plane] * side > 0.01)


@pytest.mark.parametrize("mode", ["full", "aim"])
@pytest.mark.parametrize("kind,rate", [("ball", 0.97), ("mixed", 0.85)])
def test_orientation_modes_meet_the_rotation_tolerance(mode, kind, rate):
    """Reachable poses are met in position and orientation (full) or aim direction (aim)."""
    skeleton = chain(6 if kind == "ball" else 8, kind=kind)
    _, poses = reachable(skeleton, 60, 11)
    res = FabrikSolver(skeleton, "tip", mode=mode).solve(poses)
    assert res.success_rate >= rate
    assert np.all(res.rotation_error[res.converged] <= 1e-3)
    assert np.all(res.position_error[res.converged] <= TOL)


def test_full_mode_with_cone_limits_stays_inside():
    """Orientation mode on a limited chain keeps every joint inside its cone and twist range."""
    skeleton = chain(6, limit=CONE)
    rng = np.random.default_rng(12)
    targets = np.broadcast_to(np.eye(4), (20, 4, 4)).copy()
    targets[:, :3, :3] = rotvec_to_matrix(rng.normal(size=(20, 3)))
    targets[:, :3, 3] = rng.normal(size=(20, 3)) * 0.3
    solver = FabrikSolver(skeleton, "tip", mode="full", max_iterations=30)
    q0 = np.zeros((20, skeleton.dof))
    q = solver._solve(as_targets(targets, 1), q0)[0]
    assert np.all(limit_violation(skeleton, q) <= 1e-9)


# --- limbs: a ball joint carrying a hinge carrying the effector -----------------------------

TWIST = np.radians(40.0)


def limb(upper: float = 0.28, lower: float = 0.25, twist: float = TWIST) -> Skeleton:
    """An arm like the metarig's: a ball (twist about Y in +-``twist``), an X hinge in [0, 150] degrees."""
    return Skeleton(
        [
            Joint("upper", JointKind.BALL, -1, np.eye(4),
                  limit=SwingTwistLimit((-np.pi, -twist, -np.pi), (np.pi, twist, np.pi))),
            Joint("fore", JointKind.REVOLUTE, 0, offset(y=upper), axis=(1.0, 0.0, 0.0), lower=0.0,
                  upper=np.radians(150.0)),
        ],
        [Effector("tip", 1, offset(y=lower))],
    )


def twist_of(skeleton: Skeleton, q: np.ndarray) -> np.ndarray:
    """(n,) twist [rad] of the ball joint about its bone, as the limit measures it."""
    split = skeleton.joints[0].limit._split
    return split.swing_twist_angles(rotvec_to_matrix(q[..., :3]))[2]


def test_limb_tracks_a_circling_target_with_a_pole_in_one_pass():
    """A hand circling in front of the shoulder (operators/examples.py's path) is reached on every frame."""
    skeleton = limb()
    frames = 240
    t = np.linspace(0.0, 2.0 * np.pi, frames)
    rest_tip = np.array([0.0, 0.53, 0.0])
    path = rest_tip + np.array([-0.12, -0.25, 0.2]) + 0.12 * np.column_stack([np.cos(t), np.zeros(frames), np.sin(t)])
    target = np.broadcast_to(np.eye(4), (frames, 4, 4)).copy()
    target[:, :3, 3] = path
    pole = np.broadcast_to([0.0, 0.2, -0.5], (frames, 3))
    solver = FabrikSolver(skeleton, "tip")
    res = track_chain(solver, np.broadcast_to(np.eye(4), (frames, 4, 4)), target, np.zeros(4), pole=pole)
    assert np.all(res.converged)
    assert np.all(res.iterations <= 1)
    assert np.all(limit_violation(skeleton, res.q) <= 1e-9)
    knee = forward_kinematics(skeleton, res.q)[:, 1, :3, 3]
    line = path / np.linalg.norm(path, axis=-1, keepdims=True)

    def off_line(v: np.ndarray) -> np.ndarray:
        return v - np.sum(v * line, axis=-1, keepdims=True) * line

    # Bent towards the pole's side of the shoulder-hand line.
    assert np.all(np.sum(off_line(knee) * off_line(pole), axis=-1) > 0.0)


def test_straight_limb_at_full_reach_converges():
    """A target at the straight limb's tip (a leg standing) is met, not crept up on (was 100 iterations)."""
    skeleton = limb(0.536, 0.454)
    target = np.array([0.0, 0.99, 0.0]) + np.array([[0.0, 0.0, 0.0], [0.0, -1e-4, 0.0], [0.0, -0.002, 1e-3]])
    q0 = np.array([-0.002, 0.0, 0.0, 0.004])
    res = FabrikSolver(skeleton, "tip").solve(target, q0=q0, pole=np.array([0.0, 0.5, 1.0]))
    assert np.all(res.converged)
    assert np.all(res.iterations == 1)


def test_limb_pole_needing_too_much_twist_takes_the_nearest_allowed_plane():
    """A pole beside the arm asks for ~90 degrees of twist: the plane turns as far as +-40 degrees allows."""
    skeleton = limb()
    solver = FabrikSolver(skeleton, "tip")
    target = np.array([0.0, 0.35, 0.15])
    for side in (1.0, -1.0):
        pole = np.array([side, 0.2, 0.0])
        q = solver._solve(as_targets(target[None], 1), np.zeros((1, 4)), pole=pole)[0]
        res = solver.solve(target, pole=pole)
        assert res.converged
        assert np.all(limit_violation(skeleton, q) <= 1e-9)
        assert abs(abs(twist_of(skeleton, q)[0]) - TWIST) < 1e-5  # pinned at the limit, not short of it
        knee = forward_kinematics(skeleton, q)[0, 1, :3, 3]
        assert knee[0] * side > 0.01  # and as far towards the pole as that allows


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_random_limbs_reach_reachable_targets_in_one_pass(seed):
    """Any ball + hinge geometry (tilted axis, offset joints, two-sided range) hits reachable targets at once."""
    rng = np.random.default_rng(seed)
    axis = rng.normal(size=3)
    lo, hi = np.sort(rng.uniform(-2.5, 2.5, 2))
    skeleton = Skeleton(
        [
            Joint("a", JointKind.BALL, -1, offset(*rng.normal(size=3) * 0.1, R=rotvec_to_matrix(rng.normal(size=3)))),
            Joint("b", JointKind.REVOLUTE, 0, offset(*rng.normal(size=3) * 0.3, R=rotvec_to_matrix(rng.normal(size=3))),
                  axis=tuple(axis / np.linalg.norm(axis)), lower=lo, upper=hi),
        ],
        [Effector("tip", 1, offset(*rng.normal(size=3) * 0.3))],
    )
    _, poses = reachable(skeleton, 100, seed)
    res = FabrikSolver(skeleton, "tip").solve(poses[:, :3, 3], pole=rng.normal(size=3))
    assert np.all(res.converged)
    assert np.all(res.iterations == 1)
    q = raw_solve(FabrikSolver(skeleton, "tip"), poses[:, :3, 3], np.zeros(skeleton.dof))
    assert np.all(limit_violation(skeleton, q) <= 1e-9)


def test_twist_limited_limbs_reach_and_stay_inside():
    """With the metarig's twist range, random reachable targets and a fixed pole: all met, none outside."""
    skeleton = limb()
    _, poses = reachable(skeleton, 300, 21)
    solver = FabrikSolver(skeleton, "tip")
    for pole in (np.array([0.0, 0.0, -1.0]), np.array([1.0, 0.0, 0.0])):
        res = solver.solve(poses[:, :3, 3], pole=pole)
        assert np.all(res.converged)
        q = solver._solve(as_targets(poses[:, :3, 3], 1), np.zeros((300, 4)), pole=pole)[0]
        assert np.all(limit_violation(skeleton, q) <= 1e-9)
