# SPDX-License-Identifier: GPL-3.0-or-later
"""The UI explains itself: descriptions everywhere, polls that say why, messages a person reads."""

import json

import bpy
import numpy as np
import pytest

# Operators left out of the description and poll-message checks (none today: every operator explains itself).
OWNED_ELSEWHERE: set[str] = set()


def _classes(addon):
    ops = __import__(f"{addon.__name__}.operators", fromlist=["classes"])
    ui = __import__(f"{addon.__name__}.ui", fromlist=["classes"])
    return [*ops.classes, *ui.classes]


def _rna(cls):
    if issubclass(cls, bpy.types.Operator):
        category, name = cls.bl_idname.split(".")
        return getattr(getattr(bpy.ops, category), name).get_rna_type()
    return cls.bl_rna


def _own_properties(cls):
    """The properties the class itself declares (not Panel's, UIList's or PropertyGroup's built-ins)."""
    declared = set()
    for k in cls.__mro__:
        declared |= set(vars(k).get("__annotations__", {}))
    return [p for p in _rna(cls).properties if p.identifier in declared]


def test_every_property_and_enum_item_is_described(addon):
    """Every Articulate class: each property and enum item has a description, each operator a docstring."""
    missing = []
    for cls in _classes(addon):
        if cls.__name__ in OWNED_ELSEWHERE:
            continue
        if issubclass(cls, bpy.types.Operator) and not (cls.__doc__ or "").strip():
            missing.append(f"{cls.__name__} (no docstring)")
        for prop in _own_properties(cls):
            if not prop.description.strip():
                missing.append(f"{cls.__name__}.{prop.identifier}")
            if prop.type == "ENUM":
                missing += [f"{cls.__name__}.{prop.identifier}[{item.identifier}]"
                            for item in prop.enum_items if not item.description.strip()]
    assert not missing, "no description: " + ", ".join(missing)


def test_robot_presets_and_solvers_say_what_they_are(addon):
    """The dynamic preset list describes each robot; each solver says whether it honours poles."""
    robots = __import__(f"{addon.__name__}.operators.robots", fromlist=["robots"])
    listed = robots.preset_items(None, bpy.context)
    assert len(listed) >= 6 and all("joints" in description for _id, _label, description in listed)
    properties = __import__(f"{addon.__name__}.ui.properties", fromlist=["properties"])
    solver = properties.ARTICULATE_PG_chain.bl_rna.properties["solver"]
    for item in solver.enum_items:
        if item.identifier != "auto":
            assert ("honours poles" in item.description) != ("ignores poles" in item.description), item.identifier


def _has_poll(cls) -> bool:
    return any("poll" in vars(k) for k in cls.__mro__ if k not in (bpy.types.Operator, object))


def _call(cls):
    category, name = cls.bl_idname.split(".")
    return getattr(getattr(bpy.ops, category), name)()


@pytest.mark.parametrize("state", ["nothing active", "a mesh active", "a bare armature"])
def test_operators_that_cannot_run_say_why(empty_scene, addon, state):
    """Calling an operator whose poll fails raises an error with our message, never "context is incorrect"."""
    if state == "a mesh active":
        mesh = bpy.data.objects.new("Box", bpy.data.meshes.new("Box"))
        bpy.context.scene.collection.objects.link(mesh)
        bpy.context.view_layer.objects.active = mesh
    elif state == "a bare armature":
        arm = bpy.data.objects.new("Rig", bpy.data.armatures.new("Rig"))
        bpy.context.scene.collection.objects.link(arm)
        bpy.context.view_layer.objects.active = arm
    checked = 0
    for cls in _classes(addon):
        if not issubclass(cls, bpy.types.Operator) or not _has_poll(cls) or cls.__name__ in OWNED_ELSEWHERE:
            continue
        if cls.poll(bpy.context):
            assert state == "a bare armature", f"{cls.__name__} runs with {state}"
            continue
        with pytest.raises(RuntimeError) as info:
            _call(cls)
        text = str(info.value)
        why = text.partition("poll()")[2].strip()
        assert "context is incorrect" not in text and len(why) > 20, (cls.__name__, text)
        if state == "a mesh active" and "robot" not in text:
            assert "'Box' is a mesh" in text, text
        checked += 1
    assert checked >= (4 if state == "a bare armature" else 18)


@pytest.fixture
def hand_rig(empty_scene, addon_module):
    """A three-bone arm (upper_arm.L > forearm.L > hand.L) with a chain to a target, and 157 more bones."""
    bridge = addon_module("operators.bridge")
    names = ["upper_arm.L", "forearm.L", "hand.L"] + [f"finger_{k:03d}" for k in range(157)]
    n = len(names)
    heads = np.zeros((n, 3))
    heads[:3] = [[0.0, 0.0, 1.5], [0.3, 0.0, 1.5], [0.6, 0.0, 1.5]]
    heads[3:, 0] = 0.7
    tails = heads + [0.1, 0.0, 0.0]
    tails[:2] = heads[1:3]
    arm = bridge.create_armature("Rig", heads, tails, [-1, 0, 1] + [2] * 157, names)
    target = bpy.data.objects.new("Target", None)
    bpy.context.scene.collection.objects.link(target)
    target.location = (0.5, 0.2, 1.3)
    chain = arm.articulate.chains.add()
    chain.name, chain.tip_bone, chain.chain_length, chain.target = "arm", "forearm.L", 2, target
    bpy.context.view_layer.objects.active = arm
    return arm


