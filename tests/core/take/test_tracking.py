# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of ik_core.take.tracking: continuity of solve_track through singularities, segments, repair, misses."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ik_core import Effector, EulerLimit, InvalidInputError, Joint, JointKind, Skeleton
from ik_core.limits import ConeTwistLimit, SwingTwistLimit, limit_violation, project_configuration
from ik_core.model.kinematics import effector_poses
from ik_core.robots import presets as robots
from ik_core.solvers import make_solver
from ik_core.solvers.base import IKResult, Solver, Targets
from ik_core.solvers.ccd import REACH_SWEEPS
from ik_core.solvers.dls.solver import REACH_POLISH, DLSSolver
from ik_core.solvers.reach import ReachBound
from ik_core.take import tracking
from ik_core.take.steps import joint_steps
from ik_core.take.tracking import solve_track

FRAMES = 200
MAX_JUMP = 0.1
# UR5 path crossing the elbow (q3 = 0) and wrist (q5 = 0) singularities in the same stretch,
# where the elbow-up/down and wrist branches meet.
UR5_PATH = ([0.3, -1.2, 0.6, -1.0, 0.25, 0.4], [0.9, -1.6, -0.5, -0.6, -0.3, 0.9])
# Panda path through its shoulder singularity (q2 = 0, joints 1 and 3 coaxial).
PANDA_PATH = ([0.2, 0.5, -0.3, -2.0, 0.3, 1.8, 0.5], [-0.4, -0.5, 0.4, -1.5, -0.4, 1.2, -0.2])


def joint_path(ends: tuple[list[float], list[float]], frames: int = FRAMES) -> np.ndarray:
    """(frames, dof) eased straight line in joint space between two configurations."""
    qa, qb = (np.asarray(e, dtype=float) for e in ends)
    s = 0.5 - 0.5 * np.cos(np.linspace(0.0, np.pi, frames))[:, None]
    return qa + s * (qb - qa)


def solver_for(skeleton, cls=DLSSolver) -> DLSSolver:
    return cls(skeleton, 0, mode="full", tolerance=1e-6, rotation_tolerance=1e-6, restarts=4)


def max_jump(q: np.ndarray) -> float:
    return float(np.max(np.abs(np.diff(q, axis=0))))


@pytest.fixture(scope="module")
def ur5():
    return robots.load_preset("ur5")


@pytest.fixture(scope="module")
def ur5_take(ur5) -> tuple[np.ndarray, np.ndarray]:
    q_path = joint_path(UR5_PATH)
    return q_path, effector_poses(ur5, q_path, 0)


def test_ur5_keeps_its_branch_through_elbow_and_wrist_singularities(ur5, ur5_take) -> None:
    """Every frame converges, no joint jumps > 0.1 rad, and the answer stays on the path's own branch."""
    q_path, targets = ur5_take
    res = solve_track(solver_for(ur5), targets, q_path[0])
    assert res.converged.all()
    assert max_jump(res.q) <= MAX_JUMP
    # Where elbow branches meet (q3 = 0), the motion continues onto the path's side.
    assert np.abs(res.q - q_path).max() < 0.02


def with_a_ball_joint(skeleton: Skeleton, after: int, limit: object) -> Skeleton:
    """``skeleton`` with a ball joint at rest (identity origin) inserted as the only child of joint ``after``."""
    joints = []
    for k, joint in enumerate(skeleton.joints):
        parent = joint.parent + (joint.parent > after) if joint.parent != after else after + 1
        joints.append(dataclasses.replace(joint, parent=parent))
        if k == after:
            joints.append(Joint("held_ball", JointKind.BALL, after, np.eye(4), limit=limit))
    effectors = [dataclasses.replace(e, joint=e.joint + (e.joint > after)) for e in skeleton.effectors]
    return Skeleton(joints, effectors, name=skeleton.name)


@pytest.mark.parametrize(
    "limit",
    [
        EulerLimit(locked=(True, True, True)),
        ConeTwistLimit(0.0, 0.0, 0.0, 0.0),
        SwingTwistLimit(locked=(True, True, True)),
    ],
    ids=["euler", "cone_twist", "swing_twist"],
)
def test_a_ball_joint_its_limits_hold_still_leaves_an_arm_as_it_was(ur5, ur5_take, limit) -> None:
    """A rig's bone with every IK axis locked inside an arm: the arm keeps its branch through its singularities.

    Counted as three more variables, it made the 6-joint arm look redundant (no hold along
    near-singular directions, no acceleration cuts) and its columns took a share of every step
    that the projection threw away: the take left the path's branch (1.0 rad off, or a 2.36 rad jump).
    """
    q_path, targets = ur5_take
    arm = with_a_ball_joint(ur5, 2, limit)
    ball = int(arm.q_index[arm.joint_index("held_ball")])
    others = np.r_[0:ball, ball + 3 : arm.dof]
    start = np.insert(q_path[0], ball, np.zeros(3))
    assert np.allclose(effector_poses(arm, start[None], 0), targets[:1], atol=1e-12)
    res = solve_track(solver_for(arm), targets, start)
    assert res.converged.all()
    assert np.all(res.q[:, ball : ball + 3] == 0.0)
    assert max_jump(res.q) <= MAX_JUMP
    assert np.abs(res.q[:, others] - q_path).max() < 0.02


