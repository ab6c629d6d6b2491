# SPDX-License-Identifier: GPL-3.0-or-later
"""The project's exception hierarchy: every error raised by ``ik_core`` derives from one root."""

from __future__ import annotations

from collections.abc import Iterable, Mapping


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

    The message lists the valid names so the caller can correct the typo.
    """

    def __init__(self, kind: str, name: str, valid: Iterable[str]) -> None:
        self.kind = kind
        self.name = name
        self.valid = tuple(valid)
        shown = ", ".join(repr(v) for v in self.valid[:40])
        more = "" if len(self.valid) <= 40 else f", ... ({len(self.valid)} in all)"
        super().__init__(f"unknown {kind} {name!r}; valid {kind}s: {shown}{more}")

    def __str__(self) -> str:  # LookupError would otherwise repr() the message
        return str(self.args[0])


class URDFError(ArticulateError, ValueError):
    """A URDF document is malformed; the message names the offending element."""


class ColladaError(ArticulateError, ValueError):
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
