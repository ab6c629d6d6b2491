# SPDX-License-Identifier: GPL-3.0-or-later
"""Random command lines through ``cli.py``, run as a pipeline runs it: a subprocess, its exit code, its files.

Run from the repo root with a bpy venv (one Blender process at a time: the fuzzer's own, then each child)::

    BLENDER_USER_RESOURCES=$(mktemp -d) .venvs/5.0.1/bin/python dev/fuzz_cli.py [--seconds 300]
        [--first-seed 1000] [--seeds 1004,1017] [--keep /tmp/fz_cli]

Each seed builds its input files with the bpy module in this process, in a temp folder, on first use: a
rig with IK constraints and a keyed target (one of the parity scenes, the same with chains already made
from its constraints, or the random rig of ``dev/fuzz_bake.py``), a robot rig (a preset added by
``articulate.robot_add``, or a small URDF arm imported by ``articulate.robot_import_urdf``), sometimes
keyed from a joint CSV, the CMU skeleton with keyed head and hand trackers, URDF files (the small arm,
its xacro, the random ones of ``dev/fuzz_robots.py``, damaged or not), joint trajectories (CSV, ROS
JSON, MCAP) and a known-steps CSV; the .blend files now and then compressed, as the CLI writes its own.
Then 3-5 invocations of ``cli.py`` as subprocesses (``[python, cli.py, command, ...]``,
``BLENDER_USER_RESOURCES`` set, a 120 s timeout, the cwd a scratch folder), each one command (demo,
bake, check, export, trajectory, robot, body, ik-to-fk, fk-to-ik), a ``--help``, or a jumble of tokens,
with arguments drawn from valid and invalid ones: the input missing, a folder, empty, text, a truncated
.blend, a gzip or Blender header over garbage, omitted, relative, under an odd name (one not UTF-8 too);
a wrong, empty or non-armature name; frame ranges reversed, signed, beyond Blender's last frame, with a
step where none is taken, not numbers; solvers and numbers in and out of range, NaN, infinity; outputs
in a missing folder, a chmod 555 folder, under ``/proc``, under a file, on a folder, on a pipe or a
device node of its own (never ``/dev/null`` itself: a save renames its file over the path), empty, equal
to the input (a copy, perhaps through a link), with odd extensions, with a ``//`` prefix, not UTF-8,
already there (a sentinel); unknown, repeated, abbreviated and conflicting options, a stray positional;
trajectories with NaN, missing, unknown or renamed joints, unsorted or repeated times, ragged rows,
empty, header only, invalid JSON, truncated MCAP, a topic where none is taken, a name that is not UTF-8.
About half the invocations are drawn again until every argument is valid.

Every drawn argument is valid, invalid (exit 2 expected, with text the error must show) or uncertain (a
random rig or URDF, a solver that may not suit the chain: 0, 2 or 3 are all fine). Printed, one line per
finding, ``seed N: KIND command: detail`` (the command line with the seed's folder as ``$D``):
``TRACEBACK`` a traceback in the output, an operator's "unexpected error" (a traceback it caught), a
signal or the timeout; ``EXIT`` an exit code outside 0-3, exit 1 (the "other error" of a bug), 0 or 3 on
invalid input, 2 on valid input or for an unexpected error; ``SILENT`` an exit 1 or 2 without an error
line, an exit 2 whose error names none of what was wrong, an exit 3 saying nothing missed; ``OUTPUT`` on
exit 0/3 a promised output (.blend, report, export) missing or unreadable (a .blend is opened in this
process), a file the CLI says it wrote missing, another file changed (the input) or made; on exit 2 any
file written, changed or deleted (the seed's folder is compared byte for byte and by mtime before and
after); ``REPORT`` a report whose missed or flagged frames disagree with the exit code. With ``--seeds``
each invocation is printed; with ``--keep DIR`` a seed with a finding leaves its folder in
``DIR/seed_N``.

A development tool: its findings become tests (``tests/blender/test_cli.py``,
``tests/blender/test_cli_arguments.py``).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import importlib
import io
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="articulate-fuzz-"))
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path[:0] = [str(ROOT / "dev"), str(ROOT / "tests"), str(ROOT / "tests" / "blender")]

import bpy  # noqa: E402
import numpy as np  # noqa: E402
import parity_scenes as ps  # noqa: E402
from fuzz_bake import build as random_rig  # noqa: E402
from fuzz_robots import DAMAGES, random_urdf  # noqa: E402
from test_fullbody_bake import cmu_tracked  # noqa: E402

import cli  # noqa: E402

CLI = ROOT / "cli.py"
TIMEOUT = 120.0  # seconds per invocation; the largest drawn bake takes a few
ADDON = None  # the registered add-on package, set by main()
TRACEBACK = "Traceback (most recent call last)"
UNEXPECTED = "unexpected error"  # operators/transaction.py: an exception no check of the operator foresaw
ROOT_USER = os.geteuid() == 0  # root writes into chmod 555 folders and over chmod 444 files: not bad input then
# Parity scenes that Chains from IK Constraints and the bake take as they are (a chain each, keyed target).
KNOWN_RIGS = (ps.build_chain3, ps.build_chain5, ps.build_chain0, ps.build_tail_off, ps.build_pole_object)
PRESETS = ("ur5", "ur5e", "ur10e", "panda", "kinova_gen3_7dof", "lbr_iiwa_14_r820")
# What an exit 3 must say: which frames missed, were flagged or over the tolerance, or the bake's warnings.
SAID_MISSED = re.compile(r"missed|flagged|warning|over 1 mm|frames converged", re.IGNORECASE)
# The small arm the robot command and robot rigs are made from: three revolute joints to a tool link.
ARM_URDF = """<?xml version="1.0"?>
<robot name="{name}" xmlns:xacro="http://www.ros.org/wiki/xacro">{arg}
  <link name="{p}base"><visual><geometry><box size="0.1 0.1 0.1"/></geometry></visual></link>
  <link name="{p}upper"/>
  <link name="{p}fore"/>
  <link name="{p}tool"/>
  <joint name="{p}shoulder" type="revolute"><parent link="{p}base"/><child link="{p}upper"/>
    <origin xyz="0 0 0.1"/><axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="2"/></joint>
  <joint name="{p}elbow" type="revolute"><parent link="{p}upper"/><child link="{p}fore"/>
    <origin xyz="0 0 0.4"/><axis xyz="0 1 0"/><limit lower="-2.5" upper="2.5" effort="1" velocity="2"/></joint>
  <joint name="{p}wrist" type="revolute"><parent link="{p}fore"/><child link="{p}tool"/>
    <origin xyz="0 0 0.3"/><axis xyz="0 1 0"/><limit lower="-2" upper="2" effort="1" velocity="2"/></joint>
</robot>
"""
ARM_LINKS = ("base", "upper", "fore", "tool")


def addon(name: str):
    """A module of the registered add-on, ``operators.fullbody`` for example."""
    return importlib.import_module(f"{ADDON.__name__}.{name}")


def quiet():
    """Blender's messages while this process builds or opens files (file descriptors 1 and 2) go nowhere:
    the fuzzer's output is its findings."""
    return cli.blender_output(Path(os.devnull))


# --- the seed's input files, built in this process ---------------------------------------------------------

@dataclass
class Rig:
    """A saved character rig: its file, armature, the other objects, what kind of rig, its frames and chains."""

    path: Path
    armature: str
    others: list[str]
    kind: str  # "known" (IK constraints), "chains" (chains made from them), "random" (fuzz_bake's)
    frames: int
    chains: list[str] = field(default_factory=list)


@dataclass
class Robot:
    """A saved robot rig: its file, rig name, the joint names files use, their limits, frames, trajectory kept."""

    path: Path
    rig: str
    joints: list[str]
    lower: np.ndarray
    upper: np.ndarray
    frames: int
    keyed: bool  # a joint trajectory was imported (check and export default to its frames)
    others: list[str] = field(default_factory=list)  # objects of the file that are no robot rig


@dataclass
class Body:
    """A saved humanoid with trackers: its file, armature, tracker objects by role, frames."""

    path: Path
    armature: str
    trackers: dict[str, str]
    frames: int


