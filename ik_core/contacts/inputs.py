# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks of the trajectories, masks and numbers the contact functions take, with messages that say what is valid."""

from __future__ import annotations

import numpy as np

from ..errors import InvalidInputError

__all__ = ["as_mask", "as_segment", "as_trajectory", "check_finite", "check_non_negative", "check_positive"]


def as_trajectory(
    name: str, value: object, width: int = 3, frames: int | None = None, single: bool = False
) -> np.ndarray:
    """A finite float array of shape (N, ``width``) (or (N, L, ``width``)), N >= 1.

    Args:
        name: Argument name used in messages.
        value: Array-like to check.
        width: Size of the last axis (3 for positions).
        frames: Required N, or None for any.
        single: Only (N, ``width``): one effector.

    Returns:
        The array as float64 (a new array when converted).

    Raises:
        InvalidInputError: On a wrong shape, no frames, or NaN or infinite entries.
    """
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{name} must be an array of numbers, got {type(value).__name__}") from None
    if arr.ndim not in ((2,) if single else (2, 3)) or arr.shape[-1] != width or arr.shape[0] < 1:
        shapes = f"(N, {width})" if single else f"(N, {width}) or (N, L, {width})"
        raise InvalidInputError(f"{name} must have shape {shapes} with N >= 1 frames, got {arr.shape}")
    if frames is not None and arr.shape[0] != frames:
        raise InvalidInputError(f"{name} must have {frames} frames (one per frame), got {arr.shape[0]}")
    if not np.all(np.isfinite(arr)):
        bad = np.flatnonzero(~np.all(np.isfinite(arr.reshape(arr.shape[0], -1)), axis=1))
        raise InvalidInputError(
            f"{name} has NaN or infinite values on {bad.size} frame(s) (first: {int(bad[0])}); "
            "fill or drop those frames first (every value must be a finite number)"
        )
    return arr


def as_segment(
    base_name: str, base: object, rotations: object, tip_name: str, tip: object, nonzero: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A rigid segment over a take: its base's path (N, 3), rotations (N, 3, 3) and tip offset (3,).

    Args:
        base_name: Name of the base argument in messages.
        base: (N, 3) world positions of the segment's base joint [m].
        rotations: (N, 3, 3) world rotations of the segment.
        tip_name: Name of the tip argument in messages.
        tip: (3,) tip offset from the base in the frame ``rotations`` act on [m].
        nonzero: Refuse a zero-length tip (one that gives no direction to aim).

    Returns:
        The three as float arrays.

    Raises:
        InvalidInputError: On wrong shapes, NaN or infinite values, or (``nonzero``) a zero-length tip.
    """
    B = as_trajectory(base_name, base, single=True)
    n = B.shape[0]
    R = np.asarray(rotations, dtype=float)
    if R.shape != (n, 3, 3) or not np.all(np.isfinite(R)):
        raise InvalidInputError(f"rotations must be finite with shape ({n}, 3, 3), one per frame, got {R.shape}")
    t = np.asarray(tip, dtype=float)
    if t.shape != (3,) or not np.all(np.isfinite(t)) or (nonzero and np.linalg.norm(t) < 1e-12):
        kind = "finite non-zero" if nonzero else "finite"
        raise InvalidInputError(f"{tip_name} must be a {kind} 3-vector, got {tip!r}")
    return B, R, t


def as_mask(name: str, value: object, frames: int) -> np.ndarray:
    """A boolean (N,) or (N, L) array with N = ``frames``.

    Raises:
        InvalidInputError: On a wrong shape or values other than booleans (or 0 and 1).
    """
    arr = np.asarray(value)
    if arr.ndim not in (1, 2) or arr.shape[0] != frames:
        raise InvalidInputError(
            f"{name} must have shape ({frames},) or ({frames}, L), one flag per frame, got {arr.shape}"
        )
    if arr.dtype != bool:
        if not np.issubdtype(arr.dtype, np.number) or not np.all(np.isin(arr, (0, 1))):
            raise InvalidInputError(f"{name} must hold booleans (True/False or 1/0)")
        arr = arr.astype(bool)
    return arr


def check_positive(name: str, value: float) -> None:
    """Raise :class:`InvalidInputError` unless ``value`` is a finite number > 0."""
    if not (isinstance(value, int | float | np.floating | np.integer) and np.isfinite(value) and value > 0):
        raise InvalidInputError(f"{name} must be a finite number > 0, got {value!r}")


def check_non_negative(name: str, value: float) -> None:
    """Raise :class:`InvalidInputError` unless ``value`` is a finite number >= 0."""
    if not (isinstance(value, int | float | np.floating | np.integer) and np.isfinite(value) and value >= 0):
        raise InvalidInputError(f"{name} must be a finite number >= 0, got {value!r}")


def check_finite(name: str, value: float) -> None:
    """Raise :class:`InvalidInputError` unless ``value`` is a finite number."""
    if not (isinstance(value, int | float | np.floating | np.integer) and np.isfinite(value)):
        raise InvalidInputError(f"{name} must be a finite number, got {value!r}")
