# SPDX-License-Identifier: GPL-3.0-or-later
"""Joint trajectories in MCAP files (ROS 2 bags): sensor_msgs/msg/JointState and trajectory_msgs/msg/JointTrajectory.

Read and written with the ``mcap`` and ``mcap-ros2-support`` packages (pure Python, bundled as
wheels, imported only here and only when an MCAP file is read or written). Messages are CDR
encoded with ``ros2msg`` schemas, as ``ros2 bag record`` writes them and Foxglove plays them.

Times: a JointState topic's samples are timed by their header stamps, or by the messages' log
times when every stamp is zero (a publisher that never sets them); a JointTrajectory message's points
by their ``time_from_start``. Times are seconds from the first sample (the first is 0); the clock
used and the first sample's absolute time are part of what is read.

Chunks compressed with zstd need the compiled ``zstandard`` package (Blender ships it), lz4
chunks the compiled ``lz4`` package (nobody ships it here): without them a file is refused with
the command that rewrites it uncompressed. Files are written uncompressed.
"""

from __future__ import annotations

import io
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..bundled import import_bundled
from .model import JointTrajectory, TrajectoryError

JOINT_STATE = "sensor_msgs/msg/JointState"
JOINT_TRAJECTORY = "trajectory_msgs/msg/JointTrajectory"
MESSAGE_TYPES = (JOINT_STATE, JOINT_TRAJECTORY)
DEFAULT_TOPIC = "/joint_states"
NS = 1_000_000_000
_SEPARATOR = "\n" + "=" * 80 + "\n"
# The message definitions as rosbag2 stores them: the type's own, then each type it uses.
_TIME = "MSG: builtin_interfaces/Time\nint32 sec\nuint32 nanosec\n"
_HEADER = "MSG: std_msgs/Header\nbuiltin_interfaces/Time stamp\nstring frame_id\n"
SCHEMAS = {
    JOINT_STATE: _SEPARATOR.join((
        "std_msgs/Header header\nstring[] name\nfloat64[] position\nfloat64[] velocity\nfloat64[] effort\n",
        _HEADER, _TIME)),
    JOINT_TRAJECTORY: _SEPARATOR.join((
        "std_msgs/Header header\nstring[] joint_names\nJointTrajectoryPoint[] points\n",
        "MSG: trajectory_msgs/JointTrajectoryPoint\nfloat64[] positions\nfloat64[] velocities\n"
        "float64[] accelerations\nfloat64[] effort\nbuiltin_interfaces/Duration time_from_start\n",
        "MSG: builtin_interfaces/Duration\nint32 sec\nuint32 nanosec\n", _HEADER, _TIME)),
}
REWRITE_HINT = ("rewrite it uncompressed, with Foxglove's mcap CLI (`mcap decompress in.mcap -o out.mcap`) or "
                "`ros2 bag convert` with an output without compression")


@dataclass(frozen=True)
class McapTrajectory:
    """A joint trajectory read from one topic of an MCAP file, with where its times come from.

    Attributes:
        trajectory: The samples, times in seconds from the first.
        topic: The topic read.
        message_type: :data:`JOINT_STATE` or :data:`JOINT_TRAJECTORY`.
        clock: "header stamps", "log times" or "time_from_start".
        start_ns: Absolute time of the first sample [ns since the epoch] (0 for time_from_start).
        notes: What was left out: joints the rig does not have, messages without every joint,
            further JointTrajectory messages.
    """

    trajectory: JointTrajectory
    topic: str
    message_type: str
    clock: str
    start_ns: int
    notes: tuple[str, ...] = ()


def _modules():
    """(mcap.reader, mcap.exceptions, mcap_ros2.decoder), from the bundled wheels if need be."""
    return (import_bundled("mcap.reader"), import_bundled("mcap.exceptions"), import_bundled("mcap_ros2.decoder"))


class _Bounded:
    """A file whose reads never ask for more than the bytes left in it.

    A damaged record or string length (up to 2^64) is read as asked: the buffered file
    allocated that many bytes before finding the file's end (a MemoryError, an OverflowError
    past the index size, or gigabytes taken). Clamped, the read comes back short and the MCAP
    reader says the file ended in the middle of a record.
    """

    def __init__(self, stream: io.BufferedReader) -> None:
        self._stream = stream
        self._size = os.fstat(stream.fileno()).st_size

    def read(self, size: int = -1) -> bytes:
        left = max(self._size - self._stream.tell(), 0)
        return self._stream.read(left if size is None or size < 0 else min(size, left))


