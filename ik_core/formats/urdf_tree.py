# SPDX-License-Identifier: GPL-3.0-or-later
"""A URDF's links as a tree of indices, and the questions an import asks of it, answered in whole-array steps.

Each question (how deep is a link, which moving joint is nearest above it, does a moving joint
lie between it and the base) is answered for every link at once by pointer jumping: each link
keeps a pointer up the tree and a value for the stretch it covers; one step composes every
pointer with itself, doubling every stretch, so ``log2(depth)`` numpy steps answer it for a
100,000-link chain where a walk in Python visits each link once (0.5 us each, several walks per
import).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np


class LinkTree:
    """The links of a URDF by index (document order), each pointing at its parent link.

    Built from joints already checked to join links of the robot, each link the child of at
    most one joint; the joints may still form cycles (:meth:`climb` finds them), which a model
    refuses.

    Attributes:
        joint_parent: (J,) parent link index of each joint, document order.
        joint_child: (J,) child link index of each joint.
        parent: (L,) parent link index of each link; a root link is its own parent (the end of
            every climb).
        has_joint: (L,) whether the link is some joint's child (False for the root).
        leaf: (L,) whether the link is no joint's parent.
    """

    def __init__(self, n_links: int, joint_parent: np.ndarray, joint_child: np.ndarray) -> None:
        """Index the tree.

        Args:
            n_links: L, the number of links.
            joint_parent: (J,) parent link index of each joint, in ``[0, L)``.
            joint_child: (J,) child link index of each joint, in ``[0, L)``, none twice.
        """
        self.joint_parent, self.joint_child = joint_parent, joint_child
        self.parent = np.arange(n_links)
        self.parent[joint_child] = joint_parent
        self.has_joint = np.zeros(n_links, bool)
        self.has_joint[joint_child] = True
        self.leaf = np.ones(n_links, bool)
        self.leaf[joint_parent] = False

    def child_flags(self, joints: np.ndarray) -> np.ndarray:
        """(L,) True at the child link of each joint in ``joints`` ((J,) bool mask or indices).

        A joint's value (it moves, it is a tool's joint) lives on its child link, which only it
        enters: a question about joints on a path becomes one about the links on it.
        """
        flags = np.zeros(len(self.parent), bool)
        flags[self.joint_child[joints]] = True
        return flags

    def climb(self, flags: np.ndarray | None = None, stop: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Where each link's climb up the tree ends, and whether a flagged link lies on the way.

        Args:
            flags: (L,) bool per link; None for none.
            stop: A link where climbs end as at a root (the base of a sub-tree); None: roots only.

        Returns:
            ``end``, (L,) the root (or ``stop``) each link reaches; a link on a cycle, or below
            one, reaches neither (its end is some link of the cycle, not a root).
            ``flagged``, (L,) whether any link from the link itself up to its end, the end
            excluded, is flagged.
        """
        start = self.parent.copy()
        flagged = np.zeros(len(self.parent), bool) if flags is None else flags.copy()
        if stop is not None:
            start[stop] = stop
        flagged[start == np.arange(len(start))] = False  # nothing lies between an end and itself
        end = start
        for end in _doublings(start):
            flagged |= flagged[end]
        return end, flagged

    def above(self, flags: np.ndarray, stop: int | None = None) -> np.ndarray:
        """(L,) True at each flagged link and at every link above one, up to the end of its climb.

        The end (a root, or ``stop``) is included; links above ``stop`` are not reached from
        below it. A doubling step marks, from every link marked within ``2**t`` links above a
        flagged one, the link ``2**t`` above it: the marks then reach ``2**(t + 1)`` links up.

        Args:
            flags: (L,) bool per link.
            stop: A link where climbs end as at a root; None: roots only.
        """
        up = self.parent.copy()
        if stop is not None:
            up[stop] = stop
        marked = flags.copy()
        for jump in _doublings(up):
            marked[jump[marked]] = True
        return marked

    def path_sums(self, weights: np.ndarray) -> np.ndarray:
        """(L,) the sum of ``weights`` over each link and every link above it, its root's weight excluded.

        Meaningless on a cycle.

        Args:
            weights: (L,) a number per link.
        """
        total = np.where(self.has_joint, weights, 0)  # a root's pointer rests on itself: it must add nothing
        for end in _doublings(self.parent):
            total += total[end]
        return total

    def depth(self) -> np.ndarray:
        """(L,) number of joints between each link and its root (0 for a root); meaningless on a cycle."""
        return self.path_sums(np.ones(len(self.parent), np.intp))

    def subtree_sizes(self) -> np.ndarray:
        """(L,) the number of links in each link's sub-tree, itself included (a tree only).

        Each doubling step adds to every link the counts of the links exactly ``2**t`` below
        it (those at least that deep), so counts cover ``2**(t + 1)`` levels of descendants.
        """
        depth, n = self.depth(), len(self.parent)
        size = np.ones(n)  # float: np.bincount's weights; exact to 2**53 links
        for t, up in enumerate(_doublings(self.parent)):
            deep = depth >= 1 << t  # links whose ancestor 2**t links up exists (their pointer is exact)
            size += np.bincount(up[deep], weights=size[deep], minlength=n)
        return size.astype(np.intp)

    def preorder(self) -> np.ndarray:
        """(L,) each link's place in a depth-first pre-order walk of the tree (a tree only).

        The walk visits a link, then the sub-trees of its child joints in joint order; roots
        come in link order. A link's place is its parent's, plus one, plus the sizes of the
        sub-trees of its earlier siblings: a sum down the path from its root.
        """
        size, n_joints = self.subtree_sizes(), len(self.joint_parent)
        order = np.argsort(self.joint_parent, kind="stable")  # siblings together, in joint order
        kids = self.joint_child[order]
        before = np.cumsum(size[kids]) - size[kids]  # sizes of the sub-trees earlier in that order
        first = np.ones(n_joints, bool)
        first[1:] = self.joint_parent[order][1:] != self.joint_parent[order][:-1]
        family_start = np.maximum.accumulate(np.where(first, np.arange(n_joints), 0))
        step = np.zeros(len(self.parent), np.intp)
        step[kids] = 1 + before - before[family_start]
        roots = np.flatnonzero(~self.has_joint)
        root_place = np.zeros(len(self.parent), np.intp)
        root_place[roots] = np.cumsum(size[roots]) - size[roots]
        end, _ = self.climb()
        return self.path_sums(step) + root_place[end]

    def nearest(self, flags: np.ndarray) -> np.ndarray:
        """(L,) the nearest flagged link at or above each link, or -1 where there is none up to the root.

        Args:
            flags: (L,) bool per link.
        """
        start = np.where(flags, np.arange(len(flags)), self.parent)  # flagged links and roots stay
        *_, up = _doublings(start)  # the last pointers rest on the answer
        return np.where(flags[up], up, -1)


def _doublings(up: np.ndarray) -> Iterator[np.ndarray]:
    """``up``, ``up[up]``, ``up[up][up[up]]``...: pointers that skip 1, 2, 4... links, until they rest.

    Each step composes every pointer with itself, so ``log2(depth)`` steps reach the top of the
    deepest path. A pointer on a cycle never rests: ``log2(L) + 2`` steps are more than a tree of
    L links needs, and where they stop (the values of links on or below a cycle mean nothing).
    """
    for _ in range(len(up).bit_length() + 1):  # the pointers of step t skip 2**t links
        yield up
        jumped = up[up]
        if np.array_equal(jumped, up):
            return
        up = jumped
