# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of the self-motion search (ik_core.take.grid) and the take repair built on it (ik_core.take.repair)."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
from robot_cases import rail_arm_urdf, smooth_joint_path

from ik_core.formats.urdf import load_urdf
from ik_core.model.kinematics import effector_poses
from ik_core.model.rotations import rotation_error
from ik_core.model.skeleton import JointKind
from ik_core.robots import presets as robots
from ik_core.robots.model import RobotModel
from ik_core.solvers.base import IKResult
from ik_core.solvers.dls.solver import DLSSolver
from ik_core.take import grid, repair
from ik_core.take.grid import _REACH, _Grids, _shortest_paths, track_grid
from ik_core.take.held import held_candidates, null_vectors
from ik_core.take.paths import MISS_PENALTY, candidate_paths, free_turns, max_step, step_cost
from ik_core.take.repair import jump_score, search_repair
from ik_core.take.tracking import solve_track

MAX_JUMP = 0.1
TOL = 1e-6


def solver_for(skeleton) -> DLSSolver:
    return DLSSolver(skeleton, 0, mode="full", tolerance=TOL, rotation_tolerance=TOL, restarts=4)


def cartesian_path(skeleton, frames: int, seed: int = 0) -> np.ndarray:
    """(frames, dof) slow sinusoids inside 60 % of each range at 100 Hz (bench_cartesian's paths)."""
    rng = np.random.default_rng(seed)
    lo, hi = np.maximum(skeleton.lower, -np.pi), np.minimum(skeleton.upper, np.pi)
    mid, amp = (lo + hi) / 2, 0.6 * (hi - lo) / 2
    t = np.linspace(0.0, frames / 100.0, frames)[:, None, None]
    freq = rng.uniform(0.02, 0.15, size=(1, 3, skeleton.dof))
    phase = rng.uniform(0, 2 * np.pi, size=(1, 3, skeleton.dof))
    return mid + amp * np.mean(np.sin(2 * np.pi * freq * t + phase), axis=1)


@pytest.fixture(scope="module")
def panda():
    return robots.load_preset("panda")


def test_searched_path_reaches_every_target_in_small_steps(panda) -> None:
    """The cheapest grid path over a Panda take converges on every frame and never steps above max_jump."""
    q_path = cartesian_path(panda, 400)
    targets = effector_poses(panda, q_path, 0)
    solver = solver_for(panda)
    held = held_candidates(solver, q_path[::10])[0]
    (q, ok), *_ = track_grid(solver, targets, q_path[0], MAX_JUMP, held)
    assert ok.all()
    assert jump_score(panda, q, q_path[0], MAX_JUMP) == (0, 0.0)
    reached = effector_poses(panda, q, 0)
    assert np.abs(reached[:, :3, 3] - targets[:, :3, 3]).max() <= TOL
    assert rotation_error(reached[:, :3, :3], targets[:, :3, :3]).max() <= TOL
    assert panda.within_limits(q).all()


def test_search_keeps_a_smooth_incumbent_smooth(panda) -> None:
    """With the generating path as the incumbent, the cheapest path is no worse: converged, no jump."""
    q_path = cartesian_path(panda, 200, seed=1)
    targets = effector_poses(panda, q_path, 0)
    solver = solver_for(panda)
    paths = track_grid(solver, targets, q_path[0], MAX_JUMP, (0,), incumbent=q_path, incumbent_ok=np.ones(200, bool))
    q, ok = paths[0]
    assert ok.all()
    assert jump_score(panda, q, q_path[0], MAX_JUMP)[0] == 0


def test_repair_leaves_a_clean_take_alone(panda) -> None:
    q_path = cartesian_path(panda, 300, seed=2)
    targets = effector_poses(panda, q_path, 0)
    solver = solver_for(panda)
    res = solve_track(solver, targets, q_path[0])
    assert jump_score(panda, res.q, q_path[0], MAX_JUMP)[0] == 0
    fields = {f: np.array(getattr(res, f)) for f in IKResult.__dataclass_fields__}
    before = {f: v.copy() for f, v in fields.items()}

    def never(*args):
        raise AssertionError("a clean take needs no tracking")

    assert search_repair(solver, targets, fields, q_path[0], MAX_JUMP, never) is False
    for f in fields:
        np.testing.assert_array_equal(fields[f], before[f])


