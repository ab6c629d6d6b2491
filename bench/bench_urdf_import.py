# SPDX-License-Identifier: GPL-3.0-or-later
"""Import URDF in Blender against file size, and a 100-link humanoid with a mesh per link (issue 26, item 6).

Run from the repo root with a bpy venv:
``.venvs/5.0.1/bin/python bench/bench_urdf_import.py [--sizes 25,50,100,200,400] [--repeats 3]
[--mesh stl,obj,ply,gltf] [--profile] [--json] [--quick] [--repo DIR]`` (also ``.venvs/4.5.15`` and
``.venvs/4.2.23``). ``--repo`` imports the add-on from another checkout (say, an older commit
unpacked with ``git archive``) to compare.

Protocol. Each robot is written to a temporary folder and imported by the add-on's own operator
(``articulate.robot_import_urdf``) into an empty scene, timed as a whole (wall clock from the call
to its return: parsing, the rig, its bones, limits, drivers, chains, targets and link geometry),
the best of ``--repeats``, each into a fresh empty file.

- *Size*: generated trees of N revolute joints (a binary tree of 6-joint limbs, each limb's last
  link a leaf), every link with a box visual, no mesh files: the operator against file size.
- *Humanoid*: 100 links, 99 joints, shaped like a humanoid robot: a pelvis, a 3-joint spine, a
  2-joint neck and head, two 7-joint arms with 5-finger hands of 3 joints a finger (the fingers'
  second and third joints mimic their first), two 6-joint legs, and fixed frames (IMU, cameras,
  foot soles, tool frames); every link carries a mesh file of its own (a 12-sided tube of 48
  triangles, written by this script as binary STL, OBJ, binary PLY or glTF with an embedded
  buffer: one row per format), 100 files. Goal: at most 2 s.

``--profile`` prints the operator's 25 most expensive functions (cProfile, cumulative) for the
humanoid.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import math
import os
import pstats
import struct
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="articulate-bench-"))
ROOT = Path(__file__).resolve().parents[1]
REPO = Path(sys.argv[sys.argv.index("--repo") + 1]).resolve() if "--repo" in sys.argv[:-1] else ROOT
sys.path.insert(0, str(REPO))

import bpy  # noqa: E402
import numpy as np  # noqa: E402
from blender_output import stdout_to_stderr  # noqa: E402

import cli  # noqa: E402

GOAL_S = 2.0  # the humanoid's import [s]
SIDES = 12  # of each link's tube mesh


def _joint(name: str, kind: str, parent: str, child: str, xyz, axis="0 0 1", mimic: str = "") -> str:
    limit = "<limit lower='-2.5' upper='2.5' effort='20' velocity='3'/>" if kind == "revolute" else ""
    return (f"<joint name='{name}' type='{kind}'><parent link='{parent}'/><child link='{child}'/>"
            f"<origin xyz='{xyz[0]:.4f} {xyz[1]:.4f} {xyz[2]:.4f}' rpy='0 0 0'/><axis xyz='{axis}'/>{limit}"
            f"{mimic}</joint>")


def _link(name: str, visual: str) -> str:
    return f"<link name='{name}'><inertial><mass value='1'/><inertia ixx='0.01' ixy='0' ixz='0' iyy='0.01' " \
           f"iyz='0' izz='0.01'/></inertial>{visual}</link>"


def box_visual(_name: str) -> str:
    """A small box, no file."""
    return "<visual><origin xyz='0 0 0.02' rpy='0 0 0'/><geometry><box size='0.03 0.03 0.04'/></geometry></visual>"


def size_tree(n: int) -> str:
    """A tree of ``n`` revolute joints: 6-joint limbs, each hanging from a link of an earlier limb."""
    links, joints = [_link("base", box_visual("base"))], []
    for k in range(1, n + 1):
        limb, step = divmod(k - 1, 6)
        parent = f"l{k - 1}" if step else ("base" if limb == 0 else f"l{6 * ((limb - 1) // 2) + 3}")
        axis = ("0 0 1", "0 1 0", "1 0 0")[k % 3]
        links.append(_link(f"l{k}", box_visual(f"l{k}")))
        joints.append(_joint(f"j{k}", "revolute", parent, f"l{k}", (0.02, 0.01 * (limb % 3), 0.08), axis))
    return f"<?xml version='1.0'?>\n<robot name='tree{n}'>\n" + "\n".join(links + joints) + "\n</robot>\n"


def humanoid(mesh_ext: str) -> tuple[str, list[str]]:
    """The 100-link humanoid's URDF text (meshes at ``meshes/<link>.<ext>``) and its link names."""
    links: list[str] = []
    joints: list[str] = []

    def add(name: str, parent: str | None, kind: str = "revolute", xyz=(0, 0, 0.1), axis="0 0 1", mimic=""):
        visual = (f"<visual><origin xyz='0 0 0' rpy='0 0 0'/><geometry><mesh filename='meshes/{name}.{mesh_ext}'/>"
                  "</geometry></visual>")
        links.append(_link(name, visual))
        if parent is not None:
            joints.append(_joint(f"{name}_joint", kind, parent, name, xyz, axis, mimic))
        return name

    pelvis = add("pelvis", None)
    add("imu_link", pelvis, "fixed", (0, 0, 0.05))
    spine = pelvis
    for k, axis in enumerate(("0 0 1", "0 1 0", "1 0 0")):
        spine = add(f"torso_{k}", spine, xyz=(0, 0, 0.12), axis=axis)
    neck = add("neck_yaw", spine, xyz=(0, 0, 0.2))
    head = add("head", neck, xyz=(0, 0, 0.08), axis="0 1 0")
    for cam in ("camera_left", "camera_right", "camera_depth"):
        add(cam, head, "fixed", (0.08, 0.03, 0.05))
    for side, sign in (("l", 1), ("r", -1)):
        arm = spine
        for k, axis in enumerate(("0 1 0", "1 0 0", "0 0 1", "0 1 0", "0 0 1", "0 1 0", "1 0 0")):
            arm = add(f"{side}_arm_{k}", arm, xyz=(0, sign * (0.18 if k == 0 else 0.0), -0.12 if k else 0.1),
                      axis=axis)
        add(f"{side}_tool", arm, "fixed", (0, 0, -0.12))
        for f in range(5):
            base = add(f"{side}_finger{f}_0", arm, xyz=(0.03, sign * 0.015 * (f - 2), -0.08), axis="0 1 0")
            for s in (1, 2):
                mimic = f"<mimic joint='{side}_finger{f}_0_joint' multiplier='{0.8 if s == 1 else 0.6}' offset='0'/>"
                base = add(f"{side}_finger{f}_{s}", base, xyz=(0, 0, -0.03), axis="0 1 0", mimic=mimic)
        leg = pelvis
        for k, axis in enumerate(("0 0 1", "1 0 0", "0 1 0", "0 1 0", "0 1 0", "1 0 0")):
            leg = add(f"{side}_leg_{k}", leg, xyz=(0, sign * (0.1 if k == 0 else 0.0), -0.05 if k < 3 else -0.35),
                      axis=axis)
        add(f"{side}_sole", leg, "fixed", (0.02, 0, -0.06))
    names = [link.split("'")[1] for link in links]
    # Fill up to 100 links with fixed sensor frames on the torso (a humanoid's many frames).
    k = 0
    while len(names) < 100:
        names.append(add(f"sensor_{k}", spine, "fixed", (0.05, 0.01 * k, 0.0)))
        k += 1
    text = "<?xml version='1.0'?>\n<robot name='humanoid'>\n" + "\n".join(links + joints) + "\n</robot>\n"
    return text, names


