# SPDX-License-Identifier: GPL-3.0-or-later
"""Restart seeds for the DLS solver: a library of configurations looked up by effector pose."""

from __future__ import annotations

import numpy as np

from .kinematics import EffectorModel

# Nearest library entries ranked per target; further restarts draw uniformly.
RANKED_SEEDS = 64


class SeedLibrary:
    """Configurations drawn once inside the limits, with the effector poses they produce.

    A restart then starts from the library entry whose pose is nearest the target rather than
    from a uniform draw: the nearest entries usually lie in the target's basin, so a restart
    converges in a few iterations instead of exploring. Nothing here depends on the targets;
    the library is a fixed, seeded sample of the configuration space.

    Args:
        model: Effector model of the solver's skeleton and effectors.
        lower: (dof,) lower limits; unbounded variables are drawn in [-pi, pi].
        upper: (dof,) upper limits.
        size: Number of entries.
        mode: Solver mode: which parts of the pose the distance compares.
        aim_axis: (3,) effector axis compared in "aim" mode.
        rotation_scale: Length [m] that one radian of rotation counts for in the distance.
        seed: Seed of the draw.
    """

    def __init__(
        self, model: EffectorModel, lower: np.ndarray, upper: np.ndarray, size: int, mode: str,
        aim_axis: np.ndarray, rotation_scale: float, seed: int,
    ) -> None:
        finite = np.isfinite(lower) & np.isfinite(upper)
        self.lo = np.where(finite, lower, -np.pi)
        self.hi = np.where(finite, upper, np.pi)
        rng = np.random.default_rng(seed)
        self.q = rng.uniform(self.lo, self.hi, (size, len(self.lo)))
        self.mode, self.aim_axis, self.scale = mode, aim_axis, rotation_scale
        poses = model.poses(self.q)
        self.features = self.describe(poses[..., 3], poses[..., :3] if mode == "full" else poses[..., :3] @ aim_axis)
        self.norms = np.einsum("kf,kf->k", self.features, self.features)

    def describe(self, positions: np.ndarray, rotations: np.ndarray | None) -> np.ndarray:
        """(N, F) feature rows whose Euclidean distances compare poses.

        Args:
            positions: (N, E, 3) positions [m].
            rotations: (N, E, 3, 3) rotations ("full"), (N, E, 3) aim directions ("aim"), or
                None ("position").
        """
        N = positions.shape[0]
        parts = [positions.reshape(N, -1)]
        if self.mode != "position" and rotations is not None:
            # |R1 - R2|_F ~ sqrt(2) |angle| for small angles, a unit aim vector ~ |angle|.
            factor = self.scale / (np.sqrt(2.0) if self.mode == "full" else 1.0)
            parts.append(rotations.reshape(N, -1) * factor)
        return np.concatenate(parts, axis=1)

    def nearest(self, features: np.ndarray, rank: np.ndarray, group: np.ndarray) -> np.ndarray:
        """(N,) library index of the rank-th nearest entry for each request, or -1 past the ranking.

        Args:
            features: (G, F) rows from :meth:`describe`, one per distinct target.
            rank: (N,) 0-based rank wanted per request.
            group: (N,) row of ``features`` each request is for.
        """
        out = np.full(len(rank), -1)
        ok = rank < min(RANKED_SEEDS, len(self.q))
        if not ok.any():
            return out
        top = min(int(rank[ok].max()) + 1, len(self.q))
        # |f|^2 is the same along a row: it does not change the ranking.
        d = self.norms[None, :] - 2.0 * (features @ self.features.T)
        part = np.argpartition(d, top - 1, axis=1)[:, :top] if top < len(self.q) else np.argsort(d, axis=1)
        order = np.take_along_axis(part, np.argsort(np.take_along_axis(d, part, axis=1), axis=1), axis=1)
        out[ok] = order[group[ok], rank[ok]]
        return out

    def uniform(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """(count, dof) uniform draws inside the limits (unbounded variables: [-pi, pi])."""
        return rng.uniform(self.lo, self.hi, (count, len(self.lo)))
