# SPDX-License-Identifier: GPL-3.0-or-later
"""Robots urdfdom loads import as rigs (issue 26): mimic bones driven from their source, rigid and
single-link robots without chains, and the reader's notes reported."""

from pathlib import Path

import bpy
import numpy as np
import pytest

BOX = "<visual><geometry><box size='0.05 0.05 0.05'/></geometry></visual>"


def joint(name, jtype, parent, child, inner="", xyz="0.1 0 0", axis="0 0 1", rpy="0 0 0"):
    limit = "<limit lower='-1' upper='1' effort='1' velocity='1'/>" if jtype in ("revolute", "prismatic") else ""
    return (f"<joint name='{name}' type='{jtype}'><parent link='{parent}'/><child link='{child}'/>"
            f"<origin xyz='{xyz}' rpy='{rpy}'/><axis xyz='{axis}'/>{limit}{inner}</joint>")


def robot(body, links, name="r"):
    links = "".join(f"<link name='{n}'>{BOX}</link>" for n in links.split())
    return f"<robot name='{name}'>{links}{body}</robot>"


MIMIC = robot(joint("a", "revolute", "base", "l1")
              + joint("b", "revolute", "l1", "l2", "<mimic joint='a' multiplier='-2' offset='0.3'/>")
              + joint("t", "fixed", "l2", "tool", xyz="0.2 0 0"), "base l1 l2 tool")


def _import(tmp_path: Path, text: str, name: str) -> bpy.types.Object:
    path = tmp_path / f"{name}.urdf"
    path.write_text(text)
    assert bpy.ops.articulate.robot_import_urdf(filepath=str(path)) == {"FINISHED"}
    (arm,) = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    for obj in bpy.data.objects:
        if obj.type == "MESH":  # every link shape hangs from the rig, on a bone that exists
            assert obj.parent is arm and (not obj.parent_bone or obj.parent_bone in arm.data.bones)
    return arm


@pytest.mark.parametrize("q", [-0.8, 0.0, 0.6])
def test_mimic_bone_follows_its_source_and_carries_the_tool(empty_scene, core, tmp_path, q):
    """A mimic joint on the way to the tool: a bone driven as -2 a + 0.3; tool bone and shape sit where FK says."""
    arm = _import(tmp_path, MIMIC, "mimic")
    assert {"a", "b"} <= set(arm.data.bones.keys()) and [c.tool_link for c in arm.articulate.chains] == ["tool"]
    model = core.robots.model.RobotModel.from_json(arm["articulate_robot_model"])
    arm.pose.bones["a"].rotation_euler = (0.0, q, 0.0)
    bpy.context.view_layer.update()
    assert arm.pose.bones["b"].rotation_euler[1] == pytest.approx(-2 * q + 0.3, abs=1e-6)
    T = core.effector_poses(model.skeleton, np.array([q]), "tool")
    tool = np.array(arm.matrix_world.inverted() @ arm.pose.bones["tool"].matrix)
    np.testing.assert_allclose(tool[:3, 3], T[:3, 3], atol=1e-5)
    (box,) = [o for o in bpy.data.objects if o.name.startswith("tool.visual")]
    np.testing.assert_allclose(np.array(box.matrix_world)[:3, 3], T[:3, 3], atol=1e-5)


@pytest.mark.parametrize(("text", "why"), [
    (robot(joint("f", "fixed", "base", "body"), "base body"), "no moving joint"),
    (robot("", "base"), "is a single link"),
])
def test_robot_without_moving_joint_imports_without_chains(empty_scene, tmp_path, capsys, text, why):
    """One link, or fixed joints only: an armature without bones, its shapes on the armature, no chain, and why."""
    arm = _import(tmp_path, text, "rigid")
    assert len(arm.data.bones) == 0 and len(arm.articulate.chains) == 0
    assert [o for o in bpy.data.objects if o.type == "MESH"]
    assert why in capsys.readouterr().out


def test_reader_notes_are_reported(empty_scene, tmp_path, capsys):
    """A mimic on a fixed joint and a mimic of a missing joint import, each reported as a warning."""
    text = robot(joint("f", "fixed", "base", "l1", "<mimic joint='a'/>")
                 + joint("a", "revolute", "l1", "l2", "<mimic joint='ghost'/>") + joint("t", "fixed", "l2", "tool"),
                 "base l1 l2 tool")
    arm = _import(tmp_path, text, "sloppy")
    assert list(arm.data.bones.keys()) == ["a", "tool"]
    out = capsys.readouterr().out
    assert "joint 'f': a fixed joint does not move" in out and "<mimic joint='ghost'> names no joint" in out