class Inputs:
    """The input files of one seed, each built on first use from the seed's generator."""

    def __init__(self, folder: Path, rng: np.random.Generator, seed: int) -> None:
        self.folder, self.rng, self.seed = folder, rng, seed
        self.folder.mkdir(parents=True, exist_ok=True)
        self._rig: Rig | None = None
        self._robot: Robot | None = None
        self._body: Body | None = None

    def _save(self, name: str) -> Path:
        path = self.folder / name
        with quiet():  # now and then compressed, as the CLI's own outputs are (a bake of a bake)
            bpy.ops.wm.save_as_mainfile(filepath=str(path), compress=bool(self.rng.random() < 0.3))
        return path

    def rig(self) -> Rig:
        """A rig with IK constraints and a keyed target: a parity scene (a third of them with chains made), or
        fuzz_bake's random rig, which the bake may refuse."""
        if self._rig is not None:
            return self._rig
        rng = self.rng
        draw = rng.random()
        frames = int(rng.integers(20, 41))  # the parity scenes' target paths need 20 frames
        with quiet():
            if draw < 0.3:
                arm, _settings = random_rig(int(rng.integers(0, 2**31)), frames)
                kind = "random"
            else:
                bpy.ops.wm.read_homefile(use_empty=True)
                arm = bpy.data.objects[KNOWN_RIGS[int(rng.integers(len(KNOWN_RIGS)))](frames).armature]
                kind = "chains" if draw > 0.75 else "known"
            scene = bpy.context.scene
            scene.frame_start, scene.frame_end = 1, frames
            chains: list[str] = []
            if kind == "chains":
                bpy.context.view_layer.objects.active = arm
                bpy.ops.articulate.chains_from_constraints()
                chains = [c.name for c in arm.articulate.chains]
        others = [o.name for o in bpy.data.objects if o.type != "ARMATURE"]
        self._rig = Rig(self._save("rig.blend"), arm.name, others, kind, frames, chains)
        return self._rig

    def robot(self) -> Robot:
        """A robot rig (a preset, or the small URDF arm imported), its scene 10-40 frames long, often keyed from a
        joint CSV within its limits."""
        if self._robot is not None:
            return self._robot
        rng = self.rng
        frames = int(rng.integers(10, 41))
        with quiet():
            bpy.ops.wm.read_homefile(use_empty=True)
            scene = bpy.context.scene
            scene.frame_start, scene.frame_end = 1, frames
            if rng.random() < 0.6:
                bpy.ops.articulate.robot_add(preset=str(rng.choice(PRESETS)))
            else:
                urdf = self.folder / "made_from.urdf"
                urdf.write_text(ARM_URDF.format(name="arm", arg="", p=""))
                bpy.ops.articulate.robot_import_urdf(filepath=str(urdf))
            arm = bpy.context.object
            joints = json.loads(arm["articulate_robot"])["joints"]
            names = addon("operators.robots").file_joint_names(joints)
            lower = np.array([j.get("lower") if j.get("lower") is not None else -np.pi for j in joints], float)
            upper = np.array([j.get("upper") if j.get("upper") is not None else np.pi for j in joints], float)
            keyed = bool(rng.random() < 0.6)
            if keyed:
                path = self.folder / "keyed_from.csv"
                t, q = joint_path(rng, lower, upper, frames, fps=float(scene.render.fps))
                write_csv(path, ["time", *names], np.column_stack([t, q]))
                bpy.ops.articulate.trajectory_import(filepath=str(path))
            frames = scene.frame_end - scene.frame_start + 1
        others = [o.name for o in bpy.data.objects if "articulate_robot" not in o][:6]
        self._robot = Robot(self._save("robot.blend"), arm.name, list(names), lower, upper, frames, keyed, others)
        return self._robot

    def body(self) -> Body:
        """The CMU skeleton playing its capture, with empties keyed on its head and hands (the trackers)."""
        if self._body is not None:
            return self._body
        frames = int(self.rng.integers(8, 21))
        with quiet():
            bpy.ops.wm.read_homefile(use_empty=True)
            arm, trackers = cmu_tracked(frames)
            bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, frames
        self._body = Body(self._save("body.blend"), arm.name, {k: t.name for k, t in trackers.items()}, frames)
        return self._body


def joint_path(rng: np.random.Generator, lower: np.ndarray, upper: np.ndarray, samples: int,
               fps: float) -> tuple[np.ndarray, np.ndarray]:
    """(times, positions) of a smooth path inside the joint limits, ``samples`` long at ``fps``."""
    t = np.arange(samples) / fps
    mid = (lower + upper) / 2
    amp = (upper - lower) / 2 * rng.uniform(0.05, 0.5, len(lower))
    q = mid + amp * np.sin(2 * np.pi * rng.uniform(0.1, 1.0, len(lower)) * t[:, None] + rng.uniform(0, 6, len(lower)))
    return t, q


def write_csv(path: Path, header: list[str], rows: np.ndarray | list) -> None:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([repr(float(v)) if isinstance(v, (float, np.floating)) else v for v in row])
    path.write_text(buf.getvalue(), encoding="utf-8")


# --- one invocation ------------------------------------------------------------------------------------------

@dataclass
class Case:
    """One command line being drawn: its arguments, what it must do, and the outputs it promises."""

    command: str
    rng: np.random.Generator
    positional: list[str] = field(default_factory=list)
    options: list[tuple[str, str | None]] = field(default_factory=list)
    bad: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)  # (what, text the error may name it by)
    unsure: list[str] = field(default_factory=list)  # drawn arguments that may fairly be refused
    notes: list[str] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)  # path (as the OS resolves it) -> kind
    report: tuple[str, str] | None = None  # (path, which report check)
    holds: dict[str, list[str]] = field(default_factory=dict)  # a .blend output -> objects it must hold
    help: bool = False
    jumble: bool = False
    raw: list[str] | None = None  # a whole argv drawn as is (jumbles, unknown commands)
    source: str | None = None  # the input .blend as given (the positional, or the robot command's --into)

    def add(self, flag: str, value: str | None = None) -> None:
        self.options.append((flag, value))

    def refuse(self, what: str, *needles: str) -> None:
        """Record an invalid argument: exit 2, the error naming one of ``needles``."""
        self.bad.append((what, needles))

    def swap(self, old: str, new: str) -> None:
        """Give ``new`` wherever ``old`` was given (the positional or an option's value)."""
        self.positional = [new if p == old else p for p in self.positional]
        self.options = [(f, new if v == old else v) for f, v in self.options]
        self.source = new if self.source == old else self.source

    def maybe(self, what: str) -> None:
        self.unsure.append(what)

    @property
    def expect(self) -> str:
        """"help", "bad" (exit 2), "any" (0, 2 or 3) or "ok" (0 or 3)."""
        if self.help:
            return "help"
        if self.bad:
            return "bad"
        return "any" if self.unsure or self.jumble else "ok"

    def argv(self) -> list[str]:
        """The command line: options in a random order, sometimes ``--flag=value``, the positional anywhere."""
        if self.raw is not None:
            return list(self.raw)
        words: list[list[str]] = []
        for flag, value in self.options:
            if value is None:
                words.append([flag])
            elif value.startswith("-") or value == "" or self.rng.random() < 0.15:
                words.append([f"{flag}={value}"])  # a value starting with '-' would read as an option
            else:
                words.append([flag, value])
        order = list(self.rng.permutation(len(words))) if self.rng.random() < 0.5 else list(range(len(words)))
        # An option given twice keeps its order: the last one counts, and the drawing knows which that is.
        for flag in {f for f, _v in self.options}:
            slots = [i for i, k in enumerate(order) if self.options[k][0] == flag]
            for i, k in zip(slots, sorted(order[i] for i in slots)):
                order[i] = k
        flat = [w for k in order for w in words[k]]
        if self.positional:
            cut = 0 if self.rng.random() < 0.7 else int(self.rng.integers(0, len(order) + 1))
            flat = [w for k in order[:cut] for w in words[k]] + self.positional + [w for k in order[cut:]
                                                                                   for w in words[k]]
        return [self.command, *flat]


class Seed:
    """One seed's generator, folders, inputs and findings."""

    def __init__(self, seed: int, folder: Path, verbose: bool) -> None:
        self.seed, self.folder, self.verbose = seed, folder, verbose
        self.rng = np.random.default_rng(seed)
        self.inputs = Inputs(folder / "in", self.rng, seed)
        self.cwd = folder / "cwd"
        self.cwd.mkdir(parents=True)
        self.count = 0  # invocations so far: each gets its own output folder
        self.findings: list[str] = []

    def case(self, command: str) -> Case:
        self.count += 1
        return Case(command, self.rng)

    @property
    def out(self) -> Path:
        """This invocation's output folder (made on demand, so a missing folder is the CLI's to make)."""
        return self.folder / f"out{self.count}"

    def pick(self, *weights: float) -> int:
        """An index drawn with these weights."""
        p = np.asarray(weights, float)
        return int(self.rng.choice(len(p), p=p / p.sum()))

    def show(self, argv: list[str]) -> str:
        """The command line as a shell takes it, the seed's folder as $D."""
        return printable(shlex.join(argv).replace(str(self.folder), "$D"))


