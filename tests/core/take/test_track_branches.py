# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of the branch search for non-redundant arms (ik_core.take.branch_search) and its use by takes."""

from __future__ import annotations

import numpy as np
import pytest

from ik_core.formats.urdf import parse_urdf
from ik_core.model.kinematics import effector_poses
from ik_core.model.rotations import rotation_error
from ik_core.solvers.dls.solver import DLSSolver
from ik_core.take.branch_search import track_branches
from ik_core.take.repair import jump_score
from ik_core.take.tracking import solve_track

MAX_JUMP = 0.1
TOL = 1e-6

# The kinematics of a KUKA KR 16-2 (joint origins, axes and limits from ROS-Industrial's
# kuka_experimental kr16_2 URDF, Apache-2.0): a 6-joint industrial arm with an offset elbow,
# whose takes slip between elbow branches near full stretch.
KR16_JOINTS = [  # name, origin xyz [m], axis, lower, upper [rad]
    ("joint_a1", "0 0 0.675", "0 0 -1", -3.22885911619, 3.22885911619),
    ("joint_a2", "0.26 0 0", "0 1 0", -2.70526034059, 0.610865238198),
    ("joint_a3", "0.68 0 0", "0 1 0", -2.26892802759, 2.68780704807),
    ("joint_a4", "0.67 0 -0.035", "-1 0 0", -6.10865238198, 6.10865238198),
    ("joint_a5", "0 0 0", "0 1 0", -2.26892802759, 2.26892802759),
    ("joint_a6", "0 0 0", "-1 0 0", -6.10865238198, 6.10865238198),
]


def kr16_urdf(continuous: tuple[str, ...] = ()) -> str:
    """The KR 16-2 as URDF text, with its tool0 flange frame; the joints named in ``continuous`` turn without limits."""
    links = "".join(f'<link name="link_{k}"/>' for k in range(len(KR16_JOINTS) + 1)) + '<link name="tool0"/>'
    joints = "".join(
        f'<joint name="{name}" type="{"continuous" if name in continuous else "revolute"}">'
        f'<parent link="link_{k}"/><child link="link_{k + 1}"/>'
        f'<origin xyz="{xyz}" rpy="0 0 0"/><axis xyz="{axis}"/>'
        + ("" if name in continuous else f'<limit lower="{lo}" upper="{hi}" effort="0" velocity="1"/>')
        + "</joint>"
        for k, (name, xyz, axis, lo, hi) in enumerate(KR16_JOINTS)
    )
    tool = (f'<joint name="tool" type="fixed"><parent link="link_{len(KR16_JOINTS)}"/><child link="tool0"/>'
            '<origin xyz="0.158 0 0" rpy="0 1.57079632679 0"/></joint>')
    return f'<robot name="kr16_2">{links}{joints}{tool}</robot>'



@pytest.fixture(scope="module")
def kr16():
    return parse_urdf(kr16_urdf()).to_skeleton(None, None)


def smooth_path(skeleton, frames: int, seed: int) -> np.ndarray:
    """(frames, dof) two sines per joint inside the limits (bench_robots' tracking paths)."""
    rng = np.random.default_rng(seed)
    lo, hi = skeleton.lower, skeleton.upper
    half, mid = np.minimum(0.5 * (hi - lo), np.pi), 0.5 * (lo + hi)
    t = np.arange(frames)[:, None] / frames
    center = mid + rng.uniform(-0.25, 0.25, skeleton.dof) * half
    a1, a2 = rng.uniform(0.15, 0.35, (2, skeleton.dof)) * half
    f1, f2 = rng.integers(1, 4, (2, skeleton.dof))
    ph1, ph2 = rng.uniform(0, 2 * np.pi, (2, skeleton.dof))
    return np.clip(center + a1 * np.sin(2 * np.pi * f1 * t + ph1) + a2 * np.sin(2 * np.pi * f2 * t + ph2), lo, hi)


def solver_for(skeleton) -> DLSSolver:
    return DLSSolver(skeleton, 0, mode="full", tolerance=TOL, rotation_tolerance=TOL, restarts=4)


