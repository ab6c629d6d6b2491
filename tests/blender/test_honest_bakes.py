# SPDX-License-Identifier: GPL-3.0-or-later
"""Honest bakes: the report is what playback shows, and conversion follows Blender's IK semantics."""

import json
import math

import bpy
import numpy as np
import parity_scenes as ps
import pytest


def arm_of_three(name="Arm"):
    """Three connected 0.5 m bones up +Z from the origin (Shoulder, Elbow, Wrist), bent slightly at rest."""
    data = bpy.data.armatures.new(name)
    arm = bpy.data.objects.new(name, data)
    bpy.context.scene.collection.objects.link(arm)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    points = [(0.0, 0.0, 0.0), (0.0, 0.05, 0.5), (0.0, 0.0, 1.0), (0.0, 0.0, 1.5)]
    parent = None
    for k, bone in enumerate(("Shoulder", "Elbow", "Wrist")):
        eb = data.edit_bones.new(bone)
        eb.head, eb.tail = points[k], points[k + 1]
        if parent is not None:
            eb.parent, eb.use_connect = parent, True
        parent = eb
    bpy.ops.object.mode_set(mode="OBJECT")
    return arm


def animated_target(name, start, end, frames=20):
    target = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(target)
    for f in range(1, frames + 1):
        target.location = tuple(np.asarray(start) + (np.asarray(end) - start) * (f - 1) / (frames - 1))
        target.keyframe_insert("location", frame=f)
    return target


def _bake(tmp_path, frames=20, **kw):
    report = tmp_path / "report.json"
    assert bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=frames,
                                   report_path=str(report), **kw) == {"FINISHED"}
    return json.loads(report.read_text())


def _tip_distance(arm, bone, target, frame, tail=True):
    bpy.context.scene.frame_set(frame)
    pb = arm.pose.bones[bone]
    tip = np.array(arm.matrix_world @ (pb.tail if tail else pb.head))
    return float(np.linalg.norm(tip - np.array(target.matrix_world.translation)))


def test_use_tail_off_converts_to_blenders_chain(empty_scene, addon, tmp_path):
    """use_tail off: Blender's chain is the owner's parent and grandparent, ending at the owner's head."""
    arm = arm_of_three()
    target = animated_target("T", (0.3, 0.2, 0.8), (-0.2, 0.3, 0.7))
    con = arm.pose.bones["Wrist"].constraints.new("IK")
    con.target, con.chain_count, con.use_tail = target, 2, False
    assert bpy.ops.articulate.chains_from_constraints() == {"FINISHED"}
    (chain,) = arm.articulate.chains
    assert (chain.tip_bone, chain.root_bone, chain.use_tail) == ("Elbow", "Shoulder", True)
    report = _bake(tmp_path)
    assert report["chains"][0]["bones"] == ["Shoulder", "Elbow"] and con.mute
    assert report["measured_by"] == "playback"
    for f in (1, 10, 20):  # the report's residual is the one playback shows
        d = _tip_distance(arm, "Wrist", target, f, tail=False)
        assert d == pytest.approx(report["chains"][0]["position_error_m"][f - 1], abs=1e-5)
        assert d < 1e-3


@pytest.mark.parametrize("how", ["mute", "influence"])
def test_muted_or_zero_influence_constraints_are_skipped_with_a_note(empty_scene, addon, how):
    """Constraints Blender would not solve are not converted, and the operator says why."""
    arm = arm_of_three()
    target = animated_target("T", (0.3, 0.2, 0.8), (-0.2, 0.3, 0.7))
    live = arm.pose.bones["Wrist"].constraints.new("IK")
    live.target, live.chain_count = target, 3
    off = arm.pose.bones["Elbow"].constraints.new("IK")
    off.target, off.chain_count = target, 2
    if how == "mute":
        off.mute = True
    else:
        off.influence = 0.0
    assert bpy.ops.articulate.chains_from_constraints() == {"FINISHED"}
    assert [c.tip_bone for c in arm.articulate.chains] == ["Wrist"]


