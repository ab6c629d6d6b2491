# SPDX-License-Identifier: GPL-3.0-or-later
"""How fast a take can be solved in numpy (issue 23, item 4): the take solver against simpler formulations.

Run from the repo root, in the bench venv (the takes' optimum uses scipy)::

    .venvs/bench/bin/python bench/bench_take_formulations.py [--takes 16] [--frames 240] [--seed 0] [--json]

Takes. ``--takes`` random limited chains of 3-7 bones, each with a circle or Lissajous curve of
position targets in and out of the space its limits allow, and the per-frame optimum (the closest
pose inside the limits, by an independent optimizer), drawn as ``bench_best_effort.py`` draws its
takes (:func:`bench_best_effort.random_take`) from their own stream (``default_rng([seed, 8])``).

Formulations, each on every take with Auto's solver (DLS) and default settings, timed in process
time:

- ``take solver``: :func:`ik_core.solve_track` as a bake calls it (``max_jump`` 0.5, segments of 32).
- ``batch solve``: every frame solved at once from the rest pose (``solver.solve`` on the whole take:
  restarts and the global check of the missed frames included, no continuity).
- ``batch solve + follow``: then, frame by frame, a frame that jumps more than 0.2 rad from the one
  before is descended from it, and that answer kept where it is no farther than the batch's by more
  than the switch margin (a ~15-line take solver: the closest pose per frame, continuity where it
  ties).
- ``+ follow ahead``: the same follow, but from a frame it replaces the next ``--ahead`` frames are
  descended at once from the frame before the first, each kept in order while it ties the batch's
  answer and steps at most 0.2 rad (a segment, as the take solver solves ahead after a retry).
- ``fixed starts + path``: every frame descended at once from each of ``--starts`` fixed starts
  (the rest pose, then configurations spread over the best effort's library), and the path
  through these candidates that a Viterbi pass finds cheapest: a candidate within the switch
  margin of the frame's nearest costs nothing, a farther one 10 per mm, a step its joint step [rad].
- ``batch solve + starts + path``: the same with the batch solve's answers as the first candidate.
- ``batch descent``: every frame descended at once from the rest pose to a local minimum inside the
  limits (:meth:`BestEffort.descend`, the certified descent every solver ends with).
- ``+ sweeps``: then ``--sweeps`` times, every frame descended again from the frame before's answer
  (all frames at once), keeping the nearer answer, or where the two tie within the switch margin
  the one nearer the frame before.
- ``segments side by side``: the take cut into segments of ``--segment`` frames; frame j of every
  segment is descended at once from frame j - 1 of its segment (the first from the rest pose), so
  each segment follows its frames one after another while all segments advance together.
- ``+ re-run where they meet``: then, up to ``--rounds`` times, each segment whose first frame jumps
  more than 0.2 rad from the last frame of the segment before is run again from that frame.
- ``one after another``: every frame descended from the frame before's answer, one at a time.
- ``oracle warm start``: every frame descended at once from the optimum of the frame before (not a
  solver: how near and fast a batch gets from the ideal warm start).

Columns: ``ms/frame``; ``<=1mm``: share of frames within 1 mm of the optimum's distance; ``pops``
as in ``bench_best_effort.py`` (a joint turning more than 0.2 rad from the frame before where the
optimum turns none more than 0.05 rad, the answer not nearer than the optimum); ``steps>0.2``: all
frames where some joint turns more than 0.2 rad.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_best_effort as be_bench  # noqa: E402

from ik_core import Skeleton, make_solver, solve_track  # noqa: E402
from ik_core.limits import project_configuration  # noqa: E402
from ik_core.model.distance import joint_steps  # noqa: E402
from ik_core.solvers.base import Solver  # noqa: E402
from ik_core.solvers.best_effort import SWITCH_MARGIN, BestEffort  # noqa: E402

JUMP = 0.2  # a joint step above this [rad] is a jump


class Take:
    """One take: its chain, targets (F, 3) [m], optimum (F, dof) and the optimum's distances (F,) [m]."""

    def __init__(self, skeleton: Skeleton, targets: np.ndarray, q_opt: np.ndarray, d_opt: np.ndarray) -> None:
        self.skeleton, self.targets, self.q_opt, self.d_opt = skeleton, targets, q_opt, d_opt
        name = be_bench.resolve_solver("auto", len(skeleton.joints), pole=False, full_pose=False, robot=False,
                                       limb=False)
        self.solver: Solver = make_solver(name, skeleton, "tip", mode="position")
        self.descent = BestEffort(skeleton, self.solver.effector_ids, "position", np.array([0.0, 0.0, 1.0]))

    def descend(self, starts: np.ndarray, frames: np.ndarray | slice = slice(None)) -> tuple[np.ndarray, np.ndarray]:
        """The frames' targets descended from ``starts`` (one per frame) at once: answers and distances [m]."""
        return self.descent.descend(starts, self.targets[frames][:, None], None, tolerance=self.solver.tolerance)


