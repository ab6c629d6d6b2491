# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of trajectory import/export, resampling and the per-frame feasibility check."""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ik_core.errors import InvalidInputError, UnknownNameError
from ik_core.model.kinematics import jacobian
from ik_core.robots.presets import load_preset, preset_info
from ik_core.trajectory import (
    JointTrajectory,
    PoseTrajectory,
    TrajectoryError,
    check_trajectory,
    finite_differences,
    read_joint_csv,
    read_joint_json,
    read_pose_csv,
    resample,
    uniform_times,
    write_joint_csv,
    write_joint_json,
    write_pose_csv,
)
from ik_core.trajectory.check import limit_slack, onto_limits

SETTINGS = settings(max_examples=30, deadline=None)
UR = ("shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint", "wrist_3_joint")
FLOATS = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12)


def random_trajectory(seed: int, n: int = 20, names=("a", "b", "c"), derivatives: bool = False) -> JointTrajectory:
    rng = np.random.default_rng(seed)
    times = np.cumsum(rng.uniform(1e-3, 0.5, n)) + rng.normal()
    scale = 10.0 ** rng.integers(-8, 4, (n, len(names)))
    pos = rng.normal(size=(n, len(names))) * scale
    extra = (rng.normal(size=(n, len(names))), rng.normal(size=(n, len(names)))) if derivatives else (None, None)
    return JointTrajectory(tuple(names), times, pos, *extra)


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return path


# --- the data types ---------------------------------------------------------------------------


def test_joint_trajectory_validates_and_freezes():
    """Bad names, shapes, NaN and non-increasing times raise TrajectoryError; arrays are read-only."""
    traj = JointTrajectory(("a", "b"), [0.0, 1.0], [[0, 1], [2, 3]])
    assert len(traj) == 2 and traj.duration == 1.0
    with pytest.raises(ValueError):
        traj.positions[0, 0] = 5.0
    with pytest.raises(TrajectoryError, match="repeated: a"):
        JointTrajectory(("a", "a"), [0.0], [[0, 1]])
    with pytest.raises(TrajectoryError, match=r"shape \(2, 2\)"):
        JointTrajectory(("a", "b"), [0.0, 1.0], [[0, 1]])
    with pytest.raises(TrajectoryError, match="NaN"):
        JointTrajectory(("a",), [0.0, 1.0], [[0.0], [np.nan]])
    with pytest.raises(TrajectoryError, match="strictly increasing; sample 2"):
        JointTrajectory(("a",), [0.0, 1.0, 1.0], [[0.0], [1.0], [2.0]])
    assert issubclass(TrajectoryError, InvalidInputError)
    picked = traj.select(["b", "a"])
    np.testing.assert_array_equal(picked.positions, [[1, 0], [3, 2]])
    with pytest.raises(UnknownNameError):
        traj.select(["z"])


# --- CSV and JSON round trips -----------------------------------------------------------------


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), value=FLOATS)
def test_joint_csv_round_trip_is_exact(tmp_path_factory, seed, value):
    """write_joint_csv then read_joint_csv returns bit-identical times and positions."""
    traj = random_trajectory(seed, names=("shoulder, left", 'quote"d', "c"))
    pos = np.array(traj.positions)
    pos[3, 1] = value
    traj = JointTrajectory(traj.joint_names, traj.times, pos)
    path = tmp_path_factory.mktemp("csv") / "t.csv"
    write_joint_csv(path, traj)
    back = read_joint_csv(path)
    assert back.joint_names == traj.joint_names
    np.testing.assert_array_equal(back.times, traj.times)
    np.testing.assert_array_equal(back.positions, traj.positions)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_joint_json_round_trip_is_exact(tmp_path_factory, seed):
    """write_joint_json then read_joint_json returns identical arrays, derivatives included."""
    traj = random_trajectory(seed, derivatives=True)
    path = tmp_path_factory.mktemp("json") / "t.json"
    write_joint_json(path, traj)
    back = read_joint_json(path)
    for key in ("times", "positions", "velocities", "accelerations"):
        np.testing.assert_array_equal(getattr(back, key), getattr(traj, key))


