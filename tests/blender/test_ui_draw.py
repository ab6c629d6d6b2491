# SPDX-License-Identifier: GPL-3.0-or-later
"""Every panel, list and redo panel draws with calls Blender's UILayout accepts, on populated data.

The layout is :mod:`strict_layout`: each call is checked against the running Blender's RNA
definition of ``UILayout`` (4.2, 4.5 and 5.0 each against their own), so a call Blender would
refuse fails here although panels never draw headless.
"""

import bpy
import numpy as np
import pytest
from strict_layout import StrictLayout, draw_operator, draw_panel, drawn_operators, drawn_props


def _arm_rig(addon_module, name="Rig"):
    """A three-bone arm upper_arm.L > forearm.L > hand.L and a target empty, the armature active."""
    bridge = addon_module("operators.bridge")
    heads = np.array([[0.0, 0.0, 1.5], [0.3, 0.0, 1.5], [0.6, 0.0, 1.5]])
    tails = np.array([[0.3, 0.0, 1.5], [0.6, 0.0, 1.5], [0.7, 0.0, 1.5]])
    arm = bridge.create_armature(name, heads, tails, [-1, 0, 1], ["upper_arm.L", "forearm.L", "hand.L"])
    target = bpy.data.objects.new(f"{name} target", None)
    bpy.context.scene.collection.objects.link(target)
    target.location = (0.6, 0.2, 1.4)
    bpy.context.view_layer.objects.active = arm
    return arm, target


@pytest.fixture
def populated(empty_scene, addon_module):
    """An armature with a reach chain (pole bone on another armature), an aim chain, roles and alternatives."""
    arm, target = _arm_rig(addon_module)
    poles, _ = _arm_rig(addon_module, "Poles")
    bpy.context.view_layer.objects.active = arm
    data = arm.articulate
    reach = data.chains.add()
    reach.name, reach.tip_bone, reach.chain_length, reach.target = "reach", "hand.L", 2, target
    reach.pole, reach.pole_bone, reach.use_rotation = poles, "forearm.L", True
    aim = data.chains.add()
    aim.name, aim.mode, aim.tip_bone, aim.target, aim.up_axis = "aim", "AIM", "hand.L", target, "Z"
    for role, bone in (("pelvis", "upper_arm.L"), ("hand_l", "hand.L")):
        item = data.body.roles.add()
        item.role, item.bone = role, bone
    for k in range(2):
        alt = data.alternatives.add()
        alt.name, alt.chain, alt.frame, alt.dof = f"Pose {k + 1}", "reach", 1, 6
    arm.data.bones.active = arm.data.bones["forearm.L"]
    bpy.ops.object.mode_set(mode="POSE")  # the Bone Limits panel shows the active pose bone
    yield arm
    bpy.ops.object.mode_set(mode="OBJECT")


def _panels(addon):
    ui = __import__(f"{addon.__name__}.ui", fromlist=["classes"])
    return [c for c in ui.classes if issubclass(c, bpy.types.Panel)]


def _draw_all(addon) -> tuple[list, list[str]]:
    """Draw every panel whose poll passes; returns the calls and the panels drawn."""
    log, drawn = [], []
    for panel in _panels(addon):
        if "poll" in vars(panel) and not panel.poll(bpy.context):
            continue
        log += draw_panel(panel)
        drawn.append(panel.bl_idname)
    return log, drawn


def test_the_strict_layout_refuses_what_blender_refuses(populated):
    """The checker itself: the role list as it was drawn (a collection as the active index) fails, so do typos."""
    body = populated.articulate.body
    layout = StrictLayout([])
    with pytest.raises(AssertionError, match="active_propname 'roles' is a collection"):
        layout.template_list("ARTICULATE_UL_roles", "", body, "roles", body, "roles", rows=4)
    with pytest.raises(AssertionError, match="has no property 'nope'"):
        layout.prop(body, "nope")
    with pytest.raises(AssertionError, match="has no parameter 'txt'"):
        layout.label(txt="x")
    with pytest.raises(AssertionError, match="enum items"):
        layout.label(text="x", icon="NO_SUCH_ICON")
    with pytest.raises(AssertionError, match="not registered"):
        layout.operator("articulate.no_such_operator")
    with pytest.raises(AssertionError, match="has no property 'nope'"):
        layout.operator("articulate.bake").nope = 1
    with pytest.raises(AssertionError, match="no attribute"):
        layout.activ = False
    with pytest.raises(AssertionError, match="misses the required parameter"):
        layout.prop_search(body, "head")
    layout.template_list("ARTICULATE_UL_roles", "", body, "roles", body, "active_role", rows=4)  # as drawn now


