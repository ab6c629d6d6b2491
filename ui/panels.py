# SPDX-License-Identifier: GPL-3.0-or-later
"""The "Articulate" tab of the 3D view's sidebar."""

import bpy


class ARTICULATE_PT_main(bpy.types.Panel):
    """Bake a chain of the active armature toward a target"""

    bl_label = "Articulate"
    bl_idname = "ARTICULATE_PT_main"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Articulate"

    def draw(self, context: bpy.types.Context) -> None:
        layout = self.layout
        settings = context.scene.articulate
        obj = context.object
        col = layout.column()
        if obj is not None and obj.type == "ARMATURE":
            col.prop_search(settings, "tip_bone", obj.pose, "bones")
        else:
            col.label(text="Select an armature", icon="INFO")
        col.prop(settings, "chain_length")
        col.prop(settings, "target")
        col.prop(settings, "solver")
        col.prop(settings, "tolerance")
        row = col.row(align=True)
        row.prop(context.scene, "frame_start")
        row.prop(context.scene, "frame_end")
        op = col.operator("articulate.bake_chain", icon="REC")
        op.tip_bone = settings.tip_bone
        op.chain_length = settings.chain_length
        op.target = settings.target.name if settings.target else ""
        op.solver = settings.solver
        op.tolerance = settings.tolerance
        op.frame_start = context.scene.frame_start
        op.frame_end = context.scene.frame_end
        if settings.last_summary:
            col.label(text=settings.last_summary, icon="CHECKMARK")


classes = (ARTICULATE_PT_main,)
