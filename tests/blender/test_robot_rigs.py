# SPDX-License-Identifier: GPL-3.0-or-later
"""Robot rigs have the preset's true kinematics and limits; trajectories import, check and export."""

import json
import re
from pathlib import Path

import bpy
import numpy as np
import pytest
from data_files import ROBOTS


@pytest.fixture
def ur5(empty_scene, core):
    assert bpy.ops.articulate.robot_add(preset="ur5") == {"FINISHED"}
    return bpy.context.object


def _tool_world(arm):
    bpy.context.view_layer.update()
    return np.array(arm.matrix_world @ arm.pose.bones["tool"].matrix)


@pytest.mark.parametrize("preset", ["ur5", "panda", "lbr_iiwa_14_r820"])
def test_rig_fk_matches_the_preset(empty_scene, core, addon_module, preset):
    """Posing the rig's joint bones at random in-limit values puts the tool bone where the core's FK does."""
    assert bpy.ops.articulate.robot_add(preset=preset) == {"FINISHED"}
    arm = bpy.context.object
    robot = addon_module("operators.bridge.robot")
    skeleton = core.robots.presets.load_preset(preset)
    rng = np.random.default_rng(3)
    lo, hi = np.maximum(skeleton.lower, -np.pi), np.minimum(skeleton.upper, np.pi)
    for _ in range(5):
        q = rng.uniform(lo, hi)
        robot.set_joint_values(arm, skeleton, q)
        expected = core.effector_poses(skeleton, q, "tool")
        got = _tool_world(arm)
        np.testing.assert_allclose(got[:3, 3], expected[:3, 3], atol=2e-5)
        np.testing.assert_allclose(got[:3, :3], expected[:3, :3], atol=2e-5)


def test_rig_limits_are_blender_limits(ur5, core):
    """Each joint bone turns only about local Y, within the preset's range, as constraints and IK locks."""
    info = json.loads(ur5["articulate_robot"])
    for joint in info["joints"]:
        pb = ur5.pose.bones[joint["name"]]
        assert tuple(pb.lock_rotation) == (True, False, True) and pb.lock_ik_x and pb.lock_ik_z
        con = next(c for c in pb.constraints if c.type == "LIMIT_ROTATION")
        if joint["upper"] is not None and joint["upper"] - joint["lower"] < 2 * np.pi - 1e-9:
            assert con.use_limit_y and con.min_y == pytest.approx(joint["lower"], abs=1e-6)


def test_solving_to_the_target_reaches_the_pose(ur5, core):
    """Moving the target and solving the frame puts the tool frame on the target (position and rotation)."""
    target = ur5.articulate.chains[0].target
    skeleton = core.robots.presets.load_preset("ur5")
    q = np.array([0.3, -1.2, 1.4, -0.9, 1.1, 0.4])
    goal = core.effector_poses(skeleton, q, "tool")
    from mathutils import Matrix

    target.matrix_world = Matrix(goal.tolist())
    bpy.context.view_layer.objects.active = ur5
    assert bpy.ops.articulate.solve_frame() == {"FINISHED"}
    got = _tool_world(ur5)
    assert np.linalg.norm(got[:3, 3] - goal[:3, 3]) < 1e-4
    assert np.allclose(got[:3, :3], goal[:3, :3], atol=1e-3)


def test_import_urdf_warns_about_missing_meshes(empty_scene, core):
    """A URDF whose meshes cannot be found still builds, with simple links and a warning naming files."""
    assert bpy.ops.articulate.robot_import_urdf(filepath=str(ROBOTS / "panda.urdf"), tip_link="panda_link8") == {
        "FINISHED"}
    arm = bpy.context.object
    assert len([b for b in arm.data.bones if b.name != "tool"]) == 7
    assert any(o.parent == arm for o in bpy.data.objects if o.type == "MESH")


