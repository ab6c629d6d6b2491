# SPDX-License-Identifier: GPL-3.0-or-later
"""Immutable skeleton model: a tree of joints in topological order plus named effector frames."""

from __future__ import annotations

import copy
import enum
import gc
import itertools
import operator
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from typing import NamedTuple

import numpy as np

from ..errors import LimitError, SkeletonError, UnknownNameError


class JointKind(enum.StrEnum):
    """How a joint moves relative to its parent frame."""

    REVOLUTE = "revolute"
    CONTINUOUS = "continuous"
    PRISMATIC = "prismatic"
    BALL = "ball"
    FIXED = "fixed"

    @property
    def dof(self) -> int:
        """Number of configuration variables this kind of joint owns."""
        return _KIND_DOF[self]


_KIND_DOF = {kind: {"ball": 3, "fixed": 0}.get(kind.value, 1) for kind in JointKind}
_UNBOUNDED_KINDS = frozenset((JointKind.CONTINUOUS, JointKind.BALL, JointKind.FIXED))
# Kinds by number, for whole-array steps: a kind's code indexes these tables.
_KINDS = tuple(JointKind)
_KIND_CODE = {kind: code for code, kind in enumerate(_KINDS)}  # a JointKind is its value too (StrEnum)
_DOF_OF_CODE = np.array([_KIND_DOF[kind] for kind in _KINDS])
_UNBOUNDED_CODE = np.array([kind in _UNBOUNDED_KINDS for kind in _KINDS])
_BALL_CODE = _KIND_CODE[JointKind.BALL]


@dataclass(frozen=True)
class Mimic:
    """A joint that copies another: ``q = multiplier * q[joint] + offset``."""

    joint: str
    multiplier: float = 1.0
    offset: float = 0.0


_EYE3 = np.eye(3)
_Z = np.array([0.0, 0.0, 1.0])
_repeat = itertools.repeat
_NAME, _KIND, _PARENT, _MIMIC, _JOINT = map(operator.attrgetter, ("name", "kind", "parent", "mimic", "joint"))
_LOWER, _UPPER, _VELOCITY, _STIFFNESS = map(operator.attrgetter, ("lower", "upper", "velocity", "stiffness"))
_MIMIC_JOINT = operator.attrgetter("mimic.joint")
# What can be wrong with a 4x4 transform, in the order it is checked (0: nothing).
_NOT_FINITE, _NOT_ROTATION, _BAD_LAST_ROW = 1, 2, 3


