# SPDX-License-Identifier: GPL-3.0-or-later
"""Per-frame feasibility report of a joint trajectory: limits, speeds, singularities, jumps."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InvalidInputError, UnknownNameError
from ..model.kinematics import jacobian
from ..model.skeleton import Skeleton
from .model import JointTrajectory, TrajectoryError

_LIMIT_TOL = 1e-9


def limit_slack(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """(J,) how far [rad or m] a joint value may lie beyond its limits and still count as inside.

    One single-precision step at the limits' magnitude (at least 1e-9): Blender keys are float32,
    and a range narrower than that step (a joint whose range is a single value, 0.3 rad) holds no
    float32 at all, so its key is the float32 nearest the range.

    Args:
        lower: (J,) lower limits.
        upper: (J,) upper limits (infinite for unlimited joints).
    """
    magnitude = np.maximum(np.abs(np.asarray(lower, dtype=float)), np.abs(np.asarray(upper, dtype=float)))
    finite = np.where(np.isfinite(magnitude), magnitude, 0.0)
    return np.maximum(_LIMIT_TOL, np.spacing(finite.astype(np.float32)).astype(float))


def onto_limits(values: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """(N, J) values, those beyond a limit by at most :func:`limit_slack` moved onto it.

    A rig's keys are float32: a joint whose range is a single value (a URDF's ``lower ==
    upper``, 0.4 rad) holds no float32, so its key plays back 6e-9 rad above the range, and an
    exported trajectory would carry that value into a controller that checks its limits. Values
    farther outside are left as they are, for the limit check to report.

    Args:
        values: (N, J) joint values [rad or m].
        lower: (J,) lower limits (-inf for unlimited joints).
        upper: (J,) upper limits (inf for unlimited joints).
    """
    values = np.asarray(values, dtype=float)
    lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    slack = limit_slack(lower, upper)
    values = np.where((values > upper) & (values <= upper + slack), upper, values)
    return np.where((values < lower) & (values >= lower - slack), lower, values)


@dataclass(frozen=True, eq=False)
class TrajectoryReport:
    """What :func:`check_trajectory` found, frame by frame (N frames, J joints in skeleton order).

    Attributes:
        joint_names: The J joints checked, in the skeleton's ``q`` order.
        effector: Effector whose Jacobian was analysed.
        times: (N,) sample times [s].
        position_excess: (N, J) distance beyond the position limits [rad or m], 0 inside.
        limit_slack: (J,) excess still counted inside (:func:`limit_slack`) [rad or m].
        velocities: (N, J) finite-difference velocities [rad/s or m/s].
        velocity_limits: (J,) limits used [rad/s or m/s] (inf: unchecked).
        accelerations: (N, J) finite-difference accelerations [rad/s^2 or m/s^2].
        acceleration_limits: (J,) limits used (inf: unchecked).
        manipulability: (N,) product of the Jacobian's singular values (Yoshikawa's measure;
            mixes m and rad, so compare it within one robot only).
        min_singular_value: (N,) smallest singular value of the (6, dof) Jacobian.
        joint_steps: (N, J) ``|q[k] - q[k-1]|`` [rad or m]; 0 for the first frame.
        singularity_threshold: Smallest singular value below which a frame is near-singular.
        jump_threshold: Step above which a joint jumps [rad or m].
    """

    joint_names: tuple[str, ...]
    effector: str
    times: np.ndarray
    position_excess: np.ndarray
    limit_slack: np.ndarray
    velocities: np.ndarray
    velocity_limits: np.ndarray
    accelerations: np.ndarray
    acceleration_limits: np.ndarray
    manipulability: np.ndarray
    min_singular_value: np.ndarray
    joint_steps: np.ndarray
    singularity_threshold: float
    jump_threshold: float

    @property
    def position_violation(self) -> np.ndarray:
        """(N, J) True where a joint is outside its position limits by more than :func:`limit_slack`."""
        return self.position_excess > self.limit_slack

    @property
    def velocity_violation(self) -> np.ndarray:
        """(N, J) True where a joint moves faster than its velocity limit."""
        return np.abs(self.velocities) > self.velocity_limits * (1 + 1e-9)

    @property
    def acceleration_violation(self) -> np.ndarray:
        """(N, J) True where a joint accelerates beyond its acceleration limit."""
        return np.abs(self.accelerations) > self.acceleration_limits * (1 + 1e-9)

    @property
    def near_singular(self) -> np.ndarray:
        """(N,) True where the smallest singular value is below the threshold."""
        return self.min_singular_value < self.singularity_threshold

    @property
    def jumps(self) -> np.ndarray:
        """(N, J) True where a joint moved more than ``jump_threshold`` since the previous frame."""
        return self.joint_steps > self.jump_threshold

    @property
    def frame_ok(self) -> np.ndarray:
        """(N,) True for frames without any violation, jump or near singularity."""
        per_joint = self.position_violation | self.velocity_violation | self.acceleration_violation | self.jumps
        return ~(per_joint.any(axis=1) | self.near_singular)

    @property
    def ok(self) -> bool:
        """True when every frame is fine."""
        return bool(self.frame_ok.all())

    def summary(self) -> dict[str, Any]:
        """Counts of problem frames per category, the first bad frame and the worst values."""
        counts = {
            "position": self.position_violation.any(axis=1),
            "velocity": self.velocity_violation.any(axis=1),
            "acceleration": self.acceleration_violation.any(axis=1),
            "near_singular": self.near_singular,
            "jump": self.jumps.any(axis=1),
        }
        bad = np.flatnonzero(~self.frame_ok)
        with np.errstate(divide="ignore", invalid="ignore"):
            vel_ratio = np.abs(self.velocities) / self.velocity_limits
            acc_ratio = np.abs(self.accelerations) / self.acceleration_limits
        return {
            "frames": len(self.times),
            "ok": self.ok,
            "frames_with_issues": int(bad.size),
            "first_bad_frame": int(bad[0]) if bad.size else None,
            "frames_per_issue": {k: int(np.count_nonzero(v)) for k, v in counts.items()},
            "max_position_excess": float(self.position_excess.max(initial=0.0)),
            "max_velocity_ratio": _finite_or_none(np.nanmax(vel_ratio, initial=0.0)),
            "max_acceleration_ratio": _finite_or_none(np.nanmax(acc_ratio, initial=0.0)),
            "min_singular_value": float(self.min_singular_value.min()),
            "max_joint_step": float(self.joint_steps.max(initial=0.0)),
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible report: settings, summary and per-frame arrays (infinite limits as None)."""
        return {
            "joint_names": list(self.joint_names),
            "effector": self.effector,
            "singularity_threshold": self.singularity_threshold,
            "jump_threshold": self.jump_threshold,
            "velocity_limits": [_finite_or_none(v) for v in self.velocity_limits],
            "acceleration_limits": [_finite_or_none(v) for v in self.acceleration_limits],
            "summary": self.summary(),
            "frames": {
                "time": self.times.tolist(),
                "ok": self.frame_ok.tolist(),
                "position_excess": self.position_excess.tolist(),
                "velocity": self.velocities.tolist(),
                "velocity_violation": self.velocity_violation.tolist(),
                "acceleration": self.accelerations.tolist(),
                "acceleration_violation": self.acceleration_violation.tolist(),
                "manipulability": self.manipulability.tolist(),
                "min_singular_value": self.min_singular_value.tolist(),
                "near_singular": self.near_singular.tolist(),
                "joint_step": self.joint_steps.tolist(),
                "jump": self.jumps.tolist(),
            },
        }

    def to_csv(self) -> str:
        """One CSV row per frame: time, ok, singularity measures, then per joint its values and flags."""
        per_joint = (
            ("position_excess", self.position_excess), ("velocity", self.velocities),
            ("velocity_violation", self.velocity_violation), ("acceleration", self.accelerations),
            ("acceleration_violation", self.acceleration_violation), ("step", self.joint_steps),
            ("jump", self.jumps),
        )
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(["time", "ok", "manipulability", "min_singular_value", "near_singular",
                         *(f"{j}.{key}" for j in self.joint_names for key, _ in per_joint)])
        ok, near = self.frame_ok, self.near_singular
        for k, t in enumerate(self.times):
            cells = [repr(float(t)), int(ok[k]), repr(float(self.manipulability[k])),
                     repr(float(self.min_singular_value[k])), int(near[k])]
            for j in range(len(self.joint_names)):
                cells += [int(a[k, j]) if a.dtype == bool else repr(float(a[k, j])) for _, a in per_joint]
            writer.writerow(cells)
        return buf.getvalue()