def take_solver(t: Take, args) -> np.ndarray:
    return np.asarray(solve_track(t.solver, t.targets, None, max_jump=0.5, segment=32).q)


def batch_solve(t: Take, args) -> np.ndarray:
    return np.asarray(t.solver.solve(t.targets, None).q)


def _follow(t: Take, ahead: int) -> np.ndarray:
    """The batch solve, then each frame that jumps from the one before descended from it (``ahead`` frames at once)."""
    q = np.array(t.solver.solve(t.targets, None).q)
    d = be_bench.distance(t.skeleton, q, t.targets)
    n, f = len(q), 1
    while f < n:
        if joint_steps(t.skeleton, q[f - 1], q[f]) <= JUMP:
            f += 1
            continue
        # The frames from f on descended at once from frame f - 1's answer; each kept, in order, while
        # it ties the batch's answer and steps no more than JUMP from the frame before it.
        stop = min(f + ahead, n)
        qn, dn = t.descend(np.repeat(q[f - 1][None], stop - f, axis=0), slice(f, stop))
        k = f
        while k < stop and dn[k - f] <= d[k] + SWITCH_MARGIN and joint_steps(t.skeleton, q[k - 1], qn[k - f]) <= JUMP:
            q[k], d[k] = qn[k - f], dn[k - f]
            k += 1
        if k == f:  # not even the first: it is kept where it ties, whatever it steps
            if dn[0] <= d[f] + SWITCH_MARGIN:
                q[f], d[f] = qn[0], dn[0]
            k = f + 1
        f = k
    return q


def batch_solve_follow(t: Take, args) -> np.ndarray:
    return _follow(t, 1)


def batch_solve_follow_ahead(t: Take, args) -> np.ndarray:
    return _follow(t, args.ahead)


def _viterbi(t: Take, Q: np.ndarray, D: np.ndarray) -> np.ndarray:
    """The path through candidates Q (K, N, dof) with distances D (K, N) [m]: near first, then few jumps."""
    K, N = D.shape
    excess = (D - D.min(axis=0)) / 1e-3  # [mm]
    node = np.where(excess <= 0.2, 0.0, 10.0 * excess)  # a tie within the switch margin costs nothing
    cost = node[:, 0].copy()
    back = np.zeros((N, K), dtype=int)
    # Every candidate's step to every candidate of the next frame, (N - 1, K to, K from), in one call.
    dof = Q.shape[-1]
    before = np.broadcast_to(Q[:, :-1].transpose(1, 0, 2)[:, None], (N - 1, K, K, dof))
    after = np.broadcast_to(Q[:, 1:].transpose(1, 0, 2)[:, :, None], (N - 1, K, K, dof))
    all_steps = joint_steps(t.skeleton, before.reshape(-1, dof), after.reshape(-1, dof)).reshape(N - 1, K, K)
    for f in range(1, N):
        trans = cost[None, :] + all_steps[f - 1]  # (K to, K from)
        back[f] = np.argmin(trans, axis=1)
        cost = trans[np.arange(K), back[f]] + node[:, f]
    path = np.empty(N, dtype=int)
    path[-1] = int(np.argmin(cost))
    for f in range(N - 1, 0, -1):
        path[f - 1] = back[f, path[f]]
    return Q[path, np.arange(N)]


def _library_starts(t: Take, count: int) -> np.ndarray:
    """``count`` configurations spread over the best effort's library of in-limit starts."""
    configs, _ = t.descent.library()
    chosen = configs[np.linspace(0, len(configs) - 1, count).astype(int)]
    return project_configuration(t.skeleton, t.descent.chart.from_chart(chosen))


def _path(t: Take, first: np.ndarray, count: int) -> np.ndarray:
    """The Viterbi path through ``first`` (N, dof) and the descents of every frame from ``count`` library starts."""
    n = len(t.targets)
    Q, D = zip(*(t.descend(np.repeat(p[None], n, axis=0)) for p in _library_starts(t, count)))
    return _viterbi(t, np.array([first, *Q]), np.array([be_bench.distance(t.skeleton, first, t.targets), *D]))


def fixed_starts_dp(t: Take, args) -> np.ndarray:
    return _path(t, batch_descent(t, args), args.starts - 1)


def batch_solve_dp(t: Take, args) -> np.ndarray:
    return _path(t, batch_solve(t, args), args.starts - 1)


def _rest(t: Take, n: int) -> np.ndarray:
    return np.repeat(t.skeleton.preferred_q[None], n, axis=0)


def batch_descent(t: Take, args) -> np.ndarray:
    return t.descend(_rest(t, len(t.targets)))[0]


def with_sweeps(t: Take, args) -> np.ndarray:
    q, d = t.descend(_rest(t, len(t.targets)))
    for _ in range(args.sweeps):
        before = np.concatenate([q[:1], q[:-1]])
        q_new, d_new = t.descend(before)
        tie = np.abs(d - d_new) <= SWITCH_MARGIN
        nearer = joint_steps(t.skeleton, before, q_new) < joint_steps(t.skeleton, before, q)
        take = np.where(tie, nearer, d_new < d - SWITCH_MARGIN)
        q, d = np.where(take[:, None], q_new, q), np.where(take, d_new, d)
    return q


