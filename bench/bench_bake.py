# SPDX-License-Identifier: GPL-3.0-or-later
"""Bake vs Blender's IK: the metarig example's four limbs baked by Articulate and by ``nla.bake``.

Run from the repo root with a bpy venv:
``.venvs/5.0.1/bin/python bench/bench_bake.py [--frames 1000] [--repeat 3] [--json] [--quick]``
(also ``.venvs/4.5.15`` and ``.venvs/4.2.23``; ``--quick`` is 120 frames, one repeat, 50 live updates;
``--live-only`` skips the bakes and prints the live-posing rows alone).

Protocol (issue 4): same rig, targets and frames for every row, each bake on a freshly built
``build_metarig_scene(frames=N)``. Ours: ``bpy.ops.articulate.bake`` over 1..N with the
example's chains (two_bone, then dls and fabrik set on all four chains). Blender's: the chains
disabled, an IK constraint (chain_count 2, target and pole empties, use_tail, 500 iterations)
on each tip bone, then ``nla.bake`` of the 8 selected chain bones with visual keying. The pole
angle of each constraint is searched (untimed) as the one whose solved bend plane points
closest to the pole; about -90 degrees on this rig. Only the operator call is timed; routes
are interleaved and repeated, the median is reported. The last bake of each route is then
evaluated with every IK constraint muted: tip-tail to target distance, and joint-limit
violations of ``matrix_basis`` as Euler XYZ against the bones' IK limits (1e-3 rad slack).
Also reported: the cost of ``scene.frame_set`` over the take alone, and live posing (four
targets moved and ``view_layer.update()`` called 200 times with the Live toggle on; the handler's
wall time and its CPU time, which load on a shared machine moves less).
Timings on a shared machine are noisy: the header prints the load average, and the bundled
numpy's OpenBLAS threads (``OPENBLAS_NUM_THREADS``) make tiny matrix calls slower under load.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="articulate-bench-"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "blender"))

import bpy  # noqa: E402
import numpy as np  # noqa: E402
import parity_scenes as ps  # noqa: E402

import cli  # noqa: E402

LIMIT_TOL = 1e-3  # [rad] slack before a rotation counts as outside its IK limit
BEND_MIN = 0.005  # [m] a chain bent less than this has no meaningful bend plane
POLE_SAMPLE_FRAMES = 8
LIVE_UPDATES = 200
_compat = None  # the add-on's operators.compat, imported once the add-on is enabled


def fresh_scene(examples, frames: int, solver: str) -> tuple[bpy.types.Object, list[dict]]:
    """Build the example; returns the armature and per chain its bones, target and pole."""
    info = examples.build_metarig_scene(frames=frames, solver=solver)
    arm = bpy.data.objects[info["armature"]]
    chains = []
    for chain in arm.articulate.chains:
        tip = arm.pose.bones[chain.tip_bone]
        chains.append({"name": chain.name, "bones": [tip.parent, tip], "target": chain.target, "pole": chain.pole})
    return arm, chains


def limit_excess(pb: bpy.types.PoseBone, euler: np.ndarray) -> np.ndarray:
    """(F, 3) how far Euler XYZ angles ``euler`` (F, 3) lie outside the bone's IK limits [rad]."""
    out = np.zeros_like(euler)
    for n, a in enumerate("xyz"):
        if getattr(pb, f"lock_ik_{a}"):
            out[:, n] = np.abs(euler[:, n])
        elif getattr(pb, f"use_ik_limit_{a}"):
            lo, hi = getattr(pb, f"ik_min_{a}"), getattr(pb, f"ik_max_{a}")
            out[:, n] = np.maximum(np.maximum(lo - euler[:, n], euler[:, n] - hi), 0.0)
    return out


def _perp(v: np.ndarray, axis: np.ndarray) -> np.ndarray:
    return v - np.sum(v * axis, axis=-1, keepdims=True) * axis


