# SPDX-License-Identifier: GPL-3.0-or-later
"""Damaged files through the core's readers: every refusal an ArticulateError, every answer finite.

Run from the repo root with the core venv (numpy only, no Blender; thousands of files a minute)::

    .venvs/core/bin/python dev/fuzz_files.py [--seconds 300] [--first-seed 1000] [--seeds 17,2038]

Each seed picks one of the readers a user's files reach (``KINDS``: BVH, URDF and its visuals,
a stored robot model's JSON, Collada and STL meshes, joint CSV / ROS JSON / MCAP trajectories,
pose and tracker CSVs, xacro), starts from a valid file of that kind (the repository's own data,
or one the core's writers write, with random sizes and names), damages it with one to four
random mutations (``mutate``: bytes flipped, a range cut, repeated or moved, the file cut short,
a number replaced by ``nan``, ``inf``, ``1e999``, ``-0``, an empty cell or a word, a line
dropped or doubled, a separator added, a NUL, bytes that are not UTF-8, a BOM, CRLF line ends,
a tag or quote removed) and reads it, under a time limit.

Printed, one line per finding: ``EXC`` an exception other than ``ArticulateError`` (what the
operators report as an "unexpected error" with a traceback) or ``OSError``; ``SLOW`` a read over
``--limit`` seconds; ``NAN`` an answer holding a non-finite number where the reader promises
finite ones (times, positions, mesh vertices, joint origins). With ``--seeds`` each seed prints
its file's path (kept) and the traceback.

A development tool: its findings become tests of the readers (``tests/core/formats``,
``tests/core/trajectory``).
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ik_core.errors import ArticulateError  # noqa: E402
from ik_core.formats.bvh import parse_bvh, read_bvh  # noqa: E402
from ik_core.formats.collada import read_collada  # noqa: E402
from ik_core.formats.stl import read_stl  # noqa: E402
from ik_core.formats.urdf import parse_urdf  # noqa: E402
from ik_core.formats.urdf_visuals import parse_visuals  # noqa: E402
from ik_core.formats.xacro_files import description_source  # noqa: E402
from ik_core.robots.model import RobotModel  # noqa: E402
from ik_core.trajectory import (  # noqa: E402
    JointTrajectory,
    PoseTrajectory,
    read_joint_csv,
    read_joint_json,
    read_pose_csv,
    read_tracker_csv,
    write_joint_csv,
    write_joint_json,
    write_pose_csv,
)
from ik_core.trajectory.mcap_files import read_joint_mcap, write_joint_mcap  # noqa: E402

KINDS = ("bvh", "urdf", "visuals", "model_json", "collada", "stl", "joint_csv", "joint_json", "joint_mcap",
         "pose_csv", "tracker_csv", "xacro")
WORDS = (b"nan", b"NaN", b"inf", b"-inf", b"1e999", b"-1e999", b"-0", b"", b"abc", b"0x10", b"1,5", b"\xc3\xa9",
         b"\x00", b"\xff\xfe", b"1e-400", b"99999999999999999999", b"-", b".", b"+", b" ", b"true", b"null")
TRACKERS = ("head", "left_hand", "right_hand")
# The bundled xacro descriptions that expand to a robot (the others are included by them).
ROBOT_XACRO = ("trossen_descriptions/urdf/px100.urdf.xacro", "kuka_kr6_support/urdf/kr6r700sixx.xacro")


class Timeout(Exception):
    """A read over the time limit."""


def _alarm(_signum, _frame):
    raise Timeout


# --- valid files -------------------------------------------------------------------------------------------------

def _small_bvh(rng: np.random.Generator) -> bytes:
    """The CMU walk's hierarchy with a few of its frames, or a two-joint file written here."""
    if rng.random() < 0.5:
        text = (ROOT / "data" / "mocap" / "cmu_131_01.bvh").read_text()
        head, _, motion = text.partition("MOTION")
        lines = motion.strip().splitlines()
        frames = lines[2 : 2 + int(rng.integers(1, 8))]  # after "Frames: N" and "Frame Time: t"
        return (head + "MOTION\n" + f"Frames: {len(frames)}\n{lines[1]}\n" + "\n".join(frames) + "\n").encode()
    rows = "\n".join(" ".join(f"{v:.4f}" for v in rng.normal(0, 10, 9)) for _ in range(int(rng.integers(1, 5))))
    return (
        "HIERARCHY\nROOT Hips\n{\n  OFFSET 0 0 0\n  CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation "
        "Yrotation\n  JOINT Leg\n  {\n    OFFSET 0 -1 0\n    CHANNELS 3 Zrotation Xrotation Yrotation\n"
        "    End Site\n    {\n      OFFSET 0 -1 0\n    }\n  }\n}\n"
        f"MOTION\nFrames: {rows.count(chr(10)) + 1}\nFrame Time: 0.0333333\n{rows}\n"
    ).encode()