def test_chain_names_are_unique(empty_scene, addon):
    """Two IK constraints on one bone (Rigify's IK pair) become chains with different names."""
    arm = arm_of_three()
    target = animated_target("T", (0.3, 0.2, 0.8), (-0.2, 0.3, 0.7))
    for _ in range(2):
        con = arm.pose.bones["Wrist"].constraints.new("IK")
        con.target, con.chain_count = target, 2
    assert bpy.ops.articulate.chains_from_constraints() == {"FINISHED"}
    names = [c.name for c in arm.articulate.chains]
    assert len(names) == 2 and len(set(names)) == 2


def test_second_chains_base_is_sampled_with_the_first_ik_muted(empty_scene, addon, tmp_path):
    """Two converted chains, one above the other: the lower chain's base is sampled as playback will show it.

    The upper chain's IK, still live while sampling, would put the lower chain's base where the
    bake never leaves it; both hands must end on their targets in playback.
    """
    data = bpy.data.armatures.new("Two")
    arm = bpy.data.objects.new("Two", data)
    bpy.context.scene.collection.objects.link(arm)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    points = [(0, 0, 0), (0, 0.05, 0.5), (0, 0, 1.0), (0, 0.05, 1.5), (0, 0, 2.0)]
    parent = None
    for k in range(4):
        eb = data.edit_bones.new(f"B{k}")
        eb.head, eb.tail = points[k], points[k + 1]
        if parent is not None:
            eb.parent, eb.use_connect = parent, True
        parent = eb
    bpy.ops.object.mode_set(mode="OBJECT")
    lower_t = animated_target("Tlow", (0.3, 0.3, 0.8), (0.4, -0.2, 0.7))
    upper_t = animated_target("Tup", (0.5, 0.4, 1.1), (0.2, -0.3, 1.3))
    c1 = arm.pose.bones["B1"].constraints.new("IK")
    c1.target, c1.chain_count = lower_t, 2
    c2 = arm.pose.bones["B3"].constraints.new("IK")
    c2.target, c2.chain_count = upper_t, 2
    assert bpy.ops.articulate.chains_from_constraints() == {"FINISHED"}
    report = _bake(tmp_path)
    assert report["missed_frames"] == []  # every target is in reach of its chain
    for chain in report["chains"]:
        tip, target = ("B1", lower_t) if chain["bones"][-1] == "B1" else ("B3", upper_t)
        for f in (1, 20):
            d = _tip_distance(arm, tip, target, f)
            assert d == pytest.approx(chain["position_error_m"][f - 1], abs=1e-5)
            if chain["converged"][f - 1]:
                assert d < 1e-3


def test_overridden_bones_are_warned_and_reported(empty_scene, addon, tmp_path):
    """A chain bone under Copy Rotation: the bake warns naming it, and the frames are reported overridden."""
    arm = arm_of_three()
    target = animated_target("T", (0.3, 0.2, 0.8), (-0.2, 0.3, 0.7))
    driver = bpy.data.objects.new("Driver", None)
    driver.rotation_euler = (0.0, 0.0, 0.0)
    bpy.context.scene.collection.objects.link(driver)
    copy = arm.pose.bones["Shoulder"].constraints.new("COPY_ROTATION")
    copy.target = driver
    chain = arm.articulate.chains.add()
    chain.name, chain.tip_bone, chain.chain_length, chain.target = "Arm", "Wrist", 3, target
    report = _bake(tmp_path)
    assert any("Shoulder follows Copy Rotation" in w for w in report["warnings"])
    entry = report["chains"][0]
    assert entry["overridden_frames"] and report["missed_frames"] == entry["missed_frames"]
    f = entry["overridden_frames"][0]
    assert "overridden in playback" in entry["reasons"][f - 1] and "Copy Rotation" in entry["reasons"][f - 1]
    assert entry["solver_converged"][f - 1] and not entry["converged"][f - 1]
    d = _tip_distance(arm, "Wrist", target, f)
    assert d == pytest.approx(entry["position_error_m"][f - 1], abs=1e-5) and d > 1e-3


