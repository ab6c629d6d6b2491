# SPDX-License-Identifier: GPL-3.0-or-later
"""Whole-process bake against Blender's route (issue 12): a metarig rigged for Blender's IK, ~5 % out of reach.

Run from the repo root with a bpy venv:
``.venvs/5.0.1/bin/python bench/bench_bake_process.py [--frames 1000] [--repeat 3] [--out-share 0.05]
[--baseline DIR] [--json] [--quick]`` (also ``.venvs/4.5.15`` and ``.venvs/4.2.23``; ``--quick`` is 200
frames, one repeat). ``--baseline /work/main`` runs that checkout's ``cli.py`` as a third route, interleaved
with the others: a change's before and after, paired, in one run.

Protocol. The scene is the bundled example (``build_metarig_scene``: Rigify's basic human metarig,
animated wrist and ankle targets, a pole empty per limb, elbow and knee hinge limits, upper arm and
thigh twist limits) turned into a rig made for Blender's IK, as a user would bring it: Articulate's
chains removed, an IK constraint on each forearm and shin with Blender's defaults (chain_count 2,
use_tail, 500 iterations), its target and pole empties, and the pole angle whose solved bend plane
points closest to the pole (searched once, untimed; the rigger's job). Two takes are saved as
.blend files: every target in reach, and the same take with smooth excursions that carry each
target beyond its limb's reach (shoulder or hip to target farther than the lower bone's tail gets
as the elbow or knee turns through its IK range, by more than 0.1 mm: the metarig's rest pose is
bent and its hinges stop there, so the two bones' lengths overstate it) on about
``--out-share`` of each chain's frames.

Each route runs as the whole process a user runs, timed from launch to exit (interpreter start,
``import bpy``, opening the file, baking, saving):

- Articulate: ``python cli.py bake IN --armature Metarig --frames 1-N --from-constraints --out OUT
  --report REPORT`` with default settings (solver Auto, converted constraints muted, every frame
  measured by playback). Its report's ``seconds`` split the bake: sampling, solving and keying
  ("solve" holds the keying too), the report ("write") and the playback measurement ("verify").
- Blender: a script that opens IN, selects the eight chain bones in pose mode, calls
  ``nla.bake(frame_start=1, frame_end=N, only_selected=True, visual_keying=True,
  clear_constraints=False, bake_types={'POSE'})`` (timed on its own too) and saves OUT.

Routes are interleaved and repeated; the median is reported, of wall time and of CPU time (user + system,
every thread: less swayed by other work on the machine). The last output of each is scored
by the same code: every IK constraint muted so the keys are what plays, then per frame and chain
the distance from the tip bone's tail to its target (median, p95, and the median over frames in
reach), pops (a chain bone's head moving more than 5 cm while its target moves less than 1 cm),
and joint-limit violations of ``matrix_basis`` as Euler XYZ against the bones' IK limits
(> 1e-3 rad). Goals (issue 12): the whole process no slower than Blender's, the solve-and-write
part at least 3x faster than the ``nla.bake`` call, a lower median residual, no limit violation;
and (item 5) the take with frames out of reach at most 1.2x the in-reach take's solve time.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="articulate-bench-"))
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_bake  # noqa: E402
import bpy  # noqa: E402
import numpy as np  # noqa: E402
from blender_output import stdout_to_stderr  # noqa: E402

import cli  # noqa: E402

ARMATURE = "Metarig"
REACH_PEAK = 1.3  # an excursion carries the target out to this many times the limb's reach
WINDOW = 20  # [frames] length of one excursion
POP_MOVE_M, POP_STILL_M = 0.05, 0.01  # a chain bone moving more than this while its target holds still [m]
# Blender's route as a user scripts it: open, select the chain bones, bake, save.
BLENDER_ROUTE = '''
import json, sys, time
import bpy
src, out, start, end = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
bpy.ops.wm.open_mainfile(filepath=src)
arm = bpy.data.objects[sys.argv[5]]
bones = set()
for pb in arm.pose.bones:
    for con in pb.constraints:
        if con.type == "IK" and not con.mute:
            bone = pb if con.use_tail else pb.parent
            for _ in range(con.chain_count):
                bones.add(bone.name)
                bone = bone.parent
bpy.context.view_layer.objects.active = arm
arm.select_set(True)
bpy.ops.object.mode_set(mode="POSE")
on_pose_bone = "select" in bpy.types.PoseBone.bl_rna.properties  # 5.0 moved selection off Bone
for pb in arm.pose.bones:
    (pb if on_pose_bone else pb.bone).select = pb.name in bones
t0 = time.perf_counter()
result = bpy.ops.nla.bake(frame_start=start, frame_end=end, only_selected=True, visual_keying=True,
                          clear_constraints=False, bake_types={"POSE"})
seconds = time.perf_counter() - t0
bpy.ops.object.mode_set(mode="OBJECT")
bpy.ops.wm.save_as_mainfile(filepath=out, compress=True)
print("BAKE " + json.dumps({"result": sorted(result), "seconds": seconds}))
'''



# Scenes


def _target_path(compat, target: bpy.types.Object, frames: int) -> np.ndarray:
    """(frames, 3) the target's keyed location on frames 1..N."""
    curves = {fc.array_index: fc for fc in compat.iter_fcurves(target) if fc.data_path == "location"}
    return np.array([[curves[i].evaluate(f) for i in range(3)] for f in range(1, frames + 1)])