# An arm whose mimics cover the driver's edges: an e-notation offset (c) and multiplier (s), a
# revolute mimic of a prismatic joint with a negative multiplier (e), Panda-style prismatic
# fingers (f2 mimics f1) and a mimic of a mimic (n: -2 * f2, composed to -2 * f1).
ARM = robot(
    joint("a", "revolute", "base", "l1", xyz="0 0 0.1")
    + joint("b", "revolute", "l1", "l2", xyz="0 0 0.2", axis="0 1 0")
    + joint("c", "revolute", "l2", "l3", "<mimic joint='b' multiplier='-0.5' offset='-1e-05'/>",
            xyz="0.2 0 0", axis="0 1 0", rpy="0.3 0 0")
    + joint("d", "prismatic", "l3", "l4", xyz="0.1 0 0", axis="1 0 0")
    + joint("e", "revolute", "l4", "l5", "<mimic joint='d' multiplier='-3.5' offset='0.25'/>", xyz="0.05 0 0")
    + joint("s", "revolute", "l5", "l6", "<mimic joint='a' multiplier='1e-05' offset='-0.2'/>",
            xyz="0.05 0 0", axis="1 0 0")
    + joint("f1", "prismatic", "l6", "finger1", xyz="0.05 0.01 0", axis="0 1 0")
    + joint("f2", "prismatic", "l6", "finger2", "<mimic joint='f1'/>", xyz="0.05 -0.01 0", axis="0 -1 0")
    + joint("n", "prismatic", "finger2", "nail", "<mimic joint='f2' multiplier='-2'/>", xyz="0.02 0 0",
            axis="1 0 0")
    + joint("t", "fixed", "l6", "tool", xyz="0.1 0 0"),
    "base l1 l2 l3 l4 l5 l6 finger1 finger2 nail tool", name="arm")
SOURCES = ("a", "b", "d", "f1")
MIMICS = ("c", "e", "s", "f2", "n")
# Source values keyed on frames 1, 11, 21: sub-millimetre finger and slide values included (Blender
# 5.0's default driver curve mapped driven values below about 1e-3 to 0).
KEYS = {"a": (0.0, 0.7, -0.5), "b": (0.0, -0.4, 0.9), "d": (0.0, 0.0004, -0.3), "f1": (0.0, 0.0002, 0.04)}


def _channel(skeleton, name: str) -> tuple[str, int]:
    prismatic = skeleton.joints[skeleton.joint_index(name)].kind == "prismatic"
    return ("location" if prismatic else "rotation_euler"), 1


def _zero_value_frames(skeleton) -> np.ndarray:
    """(J, 4, 4) joint frames with every joint value 0, mimic joints too: where the bones rest."""
    out = np.empty((len(skeleton.joints), 4, 4))
    for i, j in enumerate(skeleton.joints):
        out[i] = (out[j.parent] if j.parent >= 0 else np.eye(4)) @ j.origin
    return out


def _check_pose_against_fk(core, arm, model, q, where: str) -> None:
    """Every bone and every link's shape where the model's forward kinematics at ``q`` puts them."""
    skeleton = model.skeleton
    bpy.context.view_layer.update()
    W = core.forward_kinematics(skeleton, q)
    rest = _zero_value_frames(skeleton)
    to_arm = np.array(arm.matrix_world.inverted())
    for i, j in enumerate(skeleton.joints):
        if j.kind == "fixed":
            continue
        pb = arm.pose.bones[j.name]
        M = np.array(pb.matrix)
        # The bone moved from its rest as the joint frame moved from its zero-value frame.
        moved = M @ np.linalg.inv(np.array(arm.data.bones[j.name].matrix_local))
        np.testing.assert_allclose(moved, W[i] @ np.linalg.inv(rest[i]), atol=2e-5, err_msg=f"{where}: bone {j.name}")
        np.testing.assert_allclose(M[:3, 1], W[i, :3, :3] @ j.axis, atol=2e-5, err_msg=f"{where}: axis of {j.name}")
    joint_of_link = {j.child: skeleton.joint_index(j.name) for j in model.urdf.joints}
    shapes = [o for o in bpy.data.objects if o.type == "MESH" and ".visual" in o.name]
    assert {o.name.split(".visual")[0] for o in shapes} == set(model.urdf.links)
    for obj in shapes:
        link = obj.name.split(".visual")[0]
        expected = W[joint_of_link[link]] if link in joint_of_link else np.eye(4)
        np.testing.assert_allclose(to_arm @ np.array(obj.matrix_world), expected, atol=2e-5,
                                   err_msg=f"{where}: link {link}")
    tool = np.array(arm.pose.bones["tool"].matrix)
    np.testing.assert_allclose(tool[:3, 3], core.effector_poses(skeleton, q, "tool")[:3, 3], atol=2e-5)


