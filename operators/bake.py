# SPDX-License-Identifier: GPL-3.0-or-later
"""Bake one bone chain to follow a target object over a frame range."""

from __future__ import annotations

import json
import os
import sys
import time

import bpy
import numpy as np

from ..ik_core import ArticulateError
from ..ik_core import rotations as rot
from ..ik_core.solvers import SOLVER_NAMES, make_solver, solve_sequence
from . import bridge

_SOLVER_LABELS = {"fabrik": "FABRIK", "ccd": "CCD", "dls": "DLS", "two_bone": "Two-bone"}
SOLVER_ITEMS = [(name, _SOLVER_LABELS.get(name, name), "") for name in SOLVER_NAMES]


class BakeFailed(Exception):
    """The bake cannot run; nothing was changed. The message says why."""


def _progress(wm: bpy.types.WindowManager, label: str):
    """A progress callback: window-manager progress in the UI, a terminal line in background."""
    last = [0.0]

    def update(done: int, total: int) -> None:
        wm.progress_update(done)
        now = time.perf_counter()
        if bpy.app.background and (done == total or now - last[0] > 0.5):
            last[0] = now
            sys.stdout.write(f"\r{label}: {done}/{total} frames")
            if done == total:
                sys.stdout.write("\n")
            sys.stdout.flush()

    return update


def bake_chain(
    context: bpy.types.Context,
    armature: bpy.types.Object,
    tip_bone: str,
    chain_length: int,
    target: bpy.types.Object,
    frames: range,
    solver: str,
    tolerance: float,
) -> dict:
    """Solve every frame and key the chain's rotations; returns a summary for the report.

    Raises:
        BakeFailed: Bad input (checked before anything is written).
    """
    if armature is None or armature.type != "ARMATURE":
        raise BakeFailed("select an armature object (none is active, or the active object is not an armature)")
    if target is None:
        raise BakeFailed("choose a target object for the chain")
    if len(frames) == 0:
        raise BakeFailed(f"frame range {frames.start}-{frames.stop - 1} is empty; the end must not precede the start")
    try:
        bones = bridge.pose_bone_chain(armature, tip_bone, chain_length)
        skeleton = bridge.chain_skeleton(armature, bones)
    except bridge.BridgeError as err:
        raise BakeFailed(str(err)) from None
    if target.name in {b.name for b in bones} or target == armature:
        raise BakeFailed("the target must be another object than the armature being baked")
    scene = context.scene
    targets = bridge.world_positions(target, scene, frames)
    if not np.all(np.isfinite(targets)):
        raise BakeFailed(f"target {target.name!r} has a non-finite position on some frames")
    q0 = rot.matrix_to_rotvec(bridge.pose_rotations(bones)).reshape(-1)
    ik = make_solver(solver, skeleton, "tip", mode="position", tolerance=tolerance)
    wm = context.window_manager
    wm.progress_begin(0, len(frames))
    try:
        t0 = time.perf_counter()
        result = solve_sequence(ik, targets, q0, progress=_progress(wm, f"Articulate bake {armature.name}"))
        solve_s = time.perf_counter() - t0
    finally:
        wm.progress_end()
    R = rot.rotvec_to_matrix(result.q.reshape(len(frames), len(bones), 3))
    t0 = time.perf_counter()
    keys = bridge.write_bone_rotations(
        armature, bones, np.asarray(frames, dtype=float), R, replace=(frames.start, frames[-1])
    )
    write_s = time.perf_counter() - t0
    return {
        "armature": armature.name,
        "chain": [b.name for b in bones],
        "target": target.name,
        "solver": solver,
        "frames": [int(f) for f in frames],
        "converged": result.converged.tolist(),
        "position_error_m": result.position_error.tolist(),
        "iterations": result.iterations.tolist(),
        "reasons": [str(r) for r in result.reason],
        "missed_frames": [int(f) for f, ok in zip(frames, result.converged) if not ok],
        "keys_written": int(keys),
        "solve_seconds": solve_s,
        "write_seconds": write_s,
    }


class ARTICULATE_OT_bake_chain(bpy.types.Operator):
    """Solve a bone chain toward a target on every frame of a range and key its rotations"""

    bl_idname = "articulate.bake_chain"
    bl_label = "Bake Chain"
    bl_options = {"REGISTER", "UNDO"}

    tip_bone: bpy.props.StringProperty(name="Tip Bone", description="Last bone of the chain")
    chain_length: bpy.props.IntProperty(
        name="Chain Length", description="Bones in the chain, 0 for up to the root", default=2, min=0
    )
    target: bpy.props.StringProperty(name="Target", description="Object the chain's tip follows")
    frame_start: bpy.props.IntProperty(name="Start", default=1)
    frame_end: bpy.props.IntProperty(name="End", default=250)
    frame_step: bpy.props.IntProperty(name="Step", default=1, min=1)
    solver: bpy.props.EnumProperty(name="Solver", items=SOLVER_ITEMS, default="dls")
    tolerance: bpy.props.FloatProperty(name="Tolerance", default=1e-4, min=1e-9, subtype="DISTANCE")
    report_path: bpy.props.StringProperty(
        name="Report", description="Write a JSON report of every frame to this file", subtype="FILE_PATH"
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return context.object is not None and context.object.type == "ARMATURE"

    def execute(self, context: bpy.types.Context) -> set[str]:
        frames = range(self.frame_start, self.frame_end + 1, self.frame_step)
        try:
            summary = bake_chain(
                context, context.object, self.tip_bone, self.chain_length,
                bpy.data.objects.get(self.target), frames, self.solver, self.tolerance,
            )
        except (BakeFailed, ArticulateError) as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        if self.report_path:
            path = bpy.path.abspath(self.report_path)
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(summary, fh, indent=1)
        context.scene.articulate.last_summary = _summary_line(summary)
        missed = summary["missed_frames"]
        if missed:
            self.report({"WARNING"}, f"{len(missed)} of {len(frames)} frames missed the target: {_ranges(missed)}")
        else:
            self.report({"INFO"}, f"Baked {len(frames)} frames, every target reached")
        context.scene["articulate_last_bake"] = {"missed_frames": missed, "frames": len(frames)}
        return {"FINISHED"}


def _summary_line(summary: dict) -> str:
    n = len(summary["frames"])
    worst = max(summary["position_error_m"], default=0.0)
    return f"{n - len(summary['missed_frames'])}/{n} frames converged, worst error {worst * 1000:.3g} mm"


def _ranges(frames: list[int]) -> str:
    """'3-7, 12' style text for a sorted list of frames (at most 10 runs shown)."""
    runs: list[list[int]] = []
    for f in frames:
        if runs and f == runs[-1][1] + 1:
            runs[-1][1] = f
        else:
            runs.append([f, f])
    text = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs[:10])
    return text + (f", ... ({len(runs)} runs)" if len(runs) > 10 else "")


classes = (ARTICULATE_OT_bake_chain,)
