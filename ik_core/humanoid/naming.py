# SPDX-License-Identifier: GPL-3.0-or-later
"""Bone-name analysis for role detection: prefix family, side, core word and body-part class."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["BoneName", "CLASS_WORDS", "parse_name"]

# Core word (tokens joined, lower case, no side, numbers or prefixes) -> body-part class.
# "shoulder" is its own class: Mixamo and Unity use it for the clavicle, 3ds Max exports
# (the CMU files here) for the upper arm; the hierarchy decides which.
CLASS_WORDS: dict[str, tuple[str, ...]] = {
    "pelvis": ("hips", "hip", "pelvis"),
    "pelvis_side": ("pelvis", "hipjoint", "hipbone"),
    "spine": ("spine", "chest", "upperchest", "lowerback", "back", "torso", "abdomen", "waist"),
    "neck": ("neck", "lowerneck", "upperneck"),
    "head": ("head",),
    "clavicle": ("clavicle", "collar", "collarbone"),
    "shoulder": ("shoulder",),
    "upper_arm": ("upperarm", "arm", "uparm", "humerus"),
    "forearm": ("forearm", "lowerarm", "elbow", "lowarm"),
    "hand": ("hand", "wrist"),
    "thigh": ("upleg", "upperleg", "thigh", "hip", "femur"),
    "shin": ("leg", "lowerleg", "shin", "calf", "knee", "lowleg"),
    "foot": ("foot", "ankle"),
    "toe": ("toe", "toes", "toebase", "ball"),
}
_SIDED = {
    "pelvis_side",
    "clavicle",
    "shoulder",
    "upper_arm",
    "forearm",
    "hand",
    "thigh",
    "shin",
    "foot",
    "toe",
}
_UNSIDED = {"pelvis", "spine", "neck", "head"}

# A bone carrying one of these words is a helper, a control or a finger, never a role bone.
_EXCLUDE = frozenset(
    "end nub site top tip twist roll ik fk pole target tweak mch ctrl control socket parent master "
    "helper share null bend vis prop weapon hair eye eyes jaw tongue teeth ear breast bust heel "
    "thumb index middle ring pinky little finger fingers palm f metacarpal carpal "
    "bigtoe nose lip brow cheek chin skirt tail wing sec adj tmp".split()
)
# Words that carry no meaning for the role (exporter decorations).
_NOISE = frozenset("j bip bip01 bip001 c cc base mixamorig b jnt bind bn skin".split())
_FAMILIES = {"def": "DEF", "org": "ORG", "mch": "MCH", "drv": "DRV"}
_LEFT, _RIGHT = ("l", "left"), ("r", "right")
_VOCAB = frozenset(w for words in CLASS_WORDS.values() for w in words)
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


@dataclass(frozen=True)
class BoneName:
    """What a bone name says about the bone.

    Attributes:
        name: The full name.
        family: Rig layer prefix ('DEF', 'ORG', 'MCH', ...) or '' for none.
        side: 'l', 'r' or None.
        core: Lower-case core word with side, numbers and decorations removed ('upperarm').
        number: Trailing number (spine.003 -> 3, Spine1 -> 1) or None.
        kind: Body-part class (a key of :data:`CLASS_WORDS`), or None when unknown or excluded.
        excluded: True for helpers, controls, fingers and end bones.
    """

    name: str
    family: str
    side: str | None
    core: str
    number: int | None
    kind: str | None
    excluded: bool


def _tokens(name: str) -> list[str]:
    pieces = re.split(r"[\s._\-:|]+", name)
    return [t.lower() for piece in pieces for t in _CAMEL.findall(piece)]


def _split_glued_side(token: str) -> tuple[str | None, str]:
    """'lhand' -> ('l', 'hand'), 'lefthand' -> ('l', 'hand'); unknown remainders stay whole."""
    for side, prefixes in (("l", ("left", "l")), ("r", ("right", "r"))):
        for prefix in prefixes:
            rest = token[len(prefix) :]
            if token.startswith(prefix) and rest in _VOCAB:
                return side, rest
    return None, token


def parse_name(name: str) -> BoneName:
    """Analyse one bone name.

    Args:
        name: Bone name such as 'mixamorig:LeftForeArm', 'DEF-upper_arm.L.001' or 'lhand'.

    Returns:
        The analysis; ``kind`` is None when the name matches no body part.
    """
    base = name.rsplit(":", 1)[-1]  # Mixamo and FBX namespaces: 'mixamorig:Hips', 'rig1:hand_l'
    toks = _tokens(base)
    family = ""
    if toks and toks[0] in _FAMILIES and re.match(r"(?i)(def|org|mch|drv)[-_.]", base):
        family = _FAMILIES[toks.pop(0)]
    if len(toks) >= 2 and toks[0] == "j" and toks[1] in ("sec", "adj"):
        family = "VRM_" + toks[1].upper()  # VRoid's spring and face helpers
    side: str | None = None
    words: list[str] = []
    number = None
    for tok in toks:
        if tok in _LEFT or tok in _RIGHT:
            side = side or ("l" if tok in _LEFT else "r")
        elif tok.isdigit():
            number = int(tok)
        elif tok in _NOISE:
            continue
        else:
            glued, rest = _split_glued_side(tok)
            if glued and side is None:
                side = glued
            words.append(rest)
    excluded = family in ("MCH", "DRV", "VRM_SEC", "VRM_ADJ") or any(w in _EXCLUDE for w in words)
    core = "".join(words)
    kind = None
    if not excluded:
        wanted = _SIDED if side else _UNSIDED
        for cls, vocab in CLASS_WORDS.items():
            if cls in wanted and core in vocab:
                kind = cls
                break
    return BoneName(name, family, side, core, number, kind, excluded)