def test_joint_trajectory_round_trip(ur5, tmp_path, core):
    """A CSV joint trajectory at the scene rate imports as keys and exports back to the same numbers."""
    names = [j["name"] for j in json.loads(ur5["articulate_robot"])["joints"]]
    fps = bpy.context.scene.render.fps
    t = np.arange(48) / fps
    q = 0.3 * np.sin(np.outer(t, np.arange(1, 7)))
    src = tmp_path / "in.csv"
    core.trajectory.write_joint_csv(src, core.trajectory.JointTrajectory(tuple(names), t, q))
    assert bpy.ops.articulate.trajectory_import(filepath=str(src), start_frame=1) == {"FINISHED"}
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 48
    out = tmp_path / "out.json"
    assert bpy.ops.articulate.trajectory_export(filepath=str(out)) == {"FINISHED"}
    back = core.trajectory.read_joint_json(out, names)
    np.testing.assert_allclose(back.positions, q, atol=1e-6)  # keys are float32
    np.testing.assert_allclose(back.times, t, atol=1e-9)


def test_check_flags_velocity_and_limits(ur5, tmp_path, core):
    """A trajectory that moves a joint too fast is flagged on those frames, with markers and a report."""
    names = [j["name"] for j in json.loads(ur5["articulate_robot"])["joints"]]
    fps = bpy.context.scene.render.fps
    t = np.arange(24) / fps
    q = np.zeros((24, 6)) + [0.0, -1.5, 1.5, -1.5, 1.5, 0.0]
    q[12:, 0] = 1.0  # an instant 1 rad step: far above pi rad/s
    src = tmp_path / "fast.csv"
    core.trajectory.write_joint_csv(src, core.trajectory.JointTrajectory(tuple(names), t, q))
    assert bpy.ops.articulate.trajectory_import(filepath=str(src)) == {"FINISHED"}
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 24
    report = tmp_path / "check.json"
    assert bpy.ops.articulate.trajectory_check(report_path=str(report)) == {"FINISHED"}
    data = json.loads(report.read_text())
    frames = data["frames"]
    assert frames["frame"][0] == 1 and len(frames["frame"]) == 24
    flagged = [f for f, ok in zip(frames["frame"], frames["ok"]) if not ok]
    assert flagged and set(flagged) <= {12, 13, 14}  # the step, seen by velocity and acceleration
    assert data["summary"]["frames_per_issue"]["velocity"] >= 1
    markers = sorted(m.frame for m in scene.timeline_markers)
    assert markers == flagged


def test_bad_trajectory_file_changes_nothing(ur5, tmp_path):
    """A CSV naming an unknown joint, or with a non-numeric cell, is refused with the file and line."""
    bad = tmp_path / "bad.csv"
    bad.write_text("time,nope\n0,1\n")
    with pytest.raises(RuntimeError, match="nope"):
        bpy.ops.articulate.trajectory_import(filepath=str(bad))
    names = [j["name"] for j in json.loads(ur5["articulate_robot"])["joints"]]
    bad.write_text("time," + ",".join(names) + "\n0," + ",".join(["0"] * 6) + "\n0.1,x" + ",0" * 5 + "\n")
    with pytest.raises(RuntimeError, match="line 3"):
        bpy.ops.articulate.trajectory_import(filepath=str(bad))
    assert ur5.animation_data is None or ur5.animation_data.action is None


def test_branches_listed_and_used_for_the_bake(ur5, core, addon_module):
    """Several distinct branches are listed; using one poses and keys it, and a bake from there keeps it."""
    target = ur5.articulate.chains[0].target
    skeleton = core.robots.presets.load_preset("ur5")
    q = np.array([0.3, -1.2, 1.4, -0.9, 1.1, 0.4])
    from mathutils import Matrix

    target.matrix_world = Matrix(core.effector_poses(skeleton, q, "tool").tolist())
    bpy.context.view_layer.objects.active = ur5
    assert bpy.ops.articulate.robot_branches(seeds=48) == {"FINISHED"}
    branches = ur5.articulate.branches
    assert 2 <= len(branches) <= 8  # the UR5's closed form has 8 branches; whole-turn copies are not listed
    far = max(range(len(branches)), key=lambda k: np.max(np.abs(np.array(branches[k].values[:6]) - q)))
    ur5.articulate.active_branch = far
    chosen = np.array(branches[far].values[:6])
    assert bpy.ops.articulate.robot_use_branch() == {"FINISHED"}
    # The target then moves a little over 10 frames: the bake must stay on the chosen branch.
    target.animation_data_clear()
    for f in range(1, 11):
        target.location.x += 0.003
        target.keyframe_insert("location", frame=f)
    assert bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=10) == {"FINISHED"}
    robot = addon_module("operators.bridge.robot")
    values = robot.read_joint_values(ur5, np.arange(1.0, 11.0))
    assert np.max(np.abs(values[0] - chosen)) < 0.1
    assert np.max(np.abs(np.diff(values, axis=0))) < 0.1