def _urdf_path(rng: np.random.Generator) -> Path:
    return Path(rng.choice(sorted((ROOT / "data" / "robots").glob("*.urdf"))))


def _stl(rng: np.random.Generator) -> bytes:
    triangles = rng.normal(0, 1, (int(rng.integers(1, 6)), 3, 3))
    if rng.random() < 0.5:
        body = "".join(
            "facet normal 0 0 1\n outer loop\n" + "".join(f"  vertex {x:.5f} {y:.5f} {z:.5f}\n" for x, y, z in t)
            + " endloop\nendfacet\n" for t in triangles)
        return f"solid part\n{body}endsolid part\n".encode()
    out = bytearray(b"binary stl".ljust(80, b" "))
    out += np.uint32(len(triangles)).tobytes()
    for t in triangles:
        out += np.zeros(3, np.float32).tobytes() + t.astype(np.float32).tobytes() + b"\x00\x00"
    return bytes(out)


def _joint_trajectory(rng: np.random.Generator) -> JointTrajectory:
    names = tuple(f"joint_{k}" for k in range(int(rng.integers(1, 5))))
    n = int(rng.integers(1, 8))
    times = np.cumsum(rng.uniform(0.01, 0.2, n)) - 0.01
    return JointTrajectory(names, times, rng.normal(0, 1, (n, len(names))))


def _tracker_csv(rng: np.random.Generator) -> bytes:
    n = int(rng.integers(1, 6))
    header = ["time"] + [f"{t}_{c}" for t in TRACKERS for c in ("x", "y", "z", "qw", "qx", "qy", "qz")]
    rows = [",".join(header)]
    for k in range(n):
        values = [f"{k / 30:.5f}"]
        for _ in TRACKERS:
            quat = rng.normal(size=4)
            quat /= np.linalg.norm(quat)
            values += [f"{v:.5f}" for v in (*rng.normal(0, 1, 3), *quat)]
        rows.append(",".join(values))
    return ("\n".join(rows) + "\n").encode()


def valid_file(kind: str, rng: np.random.Generator, folder: Path) -> Path:
    """A valid file of ``kind`` in ``folder`` (the file the mutations then damage)."""
    if kind == "bvh":
        path = folder / "take.bvh"
        path.write_bytes(_small_bvh(rng))
    elif kind in ("urdf", "visuals"):
        path = folder / "robot.urdf"
        shutil.copy(_urdf_path(rng), path)
    elif kind == "model_json":
        path = folder / "model.json"
        path.write_text(RobotModel.from_urdf(_urdf_path(rng)).to_json())
    elif kind == "collada":
        meshes = sorted((ROOT / "presets" / "robots" / "meshes").rglob("*.dae"))
        path = folder / "mesh.dae"
        shutil.copy(meshes[int(rng.integers(len(meshes)))], path)
    elif kind == "stl":
        path = folder / "mesh.stl"
        path.write_bytes(_stl(rng))
    elif kind == "joint_csv":
        path = folder / "joints.csv"
        write_joint_csv(path, _joint_trajectory(rng))
    elif kind == "joint_json":
        path = folder / "joints.json"
        write_joint_json(path, _joint_trajectory(rng))
    elif kind == "joint_mcap":
        path = folder / "joints.mcap"
        write_joint_mcap(path, _joint_trajectory(rng))
    elif kind == "pose_csv":
        path = folder / "poses.csv"
        n = int(rng.integers(1, 6))
        quat = rng.normal(size=(n, 4))
        write_pose_csv(path, PoseTrajectory(np.arange(n) / 24.0, rng.normal(0, 1, (n, 3)),
                                            quat / np.linalg.norm(quat, axis=1, keepdims=True)))
    elif kind == "tracker_csv":
        path = folder / "trackers.csv"
        path.write_bytes(_tracker_csv(rng))
    elif kind == "xacro":
        shutil.copytree(ROOT / "data" / "robots" / "xacro", folder / "xacro")
        # A robot's own file (its links), or a file it includes (macros, materials, constants).
        candidates = sorted((folder / "xacro").rglob("*.xacro"))
        path = candidates[int(rng.integers(len(candidates)))]
        if rng.random() < 0.5:
            path = folder / "xacro" / ROBOT_XACRO[int(rng.integers(len(ROBOT_XACRO)))]
    else:
        raise ValueError(kind)
    return path


