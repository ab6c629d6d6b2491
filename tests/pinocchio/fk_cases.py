# SPDX-License-Identifier: GPL-3.0-or-later
"""Robots and joint values the forward kinematics is checked on: generated trees and real descriptions.

Each case is a URDF (text, or a file the importer reads: a ``.xacro`` one is expanded) and seeded
random values of the joints that move on their own, read from the URDF with ElementTree (not
with the core under test). Generated robots give every link a small box whose origin is turned
and offset, so every link, fixed ones included, has something in Blender to measure.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from data_files import ROBOTS
from robot_cases import dual_arm_urdf, rail_arm_urdf

from ik_core.formats.xacro_files import description_source, parse_xacro_args

XACRO = ROBOTS / "xacro"
# Public xacro descriptions (data/robots/README.md), with the arguments they are tried with.
DESCRIPTIONS = (
    ("kuka_kr6r700sixx", XACRO / "kuka_kr6_support" / "urdf" / "kr6r700sixx.xacro", ""),
    ("px100", XACRO / "trossen_descriptions" / "urdf" / "px100.urdf.xacro", ""),
    ("px100_named", XACRO / "trossen_descriptions" / "urdf" / "px100.urdf.xacro",
     "robot_name:=px100 use_world_frame:=true"),
    ("px100_no_fingers", XACRO / "trossen_descriptions" / "urdf" / "px100.urdf.xacro",
     "use_default_gripper_fingers:=false"),
)

MOVING = ("revolute", "continuous", "prismatic")
KINDS = ("revolute",) * 4 + ("continuous", "prismatic", "prismatic", "fixed", "floating", "planar")
CONFIGURATIONS = 6  # random configurations per robot (the first one: every joint value 0)


@dataclass(frozen=True)
class FkCase:
    """A robot to compare: its URDF text, the file the importer reads, its joint values.

    Attributes:
        name: Test id.
        urdf: The URDF as pinocchio reads it (a xacro file's expansion).
        path: File to import, or None to write ``urdf`` to a file first.
        xacro_args: Xacro arguments for a ``.xacro`` path (``name:=value`` separated by spaces).
        package_dir: Package Folder for the import ("" for none).
        configurations: Joint values [rad or m] of the independent moving joints, by name.
        boxed: Every link carries a primitive visual (generated robots): all links are measured.
        stl: The links' visuals are the mesh file ``meshes/shape.stl`` beside the URDF (the test
            writes it), drawn as objects ``<link>.shape``.
    """

    name: str
    urdf: str
    path: Path | None = None
    xacro_args: str = ""
    package_dir: str = ""
    configurations: tuple[dict[str, float], ...] = field(default=())
    boxed: bool = False
    stl: bool = False


def independent_joints(root: ET.Element) -> list[ET.Element]:
    """Moving joints whose value is their own: no mimic, or a mimic naming no moving joint (urdfdom ignores it)."""
    joints = {j.get("name"): j for j in root.findall("joint")}
    out = []
    for j in root.findall("joint"):
        if j.get("type") not in MOVING:
            continue
        mimic = j.find("mimic")
        source = joints.get(mimic.get("joint")) if mimic is not None else None
        if source is None or source.get("type") not in MOVING:
            out.append(j)
    return out


def random_configurations(text: str, seed: int, count: int = CONFIGURATIONS) -> tuple[dict[str, float], ...]:
    """``count`` configurations: zeros (clipped into the limits), then uniform inside them (continuous: +-3 pi)."""
    rng = np.random.default_rng(seed)
    joints = independent_joints(ET.fromstring(text))
    ranges = {}
    for j in joints:
        limit = j.find("limit")
        if j.get("type") == "continuous" or limit is None:
            ranges[j.get("name")] = (-3 * math.pi, 3 * math.pi)
        else:
            ranges[j.get("name")] = (float(limit.get("lower", 0)), float(limit.get("upper", 0)))
    out = [{name: min(max(0.0, lower), upper) for name, (lower, upper) in ranges.items()}]
    for _ in range(count - 1):
        out.append({name: float(rng.uniform(lower, upper)) for name, (lower, upper) in ranges.items()})
    return tuple(out)


def _f(v) -> str:
    return " ".join(repr(float(x)) for x in v)


def random_tree(seed: int, links: int = 14) -> str:
    """A random tree of ``links`` links, every joint type and the awkward cases drawn in.

    Revolute limits across +-pi, beyond it on one side and wider than 2 pi; continuous and
    prismatic joints; fixed, floating and planar ones; axes not unit and not coordinate axes;
    origins turned by arbitrary rpy; mimics with negative multipliers and offsets, mimics of
    mimics and of prismatic joints; a box on every link, off its origin and turned.
    """
    rng = np.random.default_rng(seed)
    names = [f"link{k}" for k in range(links)]
    joints, moving = [], []
    for k in range(1, links):
        parent = names[int(rng.integers(max(0, k - 4), k))]
        kind = str(rng.choice(KINDS))
        xyz, rpy = rng.uniform(-0.3, 0.3, 3), rng.uniform(-math.pi, math.pi, 3)
        axis = rng.normal(size=3) * rng.choice([1.0, 3.0])
        if rng.random() < 0.4:  # a coordinate axis, perhaps negative
            axis = np.zeros(3)
            axis[int(rng.integers(3))] = rng.choice([-1.0, 1.0, 2.5])
        inner = f"<origin xyz='{_f(xyz)}' rpy='{_f(rpy)}'/><axis xyz='{_f(axis)}'/>"
        if kind == "revolute":
            lower, upper = [(-1.2, 2.0), (-4.0, -2.5), (2.0, 4.5), (-7.0, 7.0), (-3.5, 10.0)][int(rng.integers(5))]
            inner += f"<limit lower='{lower}' upper='{upper}' effort='5' velocity='2'/>"
        elif kind == "prismatic":
            inner += "<limit lower='-0.4' upper='0.25' effort='5' velocity='0.5'/>"
        if kind in MOVING and moving and rng.random() < 0.35:
            multiplier, offset = rng.choice([-2.0, -0.5, 1.0, 1.5]), rng.uniform(-0.3, 0.3)
            inner += f"<mimic joint='{rng.choice(moving)}' multiplier='{multiplier}' offset='{offset!r}'/>"
        if kind in MOVING:
            moving.append(f"j{k}")
        joints.append(f"<joint name='j{k}' type='{kind}'><parent link='{parent}'/><child link='{names[k]}'/>"
                      f"{inner}</joint>")
    return _robot(f"tree{seed}", names, joints, rng)


def _robot(name: str, links: list[str], joints: list[str], rng: np.random.Generator) -> str:
    body = "".join(f"<link name='{n}'>{_box(rng)}</link>" for n in links)
    return f"<?xml version='1.0'?>\n<robot name='{name}'>{body}{''.join(joints)}</robot>\n"


def _box(rng: np.random.Generator, stl: bool = False) -> str:
    xyz, rpy = rng.uniform(-0.05, 0.05, 3), rng.uniform(-math.pi, math.pi, 3)
    shape = "<mesh filename='meshes/shape.stl'/>" if stl else "<box size='0.02 0.03 0.04'/>"
    return f"<visual><origin xyz='{_f(xyz)}' rpy='{_f(rpy)}'/><geometry>{shape}</geometry></visual>"


def boxed(text: str, seed: int, stl: bool = False) -> str:
    """A URDF with its visuals replaced by one turned, offset box (or STL mesh) per link: every link measured."""
    rng = np.random.default_rng(seed)
    root = ET.fromstring(text)
    for link in root.findall("link"):
        for visual in link.findall("visual"):
            link.remove(visual)
        link.append(ET.fromstring(_box(rng, stl)))
    return ET.tostring(root, encoding="unicode")


SLOPPY = """<robot name='sloppy'>
  <link name='base'/><link name='a'/><link name='b'/><link name='c'/><link name='d'/>
  <joint name='f' type='fixed'><parent link='base'/><child link='a'/><origin xyz='0 0 0.1'/>
    <mimic joint='m'/></joint>
  <joint name='m' type='revolute'><parent link='a'/><child link='b'/><origin xyz='0.1 0 0' rpy='0.3 0 0'/>
    <axis xyz='0 1 0'/><limit lower='-2' upper='2' effort='1' velocity='1'/><mimic joint='ghost'/></joint>
  <joint name='g' type='continuous'><parent link='b'/><child link='c'/><origin xyz='0.1 0 0'/>
    <axis xyz='0 0 1'/><mimic joint='f' multiplier='2'/></joint>
  <joint name='s' type='prismatic'><parent link='c'/><child link='d'/><origin xyz='0.1 0 0'/>
    <axis xyz='1 0 0'/><limit lower='0' upper='0.1' effort='1' velocity='1'/>
    <mimic joint='m' multiplier='-0.1' offset='0.05'/></joint>
