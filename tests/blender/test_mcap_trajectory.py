# SPDX-License-Identifier: GPL-3.0-or-later
"""ROS 2 bags (MCAP) through Import and Export Joint Trajectory and cli.py: round trip, topics, joints, damage."""

import json
import os
import subprocess
import sys
from pathlib import Path

import bpy
import numpy as np
import pytest
from mcap_cases import NS, joint_state, joint_trajectory, write_bag

from ik_core.trajectory.mcap_files import JOINT_STATE, JOINT_TRAJECTORY

EXAMPLES = Path(__file__).resolve().parents[2] / "presets" / "examples"
CLI = Path(__file__).resolve().parents[2] / "cli.py"
T0 = 1_700_000_000 * NS


_READ = []  # the add-on's read_joint_values, set by the ur5 fixture


@pytest.fixture
def ur5(empty_scene, addon_module):
    _READ[:] = [addon_module("operators.bridge.robot").read_joint_values]
    assert bpy.ops.articulate.robot_add(preset="ur5") == {"FINISHED"}
    return bpy.context.object


def _names(arm) -> list[str]:
    return [j["name"] for j in json.loads(arm["articulate_robot"])["joints"]]


def _keys(arm, frames) -> np.ndarray:
    """(F, 6) the joint values the rig plays on ``frames``."""
    return _READ[0](arm, np.asarray(frames, dtype=float))


def _state(arm):
    scene = bpy.context.scene
    action = arm.animation_data.action if arm.animation_data else None
    return (scene.render.fps, scene.render.fps_base, scene.frame_start, scene.frame_end,
            arm.get("articulate_trajectory"), action.name if action else None, sorted(a.name for a in bpy.data.actions),
            _keys(arm, [1, 2, 3, 20, 21]).tolist())


def test_export_then_import_gives_the_same_positions_and_times(ur5, tmp_path, capfd):
    """The bundled joint example keyed, exported as MCAP (Format: ROS 2 Bag), imported onto a fresh UR5: the same
    keys on the same frames at the same rate; the file is JointState on /joint_states, stamped from 0 s."""
    assert bpy.ops.articulate.trajectory_import(filepath=str(EXAMPLES / "ur5_joint_trajectory.csv")) == {"FINISHED"}
    frames = np.arange(1, 6)
    keyed = _keys(ur5, frames)
    out = tmp_path / "ur5.mcap"
    assert bpy.ops.articulate.trajectory_export(filepath=str(tmp_path / "ur5"), file_format="MCAP") == {"FINISHED"}
    from ik_core.trajectory.mcap_files import read_joint_mcap

    bag = read_joint_mcap(out, _names(ur5))
    assert (bag.topic, bag.message_type, bag.clock, bag.start_ns) == ("/joint_states", JOINT_STATE, "header stamps", 0)
    np.testing.assert_allclose(bag.trajectory.times, (frames - 1) / 10.0, atol=1e-9)
    np.testing.assert_allclose(bag.trajectory.positions, keyed, atol=1e-6)
    bpy.ops.wm.read_homefile(use_empty=True)
    assert bpy.ops.articulate.robot_add(preset="ur5") == {"FINISHED"}
    arm = bpy.context.object
    capfd.readouterr()
    assert bpy.ops.articulate.trajectory_import(filepath=str(out)) == {"FINISHED"}
    scene = bpy.context.scene
    assert (scene.render.fps, scene.frame_start, scene.frame_end) == (10, 1, 5)
    np.testing.assert_allclose(_keys(arm, frames), keyed, atol=1e-6)
    assert "from 5 samples of ur5.mcap (/joint_states, JointState, timed by header stamps)" in capfd.readouterr().out


def _bag(path: Path, names: list[str]) -> Path:
    """A bag as a robot records it: /joint_states at 50 Hz with a gripper and wheels besides the arm, in another
    order, and a planned /arm/joint_trajectory of three points."""
    order = [names[2], "wheel_l", names[0], names[5], "finger", names[1], names[4], names[3]]
    home = np.array([0.0, -1.5, 1.5, -1.5, 1.5, 0.0])
    states = []
    for k in range(10):
        q = home + 0.01 * k
        values = dict(zip(names, q)) | {"wheel_l": 5.0 * k, "finger": 0.02}
        message = joint_state(T0 + k * 20_000_000, order, [values[n] for n in order])
        states.append(("/joint_states", JOINT_STATE, message, T0 + k * 20_000_000 + 5))
    plan = joint_trajectory(names, [(0.0, list(home)), (1.0, list(home + 0.2)), (2.5, list(home + 0.3))])
    return write_bag(path, [*states, ("/arm/joint_trajectory", JOINT_TRAJECTORY, plan, T0)])


