# SPDX-License-Identifier: GPL-3.0-or-later
"""URDF parse time against file size: generated chains and trees of 1,000 to 100,000 joints (issue 26).

Run from the repo root: ``.venvs/core/bin/python bench/bench_urdf_parse.py [--quick] [--json]
[--sizes 1000,10000] [--repeats 3] [--repo DIR]``.

Each robot is written to a temporary file (a revolute joint per link with origin, axis and
limits, as exporters write them; a chain, or a binary tree whose joint k hangs from link
(k - 1) // 2) and read back. Columns: the file size, ``parse_urdf`` (read, XML, joints, tree
and mimic checks), the standard library's ``ElementTree`` parse of the same bytes alone (the
floor a reader built on it stands on; garbage collector paused, as in ``parse_urdf``),
microseconds per joint, the ``RobotModel`` queries a rig import makes on top (tool links,
links below the root, serial check), and two more things an import does once per robot:
``RobotModel.skeleton`` (first access: the whole tree as a validated ``Skeleton``, one joint per
URDF joint and one effector per link) and ``RobotModel.to_json`` (the model a rig stores). Each
of these two is timed on a fresh copy of the parsed model, so no cache of an earlier run
helps. Last, ``RobotModel.from_json`` of that text (what reading a rig's stored model costs). Seconds are the
best of ``--repeats`` wall-clock runs; CPU seconds show how much of it was ours on a shared
machine. ``--repo`` imports ``ik_core`` from another checkout (say, an older commit unpacked
with ``git archive``) to compare; its rows stop at ``--budget`` seconds per parse. ``--calls``
adds a count that does not depend on the machine's load: the Python functions one more, untimed
parse (and skeleton, and ``to_json``) calls per joint (``sys.setprofile``; C functions called by
``map`` are not counted).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

DEFAULT_SIZES = (1_000, 4_000, 16_000, 32_000, 100_000)
QUICK_SIZES = (1_000, 4_000, 16_000)


def generated(n: int, tree: bool) -> str:
    """A robot of ``n`` revolute joints as URDF text: a chain, or a binary tree."""
    parts = ["<?xml version='1.0'?>", "<robot name='generated'>", "  <link name='l0'/>"]
    for k in range(1, n + 1):
        parent = (k - 1) // 2 if tree else k - 1
        parts.append(
            f"  <link name='l{k}'/>\n"
            f"  <joint name='j{k}' type='revolute'>\n"
            f"    <parent link='l{parent}'/><child link='l{k}'/>\n"
            f"    <origin xyz='0 0 0.1' rpy='0 0 {0.001 * (k % 997):.3f}'/><axis xyz='0 0 1'/>\n"
            "    <limit lower='-2.9' upper='2.9' effort='50' velocity='2.1'/>\n"
            "  </joint>"
        )
    parts.append("</robot>\n")
    return "\n".join(parts)


def elementtree(data: bytes) -> ET.Element:
    """The standard library's parse alone, with the garbage collector paused as ``parse_urdf`` pauses it."""
    gc.disable()
    try:
        return ET.fromstring(data)
    finally:
        gc.enable()


def best(fn, repeats: int) -> tuple[float, float, object]:
    """Best wall and CPU seconds of ``repeats`` calls, and the last result."""
    walls, cpus, out = [], [], None
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus), out


def best_fresh(fn, fresh, repeats: int) -> tuple[float, object]:
    """Best wall seconds of ``repeats`` calls ``fn(fresh())``, ``fresh()`` untimed, and the last result."""
    walls, out = [], None
    for _ in range(repeats):
        arg = fresh()
        w = time.perf_counter()
        out = fn(arg)
        walls.append(time.perf_counter() - w)
    return min(walls), out


def python_calls(fn) -> int:
    """How many Python functions ``fn()`` calls (calls made by C code, such as ``map``'s, excluded)."""
    count = 0

    def profile(_frame, event, _arg):
        nonlocal count
        count += event == "call"

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return count