def test_repair_clears_a_hard_iiwa_take() -> None:
    """A 1,500-frame iiwa take that jumps 42 times frame by frame is repaired without a jump.

    Its path crosses the folds of every single held variable (q3 where q6 = 0, q5 where
    q2 = 0, the elbow near q4 = 0): only the paired grids, with second layers seeded where the
    other variable folds, carry a path across all of them. The repaired joints move smoothly:
    the grid's path moves its held variables a grid cell at a time, a staircase the repair
    smooths away (unsmoothed, joint accelerations reach 0.065 rad/frame^2, 0.026 on the
    hundredth-worst frame; the path's own are under 0.0001).
    """
    iiwa = robots.load_preset("lbr_iiwa_14_r820")
    q_path = cartesian_path(iiwa, 1500, seed=4)
    targets = effector_poses(iiwa, q_path, 0)
    solver = solver_for(iiwa)
    res = solve_track(solver, targets, q_path[0])
    fields = {f: np.array(getattr(res, f)) for f in IKResult.__dataclass_fields__}
    before = jump_score(iiwa, fields["q"], q_path[0], MAX_JUMP)

    def track(rest, q0):
        return solve_track(solver, rest, q0)

    assert before[0] > 10  # the frame-by-frame take this repair exists for
    assert search_repair(solver, targets, fields, q_path[0], MAX_JUMP, track)
    assert jump_score(iiwa, fields["q"], q_path[0], MAX_JUMP) == (0, 0.0)
    assert fields["converged"].all()
    assert iiwa.within_limits(fields["q"]).all()
    acceleration = np.abs(np.diff(fields["q"], 2, axis=0)).max(axis=1)  # [rad/frame^2]
    assert np.percentile(acceleration, 99) <= 0.01
    assert acceleration.max() <= 0.03


def test_panda_ten_thousand_frame_path_tracks_without_a_flip(panda) -> None:
    """Issue 5's Cartesian path: frame by frame the self-motion drifts onto q1's limit and flips; a bake does not."""
    q_path = cartesian_path(panda, 10_000)
    targets = effector_poses(panda, q_path, 0)
    solver = DLSSolver(panda, "tool", mode="full", tolerance=1e-5, rotation_tolerance=1e-5, restarts=4)
    plain = solve_track(solver, targets, q_path[0])
    assert jump_score(panda, plain.q, q_path[0], MAX_JUMP)[0] >= 1  # the flip this pass exists for
    res = solve_track(solver, targets, q_path[0], look_ahead=True)
    assert res.converged.all()
    assert jump_score(panda, res.q, q_path[0], MAX_JUMP) == (0, 0.0)
    assert panda.within_limits(res.q).all()


def test_a_robot_takes_joints_do_not_wobble_inside_the_tolerance() -> None:
    """A UR5 take solved looking ahead moves its joints as smoothly as its tool path, every frame on target.

    Frame by frame each pose is solved to within the tolerance from the one before, so the
    joints wobble inside that band: their step changes by 0.007 rad/frame^2 on the 99th-worst
    frame where the path's own change by 0.0004. The take is smoothed over frames and solved
    again from there (``repair.smooth_take``): the wobble goes, no frame moves off its target,
    no step grows into a jump.
    """
    ur5 = robots.load_preset("ur5")
    rng = np.random.default_rng(11)
    lo, hi = np.maximum(ur5.lower, -2.0), np.minimum(ur5.upper, 2.0)
    start = rng.uniform(lo + 0.3 * (hi - lo), hi - 0.3 * (hi - lo))
    q_path = smooth_joint_path(ur5.lower, ur5.upper, 500, seed=11, start=start, amplitude=0.4)
    targets = effector_poses(ur5, q_path, 0)
    solver = DLSSolver(ur5, 0, mode="full")
    res = solve_track(solver, targets, q_path[0], max_jump=MAX_JUMP, look_ahead=True)
    assert res.converged.all()
    assert jump_score(ur5, res.q, q_path[0], MAX_JUMP) == (0, 0.0)
    acceleration = np.abs(np.diff(res.q, 2, axis=0)).max(axis=1)
    assert np.percentile(acceleration, 99) <= 0.003
    reached = effector_poses(ur5, res.q, 0)
    assert np.abs(reached[:, :3, 3] - targets[:, :3, 3]).max() <= solver.tolerance


