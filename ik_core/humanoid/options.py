# SPDX-License-Identifier: GPL-3.0-or-later
"""Tuning options of the full-body solve."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..contacts import ContactOptions
from ..errors import InvalidInputError
from .gait import GaitOptions

__all__ = ["GaitOptions", "SolveOptions", "TRACKER_CONTACTS"]

# Contacts of foot trackers start at a looser speed than an animation's (ContactOptions' default):
# 2 mm of tracker jitter reads as about 5 cm/s over the speed window, so the tighter default
# leaves held feet released on jitter (the `feet` rows of bench_contacts: skate ratio 12-25 %
# at 0.25 m/s, 28-38 % at 0.1 m/s).
TRACKER_CONTACTS = ContactOptions(speed=0.25)


@dataclass(frozen=True)
class SolveOptions:
    """Tuning of the body solve (defaults fit ordinary standing, walking and crouching).

    Attributes:
        heading_smoothing: Gaussian sigma of the body heading taken from the head [s].
        pelvis_bend: Share of the head's pitch and roll taken by the pelvis.
        spine_bend: Share of the head's pitch and roll taken by the spine.
        spine_twist: Share of the head's turn, relative to the body heading, taken by the spine.
        crouch_lean: Forward trunk lean per metre the head drops below standing [rad/m].
        neck_share: Share of the chest-to-head rotation taken by the neck bones (the head bone
            itself takes the rest).
        spine_stiffness: Stiffness in [0, 1) of each spine joint from the pelvis up (missing
            entries 0): the spine's share of bend and twist is spread in proportion to 1 - stiffness.
        elbow_pole: (outward, forward, up) direction the elbows bend toward, in the chest frame.
        elbow_from_hand: Weight of the hand-orientation cue against ``elbow_pole`` (0..1).
        forearm_twist: Share of the hand's twist taken by the forearm (0..1).
        pole_smoothing: Gaussian sigma of the elbow and knee bend directions over time [s].
        leg_soft: Soft-reach band of the legs [m]: the heel rises instead of the knee snapping straight.
        clavicle_share: Share of the hand's swing about the clavicle taken by the clavicle.
        clavicle_max: Largest clavicle swing [rad].
        clavicle_reach: Largest extra clavicle swing used to bring an out-of-reach hand target
            within reach [rad].
        gait: Footstep planning parameters.
        plant: Detect the feet's contacts on their targets (planned steps or foot trackers) and
            plant them: held where they landed, flat, blended in and out, never below the floor.
        contacts: Contact detection thresholds of tracked feet, used when ``plant`` is on
            (:data:`TRACKER_CONTACTS`: a looser speed than an animation's, for tracker jitter).
        foot_smoothing: Gaussian sigma of the foot trackers' paths and turns when ``plant`` is
            on [s] (0: as tracked).
        hip_smoothing: Gaussian sigma of the pelvis's path without a pelvis tracker [s]; the spine
            swings to keep the head exact (0: the pelvis hangs rigidly from the head).
        plant_blend: Duration of the ease in and out of each plant [s].
        hip_reach: Largest swing of the trunk about the head that moves the hips toward planted
            feet beyond the legs' reach, without a pelvis tracker [rad] (0, the default: the hips
            stay where the head puts them, and such a foot's heel rises or it hangs from its hip;
            on the CMU takes the swing moved the hips away from the capture's, see
            docs/full_body.md).
        hip_reach_time: Duration of the swing's ease in before a need and out after it [s].
        jump_speed: Tracker speed reported as a jump [m/s].
        jump_turn: Tracker angular speed reported as a jump [rad/s].
    """

    heading_smoothing: float = 0.2
    pelvis_bend: float = 0.0
    spine_bend: float = 0.15
    spine_twist: float = 0.4
    crouch_lean: float = 0.8
    neck_share: float = 0.6
    spine_stiffness: tuple[float, ...] = ()
    elbow_pole: tuple[float, float, float] = (0.15, -0.8, -1.0)
    elbow_from_hand: float = 0.5
    forearm_twist: float = 0.5
    pole_smoothing: float = 0.05
    leg_soft: float = 0.03
    clavicle_share: float = 0.15
    clavicle_max: float = np.radians(25.0)
    clavicle_reach: float = np.radians(20.0)
    gait: GaitOptions = field(default_factory=GaitOptions)
    plant: bool = True
    contacts: ContactOptions = TRACKER_CONTACTS
    foot_smoothing: float = 0.02
    hip_smoothing: float = 0.05
    plant_blend: float = 0.1
    hip_reach: float = 0.0
    hip_reach_time: float = 0.25
    jump_speed: float = 8.0
    jump_turn: float = 40.0

    def __post_init__(self) -> None:
        shares = (
            "pelvis_bend",
            "spine_bend",
            "spine_twist",
            "neck_share",
            "elbow_from_hand",
            "forearm_twist",
            "clavicle_share",
        )
        for name in shares:
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise InvalidInputError(f"SolveOptions.{name} must be in [0, 1], got {value}")
        for name in (
            "heading_smoothing",
            "crouch_lean",
            "pole_smoothing",
            "leg_soft",
            "clavicle_max",
            "clavicle_reach",
            "plant_blend",
            "foot_smoothing",
            "hip_smoothing",
            "hip_reach",
            "hip_reach_time",
        ):
            value = getattr(self, name)
            if not value >= 0.0:
                raise InvalidInputError(f"SolveOptions.{name} must be >= 0, got {value}")
        for name in ("jump_speed", "jump_turn"):
            value = getattr(self, name)
            if not value > 0.0:
                raise InvalidInputError(f"SolveOptions.{name} must be > 0, got {value}")
        if (
            len(self.elbow_pole) != 3
            or not np.all(np.isfinite(self.elbow_pole))
            or not np.any(self.elbow_pole)
        ):
            raise InvalidInputError(
                f"SolveOptions.elbow_pole must be a non-zero 3-vector, got {self.elbow_pole}"
            )
        if any(not 0.0 <= s < 1.0 for s in self.spine_stiffness):
            raise InvalidInputError(
                f"SolveOptions.spine_stiffness values must be in [0, 1), got {self.spine_stiffness}"
            )
