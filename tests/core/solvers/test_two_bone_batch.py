# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of TwoBoneGroup: several limbs solved in one batched call, each as its own solver would."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_two_bone import ROOT, limb, random_limb, random_targets

from ik_core.errors import InvalidInputError
from ik_core.limits import ConeTwistLimit, EulerLimit
from ik_core.limits.swing_twist import SwingTwistLimit
from ik_core.model.kinematics import effector_poses
from ik_core.model.skeleton import Skeleton
from ik_core.solvers.base import Solver
from ik_core.solvers.dls.solver import DLSSolver
from ik_core.solvers.two_bone.group import TwoBoneGroup
from ik_core.solvers.two_bone.solver import TwoBoneSolver

SETTINGS = settings(max_examples=25, deadline=None)
D = np.radians
LIMITS = (
    None,
    SwingTwistLimit((-D(40), -D(30), -D(60)), (D(50), D(30), D(20))),
    EulerLimit((D(-90), D(-60), D(-100)), (D(90), D(60), D(60)), order="XYZ"),
    EulerLimit((D(-45), D(-20), D(-80)), (D(30), D(70), D(10)), order="ZXY"),
    ConeTwistLimit(np.pi / 4, np.pi / 5, -np.pi / 6, np.pi / 6),
)


def limited_limb(rng: np.random.Generator, kind: int, hinge: tuple[float, float] | None) -> Skeleton:
    """A random limb whose ball joint has ``LIMITS[kind]`` and, optionally, a hinge range [rad]."""
    skel = random_limb(rng, bool(rng.integers(2)))
    ball = dataclasses.replace(skel.joints[0], limit=LIMITS[kind])
    last = skel.joints[-1]
    if hinge is not None:
        last = dataclasses.replace(last, lower=hinge[0], upper=hinge[1])
    return Skeleton([ball, *skel.joints[1:-1], last], skel.effectors)


def random_group(rng: np.random.Generator, n: int) -> list[TwoBoneSolver]:
    """``n`` limbs with every kind of ball limit and some hinge ranges."""
    solvers = []
    for c in range(n):
        hinge = (-0.3, 1.2) if c % 3 == 1 else None
        solvers.append(TwoBoneSolver(limited_limb(rng, int(rng.integers(len(LIMITS))), hinge), tolerance=1e-6))
    return solvers


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 6))
def test_each_row_is_what_its_own_solver_returns(seed: int, n: int) -> None:
    """Same q (to rounding) as the solver's general solve, and convergence, reason, limit hits, errors.

    For reachable, unreachable and degenerate targets, with and without poles.
    """
    rng = np.random.default_rng(seed)
    solvers = random_group(rng, n)
    group = TwoBoneGroup(solvers)
    for trial in range(4):
        targets = np.stack([random_targets(rng, s, 1)[0] for s in solvers])
        if trial == 1:
            targets = targets * 3.0  # mostly out of reach
        if trial == 2:
            targets[0] = solvers[0]._pivot  # on the pivot: the fallbacks need the warm start
        q0 = rng.uniform(-4.0, 4.0, (n, 4))
        poles = None if trial == 3 else [rng.normal(size=3) if rng.random() < 0.7 else None for _ in range(n)]
        res = group.solve(targets, q0, poles)
        assert res.q.shape == (n, 4)
        for c, solver in enumerate(solvers):
            options = {} if poles is None or poles[c] is None else {"pole": poles[c]}
            # The general template (Solver.solve), not the lean single-target path built on the group.
            own = Solver.solve(solver, targets[c], q0[c], **options)
            # To 1e-12 rad, not bit for bit: numpy's SIMD loops may round the last bit differently
            # with the arrays' memory alignment, and a descent carries that on (seen 3e-14 in CI).
            np.testing.assert_allclose(res.q[c], own.q, rtol=0.0, atol=1e-12)
            assert res.converged[c] == own.converged
            assert res.reason[c] == own.reason
            assert res.limit_hits[c] == own.limit_hits
            assert res.position_error[c] == pytest.approx(float(own.position_error), abs=1e-12)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_answers_are_finite_and_inside_every_limit(seed: int) -> None:
    """Whatever the targets and warm starts, every row is finite, its hinge in range and its ball in its limit."""
    rng = np.random.default_rng(seed)
    solvers = random_group(rng, 5)
    group = TwoBoneGroup(solvers)
    targets = rng.normal(scale=2.0, size=(5, 3))
    res = group.solve(targets, rng.uniform(-10.0, 10.0, (5, 4)), [rng.normal(size=3) for _ in range(5)])
    assert np.all(np.isfinite(res.q)) and np.all(np.isfinite(res.position_error))
    for c, solver in enumerate(solvers):
        skel = solver.skeleton
        assert np.all(res.q[c] >= skel.lower) and np.all(res.q[c] <= skel.upper)
        limit = skel.joints[0].limit
        if limit is not None:
            assert limit.contains(res.q[c, :3], tol=1e-7)
    assert np.all(res.converged == (res.position_error <= 1e-6))
    assert all(r == "converged" for r in res.reason[res.converged])
    assert all(r != "converged" for r in res.reason[~res.converged])


