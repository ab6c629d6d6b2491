# SPDX-License-Identifier: GPL-3.0-or-later
"""Articulate's inverse-kinematics core: pure numpy, no Blender imports.

One concept per folder, each importing only the folders below it:

- :mod:`.model`: rotations, the skeleton and its sub-chains, forward kinematics, poles.
- :mod:`.limits`: joint limits and the projection of configurations onto them.
- :mod:`.solvers`: one solver interface; FABRIK, CCD, DLS and two-bone families; reach; Auto;
  the aim solver of aim chains.
- :mod:`.take`: whole takes, frame by frame, with repairs and global searches.
- :mod:`.formats`: URDF (and xacro) and BVH files read into the model.
- :mod:`.robots`: robot presets, the stored robot model, closed-form UR IK.
- :mod:`.contacts`: contacts of an effector with the ground: detection, planting, the ground
  plane, the hips lowered for reach.
- :mod:`.humanoid`: full-body solving from three trackers, humanoid role maps.
- :mod:`.trajectory`: joint trajectories: files (ROS 2 bags too), checks, resampling.
- :mod:`.errors`, :mod:`.blas_threads`, :mod:`.bundled`: the error types; numpy's BLAS kept on
  one thread; the pure-Python packages bundled as wheels (xacro, mcap), imported on demand.

The names below are the public API, importable from ``ik_core`` itself. Each is imported from its
module on first use (:func:`lazy_exports`), so importing ``ik_core``, or one of its folders, does not
import every folder: a command that bakes a chain never loads the URDF reader, for one.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

# Imported at once: small, needed by every command, and ``blas_threads`` names both a module and
# its function (imported lazily, the module would shadow the function).
from .blas_threads import blas_threads, limit_blas_threads
from .errors import ArticulateError, InvalidInputError, LimitError, SkeletonError, UnknownNameError, URDFError

# public name -> the module (relative to this package) that defines it, imported on first use
_LAZY = {
    "load_urdf": "formats.urdf",
    "parse_urdf": "formats.urdf",
    "ConeTwistLimit": "limits",
    "EulerLimit": "limits",
    "limit_violation": "limits",
    "project_configuration": "limits",
    "sub_chain": "model.chains",
    "effector_poses": "model.kinematics",
    "forward_kinematics": "model.kinematics",
    "jacobian": "model.kinematics",
    "Effector": "model.skeleton",
    "Joint": "model.skeleton",
    "JointKind": "model.skeleton",
    "Mimic": "model.skeleton",
    "Skeleton": "model.skeleton",
    "SOLVER_NAMES": "solvers",
    "AimResult": "solvers",
    "AimSolver": "solvers",
    "IKResult": "solvers",
    "Solver": "solvers",
    "make_solver": "solvers",
    "solve_sequence": "solvers",
    "track_aim": "take.aim_track",
    "solve_track": "take.tracking",
    "track_chain": "take.tracking",
}

if TYPE_CHECKING:  # what type checkers and readers see; at run time each name comes from __getattr__
    from .formats.urdf import load_urdf, parse_urdf
    from .limits import ConeTwistLimit, EulerLimit, limit_violation, project_configuration
    from .model.chains import sub_chain
    from .model.kinematics import effector_poses, forward_kinematics, jacobian
    from .model.skeleton import Effector, Joint, JointKind, Mimic, Skeleton
    from .solvers import SOLVER_NAMES, AimResult, AimSolver, IKResult, Solver, make_solver, solve_sequence
    from .take.aim_track import track_aim
    from .take.tracking import solve_track, track_chain


def lazy_exports(package: str, names: dict[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` (PEP 562) for public names imported on first use.

    Args:
        package: The package's ``__name__``.
        names: Public name -> the module defining it, relative to the package (``"take.tracking"``).

    Returns:
        ``(__getattr__, __dir__)`` to assign in the package's ``__init__``: the first access to a name
        imports its module and keeps the value as a package attribute.
    """
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> object:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        imported = importlib.import_module(f".{module}", package)
        for other, where in names.items():  # the module's other names too: none stays shadowed by a submodule
            if where == module:
                namespace[other] = getattr(imported, other)
        return namespace[name]

    def __dir__() -> list[str]:
        return sorted({*namespace, *names})

    return __getattr__, __dir__


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)

__all__ = [
    "SOLVER_NAMES",
    "AimResult",
    "AimSolver",
    "ArticulateError",
    "ConeTwistLimit",
    "EulerLimit",
    "IKResult",
    "Solver",
    "Effector",
    "InvalidInputError",
    "Joint",
    "JointKind",
    "LimitError",
    "Mimic",
    "Skeleton",
    "SkeletonError",
    "URDFError",
    "UnknownNameError",
    "blas_threads",
    "effector_poses",
    "forward_kinematics",
    "jacobian",
    "lazy_exports",
    "limit_blas_threads",
    "limit_violation",
    "load_urdf",
    "make_solver",
    "parse_urdf",
    "project_configuration",
    "solve_sequence",
    "solve_track",
    "sub_chain",
    "track_aim",
    "track_chain",
]
