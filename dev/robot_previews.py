# SPDX-License-Identifier: GPL-3.0-or-later
"""Render the UR5, Panda and iiwa presets as Add Robot draws them, labelled (Workbench, headless): <out>/robots.png."""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="out/demo", help="output folder (default: out/demo)")
    parser.add_argument("--verbose", action="store_true",
                        help="show Blender's own output (OBJ imports, render messages) instead of appending it "
                             "to OUT/blender.log")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    import bpy  # noqa: F401  (first: addon_utils exists only once bpy is imported)

    import cli  # enables the add-on from this checkout, as the demo does

    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with cli.blender_output(None if args.verbose else out / cli.DEMO_LOG, append=True):
        addon = cli.ensure_addon()
        demo = importlib.import_module(f"{addon.__name__}.operators.demo")
        rigs = demo.build_robot_previews()
        demo.label_robots(rigs)
        built = time.perf_counter() - t0
        picture = out / "robots.png"
        demo.render_workbench(str(picture))
    print(f"articulate: robot previews built in {built:.2f} s, rendered in {time.perf_counter() - t0 - built:.2f} s; "
          f"wrote {picture}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