def test_mimic_expression_numbers_read_back_exactly(addon_module):
    """Multipliers and offsets in e-notation, negative, or numpy scalars make plain-number expressions."""
    robot_bridge = addon_module("operators.bridge.robot")
    assert robot_bridge.mimic_expression(1e-05, -1e-05) == "1e-05 * source + -1e-05"
    assert robot_bridge.mimic_expression(np.float64(-2), np.float32(0.5)) == "-2.0 * source + 0.5"
    assert robot_bridge.mimic_expression(-3.5e16, 0) == "-3.5e+16 * source + 0.0"
    with pytest.raises(addon_module("operators.bridge").BridgeError, match="finite"):
        robot_bridge.mimic_expression(float("inf"), 0.0)


def test_mimic_drivers_are_simple_and_pass_their_value_straight(empty_scene, core, addon_module, tmp_path):
    """Each mimic bone's driver: a simple expression (no Python) of its independent source; values exact."""
    arm = _import(tmp_path, ARM, "arm")
    model = core.robots.model.RobotModel.from_json(arm["articulate_robot_model"])
    skeleton = model.skeleton
    assert set(arm.data.bones.keys()) == {*SOURCES, *MIMICS, "tool"}
    assert [c.tool_link for c in arm.articulate.chains] == ["tool"]
    mimic_expression = addon_module("operators.bridge.robot").mimic_expression
    drivers = {fc.data_path.split('"')[1]: fc for fc in arm.animation_data.drivers}
    assert sorted(drivers) == sorted(MIMICS)
    for name in MIMICS:
        fc, j = drivers[name], skeleton.joints[skeleton.joint_index(name)]
        path, index = _channel(skeleton, name)
        assert fc.data_path.endswith(path) and fc.array_index == index
        assert fc.driver.is_valid and fc.driver.is_simple_expression, fc.driver.expression
        assert fc.driver.expression == mimic_expression(j.mimic.multiplier, j.mimic.offset)
        assert len(fc.keyframe_points) == 0 and len(fc.modifiers) == 0
        (var,) = fc.driver.variables
        assert var.targets[0].data_path == f'pose.bones["{j.mimic.joint}"].{_channel(skeleton, j.mimic.joint)[0]}[1]'
    assert skeleton.joints[skeleton.joint_index("n")].mimic.joint == "f1"  # composed: -2 * f2 = -2 * f1
    for k in range(3):
        q = np.array([KEYS[n][k] for n in skeleton.moving_joint_names])
        for name, value in zip(skeleton.moving_joint_names, q):
            path, index = _channel(skeleton, name)
            getattr(arm.pose.bones[name], path)[index] = value
        bpy.context.view_layer.update()
        for name in MIMICS:
            i = skeleton.joint_index(name)
            path, index = _channel(skeleton, name)
            want = float(core.model.kinematics.joint_values(skeleton, q, i)[0])
            assert getattr(arm.pose.bones[name], path)[index] == pytest.approx(want, rel=1e-6, abs=1e-9), name