def test_every_panel_draws_on_populated_data(populated, addon):
    """Every Articulate panel polls true on a populated armature and draws; each list draws every item."""
    log, drawn = _draw_all(addon)
    expected = {c.bl_idname for c in _panels(addon)} - {"ARTICULATE_PT_robot"}
    assert expected <= set(drawn)
    items = {(e[1], e[2]) for e in log if e[0] == "draw_item"}
    assert {("ARTICULATE_UL_chains", 0), ("ARTICULATE_UL_chains", 1), ("ARTICULATE_UL_roles", 1),
            ("ARTICULATE_UL_alternatives", 1)} <= items
    props = drawn_props(log)
    for name in ("tip_bone", "pole_angle", "weight_rotation", "frame_range", "reference_frame", "ik_min_x"):
        assert name in props or ("prop_search", name) in [(e[0], e[1].get("property")) for e in log if
                                                          len(e) == 2 and isinstance(e[1], dict)], name


def test_aim_chain_and_each_frame_range_draw(populated, addon):
    """The chain panel in aim mode, and the Bake panel with each frame-range source, draw cleanly."""
    data = populated.articulate
    data.active_chain = 1
    chain_log = draw_panel(bpy.types.ARTICULATE_PT_chain)
    assert {"aim_axis", "up_axis", "up_target", "aim_spread"} <= set(drawn_props(chain_log))
    settings = bpy.context.scene.articulate
    for source in ("SCENE", "PREVIEW", "CUSTOM"):
        settings.frame_range = source
        props = drawn_props(draw_panel(bpy.types.ARTICULATE_PT_bake))
        assert ("frame_start" in props) == (source == "CUSTOM")


def test_panels_draw_without_an_armature(empty_scene, addon):
    """With nothing selected the panels that poll true draw a hint, and the Robot panel its add buttons."""
    log, drawn = _draw_all(addon)
    assert "ARTICULATE_PT_main" in drawn and "ARTICULATE_PT_chain" not in drawn
    assert "articulate.robot_add" in drawn_operators(log)


def test_robot_panel_draws_chains_and_branches(empty_scene, addon):
    """A robot rig with IK branches listed: the Robot panel draws its chain list and branch list."""
    assert bpy.ops.articulate.robot_add(preset="ur5") == {"FINISHED"}
    data = bpy.context.object.articulate
    for k in range(2):
        data.branches.add().name = f"Branch {k + 1}"
    log = draw_panel(bpy.types.ARTICULATE_PT_robot)
    lists = [e[1]["listtype_name"] for e in log if e[0] == "template_list"]
    assert lists == ["ARTICULATE_UL_robot_chains", "UI_UL_list"]
    assert ("ARTICULATE_UL_robot_chains", 0) in {(e[1], e[2]) for e in log if e[0] == "draw_item"}
    assert "articulate.robot_use_branch" in drawn_operators(log)


@pytest.mark.parametrize("idname", ["articulate.bake", "articulate.body_bake", "articulate.ik_to_fk",
                                    "articulate.fk_to_ik", "articulate.clear_bake"])
def test_redo_panels_show_only_what_applies(populated, idname):
    """Start and End show only when the panel's range is not used; internal fields never show."""
    category, name = idname.split(".")
    cls = getattr(bpy.types, f"{category.upper()}_OT_{name}")
    with_panel = drawn_props(draw_operator(cls, use_scene_settings=True))
    own = drawn_props(draw_operator(cls, use_scene_settings=False))
    assert "frame_start" not in with_panel and {"frame_start", "frame_end"} <= set(own)
    for hidden in ("report_path", "armature", "solver", "use_scene_range"):
        assert hidden not in with_panel + own
    rna = getattr(getattr(bpy.ops, category), name).get_rna_type()
    for hidden in ("report_path", "armature", "solver"):
        if hidden in rna.properties:  # set by scripts: not shown, not remembered for the next run
            assert rna.properties[hidden].is_hidden and rna.properties[hidden].is_skip_save, hidden
    if idname == "articulate.bake":
        assert "key_tolerance" not in with_panel and "key_tolerance" in own  # options come from the panel too


def test_chain_panel_offers_blenders_tip(populated):
    """A chain ending at a hand says which bone Blender's IK would end at, and offers it; after it, nothing."""
    log = draw_panel(bpy.types.ARTICULATE_PT_chain)
    labels = [e[1].get("text", "") for e in log if e[0] == "label"]
    assert any("'forearm.L'" in t and "'hand.L'" in t for t in labels), labels
    assert "articulate.chain_use_blender_tip" in drawn_operators(log)
    assert bpy.ops.articulate.chain_use_blender_tip() == {"FINISHED"}
    chain = populated.articulate.chains[0]
    assert chain.tip_bone == "forearm.L" and chain.chain_length == 2
    assert "articulate.chain_use_blender_tip" not in drawn_operators(draw_panel(bpy.types.ARTICULATE_PT_chain))
