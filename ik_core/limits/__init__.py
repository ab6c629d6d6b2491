# SPDX-License-Identifier: GPL-3.0-or-later
"""Joint limits: one module per kind of ball-joint limit, and the projection of a configuration onto them.

- :mod:`.ball`: what every ball-joint limit shares (the :class:`~.ball.BallLimit` front end, range clamps).
- :mod:`.euler`: per-axis Euler ranges with Blender's pose-bone IK semantics.
- :mod:`.cone_twist`: a swing cone and a twist range.
- :mod:`.swing_twist`: elliptical swing and twist ranges in a basis.
- :mod:`.projection`: box ranges clamped and ball limits projected for whole configurations; whether
  any motion is left.

Built on :mod:`ik_core.model`; the solvers build on this folder.
"""

from .ball import FEASIBLE_TOL, TWO_PI, circular_clamp, ellipse_project
from .cone_twist import ConeTwistLimit
from .euler import EulerLimit
from .projection import free_directions, fully_locked, limit_violation, project_configuration
from .swing_twist import SwingTwistLimit

__all__ = [
    "FEASIBLE_TOL",
    "TWO_PI",
    "ConeTwistLimit",
    "EulerLimit",
    "SwingTwistLimit",
    "circular_clamp",
    "ellipse_project",
    "free_directions",
    "fully_locked",
    "limit_violation",
    "project_configuration",
]