def tube(radius: float = 0.02, length: float = 0.08) -> tuple[np.ndarray, np.ndarray]:
    """(V, 3) vertices and (T, 3) triangles of a closed tube along Z: ``4 * SIDES`` triangles."""
    a = np.linspace(0, 2 * math.pi, SIDES, endpoint=False)
    ring = np.stack([radius * np.cos(a), radius * np.sin(a)], axis=1)
    verts = np.vstack([np.c_[ring, np.zeros(SIDES)], np.c_[ring, np.full(SIDES, length)],
                       [[0, 0, 0], [0, 0, length]]])
    tris = []
    for i in range(SIDES):
        j = (i + 1) % SIDES
        tris += [(i, j, SIDES + j), (i, SIDES + j, SIDES + i), (2 * SIDES, j, i),
                 (2 * SIDES + 1, SIDES + i, SIDES + j)]
    return verts, np.array(tris)


def write_stl(path: Path, verts: np.ndarray, tris: np.ndarray) -> None:
    """Binary STL."""
    out = bytearray(b"articulate bench".ljust(80, b" ")) + struct.pack("<I", len(tris))
    for t in tris:
        a, b, c = verts[t]
        n = np.cross(b - a, c - a)
        n = n / (np.linalg.norm(n) or 1.0)
        out += struct.pack("<12fH", *n, *a, *b, *c, 0)
    path.write_bytes(bytes(out))