def test_seven_dof_arm_tracks_through_its_shoulder_singularity_without_jumps() -> None:
    """A redundant arm (Panda preset) converges on every frame and no joint jumps > 0.1 rad."""
    panda = robots.load_preset("panda")
    q_path = joint_path(PANDA_PATH)
    res = solve_track(solver_for(panda), effector_poses(panda, q_path, 0), q_path[0])
    assert res.converged.all()
    assert max_jump(res.q) <= MAX_JUMP
    assert panda.within_limits(res.q).all()


def sine_path(skeleton, frames: int, seed: int) -> np.ndarray:
    """(frames, dof) two sines per joint inside the limits (bench_robots' smooth paths), <= ~0.04 rad/frame."""
    rng = np.random.default_rng(seed)
    lo, hi = skeleton.lower, skeleton.upper
    half = np.minimum(0.5 * (hi - lo), np.pi)
    t = np.arange(frames)[:, None] / frames
    center = 0.5 * (lo + hi) + rng.uniform(-0.25, 0.25, skeleton.dof) * half
    a1, a2 = rng.uniform(0.15, 0.35, (2, skeleton.dof)) * half
    f1, f2 = rng.integers(1, 4, (2, skeleton.dof))
    ph1, ph2 = rng.uniform(0, 2 * np.pi, (2, skeleton.dof))
    return np.clip(center + a1 * np.sin(2 * np.pi * f1 * t + ph1) + a2 * np.sin(2 * np.pi * f2 * t + ph2), lo, hi)


@pytest.mark.parametrize("seed", [0, 1, 4])
def test_frame_by_frame_pass_keeps_a_redundant_arms_self_motion_steady(monkeypatch, seed: int) -> None:
    """Panda takes tracked from the frame before have no step over 0.1 rad without any look-ahead repair.

    A redundant chain's frames start from the frame before itself, not moved on at its joint
    velocity: extrapolating the self-motion whipped these takes (steps over 0.1 rad) until
    the look-ahead repairs took them out.
    """
    from ik_core.take import repair as track_repair
    from ik_core.take import smoothing as track_smoothing

    monkeypatch.setattr(track_smoothing, "spread_jumps", lambda *args, **kwargs: 0)
    monkeypatch.setattr(tracking, "_look_ahead", lambda *args, **kwargs: False)
    monkeypatch.setattr(track_repair, "search_repair", lambda *args, **kwargs: False)
    panda = robots.load_preset("panda")
    q_path = sine_path(panda, 1000, seed=seed)
    targets = effector_poses(panda, q_path, 0)
    plain = solve_track(solver_for(panda), targets, q_path[0], look_ahead=True)
    assert plain.converged.all()
    assert max_jump(np.vstack([q_path[:1], plain.q])) <= MAX_JUMP
    assert panda.within_limits(plain.q).all()


def test_look_ahead_keeps_the_iiwa_jump_free_where_frame_by_frame_jumps(monkeypatch) -> None:
    """An iiwa take whose frame-by-frame answer drifts onto a limit and jumps (> 3 rad) is solved jump-free."""
    from ik_core.take import repair as track_repair
    from ik_core.take import tracking

    iiwa = robots.load_preset("lbr_iiwa_14_r820")
    q_path = sine_path(iiwa, 1000, seed=0)
    targets = effector_poses(iiwa, q_path, 0)
    res = solve_track(solver_for(iiwa), targets, q_path[0], look_ahead=True)
    assert res.converged.all()
    assert max_jump(np.vstack([q_path[:1], res.q])) <= MAX_JUMP
    assert iiwa.within_limits(res.q).all()
    poses = effector_poses(iiwa, res.q, 0)
    assert np.abs(poses[:, :3, 3] - targets[:, :3, 3]).max() <= 1e-6
    # Either look-ahead pass removes them on its own: the receding horizon, and the self-motion search.
    monkeypatch.setattr(track_repair, "search_repair", lambda *args, **kwargs: False)
    horizon = solve_track(solver_for(iiwa), targets, q_path[0], look_ahead=True)
    assert max_jump(np.vstack([q_path[:1], horizon.q])) <= MAX_JUMP
    monkeypatch.undo()
    monkeypatch.setattr(tracking, "_look_ahead", lambda *args, **kwargs: False)
    searched = solve_track(solver_for(iiwa), targets, q_path[0], look_ahead=True)
    assert searched.converged.all()
    assert max_jump(np.vstack([q_path[:1], searched.q])) <= MAX_JUMP
    # Without both the same take jumps.
    monkeypatch.setattr(track_repair, "search_repair", lambda *args, **kwargs: False)
    plain = solve_track(solver_for(iiwa), targets, q_path[0], look_ahead=True)
    assert max_jump(np.vstack([q_path[:1], plain.q])) > 1.0


@pytest.mark.parametrize("segment", [1, 7, FRAMES])
def test_any_segment_length_gives_the_same_continuous_answer(ur5, ur5_take, segment: int) -> None:
    """One frame per call, odd segments and the whole take in one batch all follow the path's branch."""
    q_path, targets = ur5_take
    res = solve_track(solver_for(ur5), targets, q_path[0], segment=segment)
    assert res.converged.all() and res.q.shape == q_path.shape
    assert max_jump(res.q) <= MAX_JUMP
    assert np.abs(res.q - q_path).max() < 0.02