def test_failed_bake_restores_the_constraints_it_muted(empty_scene, addon):
    """A bake that fails after muting the converted IK leaves the constraints as they were."""
    arm = arm_of_three()
    target = animated_target("T", (0.3, 0.2, 0.8), (-0.2, 0.3, 0.7))
    con = arm.pose.bones["Wrist"].constraints.new("IK")
    con.target, con.chain_count = target, 3
    assert bpy.ops.articulate.chains_from_constraints() == {"FINISHED"}
    fc = target.animation_data.action.fcurves[0] if hasattr(target.animation_data.action, "fcurves") else None
    if fc is None:  # Blender 5.0: curves live in the action's channelbag
        from bpy_extras import anim_utils

        action = target.animation_data.action
        fc = anim_utils.action_get_channelbag_for_slot(action, target.animation_data.action_slot).fcurves[0]
    fc.keyframe_points[4].co[1] = float("nan")
    fc.update()
    with pytest.raises(RuntimeError, match="NaN"):
        bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=20)
    assert not con.mute


def test_driver_muted_ik_pair_converts_the_active_one(empty_scene, addon):
    """Rigify's pattern: two IK constraints on a bone, a driver mutes one. Only the live one becomes a chain."""
    arm = arm_of_three()
    target = animated_target("T", (0.3, 0.2, 0.8), (-0.2, 0.3, 0.7))
    arm["use_stretch"] = 1.0
    pair = []
    for name, expression in (("IK", "var"), ("IK.001", "1 - var")):
        con = arm.pose.bones["Wrist"].constraints.new("IK")
        con.name, con.target, con.chain_count = name, target, 3 if name == "IK" else 2
        fc = con.driver_add("mute")
        fc.driver.type = "SCRIPTED"
        var = fc.driver.variables.new()
        var.targets[0].id = arm
        var.targets[0].data_path = '["use_stretch"]'
        fc.driver.expression = expression
        pair.append(con)
    bpy.context.view_layer.update()
    assert bpy.ops.articulate.chains_from_constraints() == {"FINISHED"}
    (chain,) = arm.articulate.chains
    assert chain.constraint == "IK.001" and chain.chain_length == 2


def test_itasc_goals_convert_or_are_named(empty_scene, addon_module):
    """On an armature solved by iTaSC: a Copy Pose goal with a location target converts; a Distance goal and a
    rotation-only goal are skipped, each named in a note; a note says iTaSC's own settings are not carried over;
    the constraint's Stretch carries over."""
    chains = addon_module("operators.chains")
    arm = arm_of_three()
    arm.pose.ik_solver = "ITASC"
    target = animated_target("T", (0.3, 0.2, 0.8), (-0.2, 0.3, 0.7))
    pose = arm.pose.bones["Wrist"].constraints.new("IK")
    pose.name, pose.target, pose.chain_count, pose.ik_type = "pose", target, 2, "COPY_POSE"
    pose.use_stretch = True
    arm.pose.bones["Elbow"].ik_stretch = 0.1
    distance = arm.pose.bones["Elbow"].constraints.new("IK")
    distance.name, distance.target, distance.ik_type = "keep away", target, "DISTANCE"
    turn = arm.pose.bones["Shoulder"].constraints.new("IK")
    turn.name, turn.target, turn.ik_type = "turn", target, "COPY_POSE"
    turn.use_location, turn.use_rotation = False, True
    plane = arm.pose.bones["Elbow"].constraints.new("IK")
    plane.name, plane.target, plane.ik_type, plane.lock_location_z = "plane", target, "COPY_POSE", False
    made, notes = chains.convert_constraints(arm)
    assert made == 1, notes
    assert made == 1 and [c.constraint for c in arm.articulate.chains] == ["pose"]
    text = " | ".join(notes)
    assert "'keep away' is a Distance goal" in text
    assert "'turn' matches rotation only" in text
    assert "'plane' leaves its location goal free along Z" in text
    assert "solved by iTaSC" in text
    assert arm.articulate.chains[0].use_stretch


