# SPDX-License-Identifier: GPL-3.0-or-later
"""Full body from three trackers: humanoid roles, calibration and the batched body solve."""

from .cadence import CadenceOptions, StepSchedule, step_schedule, steps_from_contacts
from .calibration import TRACKER_ROLES, TRACKERS, Body, Limb, calibrate
from .gait import FootPlan, GaitOptions, plan_steps
from .options import SolveOptions
from .roles import MappingError, RoleMap, detect_roles, load_presets, preset_dir
from .solve import BodyPose, solve_body

__all__ = [
    "TRACKERS",
    "TRACKER_ROLES",
    "Body",
    "BodyPose",
    "CadenceOptions",
    "FootPlan",
    "GaitOptions",
    "Limb",
    "MappingError",
    "RoleMap",
    "SolveOptions",
    "StepSchedule",
    "calibrate",
    "detect_roles",
    "load_presets",
    "plan_steps",
    "preset_dir",
    "solve_body",
    "step_schedule",
    "steps_from_contacts",
]