# --- drawing arguments ---------------------------------------------------------------------------------------

def blend_arg(s: Seed, case: Case, path: Path, objects: str = "armature") -> str | None:
    """The input .blend as given: itself (relative, renamed), missing, a folder, not a .blend, or omitted.

    Returns the path given (None when omitted), whose stem names the outputs of --out-dir.
    """
    rng, given = s.rng, str(path)
    k = s.pick(60, 6, 4, 3, 4, 4, 4, 4, 3, 3, 3, 2)
    scratch = s.folder / f"input{s.count}"
    if k == 1:
        given = os.path.relpath(path, s.cwd)
        case.notes.append("relative input")
    elif k == 2:
        scratch.mkdir()
        renamed = scratch / str(rng.choice(["my rig (v2).blend", "\u00fcbung \u30ea\u30b0.blend", "rig.BLEND",
                                            "rig.txt", "rig", os.fsdecode(b"r\xffig.blend")]))
        shutil.copyfile(path, renamed)
        given = str(renamed)
        case.notes.append(f"input renamed {renamed.name!r}")
    elif k == 3:
        given = str(s.folder / "no_such.blend")
        case.refuse("missing input", given)
    elif k == 4:
        given = str(s.folder / "in")
        case.refuse("input is a folder", given)
    elif k in (5, 6, 7, 8, 9):
        scratch.mkdir()
        bad = scratch / "broken.blend"
        data = path.read_bytes()
        content, what = {
            5: (b"", "empty input"),
            6: (b"hello, this is text\n", "text input"),
            7: (data[: int(rng.integers(12, max(13, int(len(data) * 0.9))))], "truncated input"),
            8: (b"\x1f\x8b" + rng.bytes(int(rng.integers(0, 500))), "gzip header over garbage"),
            9: (b"BLENDER-v500" + rng.bytes(int(rng.integers(0, 500))), "Blender header over garbage"),
        }[k]
        bad.write_bytes(content)
        given = str(bad)
        case.refuse(what, given)
    elif k == 10:
        given = ""
        case.refuse("empty input path", ".blend path is empty")
    elif k == 11:
        case.refuse("input omitted (an empty scene)", f"no {objects}")
        return None
    case.positional.append(given)
    case.source = given
    return given


def name_arg(s: Seed, case: Case, flag: str, good: str, others: list[str], what: str) -> None:
    """``flag`` naming ``good``, or a wrong, empty or other object's name (bad), or given twice (the last counts)."""
    k = s.pick(80, 6, 4, 4, 3, 3)
    if k == 0:
        case.add(flag, good)
    elif k == 1:
        wrong = str(s.rng.choice(["Nope", good.lower() if good.lower() != good else good.upper(), f"{good}.001"]))
        case.add(flag, wrong)
        case.refuse(f"{flag} {wrong!r} names no {what}", wrong)
    elif k == 2 and others:
        other = str(s.rng.choice(others))
        case.add(flag, other)
        case.refuse(f"{flag} {other!r} is not a {what}", other)
    elif k == 3:
        case.add(flag, str(s.rng.choice(["", " "])))
        case.refuse(f"{flag} empty", flag)
    elif k == 4:
        case.add(flag, "Nope")
        case.add(flag, good)
        case.notes.append(f"{flag} twice, the good one last")
    else:
        case.add(flag, good)
        case.add(flag, good)
        case.notes.append(f"{flag} twice")


def frames_arg(s: Seed, case: Case, last: int, kind: str, p: float = 0.6) -> tuple[int, int] | None:
    """``--frames`` (with probability ``p``): a valid range near the scene's, or a bad one. ``kind``: "step" (bake,
    body), "every" (ik-to-fk, fk-to-ik) or "robot" (check, export: also 'trajectory').

    Returns the range given (None for the scene's or the trajectory's, or when none was given).
    """
    rng = s.rng
    if rng.random() > p:
        return None
    if rng.random() < 0.7:
        a = int(rng.integers(0, last + 1))
        b = int(rng.integers(a, last + 6))
        choices = [f"{a}-{b}", f"{a}", "scene"]
        if kind == "step":
            choices.append(f"{a}-{b}:{int(rng.integers(1, 4))}")
        if kind == "robot":
            choices.append("trajectory")
        text = str(rng.choice(choices))
        case.add("--frames", text)
        if kind != "step" and text not in ("scene", "trajectory") and (a == b or "-" not in text):
            case.maybe(f"--frames {text}: a single frame")  # no velocity or switch to judge on one frame
        return None if text in ("scene", "trajectory") else (a, b if "-" in text else a)
    bad = ["9-3", "-5-10", "-1", f"1-{cli.MAX_FRAME + 1}", "1-99999999999999999999", "abc", "1.5-3", "1-5:0",
           "", " 1-5", "1-", "1_0-20", "+1-5", "1-5:x", "nan"]
    if kind == "every":
        bad += ["1-9:2", "1-9:3"]
    if kind != "robot":
        bad += ["trajectory"]
    text = str(rng.choice(bad))
    case.add("--frames", text)
    case.refuse(f"--frames {text!r}", "--frames")
    return None


def number_arg(s: Seed, case: Case, flag: str, low: float, high: float, whole: bool = False,
               p: float = 0.3, cap: float | None = None) -> None:
    """``flag`` with a number in [low, high] (valid ones at most ``cap``: a rate of 30000 Hz exports a long file),
    or one that is not: NaN, infinity, out of range, a fraction, text."""
    rng = s.rng
    if rng.random() > p:
        return
    if rng.random() < 0.65:
        top = high if cap is None else cap
        value = int(rng.integers(int(low), int(min(top, low + 60)) + 1)) if whole else float(
            rng.choice([low, rng.uniform(low, min(top, low + 10)), top]))
        case.add(flag, str(value) if whole else repr(value))
        return
    choices = ["nan", "inf", "-inf", "1e400", "abc", "", repr(high * 10 + 1), repr(low - 1)]
    if whole:
        choices.append("2.5")
    text = str(rng.choice(choices))
    case.add(flag, text)
    case.refuse(f"{flag} {text!r}", flag)


