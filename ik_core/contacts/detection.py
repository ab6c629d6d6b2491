# SPDX-License-Identifier: GPL-3.0-or-later
"""Contact detection: the frames where an effector rests on the ground, from its world trajectory."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError
from .inputs import as_trajectory, check_finite, check_non_negative, check_positive

__all__ = ["ContactOptions", "contact_intervals", "detect_contacts"]


@dataclass(frozen=True)
class ContactOptions:
    """Thresholds of contact detection (defaults fit feet and toes of walking people).

    A contact starts on a frame where the effector is within ``height`` of its resting height
    and slower than ``speed``, and lasts while it stays within ``release`` times both (the
    hysteresis keeps noise near a threshold from toggling the contact every frame). Gaps
    shorter than ``min_gap`` between two contacts are closed, then contacts shorter than
    ``min_duration`` are dropped, so a single-frame blip neither splits a contact nor makes one.

    The speed is that of a foot that stands: a planted foot of motion capture moves a few cm/s,
    while a foot that glides (a skid, a heel sliding into a turn) or rolls onto its ball (the
    heel rise) moves 10-40 cm/s; holding those still would leave the held target to catch up
    with the animation at its release, faster than the animation ever moved. Contacts therefore
    end as the heel rises, and the ball of a foot is planted by its own contacts, detected on
    the ball's path (:func:`~ik_core.contacts.plant_foot`).

    Attributes:
        height: Largest height above the resting height at which a contact starts [m].
        speed: Largest speed at which a contact starts [m/s]. Foot trackers, whose jitter reads as
            motion, need a looser one (``ik_core.humanoid.options.TRACKER_CONTACTS``).
        release: Factor >= 1 on ``height`` and ``speed`` beyond which a contact ends.
        speed_window: Time over which the speed is measured (central difference across it), so
            frame-to-frame noise of the trajectory does not read as motion [s].
        min_duration: Shortest contact kept [s].
        min_gap: Gaps between contacts shorter than this are closed [s].

    Raises:
        InvalidInputError: On a negative, zero (where it must be positive) or non-finite value,
            or ``release`` below 1.
    """

    height: float = 0.033
    speed: float = 0.1
    release: float = 1.5
    speed_window: float = 0.1
    min_duration: float = 0.1
    min_gap: float = 0.05

    def __post_init__(self) -> None:
        for name in ("height", "speed", "release"):
            check_positive(f"ContactOptions.{name}", getattr(self, name))
        for name in ("speed_window", "min_duration", "min_gap"):
            check_non_negative(f"ContactOptions.{name}", getattr(self, name))
        if self.release < 1.0:
            raise InvalidInputError(
                f"ContactOptions.release must be >= 1 (a contact ends beyond release times the thresholds "
                f"that start it), got {self.release!r}"
            )


def _speeds(positions: np.ndarray, frame_time: float, window: float) -> np.ndarray:
    """(N,) speed [m/s] from the displacement across ``window`` seconds around each frame."""
    n = positions.shape[0]
    if n < 2:
        return np.zeros(n)
    k = max(int(round(window / (2.0 * frame_time))), 1)
    idx = np.arange(n)
    after, before = np.minimum(idx + k, n - 1), np.maximum(idx - k, 0)
    return np.linalg.norm(positions[after] - positions[before], axis=-1) / ((after - before) * frame_time)


def contact_intervals(contact: np.ndarray) -> np.ndarray:
    """The runs of True of a (N,) mask as (K, 2) ``[start, stop)`` frame indices, in order.

    Args:
        contact: (N,) booleans.

    Returns:
        (K, 2) integer array; empty (0, 2) when there is no contact.
    """
    c = np.asarray(contact, dtype=bool).ravel()
    edges = np.diff(np.concatenate([[False], c, [False]]).astype(np.int8))
    return np.stack([np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)], axis=1)


def detect_contacts(
    positions: np.ndarray,
    frame_time: float,
    ground: float = 0.0,
    rest_height: float = 0.0,
    options: ContactOptions | None = None,
) -> np.ndarray:
    """Frames on which an effector is in contact with a ground plane (world z up).

    Args:
        positions: (N, 3) world positions of the effector over the take [m].
        frame_time: Seconds per frame (> 0).
        ground: Height of the ground plane [m].
        rest_height: Height of the effector above the ground when it rests on it (an ankle's
            height over the sole, 0 for a point on the sole) [m].
        options: Thresholds; defaults when None.

    Returns:
        (N,) booleans, True on contact frames (see :func:`contact_intervals` for the intervals).

    Raises:
        InvalidInputError: On a wrong shape, NaN or infinite positions, or a non-positive frame time.
    """
    o = options or ContactOptions()
    p = as_trajectory("positions", positions, single=True)
    check_positive("frame_time", frame_time)
    check_finite("ground", ground)
    check_finite("rest_height", rest_height)
    lift = p[:, 2] - (ground + rest_height)
    speed = _speeds(p, frame_time, o.speed_window)
    enter = (lift < o.height) & (speed < o.speed)
    stay = (lift < o.release * o.height) & (speed < o.release * o.speed)
    # Hysteresis: a frame is in contact when it lies in a run of `stay` frames at or after that
    # run's first `enter` frame (an exit needs the looser thresholds to be crossed).
    entered = np.cumsum(enter)
    starts = stay & ~np.concatenate([[False], stay[:-1]])
    base = np.maximum.accumulate(np.where(starts, np.concatenate([[0], entered[:-1]]), 0))
    contact = stay & (entered > base)
    gap = int(round(o.min_gap / frame_time))
    shortest = int(round(o.min_duration / frame_time))
    runs = contact_intervals(contact)
    if gap > 0 and len(runs) > 1:
        for (_, stop), (start, _) in zip(runs[:-1], runs[1:]):
            if start - stop < gap:
                contact[stop:start] = True
        runs = contact_intervals(contact)
    for start, stop in runs:
        if stop - start < shortest:
            contact[start:stop] = False
    return contact