def _rigid_transforms(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(N, 4, 4) copies of ``values`` with rotations snapped to the nearest one, and (N,) problem codes.

    Single-precision sources (Blender's matrices) are orthonormal to about 1e-7: small noise is
    accepted, then snapped so kinematics stays exact. A code is 0 for a rigid transform, else the
    first problem found: :data:`_NOT_FINITE`, :data:`_NOT_ROTATION` (not orthonormal to 1e-4, or a
    mirror), :data:`_BAD_LAST_ROW` (not (0, 0, 0, 1)). Whole-array steps: a robot of 100,000
    joints checks 100,000 of these.
    """
    T = np.array(values, dtype=float)
    R = T[:, :3, :3]
    (a, b, c), (d, e, f), (g, h, i) = np.moveaxis(R, (1, 2), (0, 1))
    with np.errstate(invalid="ignore", over="ignore"):  # non-finite entries are reported, not warned about
        det = a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)
        off = np.abs(np.swapaxes(R, 1, 2) @ R - _EYE3).max(axis=(1, 2))
    last_row = (np.abs(T[:, 3, :3]) <= 1e-8).all(axis=1) & (np.abs(T[:, 3, 3] - 1.0) <= 1e-8 + 1e-5)
    problem = np.select(
        [~np.isfinite(T).all(axis=(1, 2)), ~(off <= 1e-4) | (det < 0), ~last_row],
        [_NOT_FINITE, _NOT_ROTATION, _BAD_LAST_ROW], 0)
    snap = (problem == 0) & (off > 1e-13)  # an orthonormal rotation is its own nearest one
    if snap.any():
        U, _, Vt = np.linalg.svd(R[snap])
        T[snap, :3, :3] = U @ Vt
    return T, problem


def _as_transform(name: str, value: object) -> np.ndarray:
    T = np.array(value, dtype=float)
    if T.shape != (4, 4):
        raise SkeletonError(f"joint {name!r}: origin must be a 4x4 transform, got shape {T.shape}")
    (T,), (problem,) = _rigid_transforms(T[None])
    if problem == _NOT_FINITE:
        raise SkeletonError(f"joint {name!r}: origin contains NaN or infinite values")
    if problem == _NOT_ROTATION:
        raise SkeletonError(f"joint {name!r}: origin rotation is not a proper rotation matrix")
    if problem == _BAD_LAST_ROW:
        raise SkeletonError(f"joint {name!r}: origin's last row must be (0, 0, 0, 1)")
    T.setflags(write=False)
    return T


def _unit_axes(axes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(N, 3) unit axes of (N, 3) ``axes`` ((0, 0, 1) where a norm is not > 0), and their (N,) norms.

    The norm is summed component by component, in one fixed order for every row: a joint made
    alone and one made by :meth:`Skeleton.from_columns` get the same axis bit for bit, whatever
    the batch size and numpy version (a batched product or a BLAS dot may sum in another order).
    """
    x, y, z = axes[:, 0], axes[:, 1], axes[:, 2]
    norm = np.sqrt(x * x + y * y + z * z)
    with np.errstate(divide="ignore", invalid="ignore"):
        unit = np.where((norm > 0)[:, None], axes / norm[:, None], _Z)
    return unit, norm


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a whole robot's objects are made.

    Making hundreds of thousands of objects (a skeleton's joints, a URDF's elements, a model's
    JSON rows), none of them cyclic, would make the collector walk every object alive again and
    again, several times the work itself. Restores the collector's state on exit.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def _from_columns(cls: type, columns: Sequence[Iterable]) -> list:
    """Instances of slotted dataclass ``cls`` from one iterable per field (in field order), without ``__init__``.

    For values already checked all at once: each field is set through its slot, by C-level
    calls only (about 0.1 us a field, where ``__init__`` and its checks take 50 us a joint).
    """
    with collector_paused():
        objects = list(map(object.__new__, _repeat(cls, len(columns[0]))))
        for f, values in zip(fields(cls), columns, strict=True):
            deque(map(getattr(cls, f.name).__set__, objects, values), maxlen=0)
    return objects


def _read_only(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False, slots=True)
class Joint:
    """One joint of a skeleton.

    Attributes:
        name: Unique joint name.
        kind: How the joint moves (see :class:`JointKind`).
        parent: Index of the parent joint in the skeleton, or -1 for a root.
        origin: (4, 4) rest transform from the parent joint's frame (or the world, for a
            root) to this joint's frame when its own variable(s) are zero.
        axis: (3,) unit axis in the joint frame for revolute, continuous and prismatic joints.
        lower: Lower position limit [rad or m]; ``-inf`` for continuous or ball joints.
        upper: Upper position limit [rad or m]; ``inf`` for continuous or ball joints.
        velocity: Velocity limit [rad/s or m/s]; ``inf`` when unknown.
        mimic: When set, the joint owns no variable and follows another joint.
        limit: Optional richer limit for ball joints (cone and twist, Euler ranges), an object
            from :mod:`ik_core.limits` with a ``project`` method.
        stiffness: Resistance to motion in [0, 1); 0 moves freely (Blender's ``ik_stiffness``).
    """

    name: str
    kind: JointKind = JointKind.REVOLUTE
    parent: int = -1
    origin: np.ndarray = field(default_factory=lambda: np.eye(4))
    axis: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    lower: float = -np.inf
    upper: float = np.inf
    velocity: float = np.inf
    mimic: Mimic | None = None
    limit: object | None = None
    stiffness: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise SkeletonError(f"joint names must be non-empty strings, got {self.name!r}")
        try:
            kind = JointKind(self.kind)
        except ValueError:
            valid = ", ".join(k.value for k in JointKind)
            raise SkeletonError(
                f"joint {self.name!r}: unknown kind {self.kind!r}; valid kinds: {valid}"
            ) from None
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "origin", _as_transform(self.name, self.origin))
        axis = np.array(self.axis, dtype=float).reshape(-1)
        (axis,), (norm,) = _unit_axes(axis[None]) if axis.shape == (3,) else ((_Z.copy(),), (0.0,))
        if kind.dof == 1 and (not np.isfinite(norm) or norm < 1e-12):
            raise SkeletonError(f"joint {self.name!r}: axis must be a finite non-zero 3-vector")
        axis.setflags(write=False)
        object.__setattr__(self, "axis", axis)
        lower, upper = float(self.lower), float(self.upper)
        if kind in _UNBOUNDED_KINDS:
            lower, upper = -np.inf, np.inf
        if np.isnan(lower) or np.isnan(upper) or lower > upper:
            raise LimitError(
                f"joint {self.name!r}: lower limit {lower} must not exceed upper limit {upper}"
            )
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)
        if not float(self.velocity) > 0:
            raise LimitError(f"joint {self.name!r}: velocity limit must be > 0, got {self.velocity}")
        if not 0.0 <= float(self.stiffness) < 1.0:
            raise LimitError(f"joint {self.name!r}: stiffness must be in [0, 1), got {self.stiffness}")
        if self.mimic is not None and kind.dof != 1:
            raise SkeletonError(f"joint {self.name!r}: only 1-DoF joints can mimic another joint")

    @property
    def dof(self) -> int:
        """Number of variables this joint owns in the configuration vector (0 for mimics)."""
        return 0 if self.mimic is not None else self.kind.dof


