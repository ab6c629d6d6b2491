# SPDX-License-Identifier: GPL-3.0-or-later
"""Keyframe writing speed: the compat module's bulk path against Blender's per-key routes.

Run from the repo root with a bpy venv: ``.venvs/5.0.1/bin/python bench/bench_keyframes.py [--json]``.
Workload: 10,000 frames x 7 bones x 4 quaternion channels (280,000 keys). The per-key routes
are timed on fewer frames and scaled (stated in the table) because they take minutes.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="articulate-bench-"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bpy  # noqa: E402
import numpy as np  # noqa: E402

import cli  # noqa: E402

BONES, CHANNELS = 7, 4


def make_rig(bridge):
    bpy.ops.wm.read_homefile(use_empty=True)
    heads = np.array([[0.0, 0.0, 0.3 * i] for i in range(BONES)])
    return bridge.create_armature("Rig", heads, heads + [0, 0, 0.3], list(range(-1, BONES - 1)))


def quaternions(frames: int) -> np.ndarray:
    q = np.random.default_rng(0).normal(size=(frames, BONES, CHANNELS))
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def bench_bulk(compat, bridge, frames: int) -> float:
    rig = make_rig(bridge)
    q = quaternions(frames).reshape(frames, -1)
    channels = [c for b in range(BONES) for c in compat.bone_channels(f"Bone.{b:03d}", "rotation_quaternion", 4)]
    t0 = time.perf_counter()
    compat.write_channels(rig, channels, np.arange(1.0, frames + 1.0), q)
    elapsed = time.perf_counter() - t0
    # Check the result is real: one key per frame per channel, evaluating to the input.
    curves = compat.iter_fcurves(rig)
    assert sum(len(fc.keyframe_points) for fc in curves) == frames * BONES * CHANNELS
    assert abs(curves[5].evaluate(frames // 2) - q[frames // 2 - 1, 5]) < 1e-6
    return elapsed


def bench_insert_fast(compat, bridge, frames: int) -> float:
    rig = make_rig(bridge)
    q = quaternions(frames)
    channels = [c for b in range(BONES) for c in compat.bone_channels(f"Bone.{b:03d}", "rotation_quaternion", 4)]
    curves = [compat.ensure_fcurve(rig, c) for c in channels]
    t0 = time.perf_counter()
    for k, fc in enumerate(curves):
        points, values = fc.keyframe_points, q[:, k // CHANNELS, k % CHANNELS]
        for f in range(frames):
            points.insert(f + 1, values[f], options={"FAST"})
        fc.update()
    return time.perf_counter() - t0


def bench_keyframe_insert(bridge, frames: int) -> float:
    rig = make_rig(bridge)
    q = quaternions(frames)
    bones = [rig.pose.bones[f"Bone.{b:03d}"] for b in range(BONES)]
    t0 = time.perf_counter()
    for f in range(frames):
        for b, pb in enumerate(bones):
            pb.rotation_quaternion = q[f, b]
            pb.keyframe_insert("rotation_quaternion", frame=f + 1)
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=10_000)
    parser.add_argument("--json", action="store_true", help="print one JSON object per row")
    args = parser.parse_args()
    addon = cli.ensure_addon()
    compat = importlib.import_module(f"{addon.__name__}.operators.compat")
    bridge = importlib.import_module(f"{addon.__name__}.operators.bridge")
    n = args.frames
    rows = []
    t = min(bench_bulk(compat, bridge, n) for _ in range(3))
    rows.append(("articulate compat (add + foreach_set)", n, n, t))
    sub = max(n // 10, 1)
    rows.append(("keyframe_points.insert FAST", n, sub, bench_insert_fast(compat, bridge, sub) * n / sub))
    sub = max(n // 100, 1)
    rows.append(("pose_bone.keyframe_insert", n, sub, bench_keyframe_insert(bridge, sub) * n / sub))
    keys = n * BONES * CHANNELS
    print(f"Blender {bpy.app.version_string}: {n} frames x {BONES} bones x {CHANNELS} channels = {keys} keys")
    print(f"{'method':40s} {'frames timed':>12s} {'seconds':>10s} {'keys/s':>12s} {'vs ours':>8s}")
    for name, _frames, timed, secs in rows:
        print(f"{name:40s} {timed:12d} {secs:10.3f} {keys / secs:12.0f} {secs / rows[0][3]:7.0f}x")
    if args.json:
        for name, frames, timed, secs in rows:
            print(json.dumps({"blender": bpy.app.version_string, "method": name, "frames": frames,
                              "frames_timed": timed, "keys": keys, "seconds": secs, "scaled": timed != frames}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
