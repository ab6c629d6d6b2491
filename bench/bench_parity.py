# SPDX-License-Identifier: GPL-3.0-or-later
"""Parity with Blender's IK (issue 16): every scene of ``tests/blender/parity_scenes.py``, both routes.

Run from the repo root with a bpy venv:
``.venvs/5.0.1/bin/python bench/bench_parity.py [--frames 60] [--scenes a,b] [--json] [--quick]``
(also ``.venvs/4.5.15`` and ``.venvs/4.2.23``; ``--quick`` is 30 frames).

Protocol: each scene is built fresh for each route. Blender's route: the scene's IK constraints
live, ``nla.bake(only_selected=True, visual_keying=True, clear_constraints=False,
bake_types={'POSE'}, use_current_action=True)`` on the selected chain bones, then every IK
constraint muted (and drivers on their mute or influence). ``use_current_action`` departs from
nla.bake's default, which replaces the armature's action by one holding the selected bones only
and so drops a target bone keyed on the same armature and keys outside the range. Articulate's
route: ``articulate.chains_from_constraints`` then ``articulate.bake`` with default settings.
Both are scored by the same playback code (``parity_scenes.score``): per frame and live IK
constraint, the chain end (the owner's tail, or head with use_tail off) against its target;
"pops" are frames where a chain bone's head moves more than 5 cm while its target moves less
than 1 cm. Columns: ``seconds``, the bake operators alone (Articulate's includes the conversion
and its playback verification); ``missed``, Articulate's report's missed frames, and for
Blender the frames whose residual exceeds 0.1 mm (Articulate's default tolerance; Blender
reports nothing); ``agrees``, the report matches playback on every frame (1e-5 m, and converged
means within tolerance); ``notes``: a refusal, keys outside the range lost, or IK constraints
live again in playback (then the IK, not the keys, poses the chain). Rigify's rig is generated
in a child process (about 10 s, not counted).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="articulate-bench-"))
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "blender"))

import bpy  # noqa: E402
import parity_scenes as ps  # noqa: E402
from blender_output import stdout_to_stderr  # noqa: E402

import cli  # noqa: E402


def _notes(r: ps.RouteResult) -> str:
    notes = []
    if r.error:
        notes.append(f"refused: {r.error.removeprefix('Error: ')}")
    if r.keys_kept is not None:
        notes.append("keys outside the range kept" if r.keys_kept else "keys outside the range LOST")
    if r.ik_live_frames:
        notes.append(f"IK live in playback on {len(r.ik_live_frames)} frames")
    return "; ".join(notes)


def _cell(value, fmt: str) -> str:
    """``value`` formatted by ``fmt`` ("8.3f"), or a dash as wide for a missing value."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-".rjust(int(fmt.split(".")[0].rstrip("df") or 0))
    return format(value, fmt)


def print_table(results: list[tuple[ps.ParityScene, list[ps.RouteResult]]], frames: int, wall: float) -> None:
    """A block per scene: one row per route."""
    print(f"Blender {bpy.app.version_string}: {len(results)} parity scenes, frames 1..{frames}, "
          f"{wall:.1f} s in all (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    head = (f"{'route':11s} {'seconds':>8s} {'median mm':>10s} {'p95 mm':>9s} {'max mm':>9s} {'pops':>5s} "
            f"{'missed':>7s} {'agrees':>7s}  notes")
    for scene, rows in results:
        print(f"\n{scene.name}: {scene.about}")
        print(head)
        for r in rows:
            agrees = "-" if r.agrees is None else ("yes" if r.agrees else "NO")
            row = r.row()
            print(f"{r.route:11s} {_cell(r.seconds, '8.3f')} {_cell(r.median_mm, '10.4f')} "
                  f"{_cell(r.p95_mm, '9.4f')} {_cell(row['max_mm'], '9.3f')} "
                  f"{'-' if r.error else str(r.pops):>5s} {_cell(r.missed, '7d')} {agrees:>7s}  {_notes(r)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=ps.FRAMES)
    parser.add_argument("--scenes", default="", help="comma-separated scene names (default: all)")
    parser.add_argument("--json", action="store_true", help="print one JSON object per row")
    parser.add_argument("--quick", action="store_true", help=f"short development run: {ps.QUICK_FRAMES} frames")
    args = parser.parse_args()
    if args.quick:
        args.frames = min(args.frames, ps.QUICK_FRAMES)
    names = [n for n in args.scenes.split(",") if n] or [s.name for s in ps.SCENES]
    unknown = [n for n in names if n not in ps.BY_NAME]
    if unknown:
        parser.error(f"unknown scene(s) {', '.join(unknown)}; valid: {', '.join(ps.BY_NAME)}")
    scenes = [ps.BY_NAME[n] for n in names]
    t0 = time.perf_counter()
    results = []
    with stdout_to_stderr():
        cli.ensure_addon()
        blend = None
        if any(s.rigify for s in scenes):
            blend = ps.make_rigify_blend(Path(tempfile.mkdtemp(prefix="articulate-bench-")) / "rigify.blend",
                                         args.frames)
        for scene in scenes:
            results.append((scene, [ps.run(scene, route, args.frames, blend) for route in ("blender", "articulate")]))
    print_table(results, args.frames, time.perf_counter() - t0)
    if args.json:
        for _, rows in results:
            for r in rows:
                print(json.dumps(r.row()))
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)