def test_mimic_bones_move_in_playback_and_in_a_reopened_file(empty_scene, core, addon_module, tmp_path):
    """Keyed sources, frame_set: every bone and link where FK says; again after saving and reopening without scripts."""
    arm = _import(tmp_path, ARM, "arm")
    model = core.robots.model.RobotModel.from_json(arm["articulate_robot_model"])
    skeleton = model.skeleton
    find_fcurve = addon_module("operators.compat").find_fcurve
    for name in SOURCES:
        path, index = _channel(skeleton, name)
        pb = arm.pose.bones[name]
        for frame, value in zip((1, 11, 21), KEYS[name]):
            getattr(pb, path)[index] = value
            pb.keyframe_insert(path, index=index, frame=frame)

    def check(arm, where):
        for frame in (1, 6, 11, 21):
            bpy.context.scene.frame_set(frame)
            q = np.array([find_fcurve(arm, f'pose.bones["{n}"].{_channel(skeleton, n)[0]}', 1).evaluate(frame)
                          for n in skeleton.moving_joint_names])
            _check_pose_against_fk(core, arm, model, q, f"{where}, frame {frame}")

    check(arm, "playback")
    blend = tmp_path / "mimic.blend"
    assert bpy.ops.wm.save_as_mainfile(filepath=str(blend)) == {"FINISHED"}
    bpy.ops.wm.read_homefile(use_empty=True)
    # Scripts not trusted (Blender's default for a file from elsewhere): simple expressions still run.
    assert bpy.ops.wm.open_mainfile(filepath=str(blend), use_scripts=False) == {"FINISHED"}
    (arm,) = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    check(arm, "reopened")


def test_ik_solves_the_independent_joints_and_mimics_follow(empty_scene, core, addon_module, tmp_path):
    """Solving and baking key only the independent joints; with the mimic bones driven the tool is on target."""
    arm = _import(tmp_path, ARM, "arm")
    model = core.robots.model.RobotModel.from_json(arm["articulate_robot_model"])
    chain = model.chain_skeleton("tool")
    assert chain.moving_joint_names == ("a", "b", "d") and chain.dof == 3  # c, e, s follow a, b, d
    goal = core.effector_poses(chain, np.array([0.3, -0.25, 0.05]), "tool")
    from mathutils import Matrix

    arm.articulate.chains[0].target.matrix_world = arm.matrix_world @ Matrix(goal.tolist())
    bpy.context.view_layer.objects.active = arm
    assert bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=2) == {"FINISHED"}
    keyed = {fc.data_path.split('"')[1] for fc in addon_module("operators.compat").iter_fcurves(arm)}
    assert keyed == {"a", "b", "d"}
    for frame in (1, 2):
        bpy.context.scene.frame_set(frame)
        q = np.array([arm.pose.bones[n].rotation_euler[1] if n != "d" else arm.pose.bones[n].location[1]
                      for n in chain.moving_joint_names])
        for name in ("c", "e", "s"):
            i = model.skeleton.joint_index(name)
            j = model.skeleton.joints[i]
            src = q[chain.moving_joint_names.index(j.mimic.joint)]
            value = arm.pose.bones[name].rotation_euler[1]
            assert value == pytest.approx(j.mimic.multiplier * src + j.mimic.offset, rel=1e-5, abs=1e-6)
        tool = np.array(arm.matrix_world @ arm.pose.bones["tool"].matrix)
        assert np.linalg.norm(tool[:3, 3] - goal[:3, 3]) < 1e-4
        np.testing.assert_allclose(tool[:3, :3], goal[:3, :3], atol=1e-3)


def test_export_lists_the_independent_joints_as_the_urdf_joint_order(empty_scene, core, tmp_path):
    """The exported trajectory names a, b, d, f1 (URDF order, mimics left out: controllers compute them)."""
    arm = _import(tmp_path, ARM, "arm")
    model = core.robots.model.RobotModel.from_json(arm["articulate_robot_model"])
    for name in SOURCES:
        pb = arm.pose.bones[name]
        path = "location" if name in ("d", "f1") else "rotation_euler"
        getattr(pb, path)[1] = KEYS[name][1]
        pb.keyframe_insert(path, index=1, frame=1)
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 2
    out = tmp_path / "arm.json"
    assert bpy.ops.articulate.trajectory_export(filepath=str(out), frame_range="SCENE") == {"FINISHED"}
    back = core.trajectory.read_joint_json(out)
    assert back.joint_names == model.joint_order == SOURCES
    np.testing.assert_allclose(back.positions[0], [KEYS[n][1] for n in SOURCES], atol=1e-7)