class _FlakyBatches(DLSSolver):
    """Answers batch calls with a 2 pi turn of the last joint on their 4th target (same pose, far q)."""

    def _solve(self, targets: Targets, q0: np.ndarray, **options: object) -> tuple[np.ndarray, np.ndarray]:
        q, iterations = super()._solve(targets, q0, **options)
        if q.ndim == 2 and len(q) > 3:
            q = q.copy()
            q[3, -1] -= 2.0 * np.pi
        return q, iterations


def test_repair_re_solves_a_frame_that_jumped_from_its_predecessor(ur5, ur5_take) -> None:
    """A converged frame that jumps > max_jump is solved again from the previous frame, continuously."""
    q_path, targets = ur5_take
    solver = solver_for(ur5, _FlakyBatches)
    raw = solver.solve(targets[:8], q_path[0])
    assert raw.converged[3] and abs(raw.q[3, -1] - q_path[3, -1]) > 6.0  # the flaw is there to repair
    res = solve_track(solver, targets, q_path[0], segment=16)
    assert res.converged.all()
    assert max_jump(res.q) <= MAX_JUMP


class _NoRadius(DLSSolver):
    call_options = ()


def test_solvers_without_a_local_mode_are_still_tracked(ur5, ur5_take) -> None:
    """A solver without the ``radius`` option is only warm-started (predicted), and still tracks."""
    q_path, targets = ur5_take
    res = solve_track(solver_for(ur5, _NoRadius), targets, q_path[0])
    assert res.converged.all()
    assert max_jump(res.q) <= MAX_JUMP


def test_unreachable_stretch_is_reported_not_raised(ur5, ur5_take) -> None:
    """Frames moved out of reach come back unconverged with a reach reason; the rest converge, in limits."""
    q_path, targets = ur5_take
    targets = targets.copy()
    gap = slice(80, 100)
    targets[gap, :3, 3] *= 4.0  # several reaches away from the base
    res = solve_track(solver_for(ur5), targets, q_path[0])
    assert not res.converged[gap].any()
    assert all(isinstance(reason, str) for reason in res.reason)  # repaired frames included
    assert all("reach" in reason for reason in res.reason[gap])
    assert res.converged[:80].all() and res.converged[100:].mean() >= 0.95
    assert np.all(np.isfinite(res.q)) and ur5.within_limits(res.q).all()
    assert max_jump(res.q[:80]) <= MAX_JUMP


def test_progress_reports_every_frame_in_order(ur5, ur5_take) -> None:
    """progress(done, total) is called with increasing counts ending at (N, N)."""
    q_path, targets = ur5_take
    calls: list[tuple[int, int]] = []
    solve_track(solver_for(ur5), targets[:50], q_path[0], segment=16, progress=lambda d, t: calls.append((d, t)))
    done = [d for d, _ in calls]
    assert done == sorted(done) and calls[-1] == (50, 50) and all(t == 50 for _, t in calls)


def test_bad_arguments_raise(ur5, ur5_take) -> None:
    """segment < 1 or a max_jump that is not > 0 raise InvalidInputError naming the value."""
    q_path, targets = ur5_take
    with pytest.raises(InvalidInputError, match="segment"):
        solve_track(solver_for(ur5), targets[:4], q_path[0], segment=0)
    with pytest.raises(InvalidInputError, match="max_jump"):
        solve_track(solver_for(ur5), targets[:4], q_path[0], max_jump=0.0)


def test_empty_take_gives_an_empty_result(ur5) -> None:
    """Zero frames give an IKResult of batch shape (0,)."""
    res = solve_track(solver_for(ur5), np.zeros((0, 4, 4)), ur5.mid_q())
    assert res.q.shape == (0, ur5.dof) and res.converged.shape == (0,)


def test_look_ahead_is_opt_in() -> None:
    """Without look_ahead the repairs do not run (a fast default); with it the same take has fewer jumps."""
    iiwa = robots.load_preset("lbr_iiwa_14_r820")
    q_path = sine_path(iiwa, 1000, seed=0)
    targets = effector_poses(iiwa, q_path, 0)
    plain = solve_track(solver_for(iiwa), targets, q_path[0])
    repaired = solve_track(solver_for(iiwa), targets, q_path[0], look_ahead=True)
    jumps = [np.count_nonzero(np.abs(np.diff(np.vstack([q_path[:1], r.q]), axis=0)).max(axis=1) > MAX_JUMP)
             for r in (plain, repaired)]
    assert jumps[0] > 0 and jumps[1] < jumps[0]


def _random_chain(dof: int, seed: int, prismatic: bool = False):
    """A serial chain of random revolute joints (one prismatic, optionally) with a tool offset."""
    from ik_core.model.skeleton import Effector, Joint, JointKind, Skeleton

    rng = np.random.default_rng(seed)
    joints = []
    for i in range(dof):
        origin = np.eye(4)
        origin[:3, 3] = rng.uniform(-0.3, 0.3, 3) + (0.0, 0.0, 0.3)
        slide = prismatic and i == 1
        joints.append(Joint(f"j{i}", JointKind.PRISMATIC if slide else JointKind.REVOLUTE, i - 1, origin,
                            axis=rng.normal(size=3), lower=-0.3 if slide else -2.5, upper=0.3 if slide else 2.5))
    tip = np.eye(4)
    tip[0, 3] = 0.1
    return Skeleton(joints, [Effector("tip", dof - 1, tip)])


