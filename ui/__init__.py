# SPDX-License-Identifier: GPL-3.0-or-later
"""Sidebar panels and the settings they show."""

import bpy

from . import alternatives, panels, properties

classes = (*properties.classes, *panels.classes, *alternatives.classes)

_register, _unregister = bpy.utils.register_classes_factory(classes)


def register() -> None:
    """Register property groups, attach them to objects and scenes, then register panels."""
    _register()
    bpy.types.Object.articulate = bpy.props.PointerProperty(type=properties.ARTICULATE_PG_armature)
    bpy.types.Scene.articulate = bpy.props.PointerProperty(type=properties.ARTICULATE_PG_settings)


def unregister() -> None:
    """Remove the added properties, then unregister in reverse order."""
    del bpy.types.Scene.articulate
    del bpy.types.Object.articulate
    _unregister()