def test_rigid_robot_is_not_damaged_and_operators_say_why_they_refuse(empty_scene, addon_module, tmp_path):
    """A rig without joints is whole (no Repair offered); exporting, checking or adding a chain says it is rigid."""
    arm = _import(tmp_path, robot(joint("f", "fixed", "base", "body"), "base body"), "rigid")
    assert addon_module("operators.bridge.stored").robot_damage(arm) == ""
    bpy.context.view_layer.objects.active = arm
    for call in (lambda: bpy.ops.articulate.trajectory_export(filepath=str(tmp_path / "out.csv")),
                 lambda: bpy.ops.articulate.trajectory_check(),
                 lambda: bpy.ops.articulate.robot_branches()):
        with pytest.raises(RuntimeError, match="no moving joint .*it has no joint to pose, key, check or export"):
            call()
    assert not (tmp_path / "out.csv").exists()
    with pytest.raises(RuntimeError, match="valid tool links: none, robot 'r' has no moving joint"):
        bpy.ops.articulate.robot_import_urdf(filepath=str(tmp_path / "rigid.urdf"), tip_link="body")


# Found by dev/fuzz_robots.py (random robots through import, bake, check and export):

# Joint names longer than the 63 bytes Blender keeps of a bone's name: two of 75 bytes sharing their first 67
# bytes and their last 6 (so a cut at either end alone would make them one), a mimic of one, and one of
# two-byte characters (a cut in the middle of a character would not be UTF-8); links as long (the
# objects of their shapes, the tool link a chain names).
LONG_LINK, LONG_TOOL = "link_" + "z" * 70, "tool_" + "w" * 70
LONG_A = "left_arm_" + "x" * 60 + "_joint"
LONG_B = "left_arm_" + "x" * 58 + "y_" + "_joint"
LONG_M = "é" * 40
LONG = robot(joint(LONG_A, "revolute", "base", "l1") + joint(LONG_B, "revolute", "l1", "l2", axis="0 1 0")
             + joint(LONG_M, "revolute", "l2", LONG_LINK, f"<mimic joint='{LONG_A}' multiplier='-1' offset='0.1'/>")
             + joint("t", "fixed", LONG_LINK, LONG_TOOL), f"base l1 l2 {LONG_LINK} {LONG_TOOL}", name="long")


def test_joint_names_longer_than_a_bone_name_import_as_shortened_bones_and_files_keep_the_urdf_names(
        empty_scene, core, tmp_path, capsys):
    """urdfdom loads any name; Blender keeps 63 bytes of a bone's. Such a joint was refused: its bone now has a
    shortened name (start ~ end), unique, the mimic following; the import warns; files are read and written
    with the URDF's names, and Repair Robot Data rebuilding the model from the file finds the same bones."""
    arm = _import(tmp_path, LONG, "long")
    out = capsys.readouterr().out
    assert "3 joint name(s) longer than the 63 bytes" in out and repr(LONG_A) in out
    model = core.robots.model.RobotModel.from_json(arm["articulate_robot_model"])
    bones = [n for n in arm.data.bones.keys() if n != "tool"]
    assert len(bones) == 3 and all(len(n.encode()) <= 63 for n in bones) and len(set(bones)) == 3
    assert sorted(model.urdf_names.values()) == sorted([LONG_A, LONG_B, LONG_M])
    assert set(model.urdf_names) == set(bones) and set(model.skeleton.joint_names) >= set(bones)
    a, b = (next(k for k, v in model.urdf_names.items() if v == name) for name in (LONG_A, LONG_B))
    assert a.startswith("left_arm_x") and a.endswith("_joint") and "~" in a
    # A trajectory file in the URDF's names keys the bones; the mimic bone follows its source.
    traj = tmp_path / "in.csv"
    traj.write_text(f"time,{LONG_A},{LONG_B}\n0,0.2,-0.3\n0.5,0.4,0.5\n")
    bpy.context.view_layer.objects.active = arm
    assert bpy.ops.articulate.trajectory_import(filepath=str(traj)) == {"FINISHED"}
    scene = bpy.context.scene
    last = int(scene.frame_end)
    scene.frame_set(last)
    assert arm.pose.bones[a].rotation_euler[1] == pytest.approx(0.4, abs=1e-6)
    assert arm.pose.bones[b].rotation_euler[1] == pytest.approx(0.5, abs=1e-6)
    m = next(k for k, v in model.urdf_names.items() if v == LONG_M)
    assert arm.pose.bones[m].rotation_euler[1] == pytest.approx(-0.4 + 0.1, abs=1e-6)
    assert [c.tool_link for c in arm.articulate.chains] == [LONG_TOOL]
    T = core.effector_poses(model.skeleton, np.array([0.4, 0.5]), LONG_TOOL)
    tool = np.array(arm.matrix_world.inverted() @ arm.pose.bones["tool"].matrix)
    np.testing.assert_allclose(tool[:3, 3], T[:3, 3], atol=1e-5)
    assert bpy.ops.articulate.trajectory_check() == {"FINISHED"}  # reads the file's samples by the rig's names
    # Exports name the URDF's joints, and import back.
    for ext in ("csv", "json", "mcap"):
        out_path = tmp_path / f"out.{ext}"
        assert bpy.ops.articulate.trajectory_export(filepath=str(out_path), frame_range="SCENE") == {"FINISHED"}
        assert bpy.ops.articulate.trajectory_import(filepath=str(out_path)) == {"FINISHED"}
    back = core.trajectory.read_joint_csv(tmp_path / "out.csv")
    assert back.joint_names == (LONG_A, LONG_B)
    np.testing.assert_allclose(back.positions[-1], [0.4, 0.5], atol=1e-6)
    # The stored model damaged: Repair reads the URDF again and gives its joints the bones' names.
    arm["articulate_robot_model"] = "{"
    assert bpy.ops.articulate.robot_repair() == {"FINISHED"}
    repaired = core.robots.model.RobotModel.from_json(arm["articulate_robot_model"])
    assert repaired.urdf_names == model.urdf_names and repaired.joint_order == model.joint_order


