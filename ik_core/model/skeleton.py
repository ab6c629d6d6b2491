# SPDX-License-Identifier: GPL-3.0-or-later
"""Immutable skeleton model: a tree of joints in topological order plus named effector frames."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

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
        return {"ball": 3, "fixed": 0}.get(self.value, 1)


@dataclass(frozen=True)
class Mimic:
    """A joint that copies another: ``q = multiplier * q[joint] + offset``."""

    joint: str
    multiplier: float = 1.0
    offset: float = 0.0


_EYE3 = np.eye(3)


def _as_transform(name: str, value: object) -> np.ndarray:
    T = np.array(value, dtype=float)
    if T.shape != (4, 4):
        raise SkeletonError(f"joint {name!r}: origin must be a 4x4 transform, got shape {T.shape}")
    if not np.all(np.isfinite(T)):
        raise SkeletonError(f"joint {name!r}: origin contains NaN or infinite values")
    R = T[:3, :3]
    # Single-precision sources (Blender's matrices) are orthonormal to about 1e-7: accept small
    # noise, then snap to the nearest rotation so kinematics stays exact. Scalar arithmetic: a
    # robot of 100,000 joints checks 100,000 of these.
    (a, b, c), (d, e, f), (g, h, i) = R.tolist()
    det = a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)
    off = float(np.abs(R.T @ R - _EYE3).max())
    if not off <= 1e-4 or det < 0:
        raise SkeletonError(f"joint {name!r}: origin rotation is not a proper rotation matrix")
    if off > 1e-13:  # an orthonormal rotation is its own nearest one
        U, _, Vt = np.linalg.svd(R)
        T[:3, :3] = U @ Vt
    x, y, z, w = T[3].tolist()
    if not (abs(x) <= 1e-8 and abs(y) <= 1e-8 and abs(z) <= 1e-8 and abs(w - 1.0) <= 1e-8 + 1e-5):
        raise SkeletonError(f"joint {name!r}: origin's last row must be (0, 0, 0, 1)")
    T.setflags(write=False)
    return T


@dataclass(frozen=True, eq=False)
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
        norm = float(np.linalg.norm(axis)) if axis.shape == (3,) else 0.0
        if kind.dof == 1 and (not np.isfinite(norm) or norm < 1e-12):
            raise SkeletonError(f"joint {self.name!r}: axis must be a finite non-zero 3-vector")
        axis = axis / norm if norm > 0 else np.array([0.0, 0.0, 1.0])
        axis.setflags(write=False)
        object.__setattr__(self, "axis", axis)
        lower, upper = float(self.lower), float(self.upper)
        if kind in (JointKind.CONTINUOUS, JointKind.BALL, JointKind.FIXED):
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


@dataclass(frozen=True, eq=False)
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
        if not joints:
            raise SkeletonError("a skeleton needs at least one joint")
        names = [j.name for j in joints]
        if len(set(names)) != len(names):
            dupes = sorted({n for n in names if names.count(n) > 1})
            raise SkeletonError(f"joint names must be unique; repeated: {', '.join(dupes)}")
        for i, joint in enumerate(joints):
            if not -1 <= joint.parent < i:
                raise SkeletonError(
                    f"joint {joint.name!r} (index {i}) has parent {joint.parent}; parents must "
                    f"come earlier in the list (-1 for a root, 0..{i - 1} otherwise)"
                )
        self.name = name
        self.joints: tuple[Joint, ...] = joints
        self._index = {n: i for i, n in enumerate(names)}

        q_index = np.full(len(joints), -1, dtype=int)
        start = 0
        for i, joint in enumerate(joints):
            if joint.dof:
                q_index[i] = start
                start += joint.dof
        self.dof: int = start
        mimic_source = np.full(len(joints), -1, dtype=int)
        for i, joint in enumerate(joints):
            if joint.mimic is not None:
                src = self.joint_index(joint.mimic.joint)
                if joints[src].dof != 1:
                    raise SkeletonError(
                        f"joint {joint.name!r} mimics {joint.mimic.joint!r}, which must be a "
                        "non-mimic 1-DoF joint"
                    )
                mimic_source[i] = src
        q_index.setflags(write=False)
        mimic_source.setflags(write=False)
        self.q_index = q_index
        self.mimic_source = mimic_source
        # First variable of each ball joint's rotation vector (joint steps measure these as angles).
        self.ball_q_starts = tuple(int(q_index[i]) for i, j in enumerate(joints) if j.kind is JointKind.BALL and j.dof)

        if not effectors:
            effectors = (Effector(joints[-1].name, len(joints) - 1),)
        effectors = tuple(effectors)
        enames = [e.name for e in effectors]
        if len(set(enames)) != len(enames):
            raise SkeletonError(f"effector names must be unique, got {enames}")
        for eff in effectors:
            if not 0 <= eff.joint < len(joints):
                raise SkeletonError(
                    f"effector {eff.name!r} is on joint index {eff.joint}, outside 0..{len(joints) - 1}"
                )
        self.effectors: tuple[Effector, ...] = effectors
        self._effector_index = {e.name: i for i, e in enumerate(effectors)}

        lower = np.full(self.dof, -np.inf)
        upper = np.full(self.dof, np.inf)
        velocity = np.full(self.dof, np.inf)
        stiffness = np.zeros(self.dof)
        for i, joint in enumerate(joints):
            s = q_index[i]
            if s < 0:
                continue
            lower[s : s + joint.dof] = joint.lower
            upper[s : s + joint.dof] = joint.upper
            velocity[s : s + joint.dof] = joint.velocity
            stiffness[s : s + joint.dof] = joint.stiffness
        for arr in (lower, upper, velocity, stiffness):
            arr.setflags(write=False)
        self.lower, self.upper, self.velocity, self.stiffness = lower, upper, velocity, stiffness

        if preferred_q is None:
            pref = self.mid_q()
        else:
            pref = np.array(list(preferred_q), dtype=float)
            if pref.shape != (self.dof,) or not np.all(np.isfinite(pref)):
                raise SkeletonError(
                    f"preferred_q must hold {self.dof} finite values, got shape {pref.shape}"
                )
        pref.setflags(write=False)
        self.preferred_q = pref

    # --- names -----------------------------------------------------------------------------
    @property
    def joint_names(self) -> tuple[str, ...]:
        """All joint names, in order."""
        return tuple(j.name for j in self.joints)

    @property
    def effector_names(self) -> tuple[str, ...]:
        """All effector names, in order."""
        return tuple(e.name for e in self.effectors)

    @property
    def moving_joint_names(self) -> tuple[str, ...]:
        """Names of the joints that own configuration variables, in ``q`` order."""
        return tuple(j.name for j in self.joints if j.dof)

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