@pytest.mark.parametrize("inner_chain_count, warned", [(2, True), (1, True), (3, False)])
def test_ik_chains_sharing_bones_from_different_roots_are_warned_as_unsteady_in_playback(
        empty_scene, addon_module, tmp_path, inner_chain_count, warned):
    """Two IK constraints whose chains share bones but start at different root bones are two solves in Blender's
    dependency graph writing the same bones in no set order: playback of those bones changes between evaluations
    (found by dev/fuzz_bake.py: the same keys played one frame back and forth showed two poses). Conversion (the
    constraints live) and the bake (them muted) warn, naming both constraints and the bone from which playback is
    unsteady; with the same root bone (inner chain of 3) Blender solves them as one tree and nothing is said."""
    arm = ps.armature("Tail", ps.chain_bones([f"B{k}" for k in range(6)], ps.zigzag(6, 0.3, bend=0.03)))
    outer = arm.pose.bones["B5"].constraints.new("IK")
    outer.target, outer.chain_count = animated_target("Tout", (0.6, 0.2, 1.2), (0.3, -0.5, 1.4)), 5  # B1..B5
    inner = arm.pose.bones["B3"].constraints.new("IK")
    inner.target, inner.chain_count = animated_target("Tin", (0.3, 0.3, 0.9), (0.2, -0.3, 0.8)), inner_chain_count
    root = f"B{4 - inner_chain_count}"
    made, notes = addon_module("operators.chains").convert_constraints(arm)
    assert made == 2
    unsteady = [n for n in notes if "order that can change between evaluations" in n]
    report = _bake(tmp_path)
    baked = [w for w in report["warnings"] if "order that can change between evaluations" in w]
    assert len(unsteady) == len(baked) == warned
    for text, state in zip(unsteady + baked, ("live", "muted")):
        assert f"IK {inner.name!r} on B3 and IK {outer.name!r} on B5 share bones from {root}" in text
        assert f"different bones ({root}, B1)" in text and f"such a pair ({state})" in text


def test_a_tree_member_whose_own_bone_is_locked_on_every_axis_bakes(empty_scene, addon, tmp_path):
    """Two chains sharing their upper bones; the longer one's own bones below them, solved again where its target
    is beyond reach, start with a bone locked on every axis. The bake failed with a KeyError (the tree's rotations
    hold only bones that move; found by dev/fuzz_bake.py); now it bakes, the locked bone keeps its pose, and the
    report is what playback shows."""
    arm = ps.armature("Tree", ps.chain_bones([f"B{k}" for k in range(5)], ps.zigzag(5, 0.4, bend=0.04)))
    locked = arm.pose.bones["B3"]
    locked.lock_ik_x = locked.lock_ik_y = locked.lock_ik_z = True
    far = arm.pose.bones["B4"].constraints.new("IK")
    far.target, far.chain_count = animated_target("Tfar", (0.5, 0.3, 1.6), (3.0, 0.0, 1.0)), 4  # B1..B4, leaves reach
    near = arm.pose.bones["B2"].constraints.new("IK")
    near.target, near.chain_count = animated_target("Tnear", (0.3, 0.2, 1.0), (0.2, -0.2, 1.1)), 2  # B1, B2
    assert bpy.ops.articulate.chains_from_constraints() == {"FINISHED"}
    report = _bake(tmp_path)
    assert any("one tree" in n for n in report["notes"])
    bpy.context.scene.frame_set(20)
    assert np.allclose(np.array(locked.matrix_basis), np.eye(4), atol=1e-6)
    for chain in report["chains"]:
        tip, target = ("B4", "Tfar") if chain["bones"][-1] == "B4" else ("B2", "Tnear")
        d = _tip_distance(arm, tip, bpy.data.objects[target], 20)
        assert d == pytest.approx(chain["position_error_m"][19], abs=1e-5)
    assert not report["chains"][0]["converged"][19] or not report["chains"][1]["converged"][19]