def test_json_ros_time_format_rounds_to_nanoseconds(tmp_path):
    """time_format='ros' writes {sec, nanosec}; reading it back agrees to 1 ns."""
    traj = random_trajectory(1)
    traj = JointTrajectory(traj.joint_names, traj.times - traj.times[0] + 0.25, traj.positions)
    write_joint_json(tmp_path / "t.json", traj, time_format="ros")
    doc = json.loads((tmp_path / "t.json").read_text())
    assert set(doc["points"][0]["time_from_start"]) == {"sec", "nanosec"}
    np.testing.assert_allclose(read_joint_json(tmp_path / "t.json").times, traj.times, rtol=0, atol=1e-9)
    with pytest.raises(TrajectoryError, match="time_format"):
        write_joint_json(tmp_path / "t.json", traj, time_format="ms")


def test_ros_shaped_json_variants_are_read(tmp_path):
    """ROS 1 secs/nsecs, ROS 2 sec/nanosec, empty optional arrays and a MoveIt wrapper all read."""
    doc = {"joint_trajectory": {"joint_names": ["a", "b"], "points": [
        {"positions": [0, 1], "velocities": [], "time_from_start": {"secs": 0, "nsecs": 500000000}},
        {"positions": [2, 3], "velocities": [], "time_from_start": {"sec": 1, "nanosec": 0}},
        {"positions": [4, 5], "time_from_start": 1.5},
    ]}}
    traj = read_joint_json(write(tmp_path, "t.json", json.dumps(doc)), joint_names=["b", "a"])
    np.testing.assert_allclose(traj.times, [0.5, 1.0, 1.5], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(traj.positions, [[1, 0], [3, 2], [5, 4]])
    assert traj.velocities is None


# --- CSV and JSON errors ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, pattern",
    [
        ("time,a,b\n0,1,2\n1,x,3\n", r"t\.csv: line 3, column 'a': 'x' is not a number"),
        ("time,a,b\n0,1,2\n1,nan,3\n", r"line 3, column 'a': 'nan' is not a finite number"),
        ("time,a,b\n0,1,2\n1,2\n", r"line 3: 2 cells, but the header \(line 1\) has 3 columns"),
        ("time,a,b\n0,1,2\n# note\n\n0,2,3\n", r"line 5: time 0\.0 does not increase after 0\.0"),
        ("a,b\n0,1\n", r"header: the first column must be the time"),
        ("", r"empty file"),
        ("time,a,a\n0,1,2\n", r"repeated column name\(s\) \['a'\]"),
        ("time,a\n", r"no data rows"),
    ],
)
def test_csv_errors_name_file_and_line(tmp_path, text, pattern):
    """Malformed CSV raises TrajectoryError naming the file, the line and the column."""
    with pytest.raises(TrajectoryError, match=pattern):
        read_joint_csv(write(tmp_path, "t.csv", text))


def test_csv_joint_selection_missing_and_unknown(tmp_path):
    """joint_names selects and orders columns; missing or (by default) unknown joints raise."""
    path = write(tmp_path, "t.csv", "# exported\ntime,a,b,c\n0,1,2,3\n0.5,4,5,6\n")
    traj = read_joint_csv(path, joint_names=["c", "a"], ignore_unknown=True)
    assert traj.joint_names == ("c", "a")
    np.testing.assert_array_equal(traj.positions, [[3, 1], [6, 4]])
    with pytest.raises(TrajectoryError, match=r"missing joint\(s\) \['z'\]; the file has \['a', 'b', 'c'\]"):
        read_joint_csv(path, joint_names=["a", "z"])
    with pytest.raises(TrajectoryError, match=r"unknown joint name\(s\) \['b'\]"):
        read_joint_csv(path, joint_names=["a", "c"])
    with pytest.raises(TrajectoryError, match="file not found"):
        read_joint_csv(tmp_path / "none.csv")


def test_csv_joints_named_with_spaces_at_their_ends_read_back_under_their_names(tmp_path):
    """A URDF may name a joint " wrist" (urdfdom keeps the spaces): its column, read stripped as CSV cells are, is
    found by that name and returned under it, so the add-on's own export imports back (found by a fuzz of robot
    files). An exact name still wins, and a stripped name two columns share is missing, not guessed."""
    traj = JointTrajectory((" wrist", "elbow "), np.array([0.0, 0.5]), np.array([[1.0, 2.0], [3.0, 4.0]]))
    path = tmp_path / "padded.csv"
    write_joint_csv(path, traj)
    back = read_joint_csv(path, joint_names=[" wrist", "elbow "])
    assert back.joint_names == (" wrist", "elbow ")
    np.testing.assert_array_equal(back.positions, traj.positions)
    both = write(tmp_path, "both.csv", "time,a, a\n0,1,2\n")
    with pytest.raises(TrajectoryError, match="repeated"):
        read_joint_csv(both, joint_names=[" a"])


