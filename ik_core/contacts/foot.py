# SPDX-License-Identifier: GPL-3.0-or-later
"""A foot planted by its ankle and by the ball of the foot, which stays as the heel rises."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..errors import InvalidInputError
from .detection import ContactOptions, detect_contacts
from .ground import keep_above_ground, lift_above_ground
from .inputs import as_mask, as_segment, check_finite
from .planting import aim_tip, plant_targets

__all__ = ["PlantedFoot", "plant_foot"]


class PlantedFoot(NamedTuple):
    """Targets of a foot chain with its contacts planted.

    Attributes:
        ankle: (N, 3) planted world positions of the ankle, the foot above the ground [m].
        rotations: (N, 3, 3) planted world rotations of the foot.
        contact: (N,) the ankle's contact frames (it is held on them).
        ball_contact: (N,) the ball's contact frames (the foot turns about the ankle to keep it).
    """

    ankle: np.ndarray
    rotations: np.ndarray
    contact: np.ndarray
    ball_contact: np.ndarray


def _contacts(name: str, given: np.ndarray | None, path: np.ndarray, frame_time: float, ground: float,
              rest: float, options: ContactOptions | None) -> np.ndarray:
    """The ``given`` (N,) contact flags, or those detected on ``path`` (N, 3) when None."""
    if given is None:
        return detect_contacts(path, frame_time, ground, rest, options)
    c = np.asarray(given)
    if c.shape != (path.shape[0],):
        raise InvalidInputError(f"{name} must have shape ({path.shape[0]},), one flag per frame, got {c.shape}")
    return as_mask(name, c, path.shape[0])


def plant_foot(
    ankle: np.ndarray,
    rotations: np.ndarray,
    ball: np.ndarray,
    frame_time: float,
    ground: float = 0.0,
    rest_height: float = 0.0,
    ball_rest_height: float = 0.0,
    options: ContactOptions | None = None,
    blend_time: float = 0.1,
    contact: np.ndarray | None = None,
    ball_contact: np.ndarray | None = None,
) -> PlantedFoot:
    """Plant a foot chain's target (the ankle, with the foot's rotation) and the ball of its foot.

    A captured foot lands on its heel, stands, then rolls over its ball while the heel rises and
    the ankle moves on; the ball stays until the toe-off. The ankle is held over its own
    contacts (:func:`~ik_core.contacts.plant_targets`, which end as the heel rises), the ball
    over its contacts (detected on the ball's path, lasting through the heel rise), and the foot
    turns about the ankle so its ball stays on the held ball
    (:func:`~ik_core.contacts.aim_tip`). Then the ankle is kept ``rest_height`` above the ground
    and, where the ball would be below ``ball_rest_height``, the whole foot is lifted
    (:func:`~ik_core.contacts.lift_above_ground`: pitching it would slide the ball). Frames
    outside both kinds of contact keep the animation's position and rotation, up to that lift.

    Args:
        ankle: (N, 3) animated world positions of the ankle (the chain's target) [m].
        rotations: (N, 3, 3) animated world rotations of the foot (or deltas from its reference pose).
        ball: (3,) offset of the ball of the foot from the ankle in the frame ``rotations`` act on
            [m]: the world ball is ``ankle + rotations @ ball``.
        frame_time: Seconds per frame (> 0).
        ground: Height of the ground plane [m].
        rest_height: Height of the ankle above the ground when the foot stands flat [m].
        ball_rest_height: Height of the ball above the ground when it rests on it [m].
        options: Detection thresholds of both contacts; defaults when None.
        blend_time: Duration of each release inside a contact [s].
        contact: (N,) the ankle's contact frames (a stored, edited list); None: detected.
        ball_contact: (N,) the ball's contact frames; None: detected.

    Returns:
        The planted foot.

    Raises:
        InvalidInputError: On wrong shapes, NaN or infinite values, a zero-length ``ball``, or a
            non-positive frame time.
    """
    A, R, b = as_segment("ankle", ankle, rotations, "ball", ball)
    check_finite("ball_rest_height", ball_rest_height)
    ball_path = A + np.einsum("nij,j->ni", R, b)
    c = _contacts("contact", contact, A, frame_time, ground, rest_height, options)
    bc = _contacts("ball_contact", ball_contact, ball_path, frame_time, ground, ball_rest_height, options)
    held = plant_targets(A, c, frame_time, R, blend_time)
    target = keep_above_ground(held.positions, ground, rest_height)
    # The ball is held where the animation put it down and released onto the animation's ball;
    # outside its contacts the foot turns toward the animation's ball wherever the ankle was held
    # or clamped (where the ankle is as animated, that changes nothing), so a held ankle's
    # release does not swing the ball.
    held_ball = plant_targets(ball_path, bc, frame_time, blend_time=blend_time)
    foot = aim_tip(target, held.rotations, b, held_ball.positions)
    return PlantedFoot(lift_above_ground(target, foot, b, ground, ball_rest_height), foot, c, bc)