</robot>"""


def generated_cases() -> list[FkCase]:
    """Generated robots: random trees, the rail arm, the dual arm with mimic fingers, a sloppy file."""
    texts = {f"tree{seed}": random_tree(seed) for seed in range(6)}
    texts["rail_arm"] = boxed(rail_arm_urdf(), 1)
    texts["dual_arm"] = boxed(dual_arm_urdf(), 2)
    texts["sloppy"] = boxed(SLOPPY, 3)
    cases = [FkCase(name, text, configurations=random_configurations(text, k), boxed=True)
             for k, (name, text) in enumerate(texts.items())]
    text = boxed(random_tree(7, links=30), 7, stl=True)
    return [*cases, FkCase("tree7_stl", text, configurations=random_configurations(text, 7), boxed=True, stl=True)]


def bundled_cases() -> list[FkCase]:
    """The official URDFs in ``data/robots`` as they are (meshes unresolved), and boxed."""
    out = []
    for k, path in enumerate(sorted(ROBOTS.glob("*.urdf"))):
        text = path.read_text()
        configurations = random_configurations(text, 100 + k)
        out.append(FkCase(path.stem, text, path, configurations=configurations))
        out.append(FkCase(f"{path.stem}_boxed", boxed(text, 200 + k), configurations=configurations, boxed=True))
    return out


def description_cases() -> list[FkCase]:
    """The public xacro descriptions in ``data/robots/xacro``, expanded by the bundled xacro with their arguments."""
    out = []
    for k, (name, path, args) in enumerate(DESCRIPTIONS):
        text = description_source(path, parse_xacro_args(args)).text
        configurations = random_configurations(text, 300 + k)
        out.append(FkCase(name, text, path, args, configurations=configurations))
        out.append(FkCase(f"{name}_boxed", boxed(text, 400 + k), configurations=configurations, boxed=True))
    return out


def all_cases() -> list[FkCase]:
    """Every case, generated and real."""
    return generated_cases() + bundled_cases() + description_cases()
