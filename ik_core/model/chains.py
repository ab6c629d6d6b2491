# SPDX-License-Identifier: GPL-3.0-or-later
"""Sub-chains of a skeleton: the joints from a root to one or more tips, as a skeleton of their own."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from ..errors import SkeletonError, UnknownNameError
from .kinematics import rest_transforms
from .skeleton import Effector, Skeleton


def sub_chain(skeleton: Skeleton, tips: str | Sequence[str], root: str | None = None) -> Skeleton:
    """The sub-tree from ``root`` to one or more tip effectors (or joints).

    Joints above ``root`` are folded into the root's origin at their rest pose (q = 0),
    so the returned skeleton places the chain where it sits in the whole skeleton at rest.

    Args:
        skeleton: The whole skeleton.
        tips: One or several effector names (or joint names, which get an effector at
            the joint frame).
        root: Name of the first joint kept; by default every tip keeps its whole path
            up to its root (a skeleton may have several roots).

    Returns:
        A new skeleton holding only the joints on the root-to-tip paths.

    Raises:
        UnknownNameError: For unknown tip or root names.
        SkeletonError: If a tip does not descend from ``root``.
    """
    tip_names = [tips] if isinstance(tips, str) else list(tips)
    tip_joints, tip_offsets = [], []
    for tip in tip_names:
        if tip in skeleton.effector_names:
            eff = skeleton.effector(tip)
            tip_joints.append(eff.joint)
            tip_offsets.append(eff.offset)
        elif tip in skeleton.joint_names:
            tip_joints.append(skeleton.joint_index(tip))
            tip_offsets.append(np.eye(4))
        else:
            raise UnknownNameError("effector or joint", tip, [*skeleton.effector_names, *skeleton.joint_names])
    root_index = None if root is None else skeleton.joint_index(root)
    keep: set[int] = set()
    for tip, tj in zip(tip_names, tip_joints):
        path = skeleton.ancestors(tj)
        if root_index is not None:
            if root_index not in path:
                root_name = skeleton.joints[root_index].name
                raise SkeletonError(f"tip {tip!r} does not descend from root {root_name!r}")
            path = path[path.index(root_index) :]
        keep.update(path)
    order = sorted(keep)
    remap = {old: new for new, old in enumerate(order)}
    rest = rest_transforms(skeleton)
    parent_of_root = -1 if root_index is None else skeleton.joints[root_index].parent
    base = rest[parent_of_root] if parent_of_root >= 0 else np.eye(4)
    new_joints = []
    for old in order:
        j = skeleton.joints[old]
        if old == root_index:
            j = replace(j, parent=-1, origin=base @ j.origin)
        elif j.parent >= 0:
            j = replace(j, parent=remap[j.parent])
        if j.mimic is not None and skeleton.joint_index(j.mimic.joint) not in keep:
            raise SkeletonError(f"joint {j.name!r} mimics {j.mimic.joint!r}, which is outside the chain")
        new_joints.append(j)
    new_effectors = [
        Effector(tip, remap[tj], off) for tip, tj, off in zip(tip_names, tip_joints, tip_offsets)
    ]
    kept_q = [
        np.arange(skeleton.q_index[o], skeleton.q_index[o] + skeleton.joints[o].dof)
        for o in order
        if skeleton.joints[o].dof
    ]
    pref = skeleton.preferred_q[np.concatenate(kept_q)] if kept_q else np.zeros(0)
    return Skeleton(new_joints, new_effectors, name=skeleton.name, preferred_q=pref)

