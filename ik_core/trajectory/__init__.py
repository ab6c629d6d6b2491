# SPDX-License-Identifier: GPL-3.0-or-later
"""Robot trajectories: CSV / ROS-style JSON import and export (and tracker CSV), resampling and feasibility checks.

ROS 2 bags (MCAP) are :mod:`.mcap_files`, imported by name: they need the bundled mcap packages.
"""

from __future__ import annotations

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
from .resample import resample, uniform_times
from .timing import MAX_FRAME_RATE, frame_rate_parts, sample_frames, sample_rate

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
