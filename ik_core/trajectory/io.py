# SPDX-License-Identifier: GPL-3.0-or-later
"""Trajectory files: joint CSV, ROS-style joint JSON and pose CSV, read with precise error locations.

Joint CSV: a header line ``time,<joint>,<joint>,...`` (time [s], joint values in radians or
metres), then one row per sample. Blank lines and lines starting with ``#`` are skipped.
Joint JSON: shaped like ROS ``trajectory_msgs/JointTrajectory``::

    {"joint_names": ["a", "b"],
     "points": [{"positions": [0.0, 1.0], "velocities": [...], "accelerations": [...],
                 "time_from_start": 0.5}]}

where ``time_from_start`` is seconds or ``{"sec": 0, "nanosec": 500000000}`` (ROS 2; ROS 1's
``secs``/``nsecs`` too), optional arrays may be empty, and a MoveIt ``{"joint_trajectory": {...}}``
wrapper is accepted. Pose CSV: columns ``time, x, y, z, qw, qx, qy, qz`` in any order. Tracker
CSV: ``time`` then ``<tracker>_x, _y, _z, _qw, _qx, _qy, _qz`` per tracker, empty cells for lost samples.
Every reader fails only with :class:`~ik_core.trajectory.model.TrajectoryError` naming the file and the
line, column or JSON path, and its work and memory grow with the file's size alone.
Writers print floats with ``repr`` so that writing then reading gives identical arrays.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import reprlib
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from .model import JointTrajectory, PoseTrajectory, TrajectoryError

TIME_COLUMNS: tuple[str, ...] = ("time", "t", "time_s", "time_from_start")
POSE_COLUMNS: tuple[str, ...] = ("time", "x", "y", "z", "qw", "qx", "qy", "qz")
PathLike = str | os.PathLike


def _read_text_file(path: PathLike, what: str = "file") -> str:
    """The text of a UTF-8 file (a byte-order mark is skipped), every failure a :class:`TrajectoryError`.

    Args:
        path: The file.
        what: What the file is, for messages ("tracker file").

    Raises:
        TrajectoryError: A missing or unreadable file, or bytes that are not UTF-8 (the message
            names the line and the byte).
    """
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise TrajectoryError(f"{what} not found", path) from None
    except OSError as e:
        raise TrajectoryError(f"cannot read {what}: {e.strerror or e}", path) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise TrajectoryError(
            f"byte 0x{data[e.start]:02x} is not UTF-8 text; save the {what} as UTF-8", path, f"line {line}"
        ) from None


def _csv_rows(path: PathLike, text: str) -> list[tuple[int, list[str]]]:
    """(line number, stripped cells) of every row of CSV ``text``; blank and ``#`` lines skipped.

    Raises:
        TrajectoryError: A line the csv module refuses (a cell over its 131,072-character limit,
            a NUL character), naming the line.
    """
    reader = csv.reader(io.StringIO(text))
    rows: list[tuple[int, list[str]]] = []
    try:
        for cells in reader:
            if not cells or all(not c.strip() for c in cells) or cells[0].lstrip().startswith("#"):
                continue
            rows.append((reader.line_num, [c.strip() for c in cells]))
    except csv.Error as e:
        raise TrajectoryError(f"not readable as CSV: {e}", path, f"line {max(reader.line_num, 1)}") from None
    return rows


def _check_header(path: PathLike, line: int, header: Sequence[str]) -> None:
    """Refuse empty and repeated column names in a CSV header, naming the file, line and column.

    Raises:
        TrajectoryError: An empty or repeated column name.
    """
    for k, name in enumerate(header):
        if not name:
            raise TrajectoryError(f"column {k + 1} of the header has no name", path, f"line {line}")
    repeated = sorted({c for c, n in Counter(header).items() if n > 1})
    if repeated:
        raise TrajectoryError(f"repeated column name(s) {repeated} in the header", path, f"line {line}")


def _rows(path: PathLike) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """Header cells and (line number, cells) of every data row; comments and blanks skipped."""
    header: list[str] | None = None
    rows: list[tuple[int, list[str]]] = []
    for line, cells in _csv_rows(path, _read_text_file(path)):
        if header is None:
            header, header_line = cells, line
            _check_header(path, line, header)
        else:
            if len(cells) != len(header):
                raise TrajectoryError(
                    f"{len(cells)} cells, but the header (line {header_line}) has {len(header)} columns",
                    path, f"line {line}",
                )
            rows.append((line, cells))
    if header is None:
        raise TrajectoryError("empty file: expected a header line such as 'time,joint_1,joint_2'", path)
    if not rows:
        raise TrajectoryError("no data rows after the header", path)
    return header, rows


def _parse_table(path: PathLike, header: list[str], rows: list[tuple[int, list[str]]]) -> np.ndarray:
    data = np.empty((len(rows), len(header)))
    for r, (line, cells) in enumerate(rows):
        for c, cell in enumerate(cells):
            try:
                value = float(cell)
            except ValueError:
                raise TrajectoryError(f"{cell!r} is not a number", path, f"line {line}, column {header[c]!r}") from None
            if not math.isfinite(value):
                raise TrajectoryError(
                    f"{cell!r} is not a finite number (NaN and infinity are not allowed)",
                    path, f"line {line}, column {header[c]!r}",
                )
            data[r, c] = value
    return data


def _check_increasing(path: PathLike, times: np.ndarray, where: list[str]) -> None:
    bad = np.flatnonzero(np.diff(times) <= 0)
    if bad.size:
        k = int(bad[0]) + 1
        now, before = float(times[k]), float(times[k - 1])
        raise TrajectoryError(
            f"time {now!r} does not increase after {before!r}; times must be strictly increasing", path, where[k]
        )


def _choose_columns(
    path: PathLike, available: Sequence[str], wanted: Sequence[str] | None, ignore_unknown: bool, where: str
) -> list[int]:
    """Indices of the wanted joints among ``available``, checking missing and unknown names.

    A name matches exactly, or else by its text without leading and trailing spaces: CSV cells are
    read stripped, and a URDF joint may be named " wrist" (urdfdom keeps the spaces).
    """
    if wanted is None:
        return list(range(len(available)))
    available = list(available)
    stripped = [n.strip() for n in available]

    def column(name: str) -> int | None:
        if name in available:
            return available.index(name)
        return stripped.index(name.strip()) if stripped.count(name.strip()) == 1 else None

    wanted = list(wanted)
    cols = [column(n) for n in wanted]
    missing = [n for n, c in zip(wanted, cols) if c is None]
    if missing:
        raise TrajectoryError(
            f"missing joint(s) {missing}; the file has {available}", path, where
        )
    unknown = [n for k, n in enumerate(available) if k not in cols]
    if unknown and not ignore_unknown:
        raise TrajectoryError(
            f"unknown joint name(s) {unknown}; expected only {wanted} (pass ignore_unknown=True to skip them)",
            path, where,
        )
    return cols


def read_joint_csv(
    path: PathLike, joint_names: Sequence[str] | None = None, *, ignore_unknown: bool = False
) -> JointTrajectory:
    """Read a joint trajectory from CSV (``time`` column first, then one column per joint).

    Args:
        path: The file.
        joint_names: Joints to return, in this order; every one must be a column. ``None``
            returns all columns in file order.
        ignore_unknown: Skip columns not in ``joint_names`` instead of raising.

    Returns:
        The trajectory (positions only).

    Raises:
        TrajectoryError: Missing file, bad header, missing or unknown joints, ragged rows,
            non-numeric or non-finite cells, or times not strictly increasing; the message
            names the file and the line (and column).
    """
    header, rows = _rows(path)
    if header[0].lower() not in TIME_COLUMNS:
        raise TrajectoryError(
            f"the first column must be the time in seconds, named one of {list(TIME_COLUMNS)}, got {header[0]!r}",
            path, "header",
        )
    if len(header) < 2:
        raise TrajectoryError(f"no joint columns: expected {header[0]!r} then one column per joint", path, "header")
    cols = _choose_columns(path, header[1:], joint_names, ignore_unknown, "header")
    data = _parse_table(path, header, rows)
    _check_increasing(path, data[:, 0], [f"line {line}" for line, _ in rows])
    names = tuple(joint_names) if joint_names is not None else tuple(header[1 + c] for c in cols)
    with _naming(path):
        return JointTrajectory(names, data[:, 0], data[:, [1 + c for c in cols]])


def _format(value: float) -> str:
    return repr(float(value))


def write_joint_csv(path: PathLike, trajectory: JointTrajectory) -> None:
    """Write positions as CSV readable by :func:`read_joint_csv` (velocities are not stored).

    Args:
        path: Destination file (overwritten).
        trajectory: The trajectory.
    """
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["time", *trajectory.joint_names])
    for t, row in zip(trajectory.times, trajectory.positions):
        writer.writerow([_format(t), *map(_format, row)])
    Path(path).write_text(buf.getvalue(), encoding="utf-8")


@contextmanager
def _naming(path: PathLike) -> Iterator[None]:
    """Give a :class:`TrajectoryError` raised without a file (by the data types) the file's name."""
    try:
        yield
    except TrajectoryError as e:
        if e.source is not None:
            raise
        raise TrajectoryError(str(e), path) from None


