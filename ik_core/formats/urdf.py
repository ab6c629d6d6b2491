# SPDX-License-Identifier: GPL-3.0-or-later
"""URDF loader: read a robot description's kinematic tree into a :class:`Skeleton`."""

from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from ..errors import URDFError
from ..model.skeleton import Mimic, Skeleton
from .urdf_model import SUPPORTED_JOINT_TYPES, UrdfJoint, UrdfModel, unsupported_type_message

__all__ = [
    "SUPPORTED_JOINT_TYPES",
    "UrdfJoint",
    "UrdfModel",
    "chain_joint_names",
    "is_xacro",
    "load_urdf",
    "parse_urdf",
    "read_urdf_xml",
]


def _number(elem: ET.Element | None, attr: str, default: float, where: str) -> float:
    text = None if elem is None else elem.get(attr)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        raise URDFError(f"{where}: <{elem.tag} {attr}='{text}'> is not a number") from None
    if not math.isfinite(value):
        raise URDFError(f"{where}: <{elem.tag} {attr}='{text}'> must be a finite number")
    return value


def _vector(elem: ET.Element | None, attr: str, default: tuple[float, ...], where: str) -> tuple[float, ...]:
    text = None if elem is None else elem.get(attr)
    if text is None:
        return default
    try:
        values = tuple(float(p) for p in text.split())
    except ValueError:
        values = ()
    if len(values) != 3 or not all(math.isfinite(v) for v in values):
        raise URDFError(f"{where}: <{elem.tag} {attr}='{text}'> needs 3 finite numbers")
    return values


def _link_ref(elem: ET.Element, tag: str, where: str) -> str:
    ref = elem.find(tag)
    if ref is None:
        raise URDFError(f"{where}: missing <{tag} link='...'> element")
    if not ref.get("link"):
        raise URDFError(f"{where}: <{tag}> has no link attribute")
    return ref.get("link")


def _parse_joint(elem: ET.Element, number: int) -> UrdfJoint:
    name = elem.get("name")
    if not name:
        raise URDFError(f"<joint> number {number} (counting from 1) has no name attribute")
    where, jtype = f"joint {name!r}", elem.get("type")
    if jtype not in SUPPORTED_JOINT_TYPES:
        raise URDFError(unsupported_type_message(name, jtype))
    parent, child = _link_ref(elem, "parent", where), _link_ref(elem, "child", where)
    origin, axis_elem, limit = elem.find("origin"), elem.find("axis"), elem.find("limit")
    xyz = _vector(origin, "xyz", (0.0, 0.0, 0.0), where)
    rpy = _vector(origin, "rpy", (0.0, 0.0, 0.0), where)
    axis = (1.0, 0.0, 0.0)
    if jtype != "fixed":  # fixed joints often carry a meaningless axis="0 0 0"
        axis = _vector(axis_elem, "xyz", axis, where)
        norm = math.sqrt(sum(a * a for a in axis))
        if norm < 1e-12:
            raise URDFError(f"{where}: <axis xyz='{axis_elem.get('xyz')}'> must be a non-zero vector")
        axis = tuple(a / norm for a in axis)
    lower, upper, velocity, effort = -math.inf, math.inf, math.inf, math.inf
    if jtype in ("revolute", "prismatic"):
        if limit is None:
            raise URDFError(
                f"{where}: a {jtype} joint needs a <limit> element with lower, upper, effort and "
                "velocity (URDF spec); use type 'continuous' for an unlimited revolute joint"
            )
        lower, upper = _number(limit, "lower", 0.0, where), _number(limit, "upper", 0.0, where)
        if lower > upper:
            raise URDFError(
                f"{where}: <limit lower='{limit.get('lower')}' upper='{limit.get('upper')}'> "
                "has lower > upper"
            )
    if jtype != "fixed":
        velocity = _number(limit, "velocity", math.inf, where)
        effort = _number(limit, "effort", math.inf, where)
        for attr, value in (("velocity", velocity), ("effort", effort)):
            if value < 0:
                raise URDFError(f"{where}: <limit {attr}='{limit.get(attr)}'> must not be negative")
        velocity = velocity if velocity > 0 else math.inf  # generators write 0 for "unspecified"
    mimic, mimic_elem = None, elem.find("mimic")
    if mimic_elem is not None:
        if not mimic_elem.get("joint"):
            raise URDFError(f"{where}: <mimic> has no joint attribute")
        mimic = Mimic(
            mimic_elem.get("joint"),
            _number(mimic_elem, "multiplier", 1.0, where),
            _number(mimic_elem, "offset", 0.0, where),
        )
    return UrdfJoint(name, jtype, parent, child, xyz, rpy, axis, lower, upper, velocity, effort, mimic)


XACRO_HINT = "expand it into a URDF first with ROS's xacro tool (`xacro robot.urdf.xacro > robot.urdf`)"