def write_obj(path: Path, verts: np.ndarray, tris: np.ndarray) -> None:
    """Wavefront OBJ, vertices and triangles only."""
    lines = [f"v {x:.5f} {y:.5f} {z:.5f}" for x, y, z in verts] + [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in tris]
    path.write_text("\n".join(lines) + "\n")


def write_ply(path: Path, verts: np.ndarray, tris: np.ndarray) -> None:
    """Binary little-endian PLY, vertices and triangles."""
    head = (f"ply\nformat binary_little_endian 1.0\nelement vertex {len(verts)}\nproperty float x\n"
            f"property float y\nproperty float z\nelement face {len(tris)}\n"
            "property list uchar int vertex_indices\nend_header\n").encode()
    faces = b"".join(struct.pack("<B3i", 3, *map(int, t)) for t in tris)
    path.write_bytes(head + verts.astype("<f4").tobytes() + faces)


def write_gltf(path: Path, verts: np.ndarray, tris: np.ndarray) -> None:
    """glTF 2.0, one mesh node, its buffer embedded (base64); Y up, so the tube's Z is written as glTF's Y."""
    import base64

    points = (verts[:, [0, 2, 1]] * [1, 1, -1]).astype("<f4")  # Blender (x, y, z) is glTF (x, z, -y)
    data = points.tobytes() + tris.astype("<u2").tobytes()
    data += b"\0" * (-len(data) % 4)
    path.write_text(json.dumps({
        "asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0]}], "nodes": [{"mesh": 0}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0}, "indices": 1}]}],
        "buffers": [{"byteLength": len(data),
                     "uri": "data:application/octet-stream;base64," + base64.b64encode(data).decode()}],
        "bufferViews": [{"buffer": 0, "byteOffset": 0, "byteLength": points.nbytes},
                        {"buffer": 0, "byteOffset": points.nbytes, "byteLength": 2 * tris.size}],
        "accessors": [{"bufferView": 0, "componentType": 5126, "count": len(points), "type": "VEC3",
                       "min": points.min(axis=0).tolist(), "max": points.max(axis=0).tolist()},
                      {"bufferView": 1, "componentType": 5123, "count": int(tris.size), "type": "SCALAR"}],
    }))


WRITERS = {"stl": write_stl, "obj": write_obj, "ply": write_ply, "gltf": write_gltf}


