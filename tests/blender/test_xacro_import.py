# SPDX-License-Identifier: GPL-3.0-or-later
"""Xacro robots import in one step: Import URDF on a .urdf.xacro with arguments, repair, failures, and cli.py robot."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import bpy
import pytest
from xacro_cases import TOP, workspace

CLI = Path(__file__).resolve().parents[2] / "cli.py"


@pytest.fixture(autouse=True)
def _no_ros_package_path(monkeypatch):
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)


def _scene_state():
    return (sorted(o.name for o in bpy.data.objects), sorted(c.name for c in bpy.data.collections),
            len(bpy.data.armatures), len(bpy.data.meshes), len(bpy.data.materials))


def _info(arm) -> dict:
    return json.loads(arm["articulate_robot"])


def test_xacro_imports_with_its_arguments_as_the_core_reads_it(empty_scene, addon_module, tmp_path):
    """Import URDF on a .urdf.xacro with arguments builds the rig of the model the core reads from its expansion:
    the same joints in order with their limits, the chains to the arm ends, the arguments kept on the rig."""
    path = workspace(tmp_path)
    assert bpy.ops.articulate.robot_import_urdf(filepath=str(path), xacro_args="prefix:=duo_ reach:=0.25") == {
        "FINISHED"}
    arm = bpy.context.object
    expand_xacro = addon_module("ik_core.formats.xacro_files").expand_xacro
    expected = addon_module("ik_core.robots.model").RobotModel.from_urdf(
        expand_xacro(path, {"prefix": "duo_", "reach": "0.25"}))
    info = _info(arm)
    assert [j["name"] for j in info["joints"]] == list(expected.joint_order)
    for j in info["joints"]:
        joint = expected.urdf.joint(j["name"])
        assert (j["lower"], j["upper"]) == pytest.approx((joint.lower, joint.upper))
    assert info["urdf"] == str(path) and info["xacro_args"] == {"prefix": "duo_", "reach": "0.25"}
    assert sorted(c.tool_link for c in arm.articulate.chains) == ["finger", "right_hand"]
    assert arm.pose.bones["left_elbow"].bone.head_local.length > 0
    elbow = arm.data.bones["left_elbow"].head_local - arm.data.bones["left_shoulder"].head_local
    assert elbow.length == pytest.approx(0.25, abs=1e-6)  # reach:=0.25, not the default 0.4


def test_repair_expands_again_with_the_same_arguments(empty_scene, tmp_path):
    """A rig whose stored model was damaged reads it again from the xacro file, with the arguments it was built with."""
    path = workspace(tmp_path)
    bpy.ops.articulate.robot_import_urdf(filepath=str(path), xacro_args="gripper:=false")
    arm = bpy.context.object
    stored = arm["articulate_robot_model"]
    arm["articulate_robot_model"] = "{damaged"
    assert bpy.ops.articulate.robot_repair() == {"FINISHED"}
    assert json.loads(arm["articulate_robot_model"]) == json.loads(stored)
    assert "flange" in json.loads(arm["articulate_robot_model"])["links"]


def test_dialog_lists_the_tool_links_of_the_expansion(empty_scene, tmp_path):
    """The Tool Link choices come from the file expanded with the dialog's arguments (prefixed links)."""
    path = workspace(tmp_path)
    with pytest.raises(TypeError) as listed:
        bpy.ops.articulate.robot_import_urdf(filepath=str(path), xacro_args="gripper:=false", tool_link="nope")
    assert "'flange'" in str(listed.value) and "'finger'" not in str(listed.value)


@pytest.mark.parametrize(("edit", "args", "message"), [
    (("${torso_w}", "${torso_width}"), "", r"duo.urdf.xacro \(xacro\): .*torso_width"),
    (('filename="common.xacro"', 'filename="gone.xacro"'), "", r"duo.urdf.xacro \(xacro\): .*gone.xacro"),
    (("$(find duo_parts)", "$(find no_such_pkg)"), "", r"no ROS package folder named 'no_such_pkg'"),
    ((), "reach=0.3", r"xacro argument 'reach=0.3' must look like name:=value"),
    ((), 'prefix:="a', r"xacro arguments .*quote"),
    (("0.2 0.6", "0.2 bad"), "", r"duo.urdf.xacro \(expanded by xacro\): link 'torso' visual 0"),
])
def test_failures_name_the_problem_and_change_nothing(empty_scene, tmp_path, edit, args, message):
    """A broken xacro, a missing include or package, bad arguments, or a bad URDF from a good xacro: an error naming
    the file or argument, and the scene exactly as it was."""
    path = workspace(tmp_path, TOP.replace(*edit) if edit else TOP)
    before = _scene_state()
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.articulate.robot_import_urdf(filepath=str(path), xacro_args=args)
    assert _scene_state() == before


def test_xacro_arguments_on_a_urdf_are_refused(empty_scene, tmp_path):
    path = tmp_path / "plain.urdf"
    path.write_text('<robot name="r"><link name="a"/></robot>')
    with pytest.raises(RuntimeError, match="xacro arguments .prefix. are only for .xacro files"):
        bpy.ops.articulate.robot_import_urdf(filepath=str(path), xacro_args="prefix:=x_")
    assert not bpy.data.objects


