# SPDX-License-Identifier: GPL-3.0-or-later
"""Robot IK benchmark (TRAC-IK's protocol): our DLS solver against roboticstoolbox and ikpy.

Run from the repo root: ``.venvs/bench/bin/python bench/bench_robots.py [--n 10000]
[--robots ur5,panda,iiwa] [--json] [--quick] [--only batch,single,rtb,ikpy,track,arms] [--arms 30]
[--arm-frames 240] [--arm-speed 0.09]``. The bench venv holds the peers
(bench/requirements-peers.txt); ``ik_core`` is imported from this checkout.

Protocol: for each robot (official URDFs in data/robots, tool frame 'tool0', or
'panda_link8' for the Panda), n configurations drawn uniformly inside the URDF limits with a
fixed seed; the target is the tool frame's full pose; every solve starts from the middle of
the limits. Success: position error <= 1e-5 m and rotation error <= 1e-5 rad, recomputed with
OUR forward kinematics from each solver's answer, every joint inside its limits, and (for
targets solved one at a time) a wall time of at most 5 ms. Rows:

* dls/batch: all n targets in one call (success within the 5 ms per-target budget is implied
  by the amortized time); median/p99 do not apply.
* dls/single, rtb-ik_LM/single, ikpy/single: targets one at a time on a subsample.
* dls/track: smooth joint paths (sums of sines inside the limits), their tool poses as
  targets, each frame warm-started from the previous answer (frame 0 from the path's own
  start, as when a rig is already posed); success is per frame, ``max_jump_rad`` the largest
  joint change between consecutive frames (goal: <= 0.1 rad).
* ``arms`` (``--arms N``, the robot column ``arms``): N random arms of 6 and 7 revolute joints,
  each a continuous joint, a revolute joint of +-2 pi, +-4 rad or +-3.5 pi, or one of +-1.5 to 3
  rad, on random axes and origins; a path of sines at up to ``--arm-speed`` rad/frame
  (default 0.09, a UR joint's pi rad/s at 30 fps; the robot bake's largest accepted step is
  0.1), its tool poses the targets. Routes: ``take+la``, what Bake does for a robot rig
  (``solve_track`` with ``look_ahead``, max_jump 0.1, segments of 32, the DLS solver with the
  chain's default tolerances, as in ``operators/robot_bake.py``); ``dls/track``, our solver
  warm-started frame by frame; ``rtb-ik_LM/track``, roboticstoolbox's solver warm-started
  frame by frame from its last answer. Reached: position within 1e-4 m and rotation within
  1e-3 rad (the bake's default tolerances) inside the limits. Steps are measured as the keys
  play them, continuous joints unwound (a whole turn of one is no motion); a jump is a step
  above 0.5 rad, which the path itself never makes.

Timings are wall-clock on whatever else the machine runs (BLAS limited to one thread); the
table says so.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import warnings
from pathlib import Path

# One BLAS thread: the machine is shared, and the batched solver's products are small anyway.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ik_core.formats.urdf import load_urdf, parse_urdf  # noqa: E402
from ik_core.model.kinematics import effector_poses  # noqa: E402
from ik_core.model.rotations import rotation_error  # noqa: E402
from ik_core.solvers.dls.solver import DLSSolver  # noqa: E402
from ik_core.take.paths import free_turns, unwound  # noqa: E402
from ik_core.take.tracking import solve_track  # noqa: E402

ROBOTS_DIR = ROOT / "data" / "robots"
ROBOTS = {
    "ur5": ("ur5.urdf", "tool0"),
    "panda": ("panda.urdf", "panda_link8"),
    "iiwa": ("lbr_iiwa_14_r820.urdf", "tool0"),
}
POS_TOL, ROT_TOL, BUDGET_S = 1e-5, 1e-5, 0.005
SEED = 20240607


def make_solver(skeleton, tip: str, time_budget_s: float | None) -> DLSSolver:
    """Our solver as benchmarked: full pose, the protocol's tolerances, default tuning."""
    return DLSSolver(
        skeleton, tip, mode="full", tolerance=POS_TOL, rotation_tolerance=ROT_TOL,
        max_iterations=300, restarts=100, time_budget_s=time_budget_s, seed=0,
    )


