# SPDX-License-Identifier: GPL-3.0-or-later
"""Aim chains vs Blender's Damped Track: a spine, neck and head looking at a moving target.

Run from the repo root with a bpy venv:
``.venvs/5.0.1/bin/python bench/bench_aim.py [--frames 1000] [--repeat 3] [--json] [--quick]``
(also ``.venvs/4.5.15`` and ``.venvs/4.2.23``; ``--quick`` is 120 frames, one repeat).

Protocol (issue 15, item 4): one rig for every row, built fresh per bake by
``tests/blender/aim_scenes.py`` (shared with the tests): three bones pointing up (spine 0.4 m,
neck 0.15 m, head 0.2 m), each limited by Blender IK limits to a swing cone about X and Z (20,
25, 35 degrees) and a twist about Y, which for these bones is the yaw (20, 30, 45 degrees). The
face looks along world -Y. The target sweeps 2 m in front of the face, yaw
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
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "blender"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import aim_scenes as aims  # noqa: E402
import bpy  # noqa: E402
import numpy as np  # noqa: E402
import parity_scenes as ps  # noqa: E402
from blender_output import stdout_to_stderr  # noqa: E402
from mathutils import Matrix  # noqa: E402

import cli  # noqa: E402


def build(addon, frames: int):
    """A fresh file with the rig and the animated target; returns (armature, target, face axis key)."""
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    return aims.build_look_rig(addon, aims.target_path(frames, pitch_phase=0.3))


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


def bake_damped(addon, frames: int, limit: bool) -> tuple[float, tuple]:
    arm, target, face = build(addon, frames)
    head = arm.pose.bones["Head"]
    con = head.constraints.new("DAMPED_TRACK")
    con.target, con.track_axis = target, "TRACK_" + face.replace("NEG_", "NEGATIVE_")
    if limit:
        lim = head.constraints.new("LIMIT_ROTATION")
        lim.owner_space = "LOCAL"
        for axis in "xyz":
            deg = aims.TWIST_DEG["Head"] if axis == "y" else aims.SWING_DEG["Head"]
            setattr(lim, f"use_limit_{axis}", True)
            setattr(lim, f"min_{axis}", -math.radians(deg))
            setattr(lim, f"max_{axis}", math.radians(deg))
    bpy.context.scene.frame_set(1)
    bpy.ops.object.mode_set(mode="POSE")
    ps.select_bones(arm, {"Head"})
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


def evaluate(addon, state, frames: int) -> dict:
    arm, target, face = state
    played = aims.playback(arm, target, aims.axes(addon)[face], frames)
    excess = 0.0
    turn = np.zeros((frames, 3))
    for f in range(frames):
        for b, name in enumerate(aims.SWING_DEG):
            R = played["basis"][f, b]
            q = Matrix(R.tolist()).to_quaternion()
            twist = abs((2.0 * math.atan2(q.y, q.w) + math.pi) % (2 * math.pi) - math.pi)
            swing = math.acos(max(-1.0, min(1.0, R[1, 1])))
            excess = max(excess, math.degrees(swing) - aims.SWING_DEG[name],
                         math.degrees(twist) - aims.TWIST_DEG[name])
            turn[f, b] = 2.0 * math.acos(min(1.0, abs(q.w)))
    err = np.degrees(aims.angle(played["aim"], played["target"] - played["origin"]))
    roll = np.degrees(aims.roll_error(played))
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
                last[name] = evaluate(addon, state, args.frames)
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
