# SPDX-License-Identifier: GPL-3.0-or-later
"""Fuzzing the trajectory and tracker file readers: any input reads or raises TrajectoryError naming the file."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from fuzz_inputs import FUZZ, file_inputs, read_or_refuse
from hypothesis import given
from hypothesis import strategies as st

from ik_core.humanoid import TRACKERS
from ik_core.trajectory import (
    TRACKER_FIELDS,
    JointTrajectory,
    PoseTrajectory,
    TrajectoryError,
    read_joint_csv,
    read_joint_json,
    read_pose_csv,
    read_tracker_csv,
)

JOINT_CSV = "# a comment\ntime,shoulder,elbow\n0.0,0.1,0.2\n0.5,0.3,-0.4\n\n1.0,1e-3,2\n"
JOINT_JSON = json.dumps({"joint_names": ["shoulder", "elbow"], "points": [
    {"positions": [0.1, 0.2], "velocities": [0, 0], "time_from_start": {"sec": 0, "nanosec": 0}},
    {"positions": [0.3, -0.4], "velocities": [1, 1], "time_from_start": {"sec": 0, "nanosec": 500000000}},
    {"positions": [1e-3, 2], "velocities": [0, 0], "time_from_start": 1.0}]}, indent=1)
POSE_CSV = "time,x,y,z,qw,qx,qy,qz\n0,0.1,0.2,0.3,1,0,0,0\n0.5,0.2,0.2,0.3,0.7071,0.7071,0,0\n"
TRACKER_HEADER = ["time"] + [f"{t}_{f}" for t in TRACKERS[:3] for f in TRACKER_FIELDS]
TRACKER_CSV = ",".join(TRACKER_HEADER) + "\n" + "".join(
    f"{k / 10},{','.join(['1.5', '0', '0.2', '1', '0', '0', '0'] * 3)}\n" for k in range(3)
) + f"0.3,{','.join([''] * 7 + ['nan'] * 7 + ['0.1'] * 7)}\n"

read_trackers = partial(read_tracker_csv, trackers=TRACKERS, required=TRACKERS[:3])
READERS: dict[str, tuple[Callable[[Path], object], str]] = {
    "joint_csv": (read_joint_csv, JOINT_CSV),
    "joint_json": (read_joint_json, JOINT_JSON),
    "pose_csv": (read_pose_csv, POSE_CSV),
    "tracker_csv": (read_trackers, TRACKER_CSV),
}
READERS_FOR_COUNTING = READERS  # the fuzz counts of issue 25 run every reader with its seed


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("trajectory_fuzz")


def assert_consistent(result: object) -> None:
    """What a successful read promises: finite values, strictly increasing times, at least one joint."""
    if isinstance(result, tuple):  # the tracker reader: (times, {tracker: (N, 7)})
        times, poses = result
        assert set(TRACKERS[:3]) <= set(poses) and all(p.shape == (len(times), 7) for p in poses.values())
        assert not any(np.isinf(p).any() for p in poses.values())
    else:
        assert isinstance(result, (JointTrajectory, PoseTrajectory))
        times = result.times
        if isinstance(result, JointTrajectory):
            assert result.positions.shape == (len(times), len(result.joint_names)) and result.joint_names
    assert len(times) and np.all(np.isfinite(times)) and np.all(np.diff(times) > 0)


@pytest.mark.parametrize("kind", sorted(READERS))
def test_the_seeds_read(folder: Path, kind: str) -> None:
    """Each seed file is valid (else every mutation would be refused trivially)."""
    read, seed = READERS[kind]
    result = read_or_refuse(read, folder / f"seed_{kind}", seed.encode())
    assert not isinstance(result, TrajectoryError), result
    assert_consistent(result)


@pytest.mark.parametrize("kind", sorted(READERS))
@FUZZ
@given(data=st.data())
def test_any_bytes_read_or_raise_trajectory_error_naming_the_file(folder: Path, kind: str, data: st.DataObject) -> None:
    """Mutated, truncated, random or non-UTF-8 input: a consistent result, or TrajectoryError with the file's name."""
    read, seed = READERS[kind]
    result = read_or_refuse(read, folder / f"fuzzed_{kind}", data.draw(file_inputs(seed)))
    if not isinstance(result, TrajectoryError):
        assert_consistent(result)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4)
    | st.sampled_from([10**400, -(10**300), 2**64]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["joint_names", "points", "positions", "velocities", "accelerations", "time_from_start",
                         "sec", "nanosec", "secs", "nsecs", "joint_trajectory", "x"]), inner, max_size=4),
    max_leaves=20,
)


@FUZZ
@given(doc=JSON_VALUES)
def test_any_json_document_reads_or_is_refused(folder: Path, doc: object) -> None:
    """Random JSON shaped from the format's own keys (huge integers, NaN, wrong types): read or TrajectoryError."""
    text = json.dumps(doc)  # NaN and Infinity are written as JSON's common extension, which json reads back
    result = read_or_refuse(read_joint_json, folder / "random.json", text.encode())
    if not isinstance(result, TrajectoryError):
        assert_consistent(result)


def write(folder: Path, name: str, text: str | bytes) -> Path:
    path = folder / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


@pytest.mark.parametrize(("name", "text", "match"), [
    ("long.csv", "time,a\n0," + "1" * 200_000 + "\n", r"long\.csv: line 2: not readable as CSV: field larger"),
    ("nul.csv", "time,a\n0,\x001\n", r"nul\.csv: line 2, column 'a': '\\x001' is not a number"),
    ("empty_name.csv", "time,,b\n0,1,2\n", r"empty_name\.csv: line 1: column 2 of the header has no name"),
    ("only_time.csv", "time\n0\n1\n", r"only_time\.csv: header: no joint columns"),
    ("latin1.csv", "time,épaule\n0,1\n".encode("latin-1"), r"latin1\.csv: line 1: byte 0xe9 is not UTF-8"),
])
def test_joint_csv_problems_name_file_and_line(folder: Path, name: str, text: str | bytes, match: str) -> None:
    """What the fuzzing found in joint CSV files: each is a TrajectoryError with the file and the line."""
    with pytest.raises(TrajectoryError, match=match):
        read_joint_csv(write(folder, name, text))