def test_a_spine_leans_toward_a_far_hand_as_far_as_the_near_hand_on_its_target_lets_it(empty_scene, addon, tmp_path):
    """Two IK constraints through a 1 m spine that may bend 0.1 rad about one axis (the others locked): the near
    hand's two 0.3 m bones reach its target from anywhere the spine can bend; the far hand's one 0.5 m bone points
    at a target some 3 m away. The near hand stays on its target, and the spine leans toward the far one as far as
    the near hand can follow. The bake posed the spine for the near hand alone and left it upright: the far hand
    ended 0.1 m farther than it can be. The reference is independent: the chest on the spine's arc at 200,001
    angles within the limit (its axis read from the bone), kept where the near target lies within the near arm's
    reach of it, the far hand 0.5 m from the chest toward its target."""
    frames = 5
    chest, side = np.array([0.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0])  # the arms point along X
    elbow = chest + 0.3 * side + (0.0, 0.0, 0.02)  # a slight bend gives the near arm a bend direction
    arm = ps.armature("Rig", [("Spine", (0.0, 0.0, 0.0), tuple(chest), None, False),
                              ("Far", tuple(chest), tuple(chest - 0.5 * side), "Spine", True),
                              ("Upper", tuple(chest), tuple(elbow), "Spine", True),
                              ("Fore", tuple(elbow), tuple(chest + 0.6 * side), "Upper", True)])
    ps.ik_limits(arm.pose.bones["Spine"], z=(-math.degrees(0.1), math.degrees(0.1)), lock="xy")
    lift = np.linspace(0.0, 0.3, frames)[:, None] * (0.0, 0.0, 1.0)
    far_path = chest - 3.0 * side + lift  # beyond the far hand's 1.5 m reach from the spine's root
    near_path = np.repeat([chest + 0.45 * side], frames, axis=0)
    far, near = ps.empty("Far target"), ps.empty("Near target")
    ps.key_locations(far, far_path, range(1, frames + 1))
    ps.key_locations(near, near_path, range(1, frames + 1))
    ps.add_ik(arm.pose.bones["Far"], far, chain_count=2)
    ps.add_ik(arm.pose.bones["Fore"], near, chain_count=3)
    bpy.context.view_layer.objects.active = arm
    assert bpy.ops.articulate.chains_from_constraints() == {"FINISHED"}
    report = _bake(tmp_path, frames=frames)
    assert any("one tree" in n for n in report["notes"])
    axis = np.array(arm.data.bones["Spine"].matrix_local.col[2][:3])  # the bone's local Z in armature space
    s = np.linspace(-0.1, 0.1, 200_001)
    # The chest turned by s about the spine's axis (Rodrigues; the rest chest is perpendicular to it).
    chests = np.cos(s)[:, None] * chest + np.sin(s)[:, None] * np.cross(axis, chest)
    upper = np.linalg.norm(elbow - chest)
    fore = np.linalg.norm(chest + 0.6 * side - elbow)
    for f in range(frames):
        to_near = np.linalg.norm(near_path[f] - chests, axis=1)
        feasible = (to_near <= upper + fore) & (to_near >= abs(upper - fore))
        best = (np.linalg.norm(far_path[f] - chests, axis=1)[feasible] - 0.5).min()
        assert _tip_distance(arm, "Fore", near, f + 1) <= 1e-4 + 2e-6
        d_far = _tip_distance(arm, "Far", far, f + 1)
        assert d_far <= best + 1e-4, f"frame {f + 1}: the far hand {1e3 * (d_far - best):.1f} mm short of its best"


def test_ik_limits_and_a_limit_rotation_that_leave_no_room_are_refused_naming_what_to_widen(empty_scene, addon):
    """An IK limit on X of -10-150 degrees and a Limit Rotation of -90 to -30 degrees on the same bone: no rotation
    keeps both, so the bake refuses, naming the bone, the axis, both ranges and what to widen, and changes nothing (the
    IK constraint stays live, no action is made)."""
    arm = arm_of_three()
    elbow = arm.pose.bones["Elbow"]
    elbow.use_ik_limit_x, elbow.ik_min_x, elbow.ik_max_x = True, math.radians(-10), math.radians(150)
    limit = elbow.constraints.new("LIMIT_ROTATION")
    limit.owner_space, limit.use_limit_x = "LOCAL", True
    limit.min_x, limit.max_x = math.radians(-90), math.radians(-30)
    ik = arm.pose.bones["Wrist"].constraints.new("IK")
    ik.target, ik.chain_count = animated_target("T", (0.3, 0.2, 0.8), (-0.2, 0.3, 0.7)), 3
    assert bpy.ops.articulate.chains_from_constraints() == {"FINISHED"}
    with pytest.raises(RuntimeError) as refused:
        bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=20)
    text = str(refused.value)
    assert "'Elbow'" in text and "no room on axis X (min -10.0 > max -30.0 degrees)" in text
    assert "widen or turn off one of them" in text and "Limit X" in text and "Traceback" not in text
    assert not ik.mute and (arm.animation_data is None or arm.animation_data.action is None)
