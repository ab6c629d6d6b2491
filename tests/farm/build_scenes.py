# SPDX-License-Identifier: GPL-3.0-or-later
"""Save small scenes for the farm tests: ``python build_scenes.py FOLDER NAME:KIND:FRAMES ...``.

KIND ``arm``: the README's three-bone arm following a figure-eight (every frame reachable);
``far``: the same with its target lifted 3 m out of reach (every frame misses); ``ik``: the
same arm rigged for Blender's IK instead (an IK constraint on the wrist, no chain), which bakes
only with ``--from-constraints``. Run with a
Python that has the bpy module; the add-on is enabled from the repository as cli.py does.
"""

import importlib
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import bpy  # noqa: E402

import cli  # noqa: E402  (the repository root is not a package on this path)

demo = importlib.import_module(f"{cli.ensure_addon().__name__}.operators.demo")
folder = Path(sys.argv[1])
folder.mkdir(parents=True, exist_ok=True)
for spec in sys.argv[2:]:
    name, kind, frames = spec.split(":")
    demo.build_demo_scene(frames=int(frames))
    if kind == "far":
        lift = bpy.data.objects.new("Lift", None)
        bpy.context.scene.collection.objects.link(lift)
        lift.location = (0.0, 0.0, 3.0)
        bpy.data.objects["Target"].parent = lift
    elif kind == "ik":
        arm = bpy.data.objects["Arm"]
        arm.articulate.chains.clear()
        ik = arm.pose.bones["Wrist"].constraints.new("IK")
        ik.target, ik.chain_count = bpy.data.objects["Target"], 3
    bpy.ops.wm.save_as_mainfile(filepath=str(folder / f"{name}.blend"))
sys.stdout.flush()
os._exit(0)  # bpy 4.2 may crash at interpreter teardown; every file is saved
