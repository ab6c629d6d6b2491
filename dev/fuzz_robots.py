# SPDX-License-Identifier: GPL-3.0-or-later
"""Random URDF robots through the roboticist's operators: import, joint and Cartesian trajectories, bake, export.

Run from the repo root with a bpy venv::

    BLENDER_USER_RESOURCES=$(mktemp -d) .venvs/5.0.1/bin/python dev/fuzz_robots.py [--seconds 300]
        [--first-seed 1000] [--seeds 1012,1077] [--keep /tmp/fz_robots]

Each seed writes a random URDF into a temp folder and imports it with
``articulate.robot_import_urdf`` (sometimes naming tool links). The robots are trees of up to
nine joints (several branches), with revolute joints (limits wider than 2 pi, a single value,
one bound only, a range leaving out 0), prismatic and continuous joints, fixed (and
floating/planar, held fixed) joints between moving ones, zero-length links, odd axes (not unit
length, negative, arbitrary, omitted), origins with rpy (or none), mimic joints (negative and zero
multipliers, offsets, a mimic of a mimic, a mimic on a fixed joint, a mimic naming a missing
joint, a forward reference), odd joint names, robots without a moving joint and single links,
and links drawn as boxes, cylinders, spheres (zero sizes too) or a missing mesh. About one seed
in seven damages the file (truncated XML, NaN or inf in an origin, a joint with a missing parent
link, a closed loop, a cycle without a root, a mimic cycle, lower > upper, a zero axis, duplicate
names): it must be refused with an operator error and leave the scene as it was (objects,
armatures, meshes, materials, collections, actions counted before and after).

Where the import made a chain, the seed drives it by a joint CSV (``articulate.trajectory_import``,
values sometimes outside the limits) and/or Cartesian poses for every chain
(``articulate.cartesian_import``, sometimes in the robot base frame of a moved rig, some poses out
of reach or from configurations outside the limits), baked by ``articulate.bake`` (with a
report) or by the import's own Bake; then ``articulate.trajectory_check`` and
``articulate.trajectory_export`` (CSV, ROS JSON, MCAP; sometimes at another rate).

Printed, one line per finding: a Python exception other than an operator's error report, an
error report or console output carrying "unexpected error" or a traceback (``EXC``), a refused
operator that left data behind (``LEFT``), a damaged file imported (``ACCEPTED``), a bake that
finished with NaN keys (``NAN``) or keys outside the joint limits the rig stores (``LIMITS``), a
bake report whose frames or limit count disagree with the keys (``REPORT``), a mimic bone that
does not follow its source (``MIMIC``), and an export whose row count or values differ from the
baked frames (``EXPORT``). With ``--keep DIR`` a seed with a finding leaves its files (the URDF,
the trajectories, the exports) in ``DIR/seed_N``; with ``--seeds`` refusals of valid files are
printed too.

A development tool, like ``dev/fuzz_bake.py``: its findings become tests
(``tests/blender/test_robot_import_lenient.py``, ``tests/blender/test_robot_rig_model.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import ctypes
import importlib
import io
import json
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path
from xml.sax.saxutils import quoteattr

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="articulate-fuzz-"))
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "blender"))

import bpy  # noqa: E402
import numpy as np  # noqa: E402

import cli  # noqa: E402

ADDON = None  # the registered add-on package, set by main()
UNEXPECTED = "unexpected error"  # operators/transaction.py: an error no check foresaw
ODD_NAMES = ("tool", "joint with spaces", "gelenk_\u00e4\u00df", "a.b.c", "x[0]", 'quote"d', "back\\slash",
             "n" * 70, "n" * 70 + "_twin", " padded", "a,b")
DAMAGES = ("truncated", "nan_origin", "inf_origin", "missing_parent", "closed_loop", "no_root", "mimic_cycle",
           "lower_above_upper", "zero_axis", "duplicate_link", "duplicate_joint", "no_limit")
# Refusals of a valid file that are right: a chain whose every joint has a single-value range cannot move.
FAIR_REFUSALS = ("every joint is locked",)
LIMIT_TOLERANCE = 1e-9  # keys are stored float32; the bake moves a key on its limit one float32 step inside


def addon(name: str):
    """A module of the registered add-on, ``operators.bridge.robot`` for example."""
    return importlib.import_module(f"{ADDON.__name__}.{name}")


# --- capturing what Blender and the add-on print -------------------------------------------------------------

_LIBC = ctypes.CDLL(None)


@contextlib.contextmanager
def captured():
    """Everything written to file descriptors 1 and 2 inside the block (Blender's reports too), in ``out[0]``."""
    out: list[str] = []
    sys.stdout.flush()
    sys.stderr.flush()
    _LIBC.fflush(None)
    with tempfile.TemporaryFile() as tmp:
        saved = os.dup(1), os.dup(2)
        os.dup2(tmp.fileno(), 1)
        os.dup2(tmp.fileno(), 2)
        try:
            yield out
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            _LIBC.fflush(None)
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            tmp.seek(0)
            out.append(tmp.read().decode("utf-8", "replace"))


def data_counts() -> dict:
    """How many of each kind of data-block the file holds, and the scene's collections."""
    d = bpy.data
    return {"objects": len(d.objects), "armatures": len(d.armatures), "meshes": len(d.meshes),
            "materials": len(d.materials), "collections": len(d.collections), "actions": len(d.actions),
            "scene_children": len(bpy.context.scene.collection.children)}


class Seed:
    """One seed's findings, its folder and the operators it ran."""

    def __init__(self, seed: int, folder: Path, verbose: bool) -> None:
        self.seed, self.folder, self.verbose = seed, folder, verbose
        self.findings: list[str] = []
        self.log: list[str] = []

    def note(self, text: str) -> None:
        self.log.append(text)

    def run(self, what: str, op, valid: bool = False, **kwargs) -> tuple[bool, str]:
        """Run operator ``op``; returns (finished, its error text or output). Records the findings it shows:
        with ``valid`` (the input is one the operator must take) a refusal too."""
        before, known = data_counts(), len(self.findings)
        error = ""
        with captured() as out:
            try:
                result = op(**kwargs)
            except RuntimeError as err:  # an operator's error report
                result, error = {"CANCELLED"}, str(err)
            except Exception as err:  # noqa: BLE001 (anything else is a finding)
                result, error = {"CANCELLED"}, f"{type(err).__name__}: {err}"
                self.findings.append(f"EXC {what}: {error}\n{traceback.format_exc(limit=-4)}")
        printed = out[0]
        if "Traceback" in error or UNEXPECTED in error:
            self.findings.append(f"EXC {what}: {error.strip()}")
        elif "Traceback" in printed or UNEXPECTED in printed or "Error in Driver" in printed:
            self.findings.append(f"EXC {what} printed: {tail(printed)}")
        done = "FINISHED" in result
        if not done and valid and len(self.findings) == known and not any(r in error for r in FAIR_REFUSALS):
            self.findings.append(f"REFUSED {what} refused a valid input: {first_line(error) or result}")
        if not done:
            after = data_counts()
            if after != before:
                changed = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
                self.findings.append(f"LEFT {what} refused ({first_line(error) or result}) but left data: {changed}")
        self.note(f"{what}: {'FINISHED' if done else 'refused: ' + first_line(error or str(result))}")
        return done, error or printed


def first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def tail(text: str, lines: int = 8) -> str:
    return "\n  ".join(text.strip().splitlines()[-lines:])


# --- random URDFs ---------------------------------------------------------------------------------------------

def _num(x: float) -> str:
    return repr(float(x))


def _vec(v) -> str:
    return " ".join(_num(x) for x in v)


def _geometry(rng) -> str:
    kind = rng.choice(["box", "cylinder", "sphere", "mesh", "zero_box", "zero_sphere"])
    if kind == "box":
        return f"<box size='{_vec(rng.uniform(0.01, 0.3, 3))}'/>"
    if kind == "cylinder":
        return f"<cylinder radius='{_num(rng.uniform(0.005, 0.1))}' length='{_num(rng.uniform(0.01, 0.5))}'/>"
    if kind == "sphere":
        return f"<sphere radius='{_num(rng.uniform(0.005, 0.2))}'/>"
    if kind == "zero_box":
        return "<box size='0 0.1 0'/>"
    if kind == "zero_sphere":
        return "<sphere radius='0'/>"
    return "<mesh filename='package://nowhere/meshes/missing.stl' scale='0.001 0.001 0.001'/>"


def _link(rng, name: str) -> str:
    parts = []
    for tag in ("visual", "collision"):
        for _ in range(int(rng.choice([0, 1, 1, 2])) if tag == "visual" else int(rng.random() < 0.3)):
            origin = (f"<origin xyz='{_vec(rng.normal(0, 0.1, 3))}' rpy='{_vec(rng.normal(0, 1, 3))}'/>"
                      if rng.random() < 0.5 else "")
            material = ("<material name='m'><color rgba='0.2 0.4 0.8 1'/></material>"
                        if tag == "visual" and rng.random() < 0.3 else "")
            parts.append(f"<{tag}>{origin}<geometry>{_geometry(rng)}</geometry>{material}</{tag}>")
    if rng.random() < 0.2:
        parts.append(f"<inertial><mass value='{_num(rng.uniform(0.1, 5))}'/>"
                     "<inertia ixx='0.01' ixy='0' ixz='0' iyy='0.01' iyz='0' izz='0.01'/></inertial>")
    return f"<link name={quoteattr(name)}>{''.join(parts)}</link>"


def _axis(rng) -> str | None:
    pick = rng.random()
    if pick < 0.1:
        return None  # URDF's default: 1 0 0
    if pick < 0.45:
        v = np.zeros(3)
        v[rng.integers(3)] = rng.choice([1.0, -1.0])
    elif pick < 0.7:
        v = rng.normal(size=3)  # arbitrary, not unit length
    elif pick < 0.85:
        v = np.zeros(3)
        v[rng.integers(3)] = rng.choice([1e-6, 0.001, 7.5, 300.0, -42.0])
    else:
        v = rng.choice([-1.0, 0.0, 1.0], size=3)
        if not v.any():
            v[2] = -1.0
    return _vec(v)


def _limit(rng, jtype: str) -> str:
    """A <limit> element for ``jtype``: wide, a single value, one bound, a range leaving out 0, ..."""
    velocity = rng.choice(["2", "0", "-1", "1e9", None])
    effort = rng.choice(["10", "0", None])
    extra = "".join(f" {k}='{v}'" for k, v in (("velocity", velocity), ("effort", effort)) if v is not None)
    if jtype == "continuous":
        if rng.random() < 0.5:
            return ""
        bounds = f" lower='{_num(rng.uniform(-3, 0))}' upper='{_num(rng.uniform(0, 3))}'" if rng.random() < 0.3 else ""
        return f"<limit{bounds}{extra}/>"
    scale = 1.0 if jtype == "revolute" else 0.2
    kind = rng.choice(["normal", "wide", "single", "no_zero", "only_lower", "only_upper", "huge"],
                      p=[0.4, 0.2, 0.1, 0.1, 0.07, 0.07, 0.06])
    if kind == "normal":
        lo, hi = -rng.uniform(0.1, 3) * scale, rng.uniform(0.1, 3) * scale
    elif kind == "wide":
        lo, hi = -rng.uniform(3.5, 12) * scale, rng.uniform(3.5, 12) * scale
    elif kind == "single":
        lo = hi = float(rng.choice([0.0, rng.uniform(-2, 2) * scale]))
    elif kind == "no_zero":
        lo = rng.uniform(0.2, 1.5) * scale * rng.choice([1, -1])
        lo, hi = (lo, lo + rng.uniform(0.05, 1.5) * scale) if lo > 0 else (lo - rng.uniform(0.05, 1.5) * scale, lo)
    elif kind == "only_lower":
        return f"<limit lower='{_num(-rng.uniform(0.1, 2) * scale)}'{extra}/>"
    elif kind == "only_upper":
        return f"<limit upper='{_num(rng.uniform(0.1, 2) * scale)}'{extra}/>"
    else:
        lo, hi = -rng.uniform(50, 1e4) * scale, rng.uniform(50, 1e4) * scale
    return f"<limit lower='{_num(lo)}' upper='{_num(hi)}'{extra}/>"


def _origin(rng, zero: bool) -> str:
    pick = rng.random()
    if zero or pick < 0.1:
        return "" if rng.random() < 0.5 else "<origin xyz='0 0 0' rpy='0 0 0'/>"
    xyz = rng.normal(0, 0.25, 3) * (rng.random() < 0.8)
    if rng.random() < 0.15:
        xyz[rng.integers(3)] = 0.0
    rpy = rng.uniform(-np.pi, np.pi, 3) if rng.random() < 0.6 else np.zeros(3)
    if rng.random() < 0.1:
        rpy = rng.uniform(-12, 12, 3)  # more than a turn
    if rng.random() < 0.1:
        return f"<origin rpy='{_vec(rpy)}'/>"
    return f"<origin xyz='{_vec(xyz)}' rpy='{_vec(rpy)}'/>"


def random_urdf(rng, damage: str) -> tuple[str, list[str]]:
    """A random robot as URDF text, and its links; ``damage`` (one of ``DAMAGES``, or "") breaks it so it must be
    refused."""
    shape = rng.random()
    count = 0 if shape < 0.05 else int(rng.integers(1, 10))
    all_fixed = shape > 0.95
    links = ["base" if rng.random() < 0.7 else "world"]
    joint_names: list[str] = []
    joints: list[dict] = []
    for k in range(count):
        parent = links[-1] if rng.random() < 0.65 or len(links) < 2 else links[int(rng.integers(len(links)))]
        child = f"link{k}" if rng.random() < 0.9 else rng.choice(["tool0", "tcp", "flange", "ee_link", f"tip{k}"])
        if child in links:
            child = f"{child}_{k}"
        links.append(child)
        name = f"j{k}" if rng.random() < 0.93 else str(rng.choice(ODD_NAMES))
        if name in joint_names:
            name = f"{name}_{k}"
        joint_names.append(name)
        jtype = "fixed" if all_fixed else str(rng.choice(
            ["revolute", "prismatic", "continuous", "fixed", "floating", "planar"],
            p=[0.45, 0.15, 0.14, 0.22, 0.02, 0.02]))
        joints.append({"name": name, "type": jtype, "parent": parent, "child": child,
                       "origin": _origin(rng, zero=rng.random() < 0.1), "axis": _axis(rng),
                       "limit": _limit(rng, jtype) if jtype in ("revolute", "prismatic", "continuous") else "",
                       "mimic": ""})
    moving = [j for j in joints if j["type"] in ("revolute", "prismatic", "continuous")]
    sources: set[str] = set()  # joints a mimic names ahead of them: they must not mimic (no cycles)
    for k, j in enumerate(joints):
        r = rng.random()
        if j["type"] == "fixed" and r < 0.08 and moving:
            j["mimic"] = f"<mimic joint={quoteattr(moving[0]['name'])}/>"  # dropped, with a note
        elif j in moving and r < 0.3 and j["name"] not in sources:
            earlier = [m for m in moving if joints.index(m) < k]
            pick = rng.random()
            if pick < 0.1:
                source = "ghost"  # names no joint: dropped, with a note
            elif pick < 0.2 or not earlier:
                later = [m for m in moving if joints.index(m) > k]
                source = later[0]["name"] if later else "ghost"  # a forward reference
                sources.add(source)
            else:
                source = earlier[int(rng.integers(len(earlier)))]["name"]  # perhaps itself a mimic
            multiplier = rng.choice([1.0, -1.0, -2.5, 0.5, 0.0, 1e-5, 3.0, rng.normal()])
            attrs = f" multiplier='{_num(multiplier)}'" if rng.random() < 0.8 else ""
            attrs += f" offset='{_num(rng.normal(0, 0.5))}'" if rng.random() < 0.6 else ""
            j["mimic"] = f"<mimic joint={quoteattr(source)}{attrs}/>"
    if damage:
        _damage_model(rng, damage, links, joints)
    link_text = [_link(rng, n) for n in links]
    joint_text = [_joint_text(j) for j in joints]
    if damage == "duplicate_link":
        link_text.append(_link(rng, links[int(rng.integers(len(links)))]))
    if damage == "duplicate_joint":
        if not joints:
            links.append("extra")
            joints.append({"name": "j", "type": "fixed", "parent": links[0], "child": "extra", "origin": "",
                           "axis": None, "limit": "", "mimic": ""})
            link_text.append(_link(rng, "extra"))
            joint_text.append(_joint_text(joints[-1]))
        dup = dict(joints[int(rng.integers(len(joints)))])
        dup["child"] = "dup_child"
        link_text.append(_link(rng, "dup_child"))
        joint_text.append(_joint_text(dup))
    body = link_text + joint_text
    order = rng.permutation(len(body)) if rng.random() < 0.3 else np.arange(len(body))  # joints before links
    name = "fuzz" if rng.random() < 0.8 else str(rng.choice(["my robot (v2)", "\u30ed\u30dc\u30c3\u30c8", "a/b"]))
    text = f"<?xml version='1.0'?>\n<robot name={quoteattr(name)}>\n" + "\n".join(
        body[i] for i in order) + "\n</robot>\n"
    if damage == "truncated":
        text = text[: int(rng.integers(10, max(11, len(text) - 10)))]
    return text, links


def _joint_text(j: dict) -> str:
    axis = f"<axis xyz='{j['axis']}'/>" if j["axis"] is not None else ""
    return (f"<joint name={quoteattr(j['name'])} type='{j['type']}'><parent link={quoteattr(j['parent'])}/>"
            f"<child link={quoteattr(j['child'])}/>{j['origin']}{axis}{j['limit']}{j['mimic']}</joint>")


def _damage_model(rng, damage: str, links: list[str], joints: list[dict]) -> None:
    """Break the robot being written (the joints' entries, in place)."""
    if not joints or damage in ("mimic_cycle", "lower_above_upper", "zero_axis", "no_limit") and not any(
            j["type"] in ("revolute", "prismatic") for j in joints):
        links.append("extra")
        joints.append({"name": "jx", "type": "revolute", "parent": links[0], "child": "extra", "origin": "",
                       "axis": "0 0 1", "limit": "<limit lower='-1' upper='1' effort='1' velocity='1'/>",
                       "mimic": ""})
    j = joints[int(rng.integers(len(joints)))]
    limited = [m for m in joints if m["type"] in ("revolute", "prismatic")]
    if damage in ("nan_origin", "inf_origin"):
        bad = ["nan", "inf", "-inf"][0 if damage == "nan_origin" else int(rng.integers(1, 3))]
        values = ["0.1", "0", "0.2"]
        values[int(rng.integers(3))] = bad
        which = "xyz" if rng.random() < 0.6 else "rpy"
        j["origin"] = f"<origin {which}='{' '.join(values)}'/>"
    elif damage == "missing_parent":
        j["parent"] = "no_such_link"
    elif damage == "closed_loop":
        loop = {**j, "name": "loop", "type": "fixed", "parent": links[-1], "child": links[1], "mimic": "",
                "limit": ""}
        joints.append(loop)
    elif damage == "no_root":
        joints.append({**j, "name": "back", "type": "fixed", "parent": links[-1], "child": links[0], "mimic": "",
                       "limit": ""})
    elif damage == "mimic_cycle":
        a = limited[0]
        b = limited[-1] if len(limited) > 1 else a
        a["mimic"] = f"<mimic joint={quoteattr(b['name'])}/>"
        b["mimic"] = f"<mimic joint={quoteattr(a['name'])} multiplier='-1'/>"
    elif damage == "lower_above_upper":
        limited[0]["limit"] = "<limit lower='1.5' upper='-1.5' effort='1' velocity='1'/>"
    elif damage == "zero_axis":
        limited[0]["axis"] = "0 0 0"
    elif damage == "no_limit":
        limited[0]["limit"] = ""


# --- trajectories ---------------------------------------------------------------------------------------------

def smooth_path(rng, lower: np.ndarray, upper: np.ndarray, frames: int, outside: bool) -> np.ndarray:
    """(frames, J) a smooth random path inside finite limits (or leaving them, with ``outside``)."""
    lo = np.where(np.isfinite(lower), lower, -np.pi)
    hi = np.where(np.isfinite(upper), upper, np.pi)
    hi = np.where(hi - lo > 4 * np.pi, lo + 4 * np.pi, hi)
    t = np.linspace(0.0, 1.0, frames)[:, None]
    mid = rng.uniform(lo, hi)
    amp = 0.5 * (hi - lo) * rng.uniform(0, 0.6, size=len(lo))
    q = mid + amp * np.sin(2 * np.pi * rng.uniform(0.2, 1.5, size=len(lo)) * t + rng.uniform(0, 6, size=len(lo)))
    q = np.clip(q, lo, hi)
    if outside and len(lo):
        k = int(rng.integers(len(lo)))
        q[frames // 2:, k] = hi[k] + rng.uniform(0.1, 1.0)
    return q


def sample_times(rng, frames: int) -> np.ndarray:
    fps = float(rng.choice([24, 30, 10, 60, 29.97, 7]))
    t = np.arange(frames) / fps + rng.choice([0.0, 0.0, 2.5])
    if rng.random() < 0.1 and frames > 2:
        t = np.sort(t + rng.uniform(0, 0.5 / fps, frames))  # uneven
        t = np.unique(t)
    return t


def write_joint_csv(path: Path, names: list[str], t: np.ndarray, q: np.ndarray, rng) -> None:
    order = rng.permutation(len(names)) if rng.random() < 0.3 else np.arange(len(names))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["time", *(names[k] for k in order)])
    for ti, qi in zip(t, q):
        writer.writerow([repr(float(v)) for v in (ti, *qi[order])])
    path.write_text(buf.getvalue(), encoding="utf-8")


def write_pose_csv(path: Path, t: np.ndarray, poses: np.ndarray) -> None:
    quats = addon("ik_core.model.rotations").matrix_to_quat(poses[:, :3, :3])
    rows = ["time,x,y,z,qw,qx,qy,qz"]
    rows += [",".join(repr(float(v)) for v in (ti, *T[:3, 3], *qq)) for ti, T, qq in zip(t, poses, quats)]
    path.write_text("\n".join(rows) + "\n")


# --- the seed -------------------------------------------------------------------------------------------------

def check(seed: int, folder: Path, verbose: bool) -> Seed:
    """Import, drive, bake, check and export the random robot of ``seed``; returns its findings."""
    rng = np.random.default_rng(seed)
    s = Seed(seed, folder, verbose)
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = 24, 1.0
    damage = str(rng.choice(DAMAGES)) if rng.random() < 0.15 else ""
    text, links = random_urdf(rng, damage)
    urdf = folder / "robot.urdf"
    urdf.write_text(text, encoding="utf-8")
    s.note(f"damage: {damage or 'none'}")
    tools = ""
    if not damage and rng.random() < 0.15:  # tool links named (any link: some cannot be tools)
        tools = ",".join(rng.choice(links, size=min(len(links), int(rng.integers(1, 3))), replace=False))
    before = data_counts()
    done, error = s.run("import", bpy.ops.articulate.robot_import_urdf, filepath=str(urdf), tip_link=tools)
    if damage:
        if done:
            s.findings.append(f"ACCEPTED a damaged URDF ({damage}): {first_line(error)}")
        elif data_counts() != before:
            s.findings.append(f"LEFT the refused damaged import ({damage}) changed the data counts")
        return s
    if not done:
        return s
    arm = bpy.context.object
    if arm is None or arm.type != "ARMATURE" or "articulate_robot" not in arm:
        s.findings.append(f"import finished but the active object is {arm!r}, not a robot rig")
        return s
    for obj in bpy.data.objects:
        if obj.type == "MESH" and (obj.parent is not arm or obj.parent_bone and obj.parent_bone not in arm.data.bones):
            s.findings.append(f"IMPORT link shape {obj.name!r} hangs from {obj.parent!r}:{obj.parent_bone!r}")
            break
    if not arm.articulate.chains:
        return s
    if rng.random() < 0.25:  # a moved, turned (sometimes scaled) rig
        arm.location = tuple(rng.normal(0, 1, 3))
        arm.rotation_euler = tuple(rng.uniform(-3, 3, 3))
        if rng.random() < 0.4:
            arm.scale = (float(rng.uniform(0.3, 3.0)),) * 3
        bpy.context.view_layer.update()
    mode = rng.choice(["joints", "cartesian", "cartesian", "both"])
    if mode in ("joints", "both"):
        drive_joints(s, rng, arm)
    if mode in ("cartesian", "both"):
        drive_cartesian(s, rng, arm)
    return s


def _info(arm) -> dict:
    return addon("operators.bridge.stored").robot_info(arm)


def _stored_range(arm) -> tuple[int, int] | None:
    text = arm.get("articulate_trajectory")
    if not text:
        return None
    data = json.loads(text)
    return int(data["frame_start"]), int(data["frame_end"])


def drive_joints(s: Seed, rng, arm) -> None:
    """A joint CSV keyed by Import Joint Trajectory, then checked and exported."""
    joints = _info(arm)["joints"]
    names = addon("operators.robots").file_joint_names(joints)  # files know the joints by the URDF's names
    lower = np.array([-np.inf if j["lower"] is None else j["lower"] for j in joints])
    upper = np.array([np.inf if j["upper"] is None else j["upper"] for j in joints])
    frames = int(rng.choice([1, 2, int(rng.integers(3, 40))], p=[0.04, 0.06, 0.9]))
    t = sample_times(rng, frames)
    q = smooth_path(rng, lower, upper, len(t), outside=rng.random() < 0.3)
    path = s.folder / "joints.csv"
    write_joint_csv(path, names, t, q, rng)
    start = int(rng.integers(-5, 30))
    timing = bool(rng.random() < 0.8)
    done, _ = s.run("trajectory_import", bpy.ops.articulate.trajectory_import, valid=True, filepath=str(path),
                    start_frame=start, use_file_timing=timing)
    if not done:
        return
    span = _stored_range(arm)
    if span is None:
        s.findings.append("trajectory_import finished but stored no trajectory")
        return
    keys = addon("operators.bridge.robot").read_joint_values(arm, np.arange(span[0], span[1] + 1, dtype=float))
    if not np.all(np.isfinite(keys)):
        s.findings.append(f"NAN joint import keyed non-finite values on frames {span}")
    fps = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base
    # With the file's clock every sample is a frame: the keys are the file's values. (Samples that jitter, within
    # what still counts as the file's rate, fall between frames: the keys there are the file resampled.)
    expected = None
    on_frames = len(t) > 1 and np.allclose((t - t[0]) * fps, np.round((t - t[0]) * fps), rtol=0.0, atol=1e-6)
    if timing and on_frames and len(keys) == len(q) and addon("ik_core.trajectory").sample_rate(t) is not None \
            and abs(fps - 1 / np.median(np.diff(t))) < 1e-3:
        expected = q
    check_and_export(s, rng, arm, span, keys, expected)


def drive_cartesian(s: Seed, rng, arm) -> None:
    """Cartesian poses for every chain from one random joint path, baked, then checked and exported."""
    model = addon("ik_core.robots.model").RobotModel.from_json(arm["articulate_robot_model"])
    core = addon("ik_core")
    chains = list(arm.articulate.chains)
    if len(chains) > 1 and rng.random() < 0.3:
        chains = [chains[int(rng.integers(len(chains)))]]
    try:
        sk = model.chain_skeleton([c.tool_link for c in chains])
    except Exception as err:  # noqa: BLE001 (chains with their own base links: one at a time)
        s.note(f"no joint skeleton for all chains: {err}")
        chains = chains[:1]
        sk = model.chain_skeleton(chains[0].tool_link, chains[0].base_link or None)
    frames = int(rng.choice([1, 2, int(rng.integers(3, 30))], p=[0.04, 0.06, 0.9]))
    t = sample_times(rng, frames)
    q = smooth_path(rng, sk.lower, sk.upper, len(t), outside=rng.random() < 0.2)
    base_frame = "BASE" if rng.random() < 0.4 else "WORLD"
    M = np.array(arm.matrix_world) if base_frame == "WORLD" else np.eye(4)
    start = int(rng.integers(1, 20))
    for k, chain in enumerate(chains):
        base = model.link_rest_frame(chain.base_link) if chain.base_link else np.eye(4)
        poses = M @ base @ core.effector_poses(sk, q, chain.tool_link)
        if rng.random() < 0.3:  # some poses out of reach
            far = rng.random(len(poses)) < 0.4
            poses[far, :3, 3] = poses[far, :3, 3] * rng.uniform(1.5, 4.0) + rng.normal(0, 0.5, 3)
        path = s.folder / f"poses_{k}.csv"
        write_pose_csv(path, t, poses)
        bake_now = k == len(chains) - 1 and rng.random() < 0.3
        done, _ = s.run(f"cartesian_import chain {k}", bpy.ops.articulate.cartesian_import, valid=True,
                        filepath=str(path),
                        chain=chain.name, pose_frame=base_frame, start_frame=start, bake=bake_now)
        if not done:
            return
    span = _stored_range(arm)
    if span is None:
        s.findings.append("cartesian_import finished but stored no trajectory")
        return
    report = None
    if not bake_now:
        report_path = s.folder / "bake.json"
        done, _ = s.run("bake", bpy.ops.articulate.bake, valid=True, use_scene_settings=False, frame_start=span[0],
                        frame_end=span[1], report_path=str(report_path))
        if not done:
            return
        report = json.loads(report_path.read_text())
    keys = check_bake(s, arm, span, report, set(sk.moving_joint_names))
    check_and_export(s, rng, arm, span, keys, None)


def check_bake(s: Seed, arm, span: tuple[int, int], report: dict | None, solved: set[str]) -> np.ndarray:
    """The keys of a finished bake, checked: finite, inside the stored limits, as the report says; mimics follow.

    ``solved``: the joints of the chains baked; only they are checked against the limits (others keep what a
    joint file keyed, inside its limits or not).
    """
    frames = np.arange(span[0], span[1] + 1, dtype=float)
    joints = _info(arm)["joints"]
    keys = addon("operators.bridge.robot").read_joint_values(arm, frames)
    bad = ~np.isfinite(keys)
    if bad.any():
        rows, cols = np.nonzero(bad)
        where = sorted(set(frames[rows].astype(int).tolist()))[:5]
        s.findings.append(f"NAN the bake finished with non-finite keys: joints "
                          f"{sorted({joints[c]['name'] for c in cols})} on frames {where}")
    for k, j in enumerate(joints):
        if j["kind"] == "continuous" or j["name"] not in solved:
            continue
        lo = -np.inf if j["lower"] is None else j["lower"]
        hi = np.inf if j["upper"] is None else j["upper"]
        v = keys[:, k]
        over = np.maximum(lo - v, v - hi)
        # Keys are float32: a range no float32 lies in (a single value) is keyed at the float32 nearest it.
        slack = max(LIMIT_TOLERANCE, float(np.spacing(np.float32(max(abs(lo), abs(hi)) if np.isfinite(
            max(abs(lo), abs(hi))) else 0.0))))
        if np.nanmax(over, initial=-np.inf) > slack:
            f = int(frames[int(np.nanargmax(over))])
            s.findings.append(f"LIMITS joint {j['name']!r} ({j['kind']}, [{lo}, {hi}]) keyed "
                              f"{v[int(np.nanargmax(over))]!r} on frame {f}, {float(np.nanmax(over)):.3g} outside")
    if report is not None:
        if report.get("frames") != [int(f) for f in frames]:
            s.findings.append(f"REPORT frames {report.get('frames', [])[:3]}... are not the baked {span}")
        for c in report.get("chains", []):
            errors = np.array(c.get("position_error_m", []), dtype=float)
            if not np.all(np.isfinite(errors)):
                s.findings.append(f"REPORT chain {c['chain']!r} has non-finite position errors")
            if c.get("limit_violations"):
                s.findings.append(f"REPORT chain {c['chain']!r} says {c['limit_violations']} frames are keyed "
                                  "outside the limits")
    check_mimics(s, arm, [span[0], (span[0] + span[1]) // 2, span[1]])
    return keys


def check_mimics(s: Seed, arm, frames: list[int]) -> None:
    """Each mimic bone, as played back, is ``multiplier * its source + offset`` (URDF semantics, one step)."""
    model = addon("ik_core.robots.model").RobotModel.from_json(arm["articulate_robot_model"])
    sk = model.skeleton
    pairs = []
    for joint in sk.joints:
        if joint.mimic is None or joint.name not in arm.pose.bones:
            continue
        urdf_joint = model.urdf.joint(joint.name)
        if urdf_joint.mimic is None or urdf_joint.mimic.joint not in arm.pose.bones:
            continue
        source = model.urdf.joint(urdf_joint.mimic.joint)
        pairs.append((joint.name, urdf_joint.type, source.name, source.type, urdf_joint.mimic))
    s.note(f"mimic joints checked: {len(pairs)}")
    if not pairs:
        return
    scene = bpy.context.scene

    def value(name: str, kind: str) -> float:
        pb = arm.pose.bones[name]
        return float(pb.location[1] if kind == "prismatic" else pb.rotation_euler[1])

    for f in frames:
        scene.frame_set(f)
        for name, kind, src, src_kind, mimic in pairs:
            want = mimic.multiplier * value(src, src_kind) + mimic.offset
            got = value(name, kind)
            if not abs(got - want) <= 1e-4 * max(1.0, abs(want)):
                s.findings.append(f"MIMIC joint {name!r} plays {got!r} on frame {f}, URDF says {mimic.multiplier!r} * "
                                  f"{src!r} ({value(src, src_kind)!r}) + {mimic.offset!r} = {want!r}")
                return


def check_and_export(s: Seed, rng, arm, span: tuple[int, int], keys: np.ndarray, file_values) -> None:
    """Check Trajectory, then exports of the trajectory's frames whose rows and values must be the keys'."""
    s.run("trajectory_check", bpy.ops.articulate.trajectory_check, valid=True,
          report_path=str(s.folder / "check.json"))
    names = addon("operators.robots").file_joint_names(_info(arm)["joints"])
    if file_values is not None and not np.allclose(keys, file_values, rtol=1e-6, atol=1e-5):
        worst = float(np.max(np.abs(keys - file_values)))
        s.findings.append(f"KEYS the joint file's values are keyed up to {worst:.3g} off")
    scene = bpy.context.scene
    fps = scene.render.fps / scene.render.fps_base
    exported = []
    for fmt in rng.permutation(["CSV", "JSON", "MCAP"])[: int(rng.integers(1, 4))]:
        rate = 0.0 if rng.random() < 0.8 else float(rng.choice([5.0, 100.0, fps * 0.5, round(fps, 2), 13.7]))
        out = s.folder / f"export{len(list(s.folder.glob('export*')))}.{fmt.lower()}"
        done, error = s.run(f"trajectory_export {fmt} rate {rate}", bpy.ops.articulate.trajectory_export,
                            filepath=str(out), file_format=fmt, rate=rate)
        if not done:
            s.findings.append(f"EXPORT {fmt} refused: {first_line(error)}")
            continue
        try:
            header, times, values = read_export(out, fmt, names)
        except Exception as err:  # noqa: BLE001 (an export that does not read back is a finding)
            s.findings.append(f"EXPORT {fmt} does not read back: {type(err).__name__}: {err}")
            continue
        n = span[1] - span[0] + 1
        held = float(np.float32(rate))  # Rate is a float property: single precision, as the operator reads it
        expected = n if not rate else int(np.floor((span[1] - span[0]) / fps * held + 1e-9)) + 1
        if len(times) != expected:
            s.findings.append(f"EXPORT {fmt} (rate {rate}) has {len(times)} rows, the baked frames "
                              f"{span[0]}..{span[1]} make {expected}")
            continue
        if header != names:
            s.findings.append(f"EXPORT {fmt} names {header} are not the rig's {names}")
            continue
        if not rate and values.shape == keys.shape and not np.allclose(values, keys, rtol=1e-6, atol=1e-6):
            s.findings.append(f"EXPORT {fmt} values differ from the keys by up to "
                              f"{float(np.nanmax(np.abs(values - keys))):.3g}")
        if not np.all(np.isfinite(values)):
            s.findings.append(f"EXPORT {fmt} holds non-finite values")
        elif not rate:
            exported.append((fmt, out))
    if exported and rng.random() < 0.5:  # last: the import changes the scene's clock and the stored trajectory
        fmt, out = exported[int(rng.integers(len(exported)))]
        round_trip(s, arm, span, keys, out, fmt)


def round_trip(s: Seed, arm, span: tuple[int, int], keys: np.ndarray, path: Path, fmt: str) -> None:
    """The export imported back by Import Joint Trajectory: the same keys on the same frames."""
    done, error = s.run(f"trajectory_import of the {fmt} export", bpy.ops.articulate.trajectory_import,
                        filepath=str(path), start_frame=span[0])
    if not done:
        s.findings.append(f"ROUNDTRIP the {fmt} export does not import back: {first_line(error)}")
        return
    if _stored_range(arm) != span:
        s.findings.append(f"ROUNDTRIP the {fmt} export imports back on frames {_stored_range(arm)}, not {span}")
        return
    again = addon("operators.bridge.robot").read_joint_values(arm, np.arange(span[0], span[1] + 1, dtype=float))
    if not np.allclose(again, keys, rtol=1e-6, atol=1e-6):
        s.findings.append(f"ROUNDTRIP the {fmt} export imports back up to {float(np.max(np.abs(again - keys))):.3g} "
                          "off the keys it was exported from")


def read_export(path: Path, fmt: str, names: list[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(joint names, times, (N, J) values) of an exported file, read plainly (not by the add-on's readers,
    except for MCAP)."""
    if fmt == "CSV":
        cells = [row for row in csv.reader(io.StringIO(path.read_text(encoding="utf-8"))) if row]
        header = cells[0]
        rows = np.array([[float(v) for v in row] for row in cells[1:]]).reshape(-1, len(header))
        return header[1:], rows[:, 0], rows[:, 1:]
    if fmt == "JSON":
        data = json.loads(path.read_text(encoding="utf-8"))
        points = data["points"]
        times = [p["time_from_start"] for p in points]
        times = np.array([t["sec"] + t.get("nanosec", 0) * 1e-9 if isinstance(t, dict) else t for t in times])
        return list(data["joint_names"]), times, np.array([p["positions"] for p in points]).reshape(
            len(points), len(data["joint_names"]))
    bag = addon("ik_core.trajectory.mcap_files").read_joint_mcap(str(path), names)
    traj = bag.trajectory
    return list(traj.joint_names), np.asarray(traj.times), np.asarray(traj.positions)


def kind_of(finding: str) -> str:
    """A finding's kind for the summary: its first word, and for an unexpected error where it happened."""
    where = re.search(r"\((\w+) at ([\w.]+:\d+)", finding)
    words = finding.split()
    return f"{words[0]} {where.group(1)} at {where.group(2)}" if where else " ".join(words[:2])


def main() -> int:
    global ADDON
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=300.0, help="stop starting new seeds after this long")
    parser.add_argument("--first-seed", type=int, default=1000)
    parser.add_argument("--seeds", default="", help="comma-separated seeds to run (verbose) instead")
    parser.add_argument("--keep", default="", help="folder to keep the files of seeds with findings in (seed_N)")
    args = parser.parse_args()
    with captured():
        ADDON = cli.ensure_addon()
    chosen = [int(s) for s in args.seeds.split(",") if s]
    seeds = iter(chosen) if chosen else iter(range(args.first_seed, sys.maxsize))
    end = time.time() + args.seconds
    runs = found = 0
    kinds: dict[str, list[int]] = {}  # distinct kinds of finding, with their seeds
    scratch = Path(tempfile.mkdtemp(prefix="articulate-fuzz-robots-"))
    for seed in seeds:
        if not chosen and time.time() > end:
            break
        folder = scratch / f"seed_{seed}"
        folder.mkdir()
        try:
            result = check(seed, folder, verbose=bool(chosen))
        except Exception as err:  # noqa: BLE001 (the fuzz's own failure, or Blender's outside an operator)
            result = Seed(seed, folder, False)
            result.findings.append(f"EXC outside an operator: {type(err).__name__}: {err}\n"
                                   f"{traceback.format_exc(limit=-4)}")
        runs += 1
        if chosen:
            print(f"seed {seed}: " + "; ".join(result.log), flush=True)
        if result.findings:
            found += 1
            for finding in dict.fromkeys(result.findings):
                print(f"seed {seed}: {finding}", flush=True)
                kinds.setdefault(kind_of(finding), []).append(seed)
            if args.keep:
                shutil.copytree(folder, Path(args.keep) / f"seed_{seed}", dirs_exist_ok=True)
        shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(scratch, ignore_errors=True)
    if kinds:
        print("distinct: " + "; ".join(f"{k} x{len(v)} (seed {v[0]})" for k, v in kinds.items()))
    print(f"{runs} seeds, {found} findings")
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.exit(code)
