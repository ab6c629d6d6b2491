# SPDX-License-Identifier: GPL-3.0-or-later
"""FABRIK's view of a skeleton: rigid bodies (one per moving joint) on the paths to the effectors."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import InvalidInputError
from ...model.kinematics import rest_transforms
from ...model.skeleton import JointKind, Skeleton

# Bones shorter than this [m] have no direction for FABRIK to reach along.
MIN_BONE = 1e-9


@dataclass(frozen=True, eq=False)
class Body:
    """One moving joint and the rigid parts it carries, up to the next moving joints.

    Attributes:
        joint: Skeleton joint index.
        hinge: True for revolute/continuous joints, False for ball joints.
        parent: Index of the parent body, or -1 when only fixed joints lie above.
        rot: (3, 3) rotation from the parent body's frame (the world for -1) to this joint's
            frame before its own motion.
        pos: (3,) position [m] of this joint in the parent body's frame (the world for -1).
        axis: (3,) hinge axis in the joint frame (unused for ball joints).
        lower: Hinge lower limit [rad].
        upper: Hinge upper limit [rad].
        limit: Ball-joint limit object with ``project_matrix``/``project``, or None.
        q_index: First index of the joint's variables in ``q``.
        children: Child body indices on effector paths.
        effectors: Effector slots (positions in the solver's effector list) carried here.
        points: (m, 3) offsets [m] of the child joints, then of the effectors, in the joint frame.
        center: (3,) mean of ``points`` [m]: the bone FABRIK aims.
        bone: (3,) unit direction of ``center``.
        child_bone: (c, 3) ``bone`` of this body expressed in each child's pre-motion frame.
    """

    joint: int
    hinge: bool
    parent: int
    rot: np.ndarray
    pos: np.ndarray
    axis: np.ndarray
    lower: float
    upper: float
    limit: object | None
    q_index: int
    children: tuple[int, ...]
    effectors: tuple[int, ...]
    points: np.ndarray
    center: np.ndarray
    bone: np.ndarray
    child_bone: np.ndarray


@dataclass(frozen=True, eq=False)
class Tree:
    """Bodies in topological order plus per-effector data.

    Attributes:
        bodies: The bodies.
        eff_body: (E,) body index carrying each effector.
        eff_rot: (E, 3, 3) effector rotation in its body's joint frame.
        eff_pos: (E, 3) effector position [m] in its body's joint frame.
        paths: Per effector, the body indices from its root body down to its own body.
        base: (E, 3) world position [m] of each effector's root body (fixed).
        length: (E,) chain length [m] from the root body to the effector.
        segments: Per effector, the bodies on its path not shared with another effector.
        below: Per body, indices of the points below it (bodies first, then effectors as
            ``len(bodies) + e``), excluding the body itself.
        below_weight: Per body, weights (m, 1) of those points, halving with each joint of
            distance, so a hinge fits its subtree's shape and mostly its next joint.
    """

    bodies: tuple[Body, ...]
    eff_body: np.ndarray
    eff_rot: np.ndarray
    eff_pos: np.ndarray
    paths: tuple[tuple[int, ...], ...]
    base: np.ndarray
    length: np.ndarray
    segments: tuple[tuple[int, ...], ...]
    below: tuple[np.ndarray, ...]
    below_weight: tuple[np.ndarray, ...]


def _inv(T: np.ndarray) -> np.ndarray:
    out = np.eye(4)
    out[:3, :3] = T[:3, :3].T
    out[:3, 3] = -T[:3, :3].T @ T[:3, 3]
    return out


def build_tree(skeleton: Skeleton, effector_ids: tuple[int, ...]) -> Tree:
    """Group the skeleton into FABRIK bodies for the given effectors.

    Args:
        skeleton: The skeleton.
        effector_ids: Skeleton effector indices driven by the solver, in target order.

    Returns:
        The :class:`Tree`.

    Raises:
        InvalidInputError: A prismatic or mimic joint on an effector path, an effector no joint
            moves, or a zero-length bone (FABRIK needs a direction to reach along).
    """
    rest = rest_transforms(skeleton)
    joint_paths = []
    for e in effector_ids:
        eff = skeleton.effectors[e]
        moving = []
        for j in skeleton.ancestors(eff.joint):
            joint = skeleton.joints[j]
            if joint.kind is JointKind.FIXED:
                continue
            if joint.kind is JointKind.PRISMATIC or joint.mimic is not None:
                what = "prismatic" if joint.kind is JointKind.PRISMATIC else "mimic"
                raise InvalidInputError(
                    f"FABRIK cannot drive {what} joint {joint.name!r} on the path to effector "
                    f"{eff.name!r}; supported kinds: revolute, continuous, ball, fixed (use 'dls' instead)"
                )
            moving.append(j)
        if not moving:
            raise InvalidInputError(f"effector {eff.name!r} is not moved by any joint")
        joint_paths.append(moving)
    joints = sorted({j for path in joint_paths for j in path})
    index = {j: k for k, j in enumerate(joints)}
    parent_of: dict[int, int] = {}
    for path in joint_paths:
        parent_of[path[0]] = -1
        for a, b in zip(path, path[1:]):
            parent_of[b] = index[a]
    eff_body = np.array([index[path[-1]] for path in joint_paths])
    eff_T = [
        _inv(rest[joints[k]]) @ rest[skeleton.effectors[e].joint] @ skeleton.effectors[e].offset
        for k, e in zip(eff_body, effector_ids)
    ]
    G = [rest[j] if parent_of[j] < 0 else _inv(rest[joints[parent_of[j]]]) @ rest[j] for j in joints]
    children = [tuple(c for c, j in enumerate(joints) if parent_of[j] == k) for k in range(len(joints))]
    bodies = []
    for k, j in enumerate(joints):
        joint = skeleton.joints[j]
        effs = tuple(int(e) for e in np.nonzero(eff_body == k)[0])
        points = np.array([G[c][:3, 3] for c in children[k]] + [eff_T[e][:3, 3] for e in effs])
        lengths = np.linalg.norm(points, axis=-1)
        mean = points.mean(axis=0)
        if lengths.min() < MIN_BONE or np.linalg.norm(mean) < MIN_BONE:
            raise InvalidInputError(
                f"joint {joint.name!r} has a zero-length bone (next joint or effector at "
                f"{np.round(points[np.argmin(lengths)], 12).tolist()} m in its frame); FABRIK needs "
                "every moving joint to sit away from the next one (for arms with coincident joint "
                "axes use the 'dls' or 'ccd' solver)"
            )
        bone = mean / np.linalg.norm(mean)
        child_bone = np.array([G[c][:3, :3].T @ bone for c in children[k]]).reshape(-1, 3)
        bodies.append(
            Body(
                joint=j,
                hinge=joint.kind in (JointKind.REVOLUTE, JointKind.CONTINUOUS),
                parent=parent_of[j],
                rot=G[k][:3, :3].copy(),
                pos=G[k][:3, 3].copy(),
                axis=joint.axis,
                lower=joint.lower,
                upper=joint.upper,
                limit=joint.limit if joint.kind is JointKind.BALL else None,
                q_index=int(skeleton.q_index[j]),
                children=children[k],
                effectors=effs,
                points=points,
                center=mean,
                bone=bone,
                child_bone=child_bone,
            )
        )
    paths = tuple(tuple(index[j] for j in path) for path in joint_paths)
    base = np.array([G[path[0]][:3, 3] for path in paths])
    length = []
    for e, path in enumerate(paths):
        hops = [G[b][:3, 3] for b in path[1:]] + [eff_T[e][:3, 3]]
        length.append(sum(float(np.linalg.norm(h)) for h in hops))
    shared = [set().union(*(set(p) for i, p in enumerate(paths) if i != e)) for e in range(len(paths))]
    segments = tuple(tuple(b for b in path if b not in shared[e]) for e, path in enumerate(paths))
    depth = [0] * len(joints)
    for k in range(len(joints)):
        depth[k] = 0 if parent_of[joints[k]] < 0 else depth[parent_of[joints[k]]] + 1
    below, below_weight = [], []
    for k in range(len(joints)):
        under = [j for j in range(k + 1, len(joints)) if k in _ancestry(j, joints, parent_of)]
        effs = [e for e in range(len(paths)) if k in paths[e]]
        steps = [depth[j] - depth[k] for j in under] + [depth[eff_body[e]] - depth[k] + 1 for e in effs]
        below.append(np.array(under + [len(joints) + e for e in effs], dtype=int))
        below_weight.append(0.5 ** (np.array(steps, dtype=float)[:, None] - 1.0))
    return Tree(
        bodies=tuple(bodies),
        eff_body=eff_body,
        eff_rot=np.array([T[:3, :3] for T in eff_T]),
        eff_pos=np.array([T[:3, 3] for T in eff_T]),
        paths=paths,
        base=base,
        length=np.array(length),
        segments=segments,
        below=tuple(below),
        below_weight=tuple(below_weight),
    )


def _ancestry(k: int, joints: list[int], parent_of: dict[int, int]) -> list[int]:
    """Body indices from body ``k`` up to its root body."""
    out = []
    while k >= 0:
        out.append(k)
        k = parent_of[joints[k]]
    return out


def orientation_points(
    tree: Tree, leaf: list[int], mode: str, aim_axis: np.ndarray
) -> tuple[list[tuple[int, np.ndarray]], list[np.ndarray], list[np.ndarray]]:
    """Virtual points standing for effector orientations in hinge fits, and each body's point lists.

    In "aim" mode one point a bone's length along the aim axis; in "full" mode two, along the
    effector's X and Y axes. Each is rigid with the effector's body and carries the
    effector's weight in every fit above it.

    Args:
        tree: The body tree.
        leaf: Per body, the effector slot whose orientation it takes, or -1.
        mode: "position", "aim" or "full".
        aim_axis: (3,) unit aim axis in the effector frame.

    Returns:
        virtual: (body, offset (3,) [m] in that body's joint frame) per virtual point; point
            ``v`` has index ``len(bodies) + E + v`` in the point lists.
        below: Per body, :attr:`Tree.below` extended with its virtual points.
        below_weight: Per body, the matching (m, 1) weights.
    """
    below, weight = list(tree.below), list(tree.below_weight)
    virtual: list[tuple[int, np.ndarray]] = []
    if mode == "position":
        return virtual, below, weight
    B, E = len(tree.bodies), len(tree.eff_body)
    for e in range(E):
        body = int(tree.eff_body[e])
        if leaf[body] != e:
            continue
        scale = float(np.linalg.norm(tree.bodies[body].center))
        axes = [aim_axis] if mode == "aim" else [np.eye(3)[0], np.eye(3)[1]]
        for axis in axes:
            vid = B + E + len(virtual)
            virtual.append((body, tree.eff_pos[e] + scale * (tree.eff_rot[e] @ axis)))
            for k in range(B):
                hit = np.nonzero(below[k] == B + e)[0]
                if hit.size:
                    below[k] = np.append(below[k], vid)
                    weight[k] = np.vstack([weight[k], weight[k][hit[:1]]])
    return virtual, below, weight
