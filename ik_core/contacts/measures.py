# SPDX-License-Identifier: GPL-3.0-or-later
"""Foot-skate measures: how far an effector slides near the ground, and how deep it goes below it.

The common foot-skate measure of motion synthesis and retargeting: per frame, the horizontal
displacement of a foot joint since the frame before, weighted by ``clip(2 - 2^(h/H), 0, 1)``
(``h`` its height above its ground level, ``H`` the near-ground band), over the frames within the
band; and the skate ratio, the share of contact frames on which the joint slides faster than a
speed. ``bench/bench_contacts.py`` and the chain bake's report both measure with these.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..errors import InvalidInputError
from .inputs import as_trajectory, check_positive

__all__ = ["BAND", "SLIDE_SPEED", "FootSkate", "foot_skate", "planted_frames"]

BAND = 0.033  # near-ground band H of the measure [m]
SLIDE_SPEED = 0.2  # horizontal speed above which a near-ground effector slides [m/s]


class FootSkate(NamedTuple):
    """Foot skate and ground penetration of one or more effectors over a take.

    Attributes:
        skate: Mean weighted horizontal displacement per frame over the near-ground frames
            [m/frame] (0 when no frame is near the ground).
        skate_ratio: Share of the contact frames on which the effector slides, in [0, 1]
            (0 when there is no contact frame).
        near_ratio: Share of the near-ground frames on which it slides, in [0, 1].
        contact_frames: Contact frames counted (frame 0, which has no frame before, excluded).
        penetration: Deepest point below the ground level over all frames [m], >= 0.
    """

    skate: float
    skate_ratio: float
    near_ratio: float
    contact_frames: int
    penetration: float


def _levels(name: str, ground: object, shape: tuple[int, ...]) -> np.ndarray:
    """``ground`` broadcast to ``shape`` (a height per frame and effector) [m], checked finite."""
    try:
        g = np.broadcast_to(np.asarray(ground, dtype=float), shape)
    except (TypeError, ValueError):
        raise InvalidInputError(
            f"{name} must be a number or broadcast to {shape} (a height per frame and effector), "
            f"got shape {np.shape(ground)}"
        ) from None
    if not np.all(np.isfinite(g)):
        raise InvalidInputError(f"{name} has NaN or infinite values; every ground height must be finite")
    return g


def _checked(
    name: str, positions: object, frame_time: float, ground: object, band: float, slide_speed: float
) -> tuple[np.ndarray, np.ndarray]:
    """The checked positions (N, 3) or (N, F, 3) and their heights above the ground levels (N,) or (N, F) [m]."""
    p = as_trajectory(name, positions)
    check_positive("frame_time", frame_time)
    check_positive("band", band)
    check_positive("slide_speed", slide_speed)
    return p, p[..., 2] - _levels("ground", ground, p.shape[:-1])


def _horizontal_steps(p: np.ndarray) -> np.ndarray:
    """(N-1, ...) horizontal displacement from frame t-1 to frame t [m]."""
    return np.linalg.norm(np.diff(p[..., :2], axis=0), axis=-1)


def planted_frames(
    reference: np.ndarray,
    frame_time: float,
    ground: float | np.ndarray = 0.0,
    band: float = BAND,
    slide_speed: float = SLIDE_SPEED,
) -> np.ndarray:
    """Frames on which a reference motion (the capture) has an effector planted.

    Frame t is planted when the effector is within ``band`` of its ground level and moved
    horizontally slower than ``slide_speed`` since frame t-1 (frame 0 is never planted: it has
    no frame before).

    Args:
        reference: (N, 3) or (N, F, 3) world positions of F effectors [m].
        frame_time: Seconds per frame (> 0).
        ground: Ground level of each effector: a number, or broadcastable to (N,) or (N, F) [m].
        band: Near-ground band [m] (> 0).
        slide_speed: Horizontal speed at which an effector slides [m/s] (> 0).

    Returns:
        (N,) or (N, F) booleans.

    Raises:
        InvalidInputError: On wrong shapes, NaN or infinite values, or non-positive numbers.
    """
    p, h = _checked("reference", reference, frame_time, ground, band, slide_speed)
    out = np.zeros(p.shape[:-1], dtype=bool)
    out[1:] = (h[1:] < band) & (_horizontal_steps(p) / frame_time < slide_speed)
    return out


def foot_skate(
    positions: np.ndarray,
    frame_time: float,
    ground: float | np.ndarray = 0.0,
    contact: np.ndarray | None = None,
    band: float = BAND,
    slide_speed: float = SLIDE_SPEED,
) -> FootSkate:
    """Skate, skate ratios and ground penetration of effector positions over a take.

    Args:
        positions: (N, 3) or (N, F, 3) world positions of F effectors [m].
        frame_time: Seconds per frame (> 0).
        ground: Ground level of each effector (where it rests when planted): a number, or
            broadcastable to (N,) or (N, F) [m].
        contact: Contact frames, (N,) or (N, F) booleans like ``positions`` without its last
            axis (e.g. :func:`planted_frames` of the capture, or a chain's contact intervals);
            frame 0 is not counted. None: the effector's own near-ground frames.
        band: Near-ground band H of the weight ``2 - 2^(h/H)`` [m] (> 0).
        slide_speed: Horizontal speed above which a frame slides [m/s] (> 0).

    Returns:
        The measures (lengths in metres).

    Raises:
        InvalidInputError: On wrong shapes, NaN or infinite values, or non-positive numbers.
    """
    p, h_all = _checked("positions", positions, frame_time, ground, band, slide_speed)
    if contact is None:
        planted = h_all < band
    else:
        planted = np.asarray(contact)
        if planted.shape != p.shape[:-1]:
            raise InvalidInputError(
                f"contact must have shape {p.shape[:-1]}, one flag per frame (and effector), got {planted.shape}"
            )
        planted = planted.astype(bool)
    penetration = max(0.0, float(np.max(-h_all)))
    h = h_all[1:]
    step = _horizontal_steps(p)
    near = h < band
    weight = np.clip(2.0 - 2.0 ** (h / band), 0.0, 1.0)
    slides = step / frame_time > slide_speed
    counted = planted[1:]
    return FootSkate(
        skate=float((step * weight)[near].mean()) if near.any() else 0.0,
        skate_ratio=float(slides[counted].mean()) if counted.any() else 0.0,
        near_ratio=float(slides[near].mean()) if near.any() else 0.0,
        contact_frames=int(counted.sum()),
        penetration=penetration,
    )
