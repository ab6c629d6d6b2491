# SPDX-License-Identifier: GPL-3.0-or-later
"""IK to FK and back on Rigify's generated human rig (issue 15 item 2), against Rigify's own snap bakes.

Run from the repo root with a bpy venv:
``.venvs/5.0.1/bin/python bench/bench_ik_fk.py [--frames 250] [--json] [--quick]``

Protocol. Rigify's human metarig is generated in a child process (not timed) with its hand and foot IK
controls keyed on every frame (``tests/blender/parity_scenes.RIGIFY_SCRIPT``). Each route starts from a
freshly opened copy of that file.

- **IK to FK.** The playback positions of every limb bone (the ORG arm and leg bones' heads and tails)
  with the IK switches on are the reference. Articulate: ``articulate.ik_to_fk`` over the range (it keys
  the FK controls and the switches, and measures itself by playback; that measurement is in its time).
  Rigify: its generated rig UI's "FK->IK" "Action" buttons, ``pose.rigify_generic_snap_bake_<rig_id>``
  with the properties its panel passes, one call per limb, over the same range; Rigify leaves the
  IK_FK switch to the user, so the bench keys it to FK afterwards (not timed). Score: with the switches
  at FK, every limb bone's head and tail against the reference, over every frame.
- **FK to IK.** Starting from Articulate's IK-to-FK result (FK controls keyed on every frame, switches at FK),
  the IK controls' keys are removed and the controls moved away, so only the placement can bring the IK
  back onto the FK pose. Articulate: ``articulate.fk_to_ik``; Rigify: "IK->FK" "Action",
  ``pose.rigify_limb_ik2fk_bake_<rig_id>`` (or the leg's roll variant) per limb; the bench keys the switch
  to IK afterwards for Rigify. Score: with the switches at IK, limb bones against the FK pose.

Times are the operator calls alone (seconds, one run each after the rig UI is registered), and the
ratio Rigify / Articulate (above 1: Articulate is faster).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="articulate-bench-"))
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "blender"))

import bpy  # noqa: E402
import numpy as np  # noqa: E402
import parity_scenes as ps  # noqa: E402
from blender_output import stdout_to_stderr  # noqa: E402

import cli  # noqa: E402

IK_CONTROLS = tuple(f"{name}.{side}" for name in ("hand_ik", "foot_ik", "upper_arm_ik_target", "thigh_ik_target")
                    for side in "LR")
# One Rigify bake button: its operator id and the properties the rig UI sets on it.
_BUTTON = re.compile(r"props = \w+\.operator\('(pose\.rigify_[a-z0-9_]+_bake_\w+)'[^\n]*\n"
                     r"((?:[ \t]+props\.\w+ = [^\n]*\n)+)")
_PROP = re.compile(r"props\.(\w+) = (.*)")


def _rigify_buttons(rig_ui: str) -> dict[str, list[tuple[str, dict]]]:
    """The rig UI's bake buttons by direction: ``ik_to_fk`` (Rigify's "FK->IK") and ``fk_to_ik`` ("IK->FK")."""
    out: dict[str, list[tuple[str, dict]]] = {"ik_to_fk": [], "fk_to_ik": []}
    seen = set()
    for op, body in _BUTTON.findall(rig_ui):
        props = {name: eval(value, {}) for name, value in _PROP.findall(body)}  # noqa: S307 (Rigify's own literals)
        key = (op, json.dumps(props, sort_keys=True))
        if key in seen:
            continue
        seen.add(key)
        if "generic_snap_bake" in op:
            out["ik_to_fk"].append((op, props))
        elif "ik2fk" in op:
            out["fk_to_ik"].append((op, props))
    return out


def _register_rig_ui() -> dict[str, list[tuple[str, dict]]]:
    """Run the generated rig's UI script (as Blender does with trusted scripts) so its operators exist."""
    text = bpy.data.texts["rig_ui.py"].as_string()
    if not hasattr(bpy.types.WindowManager, "rigify_transfer_use_frame_range"):
        # dont_inherit: this module's ``from __future__ import annotations`` would turn the script's property
        # annotations into strings, and Blender would register its operators without their properties
        exec(compile(text, "rig_ui.py", "exec", dont_inherit=True), {"__name__": "rig_ui"})  # noqa: S102
    return _rigify_buttons(text)


def _open(path: Path, frames: int) -> bpy.types.Object:
    with stdout_to_stderr():
        return ps.open_rigify_rig(path, frames)


def _key_switches(addon, rig: bpy.types.Object, value: float, frames: int) -> None:
    """Key every limb's IK_FK switch to ``value`` on the range (what Rigify's bake leaves to the user)."""
    body_controls = importlib.import_module(f"{addon.__name__}.operators.bridge.body_controls")
    paths = [f'pose.bones["{name}"]["{body_controls.IK_FK_PROPERTY}"]' for name in ps.SWITCHES]
    body_controls.key_constant(bpy.context, rig, paths, [value] * len(paths), 1, frames)


def _unkey_ik_controls(addon, rig: bpy.types.Object, frames: int) -> None:
    """Take the IK controls' keys off and move them away: only a placement can bring the IK back."""
    compat = importlib.import_module(f"{addon.__name__}.operators.compat")
    names = [name for name in IK_CONTROLS if name in rig.pose.bones]
    compat.clear_range(rig, 1, frames, {compat.bone_data_path(name, path) for name in names
                                        for path in ("location", "rotation_quaternion", "rotation_euler")})
    for name in names:
        rig.pose.bones[name].location = (0.3, 0.2, 0.1)