def test_a_joint_whose_range_is_one_value_bakes_and_checks_without_a_violation(empty_scene, core, tmp_path):
    """A joint limited to 0.3 rad exactly: no float32 lies in that range, so its keys are the float32 nearest
    (0.30000001). The bake counted every frame a limit violation and Check Trajectory flagged every frame."""
    body = (joint("a", "revolute", "base", "l1") + joint("b", "revolute", "l1", "l2", axis="0 1 0")
            .replace("lower='-1' upper='1'", "lower='0.3' upper='0.3'") + joint("t", "fixed", "l2", "tool"))
    arm = _import(tmp_path, robot(body, "base l1 l2 tool"), "single")
    model = core.robots.model.RobotModel.from_json(arm["articulate_robot_model"])
    q = np.c_[np.linspace(-0.1, 0.1, 10), np.full(10, 0.3)]  # under the joints' 1 rad/s
    poses = core.effector_poses(model.skeleton, q, "tool")
    quat = core.model.rotations.matrix_to_quat(poses[:, :3, :3])
    rows = ["time,x,y,z,qw,qx,qy,qz"] + [",".join(repr(float(v)) for v in (k / 24, *T[:3, 3], *w))
                                         for k, (T, w) in enumerate(zip(poses, quat))]
    (tmp_path / "poses.csv").write_text("\n".join(rows) + "\n")
    bpy.context.scene.render.fps, bpy.context.scene.render.fps_base = 24, 1.0
    assert bpy.ops.articulate.cartesian_import(filepath=str(tmp_path / "poses.csv"), bake=False) == {"FINISHED"}
    report = tmp_path / "report.json"
    assert bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=10,
                                   report_path=str(report)) == {"FINISHED"}
    import json
    assert [c["limit_violations"] for c in json.loads(report.read_text())["chains"]] == [0]
    assert bpy.ops.articulate.trajectory_check() == {"FINISHED"}
    assert bpy.context.scene.articulate.last_summary.startswith("0 of 10 frames flagged")


