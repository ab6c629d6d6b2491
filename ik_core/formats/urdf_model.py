# SPDX-License-Identifier: GPL-3.0-or-later
"""The kinematic tree of a URDF as written (joints, links), validated, and its conversion to a :class:`Skeleton`."""

from __future__ import annotations

import itertools
import math
import operator
from collections import Counter
from collections.abc import Sequence
from dataclasses import FrozenInstanceError
from functools import cached_property
from typing import NamedTuple

import numpy as np

from ..errors import SkeletonError, UnknownNameError, URDFError
from ..model.skeleton import Effector, JointKind, Mimic, Skeleton
from .urdf_tree import LinkTree

MOVING_JOINT_TYPES: tuple[str, ...] = ("revolute", "continuous", "prismatic")
# Joint types a skeleton represents as they are; floating and planar joints are read (urdfdom
# loads them) but held at their origin, as a fixed joint: a rig has no 6- or 3-DoF joint.
SUPPORTED_JOINT_TYPES: tuple[str, ...] = (*MOVING_JOINT_TYPES, "fixed")
HELD_JOINT_TYPES: tuple[str, ...] = ("floating", "planar")
URDF_JOINT_TYPES: tuple[str, ...] = (*SUPPORTED_JOINT_TYPES, *HELD_JOINT_TYPES)
# The skeleton kind of each URDF type: floating and planar joints are held fixed.
_KINDS = {t: JointKind(t) for t in SUPPORTED_JOINT_TYPES} | {t: JointKind.FIXED for t in HELD_JOINT_TYPES}
_URDF_TYPE_SET = frozenset(URDF_JOINT_TYPES)
_NAME, _MIMIC = map(operator.attrgetter, ("name", "mimic"))
_JOINT_OF = operator.attrgetter("joint")
_MOVING_TYPE_SET = frozenset(MOVING_JOINT_TYPES)


class URDFElementError(URDFError):
    """A URDF error about one named element, so a reader of the file can add its line.

    Attributes:
        tag: The element's tag (``"joint"`` or ``"link"``).
        element: The element's name attribute.
        occurrence: Which element of that tag and name is meant, from 0 (1: a repeated name's
            second element).
    """

    def __init__(self, tag: str, element: str, message: str, occurrence: int = 0) -> None:
        self.tag, self.element, self.occurrence = tag, element, occurrence
        super().__init__(message)


def _origins(xyz: np.ndarray, rpy: np.ndarray) -> np.ndarray:
    """(..., 4, 4) transforms of (..., 3) translations [m] and fixed-axis roll, pitch, yaw [rad].

    The rotation is ``Rz(yaw) @ Ry(pitch) @ Rx(roll)``: URDF's fixed axes X, then Y, then Z.
    """
    # An infinite angle (a damaged stored model: JSON reads "Infinity") gives NaN entries quietly; the
    # skeleton made from them refuses the joint by name.
    with np.errstate(invalid="ignore"):
        (cr, cp, cy), (sr, sp, sy) = np.moveaxis(np.cos(rpy), -1, 0), np.moveaxis(np.sin(rpy), -1, 0)
    T = np.zeros((*np.shape(xyz)[:-1], 4, 4))
    T[..., 0, :3] = np.stack([cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr], -1)
    T[..., 1, :3] = np.stack([sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr], -1)
    T[..., 2, :3] = np.stack([-sp, cp * sr, cp * cr], -1)
    T[..., :3, 3] = xyz
    T[..., 3, 3] = 1.0
    return T


