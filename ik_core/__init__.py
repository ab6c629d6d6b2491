# SPDX-License-Identifier: GPL-3.0-or-later
"""Articulate's inverse-kinematics core: pure numpy, no Blender imports."""

from .blas_threads import blas_threads, limit_blas_threads
from .errors import (
    ArticulateError,
    InvalidInputError,
    LimitError,
    SkeletonError,
    UnknownNameError,
    URDFError,
)
from .kinematics import effector_poses, forward_kinematics, jacobian
from .limits import ConeTwistLimit, EulerLimit, limit_violation, project_configuration
from .skeleton import Effector, Joint, JointKind, Mimic, Skeleton
from .skeleton_chain import sub_chain
from .solvers import SOLVER_NAMES, IKResult, Solver, make_solver, solve_sequence
from .tracking import solve_track, track_chain
from .urdf import load_urdf, parse_urdf

__all__ = [
    "SOLVER_NAMES",
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
    "limit_blas_threads",
    "limit_violation",
    "load_urdf",
    "make_solver",
    "parse_urdf",
    "project_configuration",
    "solve_sequence",
    "solve_track",
    "sub_chain",
    "track_chain",
]
