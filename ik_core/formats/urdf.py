# SPDX-License-Identifier: GPL-3.0-or-later
"""URDF loader: read a robot description's kinematic tree into a :class:`Skeleton`."""

from __future__ import annotations

import functools
import itertools
import math
import operator
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence

import numpy as np

from ..errors import URDFError
from ..model.skeleton import Mimic, Skeleton, collector_paused
from .urdf_model import (
    HELD_JOINT_TYPES,
    MOVING_JOINT_TYPES,
    SUPPORTED_JOINT_TYPES,
    URDF_JOINT_TYPES,
    JointColumns,
    URDFElementError,
    UrdfJoint,
    UrdfModel,
    unsupported_type_message,
    usable_mimic_columns,
)
from .xacro_files import XacroExpansion, expand_xacro, is_xacro_path

__all__ = [
    "SUPPORTED_JOINT_TYPES",
    "URDF_JOINT_TYPES",
    "URDFElementError",
    "UrdfJoint",
    "UrdfModel",
    "chain_joint_names",
    "is_xacro",
    "load_urdf",
    "parse_urdf",
    "read_urdf_xml",
]


def _number(elem: ET.Element, attr: str, default: float, name: str) -> float:
    text = elem.get(attr)
    if text is None:
        return default
    value = _finite_float(text)
    if value is None:
        try:
            float(text)
            problem = "must be a finite number"
        except ValueError:
            problem = "is not a number"
        raise URDFError(f"joint {name!r}: <{elem.tag} {attr}='{text}'> {problem}")
    return value


