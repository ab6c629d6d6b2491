# SPDX-License-Identifier: GPL-3.0-or-later
"""Operators: read Blender state into numpy, call the core once, write the result back."""

import bpy

from . import bake

classes = (*bake.classes,)

_register, _unregister = bpy.utils.register_classes_factory(classes)


def register() -> None:
    """Register every operator class."""
    _register()


def unregister() -> None:
    """Unregister every operator class, in reverse order."""
    _unregister()
