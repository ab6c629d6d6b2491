# SPDX-License-Identifier: GPL-3.0-or-later
"""The "Articulate" tab of the 3D view's sidebar: chains, limits of the active bone, bake."""

import bpy

from ..operators.bridge.stored import robot_damage
from ..operators.chains import tip_advice
from ..operators.frames import draw_panel_range, panel_range


def _armature(context):
    obj = context.object
    return obj if obj is not None and obj.type == "ARMATURE" else None


class ARTICULATE_UL_chains(bpy.types.UIList):
    """The armature's chains, one row each."""

    bl_idname = "ARTICULATE_UL_chains"

    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index=0):
        row = layout.row(align=True)
        row.prop(item, "enabled", text="")
        row.prop(item, "name", text="", emboss=False, icon="CON_KINEMATIC")
        row.label(text="AIM" if item.mode == "AIM" else item.solver.replace("_", "-").upper())


class ARTICULATE_UL_robot_chains(bpy.types.UIList):
    """A robot rig's chains: name, tool link and target."""

    bl_idname = "ARTICULATE_UL_robot_chains"

    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index=0):
        row = layout.row(align=True)
        row.prop(item, "enabled", text="")
        row.label(text=item.name, icon="CON_KINEMATIC")
        row.label(text=item.tool_link or item.tip_bone, icon="EMPTY_ARROWS")
        row.label(text=item.target.name if item.target is not None else "no target")


class _Panel:
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Articulate"


class ARTICULATE_PT_main(_Panel, bpy.types.Panel):
    """IK chains of the active armature"""

    bl_label = "Articulate"
    bl_idname = "ARTICULATE_PT_main"

    def draw(self, context):
        layout = self.layout
        arm = _armature(context)
        if arm is None:
            layout.label(text="Select an armature", icon="INFO")
            return
        data = arm.articulate
        row = layout.row()
        row.template_list("ARTICULATE_UL_chains", "", data, "chains", data, "active_chain", rows=3)
        col = row.column(align=True)
        col.operator("articulate.chain_add", icon="ADD", text="")
        col.operator("articulate.chain_remove", icon="REMOVE", text="")
        layout.operator("articulate.chains_from_constraints", icon="CONSTRAINT_BONE")
        layout.operator("articulate.aim_chains_from_tracks", icon="CON_TRACKTO")
        layout.prop(data, "live", toggle=True, icon="PLAY")


class ARTICULATE_PT_chain(_Panel, bpy.types.Panel):
    """Settings of the active chain"""

    bl_label = "Chain"
    bl_idname = "ARTICULATE_PT_chain"
    bl_parent_id = "ARTICULATE_PT_main"

    @classmethod
    def poll(cls, context):
        arm = _armature(context)
        return arm is not None and 0 <= arm.articulate.active_chain < len(arm.articulate.chains)

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        arm = _armature(context)
        chain = arm.articulate.chains[arm.articulate.active_chain]
        col = layout.column()
        col.prop_search(chain, "tip_bone", arm.pose, "bones")
        advice = tip_advice(arm, chain)
        if advice:
            box = col.box()
            box.label(text=advice, icon="INFO")
            box.operator("articulate.chain_use_blender_tip", icon="BONE_DATA")
        col.prop_search(chain, "root_bone", arm.pose, "bones")
        sub = col.column()
        sub.active = not chain.root_bone
        sub.prop(chain, "chain_length")
        col.prop(chain, "use_tail")
        col.separator()
        col.prop(chain, "target")
        if chain.target is not None and chain.target.type == "ARMATURE":
            col.prop_search(chain, "target_bone", chain.target.pose, "bones")
        col.prop(chain, "mode")
        if chain.mode == "AIM":
            col.prop(chain, "aim_axis")
            col.prop(chain, "up_axis")
            sub = col.column()
            sub.active = chain.up_axis != "NONE"
            sub.prop(chain, "up_target")
            col.prop(chain, "aim_spread")
            col.prop(chain, "aim_tolerance")
            col.prop(chain, "iterations")
            col.prop(chain, "influence")
            return
        col.prop(chain, "pole")
        if chain.pole is not None:
            if chain.pole.type == "ARMATURE":
                col.prop_search(chain, "pole_bone", chain.pole.pose, "bones")
            col.prop(chain, "pole_angle")
        col.separator()
        col.prop(chain, "solver")
        col.prop(chain, "iterations")
        col.prop(chain, "tolerance")
        col.prop(chain, "weight_position")
        col.prop(chain, "use_rotation")
        sub = col.column()
        sub.active = chain.use_rotation
        sub.prop(chain, "weight_rotation")
        col.prop(chain, "influence")
        col.prop(chain, "use_stretch")