def output_arg(s: Seed, case: Case, flag: str, name: str, kind: str,
               suffixes: tuple[str, ...] | None = None) -> str | None:
    """``flag`` naming an output file, drawn among good and bad places; records what it promises.

    Args:
        s: The seed.
        case: The invocation.
        flag: The option.
        name: The file name of a plain draw (``report.json``).
        kind: How a written file is checked ("blend", "json", "check", "export").
        suffixes: The extensions the command takes ("" for none), None for any.

    Returns:
        The output path as the OS resolves it (None when the draw cannot be written).
    """
    rng = s.rng
    out = s.out
    path = out / name
    input_path = case.source
    k = s.pick(50, 8, 6, 4, 3, 3, 3, 3, 3, 5, 3, 2, 2, 1, 2)
    given = str(path)
    writable = True
    if k == 1:
        path = out / "new" / "deeper" / name
        given = str(path)
        case.notes.append(f"{flag} in a missing folder")
    elif k == 2:
        given = os.path.relpath(path, s.cwd)
        case.notes.append(f"{flag} relative")
    elif k == 3:
        locked = out / "locked"
        locked.mkdir(parents=True, exist_ok=True)
        locked.chmod(0o555)
        path = locked / name
        given = str(path)
        if ROOT_USER:
            case.notes.append(f"{flag} in a chmod 555 folder (root writes there)")
        else:
            case.refuse(f"{flag} in a read-only folder", given)
            writable = False
    elif k == 4:
        given = f"/proc/articulate/{name}"
        case.refuse(f"{flag} under /proc", "/proc")
        writable = False
    elif k == 5:
        under = s.folder / "in" / "a_file"
        under.write_text("a file, not a folder\n")
        given = str(under / name)
        case.refuse(f"{flag} under a file", str(under))
        writable = False
    elif k == 6:
        path.mkdir(parents=True, exist_ok=True)
        given = str(path)
        case.refuse(f"{flag} is a folder", given)
        writable = False
    elif k == 7:
        given = ""
        case.refuse(f"{flag} empty", "empty")
        writable = False
    elif k == 8 and input_path is not None and os.path.isfile(os.path.join(s.cwd, input_path)):
        # on a copy of the input: the seed's other invocations read the original
        copy = s.folder / f"same{s.count}" / Path(input_path).name
        copy.parent.mkdir(exist_ok=True)
        if Path(s.cwd, input_path).resolve() != copy:  # not the copy an output before this one made
            shutil.copyfile(os.path.join(s.cwd, input_path), copy)
            case.swap(input_path, str(copy))
        given, path = str(copy), copy
        if rng.random() < 0.4:  # through a link, which resolves to the input
            out.mkdir(parents=True, exist_ok=True)
            link = out / f"link{Path(name).suffix}"
            link.symlink_to(copy)
            given = str(link)
            case.notes.append(f"{flag} a link")
        if kind == "blend":
            case.notes.append(f"{flag} equal to the input (saved in place)")
        else:
            case.refuse(f"{flag} equal to the input .blend", "overwrite", "extension")
            writable = False
    elif k == 9:  # an odd extension: taken as is where any is, refused where the command names them
        odd = str(rng.choice([".txt", "", ".blend.json", ".JSON", ".csv", ".mcap"]))
        path = out / (Path(name).stem + odd)
        given = str(path)
        allowed = suffixes is None or path.suffix.lower() in suffixes  # the last extension, as the CLI reads it
        if allowed:
            case.notes.append(f"{flag} extension {odd!r}")
        else:
            case.refuse(f"{flag} extension {odd!r}", "extension")
            writable = False
    elif k == 10:
        given = "/" + str(path)
        case.notes.append(f"{flag} with a // prefix")
    elif k == 11:
        path = out / f"my out \u00e9t\u00e9 {name}"
        given = str(path)
        case.notes.append(f"{flag} with spaces and accents")
    elif k == 12:
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("sentinel: a previous run's output\n")
        if rng.random() < 0.5:
            path.chmod(0o444)
            if ROOT_USER:
                case.notes.append(f"{flag} over a chmod 444 file (root writes it)")
            else:
                case.refuse(f"{flag} over a read-only file", given)
                writable = False
        else:
            case.notes.append(f"{flag} over an existing file")
    elif k == 13:
        given = str(out / os.fsdecode(b"bad\xffname")) + Path(name).suffix
        path = Path(given)
        case.maybe(f"{flag} name not UTF-8")
    elif k == 14:  # a pipe or a device node: nothing to read back, and a save would rename its file over it
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"special{Path(name).suffix}"
        if ROOT_USER and rng.random() < 0.5:
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a /dev/null of the seed's own
        else:
            os.mkfifo(path)
        given = str(path)
        allowed = suffixes is None or Path(name).suffix in suffixes
        case.refuse(f"{flag} a device or pipe", "regular file" if allowed else "extension")
        writable = False
    if rng.random() < 0.15 and writable and not path.exists() and k not in (8, 13):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("sentinel: a previous run's output\n")  # kept on exit 2, replaced on success
        case.notes.append(f"{flag} already there")
    case.add(flag, given)
    if not writable:
        return None
    resolved = str((s.cwd / given).resolve()) if given else ""
    if kind == "export" and not Path(resolved).suffix:
        resolved += ".csv"  # the exporter completes a name without extension with the format's
    case.outputs[resolved] = kind
    return resolved


def extra_args(s: Seed, case: Case) -> None:
    """Mistakes any command line can have: an unknown option, a stray positional, an option repeated or
    abbreviated."""
    rng = s.rng
    k = s.pick(84, 4, 3, 3, 3, 3)
    if k == 1:
        flag = str(rng.choice(["--fly", "--out-file", "--armatures", "-x", "--verbose", "--quiet"]))
        if case.command == "demo" and flag == "--verbose":
            return
        case.add(flag, "1" if flag in ("--out-file", "--armatures") else None)
        case.refuse(f"unknown option {flag}", flag)
    elif k == 2:
        case.positional.append("stray.blend")
        case.refuse("a stray positional", "stray.blend", "unrecognized")
    elif k == 3 and case.options:
        flag, value = case.options[int(rng.integers(len(case.options)))]
        if flag not in ("--contact-chain", "--tool-link", "--xacro-arg", "--out-dir", "--report-dir") and (
                value is None or flag != "--frames"):
            case.add(flag, value)
            case.notes.append(f"{flag} repeated")
    elif k == 4:
        case.options = [("--arm" if f == "--armature" else f, v) for f, v in case.options]
        case.notes.append("--arm for --armature")
    elif k == 5:
        case.options = [(f.upper() if f == "--armature" else f, v) for f, v in case.options]
        if any(f == "--ARMATURE" for f, _v in case.options):
            case.refuse("--ARMATURE in capitals", "--ARMATURE")


# --- trajectory files ---------------------------------------------------------------------------------------

TRAJECTORY_DAMAGE = ("nan", "missing_joint", "renamed_joint", "extra_joint", "unsorted", "repeated_time", "empty",
                     "header_only", "ragged", "text_cell", "no_time_column", "binary", "inf")


