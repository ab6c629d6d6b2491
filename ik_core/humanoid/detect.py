# SPDX-License-Identifier: GPL-3.0-or-later
"""Role detection within one rig layer: limbs from names, trunk from the limbs' common ancestors."""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import MappingError
from .naming import CLASS_WORDS, BoneName
from .tree import BoneTree

__all__ = ["detect_in_family"]

_ARM_UP = (
    ("forearm", {"forearm"}),
    ("upper_arm", {"upper_arm", "shoulder"}),
    ("clavicle", {"clavicle", "shoulder"}),
)
_LEG_UP = (("shin", {"shin"}), ("thigh", {"thigh"}))
_ROLE_KIND = {
    "pelvis": "pelvis",
    "head": "head",
    "spine_1": "spine",
    "neck": "neck",
    "clavicle": "clavicle",
    "upper_arm": "upper_arm",
    "forearm": "forearm",
    "hand": "hand",
    "thigh": "thigh",
    "shin": "shin",
    "foot": "foot",
    "toe": "toe",
}


class _Detector:
    def __init__(self, tree: BoneTree, infos: Mapping[str, BoneName], family: str) -> None:
        self.tree, self.infos = tree, infos
        self.fam = {n for n, i in infos.items() if i.family == family and not i.excluded}
        self.roles: dict[str, str] = {}
        self.missing: list[str] = []
        self.duplicates: dict[str, list[str]] = {}

    def up(self, name: str) -> list[str]:
        """Ancestors in this layer, parent first (other layers are looked through)."""
        return [a for a in self.tree.ancestors(name) if a in self.fam]

    def tops(self, names: list[str]) -> list[str]:
        """The names with no other name above them (twist segments hang below their bone)."""
        pool = set(names)
        return [n for n in names if not any(a in pool for a in self.tree.ancestors(n))]

    def pick(self, role: str, names: list[str], required: bool = True) -> str | None:
        tops = self.tops(names)
        if len(tops) > 1:
            self.duplicates[role] = tops
            return None
        if not tops:
            if required:
                self.missing.append(role)
            return None
        self.roles[role] = tops[0]
        return tops[0]

    def of_kind(self, kind: str, side: str | None, within: list[str] | None = None) -> list[str]:
        pool = self.tree.order if within is None else within
        return [
            n for n in pool if n in self.fam and self.infos[n].kind == kind and self.infos[n].side == side
        ]

    def walk_up(self, start: str, side: str, expected: tuple, skip: set[str], optional: set[str]) -> None:
        """Assign the roles expected above ``start`` from the same-side run of ancestors."""
        run = []
        for a in self.up(start):
            if self.infos[a].side != side:
                break
            run.append(a)
        groups: list[tuple[str | None, list[str]]] = []
        for a in run:
            kind = self.infos[a].kind
            if groups and groups[-1][0] == kind:
                groups[-1][1].append(a)
            else:
                groups.append((kind, [a]))
        idx = 0
        for kind, members in groups:
            if kind is None or kind in skip:
                continue
            later = [j for j in range(idx, len(expected)) if kind in expected[j][1]]
            if not later:
                break
            for j in range(idx, later[0]):
                self._miss(f"{expected[j][0]}_{side}", optional)
            self.roles[f"{expected[later[0]][0]}_{side}"] = members[-1]
            idx = later[0] + 1
        for j in range(idx, len(expected)):
            self._miss(f"{expected[j][0]}_{side}", optional)

    def _miss(self, role: str, optional: set[str]) -> None:
        if role not in optional:
            self.missing.append(role)

    def limbs(self) -> None:
        for side in ("l", "r"):
            hand = self.pick(f"hand_{side}", self.of_kind("hand", side))
            if hand:
                self.walk_up(hand, side, _ARM_UP, set(), {f"clavicle_{side}"})
            foot = self.pick(f"foot_{side}", self.of_kind("foot", side))
            if foot:
                self.walk_up(foot, side, _LEG_UP, {"pelvis_side"}, set())
                below = self.of_kind("toe", side, self.tree.descendants(foot))
                self.pick(f"toe_{side}", below, required=False)

    def unsided_at_or_above(self, name: str | None) -> str | None:
        for a in [name, *self.tree.ancestors(name)] if name else []:
            if a in self.fam and self.infos[a].side is None:
                return a
        return None

    def trunk(self) -> None:
        thighs = [self.roles[f"thigh_{s}"] for s in "lr" if f"thigh_{s}" in self.roles]
        hip_lca = self.tree.common_ancestor(thighs) if len(thighs) == 2 else None
        named = [
            n
            for n in self.of_kind("pelvis", None)
            if hip_lca is None or n == hip_lca or self.tree.is_ancestor(n, hip_lca)
        ]
        if named:
            # The deepest named one: 3ds Max style 'Bip01' > 'Bip01 Pelvis' keeps the real pelvis.
            self.roles["pelvis"] = max(named, key=self.tree.depth.__getitem__)
        elif hip_lca and (p := self.unsided_at_or_above(hip_lca)):
            self.roles["pelvis"] = p
        else:
            self.missing.append("pelvis")
            return
        pelvis = self.roles["pelvis"]
        arm_tops = []
        for s in "lr":
            top = self.roles.get(f"clavicle_{s}") or self.roles.get(f"upper_arm_{s}")
            if top:
                arm_tops.append(top)
        # One arm is enough to find the chest, so a missing arm is reported as just that.
        chest = self.unsided_at_or_above(self.tree.common_ancestor(arm_tops)) if arm_tops else None
        spine = [n for n in self.tree.path_down(pelvis, chest) if n in self.fam] if chest else []
        if not spine:
            if arm_tops:
                self.missing.append("spine_1")
            return
        for i, bone in enumerate(spine):
            self.roles[f"spine_{i + 1}"] = bone
        below_chest = self.tree.descendants(chest)
        if self.pick("head", self.of_kind("head", None, below_chest), required=False) is None:
            if "head" in self.duplicates:
                return
            head = self.numbered_head(chest, below_chest)
            if head is None:
                self.missing.append("head")
                return
            self.roles["head"] = head
        necks = [n for n in self.tree.path_down(chest, self.roles["head"])[:-1] if n in self.fam]
        for i, bone in enumerate(necks):
            self.roles["neck" if i == 0 else f"neck_{i + 1}"] = bone

    def numbered_head(self, chest: str, below: list[str]) -> str | None:
        """Rigify's head is the last of the numbered spine bones (spine.004 .. spine.006)."""
        info = self.infos[chest]
        start = info.number or 0
        chain = sorted(
            (
                n
                for n in below
                if n in self.fam
                and self.infos[n].side is None
                and self.infos[n].core == info.core
                and (self.infos[n].number or 0) > start
            ),
            key=lambda n: self.infos[n].number or 0,
        )
        last = None
        for n in chain:
            if last is not None and not self.tree.is_ancestor(last, n):
                break
            last = n
        return last

    def candidates(self) -> dict[str, list[str]]:
        out = {}
        for role in [*self.missing, *self.duplicates]:
            stem, _, side = role.rpartition("_")
            if side not in ("l", "r") or stem not in _ROLE_KIND:
                stem, side = role, ""
            kind = _ROLE_KIND.get(stem, "spine")
            words = CLASS_WORDS[kind] + (("shoulder",) if kind in ("clavicle", "upper_arm") else ())
            where = {"l": ", left side", "r": ", right side"}.get(side, "")
            label = f"{role} (names with {'/'.join(words)}{where})"
            out[label] = [
                n for n in self.tree.order if n in self.fam and any(w in self.infos[n].core for w in words)
            ]
        return out


def detect_in_family(tree: BoneTree, infos: Mapping[str, BoneName], family: str) -> dict[str, str]:
    """Roles found among the bones of one layer ('DEF', 'ORG' or '' for unprefixed).

    Args:
        tree: The whole hierarchy (other layers are looked through when walking up).
        infos: Parsed names of every bone.
        family: The layer to take role bones from.

    Returns:
        Role -> bone name.

    Raises:
        MappingError: With the missing roles, candidates considered and duplicate roles.
    """
    det = _Detector(tree, infos, family)
    det.limbs()
    if not det.duplicates:
        det.trunk()
    if det.missing or det.duplicates:
        raise MappingError(det.missing, det.candidates(), det.duplicates)
    return det.roles
