# SPDX-License-Identifier: GPL-3.0-or-later
"""Joint limits: box ranges on the skeleton, Euler and cone-twist limits for ball joints."""

from __future__ import annotations

import numpy as np

from ..errors import InvalidInputError
from ..model.skeleton import JointKind, Skeleton
from .ball import FEASIBLE_TOL, TWO_PI, circular_clamp, ellipse_project
from .cone_twist import ConeTwistLimit, project_cone_twist_joints
from .euler import EulerLimit, project_euler_joints
from .swing_twist import SwingTwistLimit, project_swing_twist_joints

__all__ = [
    "FEASIBLE_TOL",
    "TWO_PI",
    "ConeTwistLimit",
    "EulerLimit",
    "circular_clamp",
    "ellipse_project",
    "free_directions",
    "fully_locked",
    "limit_violation",
    "project_configuration",
]


# Each limit kind's projection of several joints in one pass.
_TOGETHER = {
    SwingTwistLimit: project_swing_twist_joints,
    EulerLimit: project_euler_joints,
    ConeTwistLimit: project_cone_twist_joints,
}


def project_configuration(skeleton: Skeleton, q: np.ndarray) -> np.ndarray:
    """Nearest feasible configuration: box ranges clamped, ball-joint limits projected.

    Args:
        skeleton: The skeleton whose limits apply.
        q: (..., dof) configurations [rad or m].

    Returns:
        (..., dof) configurations inside every limit.
    """
    q = np.clip(np.asarray(q, dtype=float), skeleton.lower, skeleton.upper)
    # Limits of one kind are projected together, one pass for all the bones of a spine or a
    # tail (Euler limits per order); other limits one joint at a time.
    groups: dict[object, tuple[list, list]] = {}
    for i, joint in enumerate(skeleton.joints):
        if joint.kind is JointKind.BALL and joint.limit is not None and joint.dof:
            s = skeleton.q_index[i]
            kind = type(joint.limit)
            key = (kind, joint.limit.order) if kind is EulerLimit else kind if kind in _TOGETHER else None
            if key is None:
                q[..., s : s + 3] = joint.limit.project(q[..., s : s + 3])
                continue
            limits, columns = groups.setdefault(key, ([], []))
            limits.append(joint.limit)
            columns.append(range(s, s + 3))
    for limits, columns in groups.values():
        if len(limits) == 1:
            s = columns[0].start
            q[..., s : s + 3] = limits[0].project(q[..., s : s + 3])
            continue
        cols = np.array(columns)
        if not np.isfinite(q[..., cols]).all():
            raise InvalidInputError("rotvec contains NaN or infinite values")
        q[..., cols] = _TOGETHER[type(limits[0])](limits, q[..., cols])
    return q


def free_directions(skeleton: Skeleton) -> int:
    """Directions in which the limits let the skeleton move: its variables, less every locked axis.

    A range that is a single value is a locked axis, and so is an axis a ball joint's limit leaves
    no room about (see :meth:`~.ball.BallLimit.free_axes`): a chain with a fully locked ball joint
    moves as the chain without it, and is no more redundant than that one.
    """
    # A ball joint's variables are unbounded on the skeleton; its limit says which of them move.
    locked_ball_axes = sum(
        joint.dof - joint.limit.free_axes() for joint in skeleton.joints
        if joint.kind is JointKind.BALL and joint.dof and joint.limit is not None
    )
    return int(np.count_nonzero(np.asarray(skeleton.lower) < np.asarray(skeleton.upper))) - locked_ball_axes


# Probes around the one configuration far-apart probes land on move this far [rad or m].
_LOCK_PROBE = 1e-3


def fully_locked(skeleton: Skeleton) -> bool:
    """True when the limits leave a single configuration (every range one value, every ball joint locked).

    Far-apart probes of the configuration space all project onto one point, and so do probes a
    little way from that point in every direction. Far-apart probes alone also meet where every
    range is narrow and lies beyond them (a hinge in [2.91, 3.0] rad: probes below it all land on
    its lower end), but there probes next to that end stay inside the range.
    """
    rng = np.random.default_rng(0)
    probes = rng.uniform(-3.0, 3.0, (4, skeleton.dof))
    landed = project_configuration(skeleton, probes)
    if np.ptp(landed, axis=0).max(initial=0.0) > 1e-12:
        return False
    steps = np.concatenate([np.eye(skeleton.dof), -np.eye(skeleton.dof), rng.normal(size=(4, skeleton.dof))])
    around = project_configuration(skeleton, landed[0] + _LOCK_PROBE * steps)
    return bool(np.abs(around - landed[0]).max(initial=0.0) <= 1e-12)


def limit_violation(skeleton: Skeleton, q: np.ndarray) -> np.ndarray:
    """(...,) largest amount [rad or m] by which any variable of ``q`` leaves its limits."""
    q = np.asarray(q, dtype=float)
    projected = project_configuration(skeleton, q)
    return np.max(np.abs(q - projected), axis=-1, initial=0.0)
