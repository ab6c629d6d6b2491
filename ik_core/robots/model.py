# SPDX-License-Identifier: GPL-3.0-or-later
"""A robot's kinematic model as a rig stores it: the whole URDF tree, home pose and limits, in JSON.

A robot rig is built from a :class:`RobotModel` and keeps it (serialized with
:meth:`RobotModel.to_json`) so that every bake, check, branch search and export solves on the
model itself, never on one re-derived from bone settings: prismatic joints, ranges wider than
2 pi, continuous joints and trees all survive a save and reload exactly.
"""

from __future__ import annotations

import itertools
import json
import math
import operator
import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ..errors import SkeletonError, URDFError
from ..formats.urdf import parse_urdf
from ..formats.urdf_model import JointColumns, UrdfJoint, UrdfModel
from ..model.kinematics import effector_poses
from ..model.skeleton import Effector, Joint, JointKind, Mimic, Skeleton, collector_paused
from .presets import preset_info

SCHEMA = "articulate-robot-model/1"
_TOOL_NAMES = ("tool", "tcp", "flange", "end_effector", "ee_link", "eef")  # lower-case parts of tool link names
_TOOL_PATTERN = re.compile("|".join(map(re.escape, _TOOL_NAMES)))


def _number(value: float | None, default: float) -> float:
    return default if value is None else float(value)


_STORED_FIELDS = operator.itemgetter(
    "name", "type", "parent", "child", "xyz", "rpy", "axis", "lower", "upper", "velocity", "effort")
_LIMIT_DEFAULTS = (-math.inf, math.inf, math.inf, math.inf)


def _shortened(name: str, max_bytes: int, taken: set[str]) -> str:
    """``name`` cut to at most ``max_bytes`` UTF-8 bytes: its start ``~`` its end, numbered where that is ``taken``."""
    raw = name.encode()
    k = 1
    while True:
        mark = "~" if k == 1 else f"~{k}~"
        room = max_bytes - len(mark)
        head, tail = room // 2, room - room // 2
        # A character cut in two at either end is left out ("ignore"): the result stays within max_bytes.
        short = raw[:head].decode(errors="ignore") + mark + raw[len(raw) - tail:].decode(errors="ignore")
        if short not in taken:
            return short
        k += 1


def _stored_columns(entries: Sequence[Mapping[str, Any]]) -> JointColumns:
    """The joint columns of :meth:`RobotModel.to_dict`'s joint entries, a field at a time for all joints.

    Raises:
        KeyError, TypeError, ValueError: A missing field, an entry or value of the wrong kind.
    """
    if not entries:
        return JointColumns.of(())
    rows = list(map(_STORED_FIELDS, entries))
    names, types, parents, children, *vectors = zip(*rows)
    # Arrays, not a tuple per joint: three hundred thousand fewer objects for the collector to walk.
    xyz, rpy, axis = (np.fromiter(itertools.chain.from_iterable(column), float, 3 * len(rows)).reshape(-1, 3)
                      for column in vectors[:3])

    def limits(column: tuple, default: float) -> np.ndarray:
        values = np.array(column, dtype=object)  # JSON's null (None) where unbounded
        values[np.equal(values, None)] = default
        return values.astype(float)

    bounds = np.stack(list(map(limits, vectors[3:], _LIMIT_DEFAULTS)), axis=1)
    mimics: list[Mimic | None] = list(map(operator.methodcaller("get", "mimic"), entries))
    for k in itertools.compress(range(len(mimics)), mimics):  # the mimic joints
        mimic = mimics[k]
        mimics[k] = Mimic(mimic["joint"], mimic["multiplier"], mimic["offset"])
    return JointColumns(names, types, parents, children, xyz, rpy, axis, bounds, [m or None for m in mimics])