def test_topics_joints_and_times_from_a_recorded_bag(ur5, tmp_path, capfd):
    """Two topics: refused until one is chosen (the message lists both); /joint_states keys the arm's joints in the
    rig's order at 50 Hz, the extra joints reported; /arm/joint_trajectory keys its points at time_from_start."""
    names = _names(ur5)
    path = _bag(tmp_path / "robot.mcap", names)
    before = _state(ur5)
    with pytest.raises(RuntimeError, match=r"several topics hold joint messages: /arm/joint_trajectory "
                                           r"\(trajectory_msgs/msg/JointTrajectory\), /joint_states "
                                           r"\(sensor_msgs/msg/JointState\); choose one \(Topic\)"):
        bpy.ops.articulate.trajectory_import(filepath=str(path))
    assert _state(ur5) == before
    capfd.readouterr()
    assert bpy.ops.articulate.trajectory_import(filepath=str(path), topic="/joint_states") == {"FINISHED"}
    out = capfd.readouterr().out
    assert "joint(s) not in the rig left out: finger, wheel_l" in out
    scene = bpy.context.scene
    assert (scene.render.fps, scene.frame_start, scene.frame_end) == (50, 1, 10)
    home = np.array([0.0, -1.5, 1.5, -1.5, 1.5, 0.0])
    np.testing.assert_allclose(_keys(ur5, np.arange(1, 11)), home + 0.01 * np.arange(10)[:, None], atol=1e-6)
    assert bpy.ops.articulate.trajectory_import(filepath=str(path), topic="/arm/joint_trajectory",
                                                use_file_timing=False) == {"FINISHED"}
    fps = scene.render.fps / scene.render.fps_base
    np.testing.assert_allclose(_keys(ur5, [1, 1 + fps, 1 + 2.5 * fps]), home + [[0], [0.2], [0.3]], atol=1e-6)


@pytest.mark.parametrize("damage", ["truncated", "empty", "schema", "missing joint", "lz4"])
def test_damaged_bags_are_refused_and_change_nothing(ur5, tmp_path, damage):
    """A truncated, empty, wrongly typed, lz4-compressed bag or one without a joint of the rig: a clear error, and
    the rig, its keys, the scene's timing and the stored trajectory as they were."""
    names = _names(ur5)
    assert bpy.ops.articulate.trajectory_import(filepath=str(EXAMPLES / "ur5_joint_trajectory.csv")) == {"FINISHED"}
    before = _state(ur5)
    path = tmp_path / "bad.mcap"
    if damage in ("truncated", "empty"):
        data = _bag(tmp_path / "good.mcap", names).read_bytes()
        path.write_bytes(data[: len(data) // 3] if damage == "truncated" else b"")
        message = r"truncated|ends in the middle|not an MCAP file"
    elif damage == "schema":
        from ik_core.bundled import import_bundled

        writer_module = import_bundled("mcap_ros2.writer")
        with path.open("wb") as stream:
            writer = writer_module.Writer(stream, compression=import_bundled("mcap.writer").CompressionType.NONE)
            writer.write_message("/joint_states", writer.register_msgdef(JOINT_STATE, "string data\n"),
                                 {"data": "x"}, log_time=T0)
            writer.finish()
        message = r"cannot be decoded as sensor_msgs/msg/JointState"
    elif damage == "missing joint":
        write_bag(path, [("/joint_states", JOINT_STATE, joint_state(T0 + k, names[:5], [0.0] * 5), T0 + k)
                         for k in range(3)])
        message = rf"missing joint\(s\) \['{names[5]}'\]"
    else:
        write_bag(path, [("/joint_states", JOINT_STATE, joint_state(T0 + k, names, [0.0] * 6), T0 + k)
                         for k in range(3)], compression="lz4")
        message = r"compressed with lz4.*mcap decompress"
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.articulate.trajectory_import(filepath=str(path), start_frame=20)
    assert _state(ur5) == before


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "BLENDER_USER_RESOURCES": str(tmp_path / "user")}
    return subprocess.run([sys.executable, str(CLI), *args], capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.slow
def test_cli_imports_a_bag_topic_and_exports_mcap(ur5, tmp_path):
    """cli.py trajectory --topic keys a bag's topic on the rig and saves; cli.py export --out x.mcap --topic writes
    JointState on that topic with the same values."""
    names = _names(ur5)
    bag = _bag(tmp_path / "robot.mcap", names)
    blend = tmp_path / "robot.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    keyed = tmp_path / "keyed.blend"
    done = _cli(tmp_path, "trajectory", str(blend), "--armature", ur5.name, "--file", str(bag), "--topic",
                "/joint_states", "--out", str(keyed))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"articulate: keyed robot.mcap on {ur5.name}, frames 1-10 at 50 fps" in done.stdout
    out = tmp_path / "again.mcap"
    done = _cli(tmp_path, "export", str(keyed), "--armature", ur5.name, "--out", str(out), "--topic", "/ur5/states")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    from ik_core.trajectory.mcap_files import read_joint_mcap

    back = read_joint_mcap(out, names)
    assert back.topic == "/ur5/states"
    home = np.array([0.0, -1.5, 1.5, -1.5, 1.5, 0.0])
    np.testing.assert_allclose(back.trajectory.positions, home + 0.01 * np.arange(10)[:, None], atol=1e-6)
    np.testing.assert_allclose(back.trajectory.times, np.arange(10) / 50.0, atol=1e-9)
    done = _cli(tmp_path, "trajectory", str(blend), "--armature", ur5.name, "--file", str(bag), "--out",
                str(tmp_path / "x.blend"))
    assert done.returncode == 2 and "several topics hold joint messages" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "x.blend").exists()