ROBOT_WITH_MESH = """<robot name="two_link">
  <link name="base"/>
  <link name="arm">
    <visual><origin xyz="0 0 0.25"/><geometry><mesh filename="package://two_link/meshes/arm.stl"/></geometry></visual>
    <visual><geometry><box size="0.1 0.1 0.05"/></geometry></visual>
  </link>
  <link name="tip"/>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="arm"/>
    <axis xyz="0 1 0"/><limit lower="-1.5" upper="1.5" velocity="2" effort="1"/></joint>
  <joint name="tool" type="fixed"><parent link="arm"/><child link="tip"/><origin xyz="0 0 0.5"/></joint>
</robot>"""


TETRAHEDRON = [(0.0, 0.0, 0.0), (0.05, 0.0, 0.0), (0.0, 0.02, 0.0), (0.0, 0.0, 0.08)]  # no two axes alike [m]


def _write_stl(path: Path) -> None:
    """An ASCII STL tetrahedron: a real mesh file, as exporters write them."""
    v = TETRAHEDRON
    faces = [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)]
    lines = ["solid t"]
    for f in faces:
        lines += ["facet normal 0 0 0", "outer loop", *(f"vertex {v[i][0]} {v[i][1]} {v[i][2]}" for i in f),
                  "endloop", "endfacet"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines + ["endsolid t"]) + "\n")


def test_urdf_meshes_import_and_follow_their_bone(empty_scene, tmp_path):
    """A package:// STL that resolves against the given folder is imported and follows its joint's bone."""
    pkg = tmp_path / "pkgs"
    _write_stl(pkg / "two_link" / "meshes" / "arm.stl")
    urdf = tmp_path / "two_link.urdf"
    urdf.write_text(ROBOT_WITH_MESH)
    assert bpy.ops.articulate.robot_import_urdf(filepath=str(urdf), tip_link="tip", package_dir=str(pkg)) == {
        "FINISHED"}
    arm = bpy.context.object
    children = [o for o in bpy.data.objects if o.parent == arm and o.type == "MESH"]
    assert len(children) == 2  # the imported STL and the box primitive, no fallback shapes
    assert all(o.parent_bone == "shoulder" for o in children)
    stl = next(o for o in children if len(o.data.vertices) == 4)
    before = np.array(stl.matrix_world.translation)
    arm.pose.bones["shoulder"].rotation_euler = (0.0, 0.5, 0.0)
    bpy.context.view_layer.update()
    after = np.array(stl.matrix_world.translation)
    assert np.linalg.norm(after - before) > 0.05  # it turns with the joint
    assert before[2] == pytest.approx(0.25, abs=1e-4)  # placed by the visual's origin


def _write_obj(path: Path) -> None:
    """A Wavefront OBJ of the same lopsided tetrahedron."""
    faces = [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)]
    lines = [f"v {x} {y} {z}" for x, y, z in TETRAHEDRON] + [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in faces]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("ext", ["stl", "obj"])
