# SPDX-License-Identifier: GPL-3.0-or-later
"""Batched analytic two-bone IK with a true hinge, flexion limits and a pole direction."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .calibration import Limb
from .geometry import exp_so3, frame_from, mv, normalize, twist_about

__all__ = ["LimbPose", "solve_limb"]


@dataclass(frozen=True, eq=False)
class LimbPose:
    """Solved limb for N frames.

    Attributes:
        upper, lower: (N, 3, 3) world rotation deltas of the two bones (``R = D @ R_ref``).
        mid, end: (N, 3) middle joint (elbow, knee) and end joint (wrist, ankle) positions [m].
        flex: (N,) hinge flexion [rad], inside the limb's range.
        reachable: (N,) True where the end joint reaches the target within the limits.
    """

    upper: np.ndarray
    lower: np.ndarray
    mid: np.ndarray
    end: np.ndarray
    flex: np.ndarray
    reachable: np.ndarray


def solve_limb(
    limb: Limb,
    root: np.ndarray,
    target: np.ndarray,
    pole: np.ndarray,
    fallback_hinge: np.ndarray,
    end_rotation: np.ndarray | None = None,
    twist_share: float = 0.0,
    soft: float = 0.0,
) -> LimbPose:
    """Place a two-bone limb so its end joint reaches ``target``.

    The flexion comes from the root-target distance (law of cosines, clamped to the limb's
    range); the limb plane is turned about the root-target line so that the middle joint
    moves toward ``pole``. The lower bone only rotates about the hinge axis relative to the
    upper bone, plus an optional twist about its own length taken from the end bone.

    Args:
        limb: Calibrated limb.
        root: (N, 3) world position of the upper bone's joint [m].
        target: (N, 3) world target of the end joint [m].
        pole: (N, 3) direction toward which the middle joint should bend (any length).
        fallback_hinge: (N, 3) hinge axis used where ``pole`` is parallel to the limb.
        end_rotation: (N, 3, 3) world delta of the end bone; needed when ``twist_share`` > 0.
        twist_share: Fraction of the end bone's twist (about the lower bone) the lower bone takes.
        soft: Soft-reach band [m]: targets within ``soft`` of full extension are approached
            asymptotically (the end stops short of them), which removes the snap of the middle
            joint as the limb straightens. 0 keeps the end exact whenever reachable.

    Returns:
        The solved limb.
    """
    upper, lower, h = limb.upper, limb.lower, limb.hinge
    l1 = float(np.linalg.norm(upper))
    lower_perp = float(np.linalg.norm(lower - np.dot(lower, h) * h))
    l2sq = float(np.dot(lower, lower))
    d = target - root
    dist = np.sqrt(np.sum(d * d, axis=-1))
    if soft > 0:
        full = np.sqrt(l1**2 + l2sq + 2.0 * l1 * lower_perp)
        start = full - soft
        over = np.maximum(dist - start, 0.0)
        dist = np.where(dist > start, start + soft * (1.0 - np.exp(-over / soft)), dist)
    cos_flex = (dist**2 - l1**2 - l2sq) / (2.0 * l1 * max(lower_perp, 1e-9))
    lo, hi = limb.flex_range
    flex = np.arccos(np.clip(cos_flex, -1.0, 1.0))
    reachable = (cos_flex <= 1.0 + 1e-9) & (flex <= hi + 1e-9) & (cos_flex >= -1.0 - 1e-9)
    flex = np.clip(flex, max(lo, 0.0), hi)
    bend = exp_so3((flex - limb.rest_flex)[:, None] * h)
    w = upper + mv(bend, lower)  # root -> end in the reference frame, after flexing
    w_hat = normalize(w)
    d_hat = normalize(d, fallback=w_hat)
    # The pole's length says how sure it is: a weak pole fades into the fallback instead of
    # flipping the limb plane when it becomes parallel to the limb.
    fb = normalize(fallback_hinge - np.sum(fallback_hinge * d_hat, axis=-1, keepdims=True) * d_hat)
    hinge_goal = normalize(np.cross(pole, d_hat) + 0.05 * fb, fallback=fb)
    D_upper = frame_from(d_hat, hinge_goal) @ np.swapaxes(
        frame_from(w_hat, np.broadcast_to(h, w_hat.shape)), -1, -2
    )
    D_lower = D_upper @ bend
    if twist_share and end_rotation is not None:
        axis = normalize(lower)
        rel = np.swapaxes(D_lower, -1, -2) @ end_rotation
        tau = twist_share * twist_about(rel, axis)
        D_lower = D_lower @ exp_so3(tau[:, None] * axis)
    mid = root + mv(D_upper, upper)
    end = root + mv(D_upper, w)
    return LimbPose(D_upper, D_lower, mid, end, flex, reachable)