def pole_deviation(root: np.ndarray, elbow: np.ndarray, tip: np.ndarray, pole: np.ndarray) -> np.ndarray:
    """(...) angle between the bend direction and the pole direction about the root-tip axis [rad].

    NaN where the chain is nearly straight (bend under ``BEND_MIN``), as its plane is undefined.
    """
    axis = tip - root
    axis /= np.linalg.norm(axis, axis=-1, keepdims=True)
    bend, to_pole = _perp(elbow - root, axis), _perp(pole - root, axis)
    nb, npole = np.linalg.norm(bend, axis=-1), np.linalg.norm(to_pole, axis=-1)
    cos = np.sum(bend * to_pole, axis=-1) / np.maximum(nb * npole, 1e-12)
    return np.where(nb > BEND_MIN, np.arccos(np.clip(cos, -1.0, 1.0)), np.nan)


def sample_pose(scene, arm, chains, frames) -> dict:
    """Per frame and chain: world root, elbow, tip tail, target, pole; per frame and bone: Euler XYZ."""
    F, C = len(frames), len(chains)
    pts = {k: np.empty((F, C, 3)) for k in ("root", "elbow", "tip", "target", "pole")}
    euler = np.empty((F, 2 * C, 3))
    mw = arm.matrix_world
    for i, f in enumerate(frames):
        scene.frame_set(int(f))
        for c, ch in enumerate(chains):
            upper, lower = ch["bones"]
            pts["root"][i, c] = mw @ upper.head
            pts["elbow"][i, c] = mw @ upper.tail
            pts["tip"][i, c] = mw @ lower.tail
            pts["target"][i, c] = ch["target"].matrix_world.translation
            pts["pole"][i, c] = ch["pole"].matrix_world.translation
            euler[i, 2 * c] = upper.matrix_basis.to_euler("XYZ")
            euler[i, 2 * c + 1] = lower.matrix_basis.to_euler("XYZ")
    return {**pts, "euler": euler}


def evaluate(scene, arm, chains, frames: range) -> dict:
    """Residuals, limit violations and bend-plane deviation of the baked action (IK muted)."""
    for pb in arm.pose.bones:
        for con in pb.constraints:
            if con.type == "IK":
                con.mute = True
    s = sample_pose(scene, arm, chains, frames)
    residual = np.linalg.norm(s["tip"] - s["target"], axis=-1) * 1000.0
    bones = [pb for ch in chains for pb in ch["bones"]]
    excess = np.stack([limit_excess(pb, s["euler"][:, k]) for k, pb in enumerate(bones)], axis=1).max(axis=-1)
    dev = np.degrees(pole_deviation(s["root"], s["elbow"], s["tip"], s["pole"]))
    return {
        "mean_residual_mm": float(residual.mean()),
        "max_residual_mm": float(residual.max()),
        "limit_violations": int(np.count_nonzero(excess > LIMIT_TOL)),
        "worst_violation_deg": float(np.degrees(max(excess.max(), 0.0))),
        "pole_deviation_deg": _nanmean(dev),
        "pole_deviation_by_chain_deg": {ch["name"]: _nanmean(dev[:, c]) for c, ch in enumerate(chains)},
        "keyed_frames": keyed_frames(arm, bones),
    }


def _nanmean(x: np.ndarray) -> float:
    return float(np.nanmean(x)) if np.isfinite(x).any() else float("nan")


def keyed_frames(arm, bones) -> int:
    """Fewest keys on any rotation F-curve of the chain bones (N when no frame was skipped)."""
    names = {pb.name for pb in bones}
    counts = [len(fc.keyframe_points) for fc in _compat.iter_fcurves(arm)
              if ".rotation_" in fc.data_path and fc.data_path.split('"')[1] in names]
    return min(counts, default=0)


