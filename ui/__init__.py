# SPDX-License-Identifier: GPL-3.0-or-later
"""Sidebar panels and the settings they show; File menu entries and the .urdf file handler."""

import bpy

from . import alternatives, menus, panels, properties

classes = (*properties.classes, *panels.classes, *alternatives.classes, *menus.classes)

_register, _unregister = bpy.utils.register_classes_factory(classes)


def register() -> None:
    """Register property groups, attach them to objects and scenes, then panels; add the File menu entries."""
    _register()
    bpy.types.Object.articulate = bpy.props.PointerProperty(type=properties.ARTICULATE_PG_armature)
    bpy.types.Scene.articulate = bpy.props.PointerProperty(type=properties.ARTICULATE_PG_settings)
    menus.register()


def unregister() -> None:
    """Remove the menu entries and the added properties, then unregister in reverse order."""
    menus.unregister()
    del bpy.types.Scene.articulate
    del bpy.types.Object.articulate
    _unregister()
