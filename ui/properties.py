# SPDX-License-Identifier: GPL-3.0-or-later
"""Scene settings of the bake panel."""

import bpy

from ..operators.bake import SOLVER_ITEMS

class ARTICULATE_PG_settings(bpy.types.PropertyGroup):
    """What the panel's Bake button bakes."""

    tip_bone: bpy.props.StringProperty(name="Tip Bone", description="Last bone of the chain")
    chain_length: bpy.props.IntProperty(name="Chain Length", default=2, min=0)
    target: bpy.props.PointerProperty(name="Target", type=bpy.types.Object)
    solver: bpy.props.EnumProperty(name="Solver", items=SOLVER_ITEMS, default="dls")
    tolerance: bpy.props.FloatProperty(name="Tolerance", default=1e-4, min=1e-9, subtype="DISTANCE")
    last_summary: bpy.props.StringProperty(name="Last Bake", default="")

classes = (ARTICULATE_PG_settings,)