@pytest.mark.parametrize(
    "doc, pattern",
    [
        ('{"joint_names": ["a"], "points": [{"positions": ["x"], "time_from_start": 0}]}',
         r"points\[0\]\.positions\[0\]: expected a number"),
        ('{"joint_names": ["a"], "points": [{"positions": [NaN], "time_from_start": 0}]}',
         r"points\[0\]\.positions\[0\]: nan is not a finite number"),
        ('{"joint_names": ["a", "b"], "points": [{"positions": [1], "time_from_start": 0}]}',
         r"points\[0\]\.positions: expected a list of 2 numbers"),
        ('{"joint_names": ["a"], "points": [{"positions": [1]}]}', r"points\[0\]: missing 'time_from_start'"),
        ('{"joint_names": ["a"], "points": [{"positions": [1], "time_from_start": 1},'
         ' {"positions": [1], "time_from_start": 1}]}', r"points\[1\]\.time_from_start: time 1\.0 does not"),
        ('{"joint_names": ["a"], "points": [{"positions": [1], "velocities": [0], "time_from_start": 0},'
         ' {"positions": [1], "time_from_start": 1}]}', r"points\[1\]: 'velocities' given on some points"),
        ('{"joint_names": ["a"],\n "points": [}', r"line 2: invalid JSON"),
        ('{"points": []}', r"joint_names: expected a non-empty list"),
        ('{"joint_names": ["a"], "points": [{"positions": [1], "time_from_start": {"s": 1}}]}',
         r"points\[0\]\.time_from_start: expected seconds or"),
    ],
)
def test_json_errors_name_file_and_path(tmp_path, doc, pattern):
    """Malformed JSON raises TrajectoryError naming the file and the JSON path of the bad value."""
    with pytest.raises(TrajectoryError, match=r"t\.json: " + pattern):
        read_joint_json(write(tmp_path, "t.json", doc))


def test_json_unknown_and_missing_joints(tmp_path):
    """JSON joint selection reports missing and unknown names like the CSV reader."""
    path = write(tmp_path, "t.json", json.dumps(
        {"joint_names": ["a", "b"], "points": [{"positions": [1, 2], "time_from_start": 0.0}]}))
    with pytest.raises(TrajectoryError, match=r"joint_names: missing joint\(s\) \['c'\]"):
        read_joint_json(path, joint_names=["a", "c"])
    with pytest.raises(TrajectoryError, match=r"unknown joint name\(s\) \['b'\]"):
        read_joint_json(path, joint_names=["a"])


# --- poses ------------------------------------------------------------------------------------


def test_pose_csv_columns_any_order_normalised_and_round_trip(tmp_path):
    """Pose CSV columns may come in any order; quaternions are normalised; write/read is exact."""
    path = write(tmp_path, "p.csv", "qw,qx,qy,qz,time,x,y,z\n2,0,0,0,0,1,2,3\n0,0,0,1,0.5,4,5,6\n")
    poses = read_pose_csv(path)
    np.testing.assert_array_equal(poses.quaternions, [[1, 0, 0, 0], [0, 0, 0, 1]])
    np.testing.assert_array_equal(poses.positions, [[1, 2, 3], [4, 5, 6]])
    T = poses.matrices()
    np.testing.assert_allclose(T[1, :3, :3], np.diag([-1.0, -1.0, 1.0]), atol=1e-15)
    rng = np.random.default_rng(5)
    q = rng.normal(size=(30, 4))
    original = PoseTrajectory(np.cumsum(rng.uniform(0.01, 1, 30)), rng.normal(size=(30, 3)), q)
    write_pose_csv(tmp_path / "o.csv", original)
    back = read_pose_csv(tmp_path / "o.csv")
    for key in ("times", "positions", "quaternions"):
        np.testing.assert_array_equal(getattr(back, key), getattr(original, key))
    with pytest.raises(TrajectoryError, match=r"z\.csv: line 3: quaternion .* zero norm"):
        read_pose_csv(write(tmp_path, "z.csv", "time,x,y,z,qw,qx,qy,qz\n0,0,0,0,1,0,0,0\n1,0,0,0,0,0,0,0\n"))
    with pytest.raises(TrajectoryError, match=r"missing joint\(s\) \['qz'\]"):
        read_pose_csv(write(tmp_path, "m.csv", "time,x,y,z,qw,qx,qy\n0,0,0,0,1,0,0\n"))