class UrdfJoint(NamedTuple):
    """One ``<joint>`` of a URDF, as written (angles [rad], lengths [m]).

    A named tuple rather than a dataclass: a reader makes one per joint, 100,000 in a big file,
    and :meth:`from_columns` makes them all in one C-level pass.

    Attributes:
        name: Joint name.
        type: One of :data:`URDF_JOINT_TYPES`; floating and planar joints are held at their
            origin in a skeleton (see :data:`HELD_JOINT_TYPES`).
        parent: Parent link name.
        child: Child link name (its frame is the joint frame).
        xyz: (3,) origin translation in the parent link frame [m].
        rpy: (3,) origin rotation, fixed-axis roll, pitch, yaw [rad].
        axis: (3,) unit axis in the joint frame (ignored for fixed and floating joints; a
            planar joint's plane normal).
        lower: Lower position limit [rad or m]; ``-inf`` for continuous and fixed joints.
        upper: Upper position limit [rad or m]; ``inf`` for continuous and fixed joints.
        velocity: Velocity limit [rad/s or m/s]; ``inf`` when absent or written as 0.
        effort: Effort limit [N m or N]; ``inf`` when absent.
        mimic: Set when this joint follows another one (as written, possibly a mimic itself).
    """

    name: str
    type: str
    parent: str
    child: str
    xyz: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)
    axis: tuple[float, float, float] = (1.0, 0.0, 0.0)
    lower: float = -math.inf
    upper: float = math.inf
    velocity: float = math.inf
    effort: float = math.inf
    mimic: Mimic | None = None

    @classmethod
    def from_columns(cls, *columns: Sequence) -> list[UrdfJoint]:
        """Joints from one sequence per field, in field order (names, types, parents... mimics), all of length J.

        The values are taken as they are, unchecked: a reader that has checked them uses it.
        """
        return list(map(tuple.__new__, itertools.repeat(cls), zip(*columns, strict=True)))

    @property
    def moves(self) -> bool:
        """Whether a skeleton gives this joint a value (revolute, continuous, prismatic; mimics included)."""
        return self.type in MOVING_JOINT_TYPES

    @property
    def origin(self) -> np.ndarray:
        """(4, 4) transform from the parent link frame to this joint's (child link's) frame."""
        return _origins(np.array(self.xyz), np.array(self.rpy))


class JointColumns(NamedTuple):
    """The J joints of a URDF, one sequence per :class:`UrdfJoint` field, in document order.

    What a reader makes of all the joints at once. A :class:`UrdfModel` made from columns
    answers its questions from them (in whole-column steps) and makes its :class:`UrdfJoint`
    tuples only when :attr:`UrdfModel.joints` is asked for.

    Attributes:
        names: (J,) joint names.
        types: (J,) URDF joint types.
        parents: (J,) parent link names.
        children: (J,) child link names.
        xyz: (J,) origin translations, 3 numbers each [m]; a (J, 3) array or a sequence of triples.
        rpy: (J,) origin rotations, 3 numbers each [rad]; as ``xyz``.
        axis: (J,) unit axes, 3 numbers each; as ``xyz``.
        limits: (J,) ``(lower, upper, velocity, effort)`` each, as :class:`UrdfJoint` holds them;
            a (J, 4) array or a sequence of quadruples.
        mimics: (J,) the :class:`Mimic` of each joint, or None.
    """

    names: Sequence[str]
    types: Sequence[str]
    parents: Sequence[str]
    children: Sequence[str]
    xyz: Sequence[Sequence[float]]
    rpy: Sequence[Sequence[float]]
    axis: Sequence[Sequence[float]]
    limits: Sequence[Sequence[float]]
    mimics: Sequence[Mimic | None]

    @classmethod
    def of(cls, joints: Sequence[UrdfJoint]) -> JointColumns:
        """The columns of ``joints``."""
        if not joints:
            return cls((), (), (), (), (), (), (), (), ())
        names, types, parents, children, xyz, rpy, axis, lower, upper, velocity, effort, mimics = zip(*joints)
        return cls(names, types, parents, children, xyz, rpy, axis, tuple(zip(lower, upper, velocity, effort)), mimics)

    def joints(self) -> list[UrdfJoint]:
        """The :class:`UrdfJoint` of every row."""
        vectors = (_tuples(column) for column in (self.xyz, self.rpy, self.axis))
        limits = tuple(zip(*_tuples(self.limits))) if len(self.limits) else ((),) * 4
        return UrdfJoint.from_columns(*self[:4], *vectors, *limits, self.mimics)

    def row(self, k: int) -> UrdfJoint:
        """The :class:`UrdfJoint` of row ``k``."""
        vectors = (tuple(_python(column[k])) for column in (self.xyz, self.rpy, self.axis))
        return UrdfJoint(*(column[k] for column in self[:4]), *vectors, *_python(self.limits[k]), self.mimics[k])


def _python(values: Sequence[float]) -> Sequence[float]:
    """Numbers of an array row as Python floats; other sequences as they are."""
    return values.tolist() if isinstance(values, np.ndarray) else values


