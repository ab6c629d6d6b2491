# SPDX-License-Identifier: GPL-3.0-or-later
"""Every solver on rigs no one designed: random trees of every joint kind and limit, every mode.

The standards ask that a solver never raise anything but a clear error, never return NaN, and
answer an unreachable target with the closest pose its limits allow, ``converged`` False and a
reason. These rigs mix ball joints (Euler limits of every order, cone-twist limits about odd twist
axes, swing-twist limits with locked axes, no limit), hinges about odd axes, continuous and
prismatic joints, mimics, fixed joints and zero-length bones, with ranges that are a single value
or wider than 2 pi, and branch into trees; targets are poses of the rig moved by 0 to 100 m.
"""

from __future__ import annotations

import numpy as np
import pytest

from ik_core import (
    SOLVER_NAMES,
    ArticulateError,
    ConeTwistLimit,
    Effector,
    EulerLimit,
    Joint,
    JointKind,
    Mimic,
    Skeleton,
    effector_poses,
    limit_violation,
    make_solver,
    project_configuration,
    solve_track,
)
from ik_core.limits import SwingTwistLimit
from ik_core.model.rotations import EULER_ORDERS, make_transform, rotvec_to_matrix

_MOVING = (JointKind.REVOLUTE, JointKind.CONTINUOUS, JointKind.PRISMATIC)


def _range(rng: np.random.Generator, reach: float) -> tuple[float, float]:
    """A joint range: one value (a locked axis) one time in ten, wider than 2 pi one in twenty."""
    draw = rng.random()
    if draw < 0.1:
        value = float(rng.uniform(-1.0, 1.0))
        return value, value
    if draw < 0.15:
        return -20.0, 20.0
    low, high = sorted(rng.uniform(-reach, reach, 2))
    return float(low), float(high)


def _ball_limit(rng: np.random.Generator):
    kind = int(rng.integers(0, 4))
    if kind == 0:
        return None
    if kind == 1:
        low, high = zip(*(_range(rng, np.pi) for _ in range(3)))
        return EulerLimit(low, high, order=str(rng.choice(EULER_ORDERS)))
    if kind == 2:
        swing = rng.uniform(0.0, np.pi, 2) * (rng.random(2) > 0.1)  # a swing of 0 one time in ten
        twist = np.sort(rng.uniform(-np.pi, np.pi, 2))
        return ConeTwistLimit(float(swing[0]), float(swing[1]), float(twist[0]), float(twist[1]),
                              twist_axis=tuple(rng.normal(size=3)))
    low = tuple(-rng.uniform(0.0, 1.5, 3) * (rng.random(3) > 0.15))
    high = tuple(rng.uniform(0.0, 1.5, 3) * (rng.random(3) > 0.15))
    return SwingTwistLimit(low, high, tuple(bool(b) for b in rng.random(3) < 0.15))


def random_rig(rng: np.random.Generator) -> Skeleton:
    """A random tree of 1-8 joints of every kind, an effector at each leaf."""
    joints: list[Joint] = []
    for i in range(int(rng.integers(1, 9))):
        parent = i - 1 if i == 0 or rng.random() < 0.8 else int(rng.integers(-1, i))
        length = 0.0 if rng.random() < 0.08 else float(rng.uniform(0.01, 1.0))
        turn = rotvec_to_matrix(rng.normal(size=3)) if rng.random() < 0.3 else np.eye(3)
        offset = (0.0, length, 0.0) if rng.random() < 0.7 else tuple(rng.normal(size=3) * length)
        origin = make_transform(turn, offset)
        kind = str(rng.choice(["ball", "ball", "revolute", "continuous", "prismatic", "fixed"]))
        name = f"j{i}"
        if kind == "ball":
            joints.append(Joint(name, JointKind.BALL, parent, origin, limit=_ball_limit(rng)))
        elif kind == "fixed":
            joints.append(Joint(name, JointKind.FIXED, parent, origin))
        else:
            sources = [j.name for j in joints if j.kind in _MOVING and j.mimic is None]
            mimic = None
            if sources and rng.random() < 0.1:
                mimic = Mimic(sources[-1], float(rng.uniform(-2.0, 2.0)), float(rng.uniform(-0.5, 0.5)))
            joint_kind = {"revolute": JointKind.REVOLUTE, "continuous": JointKind.CONTINUOUS,
                          "prismatic": JointKind.PRISMATIC}[kind]
            low, high = _range(rng, 3.5)
            bounds = {} if joint_kind is JointKind.CONTINUOUS else {"lower": low, "upper": high}
            joints.append(Joint(name, joint_kind, parent, origin, axis=tuple(rng.normal(size=3)), mimic=mimic,
                                **bounds))
    leaves = [i for i in range(len(joints)) if not any(j.parent == i for j in joints)]
    tips = [make_transform(np.eye(3), (0.0, float(rng.uniform(0.0, 0.5)), 0.0)) for _ in leaves]
    return Skeleton(joints, [Effector(f"e{k}", leaf, tip) for k, (leaf, tip) in enumerate(zip(leaves, tips))])


def _targets(rng: np.random.Generator, skeleton: Skeleton, names: list[str], frames: int, mode: str) -> np.ndarray:
    """Poses of the rig's effectors at random in-limit configurations, moved by 0, 0.1, 1 or 100 m."""
    q = project_configuration(skeleton, rng.uniform(-3.0, 3.0, (frames, skeleton.dof)))
    poses = np.stack([effector_poses(skeleton, q, name) for name in names], axis=1)
    poses[..., :3, 3] += rng.normal(size=(frames, len(names), 3)) * rng.choice([0.0, 0.1, 1.0, 100.0])
    targets = poses[..., :3, 3] if mode == "position" else poses
    return targets[:, 0] if len(names) == 1 else targets


@pytest.mark.parametrize("seed", range(40))
def test_every_solver_answers_random_rigs_with_poses_inside_the_limits_or_a_clear_error(seed: int) -> None:
    rng = np.random.default_rng(seed)
    skeleton = random_rig(rng)
    while not skeleton.dof:  # a rig of fixed joints only: nothing for a solver
        skeleton = random_rig(rng)
    checked, refusals = 0, []
    for name in SOLVER_NAMES:
        mode = str(rng.choice(["position", "full", "aim"]))
        names = [e.name for e in skeleton.effectors[: 1 if rng.random() < 0.7 else 2]]
        try:
            solver = make_solver(name, skeleton, names if len(names) > 1 else names[0], mode=mode)
        except ArticulateError as error:
            refusals.append(str(error))  # a solver that does not take this rig says so (two-bone on a tree)
            continue
        targets = _targets(rng, skeleton, names, int(rng.integers(1, 12)), mode)
        result = solver.solve(targets, None) if rng.random() < 0.5 else solve_track(solver, targets, None)
        q = np.asarray(result.q)
        assert np.isfinite(q).all(), (name, mode)
        assert limit_violation(skeleton, q).max(initial=0.0) <= 1e-7, (name, mode)
        reasons = np.asarray(result.reason, dtype=object).reshape(-1)
        missed = ~np.asarray(result.converged, dtype=bool).reshape(-1)
        assert all(str(r) for r in reasons[missed]), (name, mode)
        checked += 1
    if not checked:
        # Only a rig whose limits leave it a single pose is refused by every solver, and it is told so.
        landed = project_configuration(skeleton, rng.uniform(-30.0, 30.0, (200, skeleton.dof)))
        assert np.ptp(landed, axis=0).max() <= 1e-9, refusals
        assert all("every joint is locked" in r for r in refusals), refusals