def bake_ours(examples, frames: int, solver: str) -> tuple[float, dict]:
    """Route A on a fresh scene: Articulate's bake operator with ``solver`` on all four chains.

    Returns:
        The operator's wall time [s] and what ``ours_row`` needs.
    """
    arm, chains = fresh_scene(examples, frames, "two_bone")
    for chain in arm.articulate.chains:
        chain.solver = solver
    report_path = Path(tempfile.mkdtemp(prefix="articulate-bench-")) / "report.json"
    t0 = time.perf_counter()
    result = bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=frames,
                                     report_path=str(report_path))
    seconds = time.perf_counter() - t0
    if "FINISHED" not in result:
        raise RuntimeError(f"articulate.bake returned {result}")
    return seconds, {"arm": arm, "chains": chains, "report": json.loads(report_path.read_text())}


def ours_row(solver: str, state: dict, frames: int) -> dict:
    """The evaluated row of the current scene's Articulate bake."""
    report = state["report"]
    row = {"route": "articulate", "solver": solver, "pole_angle_deg": None,
           "missed_frames": len(report["missed_frames"]),
           "inner_seconds": {k: report["seconds"][k] for k in ("sample", "solve", "write")}}
    row.update(evaluate(bpy.context.scene, state["arm"], state["chains"], range(1, frames + 1)))
    return row


def add_ik_constraints(arm, chains) -> list:
    """Blender IK constraints on the four tip bones, the Articulate chains disabled."""
    for chain in arm.articulate.chains:
        chain.enabled = False
    cons = []
    for ch in chains:
        con = ch["bones"][1].constraints.new("IK")
        con.target, con.pole_target = ch["target"], ch["pole"]
        con.chain_count, con.use_tail, con.iterations = 2, True, 500
        cons.append(con)
    return cons


def find_pole_angles(scene, arm, chains, cons, frames: int) -> list[float]:
    """Per chain, the pole angle whose solved bend plane points closest to the pole [deg].

    Scored by the mean bend-plane deviation on a few frames spread over the take: a 5 degree
    grid shared by the four constraints (each chain is scored on its own), then 1 degree steps
    around each chain's best.
    """
    sample = np.linspace(1, frames, POLE_SAMPLE_FRAMES).round().astype(int)

    def best_of(candidates: np.ndarray) -> np.ndarray:
        """Per chain, the best of ``candidates`` (K, C) [deg]."""
        scores = []
        for angles in candidates:
            for con, a in zip(cons, angles):
                con.pole_angle = math.radians(a)
            s = sample_pose(scene, arm, chains, sample)
            scores.append(np.nanmean(pole_deviation(s["root"], s["elbow"], s["tip"], s["pole"]), axis=0))
        pick = np.nanargmin(np.array(scores), axis=0)
        return candidates[pick, np.arange(len(cons))]

    coarse = best_of(np.repeat(np.arange(-180.0, 180.0, 5.0)[:, None], len(cons), axis=1))
    fine = best_of(coarse + np.arange(-4.0, 5.0)[:, None])
    return [float((a + 180.0) % 360.0 - 180.0) for a in fine]


def bake_blender(examples, frames: int, angles: list[float] | None) -> tuple[float, dict]:
    """Route B on a fresh scene: Blender's IK constraints baked by ``nla.bake`` with visual keying.

    Args:
        examples: The add-on's ``operators.examples`` module.
        frames: Frames 1..N to bake.
        angles: Per chain pole angle [deg]; None searches them first (untimed).

    Returns:
        The operator's wall time [s] and what ``blender_row`` needs.
    """
    arm, chains = fresh_scene(examples, frames, "two_bone")
    scene = bpy.context.scene
    cons = add_ik_constraints(arm, chains)
    if angles is None:
        angles = find_pole_angles(scene, arm, chains, cons, frames)
    for con, a in zip(cons, angles):
        con.pole_angle = math.radians(a)
    scene.frame_set(1)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="POSE")
    ps.select_bones(arm, {pb.name for ch in chains for pb in ch["bones"]})
    t0 = time.perf_counter()
    result = bpy.ops.nla.bake(frame_start=1, frame_end=frames, only_selected=True, visual_keying=True,
                              clear_constraints=False, bake_types={"POSE"})
    seconds = time.perf_counter() - t0
    if "FINISHED" not in result:
        raise RuntimeError(f"nla.bake returned {result}")
    bpy.ops.object.mode_set(mode="OBJECT")
    return seconds, {"arm": arm, "chains": chains, "angles": angles}