# --- damage --------------------------------------------------------------------------------------------------------

def mutate(data: bytes, rng: np.random.Generator) -> bytes:
    """``data`` damaged by one random mutation."""
    n = len(data)
    if n == 0:
        return bytes(rng.choice(WORDS))
    what = int(rng.integers(14))
    a = int(rng.integers(n))
    b = min(n, a + int(rng.integers(1, max(2, min(n - a, 64)) + 1)))
    if what == 0:  # flip a few bytes
        out = bytearray(data)
        for k in rng.integers(0, n, int(rng.integers(1, 4))):
            out[k] ^= int(rng.integers(1, 256))
        return bytes(out)
    if what == 1:  # cut a range
        return data[:a] + data[b:]
    if what == 2:  # repeat a range
        return data[:b] + data[a:b] + data[b:]
    if what == 3:  # cut short
        return data[: int(rng.integers(0, n))]
    if what in (4, 5, 6):  # a number becomes a word
        import re

        numbers = [m.span() for m in re.finditer(rb"-?\d+(\.\d+)?([eE][-+]?\d+)?", data)]
        if numbers:
            s, e = numbers[int(rng.integers(len(numbers)))]
            return data[:s] + bytes(rng.choice(WORDS)) + data[e:]
        return data + bytes(rng.choice(WORDS))
    lines = data.split(b"\n")
    k = int(rng.integers(len(lines)))
    if what == 7:  # drop a line
        return b"\n".join(lines[:k] + lines[k + 1 :])
    if what == 8:  # double a line
        return b"\n".join(lines[: k + 1] + lines[k:])
    if what == 9:  # a separator or a quote more (or less)
        token = bytes(rng.choice([b",", b";", b"\t", b'"', b"'", b"<", b">", b"/", b"{", b"}", b" "]))
        return data[:a] + token + data[a:]
    if what == 10:  # encodings: a BOM, CRLF line ends, bytes that are not UTF-8
        return bytes(rng.choice([b"\xef\xbb\xbf" + data, data.replace(b"\n", b"\r\n"), data[:a] + b"\xff\xfe\xfd"
                                 + data[a:], data.replace(b"\n", b"\r")]))
    if what == 11:  # move a range
        chunk = data[a:b]
        rest = data[:a] + data[b:]
        c = int(rng.integers(len(rest) + 1))
        return rest[:c] + chunk + rest[c:]
    if what == 12:  # swap two lines
        j = int(rng.integers(len(lines)))
        lines[k], lines[j] = lines[j], lines[k]
        return b"\n".join(lines)
    return data[:a] + bytes(rng.choice(WORDS)) + data[a:]  # a word inserted anywhere


# --- reading -------------------------------------------------------------------------------------------------------

def _finite(*arrays) -> bool:
    return all(np.all(np.isfinite(np.asarray(a, dtype=float))) for a in arrays)


def read(kind: str, path: Path) -> str:
    """Read ``path`` as ``kind``; returns a NAN finding's text, or "" (refusals raise)."""
    if kind == "bvh":
        bvh = read_bvh(path) if path.stat().st_size % 2 else parse_bvh(path.read_bytes().decode("utf-8", "replace"))
        ends = [j.end_site for j in bvh.joints if j.end_site is not None]
        ok = _finite(bvh.frame_time, bvh.motion, *(j.offset for j in bvh.joints), *ends) and bvh.frame_time > 0
        return "" if ok else "BVH values"
    if kind == "urdf":
        model = parse_urdf(path)
        robot = RobotModel(model)
        skeleton = robot.skeleton
        origins = [j.origin for j in skeleton.joints]
        return "" if _finite(*origins) else "URDF joint origins"
    if kind == "visuals":
        for vis in parse_visuals(path):
            if not _finite(vis.origin):
                return "visual origin"
        return ""
    if kind == "model_json":
        robot = RobotModel.from_json(path.read_bytes().decode("utf-8", "replace"))
        return "" if _finite(*(j.origin for j in robot.skeleton.joints)) else "stored model origins"
    if kind == "collada":
        return "" if all(_finite(m.positions, m.normals) for m in read_collada(path)) else "Collada vertices"
    if kind == "stl":
        return "" if _finite(read_stl(path).positions) else "STL vertices"
    if kind in ("joint_csv", "joint_json", "joint_mcap"):
        reader = {"joint_csv": read_joint_csv, "joint_json": read_joint_json}.get(kind)
        names = None if path.stat().st_size % 3 == 0 else ["joint_0"]
        if reader is None:
            traj = read_joint_mcap(path, names).trajectory
        else:
            traj = reader(path, names, ignore_unknown=names is not None)
        return "" if _finite(traj.times, traj.positions) else "joint trajectory values"
    if kind == "pose_csv":
        poses = read_pose_csv(path)
        return "" if _finite(poses.times, poses.positions, poses.quaternions) else "pose values"
    if kind == "tracker_csv":
        times, poses = read_tracker_csv(path, TRACKERS, required=("head",))
        return "" if _finite(times) else "tracker times"
    if kind == "xacro":
        # A damaged include is read through the robot that includes it.
        top = path if path.name in {Path(p).name for p in ROBOT_XACRO} else next(
            path.parents[2].glob(ROBOT_XACRO[path.stat().st_size % len(ROBOT_XACRO)]))
        parse_urdf(description_source(str(top), {}, []))
        return ""
    raise ValueError(kind)