@pytest.mark.parametrize("fmt", ["CSV", "MCAP"])
def test_an_export_imports_back_whole_with_padded_joint_names_and_nanosecond_stamps(empty_scene, tmp_path, fmt):
    """The add-on's own export imports back to the same frames: a joint named " padded" (its CSV column read
    stripped was not found) and a bag at 30 Hz (stamps rounded to the nanosecond lost the last frame)."""
    body = joint(" padded", "revolute", "base", "l1") + joint("b", "revolute", "l1", "l2") + joint(
        "t", "fixed", "l2", "tool")
    arm = _import(tmp_path, robot(body, "base l1 l2 tool"), "padded")
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = 30, 1.0
    rows = ["time, padded,b"] + [f"{k / 30!r},{0.1 * k},{-0.05 * k}" for k in range(5)]
    (tmp_path / "in.csv").write_text("\n".join(rows) + "\n")
    assert bpy.ops.articulate.trajectory_import(filepath=str(tmp_path / "in.csv")) == {"FINISHED"}
    scene.frame_start, scene.frame_end = 1, 5
    out = tmp_path / ("out.mcap" if fmt == "MCAP" else "out.csv")
    assert bpy.ops.articulate.trajectory_export(filepath=str(out), file_format=fmt, frame_range="SCENE") == {
        "FINISHED"}
    arm.animation_data.action = None
    assert bpy.ops.articulate.trajectory_import(filepath=str(out)) == {"FINISHED"}
    import json
    stored = json.loads(arm["articulate_trajectory"])
    assert (stored["frame_start"], stored["frame_end"]) == (1, 5)
    scene.frame_set(5)
    assert arm.pose.bones[" padded"].rotation_euler[1] == pytest.approx(0.4, abs=1e-6)


def _gltf_triangle(path: Path) -> None:
    """A glTF file of one triangle (0,0,0), (0.1,0,0), (0,0.1,0) in a child node at (0.2, 0, 0) of a node at
    (0, 0.5, 0): a tree, as exporters write them, Y up (glTF's convention)."""
    import base64
    import json
    import struct

    data = struct.pack("<9f", 0, 0, 0, 0.1, 0, 0, 0, 0.1, 0) + struct.pack("<3H", 0, 1, 2) + b"\0\0"
    path.write_text(json.dumps({
        "asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0]}],
        "nodes": [{"name": "root", "translation": [0, 0.5, 0], "children": [1]},
                  {"name": "part", "mesh": 0, "translation": [0.2, 0, 0]}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0}, "indices": 1}]}],
        "buffers": [{"byteLength": len(data),
                     "uri": "data:application/octet-stream;base64," + base64.b64encode(data).decode()}],
        "bufferViews": [{"buffer": 0, "byteOffset": 0, "byteLength": 36},
                        {"buffer": 0, "byteOffset": 36, "byteLength": 6}],
        "accessors": [{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3",
                       "min": [0, 0, 0], "max": [0.1, 0.1, 0]},
                      {"bufferView": 1, "componentType": 5123, "count": 3, "type": "SCALAR"}],
    }))


def test_link_meshes_in_ply_and_gltf_files_are_drawn_where_rviz_draws_them(empty_scene, core, tmp_path, capsys):
    """PLY meshes (raw coordinates, as OBJ and STL) and glTF meshes (Y up by its specification, turned Z up as
    RViz 2 and Drake turn them) are drawn through Blender's importers, on their links' bones; a glTF's node
    tree is flattened to its mesh, where the tree put it. A damaged glTF is a warning and a simple shape."""
    (tmp_path / "part.ply").write_text("ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
                                       "property float z\nelement face 1\nproperty list uchar int vertex_indices\n"
                                       "end_header\n0 0 0\n0.1 0 0\n0 0.1 0\n3 0 1 2\n")
    _gltf_triangle(tmp_path / "part.gltf")
    (tmp_path / "broken.glb").write_bytes(b"glTF\x02\x00\x00\x00garbage")

    def mesh(filename):
        return f"<visual><origin xyz='0 0 0.05'/><geometry><mesh filename='{filename}'/></geometry></visual>"

    text = ("<robot name='meshes'><link name='base'/>"
            f"<link name='l1'>{mesh('part.ply')}</link><link name='l2'>{mesh('part.gltf')}</link>"
            f"<link name='l3'>{mesh('broken.glb')}</link><link name='tool'/>"
            + joint("a", "revolute", "base", "l1") + joint("b", "revolute", "l1", "l2", axis="0 1 0")
            + joint("c", "revolute", "l2", "l3") + joint("t", "fixed", "l3", "tool") + "</robot>")
    arm = _import(tmp_path, text, "meshes")
    assert "broken.glb: Blender's importer could not read it" in capsys.readouterr().out
    model = core.robots.model.RobotModel.from_json(arm["articulate_robot_model"])
    arm.pose.bones["a"].rotation_euler[1] = 0.4
    arm.pose.bones["b"].rotation_euler[1] = -0.7
    bpy.context.view_layer.update()
    q = np.array([0.4, -0.7, 0.0])
    for link, stem, file_points in (("l1", "part", [(0, 0, 0), (0.1, 0, 0), (0, 0.1, 0)]),
                                    # glTF (x, y, z) is Blender's (x, -z, y); the tree adds (0.2, 0, 0.5).
                                    ("l2", "part", [(0.2, 0, 0.5), (0.3, 0, 0.5), (0.2, 0, 0.6)])):
        (obj,) = [o for o in bpy.data.objects if o.name.startswith(f"{link}.{stem}")]
        assert obj.type == "MESH" and obj.parent is arm and obj.parent_bone in arm.data.bones
        placed = core.effector_poses(model.skeleton, q[None], link)[0] @ np.array(
            [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0.05], [0, 0, 0, 1.0]])
        want = np.array([placed[:3, :3] @ p + placed[:3, 3] for p in file_points])
        got = np.array([np.array(obj.matrix_world @ v.co) for v in obj.data.vertices])
        np.testing.assert_allclose(np.sort(got, axis=0), np.sort(want, axis=0), atol=1e-5)
    assert not [o for o in bpy.data.objects if o.type in ("EMPTY", "CAMERA", "LIGHT") and o.name.startswith("root")]