def blender_row(state: dict, frames: int) -> dict:
    """The evaluated row of the current scene's Blender bake."""
    chains = state["chains"]
    row = {"route": "blender", "solver": "legacy IK", "missed_frames": None,
           "pole_angle_deg": {ch["name"]: a for ch, a in zip(chains, state["angles"])}}
    row.update(evaluate(bpy.context.scene, state["arm"], chains, range(1, frames + 1)))
    return row


def run_bakes(examples, frames: int, repeat: int) -> list[dict]:
    """Every route ``repeat`` times, interleaved so load drift on a shared machine hits all alike.

    Each bake runs on a fresh scene; the last repeat of each route is the one evaluated, right
    after it ran (the next route replaces the scene). Seconds are the median over repeats.
    """
    routes = ["blender", "two_bone", "dls", "fabrik"]
    times: dict[str, list[float]] = {r: [] for r in routes}
    rows: dict[str, dict] = {}
    angles = None
    for rep in range(repeat):
        for route in routes:
            if route == "blender":
                seconds, state = bake_blender(examples, frames, angles)
                angles = state["angles"]
            else:
                seconds, state = bake_ours(examples, frames, route)
            times[route].append(seconds)
            if rep == repeat - 1:
                rows[route] = blender_row(state, frames) if route == "blender" else ours_row(route, state, frames)
    blender_seconds = float(np.median(times["blender"]))
    out = []
    for route in routes[1:] + routes[:1]:
        t = float(np.median(times[route]))
        out.append({**rows[route], "frames": frames, "seconds": t, "seconds_min": min(times[route]),
                    "seconds_all": [round(x, 4) for x in times[route]], "ms_per_frame": t * 1000.0 / frames,
                    "speedup_vs_blender": blender_seconds / t, "blender": bpy.app.version_string})
    return out


def stepping_floor(examples, frames: int, angles: list[float]) -> dict:
    """Seconds of ``scene.frame_set`` over 1..N alone: the scene as Articulate samples it, then with
    Blender's IK constraints evaluating (what ``nla.bake`` steps through, without its keying)."""
    out = {}
    arm, chains = fresh_scene(examples, frames, "two_bone")
    scene = bpy.context.scene
    for key in ("no_ik", "blender_ik"):
        if key == "blender_ik":
            for con, a in zip(add_ik_constraints(arm, chains), angles):
                con.pole_angle = math.radians(a)
        t0 = time.perf_counter()
        for f in range(1, frames + 1):
            scene.frame_set(f)
        out[key] = time.perf_counter() - t0
    return out


