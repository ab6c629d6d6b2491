# SPDX-License-Identifier: GPL-3.0-or-later
"""A chain's influence over a take: the goal it solves for, blended between its pose without IK and its target.

Blender's IK constraint at influence ``w`` (``enforce`` in its solver) does not blend poses: it
moves the goal. The goal position is ``w`` of the way from where the chain's end is without IK to
the target, its orientation the same fraction of the rotation between them (a slerp), and the
chain is then solved onto that goal. At ``w = 1`` the goal is the target; at ``w = 0`` it is the
end's own pose, so the chain keeps the pose it has without IK.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..errors import InvalidInputError
from ..model.rotations import matrix_to_quat, quat_slerp, quat_to_matrix, rotation_part

FloatArray = np.ndarray


def blend_goals(free: ArrayLike, target: ArrayLike, influence: ArrayLike) -> FloatArray:
    """Per frame, the goal a chain at ``influence`` solves for (see the module docstring).

    Args:
        free: (N, 4, 4) world frame of the chain's end without IK (scale in the columns is ignored).
        target: (N, 4, 4) world frame of the target.
        influence: (N,) or scalar influence in [0, 1]; values outside are clamped.

    Returns:
        (N, 4, 4) goal frames with orthonormal rotations: position ``free + w (target - free)``,
        rotation the slerp from ``free``'s to ``target``'s by ``w`` (the shorter way).

    Raises:
        InvalidInputError: Shapes that do not match, or values that are not finite.
    """
    free = np.asarray(free, dtype=float)
    target = np.asarray(target, dtype=float)
    if free.ndim != 3 or free.shape[1:] != (4, 4) or target.shape != free.shape:
        raise InvalidInputError(f"free and target must both be (N, 4, 4); got {free.shape} and {target.shape}")
    w = np.broadcast_to(np.asarray(influence, dtype=float), (len(free),))
    if not (np.all(np.isfinite(free)) and np.all(np.isfinite(target)) and np.all(np.isfinite(w))):
        raise InvalidInputError("free, target and influence must be finite")
    w = np.clip(w, 0.0, 1.0)
    q = quat_slerp(matrix_to_quat(rotation_part(free)), matrix_to_quat(rotation_part(target)), w)
    goal = np.zeros_like(free)
    goal[:, :3, :3] = quat_to_matrix(q)
    goal[:, :3, 3] = free[:, :3, 3] + w[:, None] * (target[:, :3, 3] - free[:, :3, 3])
    goal[:, 3, 3] = 1.0
    return goal