def import_once(path: Path) -> tuple[float, int]:
    """Seconds of one Import URDF into an empty file, and the objects it made."""
    with stdout_to_stderr():
        bpy.ops.wm.read_homefile(use_empty=True)
        t = time.perf_counter()
        done = bpy.ops.articulate.robot_import_urdf(filepath=str(path))
        wall = time.perf_counter() - t
    assert done == {"FINISHED"}, done
    return wall, len(bpy.data.objects)


def best(path: Path, repeats: int) -> tuple[float, int]:
    runs = [import_once(path) for _ in range(repeats)]
    return min(r[0] for r in runs), runs[-1][1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="25,50,100,200,400", help="joint counts of the size rows")
    parser.add_argument("--repeats", type=int, default=3, help="timed imports per row; the best is reported")
    parser.add_argument("--mesh", default=",".join(WRITERS),
                        help=f"the humanoid's mesh file formats, comma-separated, of {', '.join(WRITERS)}")
    parser.add_argument("--quick", action="store_true", help="sizes 25,100, one run each")
    parser.add_argument("--profile", action="store_true", help="print where the humanoid's import spends its time")
    parser.add_argument("--json", action="store_true", help="print one JSON object per row")
    parser.add_argument("--repo", default="", help="import the add-on from this checkout instead of this one")
    args = parser.parse_args()
    sizes = [25, 100] if args.quick else [int(s) for s in args.sizes.split(",") if s]
    formats = [m for m in args.mesh.split(",") if m]
    if not formats or set(formats) - set(WRITERS):
        parser.error(f"--mesh takes formats of {', '.join(WRITERS)}, comma-separated; got {args.mesh!r}")
    repeats = 1 if args.quick else args.repeats
    with stdout_to_stderr():
        cli.ensure_addon()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for n in sizes:
            path = folder / f"tree{n}.urdf"
            path.write_text(size_tree(n))
            wall, objects = best(path, repeats)
            rows.append({"robot": f"tree of {n} joints, boxes", "links": n + 1, "joints": n, "mesh_files": 0,
                         "kb": path.stat().st_size / 1e3, "import_s": wall, "objects": objects})
        (folder / "meshes").mkdir()
        verts, tris = tube()
        for ext in formats:
            text, names = humanoid(ext)
            for name in names:
                WRITERS[ext](folder / "meshes" / f"{name}.{ext}", verts, tris)
            path = folder / f"humanoid_{ext}.urdf"
            path.write_text(text)
            wall, objects = best(path, repeats)
            rows.append({"robot": f"humanoid, {ext.upper()} per link", "links": len(names),
                         "joints": text.count("<joint "), "mesh_files": len(names), "kb": path.stat().st_size / 1e3,
                         "import_s": wall, "objects": objects, "goal_s": GOAL_S})
        if args.profile:
            profiler = cProfile.Profile()
            with stdout_to_stderr():
                bpy.ops.wm.read_homefile(use_empty=True)
                profiler.enable()
                bpy.ops.articulate.robot_import_urdf(filepath=str(path))
                profiler.disable()
            stream = io.StringIO()
            pstats.Stats(profiler, stream=stream).sort_stats("cumulative").print_stats(25)
            print(stream.getvalue())
    if args.json:
        for r in rows:
            print(json.dumps({"blender": bpy.app.version_string, "repo": str(REPO), **r}))
        return 0
    print(f"Blender {bpy.app.version_string}: Import URDF, best of {repeats}, the add-on from {REPO}")
    print(f"{'robot':28s} {'links':>5s} {'joints':>6s} {'meshes':>6s} {'KB':>7s} {'objects':>7s} {'import s':>8s} "
          f"{'ms/link':>7s}")
    for r in rows:
        goal = f"  (goal <= {r['goal_s']:.0f} s)" if "goal_s" in r else ""
        print(f"{r['robot']:28s} {r['links']:5d} {r['joints']:6d} {r['mesh_files']:6d} {r['kb']:7.1f} "
              f"{r['objects']:7d} {r['import_s']:8.3f} {1e3 * r['import_s'] / r['links']:7.1f}{goal}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