def check(skeleton, q: np.ndarray, targets: np.ndarray, tol: float = POS_TOL, rot_tol: float = ROT_TOL) -> np.ndarray:
    """(N,) answers q (N, dof) within ``tol`` [m] and ``rot_tol`` [rad] of target poses (N, 4, 4), inside the limits.

    The defaults are the protocol's success, ignoring time.
    """
    q = np.asarray(q, dtype=float)
    finite = np.all(np.isfinite(q), axis=-1)
    q = np.where(finite[:, None], q, 0.0)
    poses = effector_poses(skeleton, q, 0)
    pos = np.linalg.norm(poses[:, :3, 3] - targets[:, :3, 3], axis=-1)
    rot = rotation_error(poses[:, :3, :3], targets[:, :3, :3])
    inside = np.all((q >= skeleton.lower) & (q <= skeleton.upper), axis=-1)
    return finite & (pos <= tol) & (rot <= rot_tol) & inside


def row(robot: str, solver: str, mode: str, ok: np.ndarray, times: np.ndarray | None, total: float, **extra) -> dict:
    out = {
        "robot": robot, "solver": solver, "mode": mode, "n": int(len(ok)),
        "success_rate": float(np.mean(ok)) if len(ok) else float("nan"),
        "median_ms": None if times is None else float(np.median(times) * 1e3),
        "p99_ms": None if times is None else float(np.percentile(times, 99) * 1e3),
        "amortized_ms": total / max(len(ok), 1) * 1e3,
    }
    out.update(extra)
    return out


def bench_batch(robot, skeleton, tip, targets, mid) -> dict:
    solver = make_solver(skeleton, tip, BUDGET_S)
    solver.solve(targets[:8], mid)  # first-call imports and caches out of the timing
    t0 = time.perf_counter()
    res = solver.solve(targets, mid)
    total = time.perf_counter() - t0
    ok = check(skeleton, res.q, targets)
    return row(robot, "dls", "batch", ok, None, total, mean_iterations=float(res.iterations.mean()))


def bench_single(robot, skeleton, tip, targets, mid) -> dict:
    solver = make_solver(skeleton, tip, BUDGET_S)
    solver.solve(targets[0], mid)
    qs, times, iters = [], [], []
    for T in targets:
        t0 = time.perf_counter()
        res = solver.solve(T, mid)
        times.append(time.perf_counter() - t0)
        qs.append(res.q)
        iters.append(int(res.iterations))
    times = np.array(times)
    reached = check(skeleton, np.array(qs), targets)
    return row(robot, "dls", "single", reached & (times <= BUDGET_S), times, float(times.sum()),
               success_no_budget=float(np.mean(reached)), mean_iterations=float(np.mean(iters)))


def _strip_meshes(text: str) -> str:
    # roboticstoolbox resolves package:// meshes when it reads a URDF; the kinematics need none.
    return re.sub(r"<visual>.*?</visual>|<collision>.*?</collision>", "", text, flags=re.S)


def bench_rtb(robot, skeleton, path, tip, targets, mid) -> dict | None:
    try:
        import roboticstoolbox as rtb
        from roboticstoolbox.models.URDF.URDFRobot import URDF_file
    except ImportError:
        return None
    elinks, name, _ = URDF_file(str(path), patch=_strip_meshes)
    ets = rtb.Robot(elinks, name=name).ets(end=tip)
    # Same joint order as ours: compare forward kinematics once.
    q_probe = np.linspace(-0.5, 0.5, skeleton.dof)
    assert np.allclose(ets.fkine(q_probe).A, effector_poses(skeleton, q_probe, 0), atol=1e-9)
    qs, times = [], []
    ets.ik_LM(targets[0], q0=mid, ilimit=30, slimit=100, tol=1e-12, joint_limits=True)
    for T in targets:
        t0 = time.perf_counter()
        sol = ets.ik_LM(T, q0=mid, ilimit=30, slimit=100, tol=1e-12, joint_limits=True)
        times.append(time.perf_counter() - t0)
        qs.append(np.asarray(sol.q, dtype=float))
    times = np.array(times)
    ok = check(skeleton, np.array(qs), targets) & (times <= BUDGET_S)
    return row(robot, "rtb-ik_LM", "single", ok, times, float(times.sum()),
               success_no_budget=float(np.mean(check(skeleton, np.array(qs), targets))))