def _tuples(rows: Sequence[Sequence[float]]) -> Sequence[tuple[float, ...]]:
    """Each row as a tuple of Python floats (a (J, n) array's rows converted; tuples kept)."""
    return list(map(tuple, rows.tolist())) if isinstance(rows, np.ndarray) else rows


class JointNumbers(NamedTuple):
    """The numbers of a model's J joints (see :class:`UrdfJoint`), one array per field."""

    xyz: np.ndarray  # (J, 3) [m]
    rpy: np.ndarray  # (J, 3) [rad]
    axis: np.ndarray  # (J, 3)
    lower: np.ndarray  # (J,)
    upper: np.ndarray  # (J,)
    velocity: np.ndarray  # (J,)
    effort: np.ndarray  # (J,)


class UrdfModel:
    """The kinematic tree of a URDF: link names and joints, validated to form one tree.

    A robot of a single link (no joint) is a valid model; so is one whose joints are all fixed.
    Immutable; two models are equal when their names, links and joints are.

    Attributes:
        name: The robot's name.
        links: Link names in document order.
        joints: Joints in document order (made on first use by a model made :meth:`from_columns`).
        columns: The joints as :class:`JointColumns`: what the model's own questions read.
        notes: What a lenient reader changed or ignored while reading the file (a mimic on a
            fixed joint, a mimic of a missing joint, a floating joint held still), one
            sentence each, for the import to report. Not compared and not stored.

    Raises:
        URDFError: Duplicate names, unknown links, a link with two parent joints, cycles,
            several roots, or mimic joints following a missing, non-moving or circular source
            (:func:`usable_mimics` drops such mimics, with notes, before a model is made).
            Errors about one joint or link are :class:`URDFElementError`.
    """

    name: str
    links: tuple[str, ...]
    columns: JointColumns
    notes: tuple[str, ...]

    def __init__(self, name: str, links: Sequence[str], joints: Sequence[UrdfJoint], notes: Sequence[str] = ()) -> None:
        joints = tuple(joints)
        self._set(name, links, JointColumns.of(joints), notes)
        self.__dict__["joints"] = joints

    @classmethod
    def from_columns(
        cls, name: str, links: Sequence[str], columns: JointColumns, notes: Sequence[str] = ()
    ) -> UrdfModel:
        """The model of joints given as columns (a reader's), validated as :class:`UrdfModel` validates joints."""
        model = cls.__new__(cls)
        model._set(name, links, columns, notes)
        return model

    def _set(self, name: str, links: Sequence[str], columns: JointColumns, notes: Sequence[str]) -> None:
        self.__dict__.update(name=name, links=tuple(links), columns=columns, notes=tuple(notes))
        _check_tree(self)

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}: a UrdfModel is immutable")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}: a UrdfModel is immutable")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, UrdfModel):
            return NotImplemented
        return (self.name, self.links, self.joints) == (other.name, other.links, other.joints)

    def __hash__(self) -> int:
        return hash((self.name, self.links, self.joints))

    def __repr__(self) -> str:
        return f"UrdfModel(name={self.name!r}, links={len(self.links)}, joints={len(self.columns.names)})"

    @cached_property
    def joints(self) -> tuple[UrdfJoint, ...]:
        """Joints in document order."""
        return tuple(self.columns.joints())

    @cached_property
    def root_link(self) -> str:
        """The link that is no joint's child."""
        return self.links[int(np.argmin(self.tree.has_joint))]

    @cached_property
    def _link_index(self) -> dict[str, int]:
        return dict(zip(self.links, range(len(self.links))))

    @cached_property
    def _joint_links(self) -> tuple[np.ndarray, np.ndarray]:
        """(J,) parent and (J,) child link index of each joint; -1 for a name that is no link."""
        columns, get, none = self.columns, self._link_index.get, itertools.repeat(-1)
        count = len(columns.names)
        return (np.fromiter(map(get, columns.parents, none), np.intp, count),
                np.fromiter(map(get, columns.children, none), np.intp, count))

    @cached_property
    def _joint_index(self) -> dict[str, int]:
        """Joint name -> its index in :attr:`columns` (the last, if names repeat)."""
        return dict(zip(self.columns.names, range(len(self.columns.names))))

    @cached_property
    def _resolved_mimics(self) -> dict[str, Mimic]:
        return _compose_mimics(self.columns.names, self.columns.mimics, self._joint_index)

    @cached_property
    def tree(self) -> LinkTree:
        """The links as a tree of indices (:attr:`links` order), for questions asked of every link at once."""
        return LinkTree(len(self.links), *self._joint_links)

    @cached_property
    def moving(self) -> np.ndarray:
        """(J,) bool, whether each joint of :attr:`joints` moves (:attr:`UrdfJoint.moves`)."""
        types = self.columns.types
        return np.fromiter(map(_MOVING_TYPE_SET.__contains__, types), bool, len(types))

    def link_index(self, name: str) -> int:
        """The index of link ``name`` in :attr:`links` (and in :attr:`tree`).

        Raises:
            UnknownNameError: If no link has that name; the message lists the links.
        """
        index = self._link_index.get(name)
        if index is None:
            raise UnknownNameError("link", name, self.links)
        return index

    def leaf_links(self, base_link: str | None = None) -> list[str]:
        """Links without child joints below ``base_link`` (default: the root), depth first."""
        order = self._joints_below(self.link_index(base_link or self.root_link))
        return list(map(self.columns.children.__getitem__, order[self.tree.leaf[self._joint_links[1][order]]].tolist()))

    def joint(self, name: str) -> UrdfJoint:
        """The joint with this name.

        Raises:
            UnknownNameError: If there is none; the message lists the joint names.
        """
        k = self._joint_index.get(name)
        if k is None:
            raise UnknownNameError("joint", name, self.columns.names)
        return self.columns.row(k)

    def to_skeleton(
        self, base_link: str | None = None, tip_links: str | Sequence[str] | None = None
    ) -> Skeleton:
        """The sub-tree from ``base_link`` to ``tip_links`` as a :class:`Skeleton`.

        The base link's frame is the skeleton's world frame. Every URDF joint on a kept path
        becomes one :class:`Joint` (fixed joints included, so link frames stay exact) whose
        origin is the URDF joint origin, and every tip link gets an :class:`Effector` of the
        same name with an identity offset. Floating and planar joints become fixed joints at
        their origin. When a kept mimic joint follows a joint off the kept paths, that joint's
        path is kept too: the chain cannot move without it. Time and memory are linear in the
        number of joints.

        Args:
            base_link: Link whose frame is the world; defaults to the root link.
            tip_links: One or several link names; defaults to every leaf link below the base.

        Returns:
            The skeleton, named after the robot, joints in depth-first order.

        Raises:
            UnknownNameError: For an unknown base or tip link; the message lists the links.
            SkeletonError: If a tip is the base or does not descend from it, or if there is
                no joint below the base (a single-link robot, or a leaf link as the base).
        """
        base = self._check_link(base_link or self.root_link)
        if tip_links is None:
            tips = self.leaf_links(base)
        else:
            tips = list(dict.fromkeys([tip_links] if isinstance(tip_links, str) else tip_links))
        if not tips:
            what = "the robot is a single link" if not self.columns.names else f"no link hangs below {base!r}"
            raise SkeletonError(f"no tip link: {what}; name at least one link below base link {base!r}")
        tip = np.fromiter(map(self._link_index.get, tips, itertools.repeat(-1)), np.intp, len(tips))
        for k in np.flatnonzero(tip < 0).tolist():
            self.link_index(tips[k])  # raises, listing the links
        tree, b = self.tree, self._link_index[base]
        parents, children = self._joint_links
        end, _ = tree.climb(stop=b)
        stray = np.flatnonzero((tip == b) | (end[tip] != b))
        if len(stray):
            k = int(stray[0])
            if tip[k] == b:
                raise SkeletonError(f"tip link {tips[k]!r} is the base link; a chain needs at least one joint")
            raise SkeletonError(f"tip link {tips[k]!r} does not descend from base link {base!r}")
        below = end == b
        below[b] = False
        flags = np.zeros(len(self.links), bool)
        flags[tip] = True
        kept = tree.above(flags, stop=b) & below  # links on the way from a tip up to the base, base excluded
        source, joint_names = self._mimic_sources, self.columns.names
        while True:  # a kept mimic joint keeps the path of the joint it follows (whose path may hold more mimics)
            keep = kept[children]
            wanting = np.flatnonzero(keep & (source >= 0) & ~keep[source])
            if not len(wanting):
                break
            held = children[source[wanting]]  # the followed joints' child links
            for k in np.flatnonzero(~below[held])[:1].tolist():
                what = f"joint {joint_names[source[wanting[k]]]!r} (mimicked by {joint_names[wanting[k]]!r})"
                if held[k] == b:
                    raise SkeletonError(f"{what} sits above base link {base!r}, outside the chain")
                raise SkeletonError(f"{what} does not descend from base link {base!r}")
            flags[:] = False
            flags[held] = True
            kept |= tree.above(flags, stop=b) & below
        order = self._preorder[keep[self._preorder]]
        place = np.full(len(joint_names), -1)  # each kept joint's index in the skeleton
        place[order] = np.arange(len(order))
        entering = np.full(len(self.links), -1)  # the joint whose child each link is
        entering[children] = np.arange(len(joint_names))
        up = entering[parents[order]]
        kept = order.tolist()
        names, moving, numbers = list(map(joint_names.__getitem__, kept)), self.moving[order], self.numbers
        resolved = self._resolved_mimics
        return Skeleton.from_columns(
            names, list(map(_KINDS.__getitem__, map(self.columns.types.__getitem__, kept))),
            np.where(up >= 0, place[up], -1),
            _origins(numbers.xyz[order], numbers.rpy[order]),
            np.where(moving[:, None], numbers.axis[order], (0.0, 0.0, 1.0)), numbers.lower[order],
            numbers.upper[order], np.where(moving, numbers.velocity[order], np.inf),
            list(map(resolved.get, names)) if resolved else None,
            effectors=Effector.many(tips, place[entering[tip]]), name=self.name,
        )

    @cached_property
    def numbers(self) -> JointNumbers:
        """The joints' numbers as arrays, in document order."""
        columns = self.columns
        count = len(columns.names)

        def rows(values: Sequence[Sequence[float]], width: int) -> np.ndarray:
            if isinstance(values, np.ndarray):
                return values
            return np.fromiter(itertools.chain.from_iterable(values), float, width * count).reshape(count, width)

        limits = rows(columns.limits, 4)
        return JointNumbers(rows(columns.xyz, 3), rows(columns.rpy, 3), rows(columns.axis, 3), *limits.T)

    @cached_property
    def _preorder(self) -> np.ndarray:
        """(J,) joint indices in depth-first pre-order from the root, siblings in document order."""
        return np.argsort(self.tree.preorder()[self._joint_links[1]])

    @cached_property
    def _mimic_sources(self) -> np.ndarray:
        """(J,) per joint, the index of the non-mimic joint it follows (its mimics composed), or -1."""
        source = np.full(len(self.columns.names), -1)
        resolved = self._resolved_mimics
        if not resolved:
            return source
        number = self._joint_index.__getitem__
        source[list(map(number, resolved))] = list(map(number, map(_JOINT_OF, resolved.values())))
        return source

    def joints_below(self, base: str) -> list[UrdfJoint]:
        """Joints under link ``base`` in depth-first pre-order, siblings in document order.

        Pre-order puts parents before children and keeps side branches next to their stem,
        so one pass over the list can carry a value down from each link to its children. A name
        that is no link has no joint below it.
        """
        index = self._link_index.get(base)
        below = [] if index is None else self._joints_below(index).tolist()
        return list(map(self.joints.__getitem__, below))

    def _joints_below(self, base: int) -> np.ndarray:
        """Indices of :meth:`joints_below` link number ``base``."""
        end, _ = self.tree.climb(stop=base)
        child_end = end[self._joint_links[1]]
        order = self._preorder
        return order[(child_end[order] == base) & (self._joint_links[1][order] != base)]

    def _check_link(self, name: str) -> str:
        self.link_index(name)
        return name