def reference_paths(Q, ok, grids, start, max_jump, steps_of=max_step):
    """The grid search's dynamic programme written out move by move over the whole table, nothing pruned.

    Into each grid state: from the states ``_REACH`` values either way on its own grid, then for
    d = -1, 0, 1 from the state d values from the nearest of every other grid's values to this
    state's value of that grid's variable, then from the incumbent (the last state); into the
    incumbent from every state. Ties go to the first move in that order. A circular grid's
    values go round: its last is next to its first.
    """
    n, S = ok.shape
    G = grids.size
    miss = np.where(ok, 0.0, MISS_PENALTY)
    D = np.array([step_cost(steps_of(start, Q[0, s]), max_jump) + miss[0, s] for s in range(S)])
    back = np.zeros((n, S), dtype=int)
    for t in range(1, n):
        new = np.empty(S)
        for s in range(G):
            g = grids.block[s]
            size = len(grids.values[g])
            if grids.circular[g]:
                sources = [grids.first[g] + (s - grids.first[g] - shift) % size for shift in range(-_REACH, _REACH + 1)]
            else:
                sources = [s - shift if 0 <= s - shift < G and grids.block[s - shift] == g else None
                           for shift in range(-_REACH, _REACH + 1)]
            for d in (-1, 0, 1):
                for o in range(len(grids.held)):
                    if o == g:
                        continue
                    size_o = len(grids.values[o])
                    k = int(np.rint((Q[t, s, grids.held[o]] - grids.values[o][0]) / grids.cell[o]))
                    if grids.circular[o]:
                        sources.append(grids.first[o] + (k + d) % size_o)
                    else:
                        k = int(np.clip(k, 0, size_o - 1))
                        sources.append(grids.first[o] + int(np.clip(k + d, 0, size_o - 1)))
            if S > G:
                sources.append(S - 1)
            costs = [np.inf if src is None else D[src] + step_cost(steps_of(Q[t - 1, src], Q[t, s]), max_jump)
                     for src in sources]
            i = int(np.argmin(costs))
            new[s], back[t, s] = costs[i], sources[i]
        if S > G:
            costs = [D[src] + step_cost(steps_of(Q[t - 1, src], Q[t, S - 1]), max_jump) for src in range(S)]
            back[t, S - 1] = int(np.argmin(costs))
            new[S - 1] = costs[back[t, S - 1]]
        D = new + miss[t]
    return D, back


