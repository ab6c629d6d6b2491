# SPDX-License-Identifier: GPL-3.0-or-later
"""Solving a chain over a take: world-space samples to the chain's base frame, frame by frame."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .errors import InvalidInputError, require_finite
from .solvers.base import IKResult, Solver


def to_base_frame(base: np.ndarray, world: np.ndarray) -> np.ndarray:
    """Express world transforms in per-frame base frames.

    Args:
        base: (N, 4, 4) world matrices of the base frame (may carry a uniform scale).
        world: (N, 4, 4) world transforms.

    Returns:
        (N, 4, 4) ``inv(base) @ world``.
    """
    return np.linalg.solve(base, world)


def _frame_options(options: dict, index: int | slice) -> dict:
    return {k: v[index] for k, v in options.items()}


def solve_track(
    solver: Solver,
    targets: np.ndarray,
    q0: np.ndarray | None = None,
    max_jump: float = 0.1,
    progress=None,
    segment: int = 32,
    **options: np.ndarray,
) -> IKResult:
    """Solve a take in batched segments, each warm-started from the previous one, then repair.

    Frames are solved ``segment`` at a time in one batch, every frame of a segment starting
    from the last solved frame of the segment before (the first from ``q0``). Batches make a
    bake fast (numpy's cost is per call, not per frame), and short segments keep each frame
    close to its start so the answer stays on the same IK branch over a long path. Frames that
    did not converge, or whose configuration jumps by more than ``max_jump`` from the previous
    frame, are solved again in order, warm-started from the previous frame, and the better
    answer is kept.

    Args:
        solver: Any solver.
        targets: (N, ...) per-frame targets as accepted by ``solver.solve``.
        q0: (dof,) start pose; ``None`` uses the solver's preferred pose.
        max_jump: Largest change of any variable between consecutive frames [rad or m] that is
            accepted without a warm-started retry.
        progress: Optional ``progress(done, total)`` callback.
        segment: Frames per batch (>= 1).
        **options: Per-frame solver options with a leading N axis (for example ``pole``).

    Returns:
        An :class:`IKResult` of batch shape (N,).
    """
    n = len(targets)
    if segment < 1:
        raise InvalidInputError(f"segment must be >= 1, got {segment}")
    start = solver.skeleton.preferred_q if q0 is None else np.asarray(q0, dtype=float)
    parts = []
    for lo in range(0, n, segment):
        hi = min(lo + segment, n)
        part = solver.solve(targets[lo:hi], start, **_frame_options(options, slice(lo, hi)))
        parts.append(part)
        start = part.q[-1]
        if progress is not None:
            progress(hi, n)
    if not parts:
        return solver.solve(targets, q0, **options)
    fields = {f: np.concatenate([getattr(p, f) for p in parts]) for f in IKResult.__dataclass_fields__}
    q = fields["q"]
    for i in range(1, n):
        jump = float(np.max(np.abs(q[i] - q[i - 1]), initial=0.0))
        if fields["converged"][i] and jump <= max_jump:
            continue
        if not fields["converged"][i] and not fields["converged"][i - 1]:
            continue  # a run of misses (an unreachable stretch): the batch answer is the best effort
        retry = solver.solve(targets[i], q[i - 1], **_frame_options(options, i))
        retry_jump = float(np.max(np.abs(retry.q - q[i - 1]), initial=0.0))
        better = (bool(retry.converged) and (not fields["converged"][i] or retry_jump < jump)) or (
            not fields["converged"][i] and retry.position_error < fields["position_error"][i]
        )
        if better:
            for f in fields:
                fields[f][i] = getattr(retry, f)
    return IKResult(**fields)


def track_chain(
    solver: Solver,
    base: np.ndarray,
    target: np.ndarray,
    q0: np.ndarray | None = None,
    pole: np.ndarray | None = None,
    use_rotation: bool = False,
    scale: float = 1.0,
    progress=None,
) -> IKResult:
    """Solve one chain on every frame of a take, each frame warm-started from the previous one.

    Args:
        solver: A solver built for the chain's skeleton (expressed in its base frame), with
            its tolerance already in base-frame units (world tolerance / ``scale``).
        base: (N, 4, 4) world matrix of the chain's base frame per frame.
        target: (N, 4, 4) world matrix of the target per frame.
        q0: (dof,) configuration to start the first frame from.
        pole: (N, 3) world position of the pole per frame, or None.
        use_rotation: Pass full poses (the solver's mode decides what is used) instead of
            positions only.
        scale: Uniform world scale of the base frames; errors are returned in world units.
        progress: Optional ``progress(done, total)`` callback.

    Returns:
        An :class:`IKResult` of batch shape (N,), errors in world units [m, rad].

    Raises:
        InvalidInputError: Shapes that do not match, non-finite samples, or a degenerate
            (zero-scale) target or base matrix.
    """
    base = np.asarray(base, dtype=float)
    target = np.asarray(target, dtype=float)
    if base.shape != target.shape or base.ndim != 3 or base.shape[1:] != (4, 4):
        raise InvalidInputError(f"base and target must both be (N, 4, 4), got {base.shape} and {target.shape}")
    require_finite("target matrices", target)
    require_finite("base matrices", base)
    if np.any(np.abs(np.linalg.det(target[:, :3, :3])) < 1e-12):
        bad = np.flatnonzero(np.abs(np.linalg.det(target[:, :3, :3])) < 1e-12)
        raise InvalidInputError(f"the target has zero scale on {len(bad)} frame(s) (first: sample {bad[0]})")
    if np.any(np.abs(np.linalg.det(base[:, :3, :3])) < 1e-12):
        raise InvalidInputError("the chain's base frame has zero scale on some frames")
    local = to_base_frame(base, target)
    targets = local if use_rotation else local[:, :3, 3]
    options = {}
    if pole is not None and "pole" in solver.call_options:
        pole_h = np.concatenate([np.asarray(pole, dtype=float), np.ones((len(pole), 1))], axis=1)
        options["pole"] = np.einsum("nij,nj->ni", np.linalg.inv(base), pole_h)[:, :3]
    result = solve_track(solver, targets, q0, progress=progress, **options)
    if scale != 1.0:
        result = replace(result, position_error=result.position_error * scale)
    return result