def resolve_mimics(joints: Sequence[UrdfJoint]) -> dict[str, Mimic]:
    """Every mimic joint's mimic composed down to a joint that owns its variable.

    ``a = 2 b + 0.1`` and ``b = 3 c + 0.2`` give ``a = 6 c + 0.5``. Linear in the number of
    joints, however long the mimic-of-mimic chains.

    Args:
        joints: The joints of a model whose mimics name existing, moving joints without cycles
            (as :class:`UrdfModel` checks).

    Returns:
        Mimic joint name -> its composed :class:`Mimic` of a non-mimic joint.
    """
    names, mimics = list(map(_NAME, joints)), list(map(_MIMIC, joints))
    return _compose_mimics(names, mimics, dict(zip(names, range(len(names)))) if any(mimics) else {})


def _compose_mimics(names: Sequence[str], mimics: Sequence[Mimic | None], index: dict[str, int]) -> dict[str, Mimic]:
    """:func:`resolve_mimics` of joint columns; ``index`` maps each name to its row."""
    out: dict[str, Mimic] = {}
    for k in itertools.compress(range(len(mimics)), mimics):  # the mimic joints
        if names[k] in out:
            continue
        chain, source = [], k
        while mimics[source] is not None and names[source] not in out:
            chain.append(source)
            source = index[mimics[source].joint]
        below = out.get(names[source], Mimic(names[source], 1.0, 0.0))
        for link in reversed(chain):  # link = m * source + o, source = below
            m, o = mimics[link].multiplier, mimics[link].offset
            below = out[names[link]] = Mimic(below.joint, m * below.multiplier, m * below.offset + o)
    return out