# This and _three_floats are cached: files repeat their numbers thousands of times (the limits of
# like joints, "0 0 0", "0 0 1"), and a hit skips the parse and the finiteness checks in Python.
@functools.lru_cache(maxsize=4096)
def _finite_float(text: str) -> float | None:
    """``text`` as a finite float, or None."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


@functools.lru_cache(maxsize=4096)
def _three_floats(text: str) -> tuple[float, float, float] | None:
    """``"x y z"`` as 3 finite floats, or None."""
    try:
        x, y, z = map(float, text.split())
    except ValueError:  # not numbers, or not three of them
        return None
    return (x, y, z) if math.isfinite(x) and math.isfinite(y) and math.isfinite(z) else None


_ZERO = (0.0, 0.0, 0.0)
_X = (1.0, 0.0, 0.0)


def _vector(elem: ET.Element | None, attr: str, default: tuple[float, ...], name: str) -> tuple[float, ...]:
    text = None if elem is None else elem.get(attr)
    if text is None:
        return default
    values = _three_floats(text)
    if values is None:
        raise URDFError(f"joint {name!r}: <{elem.tag} {attr}='{text}'> needs 3 finite numbers")
    return values


def _link_ref(elem: ET.Element, tag: str, name: str) -> str:
    ref = elem.find(tag)
    link = None if ref is None else ref.get("link")
    if not link:
        problem = f"missing <{tag} link='...'> element" if ref is None else f"<{tag}> has no link attribute"
        raise URDFError(f"joint {name!r}: {problem}")
    return link


def _joint_fields(elem: ET.Element, name: str, notes: list[str]) -> UrdfJoint:
    # Run once per joint (100,000 times in a big file): the message prefix "joint 'name'" is
    # only written when something is wrong, and children are found with C-level find().
    jtype = elem.get("type")
    if jtype not in URDF_JOINT_TYPES:
        raise URDFError(unsupported_type_message(name, jtype))
    parent, child = _link_ref(elem, "parent", name), _link_ref(elem, "child", name)
    origin = elem.find("origin")
    xyz, rpy = (_ZERO, _ZERO) if origin is None else (
        _vector(origin, "xyz", _ZERO, name), _vector(origin, "rpy", _ZERO, name))
    axis, lower, upper, velocity, effort = _X, -math.inf, math.inf, math.inf, math.inf
    if jtype in MOVING_JOINT_TYPES:  # fixed joints often carry a meaningless axis="0 0 0"
        axis_elem, limit = elem.find("axis"), elem.find("limit")
        axis = _vector(axis_elem, "xyz", _X, name)
        norm = math.sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2])
        if norm < 1e-12:
            raise URDFError(f"joint {name!r}: <axis xyz='{axis_elem.get('xyz')}'> must be a non-zero vector")
        if norm != 1.0:
            axis = (axis[0] / norm, axis[1] / norm, axis[2] / norm)
        if jtype != "continuous":
            if limit is None:
                raise URDFError(
                    f"joint {name!r}: a {jtype} joint needs a <limit> element with lower, upper, effort "
                    "and velocity (URDF spec); use type 'continuous' for an unlimited revolute joint"
                )
            lower, upper = _number(limit, "lower", 0.0, name), _number(limit, "upper", 0.0, name)
            if lower > upper:
                raise URDFError(
                    f"joint {name!r}: <limit lower='{limit.get('lower')}' upper='{limit.get('upper')}'> "
                    "has lower > upper"
                )
        if limit is not None:
            velocity = _number(limit, "velocity", math.inf, name)
            effort = _number(limit, "effort", math.inf, name)
            if velocity < 0 or effort < 0:  # urdfdom reads them as written; a limit cannot be negative
                bad = "velocity" if velocity < 0 else "effort"
                notes.append(f"joint {name!r}: <limit {bad}='{limit.get(bad)}'> is negative; read as unknown")
                velocity, effort = (math.inf if velocity < 0 else velocity), (math.inf if effort < 0 else effort)
            velocity = velocity if velocity > 0 else math.inf  # generators write 0 for "unspecified"
    mimic, mimic_elem = None, elem.find("mimic")
    if mimic_elem is not None:
        if not mimic_elem.get("joint"):
            raise URDFError(f"joint {name!r}: <mimic> has no joint attribute")
        mimic = Mimic(
            mimic_elem.get("joint"),
            _number(mimic_elem, "multiplier", 1.0, name),
            _number(mimic_elem, "offset", 0.0, name),
        )
    return UrdfJoint(name, jtype, parent, child, xyz, rpy, axis, lower, upper, velocity, effort, mimic)


def _joints_one_by_one(elems: list[ET.Element], notes: list[str]) -> list[UrdfJoint]:
    """Every ``<joint>``, one at a time: the first problem raises, about its joint; notes are added in order."""
    parsed = []
    for number, elem in enumerate(elems, 1):
        name = elem.get("name")
        if not name:
            raise URDFError(f"<joint> number {number} (counting from 1) has no name attribute")
        try:
            parsed.append(_joint_fields(elem, name, notes))
        except URDFError as e:
            raise URDFElementError("joint", name, str(e)) from None
    return parsed


# The reader below reads each field for all joints at once through C-level calls: map() over
# Element.find and Element.get, and cached number readers that a file's repeated texts hit, so no
# Python code runs per joint (a joint read one by one costs about 50,000 machine instructions,
# as many as ElementTree's parse of it). Anything it does not expect (a bad or missing value, a
# note to write) makes it give up, and _joints_one_by_one reads the joints again to say what is
# wrong where, in document order, or to write the note.
_repeat = itertools.repeat
_GET = ET.Element.get
_TAG = operator.attrgetter("tag")
_NO_ELEMENT = ET.Element("none")  # stands for a missing child: every get() on it gives None
_MOVING = frozenset(MOVING_JOINT_TYPES)
_URDF_TYPES = frozenset(URDF_JOINT_TYPES)
_HELD = frozenset(HELD_JOINT_TYPES)
_UNLIMITED = (-math.inf, math.inf, math.inf, math.inf)


class _Unexpected(Exception):
    """Raised inside the fast reader: leave the joints to the one-by-one reader."""


@functools.lru_cache(maxsize=4096)
def _origin_vector(text: str | None) -> tuple[float, float, float]:
    """An origin's xyz or rpy: 3 finite floats, zeros when absent."""
    if text is None:
        return _ZERO
    values = _three_floats(text)
    if values is None:
        raise _Unexpected
    return values


@functools.lru_cache(maxsize=4096)
def _unit_axis(jtype: str, text: str | None) -> tuple[float, float, float]:
    """A joint's unit axis, (1, 0, 0) when absent or when the joint does not move."""
    if text is None or jtype not in _MOVING:
        return _X
    axis = _three_floats(text)
    if axis is None:
        raise _Unexpected
    norm = math.sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2])
    if norm < 1e-12:
        raise _Unexpected
    return axis if norm == 1.0 else (axis[0] / norm, axis[1] / norm, axis[2] / norm)