class ARTICULATE_UL_contacts(bpy.types.UIList):
    """A chain's contact intervals: first and last frame, editable."""

    bl_idname = "ARTICULATE_UL_contacts"

    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index=0):
        row = layout.row(align=True)
        row.label(text="", icon="SNAP_FACE")
        row.prop(item, "frame_start", text="")
        row.prop(item, "frame_end", text="")


class ARTICULATE_PT_contacts(_Panel, bpy.types.Panel):
    """Contacts of the active chain's effector with the ground: planted in bakes"""

    bl_label = "Contacts"
    bl_idname = "ARTICULATE_PT_contacts"
    bl_parent_id = "ARTICULATE_PT_chain"
    bl_options = {"DEFAULT_CLOSED"}

    @classmethod
    def poll(cls, context):
        arm = _armature(context)
        data = arm.articulate if arm is not None else None
        return data is not None and 0 <= data.active_chain < len(data.chains) and \
            data.chains[data.active_chain].mode == "REACH" and "articulate_robot" not in arm

    def draw_header(self, context):
        arm = _armature(context)
        self.layout.prop(arm.articulate.chains[arm.articulate.active_chain], "use_contacts", text="")

    def draw(self, context):
        layout = self.layout
        arm = _armature(context)
        chain = arm.articulate.chains[arm.articulate.active_chain]
        layout.active = chain.use_contacts
        col = layout.column()
        col.use_property_split = True
        col.prop(chain, "ground")
        if chain.ground == "COLLECTION":
            col.prop(chain, "ground_collection")
        else:
            col.prop(chain, "ground_height")
        col.prop(chain, "rest_height_auto")
        sub = col.column()
        sub.active = not chain.rest_height_auto
        sub.prop(chain, "rest_height")
        col.prop(chain, "contact_height")
        col.prop(chain, "contact_speed")
        col.prop(chain, "contact_min_duration")
        col.prop(chain, "contact_blend")
        col.prop(chain, "hips")
        if chain.hips is not None and chain.hips.type == "ARMATURE":
            col.prop_search(chain, "hips_bone", chain.hips.pose, "bones")
        col.prop(chain, "use_foot")
        sub = col.column()
        sub.active = chain.use_foot
        sub.prop_search(chain, "foot_bone", arm.pose, "bones")
        layout.operator("articulate.contacts_detect", icon="SNAP_FACE")
        row = layout.row()
        row.template_list("ARTICULATE_UL_contacts", "", chain, "contacts", chain, "active_contact", rows=3)
        col = row.column(align=True)
        col.operator("articulate.contact_add", icon="ADD", text="")
        col.operator("articulate.contact_remove", icon="REMOVE", text="")


