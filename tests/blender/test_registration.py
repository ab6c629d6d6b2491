# SPDX-License-Identifier: GPL-3.0-or-later
"""Registration is complete, and the panel's draw() only names real properties and operators."""

import bpy
import pytest


class RecordingLayout:
    """Stands in for UILayout: checks every prop and operator named by draw()."""

    def __init__(self, log):
        self.log = log

    def __getattr__(self, name):
        if name in {"row", "column", "box", "split", "column_flow", "grid_flow"}:
            return lambda *a, **k: RecordingLayout(self.log)
        return lambda *a, **k: None

    def prop(self, data, prop, **kwargs):
        assert prop in data.bl_rna.properties, f"draw() uses unknown property {prop!r} of {data}"
        self.log.append(("prop", prop))

    def prop_search(self, data, prop, search_data, search_prop, **kwargs):
        assert prop in data.bl_rna.properties, prop
        assert search_prop in search_data.bl_rna.properties, search_prop
        self.log.append(("prop_search", prop))

    def operator_menu_enum(self, idname, prop, **kwargs):
        category, name = idname.split(".")
        rna = getattr(getattr(bpy.ops, category), name).get_rna_type()
        assert prop in rna.properties, f"operator {idname} has no property {prop!r}"
        self.log.append(("operator", idname))

    def operator(self, idname, **kwargs):
        category, name = idname.split(".")
        op = getattr(getattr(bpy.ops, category), name)
        rna = op.get_rna_type()
        log = self.log
        log.append(("operator", idname))

        class Props:
            def __setattr__(self, key, value):
                assert key in rna.properties, f"operator {idname} has no property {key!r}"
                log.append(("set", key))

        return Props()


def test_classes_and_properties_registered(addon):
    """The operator, the panel and the scene settings exist while the add-on is enabled."""
    for name in ("ARTICULATE_OT_bake", "ARTICULATE_OT_solve_frame", "ARTICULATE_OT_clear_bake",
                 "ARTICULATE_OT_chain_add", "ARTICULATE_OT_chain_remove", "ARTICULATE_OT_chains_from_constraints",
                 "ARTICULATE_OT_limits_to_ik", "ARTICULATE_PT_main", "ARTICULATE_PT_chain", "ARTICULATE_PT_limits",
                 "ARTICULATE_PT_bake", "ARTICULATE_UL_chains"):
        assert hasattr(bpy.types, name), name
    assert isinstance(bpy.context.scene.articulate, bpy.types.PropertyGroup)
    assert isinstance(bpy.context.object.articulate if bpy.context.object else bpy.types.Object.articulate, object)


PANELS = ("ARTICULATE_PT_main", "ARTICULATE_PT_chain", "ARTICULATE_PT_limits", "ARTICULATE_PT_bake",
          "ARTICULATE_PT_body", "ARTICULATE_PT_robot")


@pytest.mark.parametrize("with_armature", [False, True])
def test_panels_draw_only_real_names(empty_scene, addon_module, with_armature):
    """Every panel that polls true draws only existing properties and registered operators."""
    if with_armature:
        addon_module("operators.demo").build_demo_scene(frames=5)
        arm = bpy.data.objects["Arm"]
        arm.data.bones.active = arm.data.bones["Elbow"]
        arm.articulate.chains[0].pole = bpy.data.objects["Target"]
        bpy.ops.object.mode_set(mode="POSE")  # the bone limits panel shows the active pose bone
    log = []
    for name in PANELS:
        panel = getattr(bpy.types, name)
        if hasattr(panel, "poll") and not panel.poll(bpy.context):
            continue
        panel.draw(type("P", (), {"layout": RecordingLayout(log)})(), bpy.context)
    if with_armature:
        for op in ("articulate.bake", "articulate.solve_frame", "articulate.clear_bake", "articulate.chain_add",
                   "articulate.limits_to_ik", "articulate.body_bake", "articulate.body_detect_roles"):
            assert ("operator", op) in log
        assert ("prop_search", "tip_bone") in log and ("prop", "ik_min_x") in log
        bpy.ops.object.mode_set(mode="OBJECT")


def test_robot_panel_with_a_robot(empty_scene, addon):
    """With a robot rig active the Robot panel shows its trajectory operators, all registered."""
    assert bpy.ops.articulate.robot_add(preset="ur5") == {"FINISHED"}
    log = []
    bpy.types.ARTICULATE_PT_robot.draw(type("P", (), {"layout": RecordingLayout(log)})(), bpy.context)
    for op in ("articulate.robot_add", "articulate.robot_import_urdf", "articulate.trajectory_import",
               "articulate.cartesian_import", "articulate.trajectory_check", "articulate.trajectory_export"):
        assert ("operator", op) in log


def test_chain_list_draws_items(empty_scene, addon_module):
    """The chains UIList's draw_item names real chain properties."""
    addon_module("operators.demo").build_demo_scene(frames=5)
    arm = bpy.data.objects["Arm"]
    log = []
    ul = bpy.types.ARTICULATE_UL_chains
    ul.draw_item(None, bpy.context, RecordingLayout(log), arm.articulate, arm.articulate.chains[0], 0, None, "", 0)
    assert ("prop", "enabled") in log and ("prop", "name") in log


def test_registering_keeps_blas_on_one_thread(core):
    """With the add-on enabled, numpy's OpenBLAS runs one thread (where an OpenBLAS is found at all)."""
    assert core.blas_threads() in (1, -1)
