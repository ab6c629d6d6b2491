# SPDX-License-Identifier: GPL-3.0-or-later
"""A chain's pole decides which way it bends, in bakes and in live posing."""

import json
import math

import bpy
import numpy as np
import pytest
from mathutils import Vector


def _two_bone_armature(name, elbow):
    """An armature of two connected bones, Upper from the origin to ``elbow``, Lower on to (0, 2, 0)."""
    data = bpy.data.armatures.new(name)
    arm = bpy.data.objects.new(name, data)
    bpy.context.scene.collection.objects.link(arm)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    upper = data.edit_bones.new("Upper")
    upper.head, upper.tail = (0.0, 0.0, 0.0), elbow
    lower = data.edit_bones.new("Lower")
    lower.head, lower.tail = elbow, (0.0, 2.0, 0.0)
    lower.parent, lower.use_connect = upper, True
    bpy.ops.object.mode_set(mode="OBJECT")
    return arm


def _straight_arm():
    """Two 1 m bones along +Y, straight at rest (so only the pole can pick a bend plane)."""
    arm = _two_bone_armature("PoleArm", (0.0, 1.0, 0.0))
    target = bpy.data.objects.new("PoleTarget", None)
    target.location = (0.0, 1.4, 0.0)
    pole = bpy.data.objects.new("PolePole", None)
    for obj in (target, pole):
        bpy.context.scene.collection.objects.link(obj)
    chain = arm.articulate.chains.add()
    chain.tip_bone, chain.chain_length, chain.use_tail = "Lower", 2, True
    chain.target, chain.pole, chain.tolerance = target, pole, 1e-5
    return arm, chain, pole


def _bend_direction(arm):
    """Unit direction of the elbow away from the shoulder-to-target line, in world space."""
    bpy.context.view_layer.update()
    shoulder = np.array(arm.matrix_world @ arm.pose.bones["Upper"].head)
    elbow = np.array(arm.matrix_world @ arm.pose.bones["Lower"].head)
    wrist = np.array(arm.matrix_world @ arm.pose.bones["Lower"].tail)
    axis = (wrist - shoulder) / np.linalg.norm(wrist - shoulder)
    off = elbow - shoulder
    off -= (off @ axis) * axis
    return off / np.linalg.norm(off)


@pytest.mark.parametrize("solver", ["two_bone", "fabrik"])
@pytest.mark.parametrize("side", [(0.0, 0.0, 1.0), (0.0, 0.0, -1.0), (1.0, 0.0, 0.0), (-0.6, 0.0, 0.8)])
def test_solved_elbow_points_at_the_pole(empty_scene, addon, solver, side):
    """Solve Frame bends a straight two-bone chain toward its pole, whichever side the pole is on."""
    arm, chain, pole = _straight_arm()
    chain.solver = solver
    pole.location = Vector((0.0, 0.7, 0.0)) + Vector(side)
    assert bpy.ops.articulate.solve_frame() == {"FINISHED"}
    bend = _bend_direction(arm)
    assert np.degrees(np.arccos(np.clip(bend @ np.array(side), -1.0, 1.0))) < 1.0
    tip = np.array(arm.matrix_world @ arm.pose.bones["Lower"].tail)
    assert np.linalg.norm(tip - np.array(chain.target.location)) < 1e-4


@pytest.mark.parametrize("solver", ["two_bone", "fabrik"])
def test_baked_elbow_follows_an_animated_pole(empty_scene, addon, solver):
    """A pole keyed from +Z to -Z over the range flips the baked bend plane with it."""
    arm, chain, pole = _straight_arm()
    chain.solver = solver
    for frame, z in ((1, 1.0), (10, -1.0)):
        pole.location = (0.0, 0.7, z)
        pole.keyframe_insert("location", frame=frame)
    assert bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=10) == {"FINISHED"}
    for frame, want in ((1, (0.0, 0.0, 1.0)), (10, (0.0, 0.0, -1.0))):
        bpy.context.scene.frame_set(frame)
        bend = _bend_direction(arm)
        assert bend @ np.array(want) > 0.999


@pytest.mark.parametrize("solver", ["dls", "ccd"])
def test_a_pole_the_solver_cannot_use_is_reported(empty_scene, addon, solver, tmp_path):
    """Solvers without pole support still bake, and the report says the pole was ignored."""

    arm, chain, pole = _straight_arm()
    chain.solver = solver
    pole.location = (0.0, 0.7, 1.0)
    report = tmp_path / "r.json"
    assert bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=2,
                                   report_path=str(report)) == {"FINISHED"}
    warnings = json.loads(report.read_text())["warnings"]
    assert len(warnings) == 1 and solver in warnings[0] and "PolePole" in warnings[0]
    chain.solver = "two_bone"
    assert bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=2,
                                   report_path=str(report)) == {"FINISHED"}
    assert json.loads(report.read_text())["warnings"] == []


def _bent_arm_with_constraint(pole_angle_deg):
    """Two bones along +Y bent toward -Z at rest, an IK constraint with a pole on +X."""
    arm = _two_bone_armature("IKArm", (0.0, 1.0, -0.15))
    target = bpy.data.objects.new("IKTarget", None)
    target.location = (0.0, 1.5, 0.3)
    pole = bpy.data.objects.new("IKPole", None)
    pole.location = (1.0, 0.8, 0.0)
    for obj in (target, pole):
        bpy.context.scene.collection.objects.link(obj)
    con = arm.pose.bones["Lower"].constraints.new("IK")
    con.target, con.pole_target, con.chain_count = target, pole, 2
    con.pole_angle = math.radians(pole_angle_deg)
    return arm, con


@pytest.mark.parametrize("pole_angle_deg", [-90.0, -60.0, 0.0, 45.0])
def test_chains_from_constraints_bend_like_blenders_ik(empty_scene, addon, pole_angle_deg, tmp_path):
    """A converted IK constraint bends its chain the way Blender's IK does, for any pole angle.

    With the defaults a user gets: the converted chain's solver is Auto, which picks one that
    honours the pole (no "ignores poles" warning).
    """
    arm, con = _bent_arm_with_constraint(pole_angle_deg)
    blender_bend = _bend_direction(arm)
    bpy.context.view_layer.objects.active = arm
    assert bpy.ops.articulate.chains_from_constraints() == {"FINISHED"}
    chain = arm.articulate.chains[0]
    assert chain.solver == "auto"
    chain.tolerance = 1e-5
    con.mute = True
    report = tmp_path / "r.json"
    assert bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=1,
                                   report_path=str(report)) == {"FINISHED"}
    data = json.loads(report.read_text())
    assert data["warnings"] == [] and data["chains"][0]["solver"] == "two_bone"
    ours = _bend_direction(arm)
    assert np.degrees(np.arccos(np.clip(ours @ blender_bend, -1.0, 1.0))) < 3.0
