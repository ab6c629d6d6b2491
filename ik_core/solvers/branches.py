# SPDX-License-Identifier: GPL-3.0-or-later
"""Distinct IK solutions (branches) of one target, for arms without a closed form."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError
from ..model.skeleton import Skeleton
from .base import Solver


@dataclass(frozen=True)
class Branches:
    """Distinct configurations reaching one target.

    Attributes:
        q: (K, dof) solutions, nearest to the reference first [rad or m].
        position_error: (K,) [m].
        rotation_error: (K,) [rad].
        distance: (K,) largest joint difference from the reference [rad or m].
    """

    q: np.ndarray
    position_error: np.ndarray
    rotation_error: np.ndarray
    distance: np.ndarray

    def __len__(self) -> int:
        return len(self.q)


def random_configurations(skeleton: Skeleton, n: int, rng: np.random.Generator) -> np.ndarray:
    """(n, dof) configurations uniform within the box limits (+/- pi where unbounded)."""
    lo = np.where(np.isfinite(skeleton.lower), skeleton.lower, -np.pi)
    hi = np.where(np.isfinite(skeleton.upper), skeleton.upper, np.pi)
    return rng.uniform(lo, hi, size=(n, skeleton.dof))


def first_distinct(
    q: np.ndarray,
    order: Sequence[int],
    min_separation: float,
    distance: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
) -> list[int]:
    """Greedy pick of distinct configurations: each, in ``order``, unless too close to one picked before.

    Args:
        q: (n, dof) candidate configurations [rad or m].
        order: Indices into ``q`` by preference, best first.
        min_separation: A candidate closer than this to a picked one is the same [rad or m].
        distance: ``distance(qa (k, dof), qb (dof,)) -> (k,)``; defaults to the largest
            difference of any variable.

    Returns:
        The picked indices, in ``order``.
    """
    kept: list[int] = []
    for i in order:
        if kept:
            picked = q[kept]
            d = np.max(np.abs(picked - q[i]), axis=1) if distance is None else distance(picked, q[i])
            if np.min(d) < min_separation:
                continue
        kept.append(int(i))
    return kept


def distinct_solutions(
    solver: Solver,
    target: np.ndarray,
    reference: np.ndarray | None = None,
    seeds: int = 64,
    min_separation: float = 0.1,
    rng_seed: int = 0,
) -> Branches:
    """Solve one target from many seeds at once and keep the distinct converged answers.

    Args:
        solver: A solver (typically DLS in "full" mode) for the arm's skeleton.
        target: (4, 4) target pose (or (3,) position, as the solver's mode accepts).
        reference: (dof,) configuration the branches are sorted by (nearest first); defaults
            to the skeleton's preferred pose.
        seeds: Number of random starts within the limits (the reference is always one of them).
        min_separation: Two solutions closer than this in every joint [rad or m] are the same.
        rng_seed: Seed of the random starts.

    Returns:
        The distinct solutions, possibly empty when no start converged.

    Raises:
        InvalidInputError: ``seeds`` < 1 or a reference of the wrong shape.
    """
    skeleton = solver.skeleton
    if seeds < 1:
        raise InvalidInputError(f"seeds must be >= 1, got {seeds}")
    ref = skeleton.preferred_q if reference is None else np.asarray(reference, dtype=float)
    if ref.shape != (skeleton.dof,):
        raise InvalidInputError(f"reference must have shape ({skeleton.dof},), got {ref.shape}")
    starts = np.vstack([ref, random_configurations(skeleton, seeds - 1, np.random.default_rng(rng_seed))])
    target = np.asarray(target, dtype=float)
    result = solver.solve(np.broadcast_to(target, (len(starts), *target.shape)), starts)
    ok = np.flatnonzero(result.converged)
    q = result.q[ok]
    distance = np.max(np.abs(q - ref), axis=1, initial=0.0)
    kept = first_distinct(q, np.argsort(distance, kind="stable"), min_separation)
    return Branches(q[kept], result.position_error[ok][kept], result.rotation_error[ok][kept], distance[kept])
