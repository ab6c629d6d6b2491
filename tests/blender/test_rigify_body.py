# SPDX-License-Identifier: GPL-3.0-or-later
"""Full-body bake on a generated Rigify rig: roles on its FK controls, limbs switched to FK, DEF bones on trackers."""

import json

import bpy
import mathutils
import numpy as np
import pytest

FRAMES = 4
# Tracked DEF bones: what the mesh follows, driven by the FK controls through ORG-/MCH- bones.
TRACKED = {"head": "DEF-spine.006", "hand_l": "DEF-hand.L", "hand_r": "DEF-hand.R"}
# Tracker motion from the rest pose over the frames [m]: a lean of the head, hands raised and forward.
MOTION = {"head": (0.0, -0.03, -0.02), "hand_l": (-0.05, -0.15, 0.12), "hand_r": (0.04, -0.12, 0.10)}
# The solve puts the FK controls on reachable trackers to ~1e-12 m (its report); the rig then
# carries them to the DEF bones through about ten constraints and parents evaluated in float32
# at ~2 m from the origin, about 1e-6 m (0.4 um measured). 0.1 mm leaves 100x room for that and
# still fails on any wrong parent frame (a mis-handled mechanism bone moves a hand by centimetres).
TOLERANCE_M = 1e-4


# Generating in this process would leave Rigify's state behind: the bpy module of 4.5 then hangs
# at interpreter exit and 4.2 segfaults. A child process generates and saves the rig, then leaves
# through os._exit; this process only opens the file.
_GENERATE = """
import os, sys
import bpy
import addon_utils
addon_utils.enable("rigify", default_set=True)
bpy.ops.wm.read_homefile(use_empty=True)
bpy.ops.object.armature_human_metarig_add()
ok = bpy.ops.pose.rigify_generate() == {"FINISHED"} and bpy.context.object.name == "rig"
ok = ok and bpy.ops.wm.save_as_mainfile(filepath=sys.argv[1]) == {"FINISHED"}
sys.stdout.flush()
os._exit(0 if ok else 1)
"""


@pytest.fixture(scope="module")
def generated_blend(addon, blend_from_script):
    """A .blend holding Rigify's human metarig and the rig generated from it (once per module, ~15 s)."""
    return blend_from_script(_GENERATE, "generated")


@pytest.fixture
def rig(generated_blend):
    """The generated rig, active, with three empties keyed on its DEF head and hands (moving from frame 1)."""
    bpy.ops.wm.open_mainfile(filepath=str(generated_blend))
    scene = bpy.context.scene
    arm = bpy.data.objects["rig"]
    scene.frame_set(1)
    for name, bone in TRACKED.items():
        rest = arm.matrix_world @ arm.pose.bones[bone].matrix
        empty = bpy.data.objects.new(f"tracker.{name}", None)
        scene.collection.objects.link(empty)
        for f in range(1, FRAMES + 1):
            M = rest.copy()
            M.translation += mathutils.Vector(MOTION[name]) * (f - 1) / (FRAMES - 1)
            empty.matrix_world = M
            empty.keyframe_insert("location", frame=f)
            empty.keyframe_insert("rotation_euler", frame=f)
        setattr(arm.articulate.body, name, empty)
    arm.articulate.body.reference_frame = 1
    for obj in bpy.context.view_layer.objects:
        obj.select_set(obj == arm)
    bpy.context.view_layer.objects.active = arm
    return arm


def _fcurve_paths(addon_module, arm) -> dict[str, list]:
    compat = addon_module("operators.compat")
    out = {}
    for fc in compat.iter_fcurves(arm):
        frames = [round(p.co[0]) for p in fc.keyframe_points]
        out.setdefault(fc.data_path, frames)
    return out


