# SPDX-License-Identifier: GPL-3.0-or-later
"""IK solvers sharing one interface (:class:`Solver`) and one result type (:class:`IKResult`).

Reach solvers (FABRIK, CCD, DLS, two-bone) put an effector on a target and are made by name
(:func:`make_solver`). A target a solver misses gets its best effort under the limits in the
template every solver follows (:mod:`.best_effort`): the pose inside the limits closest to it, a
local minimum checked against global starts, so a missed frame's residual is the distance the
limits force. Aim chains are a chain mode, not a reach solver: :class:`AimSolver`
(module :mod:`.aim`) points an axis of the chain's last joint at the target, with its own result
type (:class:`AimResult`), and is not in the registry of reach solvers.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from ..errors import UnknownNameError
from ..model.skeleton import Skeleton
from .aim import AimResult, AimSolver
from .base import IKResult, Solver, Targets, as_targets, solve_sequence
from .choice import AUTO, SOLVER_CHOICES, SOLVER_LABELS, auto_solver, resolve_solver

# name -> (module, class); modules are imported on first use so a missing optional solver
# never breaks the others.
_REGISTRY = {
    "fabrik": ("fabrik.solver", "FabrikSolver"),
    "ccd": ("ccd", "CCDSolver"),
    "dls": ("dls.solver", "DLSSolver"),
    "two_bone": ("two_bone.solver", "TwoBoneSolver"),
}
SOLVER_NAMES: tuple[str, ...] = tuple(_REGISTRY)


def solver_class(name: str) -> type[Solver]:
    """The solver class registered under ``name``.

    Raises:
        UnknownNameError: If ``name`` is not one of :data:`SOLVER_NAMES`.
    """
    if name not in _REGISTRY:
        raise UnknownNameError("solver", name, SOLVER_NAMES)
    module, cls = _REGISTRY[name]
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)


def make_solver(
    name: str, skeleton: Skeleton, effectors: str | int | Sequence[str | int] = 0, **options: object
) -> Solver:
    """Construct the solver called ``name`` for ``skeleton``.

    Args:
        name: One of :data:`SOLVER_NAMES`.
        skeleton: The skeleton to pose.
        effectors: Effector name(s) driven by the targets.
        **options: Constructor options of that solver (tolerance, max_iterations, ...).

    Returns:
        The solver.
    """
    return solver_class(name)(skeleton, effectors, **options)


__all__ = [
    "AUTO",
    "AimResult",
    "AimSolver",
    "SOLVER_CHOICES",
    "SOLVER_LABELS",
    "SOLVER_NAMES",
    "IKResult",
    "Solver",
    "Targets",
    "as_targets",
    "auto_solver",
    "make_solver",
    "resolve_solver",
    "solve_sequence",
    "solver_class",
]