def live_cost(examples, addon, frames: int, animated: bool, updates: int = LIVE_UPDATES) -> dict:
    """Live posing: per ``view_layer.update()`` the handler's time and the update's wall time [ms].

    The targets are set to positions along their paths. With ``animated`` False their keys are
    removed first, as re-evaluating the keys on the current frame puts them back.
    """
    live = importlib.import_module(f"{addon.__name__}.operators.live")
    arm, chains = fresh_scene(examples, frames, "two_bone")
    scene = bpy.context.scene
    # Target positions from the animation, read before Live is on so sampling does not solve.
    # The take loops (frame N poses like frame 1): stop short of N so the last pose is a new one.
    picks = np.linspace(1, frames, updates, endpoint=False).round().astype(int)
    positions = sample_pose(scene, arm, chains, picks)["target"]
    scene.frame_set(1)
    if not animated:
        for ch in chains:
            ch["target"].animation_data_clear()
    arm.articulate.live = True
    handler_ms, wall_ms = np.full(updates, np.nan), np.empty(updates)
    handler_cpu_ms = np.full(updates, np.nan)  # stays NaN with an add-on version that does not report it
    view_layer = bpy.context.view_layer
    for i in range(updates):
        for c, ch in enumerate(chains):
            ch["target"].location = positions[i, c]
        live.last_update_ms = math.nan  # a NaN left after the update means the handler did not run
        t0 = time.perf_counter()
        view_layer.update()
        wall_ms[i] = (time.perf_counter() - t0) * 1000.0
        handler_ms[i] = live.last_update_ms
        handler_cpu_ms[i] = getattr(live, "last_update_cpu_ms", math.nan)
    view_layer.update()  # evaluate the last solved pose (the handler ignores the armature's own update)
    tips = np.array([arm.matrix_world @ ch["bones"][1].tail for ch in chains])
    targets = np.array([ch["target"].matrix_world.translation for ch in chains])
    arm.articulate.live = False
    ran = np.isfinite(handler_ms)
    return {
        "targets": "animated" if animated else "static",
        "updates": updates,
        "handler_runs": int(ran.sum()),
        "median_ms": float(np.median(handler_ms[ran])) if ran.any() else float("nan"),
        "p95_ms": float(np.percentile(handler_ms[ran], 95)) if ran.any() else float("nan"),
        "cpu_median_ms": float(np.median(handler_cpu_ms[ran])) if ran.any() else float("nan"),
        "update_wall_median_ms": float(np.median(wall_ms)),
        "update_wall_p95_ms": float(np.percentile(wall_ms, 95)),
        "last_residual_max_mm": float(np.linalg.norm(tips - targets, axis=-1).max() * 1000.0),
        # Nonzero would mean the targets' animation overrode the moved positions.
        "target_drift_max_mm": float(np.linalg.norm(targets - positions[-1], axis=-1).max() * 1000.0),
    }


def print_table(
    rows: list[dict], floor: dict, live: list[dict], frames: int, repeat: int, load: tuple[float, float]
) -> None:
    """The human-readable report: one row per route, then the bake breakdown, pole angles and live cost."""
    threads = os.environ.get("OPENBLAS_NUM_THREADS", "unset")
    print(f"Blender {bpy.app.version_string}: metarig, 4 limb chains x 2 bones, {frames} frames, median of {repeat} "
          f"bakes (OPENBLAS_NUM_THREADS {threads}; load average {load[0]:.1f} -> {load[1]:.1f} on "
          f"{os.cpu_count()} CPUs)")
    print(f"{'route':11s} {'solver':9s} {'seconds':>8s} {'min s':>7s} {'ms/frame':>9s} {'speed-up':>9s} "
          f"{'mean mm':>8s} {'max mm':>8s} {'viol.':>6s} {'worst deg':>10s} {'pole dev':>9s} {'missed':>7s} "
          f"{'keyed':>6s}")
    for r in rows:
        missed = "-" if r["missed_frames"] is None else str(r["missed_frames"])
        print(f"{r['route']:11s} {r['solver']:9s} {r['seconds']:8.2f} {r['seconds_min']:7.2f} "
              f"{r['ms_per_frame']:9.3f} {r['speedup_vs_blender']:8.2f}x {r['mean_residual_mm']:8.4f} "
              f"{r['max_residual_mm']:8.4f} {r['limit_violations']:6d} {r['worst_violation_deg']:10.2e} "
              f"{r['pole_deviation_deg']:9.2f} {missed:>7s} {r['keyed_frames']:6d}")
    for r in rows:
        if r["route"] == "articulate":
            parts = ", ".join(f"{k} {v:.2f} s" for k, v in r["inner_seconds"].items())
            print(f"articulate {r['solver']} (last bake): {parts}")
    print(f"scene.frame_set over 1..{frames} alone (once): {floor['no_ik']:.2f} s without IK, "
          f"{floor['blender_ik']:.2f} s with Blender's 4 IK constraints")
    angles = next(r["pole_angle_deg"] for r in rows if r["route"] == "blender")
    print("Blender pole angles [deg]: " + ", ".join(f"{k} {v:+.0f}" for k, v in angles.items()))
    _print_live_rows(live)


