# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of the lean single-target DLS kernel for serial arms (ik_core.solvers.dls.serial)."""

from __future__ import annotations

import numpy as np
import pytest
from data_files import ROBOTS

from ik_core import Effector, InvalidInputError, Joint, JointKind, Skeleton
from ik_core.formats.urdf import load_urdf
from ik_core.model.kinematics import effector_poses, jacobian
from ik_core.model.rotations import rotation_error, rotvec_to_matrix
from ik_core.solvers.base import Solver
from ik_core.solvers.dls.solver import REACH_POLISH, DLSSolver

POS_TOL, ROT_TOL = 1e-5, 1e-5


def _transform(rng: np.random.Generator, scale: float = 0.3) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = rotvec_to_matrix(rng.normal(size=3))
    T[:3, 3] = rng.normal(size=3) * scale
    return T


def serial_arm(seed: int, dof: int = 7, prismatic: int | None = None, fixed: int | None = None) -> Skeleton:
    """A random serial arm; joint ``prismatic`` slides (+/-0.2 m), a fixed joint after ``fixed``."""
    rng = np.random.default_rng(seed)
    joints = []
    for i in range(dof):
        slide = i == prismatic
        joints.append(Joint(
            f"j{i}", JointKind.PRISMATIC if slide else JointKind.REVOLUTE, len(joints) - 1, _transform(rng),
            axis=rng.normal(size=3), lower=-0.2 if slide else -2.5, upper=0.2 if slide else 2.5,
        ))
        if i == fixed:
            joints.append(Joint(f"f{i}", JointKind.FIXED, len(joints) - 1, _transform(rng)))
    return Skeleton(joints, [Effector("tool", len(joints) - 1, _transform(rng, 0.1))], name=f"arm{seed}")