def test_reachable_targets_are_reached_by_every_limb() -> None:
    """Four limbs of different sizes and hinge ranges reach their targets exactly, each elbow on its pole side."""
    rng = np.random.default_rng(3)
    skels = [limb(0.3, 0.25, 0.0, 2.6), limb(0.45, 0.42, -2.6, 0.0), limb(0.2, 0.5), limb(0.5, 0.1, 0.0, 3.0)]
    solvers = [TwoBoneSolver(s, tolerance=1e-9) for s in skels]
    group = TwoBoneGroup(solvers)
    # Targets each limb reaches with its hinge in range (a random in-range pose's effector).
    theta = [rng.uniform(max(s.skeleton.lower[3], -3.0), min(s.skeleton.upper[3], 3.0)) for s in solvers]
    q = np.column_stack([rng.normal(size=(4, 3)), theta])
    targets = np.stack([effector_poses(s.skeleton, q[c], 0)[:3, 3] for c, s in enumerate(solvers)])
    poles = [ROOT + [0.0, 0.2, 1.0]] * 4
    res = group.solve(targets, np.zeros((4, 4)), poles)
    assert np.all(res.converged) and np.all(res.position_error <= 1e-9)
    for c, s in enumerate(solvers):
        # The elbow is on the pole's side of the root-target line: same bend-plane normal.
        t = targets[c] - ROOT
        n_elbow = np.cross(t, s.elbow_position(res.q[c]) - ROOT)
        n_pole = np.cross(t, poles[c] - ROOT)
        np.testing.assert_allclose(n_elbow / np.linalg.norm(n_elbow), n_pole / np.linalg.norm(n_pole), atol=1e-8)


def test_bad_groups_and_inputs_raise() -> None:
    """Empty groups, other solvers or modes, and bad shapes or values raise InvalidInputError."""
    solver = TwoBoneSolver(limb())
    with pytest.raises(InvalidInputError, match="at least one"):
        TwoBoneGroup([])
    with pytest.raises(InvalidInputError, match="position"):
        TwoBoneGroup([TwoBoneSolver(limb(), mode="full")])
    with pytest.raises(InvalidInputError, match="DLSSolver"):
        TwoBoneGroup([solver, DLSSolver(limb())])
    group = TwoBoneGroup([solver, TwoBoneSolver(limb(0.5, 0.5))])
    target = ROOT + [0.0, 0.3, 0.1]
    good = np.stack([target, target])
    for targets, q0, poles in (
        (good[:1], np.zeros((2, 4)), None),
        (good, np.zeros((2, 3)), None),
        (np.stack([target, [np.nan, 0, 0]]), np.zeros((2, 4)), None),
        (good, np.full((2, 4), np.inf), None),
        (good, np.zeros((2, 4)), [None]),
        (good, np.zeros((2, 4)), [None, [np.nan, 0.0, 0.0]]),
        (good, np.zeros((2, 4)), [np.ones(2), None]),
    ):
        with pytest.raises(InvalidInputError):
            group.solve(targets, q0, poles)