def print_live(live: list[dict], frames: int, load: tuple[float, float]) -> None:
    """The live-posing rows alone (``--live-only``)."""
    threads = os.environ.get("OPENBLAS_NUM_THREADS", "unset")
    print(f"Blender {bpy.app.version_string}: metarig, 4 limb chains x 2 bones, targets from a {frames}-frame take "
          f"(OPENBLAS_NUM_THREADS {threads}; load average {load[0]:.1f} -> {load[1]:.1f} on {os.cpu_count()} CPUs)")
    _print_live_rows(live)


def _print_live_rows(live: list[dict]) -> None:
    for lv in live:
        print(f"Live posing, 4 chains, {lv['targets']} targets, {lv['updates']} updates ({lv['handler_runs']} "
              f"handler runs): handler median {lv['median_ms']:.2f} ms, p95 {lv['p95_ms']:.2f} ms, CPU median "
              f"{lv['cpu_median_ms']:.2f} ms; whole "
              f"view_layer.update() median {lv['update_wall_median_ms']:.2f} ms, p95 {lv['update_wall_p95_ms']:.2f} "
              f"ms; last pose max residual {lv['last_residual_max_mm']:.4f} mm; targets "
              f"{lv['target_drift_max_mm']:.1f} mm from where they were set")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="timed bakes per row, each on a fresh scene (median)")
    parser.add_argument("--json", action="store_true", help="print one JSON object per row")
    parser.add_argument("--quick", action="store_true", help="short development run: 120 frames, 1 repeat")
    parser.add_argument("--live-only", action="store_true", help="only the live-posing rows (no bakes)")
    args = parser.parse_args()
    if args.quick:
        args.frames, args.repeat = min(args.frames, 120), 1
    global _compat
    addon = cli.ensure_addon()
    _compat = importlib.import_module(f"{addon.__name__}.operators.compat")
    examples = importlib.import_module(f"{addon.__name__}.operators.examples")
    n = args.frames
    load_start = os.getloadavg()[0]
    # Rigify's reload messages and the bake's progress lines go to stderr: stdout is the report.
    with contextlib.redirect_stdout(sys.stderr):
        if not args.live_only:
            rows = run_bakes(examples, n, args.repeat)
            angles = next(r["pole_angle_deg"] for r in rows if r["route"] == "blender")
            floor = stepping_floor(examples, n, list(angles.values()))
        updates = 50 if args.quick else LIVE_UPDATES
        live = [live_cost(examples, addon, n, animated, updates) for animated in (True, False)]
    if args.live_only:
        print_live(live, n, (load_start, os.getloadavg()[0]))
        if args.json:
            for lv in live:
                print(json.dumps({"route": "live", "solver": "two_bone", "frames": n,
                                  "blender": bpy.app.version_string, **lv}))
        return 0
    print_table(rows, floor, live, n, args.repeat, (load_start, os.getloadavg()[0]))
    if args.json:
        for r in rows:
            print(json.dumps(r))
        print(json.dumps({"route": "frame_set only", "frames": n, "blender": bpy.app.version_string,
                          "seconds_no_ik": floor["no_ik"], "seconds_blender_ik": floor["blender_ik"]}))
        for lv in live:
            print(json.dumps({"route": "live", "solver": "two_bone", "frames": n, "blender": bpy.app.version_string,
                              **lv}))
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    if bpy.app.version < (4, 3, 0):  # 4.2's bpy module crashes at teardown once Rigify is enabled
        os._exit(code)
    sys.exit(code)