def _read_messages(path: str) -> dict[str, list]:
    """Every JointState or JointTrajectory message of the file, undecoded, by topic, in file order.

    Raises:
        TrajectoryError: Not an MCAP file, a truncated or damaged one, or compressed chunks that
            cannot be read here (naming the compression and how to rewrite the file).
    """
    reader, errors, _decoder = _modules()
    by_topic: dict[str, list] = {}
    try:
        with open(path, "rb") as stream:
            for schema, channel, message in reader.NonSeekingReader(_Bounded(stream)).iter_messages(
                    log_time_order=False):
                if schema is not None and schema.name in MESSAGE_TYPES:
                    by_topic.setdefault(channel.topic, []).append((schema, channel, message))
    except FileNotFoundError:
        raise TrajectoryError("MCAP file not found", path) from None
    except OSError as err:
        raise TrajectoryError(f"cannot read MCAP file: {err.strerror or err}", path) from None
    except errors.UnsupportedCompressionError as err:
        package = str(err).rpartition(" ")[2]  # "unsupported compression type zstandard"
        name = {"zstandard": "zstd"}.get(package, package)
        raise TrajectoryError(f"its chunks are compressed with {name}, which needs the compiled Python package "
                              f"{package} (not available here); {REWRITE_HINT}", path) from None
    except errors.InvalidMagic:
        raise TrajectoryError("not an MCAP file (it does not start with MCAP's magic bytes)", path) from None
    except errors.EndOfFile:
        raise TrajectoryError("the file ends in the middle of a record: truncated (a recording cut short?); "
                              "`mcap recover in.mcap -o out.mcap` rewrites what it holds", path) from None
    except (errors.McapError, ValueError, KeyError, EOFError, struct.error, OverflowError) as err:
        # Damaged records: a bad length, a field cut short (struct's "unpack requires a buffer").
        raise TrajectoryError(f"damaged MCAP file: {err}", path) from None
    return by_topic


def mcap_topics(path: str | os.PathLike) -> dict[str, str]:
    """The topics of an MCAP file carrying JointState or JointTrajectory messages, with their types.

    Raises:
        TrajectoryError: As :func:`read_joint_mcap` for an unreadable file.
    """
    return {topic: msgs[0][0].name for topic, msgs in _read_messages(os.fspath(path)).items()}


def _choose_topic(path: str, by_topic: dict[str, list], topic: str | None) -> str:
    listed = ", ".join(f"{t} ({msgs[0][0].name})" for t, msgs in sorted(by_topic.items())) or "none"
    if topic:
        if topic not in by_topic:
            raise TrajectoryError(f"no JointState or JointTrajectory messages on topic {topic!r}; topics with them: "
                                  f"{listed}", path)
        return topic
    if not by_topic:
        raise TrajectoryError(f"no {JOINT_STATE} or {JOINT_TRAJECTORY} messages (ROS 2, CDR encoded with ros2msg "
                              "schemas) in the file", path)
    if len(by_topic) > 1:
        raise TrajectoryError(f"several topics hold joint messages: {listed}; choose one (Topic)", path)
    return next(iter(by_topic))


# The fields read from each message type: a schema named like it but without them is not it.
FIELDS = {JOINT_STATE: ("header", "name", "position"), JOINT_TRAJECTORY: ("joint_names", "points")}


def _decode(path: str, schema, message, index: int):
    """A message decoded with its schema, holding the fields :data:`FIELDS` names for its type."""
    try:
        decoder = _modules()[2].DecoderFactory().decoder_for(message_encoding="cdr", schema=schema)
        if decoder is None:
            raise ValueError(f"schema encoding {schema.encoding!r} is not ros2msg")
        decoded = decoder(message.data)
    except Exception as err:  # the decoder raises struct, index and value errors on bad data or schemas
        raise TrajectoryError(f"message {index} on this topic cannot be decoded as {schema.name}: "
                              f"{type(err).__name__}: {err}", path) from None
    missing = [f for f in FIELDS[schema.name] if not hasattr(decoded, f)]
    if missing:
        raise TrajectoryError(f"message {index} on this topic cannot be decoded as {schema.name}: its schema has "
                              f"no {', '.join(missing)} field (not the ROS 2 definition)", path)
    return decoded