@dataclass(frozen=True, eq=False)
class RobotModel:
    """A robot as its URDF describes it, plus what a rig needs: home pose, limits, provenance.

    Attributes:
        urdf: The kinematic tree as written (links, joints, origins, axes, limits, mimics).
        home: Home value of every moving (non-mimic) joint [rad or m]; missing joints use the
            middle of their range (0 when unbounded), clipped into the limits.
        acceleration: Acceleration limit per moving joint [rad/s^2 or m/s^2], where known.
        source: Where the model came from: ``{"urdf": path}`` or ``{"preset": name,
            "citation": ...}``; shown in reports.
        urdf_names: The description's own name of each joint renamed by :meth:`renamed` (new name
            -> the URDF's); trajectory files use the URDF's names.
    """

    urdf: UrdfModel
    home: Mapping[str, float] = field(default_factory=dict)
    acceleration: Mapping[str, float] = field(default_factory=dict)
    source: Mapping[str, str] = field(default_factory=dict)
    urdf_names: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        moving = set(self.joint_order)
        for what, values in (("home", self.home), ("acceleration", self.acceleration)):
            unknown = sorted(set(values) - moving)
            if unknown:
                raise SkeletonError(
                    f"robot {self.name!r}: {what} names {', '.join(map(repr, unknown))}, which are not "
                    f"moving joints; moving joints: {', '.join(map(repr, self.joint_order))}"
                )

    # --- construction ----------------------------------------------------------------------
    @classmethod
    def from_urdf(cls, source: str | os.PathLike) -> RobotModel:
        """The model of a URDF file (or XML string), every link and joint of its tree.

        Raises:
            URDFError: A malformed file; closed loops (a link with two parent joints) are
                refused with a message naming the joint. What was read leniently is in
                :attr:`notes`.
        """
        urdf = parse_urdf(source)
        where = {} if isinstance(source, str) and source.lstrip().startswith("<") else {"urdf": os.fspath(source)}
        return cls(urdf, source=where)

    @classmethod
    def from_preset(cls, name: str, folder: str | os.PathLike | None = None) -> RobotModel:
        """The model of a bundled robot preset (see :mod:`ik_core.robots.presets`).

        The preset's tool frame becomes a link of its own (joined to the last link by a fixed
        joint) unless it is the last link itself.

        Raises:
            UnknownNameError: No preset has that name.
            SkeletonError: The preset file is malformed.
        """
        info = preset_info(name, folder)
        base = str(info.get("base_link") or "base_link")
        links, joints, parent = [base], [], base
        for entry in info["joints"]:
            child = str(entry.get("link") or f"{entry['name']}_link")
            kind = entry["type"]
            limited = kind in ("revolute", "prismatic")
            joints.append(UrdfJoint(
                entry["name"], kind, parent, child, tuple(entry.get("xyz", (0.0, 0.0, 0.0))),
                tuple(entry.get("rpy", (0.0, 0.0, 0.0))), tuple(entry.get("axis") or (1.0, 0.0, 0.0)),
                float(entry["lower"]) if limited else -math.inf, float(entry["upper"]) if limited else math.inf,
                _number(entry.get("velocity"), math.inf),
            ))
            links.append(child)
            parent = child
        tool = info["tool"]
        xyz, rpy = tuple(tool.get("xyz", (0.0, 0.0, 0.0))), tuple(tool.get("rpy", (0.0, 0.0, 0.0)))
        if tool["name"] != parent or any(xyz) or any(rpy):
            tool_link = tool["name"] if tool["name"] not in links else f"{tool['name']}_tool"
            joint_names = {j.name for j in joints}
            joint_name = next(n for n in (f"{tool_link}_joint", f"{tool_link}_fixed_joint") if n not in joint_names)
            joints.append(UrdfJoint(joint_name, "fixed", parent, tool_link, xyz, rpy))
            links.append(tool_link)
        moving = [n for n in info["joint_names"]]
        accel = {n: a for n, a in zip(moving, info.get("acceleration") or ()) if a is not None}
        home = dict(zip(moving, info["home_q"]))
        urdf = UrdfModel(str(info["name"]), tuple(links), tuple(joints))
        return cls(urdf, home, accel, {"preset": str(info["name"]), "citation": str(info.get("source", ""))})

    def renamed(self, names: Mapping[str, str]) -> RobotModel:
        """The same robot with joints renamed (``names``: old -> new), mimic sources, home and limits following.

        The URDF's names are kept in :attr:`urdf_names`. An empty ``names`` gives the model itself.

        Raises:
            SkeletonError: A name that is not a joint, or new names that clash with each other or
                with a joint kept (the message lists them).
        """
        if not names:
            return self
        joints = set(self.urdf.columns.names)
        unknown = sorted(set(names) - joints)
        if unknown:
            raise SkeletonError(f"robot {self.name!r}: cannot rename {', '.join(map(repr, unknown))}: not joints")
        after = [names.get(n, n) for n in self.urdf.columns.names]
        clashes = sorted(n for n, count in Counter(after).items() if count > 1)
        if clashes:
            raise SkeletonError(f"robot {self.name!r}: renaming would give several joints the name(s) "
                                f"{', '.join(map(repr, clashes))}")
        data = self.to_dict()
        for entry in data["joints"]:
            entry["name"] = names.get(entry["name"], entry["name"])
            if "mimic" in entry:
                entry["mimic"]["joint"] = names.get(entry["mimic"]["joint"], entry["mimic"]["joint"])
        for what in ("home", "acceleration"):
            data[what] = {names.get(k, k): v for k, v in data[what].items()}
        data["urdf_names"] = {**{k: v for k, v in self.urdf_names.items() if k not in names},
                              **{new: self.urdf_name(old) for old, new in names.items() if new != old}}
        return RobotModel.from_dict(data)

    def urdf_name(self, joint: str) -> str:
        """The description's own name of ``joint`` (itself unless :meth:`renamed` renamed it)."""
        return self.urdf_names.get(joint, joint)

    def within_bytes(self, max_bytes: int) -> RobotModel:
        """The model with every moving joint's name at most ``max_bytes`` long in UTF-8 (itself when all are).

        A longer name keeps its start and its end, joined by ``~`` (joint names often share a long
        start and differ at the end); a number between two ``~`` tells apart names that would
        still meet, or meet a joint's name. The same model always gives the same names.
        """
        moving = self.skeleton.moving_joint_names + tuple(
            j.name for j in self.skeleton.joints if j.mimic is not None)
        long = [n for n in moving if len(n.encode()) > max_bytes]
        if not long:
            return self
        taken = set(self.urdf.columns.names) - set(long)
        names = {}
        for name in long:
            names[name] = _shortened(name, max_bytes, taken)
            taken.add(names[name])
        return self.renamed(names)

    # --- structure -------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The robot's name."""
        return self.urdf.name

    @property
    def notes(self) -> tuple[str, ...]:
        """What the URDF reader changed or ignored (see :attr:`UrdfModel.notes`), for the import to report."""
        return self.urdf.notes

    @cached_property
    def joint_order(self) -> tuple[str, ...]:
        """Moving, non-mimic joints in URDF document order: the order of exported trajectories."""
        return tuple(map(self.urdf.columns.names.__getitem__, self._joint_rows.tolist()))

    @cached_property
    def skeleton(self) -> Skeleton:
        """The whole tree from the root link: one joint per URDF joint, one effector per link.

        Effectors are named after their links (identity offsets), so any link can be a tool;
        ``preferred_q`` is the home pose. A robot of a single link (no joint) gets one fixed
        joint named after that link, at the identity, carrying an effector of the same name:
        a skeleton needs a joint, and the link's frame is the world. Floating and planar joints
        are fixed joints at their origin.
        """
        if not self.urdf.columns.names:
            root = self.urdf.root_link
            return Skeleton([Joint(root, JointKind.FIXED, -1, np.eye(4))], [Effector(root, 0)], name=self.name)
        whole = self.urdf.to_skeleton(None, list(self.urdf.columns.children))
        return whole.replace(preferred_q=self._home_for(whole.moving_joint_names, whole))

    def no_tools_reason(self) -> str | None:
        """Why the robot has no tool link a chain could drive, or None when it has one.

        A robot of one link, or whose joints are all fixed (floating and planar joints are held
        fixed), is one rigid body: it loads as a model and a rig, with no chain.
        """
        if self.joint_order:
            return None
        if not self.urdf.columns.names:
            return (f"robot {self.name!r} is a single link ({self.urdf.root_link!r}): it has no joint, "
                    "so there is no chain to make")
        kinds = Counter(j.type for j in self.urdf.joints)
        listed = ", ".join(f"{n} {t}" for t, n in kinds.items())
        return (f"robot {self.name!r} has no moving joint ({listed} joint{'s' if len(self.urdf.joints) > 1 else ''}): "
                "it is one rigid body, so there is no chain to make")

    def _home_for(self, names: Sequence[str], skeleton: Skeleton) -> np.ndarray:
        """(dof,) the home pose of ``skeleton``'s moving joints ``names``: mid-range where unset, clipped."""
        q = skeleton.mid_q()
        place = dict(zip(names, range(len(names)))) if self.home else {}
        homed = [(place[name], value) for name, value in self.home.items() if name in place]  # a preset's few
        if homed:
            where, values = zip(*homed)
            q[list(where)] = np.array(values, dtype=float)
        return np.clip(q, skeleton.lower, skeleton.upper)

    @cached_property
    def _nearest_moving(self) -> np.ndarray:
        """(L,) per link of ``urdf.links``, the nearest moving joint at or above it, or -1.

        That joint is the one the link hangs from, if it moves; it is named by its child link's index.
        """
        tree = self.urdf.tree
        return tree.nearest(tree.child_flags(self.urdf.moving))

    def links_below(self, base_link: str | None = None) -> list[str]:
        """Links that can be a tool of a chain from ``base_link``: those below it with a moving joint between.

        Document order; O(L log depth) in whole-array steps.

        Raises:
            UnknownNameError: ``base_link`` is not a link of the robot (the message lists them).
        """
        links = self.urdf.links
        return [links[k] for k in self._below(base_link).tolist()]

    def _below(self, base_link: str | None = None) -> np.ndarray:
        """Indices into ``urdf.links`` of :meth:`links_below`, ascending."""
        base = self.urdf.link_index(base_link or self.urdf.root_link)
        tree = self.urdf.tree
        end, moved = tree.climb(tree.child_flags(self.urdf.moving), stop=base)
        return np.flatnonzero(moved & (end == base))

    def default_tools(self) -> list[str]:
        """Tool links a new rig gets one chain each for: see :attr:`_default_tools`.

        Empty for a robot without a moving joint; :meth:`no_tools_reason` says why.
        """
        return list(self._default_tools)

    @cached_property
    def _default_tools(self) -> tuple[str, ...]:
        """Tool links a new rig gets one chain each for: one per arm or leg of the moving tree.

        Leaf links with a tool-like name (tool, tcp, flange, end_effector, ee_link, eef) are
        tools. Every other branch end (a moving joint with no moving joint below it: an arm's
        last wrist joint, a leg's ankle) gets one too, unless a named tool already ends that
        branch or a branch above it (a gripper's fingers under a named tool frame). Of the leaf
        links rigidly attached below a branch end, the tool is the deepest, else the last written.
        O(L log depth) in whole-array steps; only leaf names are visited one by one.
        """
        urdf, tree = self.urdf, self.urdf.tree
        links, nearest = urdf.links, self._nearest_moving  # a moving joint is named by its child link
        leaves = np.flatnonzero(tree.leaf & (nearest >= 0))
        named = [k for k in leaves.tolist() if _TOOL_PATTERN.search(links[k].lower())]
        covered = np.zeros(len(links), bool)
        covered[nearest[named]] = True
        _, under_covered = tree.climb(covered)
        branches = nearest[tree.joint_parent[urdf.moving]]  # moving joints with a moving joint below
        has_moving_child = np.zeros(len(links), bool)
        has_moving_child[branches[branches >= 0]] = True
        is_named = np.zeros(len(links), bool)
        is_named[named] = True
        ends = nearest[leaves]
        keep = ~(is_named[leaves] | has_moving_child[ends] | under_covered[leaves])
        leaves, ends = leaves[keep], ends[keep]
        depth = tree.depth()
        fixed_depth = depth[leaves] - depth[ends]  # fixed joints between the branch end and the leaf
        order = np.lexsort((leaves, fixed_depth, ends))  # per branch end, the best (deepest, then last) last
        leaves, ends = leaves[order], ends[order]
        best = np.ones(len(ends), bool)
        best[:-1] = ends[1:] != ends[:-1]
        return tuple(links[k] for k in sorted(named + leaves[best].tolist()))

    def serial_tool(self) -> str | None:
        """The tool link when the robot is one serial chain with one clear end, else None.

        Serial means no link carries two moving joints, counted through fixed joints (mimic
        joints count: a gripper's fingers branch the tree); links hanging from the chain by
        fixed joints only, such as the Panda's self-collision links, do not branch it. The end
        is :meth:`default_tools`' single link (the deepest leaf rigidly attached below the
        last moving joint, or a tool-like name); two candidate ends give None.
        """
        parents = self._nearest_moving[self.urdf.tree.joint_parent[self.urdf.moving]]
        if len(np.unique(parents)) != len(parents):
            return None
        tools = self._default_tools
        return tools[0] if len(tools) == 1 else None

    def tool_candidates(self) -> list[str]:
        """Links a chain from the root can end on, likeliest first.

        :meth:`default_tools` first, then the other leaf links, then every other link below a
        moving joint, each group in document order.
        """
        urdf = self.urdf
        below, links = self._below(), urdf.links
        rest = np.zeros(len(links), bool)  # below, not a default tool
        rest[below] = True
        tools = [urdf.link_index(link) for link in self._default_tools]
        first = [k for k in tools if rest[k]]
        rest[first] = False
        leaf = urdf.tree.leaf  # of the links below the root, exactly those of urdf.leaf_links()
        order = first + np.flatnonzero(rest & leaf).tolist() + np.flatnonzero(rest & ~leaf).tolist()
        return [links[k] for k in order]

    def chain_skeleton(self, tools: str | Sequence[str], base_link: str | None = None) -> Skeleton:
        """The sub-tree from ``base_link`` to one or more tool links, as a skeleton to solve on.

        The base link's frame is the skeleton's world; each tool link is an effector of its
        own name; ``preferred_q`` is the home pose of the joints kept.

        Raises:
            SkeletonError: A tool link that is not below the base through a moving joint; the
                message lists the valid tool links.
            UnknownNameError: An unknown base link.
        """
        names = [tools] if isinstance(tools, str) else list(tools)
        valid = self.links_below(base_link)
        base = base_link or self.urdf.root_link
        for tool in names:
            if tool not in valid:
                shown = ", ".join(map(repr, valid)) or "none"
                raise SkeletonError(
                    f"tool link {tool!r} is not below base link {base!r} through a moving joint; "
                    f"valid tool links: {shown}"
                )
        sk = self.urdf.to_skeleton(base, names)
        return sk.replace(name=f"{self.name}:{'+'.join(names)}", preferred_q=self._home_for(sk.moving_joint_names, sk))

    def link_rest_frame(self, link: str) -> np.ndarray:
        """(4, 4) the link's frame in the robot's root frame at q = 0 [m]."""
        if link == self.urdf.root_link:
            return np.eye(4)
        sk = self.skeleton
        return effector_poses(sk, np.zeros(sk.dof), link)

    # --- serialization ---------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-compatible data; :meth:`from_dict` rebuilds an identical model.

        Unbounded limits are written as ``null`` (JSON has no infinity); floats round-trip
        exactly (``json`` writes ``repr``).
        """
        columns, numbers = self.urdf.columns, self.urdf.numbers

        def limits(values: np.ndarray) -> list[float | None]:
            written = values.astype(object)  # Python floats
            written[~np.isfinite(values)] = None
            return written.tolist()

        # The numbers converted a column at a time; then one dict per joint, from a dict display
        # (twice as fast as dict(zip(keys, row)) by C-level calls).
        rows = zip(*columns[:4], *(map(list, values) for values in (columns.xyz, columns.rpy, columns.axis)),
                   *map(limits, (numbers.lower, numbers.upper, numbers.velocity, numbers.effort)))
        entries = [{"name": name, "type": kind, "parent": parent, "child": child, "xyz": xyz, "rpy": rpy, "axis": axis,
                    "lower": lower, "upper": upper, "velocity": velocity, "effort": effort}
                   for name, kind, parent, child, xyz, rpy, axis, lower, upper, velocity, effort in rows]
        for k in itertools.compress(range(len(entries)), columns.mimics):  # the mimic joints
            mimic = columns.mimics[k]
            entries[k]["mimic"] = {"joint": mimic.joint, "multiplier": mimic.multiplier, "offset": mimic.offset}
        return {
            "schema": SCHEMA,
            "name": self.name,
            "links": list(self.urdf.links),
            "joints": entries,
            "home": {k: float(v) for k, v in self.home.items()},
            "acceleration": {k: float(v) for k, v in self.acceleration.items()},
            "source": dict(self.source),
            **({"urdf_names": dict(self.urdf_names)} if self.urdf_names else {}),
        }

    def to_json(self) -> str:
        """The model as a JSON string (see :meth:`to_dict`)."""
        with collector_paused():  # for the rows made, one dict and three lists a joint
            return json.dumps(self.to_dict(), check_circular=False)  # plain data: no cycle to look for

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RobotModel:
        """The model :meth:`to_dict` wrote.

        Raises:
            URDFError: Data of another schema, or a malformed entry (the message names it).
        """
        if not isinstance(data, Mapping) or data.get("schema") != SCHEMA:
            found = data.get("schema") if isinstance(data, Mapping) else type(data).__name__
            raise URDFError(f"stored robot model has schema {found!r}, expected {SCHEMA!r}")
        try:
            urdf = UrdfModel.from_columns(data["name"], tuple(data["links"]), _stored_columns(data["joints"]))
        except (KeyError, TypeError, ValueError) as err:
            if isinstance(err, URDFError):
                raise
            raise URDFError(f"stored robot model is malformed: {type(err).__name__} {err}") from None
        urdf_names = data.get("urdf_names", {})
        if not (isinstance(urdf_names, Mapping) and all(isinstance(v, str) for v in urdf_names.values())):
            raise URDFError("stored robot model is malformed: 'urdf_names' is not a mapping of names")
        return cls(urdf, dict(data.get("home", {})), dict(data.get("acceleration", {})), dict(data.get("source", {})),
                   dict(urdf_names))

    @classmethod
    def from_json(cls, text: str) -> RobotModel:
        """The model :meth:`to_json` wrote.

        Raises:
            URDFError: Text that is not JSON, or not a stored robot model.
        """
        with collector_paused():  # for the rows read, one dict and three lists a joint, and the columns made
            try:
                data = json.loads(text)
            except (TypeError, json.JSONDecodeError) as err:
                raise URDFError(f"stored robot model is not valid JSON: {err}") from None
            model = cls.from_dict(data)
            del data  # freed while the collector sleeps: once awake, it would walk every row of it
        return model

    # --- joint values ----------------------------------------------------------------------
    def limits(self) -> tuple[np.ndarray, np.ndarray]:
        """(J,) lower and (J,) upper limits of :attr:`joint_order` [rad or m]; +-inf where unbounded."""
        numbers, rows = self.urdf.numbers, self._joint_rows
        return numbers.lower[rows], numbers.upper[rows]

    def kinds(self) -> tuple[str, ...]:
        """URDF type of each joint of :attr:`joint_order` (revolute, continuous or prismatic)."""
        return tuple(map(self.urdf.columns.types.__getitem__, self._joint_rows.tolist()))

    @cached_property
    def _joint_rows(self) -> np.ndarray:
        """(J,) the row of each joint of :attr:`joint_order` in ``urdf.columns``."""
        mimics = self.urdf.columns.mimics
        free = np.fromiter(map(operator.is_, mimics, itertools.repeat(None)), bool, len(mimics))
        return np.flatnonzero(self.urdf.moving & free)


def wrap_into_limits(q: np.ndarray, lower: np.ndarray, upper: np.ndarray, revolute: np.ndarray) -> np.ndarray:
    """Joint values moved by whole turns into ``[lower, upper]`` where that is possible.

    A solver may return a revolute joint's angle 2 pi away from the equivalent legal value; a
    key must be the joint value itself. Values already inside stay; values no whole turn brings
    inside are left for the caller's limit check.

    Args:
        q: (..., J) joint values [rad or m].
        lower: (J,) lower limits; -inf where unbounded.
        upper: (J,) upper limits; inf where unbounded.
        revolute: (J,) True for revolute joints (the only ones a turn applies to).

    Returns:
        (..., J) the values, as float64.
    """
    q = np.array(q, dtype=float)
    turn = 2.0 * np.pi
    finite = revolute & np.isfinite(lower) & np.isfinite(upper)
    below = finite & (q < lower)
    above = finite & (q > upper)
    up = np.ceil((lower - q) / turn) * turn
    down = np.floor((upper - q) / turn) * turn
    q = np.where(below & (q + up <= upper), q + up, q)
    q = np.where(above & (q + down >= lower), q + down, q)
    return q
