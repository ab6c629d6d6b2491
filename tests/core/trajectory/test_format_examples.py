# SPDX-License-Identifier: GPL-3.0-or-later
"""The examples of docs/formats.md are the shipped example files, and they read without error."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from ik_core import effector_poses
from ik_core.model.rotations import quat_to_matrix
from ik_core.robots.presets import load_preset
from ik_core.trajectory import read_joint_csv, read_joint_json, read_pose_csv, sample_rate

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "formats.md"
EXAMPLES = ROOT / "presets" / "examples"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


@pytest.mark.parametrize("name", ["ur5_joint_trajectory.csv", "ur5_cartesian_poses.csv", "trackers.csv"])
def test_each_example_file_is_in_the_doc_verbatim(name):
    """The doc shows each file exactly, and the README links the doc."""
    assert (EXAMPLES / name).read_text(encoding="utf-8") in _blocks("csv")
    assert "docs/formats.md" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_joint_examples_read_onto_the_ur5_joints(tmp_path):
    """The CSV example and the doc's ROS JSON example name exactly the UR5 preset's joints, at 10 Hz."""
    names = load_preset("ur5").moving_joint_names
    traj = read_joint_csv(EXAMPLES / "ur5_joint_trajectory.csv", names)
    assert len(traj) == 5 and sample_rate(traj.times) == pytest.approx(10.0)
    (json_block,) = _blocks("json")
    path = tmp_path / "example.json"
    path.write_text(json_block)
    ros = read_joint_json(path, names)
    np.testing.assert_allclose(ros.times, [0.0, 0.1])
    np.testing.assert_allclose(ros.positions, traj.positions[:2])


def test_pose_example_is_the_joint_example_through_the_ur5_fk():
    """The Cartesian example is the UR5 tool frame of the joint example, in the base frame (4 decimals)."""
    skeleton = load_preset("ur5")
    joints = read_joint_csv(EXAMPLES / "ur5_joint_trajectory.csv", skeleton.moving_joint_names)
    poses = read_pose_csv(EXAMPLES / "ur5_cartesian_poses.csv")
    np.testing.assert_allclose(poses.times, joints.times)
    T = effector_poses(skeleton, joints.positions, "tool")
    np.testing.assert_allclose(poses.positions, T[:, :3, 3], atol=1e-4)
    np.testing.assert_allclose(quat_to_matrix(poses.quaternions), T[:, :3, :3], atol=2e-4)


def test_tracker_example_header_and_rate():
    """The tracker example has the three required trackers' seven columns each after time, at 60 Hz."""
    lines = (EXAMPLES / "trackers.csv").read_text().splitlines()
    fields = ("x", "y", "z", "qw", "qx", "qy", "qz")
    assert lines[0].split(",") == ["time", *(f"{t}_{f}" for t in ("head", "hand_l", "hand_r") for f in fields)]
    assert sample_rate(np.array([float(line.split(",")[0]) for line in lines[1:]])) == pytest.approx(60.0)