def usable_mimics(joints: Sequence[UrdfJoint]) -> tuple[tuple[UrdfJoint, ...], tuple[str, ...]]:
    """The joints with the mimics urdfdom would not apply dropped, and a note for each.

    See :func:`usable_mimic_columns`.

    Args:
        joints: Joints as written.

    Returns:
        The joints (the same objects where nothing changed) and the notes, in document order.
    """
    columns, notes = usable_mimic_columns(JointColumns.of(joints))
    if not notes:
        return tuple(joints), ()
    return tuple(j if j.mimic is kept else j._replace(mimic=None) for j, kept in zip(joints, columns.mimics)), notes


def usable_mimic_columns(columns: JointColumns) -> tuple[JointColumns, tuple[str, ...]]:
    """The joint columns with the mimics urdfdom would not apply dropped, and a note for each.

    urdfdom reads a ``<mimic>`` on any joint and never checks what it names; consumers skip
    the ones they cannot follow. Dropped here, each with a note: a mimic on a joint that does
    not move (fixed, floating, planar), and a mimic naming a joint that does not exist or does
    not move (the joint then moves on its own). Cycles of mimics are left for
    :class:`UrdfModel` to refuse.

    Args:
        columns: Joints as written.

    Returns:
        The columns (the same object if nothing changed) and the notes, in document order.
    """
    names, types, mimics = columns.names, columns.types, columns.mimics
    marked = list(itertools.compress(range(len(mimics)), mimics))  # the mimic joints
    if not marked:
        return columns, ()
    index = dict(zip(names, range(len(names))))
    kept, notes = list(mimics), []
    for k in marked:
        mimic, jtype = mimics[k], types[k]
        source = index.get(mimic.joint)
        problem = ""
        if jtype not in _MOVING_TYPE_SET:
            still = "does not move" if jtype == "fixed" else "is held at its origin"
            problem = f"a {jtype} joint {still}, so its <mimic joint='{mimic.joint}'> is ignored"
        elif source is None:
            problem = (f"<mimic joint='{mimic.joint}'> names no joint of the robot; the mimic is "
                       "ignored and the joint moves on its own")
        elif types[source] not in _MOVING_TYPE_SET:
            problem = (f"<mimic joint='{mimic.joint}'> names a {types[source]} joint; the mimic is "
                       "ignored and the joint moves on its own")
        if problem:
            notes.append(f"joint {names[k]!r}: {problem}")
            kept[k] = None
    return (columns._replace(mimics=kept), tuple(notes)) if notes else (columns, ())