@functools.lru_cache(maxsize=4096)
def _limit_values(jtype: str, has_limit: bool, lower: str | None, upper: str | None, velocity: str | None,
                  effort: str | None) -> tuple[float, float, float, float]:
    """A joint's (lower, upper, velocity, effort) as :func:`_joint_fields` reads them, from the ``<limit>`` texts."""
    if jtype not in _MOVING:
        return _UNLIMITED
    low, high = -math.inf, math.inf
    if jtype != "continuous":
        if not has_limit:
            raise _Unexpected
        low, high = _finite_or_default(lower, 0.0), _finite_or_default(upper, 0.0)
        if low > high:
            raise _Unexpected
    if not has_limit:
        return low, high, math.inf, math.inf
    speed, force = _finite_or_default(velocity, math.inf), _finite_or_default(effort, math.inf)
    if speed < 0 or force < 0:  # read as unknown, with a note
        raise _Unexpected
    return low, high, speed if speed > 0 else math.inf, force


def _finite_or_default(text: str | None, default: float) -> float:
    if text is None:
        return default
    value = _finite_float(text)
    if value is None:
        raise _Unexpected
    return value


def _first_children(elems: list[ET.Element], tags: Sequence[str], missing: Sequence[ET.Element | None]
                    ) -> list[list[ET.Element | None]]:
    """Per tag of ``tags``, each element's first child of that tag (as ``find``), else that tag's ``missing``.

    All the elements' children are listed once, by C-level calls, and sorted out by tag in
    whole-array steps: a third faster than a ``find`` pass per tag over 100,000 joints.
    """
    counts = np.fromiter(map(len, elems), np.intp, len(elems))
    total = int(counts.sum())
    # The children, then the stand-ins for missing ones (kept as objects, where numpy would
    # unpack an element as the sequence of its children).
    kids = np.fromiter(itertools.chain(itertools.chain.from_iterable(elems), missing), object, total + len(missing))
    kid_tags = np.fromiter(map(_TAG, kids[:total]), object, total)
    owner = np.repeat(np.arange(len(elems)), counts)  # the element each child belongs to
    columns = []
    for k, tag in enumerate(tags):
        at = np.flatnonzero(kid_tags == tag)
        first = np.ones(len(at), bool)  # an element's first child of this tag, not its later ones
        first[1:] = owner[at[1:]] != owner[at[:-1]]
        where = np.full(len(elems), total + k)
        where[owner[at[first]]] = at[first]
        columns.append(kids[where].tolist())
    return columns


def _plain_joints(elems: list[ET.Element]) -> JointColumns | None:
    """Every ``<joint>`` as :func:`_joint_fields` reads it, as columns; None if one has a problem or needs a note.

    Linear in the number of joints; no Python code runs per joint but a cached number reader's,
    on a text it has not seen.
    """
    names = list(map(_GET, elems, _repeat("name")))
    types = list(map(_GET, elems, _repeat("type")))
    if not all(names) or not _URDF_TYPES.issuperset(types):
        return None
    parents, children, origins, axes, limits, mimics = _first_children(
        elems, ("parent", "child", "origin", "axis", "limit", "mimic"),
        (None, None, _NO_ELEMENT, _NO_ELEMENT, _NO_ELEMENT, None))
    ends = []
    for found in (parents, children):
        if None in found:
            return None
        links = list(map(_GET, found, _repeat("link")))
        if not all(links):
            return None
        ends.append(links)
    try:
        xyz = list(map(_origin_vector, map(_GET, origins, _repeat("xyz"))))
        rpy = list(map(_origin_vector, map(_GET, origins, _repeat("rpy"))))
        axis = list(map(_unit_axis, types, map(_GET, axes, _repeat("xyz"))))
        bounds = list(map(_limit_values, types, map(operator.is_not, limits, _repeat(_NO_ELEMENT)),
                          *(map(_GET, limits, _repeat(attr)) for attr in ("lower", "upper", "velocity", "effort"))))
        mimic: list[Mimic | None] = [None] * len(elems)
        for k in itertools.compress(range(len(elems)), map(operator.is_not, mimics, _repeat(None))):
            elem = mimics[k]
            if not elem.get("joint"):
                raise _Unexpected
            mimic[k] = Mimic(elem.get("joint"), _finite_or_default(elem.get("multiplier"), 1.0),
                             _finite_or_default(elem.get("offset"), 0.0))
    except _Unexpected:
        return None
    return JointColumns(names, types, *ends, xyz, rpy, axis, bounds, mimic)


