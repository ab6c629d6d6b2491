# SPDX-License-Identifier: GPL-3.0-or-later
"""Joint trajectories in MCAP files (ROS 2 bags): round trips, topics, both message types, damaged and packed files."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from mcap_cases import NS, joint_state, joint_trajectory, write_bag

from ik_core.bundled import import_bundled
from ik_core.trajectory import JointTrajectory, TrajectoryError
from ik_core.trajectory.mcap_files import (
    JOINT_STATE,
    JOINT_TRAJECTORY,
    mcap_topics,
    read_joint_mcap,
    write_joint_mcap,
)

ARM = ["shoulder", "elbow", "wrist"]
T0 = 1_700_000_000 * NS + 123_456_789  # a real clock's stamps: 2023, to the nanosecond


def _states(n: int = 5, names=ARM, step_ns: int = 20_000_000, start: int = T0, topic: str = "/joint_states"):
    return [(topic, JOINT_STATE, joint_state(start + k * step_ns, list(names), [0.1 * k + i for i in
                                                                                range(len(names))]),
             start + k * step_ns + 1000) for k in range(n)]


def test_round_trip_keeps_positions_and_times(tmp_path: Path) -> None:
    """Written then read: the same positions bit for bit, times to the nanosecond, on /joint_states, header stamps."""
    rng = np.random.default_rng(7)
    times = np.cumsum(rng.uniform(0.001, 0.1, 40)) - 0.01
    times[0] = 0.0
    traj = JointTrajectory(tuple(ARM), times, rng.normal(size=(40, 3)))
    path = tmp_path / "out.mcap"
    write_joint_mcap(path, traj, start_ns=T0)
    assert mcap_topics(path) == {"/joint_states": JOINT_STATE}
    bag = read_joint_mcap(path, ARM)
    assert (bag.topic, bag.message_type, bag.clock, bag.start_ns, bag.notes) == (
        "/joint_states", JOINT_STATE, "header stamps", T0, ())
    assert np.array_equal(bag.trajectory.positions, traj.positions)
    assert np.max(np.abs(bag.trajectory.times - traj.times)) <= 1e-9
    write_joint_mcap(path, traj, topic="/robot/joint_states")  # start 0: header stamps still (not all zero)
    bag = read_joint_mcap(path)
    assert (bag.topic, bag.clock, bag.trajectory.joint_names) == ("/robot/joint_states", "header stamps", tuple(ARM))


def test_messages_in_another_order_with_extra_joints(tmp_path: Path) -> None:
    """JointState messages naming the joints in another order, with a gripper and wheels besides: reordered to the
    rig's joints, the others left out and noted; a message missing a joint is skipped and counted."""
    names = ["wheel_l", "wrist", "finger", "shoulder", "elbow", "wheel_r"]
    records = _states(6, names)
    records.insert(3, ("/joint_states", JOINT_STATE, joint_state(T0 + 50_000_000, ["finger"], [0.02]), T0 + 50_001_000))
    bag = read_joint_mcap(write_bag(tmp_path / "bag.mcap", records), ARM)
    assert bag.trajectory.joint_names == tuple(ARM)
    k = np.arange(6)[:, None] * 0.1
    assert np.allclose(bag.trajectory.positions, k + np.array([3, 4, 1]), atol=0, rtol=0)
    assert np.allclose(bag.trajectory.times, np.arange(6) * 0.02, atol=1e-12)
    assert bag.notes == ("/joint_states: joint(s) not in the rig left out: finger, wheel_l, wheel_r",
                         "/joint_states: 1 message(s) without every joint of the rig skipped")


def test_missing_joint_is_named(tmp_path: Path) -> None:
    path = write_bag(tmp_path / "bag.mcap", _states(3, ["shoulder", "elbow"]))
    with pytest.raises(TrajectoryError, match=r"bag.mcap: every message on /joint_states: missing joint\(s\) "
                                              r"\['wrist'\]; the messages have \['elbow', 'shoulder'\]"):
        read_joint_mcap(path, ARM)


def test_zero_stamps_use_log_times_and_say_so(tmp_path: Path) -> None:
    records = [(t, k, {**m, "header": {"stamp": {"sec": 0, "nanosec": 0}, "frame_id": ""}}, log)
               for t, k, m, log in _states(4)]
    bag = read_joint_mcap(write_bag(tmp_path / "bag.mcap", records), ARM)
    assert bag.clock == "log times" and bag.start_ns == T0 + 1000
    assert np.allclose(bag.trajectory.times, [0, 0.02, 0.04, 0.06], atol=1e-12)