def _finite_or_none(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _limits(name: str, value: Sequence[float | None] | float | None, default: np.ndarray) -> np.ndarray:
    if value is None:
        return default.copy()
    if np.isscalar(value):
        arr = np.full(default.shape, float(value))
    else:
        arr = np.array([math.inf if v is None else v for v in value], dtype=float)
    if arr.shape != default.shape or np.any(np.isnan(arr) | (arr <= 0)):
        raise InvalidInputError(
            f"{name} must be a positive number or {default.size} positive values (None for unlimited), "
            f"got {value!r}"
        )
    return arr


def finite_differences(times: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-frame velocities and accelerations of samples ``q`` (N, J) at ``times`` (N,) [s].

    Velocities are backward differences (frame 0 repeats frame 1's); accelerations are the
    second difference on the non-uniform grid, ``2 (v[k+1] - v[k]) / (t[k+1] - t[k-1])``
    for interior frames, the end frames repeating their neighbours. Fewer than 2 (3) frames
    give zero velocities (accelerations).
    """
    n = len(times)
    vel, acc = np.zeros(q.shape), np.zeros(q.shape)
    if n >= 2:
        seg = np.diff(q, axis=0) / np.diff(times)[:, None]
        vel[1:], vel[0] = seg, seg[0]
    if n >= 3:
        acc[1:-1] = 2.0 * np.diff(seg, axis=0) / (times[2:] - times[:-2])[:, None]
        acc[0], acc[-1] = acc[1], acc[-2]
    return vel, acc


def check_trajectory(
    trajectory: JointTrajectory,
    skeleton: Skeleton,
    effector: str | int = 0,
    velocity_limits: Sequence[float | None] | float | None = None,
    acceleration_limits: Sequence[float | None] | float | None = None,
    singularity_threshold: float = 1e-2,
    jump_threshold: float = 0.5,
) -> TrajectoryReport:
    """Check a joint trajectory against a skeleton's limits and kinematics, frame by frame.

    Args:
        trajectory: Must hold every moving joint of the skeleton (extra names are an error).
        skeleton: Skeleton whose moving joints are all 1-DoF (robot arms).
        effector: Effector (name or index) whose Jacobian is analysed.
        velocity_limits: Scalar or (J,) limits in the skeleton's ``q`` order [rad/s or m/s],
            ``None`` entries unlimited; defaults to ``skeleton.velocity``.
        acceleration_limits: Same for accelerations [rad/s^2 or m/s^2]; defaults to none
            (for presets, ``preset_info(name)["acceleration"]`` gives published ones).
        singularity_threshold: Smallest Jacobian singular value under which a frame is
            flagged near-singular (units mix m/rad and rad/rad).
        jump_threshold: Change of a joint between consecutive frames flagged as a jump
            [rad or m], whatever the time step: it catches IK branch flips and 2 pi wraps.

    Returns:
        The per-frame :class:`TrajectoryReport`.

    Raises:
        TrajectoryError: The trajectory lacks some of the skeleton's joints.
        UnknownNameError: The trajectory names a joint the skeleton does not have as a
            moving joint, or the effector is unknown.
        InvalidInputError: Ball joints in the skeleton, or bad limits or thresholds.
    """
    moving = skeleton.moving_joint_names
    if skeleton.dof != len(moving):
        raise InvalidInputError(
            f"check_trajectory handles skeletons whose moving joints are all 1-DoF; {skeleton.name!r} has ball joints"
        )
    for name in trajectory.joint_names:
        if name not in moving:
            raise UnknownNameError("joint", name, moving)
    missing = [n for n in moving if n not in trajectory.joint_names]
    if missing:
        raise TrajectoryError(f"the trajectory lacks joint(s) {missing} of skeleton {skeleton.name!r}")
    for label, value in (("singularity_threshold", singularity_threshold), ("jump_threshold", jump_threshold)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
            raise InvalidInputError(f"{label} must be a finite number >= 0, got {value!r}")
    eff = skeleton.effector(effector)
    q = trajectory.select(moving).positions
    lower, upper = np.asarray(skeleton.lower), np.asarray(skeleton.upper)
    excess = np.maximum(np.maximum(lower - q, q - upper), 0.0)
    vel, acc = finite_differences(trajectory.times, q)
    J = jacobian(skeleton, q, eff.name)
    sv = np.linalg.svd(J, compute_uv=False)
    steps = np.zeros(q.shape)
    steps[1:] = np.abs(np.diff(q, axis=0))

    def frozen(a: np.ndarray) -> np.ndarray:
        a = np.ascontiguousarray(a, dtype=float)
        a.setflags(write=False)
        return a

    return TrajectoryReport(
        joint_names=moving,
        effector=eff.name,
        times=trajectory.times,
        position_excess=frozen(excess),
        limit_slack=frozen(limit_slack(lower, upper)),
        velocities=frozen(vel),
        velocity_limits=frozen(_limits("velocity_limits", velocity_limits, np.asarray(skeleton.velocity))),
        accelerations=frozen(acc),
        acceleration_limits=frozen(_limits("acceleration_limits", acceleration_limits, np.full(len(moving), np.inf))),
        manipulability=frozen(np.prod(sv, axis=-1)),
        min_singular_value=frozen(sv[..., -1]),
        joint_steps=frozen(steps),
        singularity_threshold=float(singularity_threshold),
        jump_threshold=float(jump_threshold),
    )
