# SPDX-License-Identifier: GPL-3.0-or-later
"""An aim chain over a take: world samples to the chain's base frame, every frame from one start, jumps repaired."""

from __future__ import annotations

import numpy as np

from ..errors import InvalidInputError, require_finite
from ..model.distance import joint_steps
from ..solvers.aim import AimResult, AimSolver

# A warm-started answer replaces a frame's when it moves less than this fraction of the jump.
_FLIP = 0.5


def _directions_to_base(base: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(N, 3) world directions ``v`` (N, 3) or (3,) seen in base frames (N, 4, 4), unit length."""
    local = np.linalg.solve(base[:, :3, :3], np.broadcast_to(v, (len(base), 3))[..., None])[..., 0]
    n = np.linalg.norm(local, axis=-1, keepdims=True)
    return local / np.where(n > 0, n, 1.0)


def _points_to_base(base: np.ndarray, p: np.ndarray) -> np.ndarray:
    """(N, 3) world points ``p`` (N, 3) in base frames (N, 4, 4)."""
    return np.linalg.solve(base, np.concatenate([p, np.ones((len(p), 1))], axis=1)[..., None])[..., :3, 0]


def track_aim(
    solver: AimSolver,
    base: np.ndarray,
    targets: np.ndarray,
    q0: np.ndarray | None = None,
    *,
    up: np.ndarray | None = None,
    up_points: np.ndarray | None = None,
    max_jump: float = 0.1,
    progress=None,
) -> AimResult:
    """Aim a chain at a target over a take.

    Every frame is solved in one batch from the same start ``q0``, so the pose is a function of
    the target alone: no twist creeps in as the target circles the chain (smallest turns
    chained from frame to frame would add one up), and the pose at a frame does not depend on
    the frames before it. Where consecutive frames still jump by more than ``max_jump`` (a
    target crossing behind a limited chain, where the smallest turn from the start flips side),
    the frame is solved again warm-started from the frame before, in order, and that answer is
    kept if it aims at least as well and moves less than half as far: the chain keeps turning the
    way it was.
    Behind a chain whose limits stop it short, the other side aims better once the target has
    passed the back: that answer is kept, and the pose changes sides there.

    Args:
        solver: The chain's aim solver.
        base: (N, 4, 4) world matrices of the chain's base frame (a uniform scale allowed).
        targets: (N, 3) world target positions [m].
        q0: (dof,) start pose; ``None`` starts from the rest pose (see :meth:`AimSolver.solve`).
        up: Optional (3,) or (N, 3) world up direction (e.g. +Z).
        up_points: Optional (N, 3) world points the up axis turns toward instead of ``up``.
        max_jump: Largest change of a joint between frames [rad] accepted without a warm-started
            retry (> 0).
        progress: Optional ``progress(done, total)`` callback.

    Returns:
        An :class:`~ik_core.solvers.aim.AimResult` of batch shape (N,); angles measured in the
        base frame, which a uniform scale leaves unchanged.

    Raises:
        InvalidInputError: Shapes that do not match, NaN or infinite samples, ``max_jump`` <= 0.
    """
    base = np.asarray(base, dtype=float)
    targets = np.asarray(targets, dtype=float)
    n = len(base)
    if base.shape != (n, 4, 4) or targets.shape != (n, 3):
        raise InvalidInputError(f"base must be (N, 4, 4) and targets (N, 3), got {base.shape} and {targets.shape}")
    if not (np.isfinite(max_jump) and max_jump > 0):
        raise InvalidInputError(f"max_jump must be a finite angle > 0 rad, got {max_jump!r}")
    require_finite("base", base)
    local_t = _points_to_base(base, targets)
    local_up = None if up is None else _directions_to_base(base, np.asarray(up, dtype=float))
    local_points = None
    if up_points is not None:
        up_points = np.asarray(up_points, dtype=float)
        local_points = _points_to_base(base, up_points)
    if n == 0:
        return solver.solve(np.zeros((0, 3)), q0)
    res = solver.solve(local_t, q0, up=local_up, up_points=local_points)
    fields = {f: np.array(getattr(res, f)) for f in AimResult.__dataclass_fields__}
    q = fields["q"]
    skeleton = solver.skeleton
    steps = joint_steps(skeleton, q[:-1], q[1:])  # steps[k - 1]: into frame k
    k = 0
    while True:
        later = np.flatnonzero(steps[k:] > max_jump)
        if not later.size:
            break
        k += int(later[0]) + 1
        step = float(steps[k - 1])
        alt = solver.solve(local_t[k], q[k - 1], up=None if local_up is None else local_up[k],
                           up_points=None if local_points is None else local_points[k])
        keeps_aim = alt.aim_error <= max(fields["aim_error"][k], solver.tolerance) + 1e-12
        # Only a flip counts: on a fast but smooth path the warm start moves a little less too, and
        # taking it would make the pose depend on the frames before (a twist creeping in).
        if keeps_aim and float(joint_steps(skeleton, q[k - 1], alt.q)) < _FLIP * step:
            for f in fields:
                fields[f][k] = getattr(alt, f)
            if k + 1 < n:
                steps[k] = joint_steps(skeleton, q[k], q[k + 1])
    if progress is not None:
        progress(n, n)
    return AimResult(**fields)