def bench_ikpy(robot, skeleton, path, tip, targets, mid) -> dict | None:
    try:
        from ikpy.chain import Chain
    except ImportError:
        return None
    model = parse_urdf(path)
    by_child = {j.child: j for j in model.joints}
    elements = [tip]
    while elements[-1] in by_child:  # link, joint, link, ... from the tip up to the root
        j = by_child[elements[-1]]
        elements += [j.name, j.parent]
    elements.reverse()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chain = Chain.from_urdf_file(str(path), base_elements=elements)
        active = np.array([link.joint_type != "fixed" for link in chain.links])
        chain = Chain.from_urdf_file(str(path), base_elements=elements, active_links_mask=list(active))
    start = np.zeros(len(chain.links))
    start[active] = mid
    qs, times = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for T in targets:
            t0 = time.perf_counter()
            sol = chain.inverse_kinematics(T[:3, 3], T[:3, :3], orientation_mode="all", initial_position=start)
            times.append(time.perf_counter() - t0)
            qs.append(np.asarray(sol)[active])
    times = np.array(times)
    ok = check(skeleton, np.array(qs), targets) & (times <= BUDGET_S)
    return row(robot, "ikpy", "single", ok, times, float(times.sum()),
               success_no_budget=float(np.mean(check(skeleton, np.array(qs), targets))))


def smooth_paths(skeleton, paths: int, frames: int, rng: np.random.Generator) -> np.ndarray:
    """(paths, frames, dof) joint paths: two sines per joint, inside the limits, <= ~0.04 rad/frame."""
    # Continuous joints (infinite limits) move within +/- pi.
    lo = np.where(np.isfinite(skeleton.lower), skeleton.lower, -np.pi)
    hi = np.where(np.isfinite(skeleton.upper), skeleton.upper, np.pi)
    half = np.minimum(0.5 * (hi - lo), np.pi)
    mid = 0.5 * (lo + hi)
    t = np.arange(frames)[:, None] / frames
    out = np.empty((paths, frames, skeleton.dof))
    for p in range(paths):
        center = mid + rng.uniform(-0.25, 0.25, skeleton.dof) * half
        a1, a2 = rng.uniform(0.15, 0.35, (2, skeleton.dof)) * half
        f1, f2 = rng.integers(1, 4, (2, skeleton.dof))
        ph1, ph2 = rng.uniform(0, 2 * np.pi, (2, skeleton.dof))
        out[p] = center + a1 * np.sin(2 * np.pi * f1 * t + ph1) + a2 * np.sin(2 * np.pi * f2 * t + ph2)
    return np.clip(out, lo, hi)


def bench_track(robot, skeleton, tip, paths: int, frames: int, rng) -> dict:
    """Per-frame warm start, one solve call per frame (the plain protocol)."""
    solver = make_solver(skeleton, tip, None)
    qpaths = smooth_paths(skeleton, paths, frames, rng)
    oks, times, jumps = [], [], []
    for qp in qpaths:
        targets = effector_poses(skeleton, qp, 0)
        q = qp[0]
        prev = q
        qs = []
        for T in targets:
            t0 = time.perf_counter()
            res = solver.solve(T, q)
            times.append(time.perf_counter() - t0)
            q = res.q
            qs.append(q)
            jumps.append(float(np.max(np.abs(q - prev))))
            prev = q
        oks.append(check(skeleton, np.array(qs), targets))
    times = np.array(times)
    jumps = np.array(jumps)
    return row(robot, "dls", "track", np.concatenate(oks), times, float(times.sum()),
               max_jump_rad=float(jumps.max()), jumps_over_0_1_rad=int(np.count_nonzero(jumps > 0.1)))


def bench_track_take(robot, skeleton, tip, paths: int, frames: int, rng, look_ahead: bool = False) -> dict:
    """The same paths through solve_track (segments, prediction, repair); robot bakes add ``look_ahead``."""
    solver = make_solver(skeleton, tip, None)
    qpaths = smooth_paths(skeleton, paths, frames, rng)
    oks, total, jumps = [], 0.0, []
    for qp in qpaths:
        targets = effector_poses(skeleton, qp, 0)
        t0 = time.perf_counter()
        res = solve_track(solver, targets, qp[0], look_ahead=look_ahead)
        total += time.perf_counter() - t0
        oks.append(check(skeleton, res.q, targets))
        jumps.append(np.max(np.abs(np.diff(np.vstack([qp[:1], res.q]), axis=0)), axis=1))
    jumps = np.concatenate(jumps)
    per_frame = np.full(paths * frames, total / (paths * frames))
    return row(robot, "dls", "take+la" if look_ahead else "take", np.concatenate(oks), per_frame, total,
               max_jump_rad=float(jumps.max()), jumps_over_0_1_rad=int(np.count_nonzero(jumps > 0.1)))


