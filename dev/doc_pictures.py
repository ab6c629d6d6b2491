# SPDX-License-Identifier: GPL-3.0-or-later
"""Render the user guides' pictures (docs/images/<guide>.png) headless, each scene built with the add-on's operators.

Run from the repo root: ``.venvs/5.0.1/bin/python dev/doc_pictures.py [--out docs/images] [--only animator ...]``.

- ``animator``: Rigify's metarig with its four limb chains (the demo's) baked, mid-motion, targets, paths and poles.
- ``roboticist``: the UR5 preset following ``presets/examples/ur5_cartesian_poses.csv`` (Import Cartesian Path,
  poses in the robot's base, baked), the path drawn; also checks and exports the trajectory.
- ``full_body``: a metarig baked by Bake Full Body from head and hand trackers imported from a tracker CSV
  (``data/mocap/cmu_131_01_trackers.csv``, written from CMU motion capture by ``--write-trackers``), the
  trackers drawn as small spheres.
- ``pipeline``: ``cli.py demo`` run headless in a child process, its saved .blend rendered at four frames, tiled.

Workbench renders, 960x540; each line printed says what a guide quotes (summaries, report fields, sizes).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "presets" / "examples"
MOCAP = ROOT / "data" / "mocap" / "cmu_131_01.bvh"
TRACKERS = ROOT / "data" / "mocap" / "cmu_131_01_trackers.csv"  # write_mocap_trackers(MOCAP)
SIZE = (960, 540)
GUIDES = ("animator", "roboticist", "full_body", "pipeline")


def _addon_modules():
    """(bpy, add-on package name): the add-on enabled from this checkout, as cli.py enables it."""
    sys.path.insert(0, str(ROOT))
    import bpy  # first: addon_utils exists only once bpy is imported

    import cli

    return bpy, cli.ensure_addon().__name__


def _demo(pkg: str):
    """The add-on's demo module (camera aiming, Workbench rendering)."""
    return importlib.import_module(f"{pkg}.operators.demo")


def _ball(bpy, pkg: str, name: str, radius: float, rgb, parent=None, location=(0.0, 0.0, 0.0)):
    """A small sphere mesh (empties do not render), on ``parent`` when given."""
    meshes = importlib.import_module(f"{pkg}.operators.bridge.meshes")
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(*importlib.import_module(f"{pkg}.operators.bridge.build").sphere_mesh_data(radius))
    mesh.materials.append(meshes.colour_material(name.split(".")[0], (*rgb, 1.0)))
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    obj.parent, obj.location = parent, location
    return obj


def animator(bpy, pkg: str, out: Path) -> dict:
    """The demo's metarig: four limb chains (Auto solver) baked over 120 frames, shown at frame 40."""
    examples = importlib.import_module(f"{pkg}.operators.examples")
    examples.build_metarig_scene(frames=120, solver="auto")
    with tempfile.TemporaryDirectory() as folder:
        report_path = Path(folder) / "report.json"
        assert bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=120,
                                       report_path=str(report_path)) == {"FINISHED"}
        report = json.loads(report_path.read_text())
    for obj in [o for o in bpy.data.objects if o.name.startswith("pole.")]:
        _ball(bpy, pkg, f"Pole.{obj.name}", 0.025, (0.95, 0.75, 0.1), parent=obj)
    bpy.context.scene.frame_set(40)
    _demo(pkg).aim_camera(bpy.context.scene.camera, look_at=(0.0, 0.0, 0.95), location=(2.9, -4.6, 1.5))
    _demo(pkg).workbench_render(out, SIZE)
    return {"summary": bpy.context.scene.articulate.last_summary,
            "solvers": sorted({c["solver"] for c in report["chains"]})}


def roboticist(bpy, pkg: str, out: Path) -> dict:
    """The UR5 preset, Import Cartesian Path (poses in the robot base, baked), then Check and Export Trajectory."""
    demo = importlib.import_module(f"{pkg}.operators.demo")
    bpy.ops.wm.read_homefile(use_empty=True)
    assert bpy.ops.articulate.robot_add(preset="ur5") == {"FINISHED"}
    rig = bpy.context.object
    poses = EXAMPLES / "ur5_cartesian_poses.csv"
    assert bpy.ops.articulate.cartesian_import(filepath=str(poses), pose_frame="BASE") == {"FINISHED"}
    scene = bpy.context.scene
    bake_summary = scene.articulate.last_summary
    info = {"rig": rig.name, "fps": scene.render.fps / scene.render.fps_base,
            "frames": [scene.frame_start, scene.frame_end], "bake": bake_summary}
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "check.json"
        assert bpy.ops.articulate.trajectory_check(report_path=str(report)) == {"FINISHED"}
        info["check"] = scene.articulate.last_summary
        info["check_keys"] = sorted(json.loads(report.read_text()))
        exported = Path(folder) / "ur5_trajectory.csv"
        assert bpy.ops.articulate.trajectory_export(filepath=str(exported)) == {"FINISHED"}
        info["export_head"] = exported.read_text().splitlines()[:3]
    target = rig.articulate.chains[0].target
    path = []
    for f in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(f)
        path.append(np.array(target.matrix_world.translation))
    demo.add_target_marker(scene, target, np.array(path))
    scene.frame_set(scene.frame_end)
    for k, point in enumerate(path):  # the file's poses, one small ball each
        _ball(bpy, pkg, f"Pose.{k}", 0.008, (0.2, 0.4, 0.9), location=tuple(point))
    bpy.data.objects[f"{target.name}.Path"].data.bevel_depth = 0.003
    demo.add_camera_and_light(scene, look_at=(0.32, 0.12, 0.3), location=(1.25, -0.95, 0.85))
    scene.camera.data.lens = 35
    _demo(pkg).workbench_render(out, SIZE)
    return info