def _columns(path: str, available: Sequence[str], wanted: Sequence[str] | None, where: str) -> list[int]:
    if wanted is None:
        return list(range(len(available)))
    missing = [n for n in wanted if n not in available]
    if missing:
        raise TrajectoryError(f"missing joint(s) {missing}; the messages have {list(available)}", path, where)
    return [list(available).index(n) for n in wanted]


def read_joint_mcap(
    path: str | os.PathLike, joint_names: Sequence[str] | None = None, *, topic: str | None = None
) -> McapTrajectory:
    """Read a joint trajectory from one topic of an MCAP file.

    Args:
        path: The .mcap file.
        joint_names: Joints to return, in this order; every message used must name them all.
            Joints in the messages but not here are left out and noted. ``None``: the joints
            of the first message, in its order.
        topic: The topic to read; ``None`` when the file has only one topic of joint messages.

    Returns:
        The trajectory with its topic, type, clock and notes. A JointState topic gives one
        sample per message (messages without every joint are skipped and counted); a
        JointTrajectory topic gives the points of its first message (velocities and
        accelerations when every point has them).

    Raises:
        TrajectoryError: An unreadable, truncated or damaged file, compressed chunks that cannot
            be read here, no joint messages, several topics and none chosen (listing them), an
            unknown topic, messages that do not decode, joints missing from every message, or
            times not strictly increasing; the message names the file.
        DependencyError: The mcap packages are neither installed nor bundled.
    """
    path = os.fspath(path)
    by_topic = _read_messages(path)
    topic = _choose_topic(path, by_topic, topic)
    messages = by_topic[topic]
    kind = messages[0][0].name
    if kind == JOINT_TRAJECTORY:
        return _trajectory_message(path, topic, messages, joint_names)
    messages = sorted(messages, key=lambda m: m[2].log_time)  # file order is not time order across chunks
    rows, stamps, logs, names, skipped, extra = [], [], [], None, 0, set()
    for k, (schema, _channel, message) in enumerate(messages):
        decoded = _decode(path, schema, message, k)
        available = list(decoded.name)
        if len(decoded.position) != len(available):
            raise TrajectoryError(f"message {k} on {topic} has {len(available)} names but {len(decoded.position)} "
                                  "positions", path)
        wanted = joint_names if joint_names is not None else (names or available)
        if not set(wanted) <= set(available):
            skipped += 1
            continue
        names = list(wanted)
        extra.update(n for n in available if n not in wanted)
        cols = _columns(path, available, wanted, f"message {k} on {topic}")
        rows.append([decoded.position[c] for c in cols])
        stamps.append(decoded.header.stamp.sec * NS + decoded.header.stamp.nanosec)
        logs.append(message.log_time)
    if not rows:
        have = sorted({n for s, _c, m in messages[:1] for n in _decode(path, s, m, 0).name})
        _columns(path, have, joint_names, f"every message on {topic}")  # raises, naming the missing joints
    use_stamps = any(stamps)  # a publisher that never sets them leaves every stamp zero
    clock = "header stamps" if use_stamps else "log times"
    times_ns = np.array(stamps if use_stamps else logs, dtype=np.int64)
    order_problem = np.flatnonzero(np.diff(times_ns) <= 0)
    if order_problem.size:
        k = int(order_problem[0]) + 1
        raise TrajectoryError(f"sample {k} on {topic} has time {int(times_ns[k]) / NS!r} s, not after the one "
                              f"before ({int(times_ns[k - 1]) / NS!r} s; {clock}); times must be strictly "
                              "increasing", path)
    notes = []
    if extra:
        notes.append(f"{topic}: joint(s) not in the rig left out: {', '.join(sorted(extra))}")
    if skipped:
        notes.append(f"{topic}: {skipped} message(s) without every joint of the rig skipped")
    traj = JointTrajectory(tuple(names), (times_ns - times_ns[0]) / NS, np.array(rows, dtype=float))
    return McapTrajectory(traj, topic, kind, clock, int(times_ns[0]), tuple(notes))