def _json_number(path: PathLike, where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TrajectoryError(f"expected a number, got {_short(value)}", path, where)
    try:
        number = float(value)  # a JSON integer has no size limit; a float does
    except OverflowError:
        raise TrajectoryError(f"{_short(value)} is too large for a floating-point number", path, where) from None
    if not math.isfinite(number):
        raise TrajectoryError(f"{_short(value)} is not a finite number (NaN and infinity are not allowed)",
                              path, where)
    return number


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxdict, _REPR.maxstring, _REPR.maxlong, _REPR.maxother = 3, 6, 4, 40, 40, 40


def _short(value: Any) -> str:
    """``repr(value)`` shortened (a few levels and items): a message quotes a value, not a whole document."""
    return _REPR.repr(value)


def _json_vector(path: PathLike, where: str, value: Any, size: int) -> list[float]:
    if not isinstance(value, list) or len(value) != size:
        got = f"{len(value)} values" if isinstance(value, list) else _short(value)
        raise TrajectoryError(f"expected a list of {size} numbers (one per joint), got {got}", path, where)
    return [_json_number(path, f"{where}[{i}]", v) for i, v in enumerate(value)]


def _json_time(path: PathLike, where: str, value: Any) -> float:
    if isinstance(value, dict):
        for sec, nsec in (("sec", "nanosec"), ("secs", "nsecs")):
            if sec in value:
                s = _json_number(path, f"{where}.{sec}", value[sec])
                n = _json_number(path, f"{where}.{nsec}", value.get(nsec, 0))
                return s + n * 1e-9
        raise TrajectoryError(f"expected seconds or {{'sec', 'nanosec'}}, got {_short(value)}", path, where)
    return _json_number(path, where, value)


def read_joint_json(
    path: PathLike, joint_names: Sequence[str] | None = None, *, ignore_unknown: bool = False
) -> JointTrajectory:
    """Read a ROS-style joint trajectory from JSON (see the module docstring for the shape).

    Args:
        path: The file.
        joint_names: Joints to return, in this order (``None``: the file's order).
        ignore_unknown: Skip joints not in ``joint_names`` instead of raising.

    Returns:
        The trajectory, with velocities / accelerations when every point has them.

    Raises:
        TrajectoryError: Invalid JSON (with its line), missing keys, wrong lengths, non-numeric
            or non-finite values, velocities on some points only, or times not strictly
            increasing; the message names the file and the JSON path.
    """
    text = _read_text_file(path)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise TrajectoryError(f"invalid JSON: {e.msg} (column {e.colno})", path, f"line {e.lineno}") from None
    except RecursionError:
        raise TrajectoryError("invalid JSON: arrays or objects nested too deeply (a joint trajectory needs "
                              "4 levels)", path) from None
    except ValueError as e:  # an integer literal beyond Python's 4,300-digit conversion limit
        raise TrajectoryError(f"invalid JSON: {str(e).split(';')[0]}", path) from None
    prefix = ""
    if isinstance(doc, dict) and "joint_trajectory" in doc:
        doc, prefix = doc["joint_trajectory"], "joint_trajectory."
    if not isinstance(doc, dict):
        raise TrajectoryError("expected a JSON object with 'joint_names' and 'points'", path, prefix.rstrip(".") or "$")
    names = doc.get("joint_names")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
        raise TrajectoryError(f"expected a non-empty list of joint name strings, got {_short(names)}", path,
                              f"{prefix}joint_names")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise TrajectoryError(f"repeated joint name(s) {repeated}", path, f"{prefix}joint_names")
    points = doc.get("points")
    if not isinstance(points, list) or not points:
        raise TrajectoryError("expected a non-empty list of points", path, f"{prefix}points")
    cols = _choose_columns(path, names, joint_names, ignore_unknown, f"{prefix}joint_names")
    J = len(names)
    times, where = np.empty(len(points)), []
    arrays: dict[str, list[list[float]]] = {"positions": [], "velocities": [], "accelerations": []}
    for k, point in enumerate(points):
        at = f"{prefix}points[{k}]"
        where.append(f"{at}.time_from_start")
        if not isinstance(point, dict):
            raise TrajectoryError(f"expected an object with 'positions' and 'time_from_start', got {_short(point)}",
                                  path, at)
        if "time_from_start" not in point:
            raise TrajectoryError("missing 'time_from_start'", path, at)
        times[k] = _json_time(path, f"{at}.time_from_start", point["time_from_start"])
        for key, values in arrays.items():
            value = point.get(key, [])
            if key == "positions" and "positions" not in point:
                raise TrajectoryError("missing 'positions'", path, at)
            if key != "positions" and value == []:
                continue  # ROS leaves optional arrays empty
            values.append(_json_vector(path, f"{at}.{key}", value, J))
    for key in ("velocities", "accelerations"):
        if 0 < len(arrays[key]) < len(points):
            k = next(i for i, p in enumerate(points) if not p.get(key))
            raise TrajectoryError(f"'{key}' given on some points but not this one; give them on all or none",
                                  path, f"{prefix}points[{k}]")
    _check_increasing(path, times, where)

    def table(key: str) -> np.ndarray | None:
        return np.array(arrays[key], dtype=float)[:, cols] if arrays[key] else None

    with _naming(path):
        return JointTrajectory(tuple(names[c] for c in cols), times, table("positions"),
                               table("velocities"), table("accelerations"))


def write_joint_json(path: PathLike, trajectory: JointTrajectory, *, time_format: str = "seconds") -> None:
    """Write a trajectory as ROS-style JSON readable by :func:`read_joint_json`.

    Args:
        path: Destination file (overwritten).
        trajectory: The trajectory; velocities and accelerations are written when present.
        time_format: ``"seconds"`` (a float: exact round trip) or ``"ros"``
            (``{"sec", "nanosec"}``: rounded to the nanosecond).

    Raises:
        InvalidInputError: For an unknown ``time_format``.
    """
    if time_format not in ("seconds", "ros"):
        raise TrajectoryError(f"unknown time_format {time_format!r}; valid: 'seconds', 'ros'")
    points = []
    for k, t in enumerate(trajectory.times):
        point: dict[str, Any] = {"positions": trajectory.positions[k].tolist()}
        if trajectory.velocities is not None:
            point["velocities"] = trajectory.velocities[k].tolist()
        if trajectory.accelerations is not None:
            point["accelerations"] = trajectory.accelerations[k].tolist()
        if time_format == "ros":
            ns = round(float(t) * 1e9)
            point["time_from_start"] = {"sec": ns // 1_000_000_000, "nanosec": ns % 1_000_000_000}
        else:
            point["time_from_start"] = float(t)
        points.append(point)
    doc = {"joint_names": list(trajectory.joint_names), "points": points}
    # json writes floats with repr, the shortest string that reads back to the same double.
    Path(path).write_text(json.dumps(doc, indent=1, allow_nan=False) + "\n", encoding="utf-8")


def read_pose_csv(path: PathLike, *, ignore_unknown: bool = False) -> PoseTrajectory:
    """Read a pose trajectory from CSV with columns time, x, y, z, qw, qx, qy, qz (any order).

    Args:
        path: The file; positions [m], quaternions (w, x, y, z), normalised when not unit.
        ignore_unknown: Skip extra columns instead of raising.

    Returns:
        The pose trajectory.

    Raises:
        TrajectoryError: Missing or unknown columns, ragged rows, non-numeric or non-finite
            cells, zero quaternions, or times not strictly increasing (file and line named).
    """
    header, rows = _rows(path)
    lowered = [h.lower() for h in header]
    repeated = sorted({c for c, n in Counter(lowered).items() if n > 1})
    if repeated:  # 'X' and 'x' are one column here: which would be meant?
        raise TrajectoryError(f"repeated column name(s) {repeated} (case is ignored) in the header", path, "header")
    cols = _choose_columns(path, lowered, POSE_COLUMNS, ignore_unknown, "header")
    data = _parse_table(path, header, rows)[:, cols]
    lines = [f"line {line}" for line, _ in rows]
    _check_increasing(path, data[:, 0], lines)
    with np.errstate(over="ignore"):  # components near 1e308 overflow the norm: refused just below
        norm = np.linalg.norm(data[:, 4:], axis=-1)
    if np.any(norm < 1e-6):
        k = int(np.argmax(norm < 1e-6))
        raise TrajectoryError("quaternion (qw, qx, qy, qz) has zero norm", path, lines[k])
    if not np.all(np.isfinite(norm)):
        k = int(np.argmax(~np.isfinite(norm)))
        raise TrajectoryError("quaternion (qw, qx, qy, qz) is too large to normalise (its norm overflows)",
                              path, lines[k])
    with _naming(path):
        return PoseTrajectory(data[:, 0], data[:, 1:4], data[:, 4:])


# The columns of one tracker in a tracker CSV, after its name and an underscore: position [m],
# then the quaternion (w, x, y, z).
TRACKER_FIELDS: tuple[str, ...] = ("x", "y", "z", "qw", "qx", "qy", "qz")


def read_tracker_csv(
    path: PathLike,
    trackers: Sequence[str],
    required: Sequence[str] = (),
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Times and tracker poses from a tracker CSV.

    The header is ``time`` then ``<tracker>_x, _y, _z, _qw, _qx, _qy, _qz`` for each tracker
    (in any order); blank lines and lines starting with ``#`` are skipped. An empty or ``nan``
    cell is a lost sample (NaN: the body solve holds the last good pose and counts it);
    infinity is refused.

    Args:
        path: The file, UTF-8.
        trackers: Tracker names the file may hold (``ik_core.humanoid.TRACKERS`` for a body).
        required: Tracker names the file must hold.

    Returns:
        (N,) times [s], strictly increasing, and tracker name -> (N, 7) poses
        [x, y, z, qw, qx, qy, qz] for every tracker of ``trackers`` in the file.

    Raises:
        TrajectoryError: An unreadable or non-UTF-8 file, a cell the csv module refuses, a
            bad header (first column not ``time``, empty or repeated names, a tracker's columns
            missing), a ragged row, a cell that is not a number or is infinite, a missing or
            non-finite time, times not strictly increasing, or no data row; the message names
            the file and the line (and column).
    """
    rows = _csv_rows(path, _read_text_file(path, "tracker file"))
    if not rows:
        example = ",".join(f"{trackers[0] if trackers else 'head'}_{f}" for f in TRACKER_FIELDS)
        raise TrajectoryError(f"empty file: expected a header such as 'time,{example},...'", path)
    header_line, header = rows[0]
    _check_header(path, header_line, header)
    if header[0] != "time":
        raise TrajectoryError(f"the first column must be 'time' (seconds), got {header[0]!r}", path,
                              f"line {header_line}")
    cols: dict[str, list[int]] = {}
    for name in trackers:
        wanted = [f"{name}_{f}" for f in TRACKER_FIELDS]
        present = [w in header for w in wanted]
        if all(present):
            cols[name] = [header.index(w) for w in wanted]
        elif any(present) or name in required:
            missing = [w for w, p in zip(wanted, present) if not p]
            raise TrajectoryError(f"missing column(s) {', '.join(missing)}", path, f"line {header_line}")
    if len(rows) < 2:
        raise TrajectoryError("no data rows after the header", path)
    data = np.empty((len(rows) - 1, len(header)))
    for r, (line, cells) in enumerate(rows[1:]):
        if len(cells) != len(header):
            raise TrajectoryError(f"{len(cells)} cells, but the header (line {header_line}) has {len(header)}",
                                  path, f"line {line}")
        for k, cell in enumerate(cells):
            try:
                value = float(cell) if cell else math.nan
            except ValueError:
                raise TrajectoryError(f"{_short(cell)} is not a number", path,
                                      f"line {line}, column {header[k]!r}") from None
            if math.isinf(value) or (k == 0 and not math.isfinite(value)):
                raise TrajectoryError(
                    f"{_short(cell)} is not a finite number (the time must be one; a lost sample is an empty cell "
                    "or nan)",
                    path, f"line {line}, column {header[k]!r}")
            data[r, k] = value
    times = data[:, 0]
    back = np.flatnonzero(np.diff(times) <= 0)
    if back.size:
        k = int(back[0]) + 1
        raise TrajectoryError(f"time {float(times[k])!r} does not increase after {float(times[k - 1])!r}; times "
                              "must be strictly increasing", path, f"line {rows[k + 1][0]}")
    return times, {name: data[:, idx] for name, idx in cols.items()}


def write_pose_csv(path: PathLike, trajectory: PoseTrajectory) -> None:
    """Write a pose trajectory as CSV readable by :func:`read_pose_csv` (exact round trip).

    Args:
        path: Destination file (overwritten).
        trajectory: The pose trajectory.
    """
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(POSE_COLUMNS)
    for t, p, q in zip(trajectory.times, trajectory.positions, trajectory.quaternions):
        writer.writerow([_format(t), *map(_format, p), *map(_format, q)])
    Path(path).write_text(buf.getvalue(), encoding="utf-8")
