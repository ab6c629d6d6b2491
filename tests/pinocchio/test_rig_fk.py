# SPDX-License-Identifier: GPL-3.0-or-later
"""Rigs built by Import URDF, posed, against pinocchio's forward kinematics at every link (issue 26).

For each robot of :mod:`fk_cases` and each configuration, the rig's bones are set to the joint
values and Blender evaluates them (parents, Limit Rotation and Limit Location constraints, mimic
drivers); then every link is measured on what Blender draws of it:

- a joint's bone is rigidly attached to its link, at the joint's origin, its Y axis along the joint
  axis: the bone's pose relative to pinocchio's link pose is one constant transform over every
  configuration, without translation, taking Y to the URDF axis;
- a tool bone is its tool link's frame;
- a link's box or STL mesh (generated robots give every link one, fixed links included) is the
  link's pose times the visual's origin as written in the URDF.
"""

import math
import struct
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from fk_cases import MOVING, all_cases

bpy = pytest.importorskip("bpy")  # the core half of the suite runs without it

CASES = all_cases()
ATOL = 2e-5  # [m] and rotation entries: Blender's matrices are single precision


def rpy_matrix(xyz: str, rpy: str) -> np.ndarray:
    """(4, 4) a URDF origin: rotation Rz(yaw) Ry(pitch) Rx(roll), then the translation."""
    r, p, y = map(float, rpy.split())
    Rx = np.array([[1, 0, 0], [0, math.cos(r), -math.sin(r)], [0, math.sin(r), math.cos(r)]])
    Ry = np.array([[math.cos(p), 0, math.sin(p)], [0, 1, 0], [-math.sin(p), 0, math.cos(p)]])
    Rz = np.array([[math.cos(y), -math.sin(y), 0], [math.sin(y), math.cos(y), 0], [0, 0, 1]])
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = Rz @ Ry @ Rx, [float(v) for v in xyz.split()]
    return T


def import_case(case, tmp_path) -> bpy.types.Object:
    """Import the case's file (its URDF text written out when it has none) with the operator; the rig."""
    path = case.path
    if path is None:
        path = tmp_path / f"{case.name}.urdf"
        path.write_text(case.urdf)
    if case.stl:  # a tetrahedron, binary STL
        corners = [((0, 0, 0), (0, 0.02, 0), (0.05, 0, 0)), ((0, 0, 0), (0.05, 0, 0), (0, 0, 0.08)),
                   ((0, 0, 0), (0, 0, 0.08), (0, 0.02, 0)), ((0.05, 0, 0), (0, 0.02, 0), (0, 0, 0.08))]
        data = bytearray(80) + struct.pack("<I", len(corners))
        for a, b, c in corners:
            data += struct.pack("<12fH", 0, 0, 0, *a, *b, *c, 0)
        (tmp_path / "meshes").mkdir()
        (tmp_path / "meshes" / "shape.stl").write_bytes(bytes(data))
    assert bpy.ops.articulate.robot_import_urdf(filepath=str(path), package_dir=case.package_dir,
                                                xacro_args=case.xacro_args) == {"FINISHED"}
    (arm,) = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    return arm


def pose(arm: bpy.types.Object, joints: dict[str, ET.Element], values: dict[str, float]) -> None:
    """Set the rig's bones to joint values (a joint's value is its bone's Y rotation or Y location)."""
    for name, value in values.items():
        pb = arm.pose.bones[name]
        if joints[name].get("type") == "prismatic":
            pb.location = (0.0, value, 0.0)
        else:
            pb.rotation_euler = (0.0, value, 0.0)
    bpy.context.view_layer.update()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_link_of_the_imported_rig_matches_pinocchio(empty_scene, reference, tmp_path, case):
    """Bones, tool bones and link boxes where pinocchio puts their links, for every configuration."""
    arm = import_case(case, tmp_path)
    root = ET.fromstring(case.urdf)
    joints = {j.get("name"): j for j in root.findall("joint")}
    poses = reference.poses(case.name)
    to_root = np.linalg.inv(np.array(arm.matrix_world))
    bone_links = {name: j.find("child").get("link") for name, j in joints.items() if j.get("type") in MOVING}
    assert set(bone_links) <= set(arm.data.bones.keys())
    tools = {c.tip_bone: c.tool_link for c in arm.articulate.chains}
    boxes = {}
    for obj in bpy.data.objects:
        link, dot, _rest = obj.name.partition(".shape" if case.stl else ".visual")
        if dot and obj.type == "MESH" and link in poses:
            boxes.setdefault(link, []).append(obj)
    if case.boxed:  # every link is measured, fixed ones through their box
        assert set(boxes) == set(poses) and all(len(v) == 1 for v in boxes.values())
    visual_origin = {}
    for link in root.findall("link"):
        origin = link.find("visual/origin")
        if origin is not None:
            visual_origin[link.get("name")] = rpy_matrix(origin.get("xyz", "0 0 0"), origin.get("rpy", "0 0 0"))
    attached = {}
    for k, values in enumerate(case.configurations):
        pose(arm, joints, values)
        for name, link in bone_links.items():
            B = to_root @ np.array(arm.matrix_world) @ np.array(arm.pose.bones[name].matrix)
            C = np.linalg.inv(poses[link][k]) @ B
            where = f"{case.name}, configuration {k}: bone {name} (link {link})"
            axis = np.array([float(v) for v in joints[name].find("axis").get("xyz").split()])
            np.testing.assert_allclose(C[:3, 3], 0.0, atol=ATOL, err_msg=where)
            np.testing.assert_allclose(C[:3, 1], axis / np.linalg.norm(axis), atol=ATOL, err_msg=where)
            np.testing.assert_allclose(C, attached.setdefault(name, C), atol=ATOL, err_msg=where)
        for bone, link in tools.items():
            B = to_root @ np.array(arm.matrix_world) @ np.array(arm.pose.bones[bone].matrix)
            np.testing.assert_allclose(B, poses[link][k], atol=ATOL, err_msg=f"{case.name}, {k}: tool {link}")
        for link, objects in boxes.items():
            for obj in objects:
                M = to_root @ np.array(obj.matrix_world)
                np.testing.assert_allclose(M, poses[link][k] @ visual_origin[link], atol=ATOL,
                                           err_msg=f"{case.name}, {k}: box of link {link}")