def _names(items: Sequence[str]) -> str:
    return ", ".join(map(repr, items))


def _check_tree(model: UrdfModel) -> None:
    """Raise :class:`URDFError` unless the joints connect the links into exactly one tree.

    O(L log depth): names are checked in sets and dicts, the tree in whole-array steps.
    """
    if not model.links:
        raise URDFError(f"robot {model.name!r} has no <link> element")
    columns = model.columns
    for kind, every, unique in (("link", model.links, model._link_index), ("joint", columns.names, model._joint_index)):
        if len(unique) != len(every):  # some name is repeated: which ones
            repeated = sorted(n for n, count in Counter(every).items() if count > 1)
            raise URDFElementError(
                kind, repeated[0], f"{kind} names must be unique; repeated: {_names(repeated)}", occurrence=1)
    parents, children = model._joint_links
    if (not _URDF_TYPE_SET.issuperset(columns.types) or (parents < 0).any() or (children < 0).any()
            or np.bincount(children, minlength=1).max() > 1):
        _raise_first_bad_joint(model)
    tree = model.tree
    roots = [model.links[k] for k in np.flatnonzero(~tree.has_joint).tolist()]
    if len(roots) > 1:
        shown = _names(roots[:10]) + (f" and {len(roots) - 10} more" if len(roots) > 10 else "")
        raise URDFElementError(
            "link", roots[1],
            f"robot {model.name!r} has {len(roots)} root links (links that are no joint's child): "
            f"{shown}; a URDF must form one connected tree: join them with a (fixed) joint",
        )
    end, _ = tree.climb()
    cyclic = [model.links[k] for k in np.flatnonzero(end != (model.link_index(roots[0]) if roots else -1))]
    if cyclic:
        entering = int(np.flatnonzero(children == model._link_index[cyclic[0]])[0])
        raise URDFElementError(
            "joint", columns.names[entering],
            f"the joints form a cycle through links {_names(cyclic[:10])}; a URDF must form a tree")
    _check_mimics(columns, model._joint_index)