def check(seed: int, limit: float, verbose: bool, keep: Path | None, tally: dict) -> list[str]:
    """The findings of ``seed``'s damaged file; ``tally[kind]`` counts its reads, refusals and findings."""
    rng = np.random.default_rng(seed)
    kind = KINDS[int(rng.integers(len(KINDS)))]
    folder = Path(tempfile.mkdtemp(prefix=f"fuzz-files-{seed}-", dir=keep))
    findings = []
    try:
        path = valid_file(kind, rng, folder)
        data = path.read_bytes()
        for _ in range(int(rng.integers(1, 5))):
            data = mutate(data, rng)
        path.write_bytes(data)
        if verbose:
            print(f"seed {seed}: {kind} {path}", flush=True)
        signal.setitimer(signal.ITIMER_REAL, limit)
        t0 = time.perf_counter()
        counts = tally.setdefault(kind, [0, 0, 0])
        counts[0] += 1
        try:
            bad = read(kind, path)
            if bad:
                findings.append(f"NAN {kind}: {bad} not finite")
        except Timeout:
            findings.append(f"SLOW {kind}: over {limit:g} s")
        except (ArticulateError, OSError) as err:
            counts[1] += 1
            if verbose:
                print(f"  refused: {type(err).__name__}: {str(err)[:300]}")
        except RecursionError:
            findings.append(f"EXC {kind}: RecursionError")
        except Exception as err:  # noqa: BLE001 (the findings)
            where = traceback.extract_tb(err.__traceback__)[-1]
            findings.append(f"EXC {kind}: {type(err).__name__}: {str(err)[:160]} "
                            f"({Path(where.filename).name}:{where.lineno})")
            if verbose:
                traceback.print_exc()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        counts[2] += len(findings)
        if verbose:
            print(f"  {time.perf_counter() - t0:.3f} s")
    finally:
        if keep is None or not findings:
            shutil.rmtree(folder, ignore_errors=True)
    return findings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=300.0, help="stop starting new seeds after this long")
    parser.add_argument("--first-seed", type=int, default=1000)
    parser.add_argument("--seeds", default="", help="comma-separated seeds to run (verbose, files kept) instead")
    parser.add_argument("--limit", type=float, default=10.0, help="seconds a read may take")
    args = parser.parse_args()
    signal.signal(signal.SIGALRM, _alarm)
    seeds = [int(s) for s in args.seeds.split(",") if s]
    keep = Path(tempfile.mkdtemp(prefix="fuzz-files-kept-")) if seeds else None
    start, runs, found = time.perf_counter(), 0, 0
    tally: dict[str, list[int]] = {}
    seed = args.first_seed
    while seeds or time.perf_counter() - start < args.seconds:
        if seeds:
            seed = seeds.pop(0)
        for finding in check(seed, args.limit, bool(args.seeds), keep, tally):
            found += 1
            print(f"seed {seed}: {finding}", flush=True)
        runs += 1
        seed += 1
        if not seeds and args.seeds:
            break
    for kind, (reads, refused, bad) in sorted(tally.items()):
        print(f"  {kind:12s} {reads:6d} files, {refused:6d} refused, {bad:4d} findings")
    print(f"{runs} seeds, {found} findings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