def test_joint_files_whose_names_are_not_utf8_export_and_import(empty_scene, core, tmp_path):
    """A file name that is not UTF-8 (b'\\xff': Python's surrogate escape) in Export and Import Joint Trajectory's
    message made Blender's report raise a TypeError: an "unexpected error ... nothing was changed" after the file
    was written. Found by dev/fuzz_cli.py. The message now shows the byte as U+FFFD, and both finish."""
    import os

    arm = _import(tmp_path, MIMIC, "mimic")
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 3
    odd = os.fsdecode(bytes(tmp_path) + b"/joints\xff.csv")
    assert bpy.ops.articulate.trajectory_export(filepath=odd, frame_range="SCENE") == {"FINISHED"}
    assert os.path.isfile(odd)
    bpy.context.view_layer.objects.active = arm
    assert bpy.ops.articulate.trajectory_import(filepath=odd) == {"FINISHED"}
    broken = os.fsdecode(bytes(tmp_path) + b"/broken\xff.csv")
    with open(broken, "w") as f:
        f.write("time,a\n0,nan\n")
    with pytest.raises(RuntimeError, match="broken\ufffd.csv") as refused:
        bpy.ops.articulate.trajectory_import(filepath=broken)
    assert "unexpected" not in str(refused.value)


def test_a_locked_joint_exports_at_its_one_value_though_its_key_is_float32(empty_scene, core, tmp_path):
    """A joint whose URDF range is a single value (0.4 rad) holds no float32: its key plays back 0.40000000596.

    The export writes 0.4, inside the limits a controller checks (it wrote 0.40000000596, found by
    bench_robot_bake's locked arm); a joint keyed inside its range is written as keyed.
    """
    locked = ("<joint name='a' type='revolute'><parent link='base'/><child link='l1'/><origin xyz='0.1 0 0'/>"
              "<axis xyz='0 0 1'/><limit lower='0.4' upper='0.4' effort='1' velocity='1'/></joint>")
    text = robot(locked + joint("b", "revolute", "l1", "l2") + joint("t", "fixed", "l2", "tool", xyz="0.2 0 0"),
                 "base l1 l2 tool")
    arm = _import(tmp_path, text, "locked")
    for name, value in (("a", 0.4), ("b", 0.25)):
        pb = arm.pose.bones[name]
        pb.rotation_euler[1] = value
        pb.keyframe_insert("rotation_euler", index=1, frame=1)
    assert arm.pose.bones["a"].rotation_euler[1] != 0.4  # float32
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 2
    out = tmp_path / "locked.json"
    assert bpy.ops.articulate.trajectory_export(filepath=str(out), frame_range="SCENE") == {"FINISHED"}
    back = core.trajectory.read_joint_json(out)
    assert back.joint_names == ("a", "b")
    assert (back.positions[:, 0] == 0.4).all()
    np.testing.assert_allclose(back.positions[:, 1], 0.25, atol=1e-7)
