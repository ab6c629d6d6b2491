# SPDX-License-Identifier: GPL-3.0-or-later
"""The same scene baked twice gives identical keys and an identical report apart from timings.

The second bake runs as another machine would: the file copied to another folder, run from
another working directory, with OpenBLAS forced onto another CPU's kernels (Sandybridge: no FMA)
and a different thread count asked for. The float64 solver maths then differs in its last bits;
the keys (Blender's float32) and the report (rounded to 1e-12) must not.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from baked_keys import fcurve_keys, report_without_timings

REPO_ROOT = Path(__file__).resolve().parents[2]
CLI = REPO_ROOT / "cli.py"

# Four limb chains with poles and hinge limits (Rigify's metarig), built in a child process:
# enabling Rigify in the test process makes the bpy module of 4.2 segfault at exit.
_BUILD = """
import importlib, os, sys
sys.path.insert(0, sys.argv[2])
import bpy
import cli
examples = importlib.import_module(cli.ensure_addon().__name__ + ".operators.examples")
examples.build_metarig_scene(frames=40, solver="auto")
ok = bpy.ops.wm.save_as_mainfile(filepath=sys.argv[1]) == {"FINISHED"}
sys.stdout.flush()
os._exit(0 if ok else 1)
"""


@pytest.fixture(scope="module")
def metarig_blend(addon, blend_from_script):
    return blend_from_script(_BUILD, "determinism_metarig", REPO_ROOT)


def bake(blend: Path, folder: Path, solver: str, env_extra: dict) -> tuple[Path, Path]:
    """`cli.py bake` of ``blend`` run from ``folder``; returns the baked file and the report."""
    folder.mkdir()
    out, report = folder / "baked.blend", folder / "report.json"
    env = {**os.environ, "BLENDER_USER_RESOURCES": str(folder / "user"), **env_extra}
    proc = subprocess.run([sys.executable, str(CLI), "bake", str(blend), "--armature", "Metarig", "--solver", solver,
                           "--out", str(out), "--report", str(report)],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return out, report


@pytest.mark.slow
@pytest.mark.parametrize("solver", ["chain", "dls", "fabrik"])
def test_bake_is_identical_on_another_machine(metarig_blend, tmp_path, solver):
    """Keys bytewise equal, report equal but for `seconds`, whatever the folder and the CPU's kernels."""
    here_out, here_report = bake(metarig_blend, tmp_path / "here", solver, {})
    copy = tmp_path / "elsewhere" / "shots" / "metarig.blend"
    copy.parent.mkdir(parents=True)
    shutil.copy(metarig_blend, copy)
    there_out, there_report = bake(copy, tmp_path / "there", solver,
                                   {"OPENBLAS_CORETYPE": "Sandybridge", "OPENBLAS_NUM_THREADS": "1"})
    here, there = report_without_timings(here_report), report_without_timings(there_report)
    assert here == there
    assert len(here["chains"]) == 4 and len(here["frames"]) == 40
    keys = fcurve_keys(here_out)
    assert len(keys) >= 4 * 2 * 4  # four limbs, two bones each, four quaternion channels
    assert keys == fcurve_keys(there_out)