# Where the trackers sit on the performer's bones, in the BVH bone frames (y along the bone, z forward):
# a headset in front of and above the head joint, a controller in each palm (as bench/bench_fullbody.py).
HEADSET = ((-90.0, 0.0, 0.0), (0.0, 0.08, 0.10))
CONTROLLERS = {"hand_l": ((20.0, 0.0, 70.0), (0.0, -0.07, 0.03)), "hand_r": ((20.0, 0.0, -70.0), (0.0, -0.07, 0.03))}


SECONDS, SHOWN = 2.5, 61  # the take's first seconds (the performer stands, then raises the right hand); frame shown


def write_mocap_trackers(pkg: str, path: Path, seconds: float = SECONDS, rate: float = 30.0) -> None:
    """A tracker CSV (docs/formats.md) of a CMU take: head and hand trackers, ``rate`` Hz, the first ``seconds``."""
    bvh_mod = importlib.import_module(f"{pkg}.ik_core.formats.bvh")
    humanoid = importlib.import_module(f"{pkg}.ik_core.humanoid")
    rotations = importlib.import_module(f"{pkg}.ik_core.model.rotations")
    bvh = bvh_mod.read_bvh(MOCAP)
    roles = humanoid.detect_roles(bvh.bones())
    world = bvh.world_transforms(z_up=True)
    step = max(1, round(1.0 / (bvh.frame_time * rate)))
    picked = np.arange(0, min(len(world), round(seconds / bvh.frame_time)), step)

    def offset(spec) -> np.ndarray:
        T = np.eye(4)
        T[:3, :3] = rotations.rotvec_to_matrix(np.radians(np.array(spec[0])))
        T[:3, 3] = spec[1]
        return T

    mounts = {"head": offset(HEADSET), **{k: offset(v) for k, v in CONTROLLERS.items()}}
    columns = ["time"]
    values = [picked * bvh.frame_time - picked[0] * bvh.frame_time]
    for name, mount in mounts.items():
        poses = world[picked, bvh.index(roles[name])] @ mount
        q = rotations.matrix_to_quat(poses[:, :3, :3])
        columns += [f"{name}_{f}" for f in ("x", "y", "z", "qw", "qx", "qy", "qz")]
        values += list(poses[:, :3, 3].T) + list(q.T)
    rows = np.column_stack(values)
    path.write_text(",".join(columns) + "\n" + "\n".join(",".join(f"{v:.6g}" for v in row) for row in rows) + "\n")


def full_body(bpy, pkg: str, out: Path) -> dict:
    """A metarig: Import Trackers, Align Rig to Trackers, arms posed to the trackers at the reference frame
    (Solve Current Frame, the calibration pose), Detect Roles, Bake Full Body."""
    import addon_utils

    demo = importlib.import_module(f"{pkg}.operators.demo")
    addon_utils.enable("rigify", default_set=True)
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.object.armature_basic_human_metarig_add()
    rig = bpy.context.object
    rig.name = "Metarig"
    assert bpy.ops.articulate.trackers_import(filepath=str(TRACKERS)) == {"FINISHED"}
    scene = bpy.context.scene
    body = rig.articulate.body
    assert body.head is not None and body.hand_l is not None  # the import assigned them to the active armature
    assert bpy.ops.articulate.body_align() == {"FINISHED"}
    # The calibration pose: at the reference frame the rig stands as the performer does, arms down.
    scene.frame_set(body.reference_frame)
    for side, tracker in (("L", body.hand_l), ("R", body.hand_r)):
        bpy.ops.object.mode_set(mode="POSE")
        rig.data.bones.active = rig.data.bones[f"hand.{side}"]  # the hand's tail reaches the controller
        bpy.ops.object.mode_set(mode="OBJECT")
        assert bpy.ops.articulate.chain_add() == {"FINISHED"}
        chain = rig.articulate.chains[-1]
        chain.chain_length, chain.target = 3, tracker
    assert bpy.ops.articulate.solve_frame() == {"FINISHED"}
    while rig.articulate.chains:
        assert bpy.ops.articulate.chain_remove() == {"FINISHED"}
    assert bpy.ops.articulate.body_detect_roles() == {"FINISHED"}
    with tempfile.TemporaryDirectory() as folder:
        report_path = Path(folder) / "body.json"
        assert bpy.ops.articulate.body_bake(use_scene_settings=False, frame_start=scene.frame_start,
                                            frame_end=scene.frame_end, report_path=str(report_path)) == {"FINISHED"}
        report = json.loads(report_path.read_text())
    for name in ("head", "hand_l", "hand_r"):
        _ball(bpy, pkg, f"Tracker.{name}", 0.035, (0.2, 0.75, 0.95), parent=getattr(body, name))
    demo.dress_bones(rig, skip=("heel", "breast", "pelvis"))
    frame = SHOWN
    scene.frame_set(frame)
    head = np.array(body.head.matrix_world.translation)
    demo.add_camera_and_light(scene, look_at=(head[0], head[1], 0.75),
                              location=(head[0] + 2.3, head[1] - 4.3, 1.35))
    _demo(pkg).workbench_render(out, SIZE)
    return {"summary": body.last_summary, "frames": [scene.frame_start, scene.frame_end],
            "fps": scene.render.fps / scene.render.fps_base, "shown": frame,
            "offsets_mm": {k: round(v * 1000, 1) for k, v in report["calibration_offsets_m"].items()},
            "warnings": report["warnings"], "report_keys": sorted(report)}