class ARTICULATE_PT_limits(_Panel, bpy.types.Panel):
    """Blender's IK limits of the active bone, which Articulate respects"""

    bl_label = "Bone Limits"
    bl_idname = "ARTICULATE_PT_limits"
    bl_parent_id = "ARTICULATE_PT_main"
    bl_options = {"DEFAULT_CLOSED"}

    @classmethod
    def poll(cls, context):
        return _armature(context) is not None and context.active_pose_bone is not None

    def draw(self, context):
        layout = self.layout
        pb = context.active_pose_bone
        layout.label(text=pb.name, icon="BONE_DATA")
        for axis in ("x", "y", "z"):
            row = layout.row(align=True)
            row.prop(pb, f"lock_ik_{axis}", text=axis.upper())
            row.prop(pb, f"use_ik_limit_{axis}", text="Limit")
            sub = row.row(align=True)
            sub.active = getattr(pb, f"use_ik_limit_{axis}")
            sub.prop(pb, f"ik_min_{axis}", text="")
            sub.prop(pb, f"ik_max_{axis}", text="")
            row.prop(pb, f"ik_stiffness_{axis}", text="Stiff")
        layout.operator("articulate.limits_to_ik", icon="CON_ROTLIMIT")


class ARTICULATE_PT_bake(_Panel, bpy.types.Panel):
    """Bake range, options and the last bake's outcome"""

    bl_label = "Bake"
    bl_idname = "ARTICULATE_PT_bake"
    bl_parent_id = "ARTICULATE_PT_main"

    @classmethod
    def poll(cls, context):
        return _armature(context) is not None

    def draw(self, context):
        layout = self.layout
        settings = context.scene.articulate
        draw_panel_range(layout, context.scene)
        layout.prop(settings, "only_selected")
        layout.prop(settings, "mute_constraints")
        layout.prop(settings, "mark_missed")
        layout.prop(settings, "key_tolerance")
        layout.prop(settings, "report_path")
        row = layout.row(align=True)
        row.operator("articulate.solve_frame", icon="POSE_HLT")
        row.operator("articulate.bake", icon="REC")
        layout.operator("articulate.clear_bake", icon="TRASH")
        if settings.last_summary:
            layout.label(text=settings.last_summary, icon="INFO")


class ARTICULATE_PT_ik_fk(_Panel, bpy.types.Panel):
    """IK to FK and back over the bake range: Rigify's limbs, or the armature's IK constraints"""

    bl_label = "IK / FK"
    bl_idname = "ARTICULATE_PT_ik_fk"
    bl_parent_id = "ARTICULATE_PT_main"
    bl_options = {"DEFAULT_CLOSED"}

    @classmethod
    def poll(cls, context):
        return _armature(context) is not None

    def draw(self, context):
        start, end, label = panel_range(context.scene)
        self.layout.label(text=f"Frames {start}-{end} ({label}, set in Bake)", icon="TIME")
        row = self.layout.row(align=True)
        row.operator("articulate.ik_to_fk", icon="FORWARD")
        row.operator("articulate.fk_to_ik", icon="BACK")


class ARTICULATE_PT_robot(_Panel, bpy.types.Panel):
    """Robot arms: add one, import trajectories, check and export them"""

    bl_label = "Robot"
    bl_idname = "ARTICULATE_PT_robot"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = self.layout
        row = layout.row(align=True)
        row.operator_menu_enum("articulate.robot_add", "preset", text="Add Robot", icon="ADD")
        row.operator("articulate.robot_import_urdf", icon="IMPORT")
        obj = context.object
        if obj is None or "articulate_robot" not in obj:
            layout.label(text="Select a robot rig for trajectories", icon="INFO")
            return
        damage = robot_damage(obj)
        if damage:
            box = layout.box()
            box.label(text="This robot's stored data is damaged:", icon="ERROR")
            box.label(text=damage)
            box.operator("articulate.robot_repair", icon="TOOL_SETTINGS")
        data = obj.articulate
        layout.label(text="Chains (one target per tool link):")
        row = layout.row()
        row.template_list("ARTICULATE_UL_robot_chains", "", data, "chains", data, "active_chain", rows=2)
        col = row.column(align=True)
        col.operator_menu_enum("articulate.robot_chain_add", "tool_link", text="", icon="ADD")
        col.operator("articulate.chain_remove", icon="REMOVE", text="")
        col = layout.column(align=True)
        col.operator("articulate.trajectory_import", icon="IMPORT")
        col.operator("articulate.cartesian_import", icon="ORIENTATION_GLOBAL")
        col.operator("articulate.trajectory_check", icon="CHECKMARK")
        col.operator("articulate.trajectory_export", icon="EXPORT")
        layout.operator("articulate.robot_branches", icon="OUTLINER_DATA_ARMATURE")
        if len(data.branches):
            layout.template_list("UI_UL_list", "articulate_branches", data, "branches", data, "active_branch", rows=3)
            layout.operator("articulate.robot_use_branch", icon="CHECKMARK")