@pytest.mark.parametrize(("dof", "mode", "prismatic"), [
    (3, "position", False),  # as many variables as rows: the branch search
    (5, "aim", False),
    (6, "aim", True),  # one redundant variable under an aim: the self-motion grids
    (6, "full", True),
    (7, "full", False),
])
def test_look_ahead_runs_on_any_chain_and_task(dof: int, mode: str, prismatic: bool) -> None:
    """Every chain shape and task mode gets through the look-ahead: finite, in limits, reached, never more jumps."""
    skeleton = _random_chain(dof, seed=3 + dof, prismatic=prismatic)
    rng = np.random.default_rng(dof)
    t = np.linspace(0.0, 1.0, 300)[:, None]
    wave = 0.8 * np.sin(2 * np.pi * t * rng.integers(1, 3, dof) + rng.uniform(0, 6, dof))
    q_path = np.clip(0.5 * rng.uniform(-1, 1, dof) + wave, skeleton.lower, skeleton.upper)
    targets = effector_poses(skeleton, q_path, 0)
    if mode == "position":
        targets = targets[:, :3, 3]
    solver = DLSSolver(skeleton, 0, mode=mode, tolerance=1e-6, rotation_tolerance=1e-6, restarts=4)
    plain = solve_track(solver, targets, q_path[0])
    res = solve_track(solver, targets, q_path[0], look_ahead=True)
    assert np.all(np.isfinite(res.q)) and skeleton.within_limits(res.q).all()
    assert res.converged.all()
    steps = [np.abs(np.diff(np.vstack([q_path[:1], r.q]), axis=0)).max(axis=1) for r in (plain, res)]
    assert np.count_nonzero(steps[1] > MAX_JUMP) <= np.count_nonzero(steps[0] > MAX_JUMP)


# --- frames beyond reach --------------------------------------------------------------------


def _limb(hinge_lower: float = 0.0) -> Skeleton:
    """A ball joint with Euler limits carrying 0.28 m and an X hinge in [hinge_lower, 150 deg] carrying 0.25 m."""
    T1, T2 = np.eye(4), np.eye(4)
    T1[1, 3], T2[1, 3] = 0.28, 0.25
    joints = [
        Joint("upper", JointKind.BALL, -1, np.eye(4), limit=BALL_LIMIT),
        Joint("fore", JointKind.REVOLUTE, 0, T1, axis=(1.0, 0.0, 0.0), lower=hinge_lower, upper=np.radians(150.0)),
    ]
    return Skeleton(joints, [Effector("tip", 1, T2)], name="limb")


def _poles_around(target: np.ndarray, center: np.ndarray, turn: np.ndarray) -> np.ndarray:
    """(F, 3) poles 0.3 m from ``center`` about the root-to-target line, at the angles ``turn`` (F,) [rad]."""
    axis = target / np.linalg.norm(target)
    side = np.cross(axis, [0.0, 0.0, 1.0])
    side /= np.linalg.norm(side)
    up = np.cross(axis, side)
    return center + 0.3 * (np.cos(turn)[:, None] * side + np.sin(turn)[:, None] * up)


def test_a_two_bone_limb_beyond_reach_keeps_each_frames_pole_plane() -> None:
    """Beyond reach a two-bone limb is stretched as far as its hinge allows, and its swivel is its pole's
    plane: those frames are provably their best effort (the distance equals the reach excess), so the
    follow pass leaves them as solved, each frame as its pole asks, however fast the pole swings."""
    # The hinge cannot straighten: beyond reach the elbow stays off the shoulder-wrist line.
    skeleton = _limb(hinge_lower=0.4)
    solver = make_solver("two_bone", skeleton, "tip", tolerance=1e-4, mode="position")
    frames = 60
    target = np.array([0.2, 0.9, 0.1])
    poles = _poles_around(target, 0.3 * target / np.linalg.norm(target), 0.15 * np.arange(frames))
    targets = np.repeat(target[None], frames, axis=0)
    res = solve_track(solver, targets, None, max_jump=0.5, segment=frames, pole=poles)
    assert not res.converged.any()
    np.testing.assert_allclose(res.position_error, solver.reach_excess(targets), atol=1e-9)
    alone = np.array([solver.solve(t, q, pole=p).q for t, q, p in zip(targets, res.q, poles)])
    np.testing.assert_allclose(res.q, alone, atol=1e-9)


def _ball_chain(bones: int = 3) -> Skeleton:
    T = np.eye(4)
    T[1, 3] = 0.3
    joints = [Joint(f"b{k}", JointKind.BALL, k - 1, np.eye(4) if k == 0 else T, limit=BALL_LIMIT) for k in range(bones)]
    return Skeleton(joints, [Effector("tip", bones - 1, T)], name=f"ball{bones}")


BALL_LIMIT = EulerLimit((-1.5, -0.7, -1.5), (1.5, 0.7, 1.5))
# Each solver's work on a target beyond reach, in its own iteration counts.
_REACH_WORK = {"dls": REACH_POLISH, "ccd": REACH_SWEEPS, "fabrik": 1, "two_bone": 1}