def pipeline(bpy, pkg: str, out: Path, frames=(1, 30, 60, 90)) -> dict:
    """``cli.py demo`` headless in a child Python, then its saved .blend at four frames, tiled 2x2."""
    with tempfile.TemporaryDirectory() as folder:
        demo_dir = Path(folder) / "demo"
        env = {**os.environ, "BLENDER_USER_RESOURCES": str(Path(folder) / "user")}
        done = subprocess.run([sys.executable, str(ROOT / "cli.py"), "demo", "--out", str(demo_dir), "--no-picture"],
                              capture_output=True, text=True, env=env, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"cli.py demo exited {done.returncode}: {done.stderr[-2000:]}")
        report = json.loads((demo_dir / "report.json").read_text())
        bpy.ops.wm.open_mainfile(filepath=str(demo_dir / "demo.blend"))
        scene = bpy.context.scene
        # wider than the demo's 4:3
        _demo(pkg).aim_camera(scene.camera, look_at=(0.0, 0.0, 1.0), location=(2.9, -4.6, 1.5))
        scene.camera.data.lens = 42
        half = (SIZE[0] // 2, SIZE[1] // 2)
        label = bpy.data.objects.new("Label", bpy.data.curves.new("Label", "FONT"))
        scene.collection.objects.link(label)
        label.data.materials.append(importlib.import_module(f"{pkg}.operators.bridge.meshes").colour_material(
            "Label", (0.95, 0.95, 0.95, 1.0)))
        label.parent = scene.camera
        label.location, label.scale = (-0.28, 0.12, -1.0), (0.04, 0.04, 0.04)
        tiles = []
        for f in frames:
            scene.frame_set(f)
            label.data.body = f"frame {f}"
            tile = Path(folder) / f"frame_{f}.png"
            _demo(pkg).workbench_render(tile, half)
            image = bpy.data.images.load(str(tile))
            pixels = np.empty(half[0] * half[1] * 4, dtype=np.float32)
            image.pixels.foreach_get(pixels)
            tiles.append(pixels.reshape(half[1], half[0], 4))  # rows bottom to top, as Blender stores them
            bpy.data.images.remove(image)
    top, bottom = np.hstack(tiles[:2]), np.hstack(tiles[2:])
    sheet = np.vstack([bottom, top])  # the first frames in the top row
    image = bpy.data.images.new("ContactSheet", SIZE[0], SIZE[1], alpha=False)
    image.pixels.foreach_set(sheet.ravel())
    image.filepath_raw, image.file_format = str(out), "PNG"
    scene.render.image_settings.color_mode = "RGB"
    image.save_render(str(out), scene=scene)
    return {"frames": list(frames), "missed": report["missed_frames"], "measured_by": report.get("measured_by"),
            "report_keys": sorted(report), "chain_keys": sorted(report["chains"][0]),
            "stdout": done.stdout.strip().splitlines()[-2:]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "images"), help="output folder (default: docs/images)")
    parser.add_argument("--only", nargs="+", choices=GUIDES, default=list(GUIDES), help="pictures to render")
    parser.add_argument("--write-trackers", action="store_true",
                        help=f"first write {TRACKERS.relative_to(ROOT)} from {MOCAP.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    bpy, pkg = _addon_modules()
    if args.write_trackers:
        write_mocap_trackers(pkg, TRACKERS)
        print(f"articulate: wrote {TRACKERS.relative_to(ROOT)}")
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    makers = {"animator": animator, "roboticist": roboticist, "full_body": full_body, "pipeline": pipeline}
    for name in args.only:
        t0 = time.perf_counter()
        picture = out / f"{name}.png"
        info = makers[name](bpy, pkg, picture)
        seconds, size_kb = time.perf_counter() - t0, picture.stat().st_size / 1024
        print(f"articulate: {picture.name}: {size_kb:.0f} KB in {seconds:.1f} s; {json.dumps(info)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