# What operators/robot_bake.py solves a robot's take with.
ROBOT_BAKE_MAX_JUMP, ROBOT_BAKE_SEGMENT = 0.1, 32
ARM_TOL, ARM_ROT_TOL, ARM_JUMP = 1e-4, 1e-3, 0.5


def random_arm_urdf(rng: np.random.Generator, joints: int) -> str:
    """A serial arm of ``joints`` revolute joints ending in link 'tool' (see the ``arms`` rows)."""
    parts = ['<robot name="arm">', '<link name="l0"/>']
    for k in range(1, joints + 1):
        axis = rng.choice(["0 0 1", "0 1 0", "1 0 0"])
        xyz = rng.uniform(-0.1, 0.1, 3) + np.array([0.0, 0.0, rng.uniform(0.05, 0.4)])
        rpy = rng.choice([0.0, np.pi / 2, -np.pi / 2], 3) if rng.random() < 0.5 else np.zeros(3)
        kind, limit = "revolute", ""
        draw = rng.random()
        if draw < 0.25:
            kind = "continuous"
        else:
            wide = rng.choice([2 * np.pi, 4.0, 3.5 * np.pi]) if draw < 0.5 else rng.uniform(1.5, 3.0)
            limit = f'<limit lower="{-wide:.6f}" upper="{wide:.6f}" effort="1" velocity="1"/>'
        parts.append(
            f'<link name="l{k}"/><joint name="j{k}" type="{kind}"><parent link="l{k - 1}"/><child link="l{k}"/>'
            f'<origin xyz="{" ".join(f"{v:.4f}" for v in xyz)}" rpy="{" ".join(f"{v:.6f}" for v in rpy)}"/>'
            f'<axis xyz="{axis}"/>{limit}</joint>'
        )
    parts.append(f'<link name="tool"/><joint name="flange" type="fixed"><parent link="l{joints}"/>'
                 '<child link="tool"/><origin xyz="0 0 0.1"/></joint></robot>')
    return "".join(parts)


def arm_path(rng: np.random.Generator, skeleton, frames: int, speed: float) -> np.ndarray:
    """(frames, dof) one sine per joint inside the limits (continuous joints within +-3 pi), <= ``speed`` rad/frame."""
    lo = np.where(np.isfinite(skeleton.lower), skeleton.lower, -3 * np.pi)
    hi = np.where(np.isfinite(skeleton.upper), skeleton.upper, 3 * np.pi)
    mid, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
    amplitude = half * rng.uniform(0.3, 0.95, skeleton.dof)
    rate = rng.uniform(0.5, 2.0, skeleton.dof) * 2 * np.pi
    phase = rng.uniform(0, 2 * np.pi, skeleton.dof)
    t = np.linspace(0.0, 1.0, frames)[:, None]
    fastest = float(np.max(amplitude * rate)) / (frames - 1)  # the steepest sine's step
    if fastest > speed:
        rate *= speed / fastest
    return np.clip(mid + amplitude * np.sin(rate * t + phase), lo, hi)


def played_steps(skeleton, q: np.ndarray, before: np.ndarray) -> np.ndarray:
    """(N,) largest joint step into each frame of q (N, dof) as its keys play, continuous joints unwound."""
    path = unwound(q, before, free_turns(skeleton))
    return np.max(np.abs(np.diff(np.vstack([before[None], path]), axis=0)), axis=1)


