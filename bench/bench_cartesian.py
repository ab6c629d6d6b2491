# SPDX-License-Identifier: GPL-3.0-or-later
"""Cartesian path tracking on robot presets: continuity, convergence and time per frame.

Run from the repo root: ``.venvs/bench/bin/python bench/bench_cartesian.py [--frames 10000] [--json]``
(the core venv works too; the roboticstoolbox row then is skipped).

Protocol (issue 5): a smooth joint path (sums of slow sinusoids inside 60 % of each joint's
range, fixed seed) gives the tool poses; the path is solved from its first configuration
(the branch a user picked), frame by frame continuity required. Success per frame = position
error <= 1e-5 m and rotation error <= 1e-5 rad with joints in limits; a jump is a change of
any joint > 0.1 rad between consecutive frames. Goals: >= 99.9 % converged, no jump, < 0.2 ms
per frame.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ik_core import effector_poses
from ik_core.model.rotations import rotation_error  # noqa: E402
from ik_core.robots import presets  # noqa: E402
from ik_core.robots.analytic_ur import ur_params_from_preset  # noqa: E402
from ik_core.robots.analytic_ur_path import ur_ik_path  # noqa: E402
from ik_core.solvers.dls.solver import DLSSolver  # noqa: E402
from ik_core.take.tracking import solve_track  # noqa: E402


def smooth_path(skeleton, frames: int, seed: int = 0) -> np.ndarray:
    """(frames, dof) smooth joint path inside 60 % of each range."""
    rng = np.random.default_rng(seed)
    lo, hi = np.maximum(skeleton.lower, -np.pi), np.minimum(skeleton.upper, np.pi)
    mid, amp = (lo + hi) / 2, 0.6 * (hi - lo) / 2
    t = np.linspace(0.0, frames / 100.0, frames)[:, None, None]  # 100 Hz
    freq = rng.uniform(0.02, 0.15, size=(1, 3, skeleton.dof))
    phase = rng.uniform(0, 2 * np.pi, size=(1, 3, skeleton.dof))
    return mid + amp * np.mean(np.sin(2 * np.pi * freq * t + phase), axis=1)


def score(skeleton, q: np.ndarray, targets: np.ndarray, seconds: float, q_path: np.ndarray) -> dict:
    """Convergence, jumps (also those the generating path itself does not make) and speed."""
    poses = effector_poses(skeleton, q, "tool")
    pos = np.linalg.norm(poses[:, :3, 3] - targets[:, :3, 3], axis=-1)
    rot = rotation_error(poses[:, :3, :3], targets[:, :3, :3])
    ok = (pos <= 1e-5) & (rot <= 1e-5) & skeleton.within_limits(q)
    jumps = np.max(np.abs(np.diff(q, axis=0)), axis=1)
    path_steps = np.max(np.abs(np.diff(q_path[: len(q)], axis=0)), axis=1)
    return {
        "converged": float(ok.mean()),
        "max_jump_rad": float(jumps.max()),
        "jumps_over_0.1": int((jumps > 0.1).sum()),
        # A jump the generating path does not make (it moves < 0.1 rad there): a branch flip.
        "flips": int(((jumps > 0.1) & (path_steps < 0.1)).sum()),
        "path_max_step_rad": float(path_steps.max()),
        "ms_per_frame": seconds / len(q) * 1000.0,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=10_000)
    parser.add_argument("--rtb-frames", type=int, default=10_000, help="frames of the peer row")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quick", action="store_true", help="2,000 frames, for development")
    args = parser.parse_args()
    if args.quick:
        args.frames = args.rtb_frames = 2000
    rows = []
    for name in ("panda", "ur5"):
        skeleton = presets.load_preset(name)
        q_path = smooth_path(skeleton, args.frames)
        targets = effector_poses(skeleton, q_path, "tool")
        solver = DLSSolver(skeleton, "tool", mode="full", tolerance=1e-5, rotation_tolerance=1e-5, restarts=4)
        for look_ahead in (False, True):
            t0 = time.perf_counter()
            result = solve_track(solver, targets, q_path[0], look_ahead=look_ahead)
            method = "articulate solve_track (DLS)" + (" +look-ahead" if look_ahead else "")
            rows.append({"robot": name, "method": method, "frames": args.frames,
                         **score(skeleton, result.q, targets, time.perf_counter() - t0, q_path)})
        if name.startswith("ur"):
            params = ur_params_from_preset(name)
            t0 = time.perf_counter()
            # The protocol's own tolerance, as the DLS rows get: the path passes the stretched arm.
            q, _found = ur_ik_path(targets, params, q_path[0], tolerance=1e-5)
            rows.append({"robot": name, "method": "articulate ur_ik_path (analytic)", "frames": args.frames,
                         **score(skeleton, q, targets, time.perf_counter() - t0, q_path)})
        rows += rtb_row(name, skeleton, targets[: args.rtb_frames], q_path)
    print(f"numpy {np.__version__}; smooth paths at 100 Hz; success <= 1e-5 m and <= 1e-5 rad; jump > 0.1 rad")
    print(f"{'robot':6s} {'method':42s} {'frames':>7s} {'converged':>10s} {'max jump':>9s} {'jumps':>6s} "
          f"{'flips':>6s} {'path step':>10s} {'ms/frame':>9s}")
    for r in rows:
        print(f"{r['robot']:6s} {r['method']:42s} {r['frames']:7d} {r['converged'] * 100:9.2f}% "
              f"{r['max_jump_rad']:9.3f} {r['jumps_over_0.1']:6d} {r['flips']:6d} {r['path_max_step_rad']:10.3f} "
              f"{r['ms_per_frame']:9.3f}")
    print("jumps: frames changing a joint by > 0.1 rad; flips: such frames where the generating path moves < 0.1 rad")
    if args.json:
        for r in rows:
            print(json.dumps(r))
    return 0


def rtb_row(name: str, skeleton, targets: np.ndarray, q_path: np.ndarray) -> list[dict]:
    """roboticstoolbox's C++ ik_LM warm-started per frame, on the same URDF, when installed."""
    try:
        import roboticstoolbox as rtb
        from roboticstoolbox.models.URDF.URDFRobot import URDF_file
    except ImportError:
        return []
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_robots import _strip_meshes  # the same URDF loading as the robot benchmark

    files = {"panda": ("panda.urdf", "panda_link8"), "ur5": ("ur5.urdf", "tool0")}
    urdf = Path(__file__).resolve().parents[1] / "data" / "robots" / files[name][0]
    elinks, robot_name, _ = URDF_file(str(urdf), patch=_strip_meshes)
    ets = rtb.Robot(elinks, name=robot_name).ets(end=files[name][1])
    q = q_path[0].copy()
    out = np.empty((len(targets), skeleton.dof))
    t0 = time.perf_counter()
    for i, T in enumerate(targets):
        sol = ets.ik_LM(T, q0=q, ilimit=30, slimit=1, tol=1e-12, joint_limits=True)
        q = np.asarray(sol.q, dtype=float) if sol.success else q
        out[i] = q
    return [{"robot": name, "method": "roboticstoolbox ik_LM (C++, warm)", "frames": len(targets),
             **score(skeleton, out, targets, time.perf_counter() - t0, q_path)}]


if __name__ == "__main__":
    sys.exit(main())
