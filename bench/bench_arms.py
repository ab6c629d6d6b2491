# SPDX-License-Identifier: GPL-3.0-or-later
"""Arms the solver was not tuned on: batch IK and jump-free tracking, TRAC-IK's protocol.

Run from the repo root: ``.venvs/bench/bin/python bench/bench_arms.py [--n 2000] [--paths 5]
[--json]``. The three benchmark robots (``bench_robots.py``) are where the solver and the
take repairs were developed; this run measures the same rows on arms they never saw: the
add-on's other presets (UR10e, Kinova Gen3 with its continuous joints) and, when the bench
venv has roboticstoolbox's data package (``rtbdata``), the industrial URDFs it ships (ABB IRB
140, KUKA KR 16-2, KR 120 R2500 pro, KR 210 L150, PUMA 560), loaded by our URDF loader.

Rows per arm: ``batch`` (n targets uniform within the limits, continuous joints within
+/- pi, solved in one call from the mid pose; success = 1e-5 m and 1e-5 rad in limits) and
``take+la`` (smooth joint paths' tool poses solved as a bake does, ``solve_track`` with
``look_ahead=True``; jumps are steps above 0.1 rad between frames).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_robots import bench_batch, bench_track_take  # noqa: E402

from ik_core.formats.urdf import load_urdf  # noqa: E402
from ik_core.model.kinematics import effector_poses  # noqa: E402
from ik_core.robots import presets  # noqa: E402

PRESETS = {"ur10e": "ur10e", "gen3": "kinova_gen3_7dof"}
RTB_URDFS = {
    "irb140": "abb_irb140_description/urdf/irb140.urdf",
    "kr16": "kuka_description/kuka_kr16/urdf/kr16_2.urdf",
    "kr120": "kuka_description/kuka_kr120/urdf/kr120r2500pro.urdf",
    "kr210": "kuka_description/kuka_kr210/urdf/kr210l150.urdf",
    "puma560": "unimation_puma560_description/urdf/puma560_robot.urdf",
}


def arms() -> list[tuple[str, object]]:
    """(name, skeleton) of every arm available here."""
    out = [(name, presets.load_preset(preset)) for name, preset in PRESETS.items()]
    try:
        import rtbdata
    except ImportError:
        print("rtbdata not installed: industrial URDFs skipped (make bench-env installs it)", file=sys.stderr)
        return out
    root = Path(rtbdata.__file__).resolve().parent / "xacro"
    for name, rel in RTB_URDFS.items():
        if (root / rel).is_file():
            out.append((name, load_urdf(root / rel)))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="targets per arm (batch row)")
    parser.add_argument("--paths", type=int, default=5, help="tracking paths per arm")
    parser.add_argument("--frames", type=int, default=1000, help="frames per tracking path")
    parser.add_argument("--json", action="store_true", help="print one JSON object per row")
    args = parser.parse_args()
    rows = []
    started = time.perf_counter()
    for name, skeleton in arms():
        lo = np.where(np.isfinite(skeleton.lower), skeleton.lower, -np.pi)
        hi = np.where(np.isfinite(skeleton.upper), skeleton.upper, np.pi)
        q_true = np.random.default_rng(20240607).uniform(lo, hi, (args.n, skeleton.dof))
        targets = effector_poses(skeleton, q_true, 0)
        r = bench_batch(name, skeleton, 0, targets, skeleton.mid_q())
        r["dof"] = skeleton.dof
        rows.append(r)
        r = bench_track_take(name, skeleton, 0, args.paths, args.frames, np.random.default_rng(7), look_ahead=True)
        r["dof"] = skeleton.dof
        rows.append(r)
    if args.json:
        for r in rows:
            print(json.dumps(r))
        return 0
    head = f"{'arm':8s} {'dof':>3s} {'mode':8s} {'n':>6s} {'success':>8s} {'amort_ms':>9s}  notes"
    print(head)
    print("-" * len(head))
    for r in rows:
        notes = ""
        if "max_jump_rad" in r:
            notes = f"max joint jump {r['max_jump_rad']:.3f} rad, {r['jumps_over_0_1_rad']} frames > 0.1 rad"
        elif "mean_iterations" in r:
            notes = f"{r['mean_iterations']:.1f} iterations/target"
        print(f"{r['robot']:8s} {r['dof']:3d} {r['mode']:8s} {r['n']:6d} {r['success_rate'] * 100:7.2f}% "
              f"{r['amortized_ms']:9.4f}  {notes}")
    print(f"numpy {np.__version__}; wall-clock times on a shared machine; total {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