def _rtb_tracker(text: str, skeleton):
    """roboticstoolbox's solver for the arm in URDF ``text``, warm-started frame by frame; None without it."""
    try:
        import roboticstoolbox as rtb
        from roboticstoolbox.models.URDF.URDFRobot import URDF_file
    except ImportError:
        return None
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        file = Path(folder) / "arm.urdf"
        file.write_text(text)
        elinks, name, _ = URDF_file(str(file))
    ets = rtb.Robot(elinks, name=name).ets(end="tool")
    q_probe = np.linspace(-0.5, 0.5, skeleton.dof)
    assert np.allclose(ets.fkine(q_probe).A, effector_poses(skeleton, q_probe, 0), atol=1e-9)

    def track(targets: np.ndarray, q0: np.ndarray) -> np.ndarray:
        q, out = q0, []
        for T in targets:
            sol = ets.ik_LM(T, q0=q, ilimit=30, slimit=100, tol=1e-12, joint_limits=True)
            q = np.asarray(sol.q, dtype=float)
            out.append(q)
        return np.array(out)

    return track


def bench_random_arms(arms: int, frames: int, speed: float) -> list[dict]:
    """The ``arms`` rows: every route on the same random arms and paths."""
    from ik_core.solvers import make_solver as make_named_solver

    routes = {"take+la": "dls", "track": "dls", "rtb-track": "rtb-ik_LM"}
    stats = {r: {"ok": [], "seconds": 0.0, "frames": 0, "jumps": 0, "arms_jumping": 0, "max_step": 0.0}
             for r in routes}
    for k in range(arms):
        rng = np.random.default_rng([SEED, k])
        text = random_arm_urdf(rng, int(rng.integers(6, 8)))
        skeleton = load_urdf(text, tip_links="tool")
        qp = arm_path(rng, skeleton, frames, speed)
        targets = effector_poses(skeleton, qp, 0)
        solver = make_named_solver("dls", skeleton, "tool", mode="full")
        rtb_track = _rtb_tracker(text, skeleton)
        for route in routes:
            t0 = time.perf_counter()
            if route == "take+la":
                q = solve_track(solver, targets, qp[0], max_jump=ROBOT_BAKE_MAX_JUMP, segment=ROBOT_BAKE_SEGMENT,
                                look_ahead=True).q
            elif route == "track":
                q, prev = [], qp[0]
                for T in targets:
                    prev = solver.solve(T, prev).q
                    q.append(prev)
                q = np.array(q)
            elif rtb_track is not None:
                q = rtb_track(targets, qp[0])
            else:
                continue
            st = stats[route]
            st["seconds"] += time.perf_counter() - t0
            st["frames"] += frames
            st["ok"].append(check(skeleton, q, targets, ARM_TOL, ARM_ROT_TOL))  # the bake's default tolerances
            steps = played_steps(skeleton, q, qp[0])
            st["jumps"] += int(np.count_nonzero(steps > ARM_JUMP))
            st["arms_jumping"] += bool(np.any(steps > ARM_JUMP))
            st["max_step"] = max(st["max_step"], float(steps.max()))
    rows = []
    for route, solver_name in routes.items():
        st = stats[route]
        if not st["frames"]:
            continue
        ok = np.concatenate(st["ok"])
        rows.append(row("arms", solver_name, route.removeprefix("rtb-"), ok, None, st["seconds"],
                        max_jump_rad=st["max_step"], jumps_over_0_5_rad=st["jumps"], arms=arms,
                        arms_jumping=st["arms_jumping"], path_speed=speed))
    return rows


def fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="targets per robot (batch row)")
    parser.add_argument("--robots", default="ur5,panda,iiwa", help=f"comma list of {', '.join(ROBOTS)}")
    parser.add_argument("--json", action="store_true", help="print one JSON object per row")
    parser.add_argument("--quick", action="store_true", help="small sizes for development")
    parser.add_argument("--single", type=int, default=1000, help="targets solved one at a time (ours)")
    parser.add_argument("--rtb", type=int, default=2000, help="targets for roboticstoolbox (0: skip)")
    parser.add_argument("--ikpy", type=int, default=100, help="targets for ikpy (0: skip)")
    parser.add_argument("--paths", type=int, default=3, help="tracking paths per robot")
    parser.add_argument("--frames", type=int, default=1000, help="frames per tracking path")
    parser.add_argument("--arms", type=int, default=30, help="random arms for the arms rows (0: skip)")
    parser.add_argument("--arm-frames", type=int, default=240, help="frames per random arm's path")
    parser.add_argument("--arm-speed", type=float, default=0.09, help="fastest joint step of an arm's path [rad/frame]")
    parser.add_argument("--only", default="",
                        help="comma list of row groups to run: batch, single, rtb, ikpy, track, arms")
    args = parser.parse_args()
    if args.quick:
        args.n, args.single, args.rtb, args.ikpy, args.paths, args.frames = 500, 100, 100, 10, 1, 300
        args.arms = min(args.arms, 4)
    robots = [r.strip() for r in args.robots.split(",") if r.strip()]
    unknown = [r for r in robots if r not in ROBOTS]
    if unknown:
        parser.error(f"unknown robot(s) {', '.join(unknown)}; valid: {', '.join(ROBOTS)}")
    all_groups = ("batch", "single", "rtb", "ikpy", "track", "arms")
    groups = {g.strip() for g in args.only.split(",") if g.strip()} or set(all_groups)
    if groups - set(all_groups):
        unknown_groups = ", ".join(sorted(groups - set(all_groups)))
        parser.error(f"unknown --only group(s) {unknown_groups}; valid: {', '.join(all_groups)}")

    rows = []
    started = time.perf_counter()
    for robot in robots:
        file, tip = ROBOTS[robot]
        path = ROBOTS_DIR / file
        skeleton = load_urdf(path, tip_links=tip)
        rng = np.random.default_rng(SEED)
        q_true = rng.uniform(skeleton.lower, skeleton.upper, (args.n, skeleton.dof))
        targets = effector_poses(skeleton, q_true, 0)
        mid = skeleton.mid_q()
        if "batch" in groups:
            rows.append(bench_batch(robot, skeleton, tip, targets, mid))
        if "single" in groups:
            rows.append(bench_single(robot, skeleton, tip, targets[: args.single], mid))
        if args.rtb and "rtb" in groups:
            r = bench_rtb(robot, skeleton, path, tip, targets[: args.rtb], mid)
            rows += [r] if r else []
        if args.ikpy and "ikpy" in groups:
            r = bench_ikpy(robot, skeleton, path, tip, targets[: args.ikpy], mid)
            rows += [r] if r else []
        if args.paths and args.frames and "track" in groups:
            # Both tracking rows follow the same paths (same seed).
            rows.append(bench_track(robot, skeleton, tip, args.paths, args.frames, np.random.default_rng(7)))
            rows.append(bench_track_take(robot, skeleton, tip, args.paths, args.frames, np.random.default_rng(7)))
            rows.append(bench_track_take(robot, skeleton, tip, args.paths, args.frames, np.random.default_rng(7),
                                         look_ahead=True))
    if args.arms and args.arm_frames > 1 and "arms" in groups:
        rows += bench_random_arms(args.arms, args.arm_frames, args.arm_speed)
    if args.json:
        for r in rows:
            print(json.dumps(r))
        return 0
    head = (
        f"{'robot':6s} {'solver':10s} {'mode':6s} {'n':>6s} {'success':>8s} {'median_ms':>9s} {'p99_ms':>8s} "
        f"{'amort_ms':>8s}  notes"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        notes = []
        if "success_no_budget" in r:
            notes.append(f"{r['success_no_budget'] * 100:.2f}% reached regardless of time")
        if "jumps_over_0_5_rad" in r:
            notes.append(f"max joint step {r['max_jump_rad']:.3f} rad; {r['jumps_over_0_5_rad']} jumps > 0.5 rad "
                         f"on {r['arms_jumping']} of {r['arms']} arms (path <= {r['path_speed']:g} rad/frame)")
        elif "max_jump_rad" in r:
            notes.append(f"max joint jump {r['max_jump_rad']:.3f} rad, {r['jumps_over_0_1_rad']} frames > 0.1 rad")
        if "mean_iterations" in r:
            notes.append(f"{r['mean_iterations']:.1f} iterations/target")
        print(
            f"{r['robot']:6s} {r['solver']:10s} {r['mode']:6s} {r['n']:6d} {r['success_rate'] * 100:7.2f}% "
            f"{fmt(r['median_ms'], '9.3f')} {fmt(r['p99_ms'], '8.3f')} {r['amortized_ms']:8.4f}  {'; '.join(notes)}"
        )
    print(f"numpy {np.__version__}; wall-clock times on a shared machine; total {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