def _raise_first_bad_joint(model: UrdfModel) -> None:
    """Raise about the first joint of a bad type, naming a missing link, or entering a link a joint entered before."""
    links, types = model._link_index, _URDF_TYPE_SET
    parent_joint: dict[str, UrdfJoint] = {}
    for j in model.joints:
        if j.type not in types:
            raise URDFElementError("joint", j.name, unsupported_type_message(j.name, j.type))
        if j.parent not in links or j.child not in links:
            role, link = ("parent", j.parent) if j.parent not in links else ("child", j.child)
            raise URDFElementError(
                "joint", j.name, f"joint {j.name!r}: {role} link {link!r} is not a <link> of the robot")
        if j.child in parent_joint:
            raise URDFElementError(
                "joint", j.name,
                f"link {j.child!r} is the child of two joints, {parent_joint[j.child].name!r} and "
                f"{j.name!r}; a URDF must form a tree",
            )
        parent_joint[j.child] = j


def _check_mimics(columns: JointColumns, index: dict[str, int]) -> None:
    """Raise unless every mimic is on a moving joint and leads, without cycles, to a moving joint.

    ``index`` maps each joint name to its row of ``columns`` (names are unique by now).
    """
    names, types, mimics = columns.names, columns.types, columns.mimics
    done: set[str] = set()
    for k in itertools.compress(range(len(mimics)), mimics):  # the mimic joints
        if types[k] not in _MOVING_TYPE_SET:
            raise URDFElementError(
                "joint", names[k], f"joint {names[k]!r}: a {types[k]} joint cannot have a <mimic> element")
        path: list[str] = []
        source = k
        while mimics[source] is not None and names[source] not in done:
            name = names[source]
            if name in path:
                cycle = [*path[path.index(name):], name]
                raise URDFElementError("joint", names[k], f"mimic joints form a cycle: {' -> '.join(cycle)}")
            path.append(name)
            followed = mimics[source].joint
            target = index.get(followed)
            if target is None or types[target] not in _MOVING_TYPE_SET:
                problem = "names no joint of the robot" if target is None else f"names a {types[target]} joint"
                raise URDFElementError("joint", name, f"joint {name!r}: <mimic joint='{followed}'> {problem}")
            source = target
        done.update(path)


def unsupported_type_message(name: str, jtype: str | None) -> str:
    """Why joint ``name`` of URDF type ``jtype`` cannot be read, naming the URDF joint types."""
    known = ", ".join(URDF_JOINT_TYPES)
    if jtype is None:
        return f"joint {name!r}: missing type attribute; URDF joint types: {known}"
    return f"joint {name!r}: type {jtype!r} is unknown; URDF joint types: {known}"
