# SPDX-License-Identifier: GPL-3.0-or-later
"""Trajectory data types: joint-space and pose trajectories, validated and immutable."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError

# Quaternions closer than this to unit norm are kept bit for bit (exact file round trips).
UNIT_TOLERANCE = 1e-12


class TrajectoryError(InvalidInputError):
    """A trajectory or trajectory file is invalid.

    The message names the file and the line (CSV) or JSON path of the offending value.

    Attributes:
        source: File path, or ``None`` for in-memory data.
        location: ``"line 7, column 'elbow'"`` or ``"points[3].positions[2]"``, or ``None``.
    """

    def __init__(self, problem: str, source: object = None, location: str | None = None) -> None:
        self.source = None if source is None else str(source)
        self.location = location
        where = ": ".join(str(p) for p in (self.source, location) if p)
        super().__init__(f"{where}: {problem}" if where else problem)


def _frozen_array(name: str, value: object, shape: tuple[int, ...]) -> np.ndarray:
    arr = np.array(value, dtype=float)
    if arr.shape != shape:
        raise TrajectoryError(f"{name} must have shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        rows = np.unique(np.argwhere(~np.isfinite(arr))[:, 0])
        raise TrajectoryError(f"{name} holds NaN or infinite values at sample(s) {rows[:10].tolist()}")
    arr.setflags(write=False)
    return arr


def _times(value: object) -> np.ndarray:
    t = np.array(value, dtype=float)
    if t.ndim != 1 or t.size == 0:
        raise TrajectoryError(f"times must be a non-empty 1-D array, got shape {t.shape}")
    t = _frozen_array("times", t, t.shape)
    steps = np.diff(t)
    if np.any(steps <= 0):
        k = int(np.argmax(steps <= 0)) + 1
        now, before = float(t[k]), float(t[k - 1])
        raise TrajectoryError(f"times must be strictly increasing; sample {k} has time {now!r} after {before!r}")
    return t


@dataclass(frozen=True, eq=False)
class JointTrajectory:
    """Joint values sampled over time.

    Attributes:
        joint_names: Names of the J joints, in column order.
        times: (N,) sample times [s], strictly increasing.
        positions: (N, J) joint values [rad or m].
        velocities: Optional (N, J) joint velocities [rad/s or m/s].
        accelerations: Optional (N, J) joint accelerations [rad/s^2 or m/s^2].

    Raises:
        TrajectoryError: Duplicate or empty names, wrong shapes, non-finite values, or times
            not strictly increasing.
    """

    joint_names: tuple[str, ...]
    times: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray | None = None
    accelerations: np.ndarray | None = None

    def __post_init__(self) -> None:
        names = tuple(self.joint_names)
        if not all(isinstance(n, str) and n for n in names):
            raise TrajectoryError(f"joint names must be non-empty strings, got {list(names)}")
        if len(set(names)) != len(names):
            dupes = sorted({n for n in names if names.count(n) > 1})
            raise TrajectoryError(f"joint names must be unique; repeated: {', '.join(dupes)}")
        object.__setattr__(self, "joint_names", names)
        times = _times(self.times)
        object.__setattr__(self, "times", times)
        shape = (len(times), len(names))
        object.__setattr__(self, "positions", _frozen_array("positions", self.positions, shape))
        for key in ("velocities", "accelerations"):
            if getattr(self, key) is not None:
                object.__setattr__(self, key, _frozen_array(key, getattr(self, key), shape))

    def __len__(self) -> int:
        return len(self.times)

    @property
    def duration(self) -> float:
        """Time from the first to the last sample [s]."""
        return float(self.times[-1] - self.times[0])

    def select(self, joint_names: Sequence[str]) -> JointTrajectory:
        """The same trajectory restricted to (and ordered as) ``joint_names``.

        Raises:
            UnknownNameError: If a name is not one of this trajectory's joints.
        """
        from ..errors import UnknownNameError

        index = {n: i for i, n in enumerate(self.joint_names)}
        for n in joint_names:
            if n not in index:
                raise UnknownNameError("joint", n, self.joint_names)
        cols = [index[n] for n in joint_names]

        def pick(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else a[:, cols]

        return JointTrajectory(tuple(joint_names), self.times, self.positions[:, cols],
                               pick(self.velocities), pick(self.accelerations))


def _unit_quaternions(q: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(q, axis=-1)
    if np.any(norm < 1e-6):
        rows = np.flatnonzero(norm < 1e-6)
        raise TrajectoryError(f"quaternions at sample(s) {rows[:10].tolist()} have (near) zero norm")
    scale = np.where(np.abs(norm - 1.0) > UNIT_TOLERANCE, norm, 1.0)
    return q / scale[:, None]


@dataclass(frozen=True, eq=False)
class PoseTrajectory:
    """Rigid poses sampled over time (a tool or target path).

    Attributes:
        times: (N,) sample times [s], strictly increasing.
        positions: (N, 3) positions [m].
        quaternions: (N, 4) unit quaternions (w, x, y, z); normalised on construction when
            their norm differs from 1 by more than 1e-12.

    Raises:
        TrajectoryError: Wrong shapes, non-finite values, zero quaternions, or times not
            strictly increasing.
    """

    times: np.ndarray
    positions: np.ndarray
    quaternions: np.ndarray

    def __post_init__(self) -> None:
        times = _times(self.times)
        object.__setattr__(self, "times", times)
        n = len(times)
        object.__setattr__(self, "positions", _frozen_array("positions", self.positions, (n, 3)))
        q = _unit_quaternions(np.array(_frozen_array("quaternions", self.quaternions, (n, 4))))
        q.setflags(write=False)
        object.__setattr__(self, "quaternions", q)

    def __len__(self) -> int:
        return len(self.times)

    def matrices(self) -> np.ndarray:
        """(N, 4, 4) homogeneous transforms of the poses."""
        from ..model.rotations import quat_to_matrix

        T = np.zeros((len(self), 4, 4))
        T[:, :3, :3] = quat_to_matrix(self.quaternions)
        T[:, :3, 3] = self.positions
        T[:, 3, 3] = 1.0
        return T
