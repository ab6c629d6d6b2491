# SPDX-License-Identifier: GPL-3.0-or-later
"""Humanoid roles: the role map, JSON presets and auto-detection from (bone, parent) names."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..errors import InvalidInputError, MappingError, UnknownNameError
from .naming import parse_name
from .tree import BoneTree

__all__ = [
    "ARM_ROLES",
    "LEG_ROLES",
    "OPTIONAL_ROLES",
    "MappingError",
    "RoleMap",
    "detect_roles",
    "load_presets",
    "preset_dir",
]

ARM_ROLES = ("clavicle", "upper_arm", "forearm", "hand")
LEG_ROLES = ("thigh", "shin", "foot", "toe")
# Roles a rig may lack; every other role must be found.
OPTIONAL_ROLES = frozenset({"neck", "clavicle_l", "clavicle_r", "toe_l", "toe_r"})
_SIDES = ("l", "r")


_ORDER = ["pelvis", "spine", "neck", "head"]
_ORDER += [f"{r}_{s}" for s in _SIDES for r in ARM_ROLES] + [f"{r}_{s}" for s in _SIDES for r in LEG_ROLES]


def _role_sort_key(role: str) -> tuple[int, int]:
    """(rank, number) of a role; ValueError for names that are not roles."""
    stem, _, num = role.rpartition("_")
    if num.isdigit():
        # Numbered roles: spine_1, spine_2, ... and neck_2, neck_3, ... ('neck' is the first).
        k = int(num)
        if (stem == "spine" and k >= 1) or (stem == "neck" and k >= 2):
            return _ORDER.index(stem), k
        raise ValueError(role)
    if role == "spine" or role not in _ORDER:
        raise ValueError(role)
    return _ORDER.index(role), 1 if role == "neck" else 0


@dataclass(frozen=True)
class RoleMap:
    """Role name -> bone name for one humanoid rig.

    Roles: ``pelvis``; ``spine_1`` .. ``spine_n`` (pelvis to chest); ``neck``, ``neck_2`` ..
    (chest to head, optional); ``head``; ``clavicle``, ``upper_arm``, ``forearm``, ``hand`` and
    ``thigh``, ``shin``, ``foot``, ``toe`` with suffix ``_l`` / ``_r`` (clavicles and toes
    optional).

    Attributes:
        bones: Role -> bone name, in role order.
        source: Where the map came from: ``'auto'`` (name heuristics), ``'auto:rigify-controls'``
            (a generated Rigify rig's FK controls) or ``'preset:<name>'``.
    """

    bones: Mapping[str, str]
    source: str = "auto"
    _order: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            order = tuple(sorted(self.bones, key=_role_sort_key))
        except ValueError:
            bad = [r for r in self.bones if not _valid_role(r)]
            raise InvalidInputError(f"unknown humanoid role(s) {bad}; valid roles: {_role_help()}") from None
        object.__setattr__(self, "bones", {r: self.bones[r] for r in order})
        object.__setattr__(self, "_order", order)
        missing = [r for r in _required_roles() if r not in self.bones]
        if "spine_1" not in self.bones:
            missing.append("spine_1")
        if missing:
            raise MappingError(missing)
        dupes = {}
        for bone in set(self.bones.values()):
            roles = [r for r, b in self.bones.items() if b == bone]
            if len(roles) > 1:
                dupes[f"bone {bone}"] = roles
        if dupes:
            raise MappingError(duplicates=dupes)

    @property
    def roles(self) -> tuple[str, ...]:
        """Role names present, parents before children."""
        return self._order

    @property
    def spine(self) -> tuple[str, ...]:
        """Spine bone names from the pelvis up to the chest."""
        return tuple(self.bones[r] for r in self._order if r.startswith("spine_"))

    @property
    def neck(self) -> tuple[str, ...]:
        """Neck bone names from the chest up to the head (may be empty)."""
        return tuple(self.bones[r] for r in self._order if r == "neck" or r.startswith("neck_"))

    def __getitem__(self, role: str) -> str:
        try:
            return self.bones[role]
        except KeyError:
            raise UnknownNameError("role", role, self._order) from None

    def __contains__(self, role: object) -> bool:
        return role in self.bones

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def parent_role(self, role: str) -> str | None:
        """The role this role hangs from in the role tree (None for the pelvis)."""
        self[role]
        chain = [r for r in self._order if r.startswith("spine_")]
        necks = [r for r in self._order if r == "neck" or r.startswith("neck_")]
        trunk = ["pelvis", *chain, *necks, "head"]
        if role in trunk:
            i = trunk.index(role)
            return trunk[i - 1] if i else None
        stem, side = role.rsplit("_", 1)
        limb = ARM_ROLES if stem in ARM_ROLES else LEG_ROLES
        above = [f"{r}_{side}" for r in limb[: limb.index(stem)] if f"{r}_{side}" in self.bones]
        if above:
            return above[-1]
        return chain[-1] if limb is ARM_ROLES else "pelvis"

    def to_dict(self) -> dict[str, object]:
        """JSON form used by the presets: spine and neck as lists, the rest as strings."""
        out: dict[str, object] = {"pelvis": self.bones["pelvis"], "spine": list(self.spine)}
        if self.neck:
            out["neck"] = list(self.neck)
        out.update({r: b for r, b in self.bones.items() if not r.startswith(("pelvis", "spine", "neck"))})
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, object], source: str = "auto") -> RoleMap:
        """Build from the preset form (see :meth:`to_dict`) or a flat role -> bone mapping.

        Raises:
            InvalidInputError: For unknown roles or non-string bone names.
            MappingError: When required roles are missing.
        """
        bones: dict[str, str] = {}
        for role, value in data.items():
            if role in ("spine", "neck") and isinstance(value, (list, tuple)):
                names = [str(v) for v in value]
                keys = [f"{role}_{i + 1}" for i in range(len(names))]
                if role == "neck" and keys:
                    keys[0] = "neck"
                bones.update(zip(keys, names))
            elif isinstance(value, str):
                bones[role] = value
            else:
                raise InvalidInputError(f"role {role!r}: bone name must be a string, got {value!r}")
        return cls(bones, source)


def _valid_role(role: str) -> bool:
    try:
        _role_sort_key(role)
    except ValueError:
        return False
    return True


def _required_roles() -> list[str]:
    sided = [f"{r}_{s}" for s in _SIDES for r in (*ARM_ROLES, *LEG_ROLES)]
    return [r for r in ["pelvis", "head", *sided] if r not in OPTIONAL_ROLES]


def _role_help() -> str:
    return "pelvis, spine_<n>, neck, neck_<n>, head, " + ", ".join(
        f"{r}_l/_r" for r in (*ARM_ROLES, *LEG_ROLES)
    )


def preset_dir() -> Path:
    """Directory holding the humanoid presets (``presets/humanoids`` next to ``ik_core``)."""
    # This file is ik_core/humanoid/roles.py; going up by path (not `import ik_core`) also works
    # when the add-on loads ik_core as a subpackage under another name.
    return Path(__file__).resolve().parents[2] / "presets" / "humanoids"


@lru_cache(maxsize=1)
def _read_presets() -> tuple[tuple[str, str], ...]:
    folder = preset_dir()
    if not folder.is_dir():
        return ()
    return tuple((p.stem, p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json")))


def load_presets() -> dict[str, RoleMap]:
    """All bundled bone-name presets, by file stem (e.g. ``'mixamo'``).

    Raises:
        InvalidInputError: If a preset file is not valid JSON or has no ``roles`` object.
    """
    out = {}
    for stem, text in _read_presets():
        try:
            data = json.loads(text)
            roles = data["roles"]
        except (ValueError, KeyError, TypeError):
            raise InvalidInputError(f"humanoid preset {stem!r} must be JSON with a 'roles' object") from None
        out[stem] = RoleMap.from_dict(roles, source=f"preset:{stem}")
    return out


def _preset_fits(roles: RoleMap, tree: BoneTree) -> bool:
    if not all(b in tree.parent for b in roles.bones.values()):
        return False
    for role in roles:
        parent = roles.parent_role(role)
        if parent is not None and roles[parent] not in tree.ancestors(roles[role]):
            return False
    return True


def detect_roles(bones: Iterable[tuple[str, str | None]], use_presets: bool = True) -> RoleMap:
    """Map the bones of a humanoid rig to roles from their names and hierarchy.

    Handles Rigify metarigs and generated rigs (mapped to their FK controls, see
    :func:`.rigify.rigify_control_roles`; other rigs with ``DEF-``/``ORG-`` layers are mapped on
    the deform layer first), Mixamo (any ``namespace:`` prefix), CMU BVH exports, Unity/VRM humanoid and
    VRoid (``J_Bip_*``) names, with ``.L``/``_L``/``Left``/``left``/``L_`` side conventions.

    Args:
        bones: (bone name, parent name or None) pairs, in any order.
        use_presets: Try the bundled exact presets first (see :func:`load_presets`).

    Returns:
        The role map; ``source`` says whether a preset or the heuristics produced it.

    Raises:
        InvalidInputError: If names repeat or a parent is not in the list.
        MappingError: Naming the roles not found (with the candidates considered) or the
            roles claimed by several unrelated bones.
    """
    from .detect import detect_in_family
    from .rigify import is_rigify_generated, rigify_control_roles

    tree = BoneTree(bones)
    if is_rigify_generated(tree):
        # Its DEF-/ORG- bones follow the controls through constraints: keys must go on the controls,
        # read from the hierarchy (the spine and neck counts follow the metarig it was generated from).
        return RoleMap(rigify_control_roles(tree), "auto:rigify-controls")
    if use_presets:
        for preset in load_presets().values():
            if _preset_fits(preset, tree):
                return preset
    infos = {name: parse_name(name) for name in tree.order}
    present = {i.family for i in infos.values() if i.kind}
    best: MappingError | None = None
    # Deform bones first (Rigify's DEF- layer is what skins the mesh), then plain names, then ORG-.
    for family in [f for f in ("DEF", "", "ORG") if f in present]:
        try:
            return RoleMap(detect_in_family(tree, infos, family), "auto")
        except MappingError as exc:
            if exc.duplicates:
                raise
            if best is None or len(exc.missing) < len(best.missing):
                best = exc
    if best is None:
        best = MappingError(_required_roles(), {"any role": list(tree.order)})
    raise best
