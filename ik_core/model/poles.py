# SPDX-License-Identifier: GPL-3.0-or-later
"""Pole angle: the bend direction a pole asks for, turned about the chain's root-to-target axis."""

from __future__ import annotations

import numpy as np

from ..errors import require_finite
from .kinematics import forward_kinematics
from .skeleton import Skeleton


def chain_root(skeleton: Skeleton) -> np.ndarray:
    """(3,) position of the skeleton's first joint in its base frame [m] (it does not depend on q)."""
    return forward_kinematics(skeleton, np.zeros(skeleton.dof))[0, :3, 3]


def turn_poles(pole: np.ndarray, root: np.ndarray, target: np.ndarray, angle: float) -> np.ndarray:
    """Poles turned by ``angle`` about the root-to-target axis (right-handed), so the bend follows.

    A pole says which side the chain bends to; a pole angle turns that side about the line
    from the chain's root to its target, the same line the bend plane swivels about. Where
    the target sits on the root the axis is undefined and the pole is kept.

    Args:
        pole: (..., 3) pole positions [m].
        root: (..., 3) chain root positions [m], broadcast against ``pole``.
        target: (..., 3) target positions [m], broadcast against ``pole``.
        angle: Turn [rad]; 0 returns the poles unchanged.

    Returns:
        (..., 3) turned pole positions [m].

    Raises:
        InvalidInputError: A non-finite angle or position.
    """
    pole = np.asarray(pole, dtype=float)
    require_finite("pole angle", np.asarray(angle, dtype=float))
    if angle == 0.0:
        return pole
    require_finite("pole", pole)
    root, target = np.asarray(root, dtype=float), np.asarray(target, dtype=float)
    axis = target - root
    norm = np.linalg.norm(axis, axis=-1, keepdims=True)
    u = axis / np.where(norm > 1e-12, norm, 1.0)
    v = pole - root
    c, s = np.cos(angle), np.sin(angle)
    # Rodrigues' formula; a zero axis (target on the root) leaves v as it is.
    turned = v * c + np.cross(u, v) * s + u * np.sum(u * v, axis=-1, keepdims=True) * (1.0 - c)
    return root + np.where(norm > 1e-12, turned, v)
