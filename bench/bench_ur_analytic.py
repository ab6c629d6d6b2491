# SPDX-License-Identifier: GPL-3.0-or-later
"""Closed-form UR inverse kinematics speed: all eight branches for a batch of random tool poses.

Run from the repo root: ``.venvs/core/bin/python bench/bench_ur_analytic.py [--json]``.
Targets are the preset's forward kinematics of uniformly random in-limit configurations; every
valid branch is checked by the preset's forward kinematics (not the DH model ur_ik uses), and
we count the targets whose generating configuration (modulo 2 pi) is among the solutions.
Wall-clock seconds (best of --repeats) give poses/s; CPU seconds show how much of that was ours
on a shared machine. Peer: our numerical DLS solver (one solution per pose, from the home pose), timed on a subset
and stated as such; no batched analytic UR solver exists in the bench venv to compare with.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ik_core.model.kinematics import effector_poses  # noqa: E402
from ik_core.model.rotations import rotation_error  # noqa: E402
from ik_core.robots.analytic_ur import ur_ik, ur_params_from_preset  # noqa: E402
from ik_core.robots.presets import load_preset  # noqa: E402

CHUNK = 10_000  # FK checks run in chunks: 8 branches x 10 frames x 16 doubles stay small


def verify(skeleton, targets, q_gen, sol, valid):
    """Max position / rotation error over valid branches, and the generating-q hit fraction."""
    pos_max = rot_max = 0.0
    hits = 0
    for s in range(0, len(targets), CHUNK):
        T, ok = targets[s : s + CHUNK], valid[s : s + CHUNK]
        F = effector_poses(skeleton, sol[s : s + CHUNK], "tool")
        pos = np.linalg.norm(F[..., :3, 3] - T[:, None, :3, 3], axis=-1)
        rot = rotation_error(F[..., :3, :3], np.broadcast_to(T[:, None, :3, :3], F[..., :3, :3].shape))
        pos_max = max(pos_max, float(pos[ok].max(initial=0.0)))
        rot_max = max(rot_max, float(rot[ok].max(initial=0.0)))
        diff = sol[s : s + CHUNK] - q_gen[s : s + CHUNK, None, :]
        wrapped = np.abs(np.mod(diff + np.pi, 2 * np.pi) - np.pi).max(axis=-1)
        hits += int(np.count_nonzero(np.any(ok & (wrapped < 1e-6), axis=-1)))
    return pos_max, rot_max, hits / len(targets)


def bench_analytic(robot: str, n: int, repeats: int) -> dict:
    skeleton, params = load_preset(robot), ur_params_from_preset(robot)
    rng = np.random.default_rng(0)
    q_gen = rng.uniform(skeleton.lower, skeleton.upper, (n, 6))
    targets = np.concatenate([effector_poses(skeleton, q_gen[s : s + CHUNK], "tool") for s in range(0, n, CHUNK)])
    ur_ik(targets[:100], params)  # warm-up
    times, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        sol, valid = ur_ik(targets, params)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    secs = min(times)
    pos, rot, found = verify(skeleton, targets, q_gen, sol, valid)
    return {"method": "ur_ik (closed form, 8 branches)", "robot": robot, "targets": n, "timed": n,
            "seconds": secs, "cpu_seconds": min(cpu), "poses_per_s": n / secs,
            "valid_per_target": float(valid.sum(-1).mean()),
            "max_pos_err_m": pos, "max_rot_err_rad": rot, "generating_q_found": found, "scaled": False}


def bench_dls(robot: str, n: int, subset: int) -> dict | None:
    try:
        from ik_core.solvers.dls.solver import DLSSolver
    except ImportError:
        return None
    skeleton = load_preset(robot)
    rng = np.random.default_rng(0)
    q_gen = rng.uniform(skeleton.lower, skeleton.upper, (subset, 6))
    targets = effector_poses(skeleton, q_gen, "tool")
    solver = DLSSolver(skeleton, "tool", mode="full", tolerance=1e-9, rotation_tolerance=1e-9)
    t0, c0 = time.perf_counter(), time.process_time()
    res = solver.solve(targets)
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    ok = res.converged
    return {"method": "DLSSolver (numerical, 1 solution)", "robot": robot, "targets": n, "timed": subset,
            "seconds": secs * n / subset, "cpu_seconds": cpu * n / subset, "poses_per_s": subset / secs,
            "valid_per_target": float(ok.mean()),
            "max_pos_err_m": float(res.position_error[ok].max(initial=0.0)),
            "max_rot_err_rad": float(res.rotation_error[ok].max(initial=0.0)),
            "generating_q_found": float(np.mean(np.abs(res.q - q_gen).max(-1) < 1e-6)), "scaled": subset != n}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", default="ur5e", help="UR preset (ur5, ur5e, ur10e)")
    parser.add_argument("--targets", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3, help="timed runs; the best is reported")
    parser.add_argument("--dls-subset", type=int, default=500, help="targets the DLS peer solves (0: skip)")
    parser.add_argument("--json", action="store_true", help="print one JSON object per row")
    args = parser.parse_args()
    rows = [bench_analytic(args.robot, args.targets, args.repeats)]
    if args.dls_subset > 0:
        row = bench_dls(args.robot, args.targets, min(args.dls_subset, args.targets))
        if row is not None:
            rows.append(row)
    print(f"numpy {np.__version__}, robot {args.robot}, {args.targets} random in-limit targets")
    head = (f"{'method':36s} {'timed':>7s} {'seconds':>9s} {'cpu s':>9s} {'poses/s':>10s} {'valid/target':>12s} "
            f"{'max pos err':>11s} {'max rot err':>11s} {'gen q found':>11s}")
    print(head)
    for r in rows:
        star = "*" if r["scaled"] else ""
        secs, cpu = f"{r['seconds']:.3f}{star}", f"{r['cpu_seconds']:.3f}{star}"
        print(f"{r['method']:36s} {r['timed']:7d} {secs:>9s} {cpu:>9s} {r['poses_per_s']:10.0f} "
              f"{r['valid_per_target']:12.3f} {r['max_pos_err_m']:11.2e} {r['max_rot_err_rad']:11.2e} "
              f"{r['generating_q_found']:11.4f}")
    if any(r["scaled"] for r in rows):
        print("* scaled from the timed subset to all targets; DLS 'valid/target' is its convergence rate")
    if args.json:
        for r in rows:
            print(json.dumps({"numpy": np.__version__, **r}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