def _rigify_call(op_id: str, props: dict, frames: int) -> str:
    """Run one of the rig UI's bake buttons over 1..frames; return its error ("" when it ran)."""
    wm = bpy.context.window_manager
    wm.rigify_transfer_use_frame_range = True
    wm.rigify_transfer_start_frame, wm.rigify_transfer_end_frame = 1, frames
    category, name = op_id.split(".", 1)
    try:
        getattr(getattr(bpy.ops, category), name)(**props)
    except RuntimeError as err:  # Rigify reports its exceptions as operator errors
        return str(err).splitlines()[-1]
    return ""


def _score(err: np.ndarray) -> dict:
    return {"max_mm": float(err.max() * 1000), "median_mm": float(np.median(err) * 1000),
            "frames_over_1mm": int((err.max(axis=1) > 1e-3).sum())}


def run(addon, frames: int) -> dict:
    """Both directions by both routes on a fresh Rigify rig of ``frames`` frames; ``addon``: the enabled add-on."""
    work = Path(tempfile.mkdtemp(prefix="articulate-bench-ikfk-"))
    source = ps.make_rigify_blend(work / "rigify.blend", frames)
    results: dict = {"frames": frames, "rows": []}

    # IK to FK
    rig = _open(source, frames)
    buttons = _register_rig_ui()
    reference = ps.limb_points(rig, frames)
    t0 = time.perf_counter()
    with stdout_to_stderr():
        done = bpy.ops.articulate.ik_to_fk(use_scene_settings=False, frame_start=1, frame_end=frames)
    seconds = time.perf_counter() - t0
    assert done == {"FINISHED"}, done
    err = np.linalg.norm(ps.limb_points(rig, frames) - reference, axis=-1)
    results["rows"].append({"direction": "ik_to_fk", "route": "articulate", "seconds": seconds, **_score(err)})
    fk_source = work / "fk.blend"
    with stdout_to_stderr():
        bpy.ops.wm.save_as_mainfile(filepath=str(fk_source), copy=True)

    rig = _open(source, frames)
    t0 = time.perf_counter()
    with stdout_to_stderr():
        failed = [e for op_id, props in buttons["ik_to_fk"] if (e := _rigify_call(op_id, props, frames))]
    seconds = time.perf_counter() - t0
    _key_switches(addon, rig, 1.0, frames)
    err = np.linalg.norm(ps.limb_points(rig, frames) - reference, axis=-1)
    results["rows"].append({"direction": "ik_to_fk", "route": "rigify", "seconds": seconds, "limbs":
                            len(buttons["ik_to_fk"]), "failed": failed, **_score(err)})

    # FK to IK, from Articulate's IK-to-FK result
    for route in ("articulate", "rigify"):
        rig = _open(fk_source, frames)
        reference = ps.limb_points(rig, frames)
        _unkey_ik_controls(addon, rig, frames)
        failed = []
        t0 = time.perf_counter()
        with stdout_to_stderr():
            if route == "articulate":
                done = bpy.ops.articulate.fk_to_ik(use_scene_settings=False, frame_start=1, frame_end=frames)
                assert done == {"FINISHED"}, done
            else:
                failed = [e for op_id, props in buttons["fk_to_ik"] if (e := _rigify_call(op_id, props, frames))]
        seconds = time.perf_counter() - t0
        if route == "rigify":
            _key_switches(addon, rig, 0.0, frames)
        err = np.linalg.norm(ps.limb_points(rig, frames) - reference, axis=-1)
        row = {"direction": "fk_to_ik", "route": route, "seconds": seconds, **_score(err)}
        if route == "rigify":
            row.update(limbs=len(buttons["fk_to_ik"]), failed=failed)
        results["rows"].append(row)

    for direction in ("ik_to_fk", "fk_to_ik"):
        ours, theirs = (next(r for r in results["rows"] if r["direction"] == direction and r["route"] == route)
                        for route in ("articulate", "rigify"))
        ours["speedup_vs_rigify"] = theirs["seconds"] / ours["seconds"]
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=250)
    parser.add_argument("--json", action="store_true", help="print the results as JSON as well")
    parser.add_argument("--quick", action="store_true", help="40 frames, for a development run")
    args = parser.parse_args(argv)
    if args.quick:
        args.frames = 40
    results = run(cli.ensure_addon(), args.frames)
    print(f"Rigify human rig, 4 limbs, {args.frames} frames, bpy {bpy.app.version_string}")
    print(f"{'direction':9} {'route':10} {'seconds':>8} {'max mm':>9} {'median mm':>10} {'frames >1mm':>11} "
          f"{'rigify/ours':>11}")
    for r in results["rows"]:
        ratio = f"{r['speedup_vs_rigify']:.2f}x" if "speedup_vs_rigify" in r else ""
        print(f"{r['direction']:9} {r['route']:10} {r['seconds']:8.2f} {r['max_mm']:9.4f} {r['median_mm']:10.4f} "
              f"{r['frames_over_1mm']:11d} {ratio:>11}")
    for r in results["rows"]:
        for error in r.get("failed", ()):
            print(f"  {r['direction']} {r['route']}: a limb's bake failed: {error}")
    if args.json:
        print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