def test_searched_path_is_smooth_and_reaches_every_target(kr16) -> None:
    """Over a take the frame-by-frame tracker jumps on, the cheapest branch path steps <= max_jump, on target."""
    q_path = smooth_path(kr16, 500, seed=11)
    targets = effector_poses(kr16, q_path, 0)
    solver = solver_for(kr16)
    (q, ok), *_ = track_branches(solver, targets, q_path[0], MAX_JUMP)
    assert ok.all()
    assert jump_score(kr16, q, q_path[0], MAX_JUMP) == (0, 0.0)
    reached = effector_poses(kr16, q, 0)
    assert np.abs(reached[:, :3, 3] - targets[:, :3, 3]).max() <= TOL
    assert rotation_error(reached[:, :3, :3], targets[:, :3, :3]).max() <= TOL
    assert kr16.within_limits(q).all()


def test_a_smooth_incumbent_stays_smooth(kr16) -> None:
    """With the generating path as the incumbent, the cheapest path has no jump either."""
    q_path = smooth_path(kr16, 300, seed=17)
    targets = effector_poses(kr16, q_path, 0)
    paths = track_branches(solver_for(kr16), targets, q_path[0], MAX_JUMP, incumbent=q_path,
                           incumbent_ok=np.ones(300, dtype=bool))
    q, ok = paths[0]
    assert ok.all()
    assert jump_score(kr16, q, q_path[0], MAX_JUMP)[0] == 0


@pytest.mark.parametrize("seed", [11, 17, 22])
def test_take_with_look_ahead_has_no_jump_where_frame_by_frame_slips(kr16, seed: int) -> None:
    """Takes whose frame-by-frame answer slips onto another elbow branch and whips are baked jump-free."""
    q_path = smooth_path(kr16, 500, seed=seed)
    targets = effector_poses(kr16, q_path, 0)
    solver = solver_for(kr16)
    plain = solve_track(solver, targets, q_path[0])
    assert jump_score(kr16, plain.q, q_path[0], MAX_JUMP)[0] > 0  # the slip this search exists for
    res = solve_track(solver, targets, q_path[0], look_ahead=True)
    assert res.converged.all()
    assert jump_score(kr16, res.q, q_path[0], MAX_JUMP) == (0, 0.0)
    assert kr16.within_limits(res.q).all()


def test_a_wrist_that_winds_on_is_searched_without_whole_turn_jumps(kr16) -> None:
    """A continuous wrist joint wound past a turn: the branches found afresh at a block boundary lie a turn away
    from the path arriving there, the same poses; the searched path and the take keep winding, with no jump."""
    wrist = parse_urdf(kr16_urdf(continuous=("joint_a4", "joint_a6"))).to_skeleton(None, None)
    q_path = smooth_path(kr16, 500, seed=11)
    q_path[:, 5] += np.linspace(0.0, 3.0 * np.pi, 500)  # the flange turns one and a half times on
    targets = effector_poses(wrist, q_path, 0)
    solver = solver_for(wrist)
    (q, ok), *_ = track_branches(solver, targets, q_path[0], MAX_JUMP)
    assert ok.all()
    assert jump_score(wrist, q, q_path[0], MAX_JUMP) == (0, 0.0)
    assert q[-1, 5] > q[0, 5] + 2.0 * np.pi  # wound on, not unwound at a boundary
    res = solve_track(solver, targets, q_path[0], look_ahead=True)
    assert res.converged.all()
    assert jump_score(wrist, res.q, q_path[0], MAX_JUMP) == (0, 0.0)


def test_unreachable_stretch_is_reported_and_the_rest_still_reached(kr16) -> None:
    """Targets 5 m out for a stretch: those frames come back unconverged with a reason, the others converge, no NaN."""
    q_path = smooth_path(kr16, 400, seed=11)
    targets = effector_poses(kr16, q_path, 0)
    targets[150:260, 0, 3] += 5.0
    solver = solver_for(kr16)
    (q, ok), *_ = track_branches(solver, targets, q_path[0], MAX_JUMP)
    assert np.isfinite(q).all() and not ok[150:260].any() and ok[:150].all() and ok[260:].all()
    res = solve_track(solver, targets, q_path[0], look_ahead=True)
    assert np.isfinite(res.q).all()
    assert kr16.within_limits(res.q).all()
    assert not res.converged[150:260].any() and res.converged[:150].all() and res.converged[260:].all()
    assert all("reach" in str(r) for r in np.asarray(res.reason)[150:260])
