# SPDX-License-Identifier: GPL-3.0-or-later
"""The chain panel's list of alternative poses: find them, pick one, key it."""

import bpy

from .panels import ARTICULATE_PT_chain


class ARTICULATE_UL_alternatives(bpy.types.UIList):
    """Alternative poses, best first: how far each turns a joint, and its margin from the limits."""

    bl_idname = "ARTICULATE_UL_alternatives"

    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index=0):
        row = layout.row(align=True)
        row.label(text=item.name, icon="POSE_HLT")
        row.prop(item, "distance", text="Away", emboss=False)
        row.prop(item, "margin", text="Margin", emboss=False)


class ARTICULATE_PT_alternatives(bpy.types.Panel):
    """Distinct poses of the active chain reaching its target on this frame"""

    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Articulate"
    bl_label = "Alternative Poses"
    bl_idname = "ARTICULATE_PT_alternatives"
    bl_parent_id = ARTICULATE_PT_chain.bl_idname
    bl_options = {"DEFAULT_CLOSED"}

    @classmethod
    def poll(cls, context):
        return ARTICULATE_PT_chain.poll(context)

    def draw(self, context):
        layout = self.layout
        data = context.object.articulate
        layout.operator("articulate.chain_alternatives", icon="VIEWZOOM")
        if len(data.alternatives):
            first = data.alternatives[0]
            layout.label(text=f"Chain {first.chain!r}, frame {first.frame}")
            layout.template_list("ARTICULATE_UL_alternatives", "", data, "alternatives", data,
                                 "active_alternative", rows=3)
            layout.operator("articulate.chain_use_alternative", icon="KEYFRAME_HLT")


classes = (ARTICULATE_UL_alternatives, ARTICULATE_PT_alternatives)