def reachable(skeleton: Skeleton, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    q = rng.uniform(skeleton.lower, skeleton.upper, (n, skeleton.dof))
    return q, effector_poses(skeleton, q, 0)


def general(solver: DLSSolver) -> DLSSolver:
    """The same solver with the serial kernel switched off (the general particle path)."""
    solver._serial = None
    return solver


@pytest.fixture(scope="module")
def ur5() -> Skeleton:
    return load_urdf(ROBOTS / "ur5.urdf", tip_links="tool0")


@pytest.fixture(scope="module")
def panda() -> Skeleton:
    return load_urdf(ROBOTS / "panda.urdf", tip_links="panda_link8")


def test_serial_arms_take_the_kernel_and_others_do_not() -> None:
    """Revolute, prismatic and fixed joints take the kernel; aim mode, two effectors and balls do not."""
    assert DLSSolver(serial_arm(0, prismatic=2, fixed=3))._serial is not None
    assert DLSSolver(serial_arm(0), mode="position")._serial is not None
    assert DLSSolver(serial_arm(0), mode="aim")._serial is None
    arm = serial_arm(1)
    two = Skeleton(arm.joints, [arm.effectors[0], Effector("mid", 3)], name="two")
    assert DLSSolver(two, ["tool", "mid"])._serial is None
    ball = Skeleton(
        [Joint("b", JointKind.BALL, -1), Joint("r", JointKind.REVOLUTE, 0, _transform(np.random.default_rng(2)))],
        [Effector("tip", 1, _transform(np.random.default_rng(3), 0.1))], name="ball",
    )
    assert DLSSolver(ball)._serial is None
    stiff = serial_arm(4)
    stiff = Skeleton([Joint(j.name, j.kind, j.parent, j.origin, axis=j.axis, lower=j.lower, upper=j.upper,
                            stiffness=0.5 if k == 1 else 0.0) for k, j in enumerate(stiff.joints)],
                     stiff.effectors, name="stiff")
    assert DLSSolver(stiff)._serial is None


@pytest.mark.parametrize("robot", ["ur5", "panda"])
def test_kernel_and_general_path_both_reach_reachable_targets(robot: str, request: pytest.FixtureRequest) -> None:
    """On real arms every reachable target converges on both paths, with errors measured independently."""
    skel = request.getfixturevalue(robot)
    _, T = reachable(skel, 40, seed=11)
    mid = 0.5 * (skel.lower + skel.upper)
    fast, slow = DLSSolver(skel, max_iterations=300), general(DLSSolver(skel, max_iterations=300))
    for t in T:
        a, b = fast.solve(t, mid), slow.solve(t, mid)
        assert a.converged and b.converged, (a.reason, b.reason)
        for res in (a, b):
            pose = effector_poses(skel, res.q, 0)
            assert np.linalg.norm(pose[:3, 3] - t[:3, 3]) <= POS_TOL
            assert rotation_error(pose[:3, :3], t[:3, :3]) <= ROT_TOL
            assert np.all(res.q >= skel.lower) and np.all(res.q <= skel.upper)
        assert a.position_error == pytest.approx(np.linalg.norm(effector_poses(skel, a.q, 0)[:3, 3] - t[:3, 3]),
                                                 abs=1e-12)


def test_result_equals_the_templates_for_the_same_kernel(ur5: Skeleton) -> None:
    """The lean entry point returns what the generic template returns around the same kernel."""
    _, T = reachable(ur5, 6, seed=5)
    far = T[0].copy()
    far[:3, 3] = [3.0, 0.0, 0.0]
    cases = [(T[1], None), (T[2], np.zeros(ur5.dof)), (T[:4], np.zeros((4, ur5.dof))), (far, None), (T[3:6], None)]
    for targets, q0 in cases:
        fast = DLSSolver(ur5).solve(targets, q0)
        solver = DLSSolver(ur5)
        ref = Solver.solve(solver, targets, q0)  # validation, kernel via _solve, errors, reasons
        for field in ("q", "converged", "position_error", "rotation_error", "iterations", "reason", "limit_hits"):
            a, b = np.asarray(getattr(fast, field)), np.asarray(getattr(ref, field))
            assert a.shape == b.shape and a.dtype == b.dtype, field
            if a.dtype == object:
                assert a.tolist() == b.tolist()
            else:
                np.testing.assert_allclose(a, b, rtol=0, atol=1e-12, err_msg=field)


def test_unreachable_target_is_reported_with_a_reason(ur5: Skeleton) -> None:
    """A target beyond reach skips the lean kernel's restarts: a short polish, a reason giving the distance."""
    T = np.eye(4)
    T[:3, 3] = [5.0, 0.0, 0.3]
    solver = DLSSolver(ur5, max_iterations=40)
    res = solver.solve(T)
    assert not res.converged
    excess = float(solver.reach_excess(T))
    assert f"{excess:.3g} m beyond the chain's reach" in str(res.reason)
    assert int(res.iterations) <= REACH_POLISH and int(solver._last_restarts) == 0
    assert excess <= res.position_error <= np.linalg.norm(effector_poses(ur5, ur5.preferred_q, 0)[:3, 3] - T[:3, 3])
    assert np.all(np.isfinite(res.q)) and np.all(res.q >= ur5.lower) and np.all(res.q <= ur5.upper)
    # In a batch the kernel solves the reachable targets and leaves this one to the polish.
    reachable = effector_poses(ur5, ur5.preferred_q + 0.1, 0)
    both = solver.solve(np.stack([reachable, T]))
    assert both.converged[0] and not both.converged[1] and both.iterations[1] <= REACH_POLISH


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_answers_are_finite_and_inside_the_limits_for_any_target(seed: int) -> None:
    """Random, far and near-pi targets on arms with prismatic and fixed joints: never NaN, never out."""
    skel = serial_arm(seed, prismatic=1 + seed, fixed=seed)
    rng = np.random.default_rng(seed)
    solver = DLSSolver(skel, max_iterations=30, time_budget_s=None)
    _, T = reachable(skel, 4, seed + 100)
    T[1, :3, 3] *= 10.0
    T[2, :3, :3] = T[2, :3, :3] @ rotvec_to_matrix(np.array([np.pi - 1e-9, 0.0, 0.0]))
    for t in T:
        res = solver.solve(t, rng.uniform(skel.lower, skel.upper))
        assert np.all(np.isfinite(res.q))
        assert np.all(res.q >= skel.lower) and np.all(res.q <= skel.upper)
        assert np.isfinite(res.position_error) and np.isfinite(res.rotation_error)
        assert bool(res.converged) == (res.reason == "converged")


def test_prismatic_arm_converges_and_matches_the_generic_jacobian() -> None:
    skel = serial_arm(7, prismatic=3, fixed=2)
    solver = DLSSolver(skel)
    kernel = solver._serial
    q, T = reachable(skel, 5, seed=3)
    G = kernel.target_terms(T[0, :3, 3], T[0, :3, :3])
    _, JT, ew, E, pe, re = kernel.evaluate(q, G, T[0, :3, :3])
    np.testing.assert_allclose(JT.transpose(0, 2, 1), jacobian(skel, q, 0), atol=1e-12)
    poses = effector_poses(skel, q, 0)
    np.testing.assert_allclose(pe, np.linalg.norm(poses[:, :3, 3] - T[0, :3, 3], axis=-1), atol=1e-12)
    np.testing.assert_allclose(re, rotation_error(poses[:, :3, :3], T[0, :3, :3]), atol=1e-9)
    np.testing.assert_allclose(E, 0.5 * np.sum(ew * ew, axis=-1), rtol=1e-9, atol=1e-15)
    res = solver.solve(T, np.zeros((5, skel.dof)))
    assert res.converged.all(), res.reason


def test_same_seed_same_answers(ur5: Skeleton) -> None:
    _, T = reachable(ur5, 10, seed=9)
    a = [DLSSolver(ur5, seed=3).solve(t).q for t in T]
    solver = DLSSolver(ur5, seed=3)
    b = [solver.solve(t).q for t in T]
    c = [solver.solve(t).q for t in T]
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(b, c)


def test_warm_start_at_the_answer_takes_no_iteration(ur5: Skeleton) -> None:
    q, T = reachable(ur5, 1, seed=4)
    res = DLSSolver(ur5).solve(T[0], q[0])
    assert res.converged and int(res.iterations) == 0
    np.testing.assert_array_equal(res.q, q[0])


def test_warm_start_near_its_answer_keeps_its_branch(panda: Skeleton) -> None:
    """A warm start close to its target races no seed: the answer stays next to the start."""
    q, T = reachable(panda, 10, seed=6)
    solver = DLSSolver(panda)
    rng = np.random.default_rng(0)
    for qi, t in zip(q, T):
        start = np.clip(qi + rng.normal(0.0, 0.02, panda.dof), panda.lower, panda.upper)
        res = solver.solve(t, start)
        assert res.converged
        assert int(solver._last_restarts) == 0
        assert np.abs(res.q - start).max() < 0.2


def test_position_mode_and_weights(ur5: Skeleton) -> None:
    q, T = reachable(ur5, 5, seed=8)
    res = DLSSolver(ur5, mode="position").solve(T[:, :3, 3])
    assert res.converged.all()
    np.testing.assert_allclose(effector_poses(ur5, res.q, 0)[:, :3, 3], T[:, :3, 3], atol=POS_TOL)
    weighted = DLSSolver(ur5, weights=(1.0, 1.0, 4.0, 0.5, 0.5, 0.5))
    assert weighted._serial is not None
    res = weighted.solve(T)
    assert res.converged.all(), res.reason


def test_small_batches_equal_one_target_at_a_time(ur5: Skeleton) -> None:
    _, T = reachable(ur5, 8, seed=12)
    solver = DLSSolver(ur5, time_budget_s=None)
    batch = solver.solve(T)
    one = [solver.solve(t) for t in T]
    np.testing.assert_array_equal(batch.q, [r.q for r in one])
    np.testing.assert_array_equal(batch.iterations, [int(r.iterations) for r in one])


def test_bad_inputs_raise_as_in_the_template(ur5: Skeleton) -> None:
    """The lean entry point leaves bad shapes and NaN to the template, which raises."""
    _, T = reachable(ur5, 2, seed=14)
    solver = DLSSolver(ur5)
    nan = T[0].copy()
    nan[0, 3] = np.nan
    for target, q0 in ((T[0], np.zeros((1, ur5.dof))), (T, np.zeros((3, ur5.dof))), (nan, None),
                       (T[0], np.full(ur5.dof, np.inf)), (T[0, :3], None)):
        with pytest.raises(InvalidInputError):
            solver.solve(target, q0)


def test_inputs_the_template_repairs_still_solve(ur5: Skeleton) -> None:
    """Lists, float32 and slightly non-orthonormal targets go through the template (then the kernel)."""
    _, T = reachable(ur5, 1, seed=13)
    scaled = T[0].copy()
    scaled[:3, :3] *= 1.001
    for target in (T[0].tolist(), T[0].astype(np.float32), scaled):
        res = DLSSolver(ur5, tolerance=1e-4, rotation_tolerance=1e-3).solve(target)
        assert res.converged, res.reason