def test_package_folder_resolves_find_and_meshes(empty_scene, tmp_path):
    """The Package Folder serves $(find pkg) in the xacro and package:// meshes in the URDF it gives."""
    path = workspace(tmp_path / "ws")
    vendor = tmp_path / "vendor" / "duo_parts"
    (vendor / "urdf").mkdir(parents=True)
    (vendor / "meshes").mkdir()
    (vendor / "meshes" / "hand.obj").write_text("v 0 0 0\nv 0.1 0 0\nv 0 0.1 0\nf 1 2 3\n")
    arm_xacro = (tmp_path / "ws" / "src" / "duo_parts" / "urdf" / "arm.xacro").read_text()
    (vendor / "urdf" / "arm.xacro").write_text(arm_xacro.replace(
        '<link name="${side}_hand"/>', '<link name="${side}_hand"><visual><geometry>'
        '<mesh filename="package://duo_parts/meshes/hand.obj"/></geometry></visual></link>'))
    (tmp_path / "ws" / "src" / "duo_parts").rename(tmp_path / "elsewhere")
    assert bpy.ops.articulate.robot_import_urdf(filepath=str(path), package_dir=str(tmp_path / "vendor")) == {
        "FINISHED"}
    arm = bpy.context.object
    assert _info(arm)["package_dirs"] == [str(tmp_path / "vendor")]
    hands = [o for o in bpy.data.objects if o.type == "MESH" and o.parent == arm and "hand" in o.name]
    assert len(hands) == 2 and all(len(o.data.vertices) == 3 for o in hands)


def _run_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "BLENDER_USER_RESOURCES": str(tmp_path / "user")}
    env.pop("ROS_PACKAGE_PATH", None)
    return subprocess.run([sys.executable, str(CLI), *args], capture_output=True, text=True, env=env, timeout=300)


# The pipeline guide's command, run as written (test_docs.py's COMMANDS names this test).
GUIDE_COMMAND = (".venvs/5.0.1/bin/python cli.py robot src/duo_description/urdf/duo.urdf.xacro "
                 "--xacro-arg prefix:=duo_ --xacro-arg gripper:=false --out duo.blend")


@pytest.mark.slow
def test_cli_robot_runs_the_pipeline_guide_command(empty_scene, tmp_path):
    """The pipeline guide's cli.py robot command, in a workspace like the guide's, expands the xacro with its
    --xacro-arg values (the wheels synced as in an install), prints what the guide quotes and saves the rig."""
    guide = (CLI.parent / "docs" / "pipeline.md").read_text(encoding="utf-8")
    assert GUIDE_COMMAND in guide and "`articulate: imported duo, chains to right_hand, flange`" in guide
    workspace(tmp_path / "ws")
    args = GUIDE_COMMAND.split()[2:]
    env = {**os.environ, "BLENDER_USER_RESOURCES": str(tmp_path / "user")}
    env.pop("ROS_PACKAGE_PATH", None)
    done = subprocess.run([sys.executable, str(CLI), *args], capture_output=True, text=True, env=env, timeout=300,
                          cwd=tmp_path / "ws")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "articulate: imported duo, chains to right_hand, flange" in done.stdout
    with bpy.data.libraries.load(str(tmp_path / "ws" / "duo.blend")) as (source, target):
        target.objects = list(source.objects)
    rig = next(o for o in target.objects if o.type == "ARMATURE")
    assert json.loads(rig["articulate_robot"])["xacro_args"] == {"prefix": "duo_", "gripper": "false"}
    assert "duo_torso" in json.loads(rig["articulate_robot_model"])["links"]
    for obj in target.objects:
        bpy.data.objects.remove(obj)
    # --into adds a second robot to that file, beside the first
    done = subprocess.run([sys.executable, str(CLI), "robot", args[1], "--into", "duo.blend", "--out", "two.blend"],
                          capture_output=True, text=True, env=env, timeout=300,
                          cwd=tmp_path / "ws")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    with bpy.data.libraries.load(str(tmp_path / "ws" / "two.blend")) as (source, target):
        target.objects = list(source.objects)
    assert len([o for o in target.objects if o.type == "ARMATURE"]) == 2
    for obj in target.objects:
        bpy.data.objects.remove(obj)


@pytest.mark.parametrize(("args", "message"), [
    (["--xacro-arg", "prefix=duo_"], r"argument --xacro-arg: expected a xacro argument name:=value"),
    (["--xacro-arg", "a:=1", "--xacro-arg", "a:=2"], r"--xacro-arg a is given more than once"),
    (["--package-dir", "/no/such/folder"], r"the package folder /no/such/folder is not a folder"),
])
def test_cli_robot_bad_arguments_exit_2_with_one_line_before_any_work(tmp_path, args, message):
    """Bad xacro arguments or folders exit 2 with one line on stderr; nothing is written."""
    path = workspace(tmp_path / "ws")
    out = tmp_path / "robot.blend"
    done = _run_cli(tmp_path, "robot", str(path), *args, "--out", str(out))
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith("articulate: error:")
    assert re.search(message, done.stderr), done.stderr
    assert not out.exists()


def test_cli_robot_refuses_xacro_arguments_for_a_urdf_and_a_missing_file(tmp_path):
    (tmp_path / "plain.urdf").write_text('<robot name="r"><link name="a"/></robot>')
    done = _run_cli(tmp_path, "robot", str(tmp_path / "plain.urdf"), "--xacro-arg", "a:=1", "--out", "r.blend")
    assert done.returncode == 2 and "--xacro-arg is for .xacro files" in done.stderr
    done = _run_cli(tmp_path, "robot", str(tmp_path / "none.urdf.xacro"), "--out", "r.blend")
    assert done.returncode == 2 and "no such robot description" in done.stderr
