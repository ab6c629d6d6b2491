# SPDX-License-Identifier: GPL-3.0-or-later
"""Aim chains vs Blender's Damped Track: a spine, neck and head looking at a moving target.

Run from the repo root with a bpy venv:
``.venvs/5.0.1/bin/python bench/bench_aim.py [--frames 1000] [--repeat 3] [--json] [--quick]``
(also ``.venvs/4.5.15`` and ``.venvs/4.2.23``; ``--quick`` is 120 frames, one repeat).

Protocol (issue 15, item 4): one rig for every row, built fresh per bake: three bones pointing
up (spine 0.4 m, neck 0.15 m, head 0.2 m), each limited by Blender IK limits to a swing cone
about X and Z (20, 25, 35 degrees) and a twist about Y, which for these bones is the yaw (20, 30,
45 degrees). The face looks along world -Y. The target sweeps 2 m in front of the face, yaw
+/-50 degrees and pitch +/-25 degrees (every frame reachable by the whole chain within its
limits; not by the head alone). Rows:

- ``aim s=0.5 up``, ``aim s=0``: ``bpy.ops.articulate.bake`` of an Aim chain on the three
  bones (spread 0.5 with up axis +Y toward world up, or spread 0 without up).
- ``damped``: Blender's Damped Track on the head (its track axis the face's), baked by
  ``nla.bake`` with visual keying: the head alone turns, limits ignored.
- ``damped+limit``: the same with a Limit Rotation constraint after it (local space, the IK
  limits as Euler ranges): limits held, aim lost where the head alone cannot turn far enough.

Only the operator call is timed (median of ``--repeat``). The last bake of each row is then
played back with its constraints muted: aim angle between the head's face axis and the
direction to the target (share of frames within 0.1 degree, median and max), roll (the head's
+Y against world up, both across the aim; max), the largest excess over a bone's swing cone or
twist range (degrees), and the head's share of the turn (median over frames of the head's own
rotation angle over the sum of the three bones').
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
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bpy  # noqa: E402
import numpy as np  # noqa: E402
from blender_output import stdout_to_stderr  # noqa: E402
from mathutils import Matrix  # noqa: E402

import cli  # noqa: E402

SWING_DEG = {"Spine": 20.0, "Neck": 25.0, "Head": 35.0}
TWIST_DEG = {"Spine": 20.0, "Neck": 30.0, "Head": 45.0}
EYE = np.array([0.0, 0.0, 1.65])
TRACK = {"X": "TRACK_X", "NEG_X": "TRACK_NEGATIVE_X", "Y": "TRACK_Y", "NEG_Y": "TRACK_NEGATIVE_Y",
         "Z": "TRACK_Z", "NEG_Z": "TRACK_NEGATIVE_Z"}
VEC = {"X": (1, 0, 0), "NEG_X": (-1, 0, 0), "Y": (0, 1, 0), "NEG_Y": (0, -1, 0), "Z": (0, 0, 1), "NEG_Z": (0, 0, -1)}


def target_path(frames: int) -> np.ndarray:
    t = np.linspace(0.0, 1.0, frames)
    yaw = np.radians(50.0) * np.sin(2 * np.pi * t)
    pitch = np.radians(25.0) * np.sin(4 * np.pi * t + 0.3)
    return EYE + 2.0 * np.stack([np.sin(yaw) * np.cos(pitch), -np.cos(yaw) * np.cos(pitch), np.sin(pitch)], axis=1)


def build(addon, frames: int):
    """A fresh file with the rig and the animated target; returns (armature, target, face axis key)."""
    bridge = __import__(f"{addon.__name__}.operators.bridge", fromlist=["x"])
    compat = __import__(f"{addon.__name__}.operators.compat", fromlist=["x"])
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    heads = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 1.4], [0.0, 0.0, 1.55]])
    tails = np.array([[0.0, 0.0, 1.4], [0.0, 0.0, 1.55], [0.0, 0.0, 1.75]])
    arm = bridge.create_armature("Rig", heads, tails, [-1, 0, 1], list(SWING_DEG))
    for name in SWING_DEG:
        pb = arm.pose.bones[name]
        for axis in "xyz":
            limit = math.radians(TWIST_DEG[name] if axis == "y" else SWING_DEG[name])
            setattr(pb, f"use_ik_limit_{axis}", True)
            setattr(pb, f"ik_min_{axis}", -limit)
            setattr(pb, f"ik_max_{axis}", limit)
    target = bpy.data.objects.new("Look", None)
    scene.collection.objects.link(target)
    compat.write_channels(target, [compat.Channel("location", i, "Object Transforms") for i in range(3)],
                          np.arange(1.0, frames + 1.0), target_path(frames))
    R = np.array(arm.data.bones["Head"].matrix_local)[:3, :3]
    face = next(k for k, v in VEC.items() if np.allclose(R @ v, (0, -1, 0), atol=1e-6))
    bpy.context.view_layer.objects.active = arm
    return arm, target, face


def bake_articulate(addon, frames: int, spread: float, up: bool) -> tuple[float, tuple]:
    arm, target, face = build(addon, frames)
    chain = arm.articulate.chains.add()
    chain.name, chain.tip_bone, chain.chain_length, chain.target = "Look", "Head", 3, target
    chain.mode, chain.aim_axis, chain.aim_spread = "AIM", face, spread
    chain.up_axis = "Y" if up else "NONE"
    t0 = time.perf_counter()
    with stdout_to_stderr():
        result = bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=frames)
    seconds = time.perf_counter() - t0
    assert result == {"FINISHED"}, result
    return seconds, (arm, target, face)


def _select(arm, names: set[str]) -> None:
    on_pose_bone = "select" in bpy.types.PoseBone.bl_rna.properties
    for pb in arm.pose.bones:
        (pb if on_pose_bone else pb.bone).select = pb.name in names


def bake_damped(addon, frames: int, limit: bool) -> tuple[float, tuple]:
    arm, target, face = build(addon, frames)
    head = arm.pose.bones["Head"]
    con = head.constraints.new("DAMPED_TRACK")
    con.target, con.track_axis = target, TRACK[face]
    if limit:
        lim = head.constraints.new("LIMIT_ROTATION")
        lim.owner_space = "LOCAL"
        for axis in "xyz":
            deg = TWIST_DEG["Head"] if axis == "y" else SWING_DEG["Head"]
            setattr(lim, f"use_limit_{axis}", True)
            setattr(lim, f"min_{axis}", -math.radians(deg))
            setattr(lim, f"max_{axis}", math.radians(deg))
    bpy.context.scene.frame_set(1)
    bpy.ops.object.mode_set(mode="POSE")
    _select(arm, {"Head"})
    t0 = time.perf_counter()
    with stdout_to_stderr():
        result = bpy.ops.nla.bake(frame_start=1, frame_end=frames, only_selected=True, visual_keying=True,
                                  clear_constraints=False, bake_types={"POSE"})
    seconds = time.perf_counter() - t0
    assert "FINISHED" in result, result
    bpy.ops.object.mode_set(mode="OBJECT")
    for c in head.constraints:
        c.mute = True
    return seconds, (arm, target, face)


def _angle(a, b):
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    return np.arctan2(np.linalg.norm(np.cross(a, b), axis=-1), np.sum(a * b, axis=-1))


def evaluate(state, frames: int) -> dict:
    arm, target, face = state
    scene = bpy.context.scene
    aim_local = np.array(VEC[face], dtype=float)
    aim, up, origin, goal = [], [], [], []
    excess = 0.0
    turn = np.zeros((frames, 3))
    for f in range(1, frames + 1):
        scene.frame_set(f)
        M = np.array(arm.matrix_world @ arm.pose.bones["Head"].matrix)
        origin.append(M[:3, 3])
        aim.append(M[:3, :3] @ aim_local)
        up.append(M[:3, 1])
        goal.append(np.array(target.matrix_world.translation))
        for b, name in enumerate(SWING_DEG):
            R = np.array(arm.pose.bones[name].matrix_basis)[:3, :3]
            q = Matrix(R.tolist()).to_quaternion()
            twist = abs((2.0 * math.atan2(q.y, q.w) + math.pi) % (2 * math.pi) - math.pi)
            swing = math.acos(max(-1.0, min(1.0, R[1, 1])))
            excess = max(excess, math.degrees(swing) - SWING_DEG[name], math.degrees(twist) - TWIST_DEG[name])
            turn[f - 1, b] = 2.0 * math.acos(min(1.0, abs(q.w)))
    aim, up, origin, goal = map(np.array, (aim, up, origin, goal))
    err = np.degrees(_angle(aim, goal - origin))
    d = aim / np.linalg.norm(aim, axis=-1, keepdims=True)
    roll = np.degrees(_angle(up, np.array([0.0, 0.0, 1.0]) - d[:, 2:3] * d))
    total = turn.sum(axis=1)
    share = np.median(turn[total > 1e-3, 2] / total[total > 1e-3])
    return {"aimed_0.1deg": float(np.mean(err <= 0.1)), "aim_median_deg": float(np.median(err)),
            "aim_max_deg": float(err.max()), "roll_max_deg": float(roll.max()),
            "limit_excess_deg": float(max(excess, 0.0)), "head_share": float(share)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.frames, args.repeat = 120, 1
    with stdout_to_stderr():
        addon = cli.ensure_addon()
    routes = {
        "aim s=0.5 up": lambda: bake_articulate(addon, args.frames, 0.5, True),
        "aim s=0": lambda: bake_articulate(addon, args.frames, 0.0, False),
        "damped": lambda: bake_damped(addon, args.frames, False),
        "damped+limit": lambda: bake_damped(addon, args.frames, True),
    }
    times = {name: [] for name in routes}
    last = {}
    for rep in range(args.repeat):  # interleaved, so load changes hit every route alike
        for name, route in routes.items():
            seconds, state = route()
            times[name].append(seconds)
            if rep == args.repeat - 1:
                last[name] = evaluate(state, args.frames)
    rows = [{"route": name, "frames": args.frames, "seconds": float(np.median(times[name])),
             "ms_per_frame": 1000.0 * float(np.median(times[name])) / args.frames, **last[name]} for name in routes]
    print(f"blender {bpy.app.version_string}, numpy {np.__version__}, load {os.getloadavg()[0]:.2f}")
    print(f"{'route':14s} {'frames':>6s} {'seconds':>8s} {'ms/frame':>8s} {'aimed':>7s} {'med_deg':>8s} "
          f"{'max_deg':>8s} {'roll_deg':>8s} {'excess_deg':>10s} {'head_share':>10s}")
    for r in rows:
        print(f"{r['route']:14s} {r['frames']:6d} {r['seconds']:8.3f} {r['ms_per_frame']:8.3f} "
              f"{100 * r['aimed_0.1deg']:6.1f}% {r['aim_median_deg']:8.3g} {r['aim_max_deg']:8.3g} "
              f"{r['roll_max_deg']:8.3g} {r['limit_excess_deg']:10.3g} {r['head_share']:10.2f}")
    if args.json:
        for r in rows:
            print(json.dumps(r))
    sys.stdout.flush()
    os._exit(0)  # bpy 4.2 can crash at interpreter exit after enabling add-ons


if __name__ == "__main__":
    main()
