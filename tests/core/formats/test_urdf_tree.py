# SPDX-License-Identifier: GPL-3.0-or-later
"""LinkTree: depth, nearest flagged link and climbs by pointer jumping equal walks up the tree, link by link."""

from __future__ import annotations

import numpy as np
import pytest

from ik_core.formats.urdf_tree import LinkTree


def random_tree(rng: np.random.Generator, n: int, chain: bool = False) -> tuple[LinkTree, np.ndarray]:
    """A tree of n links stored in shuffled order (a parent may come after its child), and its (L,) parents.

    The root's parent is -1; joints are listed in another shuffled order.
    """
    parent_in_order = np.array([-1] + [k - 1 if chain else int(rng.integers(0, k)) for k in range(1, n)])
    place = rng.permutation(n)  # link k of the generated order is stored at place[k]
    parents = np.full(n, -1)
    parents[place[1:]] = place[parent_in_order[1:]]
    children = rng.permutation(np.flatnonzero(parents >= 0))
    return LinkTree(n, parents[children], children), parents


def walk(parents: np.ndarray, link: int, stop: int = -1) -> list[int]:
    """Links from ``link`` up to (without) ``stop`` or past the root, one parent at a time."""
    path = []
    while link != -1 and link != stop:
        path.append(link)
        link = int(parents[link])
    return path


@pytest.mark.parametrize("n, chain", [(1, False), (2, True), (57, False), (300, True), (1000, False)])
def test_depth_nearest_and_climb_equal_walks(n: int, chain: bool) -> None:
    """For every link: depth, nearest flagged link at or above, and any flag below a stop, as walking says."""
    rng = np.random.default_rng(n)
    tree, parents = random_tree(rng, n, chain)
    flags = rng.random(n) < 0.2
    stop = int(rng.integers(0, n))
    depth, nearest = tree.depth(), tree.nearest(flags)
    end, flagged = tree.climb(flags, stop=stop)
    root = int(np.flatnonzero(parents < 0)[0])
    for link in range(n):
        path = walk(parents, link)
        assert depth[link] == len(path) - 1
        assert nearest[link] == next((k for k in path if flags[k]), -1)
        below_stop = stop in path
        assert end[link] == (stop if below_stop else root)
        assert flagged[link] == any(flags[k] for k in walk(parents, link, stop if below_stop else -1) if k != root)


def test_leaf_and_parent_arrays() -> None:
    """A link with no child joint is a leaf; the root is its own parent and the only link without a joint."""
    tree, parents = random_tree(np.random.default_rng(3), 200)
    np.testing.assert_array_equal(tree.parent, np.where(parents < 0, np.arange(200), parents))
    np.testing.assert_array_equal(tree.has_joint, parents >= 0)
    np.testing.assert_array_equal(tree.leaf, ~np.isin(np.arange(200), parents))
    np.testing.assert_array_equal(tree.child_flags(np.array([0, 2])), np.isin(np.arange(200), tree.joint_child[[0, 2]]))


@pytest.mark.parametrize("cycle_length", [1, 2, 3, 7, 64])
def test_a_cycle_is_never_reached_from_the_root(cycle_length: int) -> None:
    """Links on a cycle of joints, and below it, end their climb off the root; every other link ends at the root."""
    rng = np.random.default_rng(cycle_length)
    tree, parents = random_tree(rng, 100)
    root = int(np.flatnonzero(parents < 0)[0])
    # Re-hang a path of cycle_length links (taken from the root's descendants) so that it loops on itself.
    cycle = [int(k) for k in rng.permutation(np.flatnonzero(parents >= 0))[:cycle_length]]
    parents = parents.copy()
    for a, b in zip(cycle, cycle[1:] + cycle[:1], strict=True):
        parents[a] = b
    children = np.flatnonzero(parents >= 0)
    end, _ = LinkTree(100, parents[children], children).climb()

    def reaches_root(link: int) -> bool:
        seen = set()
        while link != -1 and link not in seen:
            seen.add(link)
            link = int(parents[link])
        return link == -1

    np.testing.assert_array_equal(end == root, [reaches_root(k) for k in range(100)])


def walk_preorder(parents: np.ndarray, tree: LinkTree) -> list[int]:
    """Links in depth-first pre-order, one at a time: each link's children in the order of their joints."""
    children: dict[int, list[int]] = {}
    for parent, child in zip(tree.joint_parent.tolist(), tree.joint_child.tolist(), strict=True):
        children.setdefault(parent, []).append(child)
    order, stack = [], sorted(np.flatnonzero(parents < 0).tolist(), reverse=True)
    while stack:
        order.append(stack.pop())
        stack.extend(reversed(children.get(order[-1], [])))
    return order


@pytest.mark.parametrize("n, chain", [(1, False), (2, True), (57, False), (300, True), (1000, False)])
def test_preorder_subtree_sizes_and_above_equal_walks(n: int, chain: bool) -> None:
    """Pre-order places, sub-tree sizes, path sums and the links above flagged ones, as walking says."""
    rng = np.random.default_rng(n + 1)
    tree, parents = random_tree(rng, n, chain)
    order = walk_preorder(parents, tree)
    np.testing.assert_array_equal(np.argsort(tree.preorder()), order)
    weights = rng.integers(-5, 6, n)
    flags = rng.random(n) < 0.05
    stop = int(rng.integers(0, n))
    sizes, above, above_stop = np.zeros(n, int), np.zeros(n, bool), np.zeros(n, bool)
    for link in range(n):  # each link counts in, and marks, every link on its way up
        path = walk(parents, link)
        sizes[path] += 1
        above[path] |= flags[link]
        above_stop[path[: path.index(stop) + 1] if stop in path else path] |= flags[link]
    np.testing.assert_array_equal(tree.subtree_sizes(), sizes)
    np.testing.assert_array_equal(tree.above(flags), above)
    np.testing.assert_array_equal(tree.above(flags, stop=stop), above_stop)
    sums = tree.path_sums(weights)
    for link in range(n):
        assert sums[link] == sum(weights[k] for k in walk(parents, link)[:-1])  # the root's weight left out


def test_preorder_of_several_roots_puts_each_tree_after_the_last() -> None:
    """A forest: each root's tree follows the whole tree of the root before it (roots in link order)."""
    # links 0..5; roots 1 and 4; 1 -> 3 -> 0, 1 -> 5; 4 -> 2
    tree = LinkTree(6, np.array([1, 3, 4, 1]), np.array([3, 0, 2, 5]))
    assert np.argsort(tree.preorder()).tolist() == [1, 3, 0, 5, 4, 2]
    assert tree.subtree_sizes().tolist() == [1, 4, 1, 2, 2, 1]
