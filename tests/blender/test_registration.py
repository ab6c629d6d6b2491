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
    assert hasattr(bpy.types, "ARTICULATE_OT_bake_chain")
    assert hasattr(bpy.types, "ARTICULATE_PT_main")
    assert isinstance(bpy.context.scene.articulate, bpy.types.PropertyGroup)


@pytest.mark.parametrize("with_armature", [False, True])
def test_panel_draw_names_only_real_things(empty_scene, addon_module, with_armature):
    """Drawing the panel with or without an armature selected touches only existing names."""
    if with_armature:
        addon_module("operators.demo").build_demo_scene(frames=5)
    log = []
    panel = bpy.types.ARTICULATE_PT_main
    fake_self = type("P", (), {"layout": RecordingLayout(log)})()
    panel.draw(fake_self, bpy.context)
    assert ("operator", "articulate.bake_chain") in log
    assert ("prop_search", "tip_bone") in log or not with_armature
