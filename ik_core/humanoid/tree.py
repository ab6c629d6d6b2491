# SPDX-License-Identifier: GPL-3.0-or-later
"""A validated bone hierarchy given as (name, parent) pairs, with ancestry queries."""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import InvalidInputError

__all__ = ["BoneTree"]


class BoneTree:
    """Bones and their parents, checked for repeats, unknown parents and cycles.

    Args:
        bones: (bone name, parent name or None) pairs in any order; '' counts as no parent.

    Raises:
        InvalidInputError: On repeated names, a parent missing from the list, or a cycle.
    """

    def __init__(self, bones: Iterable[tuple[str, str | None]]) -> None:
        pairs = []
        for item in bones:
            try:
                name, parent = item
            except (TypeError, ValueError):
                raise InvalidInputError(f"bones must be (name, parent) pairs, got {item!r}") from None
            pairs.append((str(name), str(parent) if parent else None))
        self.parent: dict[str, str | None] = {}
        for name, parent in pairs:
            if name in self.parent:
                raise InvalidInputError(f"bone name {name!r} appears more than once")
            self.parent[name] = parent
        for name, parent in pairs:
            if parent is not None and parent not in self.parent:
                raise InvalidInputError(f"bone {name!r} has parent {parent!r}, which is not in the bone list")
        self.children: dict[str, list[str]] = {n: [] for n in self.parent}
        for name, parent in pairs:
            if parent is not None:
                self.children[parent].append(name)
        self.order: list[str] = []
        self.depth: dict[str, int] = {}
        stack = [(n, 0) for n, p in reversed(pairs) if p is None]
        while stack:
            name, d = stack.pop()
            self.order.append(name)
            self.depth[name] = d
            stack.extend((c, d + 1) for c in reversed(self.children[name]))
        if len(self.order) != len(self.parent):
            cyclic = sorted(set(self.parent) - set(self.order))
            raise InvalidInputError(f"bone hierarchy has a cycle through {', '.join(map(repr, cyclic[:10]))}")
        self._ancestors: dict[str, tuple[str, ...]] = {}

    def ancestors(self, name: str) -> tuple[str, ...]:
        """Ancestors of ``name`` from its parent up to the root."""
        if name not in self._ancestors:
            out = []
            p = self.parent[name]
            while p is not None:
                out.append(p)
                p = self.parent[p]
            self._ancestors[name] = tuple(out)
        return self._ancestors[name]

    def is_ancestor(self, a: str, b: str) -> bool:
        """True when ``a`` is a strict ancestor of ``b``."""
        return a in self.ancestors(b)

    def descendants(self, name: str) -> list[str]:
        """Strict descendants of ``name``, parents before children."""
        out, stack = [], list(reversed(self.children[name]))
        while stack:
            n = stack.pop()
            out.append(n)
            stack.extend(reversed(self.children[n]))
        return out

    def common_ancestor(self, names: Iterable[str]) -> str | None:
        """Deepest bone that is ``name`` or an ancestor of it for every name, or None."""
        paths = [(n, *self.ancestors(n)) for n in names]
        if not paths:
            return None
        shared = set(paths[0]).intersection(*paths[1:])
        return next((n for n in paths[0] if n in shared), None)

    def path_down(self, top: str, bottom: str) -> list[str]:
        """Bones strictly below ``top`` down to ``bottom`` inclusive (empty if not related)."""
        up = [bottom, *self.ancestors(bottom)]
        if top not in up:
            return []
        return list(reversed(up[: up.index(top)]))
