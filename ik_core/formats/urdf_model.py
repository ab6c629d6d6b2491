# SPDX-License-Identifier: GPL-3.0-or-later
"""The kinematic tree of a URDF as written (joints, links), validated, and its conversion to a :class:`Skeleton`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import SkeletonError, UnknownNameError, URDFError
from ..model.skeleton import Effector, Joint, JointKind, Mimic, Skeleton

SUPPORTED_JOINT_TYPES: tuple[str, ...] = ("revolute", "continuous", "prismatic", "fixed")
_KINDS = {t: JointKind(t) for t in SUPPORTED_JOINT_TYPES}


def _rpy_matrix(rpy: Sequence[float]) -> np.ndarray:
    """(3, 3) ``Rz(yaw) @ Ry(pitch) @ Rx(roll)``: URDF's fixed axes X, then Y, then Z [rad]."""
    (cr, cp, cy), (sr, sp, sy) = np.cos(rpy), np.sin(rpy)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


@dataclass(frozen=True)
class UrdfJoint:
    """One ``<joint>`` of a URDF, as written (angles [rad], lengths [m]).

    Attributes:
        name: Joint name.
        type: One of :data:`SUPPORTED_JOINT_TYPES`.
        parent: Parent link name.
        child: Child link name (its frame is the joint frame).
        xyz: (3,) origin translation in the parent link frame [m].
        rpy: (3,) origin rotation, fixed-axis roll, pitch, yaw [rad].
        axis: (3,) unit axis in the joint frame (ignored for fixed joints).
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

    @property
    def origin(self) -> np.ndarray:
        """(4, 4) transform from the parent link frame to this joint's (child link's) frame."""
        T = np.eye(4)
        T[:3, :3] = _rpy_matrix(self.rpy)
        T[:3, 3] = self.xyz
        return T


@dataclass(frozen=True)
class UrdfModel:
    """The kinematic tree of a URDF: link names and joints, validated to form one tree.

    Attributes:
        name: The robot's name.
        links: Link names in document order.
        joints: Joints in document order.

    Raises:
        URDFError: Duplicate names, unknown links, a link with two parent joints, cycles,
            several roots, or mimic joints following a missing, fixed or circular source.
    """

    name: str
    links: tuple[str, ...]
    joints: tuple[UrdfJoint, ...]

    def __post_init__(self) -> None:
        _check_tree(self)

    @property
    def root_link(self) -> str:
        """The link that is no joint's child."""
        children = {j.child for j in self.joints}
        return next(link for link in self.links if link not in children)

    def leaf_links(self, base_link: str | None = None) -> list[str]:
        """Links without child joints below ``base_link`` (default: the root), depth first."""
        base, children = self._check_link(base_link or self.root_link), self._children()
        return [j.child for j in self._below(base) if not children.get(j.child)]

    def joint(self, name: str) -> UrdfJoint:
        """The joint with this name.

        Raises:
            UnknownNameError: If there is none; the message lists the joint names.
        """
        found = [j for j in self.joints if j.name == name]
        if not found:
            raise UnknownNameError("joint", name, [j.name for j in self.joints])
        return found[0]

    def to_skeleton(
        self, base_link: str | None = None, tip_links: str | Sequence[str] | None = None
    ) -> Skeleton:
        """The sub-tree from ``base_link`` to ``tip_links`` as a :class:`Skeleton`.

        The base link's frame is the skeleton's world frame. Every URDF joint on a kept path
        becomes one :class:`Joint` (fixed joints included, so link frames stay exact) whose
        origin is the URDF joint origin, and every tip link gets an :class:`Effector` of the
        same name with an identity offset. When a kept mimic joint follows a joint off the
        kept paths, that joint's path is kept too: the chain cannot move without it.

        Args:
            base_link: Link whose frame is the world; defaults to the root link.
            tip_links: One or several link names; defaults to every leaf link below the base.

        Returns:
            The skeleton, named after the robot, joints in depth-first order.

        Raises:
            UnknownNameError: For an unknown base or tip link; the message lists the links.
            SkeletonError: If a tip is the base or does not descend from it, or if there is
                no joint below the base.
        """
        base = self._check_link(base_link or self.root_link)
        if tip_links is None:
            tips = self.leaf_links(base)
        else:
            names = [tip_links] if isinstance(tip_links, str) else list(tip_links)
            tips = list(dict.fromkeys(self._check_link(t) for t in names))
        if not tips:
            raise SkeletonError(f"no tip link: name at least one link below base link {base!r}")
        by_child = {j.child: j for j in self.joints}
        by_name = {j.name: j for j in self.joints}

        def path_to(link: str, what: str) -> set[str]:
            path = set()
            while link != base:
                if link not in by_child:
                    raise SkeletonError(f"{what} does not descend from base link {base!r}")
                path.add(by_child[link].name)
                link = by_child[link].parent
            return path

        keep: set[str] = set()
        for tip in tips:
            if tip == base:
                raise SkeletonError(f"tip link {tip!r} is the base link; a chain needs at least one joint")
            keep |= path_to(tip, f"tip link {tip!r}")
        mimics: dict[str, Mimic] = {}
        pending = list(keep)
        while pending:
            joint = by_name[pending.pop()]
            if joint.mimic is not None and joint.name not in mimics:
                mimic = mimics[joint.name] = _resolve_mimic(by_name, joint)
                what = f"joint {mimic.joint!r} (mimicked by {joint.name!r})"
                added = path_to(by_name[mimic.joint].child, what)
                if mimic.joint not in added:
                    raise SkeletonError(f"{what} sits above base link {base!r}, outside the chain")
                pending.extend(added - keep)
                keep |= added
        order = [j for j in self._below(base) if j.name in keep]
        index = {j.child: i for i, j in enumerate(order)}
        joints = [_to_joint(j, index.get(j.parent, -1), mimics.get(j.name)) for j in order]
        return Skeleton(joints, [Effector(tip, index[tip]) for tip in tips], name=self.name)

    def _children(self) -> dict[str, list[UrdfJoint]]:
        below: dict[str, list[UrdfJoint]] = {}
        for j in self.joints:
            below.setdefault(j.parent, []).append(j)
        return below

    def _below(self, base: str) -> list[UrdfJoint]:
        """Joints under ``base`` in depth-first pre-order, siblings in document order.

        Pre-order puts parents before children and keeps side branches next to their stem.
        """
        children, order = self._children(), []
        stack = list(reversed(children.get(base, [])))
        while stack:
            order.append(stack.pop())
            stack.extend(reversed(children.get(order[-1].child, [])))
        return order

    def _check_link(self, name: str) -> str:
        if name not in self.links:
            raise UnknownNameError("link", name, self.links)
        return name


