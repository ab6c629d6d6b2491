# SPDX-License-Identifier: GPL-3.0-or-later
"""Articulate's inverse-kinematics core: pure numpy, no Blender imports."""

from .errors import (
    ArticulateError,
    InvalidInputError,
    LimitError,
    SkeletonError,
    UnknownNameError,
    URDFError,
)
from .kinematics import effector_poses, forward_kinematics, jacobian
from .skeleton import Effector, Joint, JointKind, Mimic, Skeleton

__all__ = [
    "ArticulateError",
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
    "effector_poses",
    "forward_kinematics",
    "jacobian",
]