@dataclass(frozen=True, eq=False, slots=True)
class Effector:
    """A named frame rigidly attached to a joint (a tool, a bone tip, a hand).

    Attributes:
        name: Unique effector name.
        joint: Index of the joint carrying the frame.
        offset: (4, 4) transform from the joint frame to the effector frame.
    """

    name: str
    joint: int
    offset: np.ndarray = field(default_factory=lambda: np.eye(4))

    def __post_init__(self) -> None:
        object.__setattr__(self, "offset", _as_transform(f"effector {self.name}", self.offset))

    @classmethod
    def many(cls, names: Sequence[str], joints: Sequence[int] | np.ndarray,
             offsets: np.ndarray | None = None) -> tuple[Effector, ...]:
        """The effectors ``Effector(names[i], joints[i], offsets[i])``, checked all at once.

        Args:
            names: (E,) effector names.
            joints: (E,) joint indices; checked by :class:`Skeleton`.
            offsets: (E, 4, 4) transforms from the joint frames; None: identities (one shared
                read-only array).

        Raises:
            SkeletonError: What the constructor raises for the first offset it would refuse.
        """
        n = len(names)
        joints = joints.tolist() if isinstance(joints, np.ndarray) else list(joints)
        if offsets is None:
            frames = _repeat(_read_only(np.eye(4)), n)
        else:
            T = np.asarray(offsets, dtype=float)
            if T.shape != (n, 4, 4):
                raise SkeletonError(f"offsets of {n} effectors must have shape ({n}, 4, 4), got {T.shape}")
            T, problem = _rigid_transforms(T)
            for i in np.flatnonzero(problem).tolist():  # the one-by-one constructor says what is wrong
                cls(names[i], joints[i], offsets[i])
            frames = list(_read_only(T))
        return tuple(_from_columns(cls, (names, joints, frames)))