class ARTICULATE_UL_roles(bpy.types.UIList):
    """Body roles and the bones that play them."""

    bl_idname = "ARTICULATE_UL_roles"

    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index=0):
        row = layout.row(align=True)
        row.label(text=item.role)
        row.prop_search(item, "bone", context.object.data, "bones", text="")


class ARTICULATE_PT_body(_Panel, bpy.types.Panel):
    """Full body from head and hand trackers"""

    bl_label = "Full Body"
    bl_idname = "ARTICULATE_PT_body"
    bl_parent_id = "ARTICULATE_PT_main"
    bl_options = {"DEFAULT_CLOSED"}

    @classmethod
    def poll(cls, context):
        return _armature(context) is not None

    def draw(self, context):
        layout = self.layout
        body = _armature(context).articulate.body
        col = layout.column(align=True)
        for name in ("head", "hand_l", "hand_r", "pelvis", "foot_l", "foot_r"):
            col.prop(body, name)
        layout.prop(body, "reference_frame")
        layout.prop(body, "floor")
        layout.prop(body, "offset_warning")
        layout.operator("articulate.body_align", icon="CON_TRANSLIKE")
        layout.operator("articulate.body_detect_roles", icon="ARMATURE_DATA")
        layout.template_list("ARTICULATE_UL_roles", "", body, "roles", body, "active_role", rows=4)
        row = layout.row(align=True)
        row.operator("articulate.trackers_import", icon="IMPORT")
        row.operator("articulate.body_bake", icon="REC")
        start, end, label = panel_range(context.scene)
        layout.label(text=f"Frames {start}-{end} ({label}, set in Bake)", icon="TIME")
        if body.last_summary:
            layout.label(text=body.last_summary, icon="INFO")


class ARTICULATE_PT_body_steps(_Panel, bpy.types.Panel):
    """Known step timing of the full body's planned feet: the frames each foot rests on the ground"""

    bl_label = "Known Steps"
    bl_idname = "ARTICULATE_PT_body_steps"
    bl_parent_id = "ARTICULATE_PT_body"
    bl_options = {"DEFAULT_CLOSED"}

    @classmethod
    def poll(cls, context):
        return _armature(context) is not None

    def draw_header(self, context):
        self.layout.prop(_armature(context).articulate.body, "use_steps", text="")

    def draw(self, context):
        body = _armature(context).articulate.body
        self.layout.operator("articulate.body_steps_detect", icon="VIEWZOOM")
        layout = self.layout.column()
        layout.active = body.use_steps
        for foot, label in (("l", "Left Foot"), ("r", "Right Foot")):
            layout.label(text=label)
            row = layout.row()
            row.template_list("ARTICULATE_UL_contacts", f"body_{foot}", body, f"contacts_{foot}",
                              body, f"active_contact_{foot}", rows=2)
            col = row.column(align=True)
            col.operator("articulate.body_contact_add", icon="ADD", text="").foot = foot
            col.operator("articulate.body_contact_remove", icon="REMOVE", text="").foot = foot


classes = (
    ARTICULATE_UL_chains,
    ARTICULATE_UL_robot_chains,
    ARTICULATE_UL_roles,
    ARTICULATE_UL_contacts,
    ARTICULATE_PT_main,
    ARTICULATE_PT_chain,
    ARTICULATE_PT_contacts,
    ARTICULATE_PT_limits,
    ARTICULATE_PT_bake,
    ARTICULATE_PT_ik_fk,
    ARTICULATE_PT_body,
    ARTICULATE_PT_body_steps,
    ARTICULATE_PT_robot,
)
