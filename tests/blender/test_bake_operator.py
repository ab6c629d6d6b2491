# SPDX-License-Identifier: GPL-3.0-or-later
"""The bake operator keys what the core solves, reports misses, and changes nothing when it fails."""

import json

import bpy
import numpy as np
import pytest


@pytest.fixture
def demo(empty_scene, addon_module):
    """The bundled example scene (3-bone arm, animated target), 30 frames."""
    info = addon_module("operators.demo").build_demo_scene(frames=30)
    return info


def _bake(demo, **overrides):
    kwargs = dict(tip_bone=demo["tip_bone"], chain_length=demo["chain_length"], target=demo["target"],
                  frame_start=1, frame_end=30, solver="dls")
    kwargs.update(overrides)
    return bpy.ops.articulate.bake_chain(**kwargs)


def _state(arm):
    """Everything a failed bake must leave alone: animation curves and pose."""
    adt = arm.animation_data
    curves = []
    if adt and adt.action:
        from importlib import import_module

        compat = import_module(__import__("conftest").ADDON_MODULE + ".operators.compat")
        curves = [(fc.data_path, fc.array_index, [tuple(k.co) for k in fc.keyframe_points])
                  for fc in compat.iter_fcurves(arm)]
    pose = [tuple(pb.rotation_quaternion) for pb in arm.pose.bones]
    return curves, pose


def test_baked_tip_follows_the_target_on_every_frame(demo, tmp_path):
    """After the bake, frame_set puts the chain's tip on the target (within tolerance) on each frame."""
    report = tmp_path / "r.json"
    assert _bake(demo, report_path=str(report)) == {"FINISHED"}
    data = json.loads(report.read_text())
    assert data["missed_frames"] == [] and len(data["frames"]) == 30
    arm, target = bpy.data.objects["Arm"], bpy.data.objects["Target"]
    tip = arm.pose.bones[demo["tip_bone"]]
    for f in (1, 11, 30):
        bpy.context.scene.frame_set(f)
        tail = np.array(arm.matrix_world @ tip.tail)
        assert np.linalg.norm(tail - np.array(target.matrix_world.translation)) < 1e-3


def test_unreachable_frames_are_reported_as_a_warning(demo, tmp_path):
    """Moving the target out of reach on some frames gives a WARNING listing them, not an error."""
    target = bpy.data.objects["Target"]
    fc = next(fc for fc in target.animation_data.action.layers[0].strips[0].channelbag(
        target.animation_data.action_slot).fcurves if fc.array_index == 0) if bpy.app.version >= (4, 4) else \
        target.animation_data.action.fcurves.find("location", index=0)
    for k in fc.keyframe_points[9:12]:  # frames 10-12 go 5 m away
        k.co[1] = 5.0
    fc.update()
    report = tmp_path / "r.json"
    assert _bake(demo, report_path=str(report)) == {"FINISHED"}
    data = json.loads(report.read_text())
    assert data["missed_frames"] == [10, 11, 12]
    assert all("reach" in r or "error" in r for r, ok in zip(data["reasons"], data["converged"]) if not ok)


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"tip_bone": "Nope"}, "no bone 'Nope'"),
        ({"target": "Missing"}, "target"),
        ({"frame_start": 10, "frame_end": 5}, "empty"),
        ({"solver": "dls", "target": "Arm"}, "another object"),
    ],
)
def test_bad_input_fails_cleanly_and_changes_nothing(demo, overrides, message):
    """Each bad input gives an error naming the problem, and the armature's keys and pose are unchanged."""
    arm = bpy.data.objects["Arm"]
    before = _state(arm)
    with pytest.raises(RuntimeError, match=message):
        _bake(demo, **overrides)
    assert _state(arm) == before