class _JointColumns(NamedTuple):
    """What a skeleton reads of its J joints, one sequence per attribute."""

    names: tuple[str, ...]
    kind_codes: np.ndarray  # (J,) index of each kind in _KINDS
    parents: np.ndarray  # (J,) float: parent indices as given, checked by the skeleton
    has_mimic: np.ndarray  # (J,) bool
    lower: np.ndarray  # (J,) float, as the joints hold them
    upper: np.ndarray
    velocity: np.ndarray
    stiffness: np.ndarray

    @classmethod
    def of(cls, joints: tuple[Joint, ...]) -> _JointColumns:
        """The columns of ``joints``, read by C-level calls (about 0.1 us an attribute)."""
        n = len(joints)
        return cls(
            tuple(map(_NAME, joints)), np.fromiter(map(_KIND_CODE.__getitem__, map(_KIND, joints)), np.intp, n),
            np.fromiter(map(_PARENT, joints), float, n),
            np.fromiter(map(operator.is_not, map(_MIMIC, joints), _repeat(None)), bool, n),
            *(np.fromiter(map(get, joints), float, n) for get in (_LOWER, _UPPER, _VELOCITY, _STIFFNESS)),
        )


class Skeleton:
    """An immutable, validated tree of joints with named effectors.

    The configuration vector ``q`` concatenates the variables of every joint that owns some
    (revolute, continuous and prismatic: one; ball: a rotation vector of three; fixed and
    mimic joints: none), in joint order.

    Args:
        joints: Joints in topological order (each parent index smaller than the joint's own).
        effectors: Named frames on joints. When empty, one effector named after the last
            joint is added at that joint's frame.
        name: Display name of the skeleton (robot or armature name).
        preferred_q: (dof,) preferred pose used by redundancy resolution; defaults to the
            middle of each finite range (0 for unbounded variables).

    Raises:
        SkeletonError: Duplicate names, bad parent indices, unknown mimic or effector joints.
    """

    def __init__(
        self,
        joints: Sequence[Joint],
        effectors: Sequence[Effector] = (),
        name: str = "skeleton",
        preferred_q: Iterable[float] | None = None,
    ) -> None:
        joints = tuple(joints)
        self._build(joints, _JointColumns.of(joints), effectors, name, preferred_q)

    @classmethod
    def from_columns(
        cls,
        names: Sequence[str],
        kinds: Sequence[JointKind | str],
        parents: Sequence[int] | np.ndarray,
        origins: np.ndarray,
        axes: np.ndarray | None = None,
        lower: Sequence[float] | np.ndarray | None = None,
        upper: Sequence[float] | np.ndarray | None = None,
        velocity: Sequence[float] | np.ndarray | None = None,
        mimics: Sequence[Mimic | None] | None = None,
        stiffness: Sequence[float] | np.ndarray | None = None,
        *,
        effectors: Sequence[Effector] = (),
        name: str = "skeleton",
        preferred_q: Iterable[float] | None = None,
    ) -> Skeleton:
        """The skeleton of the joints ``Joint(names[i], kinds[i], parents[i], origins[i], axes[i], ...)``.

        The same skeleton, joints and errors as making each joint and then the skeleton, with
        every check run in whole-array steps: for robots of 100,000 joints. Joints get no
        ``limit``; their origins and axes are read-only views of one array each.

        Args:
            names: (J,) joint names.
            kinds: (J,) joint kinds (:class:`JointKind` or its value).
            parents: (J,) parent joint indices, each smaller than the joint's own (-1: a root).
            origins: (J, 4, 4) rest transforms from the parent joint frame [m].
            axes: (J, 3) axes in the joint frames; None: all (0, 0, 1).
            lower: (J,) lower limits [rad or m]; None: all ``-inf``.
            upper: (J,) upper limits [rad or m]; None: all ``inf``.
            velocity: (J,) velocity limits [rad/s or m/s]; None: all ``inf``.
            mimics: (J,) :class:`Mimic` or None each; None: no mimics.
            stiffness: (J,) stiffness in [0, 1) each; None: all 0.
            effectors: As for the constructor (see :meth:`Effector.many` for many).
            name: As for the constructor.
            preferred_q: As for the constructor.

        Raises:
            SkeletonError, LimitError: What :class:`Joint` raises for the first joint it
                refuses, or the constructor for the skeleton; arrays of the wrong shape.
        """
        n = len(names)
        kinds = list(kinds)
        try:
            codes = np.fromiter(map(_KIND_CODE.get, kinds, _repeat(-1)), np.intp, n)
        except TypeError:  # an unhashable kind: refused below
            codes = np.array([_KIND_CODE.get(k, -1) if isinstance(k, str) else -1 for k in kinds], np.intp)
        dof = np.where(codes >= 0, _DOF_OF_CODE[codes], -1)
        arrays = {}
        for what, values, shape, default in (
            ("origins", origins, (n, 4, 4), None), ("axes", axes, (n, 3), _Z), ("lower", lower, (n,), -np.inf),
            ("upper", upper, (n,), np.inf), ("velocity", velocity, (n,), np.inf), ("stiffness", stiffness, (n,), 0.0),
        ):
            array = np.array(np.broadcast_to(default, shape) if values is None else values, dtype=float)
            if array.shape != shape:
                raise SkeletonError(f"{what} of {n} joints must have shape {shape}, got {array.shape}")
            arrays[what] = array
        mimics = None if mimics is None else list(mimics)
        T, problem = _rigid_transforms(arrays["origins"])
        axis, norm = _unit_axes(arrays["axes"])
        unbounded = _UNBOUNDED_CODE[codes]
        low, high = np.where(unbounded, -np.inf, arrays["lower"]), np.where(unbounded, np.inf, arrays["upper"])
        velocities, stiffnesses = arrays["velocity"], arrays["stiffness"]
        has_mimic = (np.zeros(n, bool) if mimics is None
                     else np.fromiter(map(operator.is_not, mimics, _repeat(None)), bool, n))
        named = np.ones(n, bool)
        if not {*map(type, names)} <= {str} or "" in names:  # one by one only when some name is bad
            named = np.array([isinstance(name, str) and len(name) > 0 for name in names], bool)
        bad = (~named | (codes < 0) | (problem != 0)
               | ((dof == 1) & ~(np.isfinite(norm) & (norm >= 1e-12)))
               | np.isnan(low) | np.isnan(high) | (low > high) | ~(velocities > 0)
               | ~((stiffnesses >= 0.0) & (stiffnesses < 1.0)) | (has_mimic & (dof != 1)))
        for i in np.flatnonzero(bad).tolist():  # the one-by-one constructor says what is wrong, as it would
            Joint(names[i], kinds[i], parents[i], origins[i], arrays["axes"][i], arrays["lower"][i],
                  arrays["upper"][i], velocities[i], None if mimics is None else mimics[i], None, stiffnesses[i])
        parent_list = parents.tolist() if isinstance(parents, np.ndarray) else list(parents)
        joints = tuple(_from_columns(Joint, (
            names, map(_KINDS.__getitem__, codes.tolist()), parent_list, list(_read_only(T)), list(_read_only(axis)),
            low.tolist(), high.tolist(), velocities.tolist(), _repeat(None, n) if mimics is None else mimics,
            _repeat(None, n), stiffnesses.tolist())))
        skeleton = cls.__new__(cls)
        columns = _JointColumns(tuple(names), codes, np.array(parent_list, dtype=float), has_mimic, low, high,
                                velocities, stiffnesses)
        skeleton._build(joints, columns, effectors, name, preferred_q)
        return skeleton

    def _build(self, joints: tuple[Joint, ...], columns: _JointColumns, effectors: Sequence[Effector], name: str,
               preferred_q: Iterable[float] | None) -> None:
        """Check the joints (their ``columns``) and effectors as a skeleton, and index them.

        Whole-array steps: linear in the number of joints, no Python code run per joint.
        """
        if not joints:
            raise SkeletonError("a skeleton needs at least one joint")
        n, names, parents = len(joints), columns.names, columns.parents
        self._index = dict(zip(names, range(n)))
        if len(self._index) != n:
            dupes = sorted(name for name, count in Counter(names).items() if count > 1)
            raise SkeletonError(f"joint names must be unique; repeated: {', '.join(dupes)}")
        misplaced = np.flatnonzero(~((parents >= -1) & (parents < np.arange(n))))
        if len(misplaced):
            i = int(misplaced[0])
            raise SkeletonError(
                f"joint {joints[i].name!r} (index {i}) has parent {joints[i].parent}; parents must "
                f"come earlier in the list (-1 for a root, 0..{i - 1} otherwise)"
            )
        self.name = name
        self.joints: tuple[Joint, ...] = joints
        self._names = names

        has_mimic = columns.has_mimic
        dofs = np.where(has_mimic, 0, _DOF_OF_CODE[columns.kind_codes])
        ends = np.cumsum(dofs)
        q_index = np.where(dofs > 0, ends - dofs, -1)
        self.dof: int = int(ends[-1])
        mimic_source = np.full(n, -1)
        followers = np.flatnonzero(has_mimic)
        if len(followers):
            sources = list(map(_MIMIC_JOINT, map(joints.__getitem__, followers.tolist())))
            src = np.fromiter(map(self._index.get, sources, _repeat(-1)), np.intp, len(sources))
            for k in np.flatnonzero((src < 0) | (dofs[src] != 1)).tolist():  # in order, as one by one
                if src[k] < 0:  # an index, or an unknown name: UnknownNameError lists the joints
                    src[k] = self.joint_index(sources[k])
                if dofs[src[k]] != 1:
                    raise SkeletonError(
                        f"joint {joints[followers[k]].name!r} mimics {sources[k]!r}, which must be a "
                        "non-mimic 1-DoF joint"
                    )
            mimic_source[followers] = src
        q_index.setflags(write=False)
        mimic_source.setflags(write=False)
        self.q_index = q_index
        self.mimic_source = mimic_source
        # First variable of each ball joint's rotation vector (joint steps measure these as angles).
        self.ball_q_starts = tuple(q_index[(columns.kind_codes == _BALL_CODE) & (dofs > 0)].tolist())

        if not effectors:
            effectors = (Effector(joints[-1].name, n - 1),)
        effectors = tuple(effectors)
        enames = list(map(_NAME, effectors))
        self._effector_index = dict(zip(enames, range(len(enames))))
        if len(self._effector_index) != len(enames):
            raise SkeletonError(f"effector names must be unique, got {enames}")
        on = np.fromiter(map(_JOINT, effectors), float, len(effectors))
        astray = np.flatnonzero(~((on >= 0) & (on < n)))
        if len(astray):
            k = int(astray[0])
            raise SkeletonError(
                f"effector {effectors[k].name!r} is on joint index {effectors[k].joint}, outside 0..{n - 1}"
            )
        self.effectors: tuple[Effector, ...] = effectors

        moving = dofs > 0
        lower, upper, velocity, stiffness = (
            _read_only(np.repeat(column[moving], dofs[moving]))
            for column in (columns.lower, columns.upper, columns.velocity, columns.stiffness))
        self.lower, self.upper, self.velocity, self.stiffness = lower, upper, velocity, stiffness
        self.preferred_q = self._preferred(preferred_q)

    def _preferred(self, preferred_q: Iterable[float] | None) -> np.ndarray:
        """The read-only preferred pose: ``preferred_q`` checked, or the middle of the limits when None."""
        if preferred_q is None:
            pref = self.mid_q()
        else:
            pref = np.array(list(preferred_q), dtype=float)
            if pref.shape != (self.dof,) or not np.all(np.isfinite(pref)):
                raise SkeletonError(
                    f"preferred_q must hold {self.dof} finite values, got shape {pref.shape}"
                )
        pref.setflags(write=False)
        return pref

    def replace(self, *, name: str | None = None, preferred_q: Iterable[float] | None = None) -> Skeleton:
        """This skeleton under another name or with another preferred pose; joints and effectors are shared.

        Nothing but ``preferred_q`` is checked again, so this costs no time however many joints
        there are.

        Args:
            name: The new display name; None keeps this one.
            preferred_q: (dof,) the new preferred pose; None keeps this one.

        Raises:
            SkeletonError: A ``preferred_q`` of the wrong length or not finite.
        """
        other = copy.copy(self)
        if name is not None:
            other.name = name
        if preferred_q is not None:
            other.preferred_q = other._preferred(preferred_q)
        return other

    # --- names -----------------------------------------------------------------------------
    @property
    def joint_names(self) -> tuple[str, ...]:
        """All joint names, in order."""
        return self._names

    @property
    def effector_names(self) -> tuple[str, ...]:
        """All effector names, in order."""
        return tuple(e.name for e in self.effectors)

    @property
    def moving_joint_names(self) -> tuple[str, ...]:
        """Names of the joints that own configuration variables, in ``q`` order."""
        return tuple(itertools.compress(self._names, (self.q_index >= 0).tolist()))

    def joint_index(self, name: str | int) -> int:
        """Index of a joint given its name (or an index, checked).

        Raises:
            UnknownNameError: If no joint has that name; the message lists valid names.
        """
        if isinstance(name, (int, np.integer)):
            if 0 <= int(name) < len(self.joints):
                return int(name)
            raise UnknownNameError("joint index", str(name), map(str, range(len(self.joints))))
        try:
            return self._index[name]
        except KeyError:
            raise UnknownNameError("joint", name, self._index) from None

    def effector_index(self, name: str | int) -> int:
        """Index of an effector given its name (or an index, checked).

        Raises:
            UnknownNameError: If no effector has that name; the message lists valid names.
        """
        if isinstance(name, (int, np.integer)):
            if 0 <= int(name) < len(self.effectors):
                return int(name)
            raise UnknownNameError("effector index", str(name), map(str, range(len(self.effectors))))
        try:
            return self._effector_index[name]
        except KeyError:
            raise UnknownNameError("effector", name, self._effector_index) from None

    def effector(self, name: str | int) -> Effector:
        """The effector with this name or index."""
        return self.effectors[self.effector_index(name)]

    # --- structure -------------------------------------------------------------------------
    def ancestors(self, joint: str | int) -> tuple[int, ...]:
        """Indices from the root down to ``joint`` inclusive."""
        i = self.joint_index(joint)
        path = []
        while i >= 0:
            path.append(i)
            i = self.joints[i].parent
        return tuple(reversed(path))

    def children(self, joint: str | int) -> tuple[int, ...]:
        """Indices of the direct children of ``joint``."""
        i = self.joint_index(joint)
        return tuple(k for k, j in enumerate(self.joints) if j.parent == i)

    def mid_q(self) -> np.ndarray:
        """(dof,) middle of every finite range; 0 for unbounded variables."""
        lo, hi = np.asarray(self.lower), np.asarray(self.upper)
        finite = np.isfinite(lo) & np.isfinite(hi)
        return np.where(finite, 0.5 * (np.where(finite, lo, 0) + np.where(finite, hi, 0)), 0.0)

    def clamp(self, q: np.ndarray) -> np.ndarray:
        """Clamp ``q`` (..., dof) into the box limits (richer limits live in ``ik_core.limits``)."""
        return np.clip(q, self.lower, self.upper)

    def within_limits(self, q: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        """(...,) True where every variable of ``q`` (..., dof) is inside its box limits."""
        q = np.asarray(q, dtype=float)
        return np.all((q >= self.lower - tol) & (q <= self.upper + tol), axis=-1)

    def __repr__(self) -> str:
        return (
            f"Skeleton({self.name!r}, joints={len(self.joints)}, dof={self.dof}, "
            f"effectors={list(self.effector_names)})"
        )