# --- resampling -------------------------------------------------------------------------------


def test_uniform_grid_is_exact_and_inclusive():
    """Grid times are start + k / rate computed per index, and an end on the grid is included."""
    grid = uniform_times(0.0, 1.0, 24.0)
    assert len(grid) == 25 and grid[-1] == 1.0
    np.testing.assert_array_equal(grid, np.arange(25) / 24.0)
    assert len(uniform_times(0.0, 0.99, 24.0)) == 24
    ntsc = 30000 / 1001
    assert len(uniform_times(0.0, 10.0, ntsc)) == math.floor(10 * ntsc) + 1
    with pytest.raises(TrajectoryError, match="rate_hz"):
        uniform_times(0.0, 1.0, 0.0)


@pytest.mark.parametrize("rate", [24.0, 30.0, 30000 / 1001, 60.0, 120.0, 1000.0])
def test_an_end_stamped_to_the_nanosecond_keeps_its_last_grid_point(rate):
    """ROS stamps and MCAP files keep nanoseconds: 4/30 s is stored as 0.133333333 s, a third of a nanosecond
    early. The grid still reaches that sample (a bag exported at 30 Hz and imported back kept one frame less; found
    by a fuzz of robot files); a whole step short still drops it."""
    for n in (1, 4, 5, 299, 1000):
        end = math.floor(n / rate * 1e9) / 1e9  # rounded down to the nanosecond
        assert len(uniform_times(0.0, end, rate)) == n + 1
        assert len(uniform_times(0.0, n / rate - 2e-9, rate)) == n


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), rate=st.floats(1.0, 240.0))
def test_resample_reproduces_linear_motion_and_stays_between_samples(seed, rate):
    """Linear-in-time joints resample exactly; any resampled value lies between its neighbours."""
    rng = np.random.default_rng(seed)
    times = np.cumsum(rng.uniform(0.01, 0.3, 15))
    slope, offset = rng.normal(size=3), rng.normal(size=3)
    linear = JointTrajectory(("a", "b", "c"), times, offset + slope * times[:, None])
    out = resample(linear, rate)
    np.testing.assert_allclose(out.positions, offset + slope * out.times[:, None], rtol=0, atol=1e-12)
    assert out.times[0] == times[0] and out.times[-1] <= times[-1]
    np.testing.assert_allclose(np.diff(out.times), 1.0 / rate, rtol=1e-9)
    noisy = JointTrajectory(("a",), times, rng.normal(size=(15, 1)))
    res = resample(noisy, rate)
    k = np.clip(np.searchsorted(times, res.times, side="right") - 1, 0, len(times) - 2)
    lo = np.minimum(noisy.positions[k], noisy.positions[k + 1])
    hi = np.maximum(noisy.positions[k], noisy.positions[k + 1])
    assert np.all((res.positions >= lo - 1e-12) & (res.positions <= hi + 1e-12))


def test_resample_holds_ends_and_keeps_samples_on_the_grid():
    """Grid points outside the data hold the end values; samples on the grid come back unchanged."""
    traj = JointTrajectory(("a",), [0.0, 0.5, 1.0], [[1.0], [3.0], [2.0]])
    out = resample(traj, 4.0, start=-0.5, end=1.5)
    np.testing.assert_array_equal(out.times, np.arange(9) / 4.0 - 0.5)
    np.testing.assert_allclose(out.positions[:, 0], [1, 1, 1, 2, 3, 2.5, 2, 2, 2], rtol=0, atol=1e-15)
    assert out.velocities is None