def test_urdf_mesh_files_keep_their_coordinates_as_the_link_frame(empty_scene, tmp_path, ext):
    """STL and OBJ coordinates are the link's frame as written (as RViz reads them): every vertex lands at
    the visual origin applied to it, with no Y-up to Z-up turn, at rest and with the joint turned."""
    pkg = tmp_path / "pkgs"
    (_write_stl if ext == "stl" else _write_obj)(pkg / "two_link" / "meshes" / f"arm.{ext}")
    urdf = tmp_path / "two_link.urdf"
    urdf.write_text(ROBOT_WITH_MESH.replace("arm.stl", f"arm.{ext}").replace(
        '<origin xyz="0 0 0.25"/>', '<origin xyz="0 0 0.25" rpy="0.3 0 0"/>'))
    assert bpy.ops.articulate.robot_import_urdf(filepath=str(urdf), tip_link="tip", package_dir=str(pkg)) == {
        "FINISHED"}
    arm = bpy.context.object
    (mesh,) = [o for o in bpy.data.objects if o.parent == arm and o.type == "MESH" and len(o.data.vertices) == 4]
    # Only in the robot's collection; the scene OBJ files are imported in is gone.
    assert list(mesh.users_collection) == list(arm.users_collection) and len(bpy.data.scenes) == 1
    c, s = np.cos(0.3), np.sin(0.3)
    visual = np.array([[1, 0, 0], [0, c, -s], [0, s, c]])  # rpy (0.3, 0, 0)
    for angle in (0.0, 0.5):
        arm.pose.bones["shoulder"].rotation_euler = (0.0, angle, 0.0)
        bpy.context.view_layer.update()
        joint = np.array([[np.cos(angle), 0, np.sin(angle)], [0, 1, 0], [-np.sin(angle), 0, np.cos(angle)]])
        expected = (np.array(TETRAHEDRON) @ visual.T + [0, 0, 0.25]) @ joint.T  # about +Y at the origin
        M = np.array(mesh.matrix_world)
        got = np.array([v.co for v in mesh.data.vertices]) @ M[:3, :3].T + M[:3, 3]
        nearest = np.linalg.norm(got[:, None] - expected[None], axis=-1).min(axis=0)
        assert nearest.max() < 1e-6, (angle, got, expected)  # every vertex where the link frame puts it


def test_missing_urdf_mesh_falls_back_with_a_warning(empty_scene, tmp_path):
    """Without the package folder the STL is missing: simple links are drawn and the file is named."""
    urdf = tmp_path / "two_link.urdf"
    urdf.write_text(ROBOT_WITH_MESH)
    assert bpy.ops.articulate.robot_import_urdf(filepath=str(urdf), tip_link="tip") == {"FINISHED"}
    arm = bpy.context.object
    names = [o.name for o in bpy.data.objects if o.parent == arm]
    assert any(n.startswith("shoulder.link") or n.startswith("shoulder.joint") for n in names)


def test_use_branch_says_what_it_keyed(ur5, capfd):
    """Use Branch keys the chosen branch and says which one, on which frame, for how many joints."""
    bpy.context.scene.frame_set(7)
    assert bpy.ops.articulate.robot_branches(seeds=16) == {"FINISHED"}
    data = ur5.articulate
    data.active_branch = len(data.branches) - 1
    capfd.readouterr()
    assert bpy.ops.articulate.robot_use_branch() == {"FINISHED"}
    out = capfd.readouterr().out
    assert f"Info: Branch {len(data.branches)} keyed on frame 7 (6 joints)" in out


def test_preset_rigs_are_named_for_the_command_line(empty_scene, addon_module):
    """Every preset's rig, collection and target names need no quoting in a shell (cli.py --armature NAME),
    and still say which robot it is."""
    import shlex

    presets = addon_module("ik_core.robots.presets")  # imported here: the test may run alone
    for preset in presets.list_presets():
        assert bpy.ops.articulate.robot_add(preset=preset) == {"FINISHED"}
        arm = bpy.context.object
        names = [arm.name, arm.users_collection[0].name, *(c.target.name for c in arm.articulate.chains)]
        assert all(shlex.quote(n) == n for n in names), names
        display = presets.preset_info(preset).get("display_name", preset)
        assert arm.name.split(".")[0] == "_".join(re.findall(r"[A-Za-z0-9_.-]+", display))