def _resolve_mimic(by_name: dict[str, UrdfJoint], joint: UrdfJoint) -> Mimic:
    """Compose mimic-of-mimic links into one mimic of a joint that owns its variable."""
    multiplier, offset, source = 1.0, 0.0, joint
    while source.mimic is not None:  # _check_tree has ruled out cycles
        multiplier, offset = multiplier * source.mimic.multiplier, multiplier * source.mimic.offset + offset
        source = by_name[source.mimic.joint]
    return Mimic(source.name, multiplier, offset)


def _to_joint(j: UrdfJoint, parent: int, mimic: Mimic | None) -> Joint:
    if j.type == "fixed":
        return Joint(j.name, JointKind.FIXED, parent, j.origin)
    kind, axis = _KINDS[j.type], np.array(j.axis)
    return Joint(j.name, kind, parent, j.origin, axis, j.lower, j.upper, j.velocity, mimic)


def _names(items: Sequence[str]) -> str:
    return ", ".join(map(repr, items))


def _check_tree(model: UrdfModel) -> None:
    """Raise :class:`URDFError` unless the joints connect the links into exactly one tree."""
    if not model.links:
        raise URDFError(f"robot {model.name!r} has no <link> element")
    for kind, names in (("link", model.links), ("joint", [j.name for j in model.joints])):
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise URDFError(f"{kind} names must be unique; repeated: {_names(repeated)}")
    parent_joint: dict[str, UrdfJoint] = {}
    for j in model.joints:
        if j.type not in SUPPORTED_JOINT_TYPES:
            raise URDFError(unsupported_type_message(j.name, j.type))
        for role, link in (("parent", j.parent), ("child", j.child)):
            if link not in model.links:
                raise URDFError(f"joint {j.name!r}: {role} link {link!r} is not a <link> of the robot")
        if j.child in parent_joint:
            raise URDFError(
                f"link {j.child!r} is the child of two joints, {parent_joint[j.child].name!r} and "
                f"{j.name!r}; a URDF must form a tree"
            )
        parent_joint[j.child] = j
    roots = [link for link in model.links if link not in parent_joint]
    if len(roots) > 1:
        raise URDFError(
            f"robot {model.name!r} has {len(roots)} root links (links that are no joint's child): "
            f"{_names(roots)}; a URDF must form one connected tree"
        )
    reached = {roots[0], *(j.child for j in model._below(roots[0]))} if roots else set()
    cyclic = [link for link in model.links if link not in reached]
    if cyclic:
        raise URDFError(f"the joints form a cycle through links {_names(cyclic)}; a URDF must form a tree")
    by_name = {j.name: j for j in model.joints}
    for j in model.joints:
        if j.mimic is not None and j.type == "fixed":
            raise URDFError(f"joint {j.name!r}: a fixed joint cannot have a <mimic> element")
        seen, source = [j.name], j
        while source.mimic is not None:
            target = source.mimic.joint
            if target not in by_name or by_name[target].type == "fixed":
                problem = "names no joint of the robot" if target not in by_name else "names a fixed joint"
                raise URDFError(f"joint {source.name!r}: <mimic joint='{target}'> {problem}")
            if target in seen:
                raise URDFError(f"mimic joints form a cycle: {' -> '.join([*seen, target])}")
            seen.append(target)
            source = by_name[target]


def unsupported_type_message(name: str, jtype: str | None) -> str:
    """Why joint ``name`` of URDF type ``jtype`` cannot be read, naming the supported types."""
    supported = ", ".join(SUPPORTED_JOINT_TYPES)
    if jtype is None:
        return f"joint {name!r}: missing type attribute; supported types: {supported}"
    known = "is not supported" if jtype in ("floating", "planar") else "is unknown"
    return f"joint {name!r}: type {jtype!r} {known}; supported types: {supported}"
