# SPDX-License-Identifier: GPL-3.0-or-later
"""Robot trajectories: CSV / ROS-style JSON import and export (and tracker CSV), resampling and feasibility checks.

ROS 2 bags (MCAP) are :mod:`.mcap_files`, imported by name: they need the bundled mcap packages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import lazy_exports

# Imported at once: ``resample`` names both a module and its function (imported lazily, the module
# would shadow the function).
from .resample import resample, uniform_times

if TYPE_CHECKING:  # what type checkers and readers see; at run time each name is imported on first use
    from .check import TrajectoryReport, check_trajectory, finite_differences
    from .io import (
        TRACKER_FIELDS,
        read_joint_csv,
        read_joint_json,
        read_pose_csv,
        read_tracker_csv,
        write_joint_csv,
        write_joint_json,
        write_pose_csv,
    )
    from .model import JointTrajectory, PoseTrajectory, TrajectoryError
    from .timing import MAX_FRAME_RATE, frame_rate_parts, sample_frames, sample_rate

# Imported on first use: a module of this folder (the ROS 2 bags' topic, say) is then imported
# without the checks and file readers beside it.
__getattr__, __dir__ = lazy_exports(__name__, {
    "TrajectoryReport": "check", "check_trajectory": "check", "finite_differences": "check",
    **dict.fromkeys(("TRACKER_FIELDS", "read_joint_csv", "read_joint_json", "read_pose_csv", "read_tracker_csv",
                     "write_joint_csv", "write_joint_json", "write_pose_csv"), "io"),
    "JointTrajectory": "model", "PoseTrajectory": "model", "TrajectoryError": "model",
    **dict.fromkeys(("MAX_FRAME_RATE", "frame_rate_parts", "sample_frames", "sample_rate"), "timing"),
})

__all__ = [
    "MAX_FRAME_RATE",
    "TRACKER_FIELDS",
    "JointTrajectory",
    "PoseTrajectory",
    "TrajectoryError",
    "TrajectoryReport",
    "check_trajectory",
    "finite_differences",
    "frame_rate_parts",
    "read_joint_csv",
    "read_joint_json",
    "read_pose_csv",
    "read_tracker_csv",
    "resample",
    "sample_frames",
    "sample_rate",
    "uniform_times",
    "write_joint_csv",
    "write_joint_json",
    "write_pose_csv",
]