def bench(sizes, repeats: int, budget: float, model_queries: bool = True, calls: bool = False) -> list[dict]:  # noqa: C901
    from ik_core.formats.urdf import parse_urdf
    from ik_core.robots.model import RobotModel

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape in ("chain", "tree"):
            for n in sizes:
                path = Path(tmp) / f"{shape}_{n}.urdf"
                path.write_text(generated(n, shape == "tree"))
                data = path.read_bytes()
                et_wall, _et_cpu, _ = best(lambda: elementtree(data), repeats)  # noqa: B023
                wall, cpu, model = best(lambda: parse_urdf(path), repeats)  # noqa: B023
                assert len(model.joints) == n

                def queries(model=model):
                    rm = RobotModel(model)
                    return rm.default_tools(), rm.links_below(), rm.serial_tool()

                def fresh(model=model):
                    # A new model of the same tree: its caches (tree arrays, name maps) are those a
                    # fresh parse leaves, none of the skeleton's.
                    return RobotModel(type(model)(model.name, model.links, model.joints, model.notes))

                q_wall = skeleton_wall = json_wall = from_json_wall = None
                skeleton_calls = json_calls = None
                if model_queries:
                    q_wall, _q_cpu, (tools, below, _serial) = best(queries, repeats)
                    assert len(below) == n and tools
                    skeleton_wall, skeleton = best_fresh(lambda rm: rm.skeleton, fresh, repeats)
                    assert len(skeleton.joints) == n and len(skeleton.effectors) == n
                    json_wall, text = best_fresh(lambda rm: rm.to_json(), fresh, repeats)
                    assert len(text) > 100 * n
                    from_json_wall, _cpu, back = best(lambda text=text: RobotModel.from_json(text), repeats)
                    assert len(back.urdf.links) == n + 1
                    if calls:
                        rm = fresh()
                        skeleton_calls = python_calls(lambda rm=rm: rm.skeleton) / n
                        json_calls = python_calls(rm.to_json) / n
                rows.append({"shape": shape, "joints": n, "mb": len(data) / 1e6, "parse_s": wall,
                             "parse_cpu_s": cpu, "elementtree_s": et_wall, "us_per_joint": 1e6 * wall / n,
                             "model_queries_s": q_wall, "skeleton_s": skeleton_wall,
                             "to_json_s": json_wall, "from_json_s": from_json_wall,
                             "calls_per_joint": python_calls(lambda: parse_urdf(path)) / n if calls else None,  # noqa: B023
                             "skeleton_calls_per_joint": skeleton_calls, "to_json_calls_per_joint": json_calls})
                if wall > budget:
                    break
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="", help="comma-separated joint counts (default 1k-100k)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs; the best is reported")
    parser.add_argument("--quick", action="store_true", help="1k-16k joints, one run each")
    parser.add_argument("--budget", type=float, default=60.0, help="stop a shape's sizes after a parse this slow [s]")
    parser.add_argument("--parse-only", action="store_true", help="skip the RobotModel queries (slow before issue 26)")
    parser.add_argument("--repo", default="", help="import ik_core from this checkout instead of this one")
    parser.add_argument("--calls", action="store_true", help="count Python calls per joint in one more parse")
    parser.add_argument("--json", action="store_true", help="print one JSON object per row")
    args = parser.parse_args()
    repo = Path(args.repo).resolve() if args.repo else Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(repo))
    sizes = [int(s) for s in args.sizes.split(",") if s] or (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    rows = bench(sizes, 1 if args.quick else args.repeats, args.budget, not args.parse_only, args.calls)
    if args.json:
        for r in rows:
            print(json.dumps({"python": sys.version.split()[0], "repo": str(repo), **r}))
        return 0
    print(f"Python {sys.version.split()[0]}, ik_core from {repo}")
    print(f"{'shape':6s} {'joints':>8s} {'MB':>6s} {'parse s':>8s} {'cpu s':>7s} {'ElementTree s':>13s} "
          f"{'us/joint':>9s} {'model queries s':>15s} {'skeleton s':>10s} {'to_json s':>9s} {'from_json s':>11s} "
          f"{'py calls/joint':>14s} {'skeleton':>8s} {'to_json':>7s}")

    def cell(value: float | None, width: int, digits: int = 3) -> str:
        return f"{'-' if value is None else f'{value:.{digits}f}':>{width}s}"

    for r in rows:
        print(f"{r['shape']:6s} {r['joints']:8d} {r['mb']:6.1f} {r['parse_s']:8.3f} {r['parse_cpu_s']:7.3f} "
              f"{r['elementtree_s']:13.3f} {r['us_per_joint']:9.1f} {cell(r['model_queries_s'], 15)} "
              f"{cell(r['skeleton_s'], 10)} {cell(r['to_json_s'], 9)} {cell(r['from_json_s'], 11)} "
              f"{cell(r['calls_per_joint'], 14)} "
              f"{cell(r['skeleton_calls_per_joint'], 8, 2)} {cell(r['to_json_calls_per_joint'], 7, 2)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