def trajectory_file(s: Seed, case: Case, robot: Robot) -> str:
    """A joint trajectory for the robot: CSV, ROS JSON or MCAP, valid or damaged, or missing, or another kind."""
    rng = s.rng
    folder = s.folder / f"traj{s.count}"
    folder.mkdir()
    fmt = str(rng.choice(["csv", "csv", "json", "mcap"]))
    names = list(robot.joints)
    t, q = joint_path(rng, robot.lower, robot.upper, int(rng.integers(2, 30)), fps=float(rng.choice([24, 30, 10])))
    if rng.random() < 0.1:
        q[len(q) // 2:, 0] = robot.upper[0] + 0.5  # outside the limits: keyed as given, check flags it
        case.notes.append("trajectory outside the limits")
    damage = str(rng.choice(TRAJECTORY_DAMAGE)) if rng.random() < 0.4 else ""
    path = folder / f"joints.{fmt}"
    header = ["time", *names]
    rows: list[list] = [[*map(float, (ti, *qi))] for ti, qi in zip(t, q)]
    if damage in ("missing_joint", "renamed_joint", "extra_joint", "no_time_column"):
        if damage == "missing_joint":
            header, rows = header[:-1], [r[:-1] for r in rows]
        elif damage == "renamed_joint":
            header[1] = "not_a_joint"
        elif damage == "extra_joint":
            header, rows = [*header, "not_a_joint"], [[*r, 0.0] for r in rows]
        else:
            header[0] = "seconds_since"
    elif damage == "unsorted" and len(rows) > 2:
        rows[0][0], rows[1][0] = rows[1][0], rows[0][0]
    elif damage == "repeated_time" and len(rows) > 1:
        rows[1][0] = rows[0][0]
    elif damage in ("unsorted", "repeated_time"):
        rows.append(list(rows[0]))
    if fmt == "csv":
        if damage in ("nan", "inf", "text_cell"):
            rows[int(rng.integers(len(rows)))][1] = {"nan": "nan", "inf": "inf", "text_cell": "abc"}[damage]
        elif damage == "ragged":
            rows[-1] = rows[-1][:-1]
        write_csv(path, header, rows)
        if damage == "empty":
            path.write_text("")
        elif damage == "header_only":
            path.write_text(",".join(header) + "\n")
        elif damage == "binary":
            path.write_bytes(rng.bytes(200))
        elif rng.random() < 0.15:  # written on Windows: CRLF line ends, read the same
            path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
            case.notes.append("CRLF trajectory")
    elif fmt == "json":
        doc: object = {"joint_names": header[1:], "points": [
            {"positions": r[1:], "time_from_start": r[0] if rng.random() < 0.5 else
             {"sec": int(r[0]), "nanosec": int(round((r[0] - int(r[0])) * 1e9))}} for r in rows]}
        if damage in ("nan", "inf"):
            doc["points"][0]["positions"][0] = float(damage)
        elif damage == "text_cell":
            doc["points"][0]["positions"][0] = "abc"
        elif damage == "ragged":
            doc["points"][-1]["positions"] = doc["points"][-1]["positions"][:-1]
        elif damage == "header_only":
            doc["points"] = []
        elif damage == "no_time_column":
            del doc["points"][0]["time_from_start"]
        if rng.random() < 0.2 and not damage:
            doc = {"joint_trajectory": doc}
            case.notes.append("JSON wrapped in joint_trajectory")
        text = json.dumps(doc)  # NaN and Infinity as Python writes them: not JSON, refused as such
        if damage == "empty":
            text = ""
        elif damage == "binary":
            text = text[: len(text) // 2]
        path.write_text(text)
    else:
        if damage in ("missing_joint", "renamed_joint", "extra_joint", "unsorted", "repeated_time", "nan", "inf",
                      "text_cell", "ragged", "no_time_column", "header_only"):
            damage = "truncated"
        if damage in ("", "truncated"):
            traj = addon("ik_core.trajectory").JointTrajectory(tuple(names), np.asarray(t), np.asarray(q))
            addon("ik_core.trajectory.mcap_files").write_joint_mcap(str(path), traj, topic="/joint_states")
            if damage == "truncated":  # a recording cut short: what is left may be read, so either is fair
                data = path.read_bytes()
                path.write_bytes(data[: int(rng.integers(0, len(data) - 1))])
                case.maybe("MCAP truncated")
                damage = ""
        elif damage == "empty":
            path.write_bytes(b"")
        else:
            path.write_bytes(rng.bytes(300))
        if rng.random() < 0.4:
            topic = str(rng.choice(["/joint_states", "/other"]))
            case.add("--topic", topic)
            if topic == "/other":
                case.refuse("--topic names no topic of the bag", "/other", path.name)  # or the bag is cut short
    if damage:
        case.refuse(f"{fmt} trajectory {damage}", path.name)
    else:
        case.notes.append(f"{fmt} trajectory of {len(rows)} samples")
        if len(rows) < 2:
            case.maybe("a single sample")
    k = s.pick(86, 4, 4, 2, 2, 2)
    if k == 1:
        return _refused_file(case, "--file", str(folder / "none.csv"), "missing trajectory")
    if k == 2:
        other = folder / "joints.txt"
        shutil.copyfile(path, other)
        return _refused_file(case, "--file", str(other), "trajectory extension .txt")
    if k == 3 and fmt != "mcap":
        case.add("--topic", "/joint_states")
        case.refuse("--topic for a file that is not MCAP", "--topic")
    if k == 4:
        return _refused_file(case, "--file", str(folder), "trajectory is a folder")
    if k == 5:  # a name that is not UTF-8 (a Latin-1 file system): a file like any other
        path = path.rename(folder / (os.fsdecode(b"j\xf6ints") + path.suffix))
        case.notes.append("trajectory name not UTF-8")
        case.bad = [(what, (*needles, path.name)) for what, needles in case.bad]  # a damaged file's error names it
    case.add("--file", str(path))
    return str(path)


def _refused_file(case: Case, flag: str, path: str, what: str) -> str:
    case.add(flag, path)
    case.refuse(what, path)
    return path


# --- the commands -------------------------------------------------------------------------------------------

def draw_bake(s: Seed) -> Case:
    case, rng = s.case("bake"), s.rng
    rig = s.inputs.rig()
    if rig.kind == "random":
        case.maybe("fuzz_bake's random rig")
    given = blend_arg(s, case, rig.path)
    name_arg(s, case, "--armature", rig.armature, rig.others, "armature")
    if rig.kind != "chains" and rng.random() < 0.93:
        case.add("--from-constraints")
    elif rig.kind != "chains":
        case.refuse("no chains and no --from-constraints", "chain")
    elif rng.random() < 0.3:
        case.add("--from-constraints")
        case.notes.append("--from-constraints on a rig with chains")
    if rng.random() < 0.1:
        case.add("--from-tracks")
    if rng.random() < 0.15:
        case.add("--keep-constraints")
    if rng.random() < 0.3:
        solver = str(rng.choice([*cli.SOLVERS, cli.KEEP_SOLVER, "newton", "DLS", ""]))
        case.add("--solver", solver)
        if solver not in (*cli.SOLVERS, cli.KEEP_SOLVER):
            case.refuse(f"--solver {solver!r}", "--solver")
        elif solver == "two_bone":
            case.maybe("two_bone on a chain that may not have two bones")
    frames_arg(s, case, rig.frames, "step")
    number_arg(s, case, "--reduce-keys", 0.0, 1e6)
    contacts = rng.random()
    if contacts < 0.06:
        case.add("--contacts")
        if rig.chains and rng.random() < 0.6:
            case.add("--contact-chain", rig.chains[0])
            case.maybe("contacts detected on a rig that does not walk")
        elif rng.random() < 0.5:
            case.add("--contact-chain", "NoChain")
            case.refuse("--contact-chain names no chain", "NoChain")
        else:
            case.refuse("--contacts and no chain with Contacts on", "--contacts")
        number_arg(s, case, "--contact-height", 1e-6, 10.0)
    elif contacts < 0.09:
        flag = str(rng.choice(["--contact-height", "--contact-speed", "--ground-height", "--contact-min-duration"]))
        case.add(flag, "0.1")
        case.refuse(f"{flag} without --contacts", flag)
    stem = Path(given).stem if given else "untitled"
    which = s.pick(45, 10, 45)
    out = None
    if which == 0:
        out = output_arg(s, case, "--out", "baked.blend", "blend")
    elif which == 1:
        folder = s.out / "baked_dir"
        case.add("--out-dir", str(folder))
        out = str(folder / f"{stem}.blend")
        case.outputs[out] = "blend"
    if out:
        case.holds[out] = [rig.armature]
    which = s.pick(45, 10, 45)
    if which == 0:
        report = output_arg(s, case, "--report", "report.json", "json")
    elif which == 1:
        folder = s.out / "report_dir"
        case.add("--report-dir", str(folder))
        report = str(folder / f"{stem}.json")
        case.outputs[report] = "json"
    else:
        report = None
    if report:
        case.report = (report, "bake")
    if out and report and rng.random() < 0.05:
        case.add("--report", str(s.out / "clash.json"))
        case.add("--report-dir", str(s.out))
        case.refuse("--report and --report-dir together", "not allowed with")
    if out and report and out == report:
        case.refuse("the baked file and the report on one file", "both be written")
    return case


def draw_robot_use(s: Seed, command: str) -> Case:
    """check, export or trajectory on the seed's robot rig."""
    case, rng = s.case(command), s.rng
    robot = s.inputs.robot()
    blend_arg(s, case, robot.path, objects="robot rig")
    name_arg(s, case, "--armature", robot.rig, robot.others, "robot rig")
    if command in ("check", "export"):
        frames_arg(s, case, robot.frames, "robot")
    if command == "check":
        suffix = str(rng.choice([".json", ".csv", ".txt"]))
        if rng.random() < 0.05:
            case.refuse("no --report", "--report")
        else:
            path = output_arg(s, case, "--report", f"check{suffix}", "check")
            if path:
                case.report = (path, "check")
        number_arg(s, case, "--singularity", 0.0, 1e6)
        number_arg(s, case, "--jump", 1e-6, 1e6)
    elif command == "export":
        ext = str(rng.choice([".csv", ".json", ".mcap", ""]))
        if rng.random() < 0.05:
            case.refuse("no --out", "--out")
        else:
            output_arg(s, case, "--out", f"joints{ext}", "export", suffixes=(*cli.TRAJECTORY_SUFFIXES, ""))
        number_arg(s, case, "--rate", 0.0, cli.MAX_RATE, cap=240.0)
        if rng.random() < 0.15:
            topic = str(rng.choice(["/joints", "", "robot/joint_states"]))
            case.add("--topic", topic)
            if not topic.strip():
                case.refuse("--topic empty", "--topic")
    else:
        trajectory_file(s, case, robot)
        if rng.random() < 0.3:
            text = str(rng.choice(["0", "-20", "100", "abc", "2.5", str(cli.MAX_FRAME + 1), "nan"]))
            case.add("--start-frame", text)
            if text in ("abc", "2.5", str(cli.MAX_FRAME + 1), "nan"):
                case.refuse(f"--start-frame {text!r}", "--start-frame")
        if rng.random() < 0.04:
            case.refuse("no --out", "--out")
        else:
            out = output_arg(s, case, "--out", "keyed.blend", "blend", suffixes=(".blend",))
            if out:
                case.holds[out] = [robot.rig]
    return case


def draw_robot(s: Seed) -> Case:
    """The robot command: the small arm (URDF or xacro), a random URDF (perhaps damaged), or a bad file."""
    case, rng = s.case("robot"), s.rng
    folder = s.folder / f"urdf{s.count}"
    folder.mkdir()
    k = s.pick(40, 12, 20, 14, 3, 3, 3, 3)
    links = list(ARM_LINKS)
    xacro = False
    if k == 0:
        path = folder / "arm.urdf"
        path.write_text(ARM_URDF.format(name="arm", arg="", p=""))
    elif k == 1:
        path = folder / "arm.urdf.xacro"
        path.write_text(ARM_URDF.format(name="arm", arg='\n  <xacro:arg name="prefix" default=""/>', p="$(arg prefix)"))
        xacro = True
    elif k in (2, 3):
        damage = str(rng.choice(DAMAGES)) if k == 3 else ""
        text, links = random_urdf(rng, damage)
        path = folder / "random.urdf"
        path.write_text(text)
        if damage:
            case.refuse(f"URDF damaged: {damage}", "random.urdf", "robot", "joint", "link")
        else:
            case.maybe("a random URDF")
    elif k == 4:
        path = folder / "none.urdf"
        case.refuse("missing description", str(path))
    elif k == 5:
        path = folder / "arm.txt"
        path.write_text(ARM_URDF.format(name="arm", arg="", p=""))
        case.refuse("description extension .txt", str(path))
    elif k == 6:
        path = folder / "empty.urdf"
        path.write_text("")
        case.refuse("empty URDF", "empty.urdf")
    else:
        path = folder / "rig.urdf"
        shutil.copyfile(s.inputs.rig().path, path)
        case.refuse("a .blend named .urdf", "rig.urdf")
    case.positional.append(str(path) if rng.random() < 0.8 else os.path.relpath(path, s.cwd))
    if xacro and rng.random() < 0.6:
        arg = str(rng.choice(["prefix:=left_", "prefix:=", "prefix=left_", "nothing:=1"]))
        case.add("--xacro-arg", arg)
        if arg == "prefix=left_":
            case.refuse("--xacro-arg without :=", "--xacro-arg")
        elif arg == "nothing:=1":
            case.maybe("an argument the xacro does not declare")
        elif rng.random() < 0.2:
            case.add("--xacro-arg", arg)
            case.refuse("--xacro-arg given twice", "more than once")
        elif arg == "prefix:=left_":
            links = [f"left_{n}" for n in links]
    elif not xacro and rng.random() < 0.05:
        case.add("--xacro-arg", "prefix:=left_")
        case.refuse("--xacro-arg for a URDF", "--xacro-arg")
    if rng.random() < 0.2:
        link = str(rng.choice([*links[1:], "no_such_link"])) if len(links) > 1 else "no_such_link"
        case.add("--tool-link", link)
        if link == "no_such_link":
            case.refuse("--tool-link names no link", "no_such_link")
        elif k in (0, 1):
            case.notes.append(f"--tool-link {link}")
        else:
            case.maybe(f"--tool-link {link} of a random robot")
    if rng.random() < 0.08:
        folder_arg = str(rng.choice([str(folder), str(folder / "missing")]))
        case.add("--package-dir", folder_arg)
        if folder_arg.endswith("missing"):
            case.refuse("--package-dir missing", folder_arg)
    into = None
    if rng.random() < 0.15:
        into = str(s.inputs.rig().path)
        if rng.random() < 0.3:
            into = str(path.parent / "notes.blend")
            Path(into).write_text("not a blend\n")
            case.refuse("--into a text file", into)
        case.add("--into", into)
        case.source = into
    out = output_arg(s, case, "--out", "robot.blend", "blend", suffixes=(".blend",))
    if out:
        case.holds[out] = ["<robot>"] + ([s.inputs.rig().armature] if into == str(s.inputs.rig().path) else [])
    return case


def draw_body(s: Seed) -> Case:
    case, rng = s.case("body"), s.rng
    body = s.inputs.body()
    blend_arg(s, case, body.path)
    name_arg(s, case, "--armature", body.armature, list(body.trackers.values()), "armature")
    for role, tracker in body.trackers.items():
        flag = f"--{role.replace('_', '-')}"
        k = s.pick(60, 30, 4, 3)
        if k == 0:
            case.add(flag, tracker)
        elif k == 2:
            case.add(flag, "NoTracker")
            case.refuse(f"{flag} names no object", "NoTracker")
        elif k == 3:
            case.add(flag, str(rng.choice([t for t in body.trackers.values() if t != tracker])))
            case.maybe(f"{flag} another tracker")
    if rng.random() < 0.05:
        case.add("--pelvis", "NoPelvis")
        case.refuse("--pelvis names no object", "NoPelvis")
    if rng.random() < 0.3:
        text = str(rng.choice(["1", str(body.frames), "0", "500", "abc", "nan"]))
        case.add("--reference-frame", text)
        if text in ("abc", "nan"):
            case.refuse(f"--reference-frame {text!r}", "--reference-frame")
        elif text in ("0", "500"):
            case.maybe(f"--reference-frame {text} outside the keys")
    frames_arg(s, case, body.frames, "step", p=0.4)
    if rng.random() < 0.15:
        k = s.pick(3, 3, 2, 2)
        steps = s.folder / f"steps{s.count}.csv"
        if k == 0:
            case.add("--steps", "animation")
            case.maybe("--steps animation on a short capture")
        elif k == 1:
            steps.write_text(f"foot,frame_start,frame_end\nl,1,{body.frames // 2}\nr,{body.frames // 2 + 1},"
                             f"{body.frames}\n")
            case.add("--steps", str(steps))
            case.maybe("known steps")
        elif k == 2:
            case.add("--steps", str(steps))
            case.refuse("--steps file missing", steps.name)
        else:
            steps.write_text(str(rng.choice(["foot,start\nl,1\n", "foot,frame_start,frame_end\nx,1,5\n",
                                              "foot,frame_start,frame_end\nl,a,5\n", ""])))
            case.add("--steps", str(steps))
            case.refuse("--steps file damaged", steps.name)
    saved_outputs(s, case, "body.blend", "body", body.armature)
    return case


def saved_outputs(s: Seed, case: Case, blend: str, kind: str, armature: str) -> None:
    """Half the time --out ``blend`` (holding ``armature``), half the time --report ``<kind>.json`` (a ``kind``
    report); now and then the report given the --out file's name: refused, the save would replace the report."""
    out = output_arg(s, case, "--out", blend, "blend") if s.rng.random() < 0.5 else None
    if out:
        case.holds[out] = [armature]
    if s.rng.random() < 0.5:
        report = output_arg(s, case, "--report", f"{kind}.json", "json")
        if report:
            case.report = (report, kind)
        if out and report and s.rng.random() < 0.1:
            case.options = [(f, out if f == "--report" else v) for f, v in case.options]
            case.refuse("--out and --report on one file", "both be written", "overwrite")


def draw_switch(s: Seed, command: str) -> Case:
    case = s.case(command)
    rig = s.inputs.rig()
    if rig.kind != "known":
        case.maybe(f"{command} on a {rig.kind} rig")
    blend_arg(s, case, rig.path)
    name_arg(s, case, "--armature", rig.armature, rig.others, "armature")
    frames_arg(s, case, rig.frames, "every")
    saved_outputs(s, case, "switched.blend", "switch", rig.armature)
    return case


def draw_demo(s: Seed) -> Case:
    """The demo, small: the arm (or, rarely, the metarig) over a few frames, seldom with its picture."""
    case, rng = s.case("demo"), s.rng
    folder = s.out / "demo"
    if rng.random() < 0.1:
        case.add("--out", str(s.folder / "in" / "a_file"))
        (s.folder / "in" / "a_file").write_text("a file, not a folder\n")
        case.refuse("demo --out a file", "a_file")
    else:
        case.add("--out", str(folder))
    case.add("--scene", "arm" if rng.random() < 0.85 else "metarig")
    frames = str(rng.choice(["4", "6", "0", "-3", "x"])) if rng.random() < 0.3 else str(int(rng.integers(2, 9)))
    case.add("--frames", frames)
    if frames in ("0", "-3", "x"):
        case.refuse(f"demo --frames {frames}", "--frames")
    if rng.random() < 0.2:
        solver = str(rng.choice(["dls", "fabrik", "ccd", "auto", "nope"]))
        case.add("--solver", solver)
        if solver == "nope":
            case.refuse("demo --solver nope", "--solver")
        else:
            case.maybe(f"demo --solver {solver}")
    picture = rng.random() < 0.1
    if not picture:
        case.add("--no-picture")
    case.outputs.update({str(folder / "demo.blend"): "blend", str(folder / "report.json"): "json",
                         str(folder / cli.DEMO_LOG): "any"})
    if picture:
        case.outputs[str(folder / "demo.png")] = "png"
    case.report = (str(folder / "report.json"), "bake")
    return case


def draw_help(s: Seed) -> Case:
    command = str(s.rng.choice(["", "demo", "bake", "check", "export", "trajectory", "robot", "body", "ik-to-fk",
                                "fk-to-ik"]))
    case = s.case(command or "--help")
    case.help = True
    flag = str(s.rng.choice(["--help", "-h"]))
    case.raw = [flag] if not command else [command, flag]
    if command and s.rng.random() < 0.3:
        case.raw = [command, "--armature", "Rig", flag]
    return case


def draw_jumble(s: Seed) -> Case:
    """A jumble of tokens (no 'demo', whose defaults bake 120 frames and render them)."""
    rng = s.rng
    rig = str(s.inputs.rig().path)
    tokens = ["bake", "check", "export", "body", "ik-to-fk", "--frames", "--out", "--armature", "Rig", "1-2", "nan",
              "--reduce-keys", "-5", "--rate", "--jump", "", "--report", "--solver", "fly", rig, "--from-constraints",
              "x.json", "--", "-h2", "trajectory", "robot", "--file", "fk-to-ik"]
    argv = [str(t) for t in rng.choice(tokens, size=int(rng.integers(0, 8)))]
    if rng.random() < 0.7:  # mostly a command first: past the parser's first check
        argv.insert(0, str(rng.choice(["bake", "check", "export", "trajectory", "robot", "body", "ik-to-fk"])))
    case = s.case(argv[0] if argv else "(none)")
    case.raw = [w.replace("x.json", str(s.out / "x.json")) for w in argv]
    case.jumble = True
    return case


def draw_case(s: Seed) -> Case:
    """One invocation; about half of them drawn again until every argument is valid (each argument alone is
    valid only now and then: most command lines would otherwise be refused before any work)."""
    clean = s.rng.random() < 0.5
    for _ in range(30):
        case = _draw_case(s)
        if not clean or not case.bad:
            break
    return case


def _draw_case(s: Seed) -> Case:
    k = s.pick(22, 10, 9, 10, 10, 5, 5, 5, 1.2, 2, 2, 1)
    if k == 0:
        case = draw_bake(s)
    elif k in (1, 2, 3):
        case = draw_robot_use(s, ("check", "export", "trajectory")[k - 1])
    elif k == 4:
        case = draw_robot(s)
    elif k == 5:
        case = draw_body(s)
    elif k in (6, 7):
        case = draw_switch(s, ("ik-to-fk", "fk-to-ik")[k - 6])
    elif k == 8:
        case = draw_demo(s)
    elif k == 9:
        return draw_help(s)
    elif k == 10:
        return draw_jumble(s)
    else:
        case = s.case(str(s.rng.choice(["fly", "Bake", "bake-all", "bake_all"])))
        case.raw = [case.command, "--armature", "Rig"]
        case.refuse("unknown command", case.command)
        return case
    extra_args(s, case)
    return case


# --- running and judging ------------------------------------------------------------------------------------

def snapshot(folder: Path) -> dict[str, tuple]:
    """Every file under ``folder``: size, SHA-1 and mtime; a link its target, a pipe or device its kind (reading a
    pipe would wait for a writer)."""
    files: dict[str, tuple] = {}
    for base, _dirs, names in os.walk(folder):
        for name in names:
            path = os.path.join(base, name)
            try:
                info = os.lstat(path)
                if stat.S_ISLNK(info.st_mode):
                    files[path] = ("link", os.readlink(path))
                elif not stat.S_ISREG(info.st_mode):
                    files[path] = ("special", info.st_mode, info.st_rdev)
                else:
                    with open(path, "rb") as fh:
                        files[path] = (info.st_size, hashlib.sha1(fh.read()).hexdigest(), info.st_mtime_ns)
            except OSError:
                continue
    return files


def run_cli(s: Seed, argv: list[str]) -> tuple[int | None, str, str]:
    """``cli.py argv`` as a pipeline runs it; returns (exit code or None on the timeout, stdout, stderr)."""
    env = {k: v for k, v in os.environ.items() if k != "ARTICULATE_TRACEBACK"}
    try:
        proc = subprocess.run([sys.executable, str(CLI), *argv], capture_output=True, env=env, cwd=s.cwd,
                              timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as err:
        return None, decoded(err.stdout or b""), decoded(err.stderr or b"")
    return proc.returncode, decoded(proc.stdout), decoded(proc.stderr)


def decoded(data: bytes) -> str:
    """Output as text, bytes that are not UTF-8 (a path that is not) kept as the OS file names keep them."""
    return data.decode("utf-8", "surrogateescape")


def printable(text: str) -> str:
    """``text`` with what is not UTF-8 shown as escapes (print() refuses it otherwise)."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


ERROR = re.compile(r"\berror:", re.IGNORECASE)  # "articulate: error: ...", Blender's "Error: ..."


def error_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if ERROR.search(line)]


def tail(text: str, lines: int = 6) -> str:
    return " | ".join(text.strip().splitlines()[-lines:])


def check_blend(path: str, holds: list[str]) -> str:
    """Why ``path`` is not a .blend holding ``holds`` ("" when it is): its header, then opened in this process."""
    with open(path, "rb") as fh:
        head = fh.read(12)
    if not head.startswith(cli.BLEND_MAGICS):
        return f"{path} does not start like a .blend ({head[:8]!r})"
    try:
        with quiet():
            bpy.ops.wm.open_mainfile(filepath=path, load_ui=False)
    except RuntimeError as err:
        return f"{path} does not open: {str(err).strip()[:200]}"
    objects = bpy.data.objects
    for name in holds:
        found = any("articulate_robot" in o for o in objects) if name == "<robot>" else name in objects
        if not found:
            return f"{path} has no {name} (objects: {[o.name for o in objects][:8]})"
    return ""


def check_file(path: str, kind: str, holds: list[str]) -> str:
    """Why the output ``path`` of ``kind`` is not what it should be ("" when it is)."""
    if not os.path.isfile(path):
        return f"{path} missing"
    try:
        if kind == "blend":
            return check_blend(path, holds)
        if kind == "json" or (kind in ("check", "export") and path.lower().endswith(".json")) or (
                kind == "check" and not path.lower().endswith(".csv")):
            json.loads(Path(path).read_text(encoding="utf-8"))
        elif kind in ("check", "export") and path.lower().endswith(".csv"):
            rows = list(csv.reader(io.StringIO(Path(path).read_text(encoding="utf-8"))))
            if len(rows) < 2 or rows[0][0] != "time":
                return f"{path} is no CSV with a time column and rows: {rows[:1]}"
        elif kind == "export" and path.lower().endswith(".mcap"):
            if not Path(path).read_bytes().startswith(b"\x89MCAP"):
                return f"{path} does not start like an MCAP file"
        elif kind == "png" and not Path(path).read_bytes().startswith(b"\x89PNG"):
            return f"{path} is not a PNG"
    except (ValueError, UnicodeDecodeError, OSError) as err:
        return f"{path} unreadable: {type(err).__name__}: {err}"
    return ""


def check_report(path: str, which: str, code: int) -> str:
    """Whether the report at ``path`` says what the exit code says: frames missed or flagged exactly on exit 3."""
    text = Path(path).read_text(encoding="utf-8")
    if which == "check" and path.lower().endswith(".csv"):
        rows = list(csv.DictReader(io.StringIO(text)))
        flagged = sum(r["ok"] == "0" or r.get("file_sample_flagged") == "1" for r in rows)
        said = f"{flagged} frame(s) flagged"
    else:
        data = json.loads(text)
        if which == "bake":
            flagged = len(data["missed_frames"])
            said = f"missed_frames {data['missed_frames'][:5]}"
        elif which == "check":
            frames = data["frames"]
            flagged = sum(not ok or file for ok, file in zip(frames["ok"], frames["file_sample_flagged"]))
            said = f"{flagged} frame(s) flagged"
        elif which == "switch":
            flagged = sum(len(limb["frames_over_tolerance"]) for limb in data["limbs"])
            said = f"{flagged} frame(s) over tolerance"
        else:
            problems = addon("operators.fullbody").body_problems(data)
            flagged = len(problems)
            said = f"problems {problems[:2]}"
    if (code == 3) != bool(flagged):
        return f"exit {code} but the report says {said}"
    return ""


def judge(s: Seed, case: Case, argv: list[str], code: int | None, out: str, err: str,
          before: dict, after: dict) -> list[str]:
    """The findings of one invocation."""
    text = out + err
    shown = s.show(argv)
    drawn = "; ".join([w for w, _n in case.bad] + case.unsure + case.notes) or "valid arguments"
    findings: list[str] = []
    if code is None:
        return [f"TRACEBACK {shown}: no exit after {TIMEOUT:.0f} s ({drawn}): {tail(text)}"]
    if TRACEBACK in text:
        at = text.index(TRACEBACK)
        findings.append(f"TRACEBACK {shown}: exit {code} ({drawn}): {tail(text[at:], 8)}")
    if UNEXPECTED in text:  # an operator's own traceback, caught and reported as an error
        line = next(line for line in text.splitlines() if UNEXPECTED in line)
        findings.append(f"TRACEBACK {shown}: exit {code}, an operator's {UNEXPECTED} ({drawn}): {line}")
    if code < 0:
        findings.append(f"TRACEBACK {shown}: killed by signal {-code} ({drawn}): {tail(text)}")
        return findings
    errors = error_lines(err) or error_lines(out)
    said = errors[0] if errors else tail(text, 2)
    expect = case.expect
    if code not in (0, 1, 2, 3):
        findings.append(f"EXIT {shown}: exit {code} outside 0-3 ({drawn}): {said}")
    elif UNEXPECTED in text:  # a bug, not bad input: "other errors" is its code
        if code != 1:
            findings.append(f"EXIT {shown}: exit {code} for an operator's {UNEXPECTED}, not 1 ({drawn})")
    elif code == 1:
        findings.append(f"EXIT {shown}: exit 1 (other error) on {drawn}: {said}")
    elif expect == "help":
        if code != 0 or not out.startswith("usage: cli.py"):
            findings.append(f"EXIT {shown}: --help exit {code}: {tail(text, 2)}")
    elif expect == "bad" and code in (0, 3):
        findings.append(f"EXIT {shown}: exit {code} on invalid input ({drawn})")
    elif expect == "ok" and code == 2:
        findings.append(f"EXIT {shown}: exit 2 on valid input ({drawn}): {said}")
    if code in (1, 2) and not errors:
        findings.append(f"SILENT {shown}: exit {code} without an error line ({drawn}): {tail(text, 3)}")
    elif code == 2 and expect == "bad":
        needles = [n for _w, ns in case.bad for n in ns]
        # A name that is not UTF-8 is shown with U+FFFD for its odd bytes (operators.wording.printable).
        shown_as = {n: n.encode("utf-8", "surrogateescape").decode("utf-8", "replace") for n in needles if n}
        if needles and not any(m.lower() in text.lower() or os.path.basename(m).lower() in text.lower()
                               for n in needles if n for m in (n, shown_as[n])):
            findings.append(f"SILENT {shown}: the error names none of {needles[:4]} ({drawn}): {said}")
    elif code == 3 and not SAID_MISSED.search(text):
        findings.append(f"SILENT {shown}: exit 3 saying nothing missed or flagged ({drawn}): {tail(text, 3)}")
    new = sorted(set(after) - set(before))
    changed = sorted(p for p in before if p in after and after[p] != before[p])
    gone = sorted(set(before) - set(after))
    if code == 2:
        for what, paths in (("wrote", new), ("changed", changed), ("deleted", gone)):
            if paths:
                findings.append(f"OUTPUT {shown}: exit 2 but {what} {[s.show([p]) for p in paths[:3]]} ({drawn})")
    elif code in (0, 3) and not case.help and not case.jumble:
        promised = set(case.outputs)
        backups = {f"{p}1" for p in promised}  # Blender keeps the file a save replaces as name.blend1
        for path, kind in case.outputs.items():
            problem = check_file(path, kind, case.holds.get(path, []))
            if problem:
                findings.append(f"OUTPUT {shown}: exit {code} but {s.show([problem])} ({drawn})")
        for line in out.splitlines():
            if line.startswith("articulate: wrote ") and case.command != "demo":
                said_path = line[len("articulate: wrote "):]
                if not os.path.isfile(os.path.join(s.cwd, said_path)):
                    findings.append(f"OUTPUT {shown}: says it wrote {s.show([said_path])}, no such file ({drawn})")
        for path in changed + gone:
            if path not in promised:
                findings.append(f"OUTPUT {shown}: exit {code} but {'changed' if path in changed else 'deleted'} "
                                f"{s.show([path])}, not an output ({drawn})")
        stray = [p for p in new if p not in promised and p not in backups]
        if stray:
            findings.append(f"OUTPUT {shown}: exit {code} and wrote {[s.show([p]) for p in stray[:3]]}, not asked "
                            f"for ({drawn})")
        if case.report and os.path.isfile(case.report[0]) and not findings:
            try:
                problem = check_report(case.report[0], case.report[1], code)
            except (ValueError, KeyError, TypeError) as err:
                problem = f"report unreadable: {type(err).__name__}: {err}"
            if problem:
                findings.append(f"REPORT {shown}: {problem} ({drawn})")
    return findings


def run_case(s: Seed, case: Case) -> None:
    argv = case.argv()
    before = snapshot(s.folder)
    t0 = time.perf_counter()
    code, out, err = run_cli(s, argv)
    seconds = time.perf_counter() - t0
    after = snapshot(s.folder)
    findings = judge(s, case, argv, code, out, err, before, after)
    if s.verbose:
        said = (error_lines(err) or [tail(out, 1)])[0]
        drawn = "; ".join([w for w, _n in case.bad] + case.unsure + case.notes)
        print(printable(f"  {s.show(argv)}\n    [{drawn}] expect {case.expect}, exit {code} in {seconds:.1f} s: "
                        f"{said[:300]}"), flush=True)
    s.findings.extend(findings)


def check(seed: int, verbose: bool, keep: str) -> list[str]:
    """The findings of ``seed``: 3-5 invocations on the files it builds."""
    folder = Path(tempfile.mkdtemp(prefix=f"articulate-fuzz-cli-{seed}-"))
    s = Seed(seed, folder, verbose)
    try:
        for _ in range(int(s.rng.integers(3, 6))):
            run_case(s, draw_case(s))
    except Exception as err:  # noqa: BLE001 (the generator's own failure: shown, so it gets fixed)
        s.findings.append(f"GENERATOR {type(err).__name__}: {err}\n{traceback.format_exc(limit=-4)}")
    finally:
        if keep and s.findings:
            shutil.copytree(folder, Path(keep) / f"seed_{seed}", dirs_exist_ok=True, symlinks=True,
                            ignore=_special_files)
        shutil.rmtree(folder, ignore_errors=True)
    return s.findings


def _special_files(folder: str, names: list[str]) -> list[str]:
    """The pipes and device nodes among ``names`` (copytree cannot copy them)."""
    kinds = [os.lstat(os.path.join(folder, n)).st_mode for n in names]
    return [n for n, m in zip(names, kinds) if not (stat.S_ISREG(m) or stat.S_ISDIR(m) or stat.S_ISLNK(m))]


def main() -> int:
    global ADDON
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=300.0, help="stop starting new seeds after this long")
    parser.add_argument("--first-seed", type=int, default=1000)
    parser.add_argument("--seeds", default="", help="comma-separated seeds to run (verbose) instead")
    parser.add_argument("--keep", default="", help="folder to keep the files of seeds with findings in (seed_N)")
    args = parser.parse_args()
    with quiet():
        ADDON = cli.ensure_addon()
    chosen = [int(s) for s in args.seeds.split(",") if s]
    seeds = iter(chosen) if chosen else iter(range(args.first_seed, sys.maxsize))
    end = time.time() + args.seconds
    runs = found = 0
    for seed in seeds:
        if not chosen and time.time() > end:
            break
        if chosen:
            print(f"seed {seed}:", flush=True)
        findings = check(seed, verbose=bool(chosen), keep=args.keep)
        runs += 1
        if findings:
            found += 1
            for finding in findings:
                print(printable(f"seed {seed}: {finding}"), flush=True)
    print(f"{runs} seeds, {found} findings")
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.exit(code)