def _trajectory_message(path: str, topic: str, messages: list, joint_names: Sequence[str] | None) -> McapTrajectory:
    """The points of the first JointTrajectory message on ``topic``."""
    schema, _channel, message = messages[0]
    decoded = _decode(path, schema, message, 0)
    available = list(decoded.joint_names)
    where = f"the JointTrajectory on {topic}"
    cols = _columns(path, available, joint_names, where)
    points = decoded.points
    if not points:
        raise TrajectoryError(f"{where} has no points", path)
    arrays: dict[str, list] = {"positions": [], "velocities": [], "accelerations": []}
    times = []
    for k, point in enumerate(points):
        for key, rows in arrays.items():
            values = list(getattr(point, key))
            if key != "positions" and not values:
                continue
            if len(values) != len(available):
                raise TrajectoryError(f"point {k} of {where} has {len(values)} {key} for {len(available)} joints",
                                      path)
            rows.append([values[c] for c in cols])
        times.append(point.time_from_start.sec * NS + point.time_from_start.nanosec)
    steps = np.diff(times)
    if np.any(steps <= 0):
        k = int(np.argmax(steps <= 0)) + 1
        raise TrajectoryError(f"point {k} of {where} has time_from_start {times[k] / NS!r} s, not after the one "
                              f"before ({times[k - 1] / NS!r} s); times must be strictly increasing", path)

    def table(key: str) -> np.ndarray | None:
        return np.array(arrays[key], dtype=float) if len(arrays[key]) == len(points) else None

    notes = []
    extra = [n for n in available if joint_names is not None and n not in joint_names]
    if extra:
        notes.append(f"{topic}: joint(s) not in the rig left out: {', '.join(extra)}")
    if len(messages) > 1:
        notes.append(f"{topic}: {len(messages) - 1} more JointTrajectory message(s) after the first left out")
    names = tuple(available[c] for c in cols)
    t = (np.array(times, dtype=np.int64) - times[0]) / NS
    traj = JointTrajectory(names, t, table("positions"), table("velocities"), table("accelerations"))
    return McapTrajectory(traj, topic, JOINT_TRAJECTORY, "time_from_start", 0, tuple(notes))


def write_joint_mcap(
    path: str | os.PathLike, trajectory: JointTrajectory, *, topic: str = DEFAULT_TOPIC, start_ns: int = 0
) -> None:
    """Write a trajectory as JointState messages, one per sample, into an uncompressed MCAP file.

    Each message's header stamp and log time are ``start_ns`` plus the sample's time, in
    nanoseconds (rounded to the nanosecond); the schema is ``sensor_msgs/msg/JointState`` in
    ``ros2msg`` with its dependencies, the channel CDR encoded, as ROS 2 bags hold them
    (Foxglove plays the file).

    Args:
        path: Destination file (overwritten).
        trajectory: The samples (times [s], positions [rad or m]).
        topic: The topic, ``/joint_states`` by default.
        start_ns: Absolute time of time 0 [ns since the epoch].

    Raises:
        TrajectoryError: An empty topic, or a negative start or sample time.
        DependencyError: The mcap packages are neither installed nor bundled.
    """
    if not topic or not topic.strip():
        raise TrajectoryError("the MCAP topic is empty; ROS topics look like /joint_states")
    if start_ns < 0 or trajectory.times[0] < 0:
        raise TrajectoryError(f"times must not be before 1970: start_ns {start_ns}, first sample at "
                              f"{trajectory.times[0]!r} s")
    writer_module = import_bundled("mcap_ros2.writer")
    compression = import_bundled("mcap.writer").CompressionType.NONE
    stamps = start_ns + np.round(trajectory.times * NS).astype(np.int64)
    names = list(trajectory.joint_names)
    with Path(path).open("wb") as stream:
        writer = writer_module.Writer(stream, compression=compression)
        schema = writer.register_msgdef(JOINT_STATE, SCHEMAS[JOINT_STATE])
        for k, (ns, row) in enumerate(zip(stamps.tolist(), trajectory.positions)):
            message = {"header": {"stamp": {"sec": ns // NS, "nanosec": ns % NS}, "frame_id": ""},
                       "name": names, "position": row.tolist(), "velocity": [], "effort": []}
            writer.write_message(topic, schema, message, log_time=ns, publish_time=ns, sequence=k)
        writer.finish()
