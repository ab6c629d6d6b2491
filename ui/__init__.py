# SPDX-License-Identifier: GPL-3.0-or-later
"""Sidebar panels and the settings they show."""

import bpy

from . import panels, properties

classes = (*properties.classes, *panels.classes)

_register, _unregister = bpy.utils.register_classes_factory(classes)


def register() -> None:
    """Register property groups, attach them to the scene, then register panels."""
    _register()
    bpy.types.Scene.articulate = bpy.props.PointerProperty(type=properties.ARTICULATE_PG_settings)


def unregister() -> None:
    """Remove the scene property, then unregister in reverse order."""
    del bpy.types.Scene.articulate
    _unregister()
