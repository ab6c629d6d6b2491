# SPDX-License-Identifier: GPL-3.0-or-later
"""Importers and exporters where users look: File > Import, File > Export, robot files dropped on the viewport."""

import bpy

# (operator, menu text, icon); the robot operators grey out, with their poll message, until a robot is active.
IMPORTERS = (
    ("articulate.robot_import_urdf", "Robot URDF (.urdf, .xacro)", "IMPORT"),
    ("articulate.trajectory_import", "Robot Joint Trajectory (.csv, .json, .mcap)", "IMPORT"),
    ("articulate.cartesian_import", "Robot Cartesian Poses (.csv)", "IMPORT"),
    ("articulate.trackers_import", "Body Trackers (.csv)", "IMPORT"),
)
EXPORTERS = (("articulate.trajectory_export", "Robot Joint Trajectory (.csv, .json, .mcap)", "EXPORT"),)


def _draw(layout, entries) -> None:
    layout.separator()
    for idname, text, icon in entries:
        layout.operator(idname, text=text, icon=icon)


def draw_import(self, context: bpy.types.Context) -> None:
    """File > Import entries."""
    _draw(self.layout, IMPORTERS)


def draw_export(self, context: bpy.types.Context) -> None:
    """File > Export entries."""
    _draw(self.layout, EXPORTERS)


class ARTICULATE_FH_urdf(bpy.types.FileHandler):
    """A .urdf or .xacro dropped on the 3D viewport builds its robot (a dialog shows the import options first).

    File handlers came with Blender 4.1; every Blender the add-on supports (4.2+) has them.
    """

    bl_idname = "ARTICULATE_FH_urdf"
    bl_label = "Robot URDF"
    bl_import_operator = "articulate.robot_import_urdf"
    bl_file_extensions = ".urdf;.xacro"

    @classmethod
    def poll_drop(cls, context: bpy.types.Context) -> bool:
        area = context.area
        return area is not None and area.type == "VIEW_3D"


classes = (ARTICULATE_FH_urdf,)

MENUS = (("TOPBAR_MT_file_import", draw_import), ("TOPBAR_MT_file_export", draw_export))


def register() -> None:
    """Add the entries to File > Import and File > Export."""
    for menu, draw in MENUS:
        getattr(bpy.types, menu).append(draw)


def unregister() -> None:
    """Take the entries out of the menus again."""
    for menu, draw in reversed(MENUS):
        getattr(bpy.types, menu).remove(draw)