def is_xacro(root: ET.Element) -> bool:
    """Whether a parsed document still holds xacro macros (elements in the xacro namespace).

    Expanded URDFs often keep the ``xmlns:xacro`` declaration; only xacro elements count.
    """
    return any(isinstance(e.tag, str) and e.tag.startswith("{") and "xacro" in e.tag.split("}")[0]
               for e in root.iter())


def read_urdf_xml(source: str | os.PathLike) -> tuple[str, ET.Element]:
    """Parse a URDF file or XML string, refusing xacro files.

    Args:
        source: A file path, or a URDF XML string (recognised by its leading '<').

    Returns:
        The error-message prefix ("" for XML strings, else ``"<path>: "``) and the root element.

    Raises:
        URDFError: Missing or unreadable file, invalid XML (with its line number), or a xacro
            file (by its .xacro extension or its xacro elements), with how to expand it.
    """
    skipped = 0  # lines of leading whitespace dropped, so an <?xml?> declaration may follow them
    if isinstance(source, str) and source.lstrip().startswith("<"):
        prefix, data = "", source.lstrip()
        skipped = source[: len(source) - len(data)].count("\n")
    else:
        try:
            path = os.fsdecode(os.fspath(source))
        except TypeError:
            raise URDFError(
                f"source must be a file path or a URDF XML string, got {type(source).__name__}"
            ) from None
        prefix = f"{path}: "
        if path.lower().endswith(".xacro"):
            raise URDFError(f"{prefix}this is a xacro file (ROS macros), not a URDF; {XACRO_HINT}")
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise URDFError(f"URDF file {path!r} not found (a URDF XML string must start with '<')") from None
        except OSError as e:
            raise URDFError(f"cannot read URDF file {path!r}: {e.strerror or e}") from None
    try:
        root = ET.fromstring(data)
    except ET.ParseError as e:
        if ("<xacro:" if isinstance(data, str) else b"<xacro:") in data:  # macros without xmlns:xacro
            raise URDFError(f"{prefix}this is a xacro file (ROS macros), not a URDF; {XACRO_HINT}") from None
        line, column = e.position[0] + skipped, e.position[1]
        reason = str(e).rsplit(": line", 1)[0]
        raise URDFError(f"{prefix}XML parse error at line {line}, column {column}: {reason}") from None
    if is_xacro(root):
        raise URDFError(f"{prefix}this document holds xacro macros (ROS), it is not a URDF yet; {XACRO_HINT}")
    return prefix, root


def parse_urdf(source: str | os.PathLike) -> UrdfModel:
    """Read the kinematic tree of a URDF.

    Visuals, collisions, inertials, transmissions, gazebo tags and meshes are ignored.

    Args:
        source: A file path, or a URDF XML string (recognised by its leading '<').

    Returns:
        The validated :class:`UrdfModel`.

    Raises:
        URDFError: Missing or unreadable file, invalid XML (with its line number), or a
            malformed robot; the message names the offending element.
    """
    prefix, root = read_urdf_xml(source)
    try:
        if root.tag != "robot":
            raise URDFError(f"the root element is <{root.tag}>, expected <robot>")
        links = [elem.get("name") for elem in root.findall("link")]
        if not all(links):
            number = [bool(n) for n in links].index(False) + 1
            raise URDFError(f"<link> number {number} (counting from 1) has no name attribute")
        joints = [_parse_joint(elem, n) for n, elem in enumerate(root.findall("joint"), 1)]
        return UrdfModel(root.get("name") or "robot", tuple(links), tuple(joints))
    except URDFError as e:
        if not prefix:
            raise
        raise URDFError(f"{prefix}{e}") from None


def load_urdf(
    source: str | os.PathLike,
    *,
    base_link: str | None = None,
    tip_links: str | Sequence[str] | None = None,
) -> Skeleton:
    """Load a URDF as a :class:`Skeleton` (see :meth:`UrdfModel.to_skeleton`).

    Args:
        source: A file path, or a URDF XML string (recognised by its leading '<').
        base_link: Link whose frame becomes the world frame; defaults to the root link.
        tip_links: Link name(s) that get an effector each; defaults to every leaf link
            below the base.

    Returns:
        One joint per URDF joint on the base-to-tip paths, one effector per tip link.

    Raises:
        URDFError: The file is missing, unreadable or malformed.
        UnknownNameError: ``base_link`` or a tip link is not a link of the robot.
        SkeletonError: A tip does not descend from the base.
    """
    return parse_urdf(source).to_skeleton(base_link, tip_links)


def chain_joint_names(skeleton: Skeleton, effector: str | int = 0, *, moving_only: bool = False) -> list[str]:
    """Names of the joints from the root down to an effector's joint.

    Args:
        skeleton: The skeleton.
        effector: Effector name or index.
        moving_only: Keep only the joints that own configuration variables.

    Returns:
        Joint names, root first.

    Raises:
        UnknownNameError: For an unknown effector; the message lists the effectors.
    """
    joints = [skeleton.joints[i] for i in skeleton.ancestors(skeleton.effector(effector).joint)]
    return [j.name for j in joints if j.dof or not moving_only]