def test_several_topics_need_a_choice(tmp_path: Path) -> None:
    """Two topics of joint messages (and another type) : refused listing them until one is chosen; a JointTrajectory
    gives its points at their time_from_start, reordered, with velocities, the further messages noted."""
    order = ["wrist", "shoulder", "elbow"]
    plan = joint_trajectory(order, [(0.0, [0, 1, 2]), (0.5, [0.1, 1.1, 2.1]), (1.25, [0.2, 1.2, 2.2])],
                            velocities=[[0, 0, 0], [1, 2, 3], [0, 0, 0]])
    records = [*_states(3), ("/arm/joint_trajectory", JOINT_TRAJECTORY, plan, T0),
               ("/arm/joint_trajectory", JOINT_TRAJECTORY, plan, T0 + NS)]
    path = write_bag(tmp_path / "bag.mcap", records)
    assert mcap_topics(path) == {"/joint_states": JOINT_STATE, "/arm/joint_trajectory": JOINT_TRAJECTORY}
    with pytest.raises(TrajectoryError, match=r"several topics hold joint messages: /arm/joint_trajectory "
                                              r"\(trajectory_msgs/msg/JointTrajectory\), /joint_states "
                                              r"\(sensor_msgs/msg/JointState\); choose one"):
        read_joint_mcap(path, ARM)
    with pytest.raises(TrajectoryError, match=r"no JointState or JointTrajectory messages on topic '/tf'"):
        read_joint_mcap(path, ARM, topic="/tf")
    bag = read_joint_mcap(path, ARM, topic="/arm/joint_trajectory")
    assert (bag.message_type, bag.clock) == (JOINT_TRAJECTORY, "time_from_start")
    assert np.array_equal(bag.trajectory.times, [0.0, 0.5, 1.25])
    assert np.array_equal(bag.trajectory.positions, [[1, 2, 0], [1.1, 2.1, 0.1], [1.2, 2.2, 0.2]])
    assert np.array_equal(bag.trajectory.velocities, [[0, 0, 0], [2, 3, 1], [0, 0, 0]])
    assert bag.trajectory.accelerations is None
    assert bag.notes == ("/arm/joint_trajectory: 1 more JointTrajectory message(s) after the first left out",)
    assert read_joint_mcap(path, ARM, topic="/joint_states").trajectory.joint_names == tuple(ARM)


def test_times_must_increase(tmp_path: Path) -> None:
    records = _states(4)
    records[2] = (records[2][0], records[2][1], joint_state(T0, ARM, [0, 0, 0]), records[2][3])
    with pytest.raises(TrajectoryError, match=r"sample 2 on /joint_states has time 1700000000.1234567 s, not "
                                              r"after the one before .*header stamps.*strictly increasing"):
        read_joint_mcap(write_bag(tmp_path / "bag.mcap", records), ARM)
    plan = joint_trajectory(ARM, [(0.0, [0, 1, 2]), (0.0, [0, 1, 2])])
    with pytest.raises(TrajectoryError, match=r"point 1 of the JointTrajectory on /plan has time_from_start 0.0 s"):
        read_joint_mcap(write_bag(tmp_path / "plan.mcap", [("/plan", JOINT_TRAJECTORY, plan, T0)]), ARM)