def test_resample_pose_slerps_quaternions():
    """Between two rotations about z, the resampled orientations turn uniformly and stay unit."""
    half = math.pi / 3
    q0, q1 = [1.0, 0, 0, 0], [math.cos(half), 0, 0, math.sin(half)]  # 0 and 120 degrees about z
    poses = PoseTrajectory([0.0, 1.0], [[0, 0, 0], [1, 2, 3]], [q0, q1])
    out = resample(poses, 4.0)
    angles = 2 * np.arctan2(out.quaternions[:, 3], out.quaternions[:, 0])
    np.testing.assert_allclose(angles, np.linspace(0, 2 * half, 5), rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(out.quaternions, axis=1), 1.0, rtol=0, atol=1e-15)
    np.testing.assert_allclose(out.positions[2], [0.5, 1, 1.5], rtol=0, atol=1e-15)


# --- the feasibility check --------------------------------------------------------------------


def ur_traj(q: np.ndarray, times: np.ndarray) -> JointTrajectory:
    return JointTrajectory(UR, times, q)


def test_finite_differences_are_exact_for_quadratics():
    """On uneven grids, backward velocities of linear motion and second differences of t^2 are exact."""
    t = np.cumsum(np.random.default_rng(6).uniform(0.01, 0.2, 40))
    vel, acc = finite_differences(t, (3.0 * t - 1.0)[:, None])
    np.testing.assert_allclose(vel, 3.0, rtol=0, atol=1e-9)
    np.testing.assert_allclose(acc, 0.0, rtol=0, atol=1e-7)
    _, acc = finite_differences(t, (0.5 * 4.0 * t**2)[:, None])
    np.testing.assert_allclose(acc, 4.0, rtol=1e-7)


def test_check_clean_trajectory_and_report_formats():
    """A slow in-limit UR5e motion is ok; to_dict is JSON and to_csv has one row per frame."""
    skeleton = load_preset("ur5e")
    times = np.linspace(0.0, 4.0, 81)
    # Around a bent pose with q5 near pi/2: the UR home (q5 = 0) is a wrist singularity.
    q = np.array([0.0, -1.3, 1.4, -1.6, 1.5, 0.0]) + np.array([0.5, 0.2, -0.4, 0.3, 0.6, 0.6]) * np.sin(times)[:, None]
    report = check_trajectory(ur_traj(q, times), skeleton, "tool")
    assert report.ok, report.summary()
    assert report.velocities.shape == (81, 6) and report.manipulability.shape == (81,)
    text = json.dumps(report.to_dict(), allow_nan=False)
    assert json.loads(text)["summary"]["frames"] == 81
    rows = list(csv.reader(io.StringIO(report.to_csv())))
    assert len(rows) == 82 and len(rows[0]) == 5 + 6 * 7
    assert all(len(r) == len(rows[0]) for r in rows)


def test_check_flags_position_velocity_acceleration_and_jumps():
    """Each violation is flagged on exactly the frames and joints that commit it."""
    skeleton = load_preset("ur5e")
    times = np.arange(11) * 0.1
    q = np.tile(np.array([0.0, -1.5, 1.0, -1.0, 1.0, 0.0]), (11, 1))
    q[:, 0] = 0.25 * times  # slow, smooth
    q[4, 2] = 3.3  # elbow beyond +pi on frame 4 only (a spike: also fast and a jump)
    report = check_trajectory(ur_traj(q, times), skeleton, "tool", acceleration_limits=100.0)
    np.testing.assert_allclose(report.position_excess[4, 2], 3.3 - math.pi, rtol=0, atol=1e-12)
    assert report.position_violation.sum() == 1
    assert set(np.flatnonzero(report.velocity_violation[:, 2])) == {4, 5}
    assert set(np.flatnonzero(report.jumps[:, 2])) == {4, 5}
    assert report.acceleration_violation[:, 2].any() and not report.acceleration_violation[:, [0, 1, 3, 4, 5]].any()
    assert not report.velocity_violation[:, 0].any()
    assert report.summary()["first_bad_frame"] == 3  # the acceleration stencil reaches back one frame
    slow = check_trajectory(ur_traj(q, times), skeleton, "tool", velocity_limits=[None, 1, 1, 1, 1, 1],
                            jump_threshold=10.0)
    assert not slow.jumps.any()


