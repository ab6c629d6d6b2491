# SPDX-License-Identifier: GPL-3.0-or-later
"""Articulate: joint-limit-aware inverse kinematics baked onto Blender armatures."""

from . import operators, ui
from .ik_core import limit_blas_threads

# The solvers' matrix products are tiny: BLAS threads only cost wake-ups, and make solve times
# depend on whatever else loads the machine. The count numpy had is put back on unregister.
_blas_threads_before = -1


def register() -> None:
    """Keep BLAS on one thread, register operators, then the UI that refers to them."""
    global _blas_threads_before
    _blas_threads_before = limit_blas_threads(1)
    operators.register()
    ui.register()


def unregister() -> None:
    """Unregister in the reverse order of :func:`register`, then give BLAS its threads back."""
    ui.unregister()
    operators.unregister()
    if _blas_threads_before > 1:
        limit_blas_threads(_blas_threads_before)