def test_unknown_names_suggest_the_nearest(hand_rig):
    """A misspelt bone, armature or role bone gives the nearest names, not the 160 bones."""
    chain = hand_rig.articulate.chains[0]
    chain.tip_bone = "Forarm_l"
    with pytest.raises(RuntimeError, match=r"no tip bone 'Forarm_l'; did you mean 'forearm.L'") as info:
        bpy.ops.articulate.solve_frame()
    assert "finger_100" not in str(info.value)
    chain.tip_bone = "forearm.L"
    with pytest.raises(RuntimeError, match=r"no object named 'Rgi'; valid armatures: 'Rig'; did you mean 'Rig'\?"):
        bpy.ops.articulate.bake(armature="Rgi", use_scene_settings=False, frame_start=1, frame_end=2)
    item = hand_rig.articulate.body.roles.add()
    item.role, item.bone = "hand_l", "hand_L"
    with pytest.raises(RuntimeError, match=r"hand_l: no bone 'hand_L', did you mean 'hand.L'\?"):
        bpy.ops.articulate.body_bake()


def test_bad_frames_are_named_as_the_timeline_numbers_them(hand_rig):
    """A target with zero scale on frames 12-13 of a bake from frame 10 names frames 12-13 (not samples 2-3)."""
    target = hand_rig.articulate.chains[0].target
    for frame, scale in ((10, 1.0), (11, 1.0), (12, 0.0), (13, 0.0), (14, 1.0)):
        target.scale = (scale,) * 3
        target.keyframe_insert("scale", frame=frame)
    with pytest.raises(RuntimeError, match=r"zero scale on frame\(s\) 12-13"):
        bpy.ops.articulate.bake(use_scene_settings=False, frame_start=10, frame_end=14)


def test_one_frame_range_for_every_bake(hand_rig, tmp_path):
    """Scene range by default, the preview range or a custom one: chain bakes, body bakes and IK/FK agree."""
    scene = bpy.context.scene
    settings = scene.articulate
    scene.frame_start, scene.frame_end = 3, 7
    report = tmp_path / "r.json"

    def baked() -> list[int]:
        assert bpy.ops.articulate.bake(report_path=str(report)) == {"FINISHED"}
        return json.loads(report.read_text())["frames"]

    assert settings.frame_range == "SCENE" and baked() == [3, 4, 5, 6, 7]
    settings.frame_range = "PREVIEW"
    assert baked() == [3, 4, 5, 6, 7]  # the preview range is off: the scene range
    scene.use_preview_range, scene.frame_preview_start, scene.frame_preview_end = True, 4, 6
    assert baked() == [4, 5, 6]
    settings.frame_range, settings.frame_start, settings.frame_end = "CUSTOM", 9, 8
    for op in (bpy.ops.articulate.bake, bpy.ops.articulate.body_bake, bpy.ops.articulate.ik_to_fk,
               bpy.ops.articulate.clear_bake):
        with pytest.raises(RuntimeError, match="frame range 9-8 is empty"):
            op()


def test_clear_removes_keys_markers_and_empty_curves(hand_rig, addon_module):
    """Clear over the whole baked range leaves no rotation curve and no miss marker; over part, only that part."""
    compat = addon_module("operators.compat")
    target = hand_rig.articulate.chains[0].target
    for frame, x in ((1, 0.5), (3, 0.5), (4, 5.0), (5, 5.0), (6, 0.5), (10, 0.5)):  # out of reach on frames 4-5
        target.location.x = x
        target.keyframe_insert("location", index=0, frame=frame)
    settings = bpy.context.scene.articulate
    settings.frame_range, settings.frame_start, settings.frame_end = "CUSTOM", 1, 10
    assert bpy.ops.articulate.bake() == {"FINISHED"}
    markers = bpy.context.scene.timeline_markers
    assert sorted(m.frame for m in markers) == [4, 5]
    settings.frame_start, settings.frame_end = 5, 10
    assert bpy.ops.articulate.clear_bake() == {"FINISHED"}
    assert [m.frame for m in markers] == [4]
    curves = [fc for fc in compat.iter_fcurves(hand_rig) if "rotation" in fc.data_path]
    assert curves and all([k.co[0] for k in fc.keyframe_points] == [1, 2, 3, 4] for fc in curves)
    settings.frame_start = 1
    assert bpy.ops.articulate.clear_bake() == {"FINISHED"}
    assert not len(markers)
    assert not [fc for fc in compat.iter_fcurves(hand_rig) if "rotation" in fc.data_path]


def test_messages_give_degrees_and_millimetres(addon_module):
    """Core text in radians reads in degrees; a missed chain is described in mm and degrees."""
    wording = addon_module("operators.wording")
    text = "the nearest leaves 0.01 m (tolerance 1e-4 m) and 0.5 rad (tolerance 1e-4 rad) [rad or m]"
    assert wording.angles_in_degrees(text) == ("the nearest leaves 0.01 m (tolerance 1e-4 m) and 28.6 deg "
                                               "(tolerance 0.00573 deg) [rad or m]")
    report = {"chains": [
        {"chain": "arm", "converged": [False], "position_error_m": [0.0123], "rotation_error_rad": [np.pi / 6]},
        {"chain": "head", "mode": "aim", "converged": [False], "aim_error_rad": [np.pi / 2],
         "position_error_m": [0.0], "rotation_error_rad": [0.0]},
        {"chain": "ok", "converged": [True], "position_error_m": [0.0], "rotation_error_rad": [0.0]},
    ]}
    assert wording.missed_chains(report, 0) == ["chain 'arm' ends 12.3 mm from its target, turned 30 deg from it",
                                                "chain 'head' aims 90 deg off its target"]
