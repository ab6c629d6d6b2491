# SPDX-License-Identifier: GPL-3.0-or-later
"""Frame stepping evaluates only what a bake reads, and what it reads is what full playback shows."""

import json

import bpy
import numpy as np
import pytest
from test_honest_bakes import arm_of_three

FRAMES = 24


def _empty(name, parent=None):
    obj = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(obj)
    obj.parent = parent
    return obj


@pytest.fixture
def indirect_scene(empty_scene):
    """A target that moves only through a chain of other objects, beside objects it does not need.

    Target's parent Carrier copies the location of Mover (a constraint); Mover's X is a driver reading
    Driver's keyed Z; Driver itself is keyed. Skin is a mesh deformed by the armature, Prop an unrelated
    keyed empty, Hidden an empty already disabled in viewports.
    """
    arm = arm_of_three()
    driver_obj, mover, carrier = _empty("Driver"), _empty("Mover"), _empty("Carrier")
    target = _empty("Target", parent=carrier)
    target.location = (0.0, 0.3, 0.9)
    for f in range(1, FRAMES + 1):
        driver_obj.location = (0.0, 0.0, 0.4 * np.sin(f / 4.0))
        driver_obj.keyframe_insert("location", index=2, frame=f)
    fc = mover.driver_add("location", 0)
    var = fc.driver.variables.new()
    var.name, var.type = "z", "TRANSFORMS"
    var.targets[0].id, var.targets[0].transform_type = driver_obj, "LOC_Z"
    fc.driver.expression = "z"
    con = carrier.constraints.new("COPY_LOCATION")
    con.target = mover
    prop = _empty("Prop")
    for f in (1, FRAMES):
        prop.location = (f, 0.0, 0.0)
        prop.keyframe_insert("location", frame=f)
    hidden = _empty("Hidden")
    hidden.hide_viewport = True
    bpy.ops.mesh.primitive_uv_sphere_add(segments=32, ring_count=16, radius=0.3, location=(0.0, 0.0, 0.7))
    skin = bpy.context.object
    skin.name = "Skin"
    skin.modifiers.new("Armature", "ARMATURE").object = arm
    bpy.context.view_layer.objects.active = arm
    chain = arm.articulate.chains.add()
    chain.name, chain.tip_bone, chain.chain_length, chain.target = "arm", "Wrist", 3, target
    return arm, target


def test_dependencies_follow_parents_constraints_and_drivers(indirect_scene, addon_module):
    """The target's parent, the constraint's target and the driver's object are in; unrelated objects are not."""
    scope = addon_module("operators.bridge.scope")
    arm, target = indirect_scene
    names = {obj.name for obj in scope.dependencies([arm, target])}
    assert {"Arm", "Target", "Carrier", "Mover", "Driver"} <= names
    assert not names & {"Skin", "Prop", "Hidden"}


def test_left_out_objects_come_back_also_after_a_failure(indirect_scene, addon_module):
    """Inside the block unrelated visible objects are disabled in viewports; after it (an error or not)
    every object's setting is as before, the already hidden one still hidden."""
    scope = addon_module("operators.bridge.scope")
    arm, target = indirect_scene
    before = {obj.name: obj.hide_viewport for obj in bpy.data.objects}
    with pytest.raises(RuntimeError, match="boom"):
        with scope.evaluating_only(bpy.context.scene, [arm, target]) as left_out:
            assert left_out == 2
            assert bpy.data.objects["Skin"].hide_viewport and bpy.data.objects["Prop"].hide_viewport
            assert not bpy.data.objects["Driver"].hide_viewport
            raise RuntimeError("boom")
    assert {obj.name: obj.hide_viewport for obj in bpy.data.objects} == before


def test_bake_of_an_indirectly_moved_target_matches_full_playback(indirect_scene, tmp_path):
    """The bake samples the target through its whole dependency chain: on every frame the report's residual
    is what full playback (every object evaluated) shows, and the tip is on the target."""
    arm, target = indirect_scene
    before = {obj.name: obj.hide_viewport for obj in bpy.data.objects}
    report_path = tmp_path / "report.json"
    assert bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=FRAMES,
                                   report_path=str(report_path)) == {"FINISHED"}
    assert {obj.name: obj.hide_viewport for obj in bpy.data.objects} == before
    (chain,) = json.loads(report_path.read_text())["chains"]
    assert all(chain["converged"]), chain["reasons"]
    path = []
    for k, f in enumerate(range(1, FRAMES + 1)):
        bpy.context.scene.frame_set(f)
        tip = np.array(arm.matrix_world @ arm.pose.bones["Wrist"].tail)
        goal = np.array(target.matrix_world.translation)
        path.append(goal)
        assert np.linalg.norm(tip - goal) == pytest.approx(chain["position_error_m"][k], abs=1e-5)
    assert np.ptp(np.array(path)[:, 0]) > 0.5  # the driver really moved the target


@pytest.mark.parametrize("share", [0, 10**6])
def test_batched_and_one_by_one_reads_sample_what_playback_shows(indirect_scene, addon_module, monkeypatch, share):
    """Objects' matrices read one by one (share 0) or all in one batch (a huge share) are, on every frame,
    exactly the matrices a plain frame_set shows, for an object and for a bone; the current frame is restored."""
    sampling = addon_module("operators.bridge.sampling")
    monkeypatch.setattr(sampling, "BATCH_SHARE", share)
    arm, target = indirect_scene
    scene = bpy.context.scene
    scene.frame_set(5)
    frames = list(range(1, FRAMES + 1, 3))
    got_target, got_wrist = sampling.sample_targets(scene, frames, [(target, ""), (arm, "Wrist")])
    assert scene.frame_current == 5
    for k, f in enumerate(frames):
        scene.frame_set(f)
        assert np.array_equal(got_target[k], np.array(target.matrix_world))
        assert np.array_equal(got_wrist[k], np.array(arm.matrix_world) @ np.array(arm.pose.bones["Wrist"].matrix))
    assert np.ptp(got_target[:, 0, 3]) > 0.5  # the frames differ