def test_roles_map_to_the_fk_controls(rig):
    """Detect Roles maps a generated rig's roles to the FK controls an animator keys, not its DEF/ORG bones."""
    assert bpy.ops.articulate.body_detect_roles() == {"FINISHED"}
    roles = {r.role: r.bone for r in rig.articulate.body.roles}
    assert roles["pelvis"] == "torso" and roles["head"] == "head" and roles["neck"] == "neck"
    assert roles["spine_1"] == "spine_fk.002" and roles["spine_2"] == "spine_fk.003"
    assert roles["clavicle_l"] == "shoulder.L" and roles["upper_arm_l"] == "upper_arm_fk.L"
    assert roles["forearm_r"] == "forearm_fk.R" and roles["hand_r"] == "hand_fk.R"
    assert roles["thigh_l"] == "thigh_fk.L" and roles["shin_r"] == "shin_fk.R"
    assert roles["foot_l"] == "foot_fk.L" and roles["toe_r"] == "toe_fk.R"
    assert all(rig.pose.bones[b].constraints.__len__() == 0 for b in roles.values())


def test_bake_moves_the_def_bones_onto_the_trackers(rig, addon_module, tmp_path):
    """After the bake, with the rig's constraints evaluated, DEF head and hands sit on their trackers,
    keys are on the FK controls only, and the limbs are switched to FK on the baked frames only."""
    assert rig.pose.bones["upper_arm_parent.L"]["IK_FK"] == 0.0  # generated in IK mode
    report = tmp_path / "body.json"
    assert bpy.ops.articulate.body_bake(use_scene_range=False, frame_start=1, frame_end=FRAMES,
                                        report_path=str(report)) == {"FINISHED"}
    data = json.loads(report.read_text())
    assert data["basis_from"] == "evaluated parents"
    assert sorted(data["switched_to_fk"]) == ["thigh_parent.L", "thigh_parent.R",
                                              "upper_arm_parent.L", "upper_arm_parent.R"]
    assert all(all(r) for r in data["reachable"]) and data["max_reachable_error_m"] < 1e-3
    scene = bpy.context.scene
    moved = 0.0
    for f in range(1, FRAMES + 1):
        scene.frame_set(f)
        for name, bone in TRACKED.items():
            head = np.array(rig.matrix_world @ rig.pose.bones[bone].head)
            target = np.array(bpy.data.objects[f"tracker.{name}"].matrix_world.translation)
            assert np.linalg.norm(head - target) < TOLERANCE_M, (f, bone, head, target)
        assert rig.pose.bones["upper_arm_parent.R"]["IK_FK"] == 1.0
        moved = max(moved, np.linalg.norm(np.array(rig.pose.bones["hand_fk.L"].rotation_quaternion) - (1, 0, 0, 0)))
    assert moved > 0.05  # the hands really had to move the arm controls
    scene.frame_set(FRAMES + 1)
    assert rig.pose.bones["thigh_parent.L"]["IK_FK"] == 0.0  # IK again outside the baked range
    paths = _fcurve_paths(addon_module, rig)
    for control in ("torso", "spine_fk.003", "neck", "head", "shoulder.L", "upper_arm_fk.L", "forearm_fk.R",
                    "hand_fk.L", "thigh_fk.R", "shin_fk.L", "foot_fk.R", "toe_fk.L"):
        mode = rig.pose.bones[control].rotation_mode  # shoulders are Euler (YXZ) in Rigify
        channel = "rotation_quaternion" if mode == "QUATERNION" else "rotation_euler"
        assert paths[f'pose.bones["{control}"].{channel}'] == list(range(1, FRAMES + 1)), control
    assert 'pose.bones["torso"].location' in paths
    assert not [p for p in paths if p.startswith(('pose.bones["DEF-', 'pose.bones["ORG-', 'pose.bones["MCH-'))]


def test_constraint_driven_def_bones_are_refused(rig):
    """Roles mapped to a generated rig's DEF bones: refused, naming the bones and their constraints, nothing keyed."""
    assert bpy.ops.articulate.body_detect_roles() == {"FINISHED"}
    for item in rig.articulate.body.roles:
        if item.role in ("hand_l", "forearm_l"):
            item.bone = {"hand_l": "DEF-hand.L", "forearm_l": "DEF-forearm.L"}[item.role]
    with pytest.raises(RuntimeError, match=r"DEF-hand\.L \(Copy Transforms 'Copy Transforms' from hand_tweak\.L"):
        bpy.ops.articulate.body_bake(use_scene_range=False, frame_start=1, frame_end=FRAMES)
    assert rig.animation_data is None or rig.animation_data.action is None
