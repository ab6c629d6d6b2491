# SPDX-License-Identifier: GPL-3.0-or-later
"""Random rigs through Chains from IK Constraints and the bake, checked against playback.

Run from the repo root with a bpy venv::

    .venvs/5.0.1/bin/python dev/fuzz_bake.py [--seconds 300] [--first-seed 1000] [--seeds 5360,2038] [--frames 24]

Each seed builds an empty scene with a random armature (a chain of 1-7 bones in random directions,
sometimes a side branch, a uniform scale and a turn), random IK limits and locks, IK Stretch and
rotation modes per bone, an IK constraint on the last bone (random chain length, Use Tail, Stretch,
weight, a pole, iTaSC) and sometimes a second one further up (chains sharing bones: a tree), the
targets keyed along a path that leaves the chain's reach. Then ``articulate.chains_from_constraints``
and ``articulate.bake`` with their defaults (and, unless ``--plain``, the rig features and bake options
of ``extras``), the report compared with playback (the parity scenes' scoring,
``tests/blender/parity_scenes.py``). Printed: a bake that fails with a traceback, an "unexpected
error" report or an exception other than the operator's error report (``EXC``), a failed bake that
changed the scene (``CHANGED``), keys outside the range lost (``LOST``), and a report that disagrees
with playback (``DISAGREE``, with ``--seeds`` the chains, constraints and bones too). Skipped from
the comparison, as the scoring cannot judge them: targets with rotation, two chains of the same
bones, and rigs the bake warns Blender plays back unsteadily (IK chains sharing bones from different
root bones: the same keys give one of two poses per evaluation). Influence stays 1 (the scoring's
goals at partial influence assume no chain above). Unless ``--plain``, a bake that agrees is then
put through the other chain operators (``_afterwards``: Solve Current Frame, Find Alternative Poses and
Use Pose, Write Limits to Blender IK, Clear Baked Range), each checked for tracebacks and lost keys.

A development tool: its findings become tests (``tests/core/solvers/test_random_rigs.py``,
``tests/blender/test_bake_operator.py``, ``tests/blender/test_honest_bakes.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="articulate-fuzz-"))
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "blender"))

import bpy  # noqa: E402
import numpy as np  # noqa: E402
import parity_scenes as ps  # noqa: E402

import cli  # noqa: E402


def build(seed: int, frames: int) -> tuple[bpy.types.Object, dict]:
    """The random scene of ``seed``; returns the armature and the IK settings drawn."""
    rng = np.random.default_rng(seed)
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    count = int(rng.integers(1, 8))
    points = [np.zeros(3)]
    for _ in range(count):
        d = rng.normal(size=3)
        points.append(points[-1] + d / np.linalg.norm(d) * rng.uniform(0.05, 0.6))
    names = [f"B{k}" for k in range(count)]
    spec = ps.chain_bones(names, points)
    if count > 2 and rng.random() < 0.3:
        j = int(rng.integers(0, count - 1))
        spec.append(("S", tuple(points[j + 1]), tuple(points[j + 1] + rng.normal(size=3) * 0.3), names[j], False))
    arm = ps.armature("Rig", spec)
    if rng.random() < 0.3:
        arm.scale = (float(rng.uniform(0.3, 3.0)),) * 3
    if rng.random() < 0.3:
        arm.rotation_euler = tuple(rng.normal(size=3))
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="POSE")
    for pb in arm.pose.bones:
        if rng.random() < 0.5:
            for axis in "xyz":
                if rng.random() < 0.6:
                    low = rng.uniform(-180, 180)
                    high = low + rng.choice([0.0, rng.uniform(0, 5), rng.uniform(0, 200)])
                    ps.ik_limits(pb, **{axis: (low, min(high, 180))})
                if rng.random() < 0.15:
                    setattr(pb, f"lock_ik_{axis}", True)
        if rng.random() < 0.2:
            pb.ik_stretch = float(rng.uniform(0, 1))
        pb.rotation_mode = str(rng.choice(["QUATERNION", "XYZ", "ZXY", "AXIS_ANGLE"]))
    bpy.ops.object.mode_set(mode="OBJECT")
    reach = float(sum(np.linalg.norm(np.diff(np.array(points), axis=0), axis=1))) * float(np.mean(arm.scale))
    root = np.array(arm.matrix_world @ arm.data.bones[names[0]].head_local)
    path = ps.target_path(frames, root, reach, phase=float(rng.uniform(0, 6)), out=bool(rng.random() < 0.7))
    target = ps.empty("Target")
    ps.key_locations(target, path, range(1, frames + 1))
    settings = {}
    if rng.random() < 0.3:
        settings["use_tail"] = False
    if rng.random() < 0.3:
        settings["use_stretch"] = False
    if rng.random() < 0.2:
        settings["use_rotation"] = True
    if rng.random() < 0.2:
        settings["weight"] = float(rng.uniform(0.01, 1))
    con = ps.add_ik(arm.pose.bones[names[-1]], target, chain_count=int(rng.integers(0, count + 2)), **settings)
    if rng.random() < 0.3:
        con.pole_target = ps.empty("Pole", tuple(rng.normal(size=3)))
        con.pole_angle = float(rng.uniform(-3, 3))
    if count > 2 and rng.random() < 0.3:
        second = ps.empty("Target2")
        ps.key_locations(second, path[::-1] * 0.9, range(1, frames + 1))
        ps.add_ik(arm.pose.bones[names[int(rng.integers(1, count - 1))]], second, chain_count=int(rng.integers(0, 4)))
    if rng.random() < 0.15:
        arm.pose.ik_solver = "ITASC"
    return arm, settings


def extras(arm: bpy.types.Object, seed: int, frames: int) -> dict:
    """More of what rigs carry, drawn from a second stream of ``seed`` (the base scene stays that of ``build``).

    Limit Rotation and Copy Rotation constraints, bones that do not inherit rotation or scale, a
    random roll, a keyed scale, the armature carried by a moving parent, keys outside the baked
    range (which the bake must keep), a Damped Track or Track To made an aim chain, and the bake's
    own options (frame step, key reduction, missed-frame markers). Returns the bake options, the keys
    outside the range to check and whether to convert the track constraint.
    """
    rng = np.random.default_rng([seed, 1])
    names = [b.name for b in arm.data.bones]
    if rng.random() < 0.3:
        bpy.context.view_layer.objects.active = arm
        bpy.ops.object.mode_set(mode="EDIT")
        for eb in arm.data.edit_bones:
            if rng.random() < 0.2:
                eb.roll = float(rng.uniform(-np.pi, np.pi))
            if eb.parent is not None and rng.random() < 0.15:
                eb.use_inherit_rotation = False
            if eb.parent is not None and rng.random() < 0.15:
                eb.inherit_scale = str(rng.choice(["NONE", "ALIGNED", "NONE_LEGACY", "AVERAGE"]))
        bpy.ops.object.mode_set(mode="OBJECT")
    for pb in arm.pose.bones:
        if rng.random() < 0.12:
            limit = pb.constraints.new("LIMIT_ROTATION")
            limit.owner_space = "LOCAL"
            for axis in "xyz":
                if rng.random() < 0.5:
                    low = float(rng.uniform(-np.pi, np.pi))
                    setattr(limit, f"use_limit_{axis}", True)
                    setattr(limit, f"min_{axis}", low)
                    setattr(limit, f"max_{axis}", min(low + float(rng.uniform(0, 3)), np.pi))
        if rng.random() < 0.06:
            turner = ps.empty(f"Turner{pb.name}")
            turner.rotation_euler = tuple(rng.normal(size=3))
            copy = pb.constraints.new("COPY_ROTATION")
            copy.target, copy.influence = turner, float(rng.uniform(0.2, 1.0))
        if rng.random() < 0.08:
            pb.scale = tuple(rng.uniform(0.5, 1.5, size=3))
            pb.keyframe_insert("scale", frame=1)
    if rng.random() < 0.2:
        carrier = ps.empty("Carrier")
        arm.parent = carrier
        for f in (1, frames):
            carrier.location = tuple(rng.normal(size=3) * 0.5)
            carrier.rotation_euler = tuple(rng.normal(size=3) * 0.5)
            carrier.keyframe_insert("location", frame=f)
            carrier.keyframe_insert("rotation_euler", frame=f)
    outside = {}
    if rng.random() < 0.25:
        pb = arm.pose.bones[str(rng.choice(names))]
        pb.rotation_mode = "XYZ"
        for f in (-5, frames + 10):
            pb.rotation_euler = tuple(rng.normal(size=3) * 0.3)
            pb.keyframe_insert("rotation_euler", frame=f)
            outside[(pb.name, f)] = tuple(pb.rotation_euler)
        pb.rotation_euler = (0.0, 0.0, 0.0)
    aim = False
    if rng.random() < 0.2:  # a Damped Track or Track To on a bone, for Aim Chains from Track Constraints
        pb = arm.pose.bones[str(rng.choice(names))]
        looked_at = ps.empty("Looked At")
        ps.key_locations(looked_at, rng.normal(size=(2, 3)) * 2.0, (1, frames))
        track = pb.constraints.new(str(rng.choice(["DAMPED_TRACK", "TRACK_TO"])))
        track.target = looked_at
        track.track_axis = str(rng.choice(["TRACK_X", "TRACK_Y", "TRACK_Z", "TRACK_NEGATIVE_Y"]))
        if track.type == "TRACK_TO":
            track.up_axis = str(rng.choice(["UP_X", "UP_Y", "UP_Z"]))
        track.influence = float(rng.choice([1.0, rng.uniform(0.1, 1.0)]))
        aim = True
    options = {}
    if rng.random() < 0.2:
        options["frame_step"] = int(rng.integers(2, 4))
    if rng.random() < 0.3:
        options["key_tolerance"] = float(rng.uniform(0.0005, 0.02))
    if rng.random() < 0.3:
        options["mark_missed"] = True
    return {"options": options, "outside": outside, "aim": aim}


def _outside_lost(arm: bpy.types.Object, outside: dict) -> list[str]:
    """Keys outside the baked range that the bake changed or removed."""
    lost = []
    for (bone, frame), values in outside.items():
        for axis, value in enumerate(values):
            fc = next((c for c in ps._fcurves(arm) if c.data_path == f'pose.bones["{bone}"].rotation_euler'
                       and c.array_index == axis), None)
            if fc is None or abs(fc.evaluate(frame) - value) > 1e-5:
                lost.append(f"{bone} rotation_euler[{axis}] at frame {frame}")
    return lost


def _judged_apart(disagreement: str, report: dict, options: dict) -> bool:
    """Whether a "report converged=False" disagreement is the report judging by another rule, not an error.

    The solver judges its own residual against the tolerance; playback is judged with a float slack
    (``ps.FLOAT_SLACK_M``), so a frame the solver missed by less than that plays "within". Reduced keys
    widen a chain's ``tolerance_m`` by the reduction's: a frame the solver missed by less still counts
    as missed. Either way "converged" implies "within tolerance", not the other way round.
    """
    if "report converged=False" not in disagreement:
        return False
    if options.get("key_tolerance"):
        return True
    chain = disagreement.split(" frame ")[0]
    frame = int(disagreement.split(" frame ")[1].split(":")[0])
    entry = next(c for c in report["chains"] if c["chain"] == chain)
    solver_error = entry["solver_position_error_m"][report["frames"].index(frame)]
    return solver_error <= entry["tolerance_m"] + ps.FLOAT_SLACK_M


def _state(scene: bpy.types.Scene) -> tuple:
    """What a failed bake must leave as it was: constraints' mute and influence, every F-curve's keys, the pose
    channels, the markers and the current frame."""
    keys, channels, cons = [], [], []
    for obj in scene.objects:
        for fc in ps._fcurves(obj):
            co = np.empty(2 * len(fc.keyframe_points), dtype=np.float32)
            fc.keyframe_points.foreach_get("co", co)
            keys.append((obj.name, fc.data_path, fc.array_index, tuple(np.round(co, 5))))
        if obj.pose is not None:
            for pb in obj.pose.bones:
                channels.append((obj.name, pb.name, tuple(np.round(np.array(pb.matrix_basis), 5).ravel())))
                cons += [(obj.name, pb.name, c.name, c.mute, round(c.influence, 6)) for c in pb.constraints]
    return (tuple(sorted(keys)), tuple(channels), tuple(cons),
            tuple((m.name, m.frame) for m in scene.timeline_markers), scene.frame_current)


def _afterwards(arm: bpy.types.Object, seed: int, frames: int, outside: dict) -> str:
    """The other chain operators on the baked rig: Solve Current Frame, Find Alternative Poses and Use Pose, Write
    Limits to Blender IK, Clear Baked Range (keys outside the range kept). Returns what went wrong ("" if nothing)."""
    rng = np.random.default_rng([seed, 2])
    scene = bpy.context.scene
    scene.frame_set(int(rng.integers(1, frames + 1)))
    bpy.context.view_layer.objects.active = arm
    arm.articulate.active_chain = int(rng.integers(len(arm.articulate.chains)))
    steps = [("solve_frame", lambda: bpy.ops.articulate.solve_frame()),
             ("chain_alternatives", lambda: bpy.ops.articulate.chain_alternatives()),
             ("chain_use_alternative", lambda: bpy.ops.articulate.chain_use_alternative()
              if len(arm.articulate.alternatives) else {"FINISHED"}),
             ("limits_to_ik", lambda: bpy.ops.articulate.limits_to_ik()),
             ("clear_bake", lambda: bpy.ops.articulate.clear_bake(use_scene_settings=False, frame_start=1,
                                                                  frame_end=frames))]
    for name, run in steps:
        try:
            run()
        except RuntimeError as err:  # an operator's error report: fine unless it carries a traceback
            if "Traceback" in str(err) or "unexpected error" in str(err):
                return f"EXC {name}: {err}"
        except Exception as err:  # noqa: BLE001 (anything else is a finding)
            return f"EXC {name}: {type(err).__name__}: {err}\n{traceback.format_exc(limit=-4)}"
    lost = _outside_lost(arm, outside)
    return f"LOST by clear_bake: {lost[:3]}" if lost else ""


def check(seed: int, frames: int, verbose: bool, more: bool = True) -> str:
    """Bake the scene of ``seed`` and compare its report with playback; returns what went wrong ("" if nothing)."""
    arm, settings = build(seed, frames)
    drawn = extras(arm, seed, frames) if more else {"options": {}, "outside": {}, "aim": False}
    bpy.context.view_layer.objects.active = arm
    specs = ps.live_iks(arm)
    report_path = Path(tempfile.mkdtemp(prefix="articulate-fuzz-")) / "report.json"
    before = None
    try:
        bpy.ops.articulate.chains_from_constraints()
        if drawn["aim"]:
            bpy.ops.articulate.aim_chains_from_tracks()
        bpy.context.scene.frame_set(bpy.context.scene.frame_current)  # channels as the keys give them
        before = _state(bpy.context.scene)
        result = bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=frames,
                                         report_path=str(report_path), **drawn["options"])
    except RuntimeError as err:  # an operator's error report: fine unless it carries a traceback
        if "Traceback" in str(err) or "unexpected error" in str(err):
            return f"EXC {err}"
        if before is not None and _state(bpy.context.scene) != before:
            return f"CHANGED by a failed bake ({str(err).strip()[:200]})"
        return ""
    except Exception as err:  # noqa: BLE001 (anything else is a finding)
        return f"EXC {type(err).__name__}: {err}\n{traceback.format_exc(limit=-4)}"
    if "FINISHED" not in result:
        return ""
    lost = _outside_lost(arm, drawn["outside"])
    if lost:
        return f"LOST keys outside the range: {lost[:3]}"
    if not specs or settings.get("use_rotation"):
        return ""
    if len({s.bones for s in specs}) < len(specs):
        return ""
    report = json.loads(report_path.read_text())
    if any("order that can change between evaluations" in w for w in report["warnings"]):
        return ""  # Blender's own playback of these bones is not repeatable, and the bake says so
    scored = ps.score(arm, specs, report["frames"])  # the frames baked (every n-th with a frame step)
    disagreements = [d for d in ps.compare_report(report, specs, scored["residual_m"])
                     if not _judged_apart(d, report, drawn["options"])]
    if not disagreements:
        return _afterwards(arm, seed, frames, drawn["outside"]) if more else ""
    out = f"DISAGREE {disagreements[:3]}"
    if verbose:
        out += "".join(f"\n  chain {c['chain']} bones {c['bones']} solver {c['solver']} reasons {c['reasons'][:1]}"
                       for c in report["chains"])
        out += "".join(f"\n  {s}" for s in specs)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=300.0, help="stop starting new seeds after this long")
    parser.add_argument("--first-seed", type=int, default=1000)
    parser.add_argument("--seeds", default="", help="comma-separated seeds to run (verbose) instead")
    parser.add_argument("--frames", type=int, default=24)
    parser.add_argument("--plain", action="store_true", help="the base scenes only (no extras())")
    args = parser.parse_args()
    cli.ensure_addon()
    chosen = [int(s) for s in args.seeds.split(",") if s]
    seeds = iter(chosen) if chosen else iter(range(args.first_seed, sys.maxsize))
    end = time.time() + args.seconds
    runs = found = 0
    for seed in seeds:
        if not chosen and time.time() > end:
            break
        finding = check(seed, args.frames, verbose=bool(chosen), more=not args.plain)
        runs += 1
        if finding:
            found += 1
            print(f"seed {seed}: {finding}", flush=True)
    print(f"{runs} seeds, {found} findings")
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.exit(code)