def random_states(grids, dof: int, frames: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """(frames, S + 1, dof) states of random walks, each grid state's held variable at its value, plus an
    incumbent that jumps twice; (frames, S + 1) reached, with runs of misses."""
    S = grids.size
    walk = rng.normal(0.0, 0.03, size=(frames, S + 1, dof))
    walk[rng.random((frames, S + 1)) < 0.03] *= 40.0  # jumps
    Q = rng.uniform(-1.0, 1.0, size=(S + 1, dof)) + np.cumsum(walk, axis=0)
    Q[:, np.arange(S), grids.state_held] = grids.state_value
    ok = rng.random((frames, S + 1)) < 0.8
    ok[:, : S // 3] &= rng.random((frames, 1)) < 0.5  # a third of the grid misses on whole frames at once
    ok[:, -1] = True
    Q[frames // 3, -1] += 0.5
    Q[2 * frames // 3, -1] -= 0.3
    return Q, ok


GRID_CASES = {
    # held variables (each held twice: two layers), the limits of a 4-variable chain, and which
    # variables turn without limits (their grids are circles)
    "prismatic rail": ((0,), [-0.8, -np.pi, -3.5, -2.6], [0.8, np.pi, 3.5, 2.6], None),
    "continuous": ((1,), [-0.8, -np.inf, -3.5, -2.6], [0.8, np.inf, 3.5, 2.6], None),
    "wider than two turns": ((2,), [-0.8, -np.inf, -3.5, -2.6], [0.8, np.inf, 3.5, 2.6], None),
    "rail and continuous": ((0, 1, 0, 1), [-0.8, -np.inf, -3.5, -2.6], [0.8, np.inf, 3.5, 2.6], None),
    "continuous and wide": ((1, 2, 1, 2), [-0.8, -np.inf, -3.5, -2.6], [0.8, np.inf, 3.5, 2.6], None),
    "continuous, a circle": ((1,), [-0.8, -np.inf, -3.5, -2.6], [0.8, np.inf, 3.5, 2.6], [0, 1, 0, 0]),
    "rail and a circle": ((0, 1, 0, 1), [-0.8, -np.inf, -3.5, -2.6], [0.8, np.inf, 3.5, 2.6], [0, 1, 0, 0]),
}


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("case", list(GRID_CASES))
def test_pruned_programme_returns_the_paths_of_the_full_table(case: str, seed: int) -> None:
    """The grid programme, which skips moves out of states costlier than following the incumbent, returns the
    same two paths as the whole table, and the same cost and predecessor for every state up to that bound."""
    held, lower, upper, turns = GRID_CASES[case]
    grids = _Grids(np.array(lower), np.array(upper), held, None if turns is None else np.array(turns, dtype=bool))
    rng = np.random.default_rng(seed)
    frames = 16
    Q, ok = random_states(grids, 4, frames, rng)
    start = Q[0, -1] + 0.01
    D, back = _shortest_paths(Q, ok, grids, start, MAX_JUMP, max_step)
    D_ref, back_ref = reference_paths(Q, ok, grids, start, MAX_JUMP)
    bound = D_ref[-1]  # at most the cost of following the incumbent throughout
    assert np.all(D >= D_ref)
    assert (D > bound).any()  # the programme did prune (the check below is not vacuous)
    exact = D_ref <= bound
    np.testing.assert_array_equal(D[exact], D_ref[exact])
    for (q, reached), (q_ref, reached_ref) in zip(candidate_paths(Q, ok, D, back, True),
                                                  candidate_paths(Q, ok, D_ref, back_ref, True), strict=True):
        np.testing.assert_array_equal(q, q_ref)
        np.testing.assert_array_equal(reached, reached_ref)


def rail_take(frames: int, seed: int, start: list[float], amplitude: float):
    """A smooth take of the rail arm (prismatic rail, continuous joint, +-7 rad joint): (frames, 7) joint path,
    its tool poses, and a full-pose DLS solver."""
    model = RobotModel.from_urdf(rail_arm_urdf())
    sk = model.skeleton
    (tool,) = model.default_tools()
    q_path = smooth_joint_path(sk.lower, sk.upper, frames, seed=seed, start=np.array(start), amplitude=amplitude)
    return q_path, effector_poses(sk, q_path, tool), DLSSolver(sk, tool, mode="full", tolerance=1e-5,
                                                               rotation_tolerance=1e-5)


def test_free_turns_are_the_joints_that_turn_without_limits_and_that_no_joint_mimics() -> None:
    """Whole turns leave the pose of a continuous joint: not of a limited one (a turn inside +-7 rad is a
    motion), a prismatic one, or a continuous joint another joint mimics at half its angle."""
    rail = RobotModel.from_urdf(rail_arm_urdf()).skeleton
    np.testing.assert_array_equal(free_turns(rail), [j.kind is JointKind.CONTINUOUS for j in rail.joints if j.dof])
    assert free_turns(rail).sum() == 1
    mimicked = load_urdf(
        "<robot name='m'><link name='a'/><link name='b'/><link name='c'/><link name='d'/>"
        "<joint name='j1' type='continuous'><parent link='a'/><child link='b'/><axis xyz='0 0 1'/></joint>"
        "<joint name='j2' type='continuous'><parent link='b'/><child link='c'/><origin xyz='0 0 0.2'/>"
        "<axis xyz='0 1 0'/></joint>"
        "<joint name='j3' type='revolute'><parent link='c'/><child link='d'/><origin xyz='0 0 0.2'/>"
        "<axis xyz='0 1 0'/><limit lower='-5' upper='5' effort='1' velocity='1'/>"
        "<mimic joint='j2' multiplier='0.5'/></joint></robot>",
        tip_links="d",
    )
    np.testing.assert_array_equal(free_turns(mimicked), [True, False])


@pytest.mark.parametrize(("seed", "held"), [(2, (6, 1)), (4, (4, 1))])
def test_a_held_continuous_joint_wound_on_is_searched_round_its_circle(seed: int, held: tuple[int, int]) -> None:
    """A take that winds the rail arm's continuous joint on by one and a half turns, searched holding it: its grid
    is one turn whose ends meet, its whole turns are no step, and the path found is unwound, with no jump.
    (A grid of one turn's values end to end left 2 and 5 jumps on these takes.)"""
    q_path, _, solver = rail_take(300, seed=seed, start=[0.0, 0.4, 0.8, 1.0, -1.0, 0.5, 0.3], amplitude=0.1)
    q_path[:, 1] += np.linspace(0.0, 3.0 * np.pi, 300)
    sk = solver.skeleton
    assert sk.joints[1].kind is JointKind.CONTINUOUS
    targets = effector_poses(sk, q_path, solver.effector_ids[0])
    (q, ok), *_ = track_grid(solver, targets, q_path[0], MAX_JUMP, held)
    assert ok.all()
    assert jump_score(sk, q, q_path[0], MAX_JUMP) == (0, 0.0)
    assert q[-1, 1] > q[0, 1] + 2.0 * np.pi  # wound on with the take, not unwound somewhere


def test_rail_arm_search_is_the_same_without_pruning(monkeypatch) -> None:
    """On a prismatic rail arm with a continuous joint and a +-7 rad joint, the searched paths are the ones the
    programme finds when it costs every move (no bound)."""
    q_path, targets, solver = rail_take(60, seed=3, start=[0.0, 0.4, 0.8, 1.0, -1.0, 0.5, 0.3], amplitude=0.1)
    jumping = q_path.copy()
    jumping[30:, 2] += 0.3
    # The generating path (following it costs little: a tight bound) and one that jumps, declared reached.
    incumbents = [(q_path, np.ones(60, bool)), (jumping, np.ones(60, bool)), (jumping, np.arange(60) < 30)]
    held = held_candidates(solver, q_path[::10])
    for h, (incumbent, incumbent_ok) in zip([held[0], held[1], held[0]], incumbents):
        pruned = track_grid(solver, targets, q_path[0], MAX_JUMP, h, incumbent=incumbent, incumbent_ok=incumbent_ok)
        with monkeypatch.context() as m:
            m.setattr(grid, "_incumbent_cost", lambda *args: np.inf)
            full = track_grid(solver, targets, q_path[0], MAX_JUMP, h, incumbent=incumbent,
                              incumbent_ok=incumbent_ok)
        assert len(pruned) == len(full)
        for (q, reached), (q_full, reached_full) in zip(pruned, full):
            np.testing.assert_array_equal(q, q_full)
            np.testing.assert_array_equal(reached, reached_full)


def reference_seed_crossings(gs, grids, q, conv, tp, tr, max_jump: float) -> None:
    """:func:`_seed_crossings` as its docstring states it, the null vectors of every reached state first."""
    f = q.shape[0] - 1
    live = np.flatnonzero(conv[f])
    if not len(live):
        return
    _, J = gs.solver.model.poses_and_jacobians(q[f, live])
    null = null_vectors(J.reshape(len(live), -1, J.shape[-1]))
    n_held = len(grids.held) // 2
    rows, seeds = [], []
    for g in range(n_held, len(grids.held)):
        h, a, vals = grids.held[g], grids.first[g], grids.values[g]
        own = grids.state_held[live]
        src = np.flatnonzero((own != h) & (null[np.arange(len(live)), own] < null[:, h]))
        k = grids.nearest_on(g, q[f, live[src], h]) - a
        held_by = np.zeros(len(src), dtype=bool)
        for layer in (g - n_held, g):
            state = grids.first[layer] + k
            held_by |= conv[f, state] & (np.max(np.abs(q[f, state] - q[f, live[src]]), axis=-1) < 0.5 * max_jump)
        src, k = src[~held_by], k[~held_by]
        order = np.lexsort((null[src, own[src]] / null[src, h], k))
        src, k = src[order], k[order]
        first = np.r_[True, k[1:] != k[:-1]] if len(k) else np.zeros(0, dtype=bool)
        seed = q[f, live[src[first]]]
        seed[:, h] = vals[k[first]]
        rows.append(a + k[first])
        seeds.append(seed)
    rows, seeds = np.concatenate(rows), np.concatenate(seeds)
    if not len(rows):
        return
    q2, ok2 = gs.run(seeds, grids.state_held[rows], tp[f, rows], None if tr is None else tr[f, rows],
                     grid._SEED_ITERATIONS)
    take = ok2 & (np.max(np.abs(q2 - seeds), axis=-1) < max_jump)
    q[f, rows[take]] = q2[take]
    conv[f, rows[take]] = True


def test_crossings_seeded_as_stated_on_the_rail_arm(monkeypatch) -> None:
    """Every segment of a paired search on the rail arm seeds its second layers exactly as the plain statement
    does (which computes every reached state's null vector, not only the candidates')."""
    q_path, targets, solver = rail_take(80, seed=5, start=[0.1, 0.4, 3.0, 1.0, -1.0, 0.5, 0.3], amplitude=0.15)
    seeded = []
    real = grid._seed_crossings

    def both(gs, grids, q, conv, tp, tr, max_jump):
        q_ref, conv_ref, before = q.copy(), conv.copy(), conv[-1].copy()
        reference_seed_crossings(gs, grids, q_ref, conv_ref, tp, tr, max_jump)
        real(gs, grids, q, conv, tp, tr, max_jump)
        np.testing.assert_array_equal(q, q_ref)
        np.testing.assert_array_equal(conv, conv_ref)
        seeded.append(int(np.count_nonzero(conv_ref[-1] & ~before)))

    monkeypatch.setattr(grid, "_seed_crossings", both)
    for held in [h for h in held_candidates(solver, q_path[::10]) if len(h) == 2]:
        track_grid(solver, targets, q_path[0], MAX_JUMP, held)
    assert len(seeded) == 3 * 20  # three pairs, 20 segments of 4 frames each
    assert sum(seeded) > 0  # states were seeded: the comparison is not vacuous


def reference_restart_lost(gs, grids, q, conv, tp, tr, iterations: int | None = None) -> None:
    """Every value up to ``_REACH + 1`` from the nearest reached value of its grid restarted from that one, at once,
    with ``iterations`` (default the search's own restart budget)."""
    m, S = conv.shape
    near, offset = grids.nearest_true(conv)
    gap = np.abs(offset)
    lost = ~conv & conv[np.arange(m)[:, None], near] & (gap <= _REACH + 1)
    f, k = np.nonzero(lost)
    seed = q[f, near[f, k]]
    seed[np.arange(len(k)), grids.state_held[k]] = grids.state_value[k]
    budget = grid._RESTART_ITERATIONS if iterations is None else iterations
    q2, conv2 = gs.run(seed, grids.state_held[k], tp[f, k], None if tr is None else tr[f, k], budget)
    q[f[conv2], k[conv2]] = q2[conv2]
    conv[f[conv2], k[conv2]] = True


def test_restarts_past_the_next_value_only_where_it_was_reached(monkeypatch) -> None:
    """Restarting the next value past a grid's reached interval first, and the further ones only where it was
    reached, reaches the states restarting all of them at once reaches, but for under 1 % of the restarts (the
    same configurations up to rounding: the batches differ), on a paired rail-arm search, at under 70 % of the
    restarts."""
    q_path, targets, solver = rail_take(80, seed=5, start=[0.1, 0.4, 3.0, 1.0, -1.0, 0.5, 0.3], amplitude=0.15)
    counts = {"restarted": 0, "reference": 0, "differ": 0}
    real = grid._restart_lost

    def both(gs, grids, q, conv, tp, tr, given=None):
        q_ref, conv_ref, before = q.copy(), conv.copy(), conv.copy()
        reference_restart_lost(gs, grids, q_ref, conv_ref, tp, tr)
        near = grids.nearest_true(before)
        gap = np.abs(near - np.arange(conv.shape[1])[None, :])
        counts["reference"] += int(np.count_nonzero(~before & before[np.arange(len(before))[:, None], near]
                                                    & (gap <= _REACH + 1)))
        run = gs.run

        def counted(seed, *args):
            counts["restarted"] += len(seed)
            return run(seed, *args)

        gs.run = counted
        try:
            real(gs, grids, q, conv, tp, tr, given)
        finally:
            del gs.run
        counts["differ"] += int(np.count_nonzero(conv != conv_ref))
        same = conv & conv_ref
        np.testing.assert_allclose(q[same], q_ref[same], rtol=0.0, atol=1e-12)

    monkeypatch.setattr(grid, "_restart_lost", both)
    pair = next(h for h in held_candidates(solver, q_path[::10]) if len(h) == 2)
    track_grid(solver, targets, q_path[0], MAX_JUMP, pair)
    assert counts["reference"] > 0
    assert counts["restarted"] < 0.7 * counts["reference"]
    assert counts["differ"] <= 0.01 * counts["reference"]


def test_restart_budget_reaches_what_the_seed_budget_reaches(monkeypatch) -> None:
    """Restarts stop after ``_RESTART_ITERATIONS``, a third of a seed's budget: on a paired rail-arm search they
    reach all but 5 % of the states a seed's budget reaches from the same states (measured: 4.3 %; those are
    restarted again at the next frame), and none it does not (every further iteration is one more
    batched call, whose fixed cost dominates these small batches)."""
    assert grid._RESTART_ITERATIONS < grid._SEED_ITERATIONS
    q_path, targets, solver = rail_take(80, seed=5, start=[0.1, 0.4, 3.0, 1.0, -1.0, 0.5, 0.3], amplitude=0.15)
    counts = {"long": 0, "lost": 0, "gained": 0}
    real = grid._restart_lost

    def both(gs, grids, q, conv, tp, tr, given=None):
        before = conv.copy()
        q_long, conv_long = q.copy(), conv.copy()
        with monkeypatch.context() as m:
            m.setattr(grid, "_RESTART_ITERATIONS", grid._SEED_ITERATIONS)
            real(gs, grids, q_long, conv_long, tp, tr, given)
        real(gs, grids, q, conv, tp, tr, given)
        counts["long"] += int(np.count_nonzero(conv_long & ~before))
        counts["lost"] += int(np.count_nonzero(conv_long & ~conv))
        counts["gained"] += int(np.count_nonzero(conv & ~conv_long))

    monkeypatch.setattr(grid, "_restart_lost", both)
    pair = next(h for h in held_candidates(solver, q_path[::10]) if len(h) == 2)
    track_grid(solver, targets, q_path[0], MAX_JUMP, pair)
    assert counts["long"] > 100  # restarts reached states: the comparison is not vacuous
    assert counts["lost"] < 0.05 * counts["long"]
    assert counts["gained"] == 0


def test_pair_searches_only_around_the_fold_a_single_variable_left(monkeypatch) -> None:
    """The robot bench's rail-arm take: the single held variable's search leaves one jump (its grid folds); the
    pair then searches only around it, from that answer, and the take ends without a jump, every frame reached,
    in a fraction of the whole stretch's frames."""
    model = RobotModel.from_urdf(rail_arm_urdf())
    sk = model.skeleton
    (tool,) = model.default_tools()
    rng = np.random.default_rng(14)  # bench/bench_robot_bake.py's rail case
    lo, hi = np.maximum(sk.lower, -2.0), np.minimum(sk.upper, 2.0)
    start = rng.uniform(lo + 0.3 * (hi - lo), hi - 0.3 * (hi - lo))
    q_path = smooth_joint_path(sk.lower, sk.upper, 500, seed=14, start=start, amplitude=0.15)
    names = list(sk.moving_joint_names)
    q_path[:, names.index("rail")] = np.linspace(-0.6, 0.6, 500)
    q_path[:, names.index("turn")] = np.linspace(0.4, 7.4, 500)
    q_path[:, names.index("shoulder")] = np.linspace(0.8, 4.6, 500)
    targets = effector_poses(sk, q_path, tool)
    solver = DLSSolver(sk, tool, mode="full", tolerance=1e-5, rotation_tolerance=1e-5)
    searched = []
    real = repair.track_grid

    def spy(solver, targets, before, max_jump, held, **kwargs):
        paths = real(solver, targets, before, max_jump, held, **kwargs)
        searched.append((held, len(targets), min(jump_score(sk, q, before, max_jump)[0] for q, _ in paths)))
        return paths

    monkeypatch.setattr(repair, "track_grid", spy)
    res = solve_track(solver, targets, q_path[0], max_jump=MAX_JUMP, look_ahead=True)
    assert res.converged.all()
    assert jump_score(sk, res.q, q_path[0], MAX_JUMP) == (0, 0.0)
    (single, frames, single_jumps), (pair, near_frames, pair_jumps) = searched[:2]
    assert len(single) == 1 and single_jumps > 0  # the fold this search exists for
    assert len(pair) == 2 and pair_jumps == 0 and near_frames < 0.5 * frames


def test_a_grid_given_as_known_is_the_grid_the_search_tracks(monkeypatch) -> None:
    """A paired rail-arm search given, as ``known``, the first-layer grid of one of its variables that the same
    search kept finds the same paths (that grid is not tracked or restarted again: fewer evaluations), and a
    single variable's search of a longer stretch gives a grid a search of a part of it reuses (a near search
    after the whole stretch's, as search_repair runs them)."""
    q_path, targets, solver = rail_take(80, seed=5, start=[0.1, 0.4, 3.0, 1.0, -1.0, 0.5, 0.3], amplitude=0.15)
    pair = next(h for h in held_candidates(solver, q_path[::10]) if len(h) == 2)
    evaluated = [0]
    evaluate = DLSSolver._evaluate

    def counting(self, q, tp, tr):
        evaluated[0] += len(q)
        return evaluate(self, q, tp, tr)

    monkeypatch.setattr(DLSSolver, "_evaluate", counting)
    kept = {}
    plain = track_grid(solver, targets, q_path[0], MAX_JUMP, pair, keep=kept)
    full_cost, evaluated[0] = evaluated[0], 0
    assert set(kept) == set(pair) and all(Q.shape == (80, len(ok.T), 7) for Q, ok in kept.values())
    given = track_grid(solver, targets, q_path[0], MAX_JUMP, pair, known={pair[0]: kept[pair[0]]})
    assert evaluated[0] < 0.8 * full_cost
    assert len(given) == len(plain)
    for (q1, ok1), (q2, ok2) in zip(plain, given):
        np.testing.assert_array_equal(ok1, ok2)
        np.testing.assert_allclose(q1, q2, rtol=0.0, atol=1e-9)

    # A part of the stretch, from the single search's path: a path without a jump that reaches every target.
    whole = {}
    (q_single, _), *_ = track_grid(solver, targets, q_path[0], MAX_JUMP, pair[:1], keep=whole)
    lo, hi = 30, 80
    known = {h: (Q[lo:hi], ok[lo:hi]) for h, (Q, ok) in whole.items()}
    (q_part, ok_part), *_ = track_grid(solver, targets[lo:hi], q_single[lo - 1], MAX_JUMP, pair, known=known)
    assert ok_part.all()
    assert jump_score(solver.skeleton, q_part, q_single[lo - 1], MAX_JUMP) == (0, 0.0)


def test_a_held_range_of_thousands_searches_a_window_and_finds_the_path() -> None:
    """A rail of 2 km and a shoulder of +-1000 rad: each held grid had one value per 4 cm of its range (50,000 and
    more), and a robot bake ran out of memory (found by dev/fuzz_robots.py). The grid now spans at most two turns
    (metres) about the rest pose, and the search still follows the take within its steps."""
    text = rail_arm_urdf().replace('lower="-0.8" upper="0.8"', 'lower="-1000" upper="1000"').replace(
        'lower="-7.0" upper="7.0"', 'lower="-1000" upper="1000"')
    model = RobotModel.from_urdf(text)
    sk = model.skeleton
    (tool,) = model.default_tools()
    assert sk.upper[0] == sk.upper[2] == 1000.0
    q_path = smooth_joint_path(np.maximum(sk.lower, -1), np.minimum(sk.upper, 1), 40, seed=5,
                               start=np.array([0.2, 0.4, 0.8, 1.0, -1.0, 0.5, 0.3]), amplitude=0.1)
    targets = effector_poses(sk, q_path, tool)
    solver = DLSSolver(sk, tool, mode="full", tolerance=1e-5, rotation_tolerance=1e-5)
    for held in ((0,), (2,), (0, 2)):
        grids = _Grids(solver._lo, solver._hi, held)
        assert grids.size <= len(held) * (int(np.ceil(grid._MAX_SPAN / grid._CELL)) + 1)
        assert all(v[0] <= 0.0 <= v[-1] and v[-1] - v[0] <= grid._MAX_SPAN + 1e-9 for v in grids.values)
        (q, ok), *_ = track_grid(solver, targets, q_path[0], MAX_JUMP, held)
        assert ok.all() and jump_score(sk, q, q_path[0], MAX_JUMP)[0] == 0
    narrow = _Grids(np.array([-2 * np.pi, 5.0]), np.array([2 * np.pi, 900.0]), (0, 1))
    assert narrow.values[0][0] == -2 * np.pi and narrow.values[0][-1] == 2 * np.pi  # UR's +-2 pi: all of it
    assert narrow.values[1][0] == 5.0 and narrow.values[1][-1] == pytest.approx(5.0 + grid._MAX_SPAN)  # from 5 up


def _waypoint_path(skeleton, frames: int, seed: int) -> np.ndarray:
    """(frames, dof) straight joint-space moves between 6 random waypoints inside the limits (+-2.5 rad)."""
    rng = np.random.default_rng(seed)
    way = np.clip(rng.uniform(-2.5, 2.5, (6, skeleton.dof)), skeleton.lower, skeleton.upper)
    u = np.linspace(0.0, 5.0, frames)
    return np.stack([np.interp(u, np.arange(6), way[:, c]) for c in range(skeleton.dof)], axis=1)


@pytest.mark.parametrize("name", ["panda", "lbr_iiwa_14_r820"])
def test_an_arm_with_a_locked_joint_is_searched_as_the_arm_of_one_joint_fewer(name: str) -> None:
    """A 7-joint arm whose first joint's range is a single value has a 6-joint arm's branches, no self-motion.

    Before, the take's repair searched it as a redundant arm, on a grid over the locked value (a grid
    of one value: its cell divided by zero, NaN cast to a state), and left jumps of 1.26 (iiwa) and
    1.73 rad (Panda) where the path steps at most 0.125, in four times the time.
    """
    arm = robots.load_preset(name)
    joints = list(arm.joints)
    first = next(i for i, j in enumerate(joints) if j.dof)
    joints[first] = dataclasses.replace(joints[first], lower=0.3, upper=0.3)
    locked = type(arm)(joints, arm.effectors, name=arm.name)
    path = _waypoint_path(locked, 200, seed=0)
    targets = effector_poses(locked, path, 0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = solve_track(solver_for(locked), targets, path[0], max_jump=MAX_JUMP, look_ahead=True)
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]
    q = np.asarray(res.q)
    assert res.converged.all()
    assert np.all(q[:, locked.q_index[first]] == 0.3)
    path_step = np.abs(np.diff(path, axis=0)).max()
    assert np.abs(np.diff(q, axis=0)).max() <= 1.5 * path_step


@pytest.mark.parametrize("name, seed", [("panda", 2), ("lbr_iiwa_14_r820", 3)])
def test_a_redundant_arm_with_a_locked_joint_searches_the_self_motion_of_its_other_joints(name: str, seed: int) -> None:
    """A 7-joint arm whose fixed flange joint is a revolute joint locked at one value: 8 variables, 7 that move.

    Its self-motion is that of the 7 joints that move (the locked one left out of the null vectors and
    never held on a grid). Before, the 8 variables counted as a doubly redundant arm, which the search
    does not take on: the take jumped 3.19 (Panda) and 2.56 rad (iiwa) where the path steps under 0.09.
    """
    arm = robots.load_preset(name)
    joints = list(arm.joints)
    joints[-1] = dataclasses.replace(joints[-1], kind=JointKind.REVOLUTE, axis=(0.0, 0.0, 1.0), lower=0.3, upper=0.3)
    locked = type(arm)(joints, arm.effectors, name=arm.name)
    assert locked.dof == 8
    path = _waypoint_path(locked, 200, seed=seed)
    targets = effector_poses(locked, path, 0)
    res = solve_track(solver_for(locked), targets, path[0], max_jump=MAX_JUMP, look_ahead=True)
    q = np.asarray(res.q)
    assert res.converged.all()
    assert np.all(q[:, -1] == 0.3)
    assert np.abs(np.diff(q, axis=0)).max() <= 1.5 * np.abs(np.diff(path, axis=0)).max()