def _take_with_far_frames(skeleton: Skeleton, frames: int = 120, every: int = 20, beyond: float = 1.3):
    """Targets of a smooth path inside the limits, and a copy whose every ``every``-th frame lies beyond reach."""
    rng = np.random.default_rng(3)
    t = np.linspace(0.0, 1.0, frames)[:, None]
    q = project_configuration(skeleton, 0.5 * np.sin(2 * np.pi * rng.uniform(0.5, 1.5, skeleton.dof) * t
                                                        + rng.uniform(0, 2 * np.pi, skeleton.dof)))
    q = np.clip(q, skeleton.lower, skeleton.upper)
    targets = effector_poses(skeleton, q, 0)[:, :3, 3]
    bound = ReachBound.of(skeleton, (0,))
    far = (np.arange(frames) % every) == every // 2
    moved = targets.copy()
    d = moved[far] - bound.bases[0]
    moved[far] = bound.bases[0] + d * (beyond * bound.lengths[0] / np.linalg.norm(d, axis=-1, keepdims=True))
    return q, targets, moved, far


@pytest.mark.parametrize(("name", "skeleton"), [
    ("dls", _limb()), ("ccd", _limb()), ("fabrik", _limb()), ("two_bone", _limb()),
    ("dls", _ball_chain()), ("ccd", _ball_chain()), ("fabrik", _ball_chain()),
])
def test_frames_beyond_reach_get_a_bounded_best_effort(name: str, skeleton: Skeleton) -> None:
    """Each frame beyond reach: not converged, a reason giving how far out it is, a finite pose inside the
    limits stretched at the target (error = distance - length), within the solver's fixed budget."""
    q, _, moved, far = _take_with_far_frames(skeleton)
    solver = make_solver(name, skeleton, "tip", tolerance=1e-4, mode="position")
    res = solve_track(solver, moved, q[0], max_jump=0.5)
    bound = solver.reach_bound
    dist = np.linalg.norm(moved[far] - bound.bases[0], axis=-1)
    excess = dist - bound.lengths[0]
    assert not res.converged[far].any()
    for reason, e, d in zip(res.reason[far], excess, dist):
        assert reason.startswith(f"target out of reach: effector 'tip' target {d:.4g} m from the chain root, "
                                 f"{e:.3g} m beyond the chain's reach")
    assert np.all(np.isfinite(res.q)) and np.all(limit_violation(skeleton, res.q) <= 1e-9)
    # Straight chains are inside these limits: the best effort lies stretched toward the target.
    np.testing.assert_allclose(res.position_error[far], excess, atol=1e-4)
    assert np.all(res.iterations[far] <= _REACH_WORK[name])


def test_frames_beyond_reach_are_solved_once_together() -> None:
    """Frames beyond reach cost one solver call for the whole take (no segment, retry or restart of them),
    each starts from the answer of the frame before it, and the frames within reach still converge."""
    skeleton = _ball_chain()
    q, _, moved, far = _take_with_far_frames(skeleton, frames=200)
    solver = make_solver("dls", skeleton, "tip", tolerance=1e-4, mode="position")
    calls: list[tuple[np.ndarray, np.ndarray]] = []
    solve = solver.solve

    def counting(targets, q0=None, **options):
        result = solve(targets, q0, **options)
        calls.append((np.asarray(targets).reshape(-1, 3), np.asarray(result.iterations).reshape(-1)))
        return result

    solver.solve = counting
    res = solve_track(solver, moved, q[0], max_jump=0.5)
    with_far = [(t, it) for t, it in calls if (solver.reach_excess(t) > solver.tolerance).any()]
    assert len(with_far) == 1
    targets, iterations = with_far[0]
    assert len(targets) == far.sum() and np.all(solver.reach_excess(targets) > solver.tolerance)
    assert iterations.max() <= REACH_POLISH
    assert solver._last_restarts is None or not np.any(solver._last_restarts)
    assert res.converged[~far].all()