def test_damaged_files_give_clear_errors(tmp_path: Path) -> None:
    """Truncated, empty, not MCAP, a wrong schema, no joint messages: each a TrajectoryError naming the file."""
    good = write_bag(tmp_path / "good.mcap", _states(50))
    data = good.read_bytes()
    cases = {
        "truncated.mcap": (data[: len(data) // 2], r"truncated.*mcap recover"),
        "empty.mcap": (b"", r"empty.mcap: (the file ends in the middle of a record|not an MCAP file)"),
        "text.mcap": (b"time,a\n0,1\n" * 10, r"text.mcap: not an MCAP file"),
    }
    for name, (content, message) in cases.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(TrajectoryError, match=message):
            read_joint_mcap(tmp_path / name, ARM)
    with pytest.raises(TrajectoryError, match="MCAP file not found"):
        read_joint_mcap(tmp_path / "none.mcap", ARM)
    writer_module = import_bundled("mcap_ros2.writer")
    with (tmp_path / "schema.mcap").open("wb") as stream:  # a JointState channel whose schema is not JointState's
        writer = writer_module.Writer(stream, compression=import_bundled("mcap.writer").CompressionType.NONE)
        schema = writer.register_msgdef(JOINT_STATE, "int8 level\n")
        writer.write_message("/joint_states", schema, {"level": 3}, log_time=T0)
        other = writer.register_msgdef("std_msgs/msg/String", "string data\n")
        writer.write_message("/chatter", other, {"data": "hi"}, log_time=T0)
        writer.finish()
    with pytest.raises(TrajectoryError, match=r"message 0 on this topic cannot be decoded as "
                                              r"sensor_msgs/msg/JointState: its schema has no header, name, position"):
        read_joint_mcap(tmp_path / "schema.mcap", ARM)
    with (tmp_path / "chatter.mcap").open("wb") as stream:
        writer = writer_module.Writer(stream, compression=import_bundled("mcap.writer").CompressionType.NONE)
        writer.write_message("/chatter", writer.register_msgdef("std_msgs/msg/String", "string data\n"),
                             {"data": "hi"}, log_time=T0)
        writer.finish()
    with pytest.raises(TrajectoryError, match=r"no sensor_msgs/msg/JointState or trajectory_msgs/msg/JointTrajectory"):
        read_joint_mcap(tmp_path / "chatter.mcap", ARM)


@pytest.mark.parametrize("length", [2**63 - 1, 2**40, 2**31])
def test_a_damaged_record_length_is_refused_without_allocating_it(tmp_path: Path, length: int) -> None:
    """The first record's length (after the 8 magic bytes and its opcode) damaged: the reader asked the file
    for that many bytes at once (OverflowError past 2^63, MemoryError or gigabytes allocated below). Found by
    dev/fuzz_files.py. Also a file cut inside a length field (struct.error). Each is a TrajectoryError."""
    data = bytearray(write_bag(tmp_path / "good.mcap", _states(5)).read_bytes())
    data[9:17] = length.to_bytes(8, "little")
    (tmp_path / "long.mcap").write_bytes(bytes(data))
    with pytest.raises(TrajectoryError, match=r"long.mcap: (the file ends in the middle of a record|damaged MCAP)"):
        read_joint_mcap(tmp_path / "long.mcap", ARM)
    (tmp_path / "cut.mcap").write_bytes(bytes(data[:13]))
    with pytest.raises(TrajectoryError, match=r"cut.mcap: (the file ends in the middle of a record|damaged MCAP)"):
        read_joint_mcap(tmp_path / "cut.mcap", ARM)


@pytest.mark.parametrize("compression", ["zstd", "lz4"])
def test_compressed_chunks(tmp_path: Path, compression: str) -> None:
    """Chunks compressed (by hand) with zstd or lz4 read like uncompressed ones where the compiled package is
    there (Blender ships zstandard); elsewhere they are refused naming the compression and the way out."""
    plain = read_joint_mcap(write_bag(tmp_path / "plain.mcap", _states(20)), ARM).trajectory
    path = write_bag(tmp_path / "packed.mcap", _states(20), compression=compression)
    package = {"zstd": "zstandard", "lz4": "lz4"}[compression]
    if importlib.util.find_spec(package) is not None:
        packed = read_joint_mcap(path, ARM).trajectory
        assert np.array_equal(packed.positions, plain.positions) and np.array_equal(packed.times, plain.times)
    else:
        with pytest.raises(TrajectoryError, match=rf"packed.mcap: its chunks are compressed with {compression}, "
                                                  rf"which needs the compiled Python package {package}.*"
                                                  r"mcap decompress in.mcap -o out.mcap"):
            read_joint_mcap(path, ARM)


def test_write_refuses_an_empty_topic(tmp_path: Path) -> None:
    traj = JointTrajectory(("a",), [0.0, 0.1], [[0.0], [1.0]])
    with pytest.raises(TrajectoryError, match="the MCAP topic is empty"):
        write_joint_mcap(tmp_path / "x.mcap", traj, topic=" ")
    assert not (tmp_path / "x.mcap").exists()