def _segments(t: Take, segment: int, rounds: int) -> np.ndarray:
    n = len(t.targets)
    firsts = np.arange(0, n, segment)
    q = np.zeros((n, t.skeleton.dof))
    run, starts = np.arange(len(firsts)), _rest(t, len(firsts))
    for attempt in range(rounds + 1):
        current = starts.copy()
        for j in range(segment):
            frames = firsts[run] + j
            live = frames < n
            if not live.any():
                break
            current[live] = q[frames[live]] = t.descend(current[live], frames[live])[0]
        if attempt == rounds or len(firsts) < 2:
            break
        jumps = joint_steps(t.skeleton, q[firsts[1:] - 1], q[firsts[1:]]) > JUMP
        run = np.flatnonzero(jumps) + 1
        if not len(run):
            break
        starts = q[firsts[run] - 1]
    return q


def segments_side_by_side(t: Take, args) -> np.ndarray:
    return _segments(t, args.segment, 0)


def segments_rerun(t: Take, args) -> np.ndarray:
    return _segments(t, args.segment, args.rounds)


def one_after_another(t: Take, args) -> np.ndarray:
    q = np.zeros((len(t.targets), t.skeleton.dof))
    previous = t.skeleton.preferred_q[None]
    for f in range(len(t.targets)):
        q[f] = previous = t.descend(previous, slice(f, f + 1))[0]
    return q


def oracle_warm_start(t: Take, args) -> np.ndarray:
    return t.descend(np.concatenate([t.q_opt[:1], t.q_opt[:-1]]))[0]


FORMULATIONS: dict[str, Callable[[Take, argparse.Namespace], np.ndarray]] = {
    "take solver": take_solver,
    "batch solve": batch_solve,
    "batch solve + follow": batch_solve_follow,
    "+ follow ahead": batch_solve_follow_ahead,
    "fixed starts + path": fixed_starts_dp,
    "batch solve + starts + path": batch_solve_dp,
    "batch descent": batch_descent,
    "+ sweeps": with_sweeps,
    "segments side by side": segments_side_by_side,
    "+ re-run where they meet": segments_rerun,
    "one after another": one_after_another,
    "oracle warm start": oracle_warm_start,
}


def score(t: Take, q: np.ndarray) -> dict:
    """<=1 mm frames, pops and jumps of a take's answers q (F, dof)."""
    excess = be_bench.distance(t.skeleton, q, t.targets) - t.d_opt
    pops, _ = be_bench.take_pops(t.skeleton, q, t.q_opt, excess)
    return {"within": int((excess <= be_bench.NEAR).sum()), "pops": pops,
            "jumps": int((joint_steps(t.skeleton, q[:-1], q[1:]) > JUMP).sum())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--takes", type=int, default=16)
    parser.add_argument("--frames", type=int, default=240)
    parser.add_argument("--take-starts", type=int, default=6, help="fresh starts per frame of the optimum")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sweeps", type=int, default=2, help="sweeps after the batch descent")
    parser.add_argument("--segment", type=int, default=8, help="frames per segment run side by side")
    parser.add_argument("--rounds", type=int, default=4, help="re-runs of segments that meet with a jump")
    parser.add_argument("--starts", type=int, default=4, help="fixed starts of the path formulations")
    parser.add_argument("--ahead", type=int, default=8, help="frames the batched follow descends at once")
    parser.add_argument("--json", action="store_true", help="print one JSON object per formulation")
    args = parser.parse_args()
    rng = np.random.default_rng([args.seed, 8])
    t0 = time.perf_counter()
    takes = []
    for k in range(args.takes):
        skeleton, _, _, targets, q_opt, d_opt = be_bench.random_take(rng, k, args.frames, args.take_starts)
        takes.append(Take(skeleton, targets, q_opt, d_opt))
    frames = sum(len(t.targets) for t in takes)
    print(f"{args.takes} takes (seed {args.seed}), {frames} frames, 3-7 bones, optimum "
          f"{args.take_starts} fresh starts per frame ({time.perf_counter() - t0:.0f} s)")
    print(f"{'formulation':28}{'ms/frame':>10}{'<=1mm':>8}{'pops':>6}{'steps>0.2':>11}")
    rows = []
    for label, run in FORMULATIONS.items():
        total = {"within": 0, "pops": 0, "jumps": 0}
        seconds = 0.0
        for t in takes:
            start = time.process_time()
            q = run(t, args)
            seconds += time.process_time() - start
            for key, value in score(t, q).items():
                total[key] += value
        row = {"formulation": label, "ms_frame": seconds / frames * 1e3, "within": total["within"] / frames,
               "pops": total["pops"], "jumps": total["jumps"]}
        rows.append(row)
        print(f"{label:28}{row['ms_frame']:10.2f}{row['within']:8.3f}{row['pops']:6d}{row['jumps']:11d}", flush=True)
    if args.json:
        for row in rows:
            print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
