# SPDX-License-Identifier: GPL-3.0-or-later
"""A robot's IK branches: the distinct solutions of one target, joint values a whole turn apart counted as one."""

from __future__ import annotations

import numpy as np

from ..model.distance import branch_steps
from ..solvers.base import Solver
from ..solvers.branches import Branches, distinct_solutions, first_distinct


def robot_branches(
    solver: Solver,
    target: np.ndarray,
    reference: np.ndarray | None = None,
    seeds: int = 64,
    min_separation: float = 0.1,
) -> Branches:
    """The IK branches of ``target``, each once, at the joint values nearest ``reference``.

    A UR joint ranges over +/- 2 pi, so each arm pose is reached by joint values a whole turn
    apart; :func:`.distinct_solutions` lists those separately (33 for one UR5 target where the arm
    has 8 branches). Here solutions whose joints all differ by less than ``min_separation``
    modulo a turn (:func:`.branch_steps`) are one branch, kept at the values nearest the reference.

    Args:
        solver: A solver (typically DLS in "full" mode) for the arm's skeleton.
        target: (4, 4) target pose (or (3,) position, as the solver's mode accepts).
        reference: (dof,) configuration the branches are sorted by (nearest first), usually the
            current pose; defaults to the skeleton's preferred pose.
        seeds: Number of random starts within the limits (the reference is always one of them).
        min_separation: Two solutions closer than this in every joint, turns ignored, are one
            branch [rad or m].

    Returns:
        The branches, nearest the reference first; possibly empty when no start converged.

    Raises:
        InvalidInputError: ``seeds`` < 1 or a reference of the wrong shape.
    """
    found = distinct_solutions(solver, target, reference=reference, seeds=seeds, min_separation=min_separation)
    skeleton = solver.skeleton
    kept = first_distinct(found.q, range(len(found)), min_separation,
                          distance=lambda picked, q: branch_steps(skeleton, picked, q))
    return Branches(found.q[kept], found.position_error[kept], found.rotation_error[kept], found.distance[kept])
