# SPDX-License-Identifier: GPL-3.0-or-later
"""Unreachable-frame benchmark: the cost of a bake where 5 % of the frames are out of reach.

Run from the repo root: ``.venvs/core/bin/python bench/bench_unreachable.py [--json] [--quick]``.
Chains with limits, bones along local Y: ``limb2`` (a ball joint with Euler limits carrying
0.28 m and an X hinge in [0, 150] degrees carrying 0.25 m, the metarig's arm), ``ball2``,
``ball3`` and ``ball5`` (ball joints with Euler limits X, Z in [-1.5, 1.5] and Y in
[-0.7, 0.7] rad, 0.3 m bones). Each take is a smooth joint path inside the limits (sines of
random phase and frequency, projected onto the limits) whose effector positions are the
targets, so every target is reachable; its copy moves every 20th frame (5 %) along the
line from the chain's root to ``--beyond`` times the chain's length (the sum of its bone
lengths). Both takes are baked as the add-on bakes a character chain: ``solve_track`` in
position mode, tolerance 1e-4 m, 100 iterations, ``max_jump`` 0.5 rad, segments of 32
frames (the whole take for ``two_bone``). The ``ur5`` and ``panda`` rows bake a robot path as
the robot bake does: DLS in full-pose mode on the preset's ``tool``, ``max_jump`` 0.1 rad with
``look_ahead``; the copy moves the position of every 20th target beyond the arm's reach
(orientation kept). The UR5 has no redundancy; the Panda's seventh joint is free, and its
self-motion makes the two bakes of a path differ by chance as well (see below).

Each row bakes ``--seeds`` paths (seeds 0, 1, ...): on redundant chains any change of the
targets changes the self-motion from there on, and with it whether (and where) the take has
jumps for the repairs to fix, so one path's ratio says more about that chance than about the
unreachable frames. ``--miss near`` moves the frames to 0.1 x the length from the root
instead: inside the length, but nearer than the limits let these chains fold.

Columns: seconds of the in-reach bakes and of the 5 %-out bakes (summed over the paths, each
the best of ``--repeat``), their ratio, the converged fraction of each, the median position
error [m] of the frames the 5 %-out bakes missed, the median excess [m] of their
out-of-reach frames over the least error possible (distance - length: 0 means a chain
stretched straight at the target), the median position error [m] of the in-reach frames the
5 %-out bakes missed (0 when none), and the largest joint step [rad] between consecutive
frames: in the in-reach bakes, in the 5 %-out bakes, and there between two converged frames.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ik_core import Effector, EulerLimit, Joint, JointKind, Skeleton, make_solver, solve_track  # noqa: E402
from ik_core.limits import project_configuration  # noqa: E402
from ik_core.model.kinematics import effector_poses, rest_transforms  # noqa: E402
from ik_core.take.tracking import joint_steps  # noqa: E402

BALL_LIMIT = EulerLimit((-1.5, -0.7, -1.5), (1.5, 0.7, 1.5))
BONE = 0.3
# Every EVERY-th frame (offset by half of it, so the first frame is reachable) is moved out.
EVERY = 20
# ``--miss near`` moves them to this fraction of the chain's length from its root: inside the
# length, but nearer than the limits let the chain fold (the limb's hinge stops at 150 degrees,
# the ball joints' Euler limits at about 90 degrees of bend).
NEAR = 0.1
CHAINS = ("limb2", "ball2", "ball3", "ball5")
ROBOTS = ("ur5", "panda")
SOLVERS = ("dls", "ccd", "fabrik", "two_bone")


def _offset(y: float) -> np.ndarray:
    T = np.eye(4)
    T[1, 3] = y
    return T


def make_chain(kind: str) -> Skeleton:
    """The test chain ``kind`` (one of :data:`CHAINS`), effector ``"tip"``."""
    if kind == "limb2":
        limit = EulerLimit((-1.5, -0.7, -1.5), (1.5, 0.7, 1.5))
        joints = [
            Joint("upper", JointKind.BALL, -1, np.eye(4), limit=limit),
            Joint("fore", JointKind.REVOLUTE, 0, _offset(0.28), axis=(1.0, 0.0, 0.0), lower=0.0,
                  upper=np.radians(150.0)),
        ]
        return Skeleton(joints, [Effector("tip", 1, _offset(0.25))], name=kind)
    bones = int(kind.removeprefix("ball"))
    joints = [
        Joint(f"b{k}", JointKind.BALL, k - 1, np.eye(4) if k == 0 else _offset(BONE), limit=BALL_LIMIT)
        for k in range(bones)
    ]
    return Skeleton(joints, [Effector("tip", bones - 1, _offset(BONE))], name=kind)


def chain_reach(skeleton: Skeleton, effector: str) -> tuple[np.ndarray, float]:
    """The chain's root (3,) [m] and length [m]: summed rest distances between moving joints and the tip.

    Computed here rather than taken from the solvers, so that the script runs unchanged on older
    checkouts (the before/after comparison).
    """
    eff = skeleton.effectors[skeleton.effector_index(effector)]
    rest = rest_transforms(skeleton)
    moving = [i for i in skeleton.ancestors(eff.joint) if skeleton.joints[i].kind is not JointKind.FIXED]
    points = [rest[i][:3, 3] for i in moving] + [(rest[eff.joint] @ eff.offset)[:3, 3]]
    return points[0], float(sum(np.linalg.norm(b - a) for a, b in zip(points[:-1], points[1:])))


def smooth_path(skeleton: Skeleton, n: int, rng: np.random.Generator, cycles: float = 3.0) -> np.ndarray:
    """(n, dof) smooth configurations inside the limits: sines around the preferred pose, projected."""
    lo, hi = np.asarray(skeleton.lower), np.asarray(skeleton.upper)
    finite = np.isfinite(lo) & np.isfinite(hi)
    lo, hi = np.where(finite, lo, 0.0), np.where(finite, hi, 0.0)
    mid = np.where(finite, 0.5 * (lo + hi), 0.0)
    amp = np.where(finite, 0.4 * (hi - lo), 0.6)
    # Ball joints have no box range: their rotation vectors swing up to 0.6 rad per axis, then
    # the projection folds them into their Euler limits.
    t = np.linspace(0.0, 1.0, n)[:, None]
    freq = rng.uniform(0.5, 1.0, skeleton.dof) * cycles
    phase = rng.uniform(0.0, 2.0 * np.pi, skeleton.dof)
    return project_configuration(skeleton, mid + amp * np.sin(2.0 * np.pi * freq * t + phase))


def out_of_reach(targets: np.ndarray, base: np.ndarray, reach: float, beyond: float) -> tuple[np.ndarray, np.ndarray]:
    """A copy of ``targets`` (N, 3) or (N, 4, 4) with every EVERY-th position moved to ``beyond`` x reach from the root.

    Returns:
        The copy and the (N,) mask of the moved frames.
    """
    out = targets.copy()
    moved = (np.arange(len(targets)) % EVERY) == EVERY // 2
    pos = out[moved, :3, 3] if out.ndim == 3 else out[moved]
    d = pos - base
    pos = base + d * (beyond * reach / np.linalg.norm(d, axis=-1))[:, None]
    if out.ndim == 3:
        out[moved, :3, 3] = pos
    else:
        out[moved] = pos
    return out, moved


def _bake(solver, targets: np.ndarray, q0: np.ndarray, track: dict, repeat: int):
    best, result = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = solve_track(solver, targets, q0, **track)
        best = min(best, time.perf_counter() - t0)
    return best, result


def _take(solver_name: str, chain: str, n: int, seed: int, beyond: float, miss: str):
    """The solver, tracking options, skeleton, effector, targets, moved copy and mask, and facts of one take."""
    rng = np.random.default_rng(seed)
    if chain in ROBOTS:
        from ik_core.robots.presets import load_preset

        skeleton = load_preset(chain)
        effector = "tool"
        solver = make_solver("dls", skeleton, effector, mode="full", tolerance=1e-4)
        track = {"max_jump": 0.1, "segment": 32, "look_ahead": True}
        q = smooth_path(skeleton, n, rng, cycles=2.0)
        targets = effector_poses(skeleton, q, effector)
    else:
        skeleton = make_chain(chain)
        effector = "tip"
        solver = make_solver(solver_name, skeleton, effector, mode="position", tolerance=1e-4, max_iterations=100)
        track = {"max_jump": 0.5, "segment": n if solver_name == "two_bone" else 32}
        q = smooth_path(skeleton, n, rng)
        targets = effector_poses(skeleton, q, effector)[:, :3, 3]
    base, reach = chain_reach(skeleton, effector)
    moved_targets, moved = out_of_reach(targets, base, reach, beyond if miss == "far" else NEAR)
    return solver, track, skeleton, targets, moved_targets, moved, q[0], base, reach


def case(solver_name: str, chain: str, n: int, repeat: int, beyond: float, seeds: int, miss: str = "far") -> dict:
    """One benchmark row: both takes of ``seeds`` paths, times summed, errors pooled."""
    t_in = t_out = 0.0
    conv_in, conv_out, miss_err, excess, near_err, step_in, step_out, step_reached = [], [], [], [], [], [], [], []
    finite = True
    for seed in range(seeds):
        solver, track, skeleton, targets, moved_targets, moved, q0, base, reach = _take(
            solver_name, chain, n, seed, beyond, miss
        )
        solve_track(solver, targets[:8], q0, **track)  # warm-up (imports, caches)
        t, r_in = _bake(solver, targets, q0, track, repeat)
        t_in += t
        t, r_out = _bake(solver, moved_targets, q0, track, repeat)
        t_out += t
        pos = moved_targets[:, :3, 3] if moved_targets.ndim == 3 else moved_targets
        dist = np.linalg.norm(pos - base, axis=-1)
        missed = ~r_out.converged
        conv_in.append(r_in.converged)
        conv_out.append(r_out.converged)
        miss_err.append(r_out.position_error[missed])
        excess.append(r_out.position_error[moved] - (dist[moved] - reach))
        near_err.append(r_out.position_error[missed & ~moved])
        steps = joint_steps(skeleton, r_out.q[:-1], r_out.q[1:])
        step_in.append(joint_steps(skeleton, r_in.q[:-1], r_in.q[1:]).max())
        step_out.append(steps.max())
        reached = r_out.converged[1:] & r_out.converged[:-1]
        step_reached.append(steps[reached].max(initial=0.0))
        finite &= bool(np.isfinite(r_out.q).all())

    def median(parts: list[np.ndarray]) -> float:
        values = np.concatenate(parts)
        return float(np.median(values)) if len(values) else 0.0

    return {
        "solver": solver_name,
        "chain": chain,
        "miss": miss,
        "frames": n,
        "seeds": seeds,
        "in_s": t_in,
        "out_s": t_out,
        "ratio": t_out / t_in,
        "conv_in": float(np.concatenate(conv_in).mean()),
        "conv_out": float(np.concatenate(conv_out).mean()),
        "miss_err": median(miss_err),
        "far_excess": median(excess) if miss == "far" else float("nan"),
        "near_miss_err": median(near_err),
        "step_in": float(max(step_in)),
        "step_out": float(max(step_out)),
        "step_reached": float(max(step_reached)),
        "finite": finite,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object per row")
    parser.add_argument("--quick", action="store_true", help="300 frames, one path, no robot rows")
    parser.add_argument("--frames", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=1, help="bakes per take; the fastest counts")
    parser.add_argument("--beyond", type=float, default=1.3, help="out-of-reach distance in chain lengths")
    parser.add_argument("--solvers", default=",".join(SOLVERS))
    parser.add_argument("--chains", default=",".join((*CHAINS, *ROBOTS)))
    parser.add_argument("--seeds", type=int, default=4, help="paths per row (times summed, errors pooled)")
    parser.add_argument(
        "--miss", choices=("far", "near"), default="far",
        help="far: moved frames beyond the chain's length; near: to 0.1 length from the root (limits forbid it)",
    )
    parser.add_argument(
        "--blas-threads", type=int, default=0,
        help="set numpy's OpenBLAS to this many threads first (ik_core.limit_blas_threads); 0 leaves it",
    )
    args = parser.parse_args()
    if args.blas_threads:
        from ik_core import limit_blas_threads

        previous = limit_blas_threads(args.blas_threads)
        print(f"BLAS threads: {previous} -> {args.blas_threads}", file=sys.stderr)
    n, repeat, seeds = (300, 1, 1) if args.quick else (args.frames, args.repeat, args.seeds)
    chains = [c for c in args.chains.split(",") if not (args.quick and c in ROBOTS)]
    rows = []
    for chain in chains:
        for name in args.solvers.split(","):
            if (chain in ROBOTS and name != "dls") or (name == "two_bone" and chain != "limb2"):
                continue
            row = case(name, chain, n, repeat, args.beyond, seeds, args.miss)
            rows.append(row)
            if args.json:
                print(json.dumps(row), flush=True)
    if not args.json:
        head = (
            f"{'solver':9}{'chain':7}{'in s':>8}{'5%out s':>9}{'ratio':>7}{'conv in':>8}{'conv out':>9}"
            f"{'miss err':>10}{'far excess':>11}{'near miss':>10}{'step in':>8}{'step out':>9}{'step ok':>8}"
        )
        print(head)
        for r in rows:
            print(
                f"{r['solver']:9}{r['chain']:7}{r['in_s']:8.3f}{r['out_s']:9.3f}{r['ratio']:7.2f}"
                f"{r['conv_in']:8.3f}{r['conv_out']:9.3f}{r['miss_err']:10.4f}{r['far_excess']:11.4f}"
                f"{r['near_miss_err']:10.4f}{r['step_in']:8.3f}{r['step_out']:9.3f}{r['step_reached']:8.3f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