def deep_json(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(("name", "text", "match"), [
    ("huge_int.json", '{"joint_names": ["a"], "points": [{"positions": [1' + "0" * 400 + '], "time_from_start": 0}]}',
     r"huge_int\.json: points\[0\]\.positions\[0\]: .* is too large for a floating-point number"),
    ("digits.json", '{"joint_names": ["a"], "points": [{"positions": [1' + "0" * 5000 + '], "time_from_start": 0}]}',
     r"digits\.json: invalid JSON: Exceeds the limit \(4300 digits\)"),
    ("huge_float.json", '{"joint_names": ["a"], "points": [{"positions": [1e999], "time_from_start": 0}]}',
     r"huge_float\.json: points\[0\]\.positions\[0\]: inf is not a finite number"),
    ("deep.json", deep_json(100_000), r"deep\.json: invalid JSON: arrays or objects nested too deeply"),
    ("deep_inside.json", '{"joint_names": ["a"], "points": ' + deep_json(5000) + "}",
     r"deep_inside\.json: invalid JSON: arrays or objects nested too deeply"),
    ("cp1252.json", '{"joint_names": ["\x93a\x94"]}'.encode("latin-1"),
     r"cp1252\.json: line 1: byte 0x93 is not UTF-8"),
    ("long_value.json", '{"joint_names": ["a"], "points": [{"positions": [' + ",".join(["[1]"] * 10_000)
     + '], "time_from_start": 0}]}', r"long_value\.json: points\[0\]\.positions: expected a list of 1 numbers"),
])
def test_joint_json_problems_name_file_and_path(folder: Path, name: str, text: str | bytes, match: str) -> None:
    """Huge or deeply nested numbers and non-UTF-8 JSON: TrajectoryError naming the file, one line."""
    with pytest.raises(TrajectoryError, match=match) as info:
        read_joint_json(write(folder, name, text))
    assert len(str(info.value)) < 400  # the value is quoted, not the whole document


@pytest.mark.parametrize(("name", "text", "match"), [
    ("cp1252.csv", ",".join(TRACKER_HEADER).encode() + b"\n0" + b",\x96" * 21 + b"\n",
     r"cp1252\.csv: line 2: byte 0x96 is not UTF-8 text; save the tracker file as UTF-8"),
    ("inf.csv", TRACKER_CSV.replace("1.5", "inf", 1), r"inf\.csv: line 2, column 'head_x': 'inf' is not a finite"),
    ("nan_time.csv", TRACKER_CSV.replace("\n0.1,", "\nnan,", 1), r"nan_time\.csv: line 3, column 'time': 'nan'"),
    ("empty_time.csv", TRACKER_CSV.replace("\n0.1,", "\n,", 1), r"empty_time\.csv: line 3, column 'time': ''"),
    ("backwards.csv", TRACKER_CSV.replace("\n0.2,", "\n0.05,", 1), r"backwards\.csv: line 4: time 0\.05 does not"),
    ("no_hand.csv", TRACKER_CSV.replace("hand_r_qz", "hand_r_w"),
     r"no_hand\.csv: line 1: missing column\(s\) hand_r_qz"),
    ("twice.csv", TRACKER_CSV.replace("hand_r_qz", "hand_r_qy"), r"twice\.csv: line 1: repeated column name"),
    ("long.csv", TRACKER_CSV.replace("1.5", "1" * 140_000, 1), r"long\.csv: line 2: not readable as CSV"),
    ("header_only.csv", ",".join(TRACKER_HEADER) + "\n", r"header_only\.csv: no data rows"),
])
def test_tracker_csv_problems_name_file_and_line(folder: Path, name: str, text: str | bytes, match: str) -> None:
    """What Import Trackers used to show as a traceback or accept: now TrajectoryError with file and line."""
    with pytest.raises(TrajectoryError, match=match):
        read_trackers(write(folder, name, text))


def test_tracker_csv_lost_samples_are_nan(folder: Path) -> None:
    """Empty and 'nan' cells are lost samples (NaN), every other cell its number, times as written."""
    times, poses = read_trackers(write(folder, "trackers.csv", TRACKER_CSV))
    np.testing.assert_array_equal(times, [0.0, 0.1, 0.2, 0.3])
    assert np.isnan(poses["head"][3]).all() and np.isnan(poses["hand_l"][3]).all()
    np.testing.assert_array_equal(poses["hand_r"][3], [0.1] * 7)
    np.testing.assert_array_equal(poses["head"][0], [1.5, 0, 0.2, 1, 0, 0, 0])


@pytest.mark.parametrize(("text", "match"), [
    (POSE_CSV.replace("time,x,", "time,X,x,").replace("\n0,", "\n0,0,").replace("\n0.5,", "\n0.5,0,"),
     r"pose\.csv: header: repeated column name\(s\) \['x'\] \(case is ignored\)"),
    (POSE_CSV.replace("0.7071,0.7071", "1e200,1e200"), r"pose\.csv: line 3: quaternion .* is too large to normalise"),
])
def test_pose_csv_problems_name_file_and_line(folder: Path, text: str, match: str) -> None:
    """Columns equal but for case are ambiguous, and a quaternion whose norm overflows cannot be normalised."""
    with pytest.raises(TrajectoryError, match=match):
        read_pose_csv(write(folder, "pose.csv", text))
