# SPDX-License-Identifier: GPL-3.0-or-later
"""Contacts of an effector with the ground: detection, planting, the ground plane and the reach check.

Pure numpy over whole takes, the same functions for a chain bake (one foot chain's target per
frame) and for the full body (both feet of the three-tracker solve):

- :mod:`.detection`: contact intervals from an effector's world trajectory (height above the
  ground and speed, with hysteresis and a minimum duration).
- :mod:`.planting`: during a contact the target is held where it landed, blended in and out.
- :mod:`.foot`: a foot chain planted by its ankle and by the ball of its foot (the heel rise).
- :mod:`.ground`: no target below the ground plane, no foot segment through it (pitched or lifted).
- :mod:`.reach`: how far the hips (root) must lower so planted feet stay within reach, and the
  smooth envelope that moves them ahead of the need without pops.
- :mod:`.stride`: the root's ground path scaled to a retarget's legs (stride warping).
- :mod:`.measures`: foot skate and ground penetration, as benchmarks and bake reports measure them.
- :mod:`.inputs`: the checks of the arrays and numbers these take.
"""

from .detection import ContactOptions, contact_intervals, detect_contacts
from .foot import PlantedFoot, plant_foot
from .ground import keep_above_ground, lift_above_ground, pitch_above_ground
from .measures import FootSkate, foot_skate, planted_frames
from .planting import PlantedTargets, aim_tip, plant_targets, plant_weights
from .reach import root_drop_for_reach, upper_envelope
from .stride import warp_root_path

__all__ = [
    "ContactOptions",
    "FootSkate",
    "PlantedFoot",
    "PlantedTargets",
    "aim_tip",
    "contact_intervals",
    "detect_contacts",
    "foot_skate",
    "keep_above_ground",
    "lift_above_ground",
    "pitch_above_ground",
    "plant_foot",
    "plant_targets",
    "plant_weights",
    "planted_frames",
    "root_drop_for_reach",
    "upper_envelope",
    "warp_root_path",
]