XACRO_HINT = ("give the .xacro file itself (it is expanded by the bundled xacro package), or expand it into a "
              "URDF with ROS's xacro tool (`xacro robot.urdf.xacro > robot.urdf`)")


def is_xacro(root: ET.Element) -> bool:
    """Whether a parsed document still holds xacro macros (elements in the xacro namespace).

    Expanded URDFs often keep the ``xmlns:xacro`` declaration; only xacro elements count.
    """
    return any(isinstance(e.tag, str) and e.tag.startswith("{") and "xacro" in e.tag.split("}")[0]
               for e in root.iter())


def read_urdf_xml(source: str | os.PathLike | XacroExpansion) -> tuple[str, ET.Element]:
    """Parse a URDF file, XML string or expanded xacro file.

    Args:
        source: A file path (a ``.xacro`` one is expanded with its default arguments), a
            :class:`~.xacro_files.XacroExpansion`, or a URDF XML string (recognised by its leading '<').

    Returns:
        The error-message prefix ("" for XML strings, else ``"<path>: "``) and the root element.

    Raises:
        URDFError: Missing or unreadable file, invalid XML (with its line number), an error
            expanding a xacro file, or XML text still holding xacro elements, with what to do.
    """
    document = _read_document(source)
    return document.prefix, document.root


class _Document:
    """A URDF document as read: its message prefix, raw text, leading lines dropped, and root."""

    __slots__ = ("data", "prefix", "root", "skipped")

    def __init__(self, prefix: str, data: str | bytes, skipped: int, root: ET.Element) -> None:
        self.prefix, self.data, self.skipped, self.root = prefix, data, skipped, root

    def line_of(self, tag: str, name: str, occurrence: int = 0) -> int | None:
        """1-based line of the ``occurrence``-th ``<tag name="name">`` in the text, if found there.

        Only searched when an error is reported, so parsing itself stays one pass.
        """
        pattern = rf"<{re.escape(tag)}\b[^>]*?\bname\s*=\s*([\"']){re.escape(name)}\1"
        data = self.data
        if isinstance(data, bytes):
            pattern = pattern.encode("utf-8")  # type: ignore[assignment]
        for k, match in enumerate(re.finditer(pattern, data)):
            if k == occurrence:
                newline = b"\n" if isinstance(data, bytes) else "\n"
                return data.count(newline, 0, match.start()) + 1 + self.skipped
        return None


def _read_document(source: str | os.PathLike | XacroExpansion) -> _Document:
    return _tree_document(*_read_source(source))


def _read_source(source: str | os.PathLike | XacroExpansion) -> tuple[str, str | bytes, int]:
    """The error-message prefix, the text to parse, and how many leading blank lines were dropped from it."""
    skipped = 0  # lines of leading whitespace dropped, so an <?xml?> declaration may follow them
    if is_xacro_path(source):
        expanded = source if isinstance(source, XacroExpansion) else expand_xacro(source)
        # Line numbers in messages are those of the expansion, as `xacro file > file.urdf` writes it.
        prefix, data = f"{expanded.path} (expanded by xacro): ", expanded.text
    elif isinstance(source, str) and source.lstrip().startswith("<"):
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
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise URDFError(f"URDF file {path!r} not found (a URDF XML string must start with '<')") from None
        except OSError as e:
            raise URDFError(f"cannot read URDF file {path!r}: {e.strerror or e}") from None
    return prefix, data, skipped


def _tree_document(prefix: str, data: str | bytes, skipped: int) -> _Document:
    """The document parsed by ElementTree, namespaces dropped; xacro and XML errors raised with their lines."""
    try:
        root = ET.fromstring(data)
    except ET.ParseError as e:
        if ("<xacro:" if isinstance(data, str) else b"<xacro:") in data:  # macros without xmlns:xacro
            raise URDFError(f"{prefix}this is a xacro file (ROS macros), not a URDF; {XACRO_HINT}") from None
        line, column = e.position[0] + skipped, e.position[1]
        reason = str(e).rsplit(": line", 1)[0]
        raise URDFError(f"{prefix}XML parse error at line {line}, column {column}: {reason}") from None
    if isinstance(root.tag, str) and root.tag.startswith("{") and root.tag.endswith("}robot"):
        _drop_namespace(root, root.tag[: root.tag.index("}") + 1])
    # Only a document that mentions xacro can hold its elements: one text search spares the walk.
    if ("xacro" if isinstance(data, str) else b"xacro") in data and is_xacro(root):
        raise URDFError(f"{prefix}this document holds xacro macros (ROS), it is not a URDF yet; {XACRO_HINT}")
    return _Document(prefix, data, skipped, root)


