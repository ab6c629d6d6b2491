# SPDX-License-Identifier: GPL-3.0-or-later
"""Articulate: joint-limit-aware inverse kinematics baked onto Blender armatures."""

from . import operators, ui


def register() -> None:
    """Register operators first, then the UI that refers to them."""
    operators.register()
    ui.register()


def unregister() -> None:
    """Unregister in the reverse order of :func:`register`."""
    ui.unregister()
    operators.unregister()