class _ShortSolver(Solver):
    """Returns its start: a take tracked by it misses every frame by about one frame's motion."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.best_effort = False  # a solver that stays short, best effort included

    def _solve(self, targets: Targets, q0: np.ndarray, **options: object) -> tuple[np.ndarray, np.ndarray]:
        return q0, np.ones(targets.batch_shape, dtype=int)


def test_a_run_of_misses_costs_a_few_retries() -> None:
    """Misses in a row are retried frame after frame only while each retry leaves a near miss, and at most
    _RUN_RETRIES unconverged retries in a row: a stretch no retry can fix costs a few calls, not one per frame."""
    skeleton = _limb()
    q, targets, _, _ = _take_with_far_frames(skeleton)
    # Tolerance a third of a frame's motion: every frame but the first misses, a retry from the frame
    # before by a near miss.
    motion = np.median(np.linalg.norm(np.diff(targets, axis=0), axis=-1))
    solver = _ShortSolver(skeleton, "tip", tolerance=motion / 3)
    calls = []
    solve = solver.solve
    solver.solve = lambda *args, **kwargs: calls.append(1) or solve(*args, **kwargs)
    res = solve_track(solver, targets, q[0], max_jump=0.5, segment=len(targets))
    assert res.converged[0] and not res.converged[1:].any()
    assert len(calls) == 1 + tracking._RUN_RETRIES  # the batch, then the capped run of retries
    # Far misses (a target the limits keep off) end a run at once: one retry per run.
    calls.clear()
    near_root = targets.copy()
    near_root[40:80] = ReachBound.of(skeleton, (0,)).bases[0] + [0.0, 0.05, 0.0]  # the hinge cannot fold so far
    solver = make_solver("dls", skeleton, "tip", tolerance=1e-4, mode="position")
    solve = solver.solve
    solver.solve = lambda *args, **kwargs: calls.append(np.asarray(args[0]).shape) or solve(*args, **kwargs)
    res = solve_track(solver, near_root, q[0], max_jump=0.5)
    assert not res.converged[40:80].any() and res.converged[:40].all()
    assert sum(shape == (3,) for shape in calls) <= 3  # the run's first miss, and a jump out of it at most
    assert np.all(limit_violation(skeleton, res.q) <= 1e-9) and np.all(np.isfinite(res.q))


def test_interpolate_gaps_blends_between_the_frames_around() -> None:
    """Gap frames are linear in time between their neighbours; gaps at the ends hold the nearest frame."""
    values = np.arange(8.0)[:, None] * [1.0, -2.0]
    gap = np.array([True, False, True, True, False, False, True, True])
    out = tracking.interpolate_gaps(values * np.where(gap, np.nan, 1.0)[:, None], gap)
    np.testing.assert_allclose(out[1:6], values[1:6])
    np.testing.assert_allclose(out[0], values[1])
    np.testing.assert_allclose(out[6:], np.tile(values[5], (2, 1)))


def test_a_robot_take_with_frames_beyond_reach_keeps_its_other_frames_smooth(ur5) -> None:
    """A UR5 path tracked with look-ahead, every 20th pose moved beyond reach: every other frame converges,
    no step between two of them exceeds max_jump, and the moved frames cost one short polish each."""
    q_path = sine_path(ur5, 400, seed=1)
    targets = effector_poses(ur5, q_path, 0)
    far = (np.arange(400) % 20) == 10
    bound = ReachBound.of(ur5, (0,))
    d = targets[far, :3, 3] - bound.bases[0]
    targets[far, :3, 3] = bound.bases[0] + d * (1.3 * bound.lengths[0] / np.linalg.norm(d, axis=-1, keepdims=True))
    solver = DLSSolver(ur5, 0, mode="full", tolerance=1e-4)
    res = solve_track(solver, targets, q_path[0], look_ahead=True)
    assert res.converged[~far].all() and not res.converged[far].any()
    steps = np.abs(np.diff(res.q, axis=0)).max(axis=-1)
    assert steps[~far[1:] & ~far[:-1]].max() <= MAX_JUMP
    assert np.all(res.iterations[far] <= REACH_POLISH)
    assert all(reason.startswith("target out of reach") for reason in res.reason[far])
    assert np.all(np.isfinite(res.q)) and ur5.within_limits(res.q).all()


def test_a_pole_swinging_a_two_bone_limb_fast_costs_no_retries() -> None:
    """A two-bone limb's swivel is the pole's plane: a pole swung 0.35 rad a frame after a slow stretch
    turns the limb as far (a redundant chain's step that would count as a whip), but the solver sets
    that step by rule, so the take is solved in its segment batches alone, each frame as its pole asks."""
    skeleton = _limb()
    solver = make_solver("two_bone", skeleton, "tip", tolerance=1e-4, mode="position")
    frames = 96
    target = np.array([0.1, 0.35, 0.1])
    turn = np.cumsum(np.where((np.arange(frames) >= 40) & (np.arange(frames) < 46), 0.35, 0.01))
    poles = _poles_around(target, 0.5 * target, turn)
    targets = np.repeat(target[None], frames, axis=0)
    calls = []
    solve = solver.solve

    def counting(tg, q0=None, **options):
        calls.append(len(np.asarray(tg).reshape(-1, 3)))
        return solve(tg, q0, **options)

    solver.solve = counting
    res = solve_track(solver, targets, None, max_jump=0.5, segment=32, pole=poles)
    assert res.converged.all()
    assert calls == [32, 32, 32]
    steps = np.abs(np.diff(res.q, axis=0)).max(axis=1)
    assert steps[40:44].min() > 0.2  # the limb turned as fast as its pole
    alone = np.array([solve(t, q, pole=p).q for t, q, p in zip(targets, res.q, poles)])
    np.testing.assert_allclose(res.q, alone, atol=1e-9)


def _hinge_chain(rng: np.random.Generator, bones: int) -> Skeleton:
    """A redundant chain of limited hinges about alternating X and Z axes, bones 0.1-0.4 m along Y."""
    joints = []
    for k in range(bones):
        origin = np.eye(4)
        if k:
            origin[1, 3] = rng.uniform(0.1, 0.4)
        axis = (1.0, 0.0, 0.0) if k % 2 == 0 else (0.0, 0.0, 1.0)
        lower = rng.uniform(-2.0, 0.4)
        upper = lower + rng.uniform(0.8, 2.6)
        joints.append(Joint(f"h{k}", JointKind.REVOLUTE, k - 1, origin, axis=axis, lower=lower, upper=upper))
    end = np.eye(4)
    end[1, 3] = rng.uniform(0.1, 0.4)
    return Skeleton(joints, [Effector("tip", bones - 1, end)])


def _circle_around_a_pose(rng: np.random.Generator, skeleton: Skeleton, share: float, offset: float) -> np.ndarray:
    """(240, 3) a circle in a random plane around the tip of a random in-limit pose, of radius ``share`` of that
    tip's distance from the root plus ``offset`` [m]."""
    q = skeleton.lower + rng.random(skeleton.dof) * (skeleton.upper - skeleton.lower)
    centre = effector_poses(skeleton, q, "tip")[:3, 3]
    a = rng.normal(size=3)
    a /= np.linalg.norm(a)
    b = np.cross(a, rng.normal(size=3))
    b /= np.linalg.norm(b)
    turn = np.linspace(0.0, 2.0 * np.pi, 240)[:, None]
    radius = share * np.linalg.norm(centre) + offset
    return centre + radius * (np.cos(turn) * a + np.sin(turn) * b)


def _hinge_take(seed: int, bones: int, share: float, offset: float) -> tuple[Skeleton, np.ndarray, Solver, IKResult]:
    """A random hinge chain of ``bones`` (seeded), its circle (see :func:`_circle_around_a_pose`), its DLS solver
    and the take solve_track bakes of it."""
    rng = np.random.default_rng(seed)
    skeleton = _hinge_chain(rng, bones)
    targets = _circle_around_a_pose(rng, skeleton, share, offset)
    solver = make_solver("dls", skeleton, "tip", mode="position")
    return skeleton, targets, solver, solve_track(solver, targets, None, max_jump=0.5, segment=32)


@pytest.mark.parametrize("seed", range(6, 18))
def test_a_reached_frame_whipping_after_a_repaired_one_is_retried_from_it(seed: int) -> None:
    """No reached frame whips (a step over 0.2 rad and twice the step before it) where a solve from the
    frame before reaches its target with a smaller step.

    A 7-hinge chain follows a circle inside its workspace. When a frame's predecessor was itself
    retried, the whip test compares with the step into the repaired predecessor, not the one the
    batch gave it (a large step there hid the whip after it: seeds 8, 9 and 16 kept such frames).
    """
    skeleton, targets, solver, res = _hinge_take(seed, 7, 0.15, 0.05)
    q = np.asarray(res.q)
    steps = np.concatenate([[0.0], joint_steps(skeleton, q[:-1], q[1:])])
    whips = [
        i for i in range(2, len(q))
        if res.converged[i] and res.converged[i - 1] and steps[i] > 0.2 and steps[i] > 2.0 * steps[i - 1]
    ]
    for i in whips:
        again = solver.solve(targets[i], q[i - 1], radius=0.5)
        assert not (again.converged and float(joint_steps(skeleton, q[i - 1], again.q)) < steps[i]), i
    assert skeleton.within_limits(q).all()


@pytest.mark.parametrize("seed", range(3))
def test_frames_with_their_own_starts_keep_the_start_that_reaches_and_solve_the_others_from_theirs(seed: int) -> None:
    """A redundant chain given a start per frame (a chain at partial influence starts from its pose without IK):
    where the start already reaches the target (influence 0: the goal is that pose's own end) the answer is the
    start itself, every joint, even after frames at full influence that a take carried on from the frame before
    would continue; elsewhere each frame reaches its target within one frame's jump of its start."""
    rng = np.random.default_rng(seed)
    skeleton = _hinge_chain(rng, 7)
    frames = 60
    t = np.linspace(0.0, 1.0, frames)[:, None]
    a, b = (skeleton.lower + rng.uniform(0.3, 0.7, skeleton.dof) * (skeleton.upper - skeleton.lower) for _ in range(2))
    starts = a + (b - a) * (0.5 - 0.5 * np.cos(np.pi * t))  # an FK swing
    free_tips = effector_poses(skeleton, starts, "tip")[:, :3, 3]
    # Influence 1 on the first and last 20 frames (the targets a little off the free tips), 0 between.
    targets = free_tips.copy()
    targets[:20] += 0.03
    targets[40:] -= 0.03
    solver = make_solver("dls", skeleton, "tip", mode="position")
    res = solve_track(solver, targets, None, max_jump=0.5, segment=32, starts=starts)
    assert res.converged.all()
    np.testing.assert_allclose(res.q[20:40], starts[20:40], atol=1e-12)
    assert np.max(np.abs(res.q - starts)) <= 0.5 + 1e-9
    # Carried on from the frame before instead, the middle frames reach the same tips in other poses.
    carried = solve_track(solver, targets, None, max_jump=0.5, segment=32)
    assert np.max(np.abs(carried.q[20:40] - starts[20:40])) > 1e-3


def test_starts_of_the_wrong_shape_are_refused_with_the_shape_wanted() -> None:
    skeleton = _hinge_chain(np.random.default_rng(0), 4)
    solver = make_solver("dls", skeleton, "tip", mode="position")
    targets = np.tile(effector_poses(skeleton, np.zeros(4), "tip")[:3, 3], (5, 1))
    with pytest.raises(InvalidInputError, match=r"starts must be \(N, dof\) = \(5, 4\)"):
        solve_track(solver, targets, None, starts=np.zeros((5, 3)))
    bad = np.zeros((5, 4))
    bad[2, 1] = np.nan
    with pytest.raises(InvalidInputError, match="starts"):
        solve_track(solver, targets, None, starts=bad)


@pytest.mark.parametrize("seed", range(10, 18))
def test_the_reached_frame_after_a_followed_run_of_misses_steps_from_it_as_little_as_a_solve_from_it_does(
    seed: int,
) -> None:
    """A 6-hinge chain follows a circle that leaves the space its limits allow and comes back. The take's follow
    pass carries each run of missed frames on from the frame before the run; the first reached frame after the run
    then steps from the run's last frame no further than a solve from that frame would (before, its answer had
    been retried against the run's answers before the follow pass, and it could jump by the distance between the
    two basins: seed 15, 1.4 rad where a solve from the run's last frame steps 0.03)."""
    skeleton, targets, solver, res = _hinge_take(seed, 6, 0.6, 0.1)
    q = np.asarray(res.q)
    exits = [i for i in range(1, len(q)) if res.converged[i] and not res.converged[i - 1]]
    for i in exits:
        step = float(joint_steps(skeleton, q[i - 1], q[i]))
        again = solver.solve(targets[i], q[i - 1], radius=0.5)
        again_step = float(joint_steps(skeleton, q[i - 1], again.q))
        assert not (again.converged and step > 0.5 and again_step < step), (i, step, again_step)


def _planar_arm(shoulder: tuple[float, float]) -> Skeleton:
    """Two hinges about Z (0.5 and 0.4 m links along Y), the shoulder limited to ``shoulder`` [rad]."""
    elbow, end = np.eye(4), np.eye(4)
    elbow[1, 3], end[1, 3] = 0.5, 0.4
    joints = [Joint("shoulder", JointKind.REVOLUTE, -1, np.eye(4), axis=(0.0, 0.0, 1.0), lower=shoulder[0],
                    upper=shoulder[1]),
              Joint("elbow", JointKind.REVOLUTE, 0, elbow, axis=(0.0, 0.0, 1.0), lower=-2.6, upper=2.6)]
    return Skeleton(joints, [Effector("tip", 1, end)])


def _elbow_branches(target: np.ndarray) -> list[np.ndarray]:
    """The planar arm's two configurations (elbow bent one way, then the other) that put its tip on ``target``."""
    r = np.linalg.norm(target[:2])
    bend = np.arccos(np.clip((r * r - 0.5**2 - 0.4**2) / (2 * 0.5 * 0.4), -1.0, 1.0))
    heading = np.arctan2(-target[0], target[1])
    return [np.array([heading - np.arctan2(0.4 * np.sin(b), 0.5 + 0.4 * np.cos(b)), b]) for b in (bend, -bend)]


@pytest.mark.parametrize("sweep_start", [0.2, 0.4])
def test_a_branch_the_limits_end_part_way_is_left_from_the_start_where_the_other_reaches_every_frame(
    sweep_start: float,
) -> None:
    """A two-link arm starts a take on the elbow branch whose shoulder angle the limit ends part-way through, while
    the other branch reaches every frame: instead of a 2.8-3.2 rad flip where the first branch ends, the take
    follows the other branch from its first frame (the closest pose never jumps: every frame is reached), so no
    joint steps more than 0.2 rad."""
    skeleton = _planar_arm((-0.8, 1.2))
    t = np.linspace(0.0, 1.0, 80)
    turn, radius = sweep_start + t, 0.6 + 0.1 * np.sin(3 * t)
    targets = np.stack([-radius * np.sin(turn), radius * np.cos(turn), np.zeros_like(t)], axis=1)
    branches = [_elbow_branches(p) for p in targets]
    inside = np.array([[skeleton.within_limits(b[k][None])[0] for k in (0, 1)] for b in branches])
    assert inside[:, 0].all() and inside[0, 1] and not inside[:, 1].all(), "the second branch must end part-way"
    solver = make_solver("dls", skeleton, "tip", mode="position")
    res = solve_track(solver, targets, branches[0][1], max_jump=0.5, segment=32)
    assert res.converged.all()
    assert joint_steps(skeleton, res.q[:-1], res.q[1:]).max() < 0.2


def test_a_jump_no_branch_avoids_stays_where_the_closest_pose_jumps() -> None:
    """Where neither elbow branch reaches every frame (each is ended by the shoulder's limit on part of the take),
    the take jumps once, where the branch it follows ends, and reaches every frame."""
    skeleton = _planar_arm((-0.8, 1.2))
    t = np.linspace(0.0, 1.0, 80)
    turn, radius = -0.3 + 1.5 * t, 0.6 + 0.1 * np.sin(3 * t)
    targets = np.stack([-radius * np.sin(turn), radius * np.cos(turn), np.zeros_like(t)], axis=1)
    inside = np.array([[skeleton.within_limits(b[None])[0] for b in _elbow_branches(p)] for p in targets])
    assert not inside[:, 0].all() and not inside[:, 1].all()
    solver = make_solver("dls", skeleton, "tip", mode="position")
    res = solve_track(solver, targets, _elbow_branches(targets[0])[1], max_jump=0.5, segment=32)
    assert res.converged.all()
    steps = joint_steps(skeleton, res.q[:-1], res.q[1:])
    assert np.count_nonzero(steps > 0.2) == 1
    end = int(np.flatnonzero(~inside[:, 1])[0])  # the first frame the followed branch cannot reach
    assert int(np.argmax(steps)) + 1 == end