def _drop_namespace(root: ET.Element, namespace: str) -> None:
    """Tags of a document whose ``<robot xmlns="...">`` puts every element in a default namespace, without it.

    urdfdom's XML reader does not resolve namespaces: ``<robot xmlns="...">`` is ``<robot>`` to it.
    """
    for elem in root.iter():
        if isinstance(elem.tag, str) and elem.tag.startswith(namespace):
            elem.tag = elem.tag[len(namespace):]


def parse_urdf(source: str | os.PathLike | XacroExpansion) -> UrdfModel:
    """Read the kinematic tree of a URDF, as leniently as urdfdom where a file is sloppy.

    Visuals, collisions, inertials, transmissions, gazebo tags, meshes and any element or
    attribute the URDF spec does not use for kinematics are ignored. What urdfdom loads but a
    rig cannot use is read and noted in :attr:`UrdfModel.notes`: a ``<mimic>`` on a joint that
    does not move, or naming a joint that does not exist or does not move, is dropped; floating
    and planar joints are held at their origin; a negative velocity or effort limit is read as
    unknown. A robot of one link, or with no moving joint, is a model like any other. Time is
    linear in the size of the file.

    Args:
        source: A file path (a ``.xacro`` one is expanded with its default arguments), a
            :class:`~.xacro_files.XacroExpansion` (a xacro file expanded with chosen arguments),
            or a URDF XML string (recognised by its leading '<').

    Returns:
        The validated :class:`UrdfModel`, with its notes.

    Raises:
        URDFError: Missing or unreadable file, invalid XML (with its line number), an error
            expanding a xacro file (naming the file and macro), or a robot that is truly broken
            (a joint naming a missing link, a cycle, several root links, a link with two parents,
            a cycle of mimics, a bad number); the message names the offending element and, where
            it can be found in the text, its line.
    """
    with collector_paused():  # for the elements and joints made (nothing here is cyclic)
        return _parse_document(_read_document(source))


def _tree_rows(root: ET.Element, notes: list[str]) -> tuple[str, list[str], JointColumns]:
    """The robot's name, link names and joints, read from the tree one element at a time."""
    if root.tag != "robot":
        raise URDFError(f"the root element is <{root.tag}>, expected <robot>")
    # findall of a plain tag runs in C, over the root's children only (iterfind would run in Python).
    links = list(map(_GET, root.findall("link"), _repeat("name")))
    if not all(links):
        number = [bool(n) for n in links].index(False) + 1
        raise URDFError(f"<link> number {number} (counting from 1) has no name attribute")
    elems = root.findall("joint")
    parsed = _plain_joints(elems)
    if parsed is None:  # something to refuse or to note: the one-by-one reader says what, and where
        parsed = JointColumns.of(_joints_one_by_one(elems, notes))
    return root.get("name") or "robot", links, parsed


def _parse_document(document: _Document) -> UrdfModel:
    prefix = document.prefix
    notes: list[str] = []
    try:
        name, links, parsed = _tree_rows(document.root, notes)
        columns, mimic_notes = usable_mimic_columns(parsed)
        notes.extend(mimic_notes)
        if not _HELD.isdisjoint(columns.types):
            for joint, jtype in zip(columns.names, columns.types):
                if jtype in _HELD:
                    dof = "6" if jtype == "floating" else "3"
                    notes.append(f"joint {joint!r} is {jtype} ({dof} degrees of freedom): held at its "
                                 "origin, as a fixed joint")
        return UrdfModel.from_columns(name, links, columns, notes)
    except URDFElementError as e:
        line = document.line_of(e.tag, e.element, e.occurrence)
        where = f" (line {line})" if line is not None else ""
        raise URDFElementError(e.tag, e.element, f"{prefix}{e}{where}", e.occurrence) from None
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
