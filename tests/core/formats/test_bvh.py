# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of the BVH reader: parsing the bundled CMU takes, forward kinematics and error messages."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from data_files import data_file

from ik_core.errors import InvalidInputError
from ik_core.formats.bvh import Y_UP_TO_Z_UP, BVHError, parse_bvh, read_bvh
from ik_core.model.kinematics import forward_kinematics
from ik_core.model.rotations import euler_to_matrix, matrix_to_rotvec

TAKES = {"cmu_131_01": 995, "cmu_131_02": 1248, "cmu_131_03": 1248}

TINY = """HIERARCHY
ROOT Hips
{
  OFFSET 0 0 0
  CHANNELS 6 Xposition Yposition Zposition Zrotation Yrotation Xrotation
  JOINT Spine
  {
    OFFSET 0 1 0
    CHANNELS 3 Zrotation Xrotation Yrotation
    End Site
    {
      OFFSET 0 0.5 0
    }
  }
  JOINT Leg
  {
    OFFSET 0.2 0 0
    CHANNELS 3 Xrotation Yrotation Zrotation
    End Site
    {
      OFFSET 0 -1 0
    }
  }
}
MOTION
Frames: 2
Frame Time: 0.04
0 0 0 0 0 0 0 0 0 0 0 0
1 2 3 90 0 0 0 0 0 90 0 0
"""


@pytest.fixture(scope="module", params=sorted(TAKES))
def take(request: pytest.FixtureRequest):
    return request.param, read_bvh(data_file("mocap", f"{request.param}.bvh"))


def test_bundled_takes_parse(take) -> None:
    """Each CMU take parses with the frame count of the README, 120 Hz and 31 joints."""
    name, bvh = take
    assert bvh.frame_count == TAKES[name]
    assert bvh.frame_time == pytest.approx(1 / 120, abs=1e-5)
    assert bvh.joint_count == 31
    assert bvh.names[0] == "Hips" and bvh.parents[0] == -1
    assert all(p < i for i, p in enumerate(bvh.parents))
    assert bvh.motion.shape == (TAKES[name], sum(len(j.channels) for j in bvh.joints))
    assert len(bvh.bones()) == 31 and bvh.bones()[1] == ("LHipJoint", "Hips")


def test_bone_lengths_constant_over_frames(take) -> None:
    """FK keeps every parent-child distance equal to the joint's offset length in every frame."""
    _, bvh = take
    pos = bvh.world_positions(z_up=True)
    par = bvh.parents
    lengths = np.linalg.norm(pos[:, 1:] - pos[:, par[1:]], axis=-1)
    offsets = np.linalg.norm([j.offset for j in bvh.joints[1:]], axis=-1)
    np.testing.assert_allclose(lengths, np.broadcast_to(offsets, lengths.shape), atol=1e-9)


def test_frame0_matches_skeleton_kinematics(take) -> None:
    """Frame 0 FK equals ik_core's own FK of the BVH skeleton (ball joints, root moved by hand)."""
    _, bvh = take
    world = bvh.world_transforms(frames=[0])[0]
    local = bvh.local_transforms(frames=[0])[0]
    skel = bvh.to_skeleton()
    q = matrix_to_rotvec(local[:, :3, :3]).reshape(-1)
    fk = forward_kinematics(skel, q)
    root = np.eye(4)
    root[:3, 3] = local[0, :3, 3] - bvh.joints[0].offset
    np.testing.assert_allclose(root @ fk, world, atol=1e-9)


def test_z_up_conversion(take) -> None:
    """In z-up the subject stands: the head is above the hips, the feet near the floor (z = 0)."""
    _, bvh = take
    pos = bvh.world_positions(frames=[0], z_up=True)[0]
    i = {n: k for k, n in enumerate(bvh.names)}
    assert pos[i["Head"], 2] > pos[i["Hips"], 2] + 0.3
    assert 0.0 <= pos[i["LeftToe"], 2] < 0.15
    np.testing.assert_allclose(Y_UP_TO_Z_UP[:3, :3] @ [0, 1, 0], [0, 0, 1])


def test_tiny_file_known_poses() -> None:
    """Channel order and position channels: a 90 degree Z turn swings the spine from +y to -x."""
    bvh = parse_bvh(TINY)
    assert bvh.names == ("Hips", "Spine", "Leg") and bvh.frame_time == 0.04
    np.testing.assert_allclose(bvh.joints[1].end_site, [0, 0.5, 0])
    pos = bvh.world_positions()
    np.testing.assert_allclose(pos[0], [[0, 0, 0], [0, 1, 0], [0.2, 0, 0]], atol=1e-12)
    np.testing.assert_allclose(pos[1, 0], [1, 2, 3])  # position channels replace the root offset
    np.testing.assert_allclose(pos[1, 1], [1 - 1, 2, 3], atol=1e-12)  # spine offset (0,1,0) -> (-1,0,0)
    world = bvh.world_transforms()
    # Leg: Xrotation 90 after the root's Zrotation 90, composed in file order.
    expected = euler_to_matrix(np.radians([0, 0, 90]), "XYZ") @ euler_to_matrix(np.radians([90, 0, 0]), "XYZ")
    np.testing.assert_allclose(world[1, 2, :3, :3], expected, atol=1e-12)
    np.testing.assert_allclose(bvh.world_positions(scale=0.5)[1, 1], [0, 1, 1.5], atol=1e-12)
    np.testing.assert_allclose(bvh.rest_positions(), pos[0], atol=1e-12)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (TINY.replace("OFFSET 0 1 0", "OFFSET 0 one 0"), r"line 8: expected an OFFSET value"),
        (
            TINY.replace("Zrotation Xrotation Yrotation", "Zrotation Xrotation Wrotation"),
            "unknown channel 'Wrotation'",
        ),
        (TINY.replace("Frames: 2", "Frames: 3"), "expected 3 frames x 12 channels"),
        (TINY.replace("Frame Time: 0.04", "Frame Time: 0"), "frame time must be > 0"),
        (TINY.split("MOTION")[0], "unexpected end of file"),
        (TINY.replace("JOINT Leg", "JOINT Spine"), "repeated: Spine"),
        (TINY.replace("HIERARCHY", "HIERARCHIE"), "expected 'HIERARCHY'"),
    ],
)
def test_malformed_files_name_the_problem(text: str, match: str) -> None:
    """Syntax errors raise BVHError with the line and what was expected."""
    with pytest.raises(BVHError, match=match):
        parse_bvh(text)


def test_missing_file(tmp_path: Path) -> None:
    """An unreadable path raises InvalidInputError naming it."""
    with pytest.raises(InvalidInputError, match="nothing.bvh"):
        read_bvh(tmp_path / "nothing.bvh")