def test_a_joint_whose_range_is_one_value_is_inside_at_the_float32_nearest_it():
    """A range of one value (0.3 rad) holds no float32: Blender keys it as 0.30000001, which must count as inside
    (every frame of a bake was flagged; found by a fuzz of robot files); a step of a float32 further out does not."""
    skeleton = load_preset("ur5e")
    lower, upper = np.array(skeleton.lower), np.array(skeleton.upper)
    lower[2] = upper[2] = 0.3
    slack = limit_slack(lower, upper)
    assert slack[2] == pytest.approx(np.spacing(np.float32(0.3)), rel=0) and (slack >= 1e-9).all()
    keyed = float(np.float32(0.3))
    assert keyed != 0.3 and abs(keyed - 0.3) <= slack[2]
    assert abs(float(np.nextafter(np.float32(keyed), np.float32(1))) - 0.3) > slack[2]
    assert np.isfinite(limit_slack(np.array([-np.inf]), np.array([np.inf]))).all()


def test_an_exported_key_a_float32_rounding_beyond_its_limit_goes_out_on_the_limit():
    """A locked joint's key (0.4 rad as float32: 0.40000000596) is exported as 0.4, a joint keyed a float32 step
    beyond its limit onto the limit; values inside stay bit for bit, and values farther out stay for the check."""
    lower = np.array([0.4, -2.8973, -np.inf, 0.0])
    upper = np.array([0.4, 2.8973, np.inf, 1.0])

    def first_float32_beyond(limit: float, way: float) -> float:
        near = np.float32(limit)
        return float(near if (float(near) - limit) * way > 0 else np.nextafter(near, np.float32(way * np.inf)))

    keyed = np.array([
        [float(np.float32(0.4)), first_float32_beyond(-2.8973, -1.0), 12.5, 0.25],
        [0.4, first_float32_beyond(2.8973, 1.0), -40.0, 1.01],
    ])
    assert keyed[0, 0] > 0.4 and keyed[0, 1] < -2.8973 and keyed[1, 1] > 2.8973
    out = onto_limits(keyed, lower, upper)
    assert out[0, 0] == 0.4 and out[1, 0] == 0.4
    assert out[0, 1] == -2.8973 and out[1, 1] == 2.8973
    assert out[0, 2] == 12.5 and out[1, 2] == -40.0 and out[0, 3] == 0.25
    assert out[1, 3] == 1.01  # a real violation, left for the check to report


def test_check_singularity_measures():
    """Manipulability is the product of singular values; q5 = 0 (wrist singular) is flagged."""
    skeleton = load_preset("ur5e")
    q = np.array([[0.3, -1.2, 1.3, -0.7, 1.1, 0.2], [0.3, -1.2, 1.3, -0.7, 0.0, 0.2]])
    report = check_trajectory(ur_traj(q, np.array([0.0, 1.0])), skeleton, "tool", velocity_limits=10.0)
    J = jacobian(skeleton, q[0], "tool")
    np.testing.assert_allclose(report.manipulability[0], np.sqrt(np.linalg.det(J @ J.T)), rtol=1e-9)
    assert report.manipulability[1] < 1e-12
    np.testing.assert_array_equal(report.near_singular, [False, True])
    assert report.min_singular_value[1] < 1e-12


def test_check_name_mapping_and_errors():
    """Joint order in the trajectory is irrelevant; missing or unknown joints and bad limits raise."""
    skeleton = load_preset("panda")
    names = skeleton.moving_joint_names
    times = np.linspace(0.0, 1.0, 5)
    q = np.tile(skeleton.preferred_q, (5, 1))
    accel = preset_info("panda")["acceleration"]
    a = check_trajectory(JointTrajectory(names, times, q), skeleton, "tool", acceleration_limits=accel)
    b = check_trajectory(JointTrajectory(names[::-1], times, q[:, ::-1]), skeleton, "tool", acceleration_limits=accel)
    np.testing.assert_array_equal(a.manipulability, b.manipulability)
    np.testing.assert_array_equal(a.acceleration_limits, accel)
    with pytest.raises(TrajectoryError, match=r"lacks joint\(s\) \['panda_joint7'\]"):
        check_trajectory(JointTrajectory(names[:6], times, q[:, :6]), skeleton, "tool")
    with pytest.raises(UnknownNameError, match="finger"):
        check_trajectory(JointTrajectory((*names, "finger"), times, np.c_[q, q[:, :1]]), skeleton, "tool")
    with pytest.raises(InvalidInputError, match="velocity_limits"):
        check_trajectory(JointTrajectory(names, times, q), skeleton, "tool", velocity_limits=[1.0, 2.0])
    with pytest.raises(UnknownNameError):
        check_trajectory(JointTrajectory(names, times, q), skeleton, "gripper")