def excursions(path: np.ndarray, root: np.ndarray, reach: float, share: float, offset: float) -> np.ndarray:
    """``path`` (F, 3) with smooth outward excursions beyond ``reach`` of ``root`` on about ``share`` of frames.

    Each excursion lasts ``WINDOW`` frames: the target moves along the root-to-target direction out
    to ``REACH_PEAK`` x reach and back, easing in and out (sin^2), so it never jumps. Windows are
    added, spread over the take and shifted by ``offset`` (0..1) per chain, until at least
    ``share`` of the frames are out of reach.
    """
    frames = len(path)
    radius = np.linalg.norm(path - root, axis=1)
    direction = (path - root) / radius[:, None]
    for count in range(1, frames // WINDOW + 1):
        grown = radius.copy()
        for k in range(count):
            start = int((k + offset) * frames / count)
            start = min(max(start, 0), frames - WINDOW)
            bump = np.sin(np.linspace(0.0, math.pi, WINDOW)) ** 2
            span = slice(start, start + WINDOW)
            grown[span] = radius[span] + bump * np.maximum(REACH_PEAK * reach - radius[span], 0.0)
        if np.mean(grown > reach) >= share:
            break
    return root + direction * grown[:, None]


def add_skin(arm: bpy.types.Object, segments: int) -> int:
    """A body mesh deformed by the armature, each vertex weighted to its nearest bone; returns its vertex count.

    A UV sphere stretched over the metarig with one level of subdivision on top: what a character's
    mesh costs per evaluated frame, for both routes alike.
    """
    bpy.ops.mesh.primitive_uv_sphere_add(segments=segments, ring_count=segments // 2, radius=1.0)
    skin = bpy.context.object
    skin.name = "Skin"
    skin.scale = (0.45, 0.3, 0.95)
    skin.location = (0.0, 0.0, 0.95)
    bpy.ops.object.transform_apply(location=True, scale=True)
    co = np.empty(len(skin.data.vertices) * 3)
    skin.data.vertices.foreach_get("co", co)
    co = co.reshape(-1, 3)
    bones = list(arm.data.bones)
    head = np.array([b.head_local for b in bones])
    tail = np.array([b.tail_local for b in bones])
    seg = tail - head
    t = np.clip(np.einsum("vbk,bk->vb", co[:, None] - head, seg) / np.maximum(np.sum(seg * seg, axis=1), 1e-12), 0, 1)
    nearest = np.argmin(np.linalg.norm(co[:, None] - (head + t[..., None] * seg), axis=-1), axis=1)
    for k, bone in enumerate(bones):
        skin.vertex_groups.new(name=bone.name).add(np.flatnonzero(nearest == k).tolist(), 1.0, "REPLACE")
    skin.modifiers.new("Armature", "ARMATURE").object = arm
    skin.modifiers.new("Subdivision", "SUBSURF").levels = 1
    skin.parent = arm
    return len(skin.data.vertices) * 4  # one subdivision level: about four times the vertices


def limb_reach(upper, lower) -> float:
    """The farthest the lower bone's tail gets from the upper bone's head, in armature units.

    The shoulder (or hip) turns the limb rigidly about the upper bone's head, so the distance
    depends on the hinge alone: the lower bone turning about its own X axis at its head through
    its IK range (the example's elbows and knees lock Y and Z). A straight-line sum of the two
    lengths overstates it where the rest pose is bent and the range stops short of straight,
    and then counts frames a limb cannot reach as in reach.
    """
    head = np.array(upper.bone.head_local)
    pivot, tail = np.array(lower.bone.head_local), np.array(lower.bone.tail_local)
    axis = np.array(lower.bone.matrix_local.col[0][:3])
    axis /= np.linalg.norm(axis)
    lo, hi = (lower.ik_min_x, lower.ik_max_x) if lower.use_ik_limit_x else (-math.pi, math.pi)
    theta = np.linspace(lo, hi, 3601)[:, None]
    v = tail - pivot
    # Rodrigues' rotation of v about the axis by each angle.
    turned = v * np.cos(theta) + np.cross(axis, v) * np.sin(theta) + axis * (axis @ v) * (1.0 - np.cos(theta))
    return float(np.linalg.norm(pivot + turned - head, axis=1).max())


def build_ik_rig(examples, compat, frames: int, share: float, angles: list[float] | None,
                 skin: int = 0) -> tuple[dict, int]:
    """The example turned into a rig for Blender's IK, with targets out of reach on ``share`` of frames.

    ``skin``: segments of a body mesh deformed by the armature (:func:`add_skin`), 0 for none.

    Returns:
        Per chain (by the example's chain name): its pole angle [deg] and its frames out of reach (F,)
        bool; and the skin's vertex count after subdivision (0 without one).
    """
    arm, chains = bench_bake.fresh_scene(examples, frames, "two_bone")
    info = {}
    for c, ch in enumerate(chains):
        upper, lower = ch["bones"]
        root = np.array(arm.matrix_world @ upper.head)  # the torso holds still in this take
        # Out of reach: beyond the limb's reach by more than the bake's default tolerance (0.1 mm),
        # as the example's feet stand at exactly the straightest knee the limits allow.
        reach = limb_reach(upper, lower) * max(arm.matrix_world.to_scale()) + 1e-4
        path = _target_path(compat, ch["target"], frames)
        if share > 0:
            path = excursions(path, root, reach, share, offset=0.15 + 0.2 * c)
            compat.write_channels(ch["target"], [compat.Channel("location", i, "Object Transforms") for i in range(3)],
                                  np.arange(1.0, frames + 1.0), path)
        info[ch["name"]] = {"out_of_reach": np.linalg.norm(path - root, axis=1) > reach}
    arm.articulate.chains.clear()  # a rig made for Blender's IK has no Articulate chains
    skin_vertices = add_skin(arm, skin) if skin else 0
    bpy.context.view_layer.objects.active = arm
    cons = bench_bake.add_ik_constraints(arm, chains)
    if angles is None:
        angles = bench_bake.find_pole_angles(bpy.context.scene, arm, chains, cons, frames)
    for con, a, ch in zip(cons, angles, chains):
        con.pole_angle = math.radians(a)
        info[ch["name"]]["pole_angle_deg"] = a
    bpy.context.scene.frame_set(1)
    return info, skin_vertices


# Routes


def run_articulate(src: Path, out: Path, frames: int, checkout: Path = ROOT) -> dict:
    """``cli.py bake --from-constraints`` of ``checkout`` (by default this one) as a process; wall time, report."""
    report = out.with_suffix(".json")
    cmd = [sys.executable, str(checkout / "cli.py"), "bake", str(src), "--armature", ARMATURE,
           "--frames", f"1-{frames}", "--from-constraints", "--out", str(out), "--report", str(report)]
    proc, seconds, cpu = _timed_run(cmd)
    if proc.returncode not in (cli.EXIT_OK, cli.EXIT_MISSED):
        raise RuntimeError(f"cli.py bake exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    data = json.loads(report.read_text())
    return {"process_seconds": seconds, "cpu_seconds": cpu, "report": data, "exit": proc.returncode,
            "notes": [line for line in proc.stdout.splitlines() if "note:" in line]}


def run_blender(script: Path, src: Path, out: Path, frames: int) -> dict:
    """Blender's route as a process; its wall time and the ``nla.bake`` call's."""
    cmd = [sys.executable, str(script), str(src), str(out), "1", str(frames), ARMATURE]
    proc, seconds, cpu = _timed_run(cmd)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("BAKE ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"Blender's route exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    bake = json.loads(lines[-1][5:])
    if "FINISHED" not in bake["result"]:
        raise RuntimeError(f"nla.bake returned {bake['result']}")
    return {"process_seconds": seconds, "cpu_seconds": cpu, "bake_seconds": bake["seconds"]}


def _timed_run(cmd: list[str]) -> tuple[subprocess.CompletedProcess, float, float]:
    """Run a route's process; its wall time [s] and its CPU time (user + system, all its threads) [s].

    On a machine that other work loads, wall times swing with that load; CPU time much less, so
    both are reported.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_child_env())
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return proc, seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _child_env() -> dict:
    """The environment a user's process gets: its own Blender user folder, bytecode caching on.

    This machine sets ``PYTHONDONTWRITEBYTECODE``; a user's Python caches each module's bytecode
    after its first import (Blender's bundled modules and the add-on alike), so it is unset here and
    each route runs once, untimed, before the timed runs.
    """
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["BLENDER_USER_RESOURCES"] = tempfile.mkdtemp(prefix="articulate-bench-")
    return env


# Scoring


def score(path: Path, frames: int, out_of_reach: dict[str, np.ndarray]) -> dict:
    """Open a baked file, mute every IK constraint, and measure what plays (see the module docstring)."""
    bpy.ops.wm.open_mainfile(filepath=str(path))
    scene = bpy.context.scene
    arm = bpy.data.objects[ARMATURE]
    chains = []
    for pb in arm.pose.bones:
        for con in pb.constraints:
            if con.type == "IK":
                chains.append({"name": con.name, "bones": [pb.parent, pb], "target": con.target,
                               "pole": con.pole_target, "out": out_of_reach[_chain_name(pb.name)]})
                con.mute = True
    chains.sort(key=lambda ch: ch["bones"][1].name)
    sample = bench_bake.sample_pose(scene, arm, chains, range(1, frames + 1))
    residual = np.linalg.norm(sample["tip"] - sample["target"], axis=-1) * 1000.0  # (F, C) [mm]
    out = np.stack([ch["out"] for ch in chains], axis=1)
    bones = [pb for ch in chains for pb in ch["bones"]]
    excess = np.stack([bench_bake.limit_excess(pb, sample["euler"][:, k]) for k, pb in enumerate(bones)],
                      axis=1).max(axis=-1)
    moved_target = np.linalg.norm(np.diff(sample["target"], axis=0), axis=-1)  # (F-1, C)
    moved_elbow = np.linalg.norm(np.diff(sample["elbow"], axis=0), axis=-1)
    moved_tip = np.linalg.norm(np.diff(sample["tip"], axis=0), axis=-1)
    pops = int(np.count_nonzero(((moved_elbow > POP_MOVE_M) | (moved_tip > POP_MOVE_M)) & (moved_target < POP_STILL_M)))
    return {
        "median_mm": float(np.median(residual)),
        "p95_mm": float(np.percentile(residual, 95)),
        "median_in_reach_mm": float(np.median(residual[~out])),
        "max_in_reach_mm": float(residual[~out].max()),
        "pops": pops,
        "limit_violations": int(np.count_nonzero(excess > bench_bake.LIMIT_TOL)),
        "worst_violation_deg": float(np.degrees(max(excess.max(), 0.0))),
    }


def _chain_name(tip_bone: str) -> str:
    """The example's chain name of a tip bone ("forearm.L" -> "arm.L")."""
    side = tip_bone.rsplit(".", 1)[1]
    return f"arm.{side}" if tip_bone.startswith("forearm") else f"leg.{side}"


def _report_numbers(report: dict, out_of_reach: dict[str, np.ndarray]) -> dict:
    """Our report's split of the bake, and how its misses line up with the frames out of reach."""
    missed_in_reach = reached_out_of_reach = 0
    for chain in report["chains"]:
        out = out_of_reach[_chain_name(chain["bones"][-1])]
        converged = np.array(chain["converged"], dtype=bool)
        missed_in_reach += int(np.count_nonzero(~converged & ~out))
        reached_out_of_reach += int(np.count_nonzero(converged & out))
    seconds = report["seconds"]
    return {"missed_frames": len(report["missed_frames"]), "missed_in_reach": missed_in_reach,
            "converged_out_of_reach": reached_out_of_reach, "measured_by": report.get("measured_by", ""),
            "bake_seconds": seconds["total"], "solve_write_seconds": seconds["solve"] + seconds["write"],
            "split_seconds": {k: round(v, 4) for k, v in seconds.items()}}


def run_all(frames: int, share: float, repeat: int, skin: int, tmp: Path, baseline: Path | None = None) -> list[dict]:
    """Build the takes, run the routes on each ``repeat`` times (interleaved), score the last outputs.

    ``baseline``: another checkout of the add-on (such as main's worktree) whose ``cli.py bake`` runs
    as a third route, "baseline", interleaved with the others: before and after in the same run.
    """
    script = tmp / "blender_route.py"
    script.write_text(BLENDER_ROUTE)
    addon = cli.ensure_addon()
    compat = importlib.import_module(f"{addon.__name__}.operators.compat")
    examples = importlib.import_module(f"{addon.__name__}.operators.examples")
    takes: dict[str, dict] = {}
    angles = None
    out = f"{share:.0%} out"
    plan = [("in reach", 0.0, 0), (out, share, 0)] + ([(f"{out}+skin", share, skin)] if skin else [])
    for take, take_share, take_skin in plan:
        info, vertices = build_ik_rig(examples, compat, frames, take_share, angles, take_skin)
        angles = [c["pole_angle_deg"] for c in info.values()]
        src = tmp / f"take{len(takes)}.blend"
        bpy.ops.wm.save_as_mainfile(filepath=str(src))
        takes[take] = {"src": src, "info": info, "skin_vertices": vertices}
    first = next(iter(takes.values()))["src"]
    run_blender(script, first, tmp / "warm-up-blender.blend", frames)  # untimed: bytecode caches filled
    run_articulate(first, tmp / "warm-up-articulate.blend", frames)
    routes = ("blender", "articulate")
    if baseline is not None:
        run_articulate(first, tmp / "warm-up-baseline.blend", frames, baseline)
        routes += ("baseline",)
    runs: dict[tuple[str, str], list[dict]] = {}
    for _ in range(repeat):
        for take, t in takes.items():
            for route in routes:
                out = tmp / f"{route}-{t['src'].stem}.blend"
                run = (run_blender(script, t["src"], out, frames) if route == "blender"
                       else run_articulate(t["src"], out, frames, baseline if route == "baseline" else ROOT))
                runs.setdefault((take, route), []).append({**run, "out": out})
    rows = []
    for (take, route), done in runs.items():
        out_of_reach = {name: c["out_of_reach"] for name, c in takes[take]["info"].items()}
        row = {"take": take, "route": route, "frames": frames, "repeats": len(done),
               "skin_vertices": takes[take]["skin_vertices"],
               "share_out_of_reach": float(np.mean(np.concatenate(list(out_of_reach.values())))),
               "process_seconds": float(np.median([r["process_seconds"] for r in done])),
               "process_seconds_all": [round(r["process_seconds"], 3) for r in done],
               "cpu_seconds": float(np.median([r["cpu_seconds"] for r in done]))}
        if route == "blender":
            row["bake_seconds"] = float(np.median([r["bake_seconds"] for r in done]))
            row["solve_write_seconds"] = None
        else:
            numbers = [_report_numbers(r["report"], out_of_reach) for r in done]
            row.update(numbers[-1])
            row["bake_seconds"] = float(np.median([n["bake_seconds"] for n in numbers]))
            row["solve_write_seconds"] = float(np.median([n["solve_write_seconds"] for n in numbers]))
            row["cli_notes"] = done[-1]["notes"]
        row.update(score(done[-1]["out"], frames, out_of_reach))
        row["pole_angle_deg"] = {name: c["pole_angle_deg"] for name, c in takes[take]["info"].items()}
        row["blender"] = bpy.app.version_string
        rows.append(row)
    return rows


def print_table(rows: list[dict], wall: float, load: float, baseline: Path | None = None) -> None:
    """One row per take and route, then the issue's ratios (and ours against the baseline's, with one)."""
    frames = rows[0]["frames"]
    print(f"Blender {bpy.app.version_string}: metarig rigged for Blender's IK, 4 limb chains, frames 1..{frames}, "
          f"{rows[0]['repeats']} repeat(s), median; {wall:.0f} s in all "
          f"(load average {load:.1f} before, {os.getloadavg()[0]:.1f} after, on {os.cpu_count()} CPUs)")
    if baseline is not None:
        print(f"'baseline': cli.py of {baseline} (its commit {_commit(baseline)}); 'articulate': this checkout "
              f"({_commit(ROOT)})")
    skins = {r["skin_vertices"] for r in rows if r["skin_vertices"]}
    if skins:
        print(f"'+skin': a body mesh of about {max(skins):,} vertices deformed by the armature")
    head = (f"{'take':13s} {'route':10s} {'process s':>9s} {'cpu s':>6s} {'bake s':>7s} {'solve+write s':>13s} "
            f"{'median mm':>10s} {'p95 mm':>8s} {'in-reach med mm':>15s} {'pops':>4s} {'limit viol':>10s} "
            f"{'missed':>6s} {'missed in reach':>15s}")
    print(head)
    for r in rows:
        sw = "-" if r["solve_write_seconds"] is None else f"{r['solve_write_seconds']:.3f}"
        missed = "-" if r["route"] == "blender" else str(r["missed_frames"])
        in_reach = "-" if r["route"] == "blender" else str(r["missed_in_reach"])
        print(f"{r['take']:13s} {r['route']:10s} {r['process_seconds']:9.2f} {r['cpu_seconds']:6.2f} "
              f"{r['bake_seconds']:7.3f} {sw:>13s} "
              f"{r['median_mm']:10.4f} {r['p95_mm']:8.2f} {r['median_in_reach_mm']:15.4f} {r['pops']:4d} "
              f"{r['limit_violations']:10d} {missed:>6s} {in_reach:>15s}")
    by = {(r["take"], r["route"]): r for r in rows}
    takes = list(dict.fromkeys(r["take"] for r in rows))
    print()
    for take in takes:
        ours, blender = by[take, "articulate"], by[take, "blender"]
        solve_write = blender["bake_seconds"] / ours["solve_write_seconds"]
        whole = blender["process_seconds"] / ours["process_seconds"]
        if (take, "baseline") in by:
            base = by[take, "baseline"]
            print(f"{take}: whole process baseline {base['process_seconds']:.2f} s -> ours "
                  f"{ours['process_seconds']:.2f} s (Blender's route {blender['process_seconds']:.2f} s; "
                  f"Blender/baseline {blender['process_seconds'] / base['process_seconds']:.2f}x); CPU time "
                  f"baseline {base['cpu_seconds']:.2f} s -> ours {ours['cpu_seconds']:.2f} s (Blender's route "
                  f"{blender['cpu_seconds']:.2f} s)")
        cpu = blender["cpu_seconds"] / ours["cpu_seconds"]
        print(f"{take}: whole process Blender/ours {whole:.2f}x "
              f"(goal >= 1: {'ok' if whole >= 1 else 'MISS'}; CPU time {cpu:.2f}x), "
              f"nla.bake call / our solve+write {solve_write:.1f}x "
              f"(goal >= 3), nla.bake call / our whole bake {blender['bake_seconds'] / ours['bake_seconds']:.1f}x; "
              f"share of chain-frames out of reach {ours['share_out_of_reach']:.1%}")
    if len(takes) >= 2:
        a, b = by[takes[1], "articulate"], by[takes[0], "articulate"]
        print(f"ours, {takes[1]} / {takes[0]}: solve+write {a['solve_write_seconds'] / b['solve_write_seconds']:.2f}x "
              f"(goal <= 1.2), whole bake {a['bake_seconds'] / b['bake_seconds']:.2f}x, "
              f"process {a['process_seconds'] / b['process_seconds']:.2f}x")


def _commit(checkout: Path) -> str:
    """The short commit of a checkout, "+changes" when its tracked files differ from it."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(checkout), *args], capture_output=True, text=True).stdout.strip()
    return git("rev-parse", "--short", "HEAD") + (" +changes" if git("status", "--porcelain", "-uno") else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out-share", type=float, default=0.05, help="share of each chain's frames out of reach")
    parser.add_argument("--skin", type=int, default=256,
                        help="segments of the skinned body mesh of the third take (0: no such take)")
    parser.add_argument("--baseline", type=Path, metavar="DIR",
                        help="another checkout of the add-on (e.g. main's worktree) run as a third route, 'baseline'")
    parser.add_argument("--json", action="store_true", help="print one JSON object per row")
    parser.add_argument("--quick", action="store_true", help="short development run: 200 frames, one repeat")
    args = parser.parse_args()
    if args.quick:
        args.frames, args.repeat = min(args.frames, 200), 1
    if args.frames < 2 * WINDOW or not 0.0 < args.out_share < 0.5 or args.repeat < 1:
        parser.error(f"need --frames >= {2 * WINDOW}, 0 < --out-share < 0.5 and --repeat >= 1")
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    with stdout_to_stderr():
        tmp = Path(tempfile.mkdtemp(prefix="articulate-bench-"))
        rows = run_all(args.frames, args.out_share, args.repeat, args.skin, tmp, args.baseline)
    print_table(rows, time.perf_counter() - t0, load, args.baseline)
    if args.json:
        for r in rows:
            print(json.dumps(r))
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # bpy 4.2's teardown can crash once Rigify is enabled (see cli._exit)
