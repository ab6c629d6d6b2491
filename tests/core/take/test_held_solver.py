# SPDX-License-Identifier: GPL-3.0-or-later
"""Gauss-Newton with one variable held (ik_core.take.held.HeldSolver): bounded work on grid values that
cannot reach their target, the same answers where they can."""

from __future__ import annotations

import numpy as np
from robot_cases import rail_arm_urdf

from ik_core import Effector, Joint, JointKind, Skeleton
from ik_core.model.kinematics import effector_poses
from ik_core.robots.model import RobotModel
from ik_core.solvers.dls.solver import DLSSolver
from ik_core.take.held import HeldSolver


def _rail_arm():
    model = RobotModel.from_urdf(rail_arm_urdf())
    (tool,) = model.default_tools()
    solver = DLSSolver(model.skeleton, tool, mode="full", tolerance=1e-5, rotation_tolerance=1e-5)
    return model.skeleton, tool, solver


def _counting(solver: DLSSolver) -> tuple[HeldSolver, list[int]]:
    """A HeldSolver whose evaluations count the configurations they evaluate."""
    held = HeldSolver(solver)
    counted = [0]
    evaluate = held.solver._evaluate

    def counting(q, tp, tr):
        counted[0] += len(q)
        return evaluate(q, tp, tr)

    held.solver._evaluate = counting
    return held, counted


def test_a_target_out_of_reach_of_its_held_value_stops_early() -> None:
    """Targets 5 m beyond the arm's reach: the rows stop after a few iterations instead of spending all
    12; the same arm's rows whose targets are in reach converge onto them."""
    skeleton, tool, solver = _rail_arm()
    rng = np.random.default_rng(0)
    q_goal = np.clip(rng.normal(0.0, 0.5, (6, skeleton.dof)), skeleton.lower, skeleton.upper)
    poses = effector_poses(skeleton, q_goal, tool)
    start = q_goal + rng.normal(0.0, 0.05, q_goal.shape)
    held_column = 0  # the prismatic rail, held where the goal has it
    start[:, held_column] = q_goal[:, held_column]
    held = np.full(len(q_goal), held_column)
    tp, tr = poses[:, :3, 3][:, None], poses[:, :3, :3][:, None]

    runner, counted = _counting(solver)
    q, conv = runner.run(start, held, tp + np.array([5.0, 0.0, 0.0]), tr, iterations=12)
    assert not conv.any()
    assert counted[0] <= len(start) * 8, f"{counted[0]} evaluations for {len(start)} rows out of reach"
    np.testing.assert_array_equal(q[:, held_column], start[:, held_column])

    runner, counted = _counting(solver)
    q, conv = runner.run(start, held, tp, tr, iterations=12)
    assert conv.all()
    np.testing.assert_allclose(effector_poses(skeleton, q, tool)[:, :3, 3], poses[:, :3, 3], atol=2e-5)


def test_a_retry_in_the_same_loop_is_a_second_run_on_the_rows_left() -> None:
    """``retry`` more iterations for the rows a run leaves short of their target give what a second run on
    those rows gives (up to rounding: the batches differ), in one evaluation fewer."""
    skeleton, tool, solver = _rail_arm()
    rng = np.random.default_rng(1)
    q_goal = np.clip(rng.normal(0.0, 0.5, (40, skeleton.dof)), skeleton.lower, skeleton.upper)
    poses = effector_poses(skeleton, q_goal, tool)
    # Starts from near to far, some out of reach of their held value: rows converge in the first run, in
    # the retry, or never.
    start = q_goal + rng.normal(0.0, 1.0, q_goal.shape) * np.linspace(0.01, 0.6, len(q_goal))[:, None]
    held = rng.integers(0, skeleton.dof, len(q_goal))
    start[np.arange(len(q_goal)), held] = np.clip(start[np.arange(len(q_goal)), held], skeleton.lower[held],
                                                  skeleton.upper[held])
    tp, tr = poses[:, :3, 3][:, None], poses[:, :3, :3][:, None]

    runner, counted = _counting(solver)
    q1, conv1 = runner.run(start, held, tp, tr, iterations=3)
    slow = np.flatnonzero(~conv1)
    q1[slow], conv1[slow] = runner.run(q1[slow], held[slow], tp[slow], tr[slow], iterations=12)
    two_runs = counted[0]

    runner, counted = _counting(solver)
    q2, conv2 = runner.run(start, held, tp, tr, iterations=3, retry=12)
    assert 0 < len(slow) and 0 < np.count_nonzero(conv1[slow]) < len(slow)  # both stages matter
    np.testing.assert_array_equal(conv2, conv1)
    np.testing.assert_allclose(q2, q1, rtol=0.0, atol=1e-9)
    assert counted[0] == two_runs - len(slow)


def _planar_arm() -> Skeleton:
    """Three hinges about Z, links of 0.3 m along X: stretched along +X at q = 0."""
    joints = []
    for i in range(3):
        origin = np.eye(4)
        origin[0, 3] = 0.3 if i else 0.0
        joints.append(Joint(f"j{i}", JointKind.REVOLUTE, i - 1, origin, axis=(0.0, 0.0, 1.0), lower=-2.0, upper=2.0))
    tip = np.eye(4)
    tip[0, 3] = 0.3
    return Skeleton(joints, [Effector("tip", 2, tip)])


def test_a_configuration_no_step_improves_stops_after_three_refusals_and_one_fresh_start() -> None:
    """Rows stretched straight at targets beyond reach (the gradient is zero, so every step is refused, whatever
    the damping): each stops after three refused steps, and the retry starts it over once, as a second run would,
    instead of spending its whole budget (1 + 12 + 12 evaluations each before)."""
    skeleton = _planar_arm()
    solver = DLSSolver(skeleton, "tip", mode="position", tolerance=1e-5)
    start = np.zeros((4, 3))
    held = np.array([0, 1, 2, 0])
    tp = np.array([[[2.0, 0.0, 0.0]], [[1.5, 0.0, 0.0]], [[3.0, 0.0, 0.0]], [[0.95, 0.0, 0.0]]])

    runner, counted = _counting(solver)
    q, conv = runner.run(start, held, tp, None, iterations=12, retry=12)
    assert not conv.any()
    np.testing.assert_array_equal(q, start)  # the closest pose the held values allow: stretched
    assert counted[0] == len(start) * (1 + 3 + 3)
