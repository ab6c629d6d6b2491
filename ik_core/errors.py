# SPDX-License-Identifier: GPL-3.0-or-later
"""The project's exception hierarchy: every error raised by ``ik_core`` derives from one root."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence

# Names listed in full up to this many; beyond it only the nearest ones are suggested.
LIST_ALL_UP_TO = 20
_SEPARATORS = re.compile(r"[._\-\s:|]+")
_SIDE_END = re.compile(r"(?:^|[._\-\s:|])(left|right|l|r)$")
_SIDE_START = re.compile(r"^(left|right|l|r)[._\-\s:|]")


def _side_and_stem(name: str) -> tuple[str, str]:
    """('l', 'r' or '', the name without side, separators or namespace), lower case: ``hand.L`` -> ('l', 'hand')."""
    low = name.lower().rsplit(":", 1)[-1]  # without a namespace such as Mixamo's "mixamorig:"
    side, stem = "", low
    if match := _SIDE_END.search(low):
        side, stem = match.group(1)[0], low[: match.start()]
    elif match := _SIDE_START.match(low):
        side, stem = match.group(1)[0], low[match.end():]
    else:
        for word in ("left", "right"):
            if word in low:
                side, stem = word[0], low.replace(word, "", 1)
                break
    return side, _SEPARATORS.sub("", stem)


def close_names(name: str, valid: Iterable[str], n: int = 3) -> list[str]:
    """The names in ``valid`` nearest to ``name``, best first (at most ``n``; none when nothing is near).

    Case is ignored, and sides are understood in the usual spellings (``hand.L``, ``hand_l``,
    ``LeftHand``, ``L_hand``): a name that differs only in case or separators comes first, then
    the same name on the other side, then names that are alike letter by letter (``difflib``).
    """
    name = str(name)
    side, stem = _side_and_stem(name)
    ranked: list[tuple[int, float, str]] = []
    for v in dict.fromkeys(str(v) for v in valid):
        v_side, v_stem = _side_and_stem(v)
        if v.lower() == name.lower():
            tier = 0
        elif v_stem == stem and v_side == side:
            tier = 1
        elif v_stem == stem and stem:
            tier = 2
        else:
            tier = 3
        ratio = difflib.SequenceMatcher(None, f"{stem}{side}", f"{v_stem}{v_side}").ratio()
        if tier < 3 or ratio >= 0.6:
            # Same side first among names alike letter by letter: hnd.L suggests hand.L before hand.R.
            ranked.append((tier, -ratio - 0.01 * (v_side == side), v))
    ranked.sort()
    # A name that matches but for case, separators or side hides the merely similar ones.
    best = ranked[0][0] if ranked else 3
    return [v for tier, _ratio, v in ranked[:n] if best == 3 or tier <= best + 1]


def _quoted_list(names: Sequence[str], last: str = "or") -> str:
    quoted = [repr(v) for v in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} {last} {quoted[-1]}"


def name_hint(name: str, valid: Iterable[str], kind: str) -> str:
    """The end of an unknown-name message: the valid names when few, else the nearest ones.

    ``"valid bones: 'a', 'b'; did you mean 'a'?"`` for a short list,
    ``"did you mean 'hand.L' or 'hand.R'? (159 bones)"`` for a long one, and a few examples
    when no name is near. ``kind`` is singular ("bone"); it gets an "s" for the plural.
    """
    valid = tuple(dict.fromkeys(str(v) for v in valid))
    if not valid:
        return f"there are no {kind}s"
    near = close_names(name, valid)
    guess = f"did you mean {_quoted_list(near)}?" if near else ""
    if len(valid) <= LIST_ALL_UP_TO:
        listed = f"valid {kind}s: {', '.join(repr(v) for v in valid)}"
        return f"{listed}; {guess}" if guess else listed
    if guess:
        return f"{guess} ({len(valid)} {kind}s)"
    return f"no {kind} has a similar name ({len(valid)} {kind}s, such as {_quoted_list(valid[:5])})"


class ArticulateError(Exception):
    """Root of every error raised on purpose by Articulate."""


class InvalidInputError(ArticulateError, ValueError):
    """An argument has the wrong shape, type or value (NaN, infinite, out of range)."""


class SkeletonError(ArticulateError, ValueError):
    """A skeleton, joint or effector definition is inconsistent."""


class LimitError(ArticulateError, ValueError):
    """A joint limit is malformed (for example lower > upper)."""


class UnknownNameError(ArticulateError, LookupError):
    """A joint, effector, role or preset name does not exist.

    The message lists the valid names when they are few and the nearest ones otherwise (see
    :func:`name_hint`), so the caller can correct the typo.
    """

    def __init__(self, kind: str, name: str, valid: Iterable[str]) -> None:
        self.kind = kind
        self.name = name
        self.valid = tuple(valid)
        super().__init__(f"unknown {kind} {name!r}; {name_hint(name, self.valid, kind)}")

    def __str__(self) -> str:  # LookupError would otherwise repr() the message
        return str(self.args[0])


class URDFError(ArticulateError, ValueError):
    """A URDF document is malformed; the message names the offending element."""


class DependencyError(ArticulateError, ImportError):
    """A Python package Articulate bundles (xacro, mcap) can be neither imported nor found among its wheels."""


class MeshError(ArticulateError, ValueError):
    """A mesh file (STL, Collada) cannot be read; the message names the file."""


class ColladaError(MeshError):
    """A Collada (.dae) document cannot be read; the message names the file and the element."""


def require_finite(name: str, value: object) -> None:
    """Raise :class:`InvalidInputError` if ``value`` holds NaN or infinite entries.

    Args:
        name: Argument name used in the message.
        value: Array-like to check.

    Raises:
        InvalidInputError: If any entry is not finite.
    """
    import numpy as np

    arr = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(arr)):
        bad = int(np.count_nonzero(~np.isfinite(arr)))
        raise InvalidInputError(
            f"{name} contains {bad} NaN or infinite value(s); all entries must be finite numbers"
        )


class MappingError(ArticulateError, LookupError):
    """Bones could not be mapped to humanoid roles.

    Attributes:
        missing: Roles that were not found.
        candidates: For each missing or ambiguous role, the bone names that were considered.
        duplicates: Roles claimed by several unrelated bones, with those bones.
    """

    def __init__(
        self,
        missing: Iterable[str] = (),
        candidates: Mapping[str, Iterable[str]] | None = None,
        duplicates: Mapping[str, Iterable[str]] | None = None,
    ) -> None:
        self.missing = tuple(missing)
        self.candidates = {k: tuple(v) for k, v in (candidates or {}).items()}
        self.duplicates = {k: tuple(v) for k, v in (duplicates or {}).items()}
        parts = []
        if self.missing:
            parts.append("could not find roles " + ", ".join(self.missing))
        if self.duplicates:
            parts.append(
                "duplicate roles "
                + "; ".join(f"{r}: {', '.join(map(repr, b))}" for r, b in self.duplicates.items())
            )
        shown = []
        for role, names in self.candidates.items():
            listed = ", ".join(repr(n) for n in names[:12]) or "no bone with a matching name"
            shown.append(f"{role}: {listed}{' ...' if len(names) > 12 else ''}")
        message = "; ".join(parts) or "humanoid mapping failed"
        if shown:
            message += ". Candidates considered: " + "; ".join(shown)
        super().__init__(message)

    def __str__(self) -> str:  # LookupError would otherwise repr() the message
        return str(self.args[0])
