# SPDX-License-Identifier: GPL-3.0-or-later
"""IK constraint parity, per setting (issue 15 item 1): influence (static and keyed) and Stretch.

Each converted setting is checked against what playback shows after the bake; the comparison
with Blender's own bake of the same scenes is in test_parity.py (scenes influence_half,
influence_keyed, stretch, itasc).
"""

import json

import bpy
import numpy as np
import parity_scenes as ps
import pytest
from test_honest_bakes import animated_target, arm_of_three

FRAMES = 24


def _bake(tmp_path, frames=FRAMES, **kw):
    report = tmp_path / "report.json"
    assert bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=frames,
                                   report_path=str(report), **kw) == {"FINISHED"}
    return json.loads(report.read_text())


def _ik(arm, target, **settings):
    con = arm.pose.bones["Wrist"].constraints.new("IK")
    con.target, con.chain_count = target, 3
    for key, value in settings.items():
        setattr(con, key, value)
    return con


def _tips(arm, frames=FRAMES):
    """(F, 3) the Wrist's tail in playback, the IK constraints as they are."""
    out = []
    for f in range(1, frames + 1):
        bpy.context.scene.frame_set(f)
        out.append(tuple(arm.matrix_world @ arm.pose.bones["Wrist"].tail))
    return np.array(out)


def _fk_swing(arm, frames=FRAMES):
    for k, name in enumerate(("Shoulder", "Elbow", "Wrist")):
        pb = arm.pose.bones[name]
        pb.rotation_mode = "XYZ"
        for f in range(1, frames + 1):
            pb.rotation_euler = (0.4 * np.sin(0.3 * f + k), 0.0, 0.2 * np.cos(0.2 * f))
            pb.keyframe_insert("rotation_euler", frame=f)


def _with_ik_muted(arm, fn):
    cons = [c for pb in arm.pose.bones for c in pb.constraints if c.type == "IK"]
    was = [c.mute for c in cons]
    for c in cons:
        c.mute = True
    try:
        return fn()
    finally:
        for c, m in zip(cons, was):
            c.mute = m


def test_keyed_influence_converts_with_its_keys_and_the_bake_reaches_the_blended_goal(empty_scene, tmp_path):
    """Influence keyed 0 -> 1 (0 on the first frame: converted anyway): the chain's influence gets the same keys;
    in playback the tip is on the goal Blender's IK solves for (FK end + w (target - FK end)) on every frame,
    where the target itself is not reached while w < 1; the report says so and measures against the goal."""
    arm = arm_of_three()
    target = animated_target("T", (0.4, 0.3, 1.0), (-0.3, 0.4, 0.9), FRAMES)
    _fk_swing(arm)
    con = _ik(arm, target)
    for frame, value in ((1, 0.0), (8, 0.0), (16, 1.0)):
        con.influence = value
        con.keyframe_insert("influence", frame=frame)
    bpy.context.scene.frame_set(1)
    # Blender's own playback, before anything is converted: the reference the bake must match
    blender_tips = _tips(arm)
    fk_tips = _with_ik_muted(arm, lambda: _tips(arm))
    assert bpy.ops.articulate.chains_from_constraints() == {"FINISHED"}
    (chain,) = arm.articulate.chains
    influence = []
    for f in range(1, FRAMES + 1):
        bpy.context.scene.frame_set(f)
        influence.append(chain.influence)
    influence = np.array(influence)
    np.testing.assert_allclose(influence[[0, 7, 15, 23]], [0.0, 0.0, 1.0, 1.0], atol=1e-6)
    assert 0.2 < influence[11] < 0.8  # the keys' Bezier ease, as the constraint's
    report = _bake(tmp_path)
    entry = report["chains"][0]
    np.testing.assert_allclose(entry["influence"], influence, atol=1e-6)
    assert any("influence below 1" in n for n in report["notes"])
    tips = _tips(arm)
    targets = np.array([_animated_target_position(target, f) for f in range(1, FRAMES + 1)])
    goals = fk_tips + influence[:, None] * (targets - fk_tips)
    err = np.linalg.norm(tips - goals, axis=1)
    assert err.max() < 2e-4, err
    np.testing.assert_allclose(entry["position_error_m"], err, atol=1e-5)
    assert all(entry["converged"])
    # where the influence is 0 the chain plays its FK pose, as under Blender's IK
    np.testing.assert_allclose(tips[:8], fk_tips[:8], atol=2e-4)
    np.testing.assert_allclose(tips, blender_tips, atol=1e-3)
    assert np.linalg.norm(tips[10] - targets[10]) > 0.05  # partial influence: not at the target


def _heads(arm, frames=FRAMES):
    """(F, 3, 3) the chain bones' heads (Elbow, Wrist) and the Wrist's tail in playback."""
    out = []
    for f in range(1, frames + 1):
        bpy.context.scene.frame_set(f)
        elbow, wrist = arm.pose.bones["Elbow"], arm.pose.bones["Wrist"]
        out.append([tuple(arm.matrix_world @ p) for p in (elbow.head, wrist.head, wrist.tail)])
    return np.array(out)


def test_at_influence_zero_after_full_influence_the_chain_plays_its_fk_pose(empty_scene, tmp_path):
    """Influence keyed 1 -> 0 (held) -> 1: where it is 0 the whole chain plays its FK pose, every joint, not only
    the tip, as under Blender's IK (which solves each frame from the pose without IK); the three ball joints can reach
    the FK tip in many poses, and a take carried on from the frames at full influence would pick another."""
    frames = 32
    arm = arm_of_three()
    target = animated_target("T", (0.4, 0.3, 1.0), (-0.3, 0.4, 0.9), frames)
    _fk_swing(arm, frames)
    con = _ik(arm, target)
    for frame, value in ((1, 1.0), (8, 0.0), (20, 0.0), (28, 1.0)):
        con.influence = value
        con.keyframe_insert("influence", frame=frame)
    fk = _with_ik_muted(arm, lambda: _heads(arm, frames))
    assert bpy.ops.articulate.chains_from_constraints() == {"FINISHED"}
    report = _bake(tmp_path, frames)
    assert all(report["chains"][0]["converged"])
    baked = _heads(arm, frames)
    np.testing.assert_allclose(baked[7:20], fk[7:20], atol=1e-4)
    assert np.linalg.norm(baked[2, 2] - fk[2, 2]) > 0.05  # at full influence the chain leaves its FK pose


def _spine_heads(arm, frames):
    """(F, 6, 3) heads of Spine2, both arms' bones and both hands' tails in playback."""
    out = []
    for f in frames:
        bpy.context.scene.frame_set(f)
        pbs = arm.pose.bones
        points = [pbs["Spine2"].head, pbs["Arm.L"].tail, pbs["Hand.L"].tail, pbs["Arm.R"].tail, pbs["Hand.R"].tail,
                  pbs["Spine2"].tail]
        out.append([tuple(arm.matrix_world @ p) for p in points])
    return np.array(out)


def test_a_tree_at_influence_zero_after_full_influence_plays_its_fk_pose(empty_scene, tmp_path):
    """Two arms through a shared spine, solved as one tree, both IK influences keyed 1 -> 0 (held) -> 1: where they
    are 0 every bone of the tree plays its FK pose, as under Blender's IK, which solves each frame from the pose
    without IK (the spine and arms reach the FK hands in many poses; a take carried on from the frames at full
    influence would pick another)."""
    frames = list(range(1, 33))
    ps.load(ps.BY_NAME["shared_spine"], len(frames))
    arm = bpy.data.objects["Rig"]
    for k, name in enumerate(("Spine1", "Spine2", "Arm.L", "Hand.L", "Arm.R", "Hand.R")):
        pb = arm.pose.bones[name]
        pb.rotation_mode = "XYZ"
        for f in frames:
            pb.rotation_euler = (0.3 * np.sin(0.3 * f + k), 0.1 * np.sin(0.2 * f), 0.2 * np.cos(0.2 * f + k))
            pb.keyframe_insert("rotation_euler", frame=f)
    for pb in arm.pose.bones:
        for con in pb.constraints:
            for frame, value in ((1, 1.0), (8, 0.0), (20, 0.0), (28, 1.0)):
                con.influence = value
                con.keyframe_insert("influence", frame=frame)
    fk = _with_ik_muted(arm, lambda: _spine_heads(arm, frames))
    ps.activate(arm)
    assert bpy.ops.articulate.chains_from_constraints() == {"FINISHED"}
    report = _bake(tmp_path, len(frames))
    assert any("solved together as one tree" in note for note in report["notes"])
    for chain in report["chains"]:
        assert all(chain["converged"]), chain["reasons"]
    baked = _spine_heads(arm, frames)
    np.testing.assert_allclose(baked[7:20], fk[7:20], atol=1e-4)
    assert np.linalg.norm(baked[2] - fk[2], axis=-1).max() > 0.05  # at full influence the tree leaves its FK pose


def _animated_target_position(target, frame):
    bpy.context.scene.frame_set(frame)
    return tuple(target.matrix_world.translation)


def test_a_chain_of_its_own_at_half_influence(empty_scene, tmp_path):
    """A chain made in the panel (no constraint) at influence 0.5 reaches half way from its FK pose."""
    arm = arm_of_three()
    target = animated_target("T", (0.5, 0.3, 0.9), (0.3, 0.5, 1.1), FRAMES)
    _fk_swing(arm)
    fk_tips = _tips(arm)
    chain = arm.articulate.chains.add()
    chain.tip_bone, chain.chain_length, chain.target, chain.influence = "Wrist", 3, target, 0.5
    report = _bake(tmp_path)
    targets = np.array([_animated_target_position(target, f) for f in range(1, FRAMES + 1)])
    tips = _tips(arm)
    np.testing.assert_allclose(tips, (fk_tips + targets) / 2, atol=2e-4)
    assert report["chains"][0]["converged"] == [True] * FRAMES


def test_stretch_reaches_targets_beyond_reach_with_scale_keys(empty_scene, tmp_path):
    """Stretch on (IK Stretch 0.2 / 0.5 / 1.0): frames beyond the 1.5 m reach are reached by lengthening the
    bones, keyed as scale (children inherit: the keys divide the parent's out); in-reach frames keep scale 1.
    Blender's own IK with Stretch also reaches them; without Stretch the same frames miss."""
    arm = arm_of_three()
    target = animated_target("T", (0.3, 0.2, 1.0), (0.6, 0.5, 1.9), FRAMES)  # ends 2.07 m out
    con = _ik(arm, target, use_stretch=True)
    for name, s in (("Shoulder", 0.2), ("Elbow", 0.5), ("Wrist", 1.0)):
        arm.pose.bones[name].ik_stretch = s
    blender_tips = _tips(arm)
    assert bpy.ops.articulate.chains_from_constraints() == {"FINISHED"}
    (chain,) = arm.articulate.chains
    assert chain.use_stretch
    report = _bake(tmp_path)
    assert con.mute
    entry = report["chains"][0]
    assert all(entry["converged"]), entry["reasons"]
    targets = np.array([_animated_target_position(target, f) for f in range(1, FRAMES + 1)])
    tips = _tips(arm)
    assert np.linalg.norm(tips - targets, axis=1).max() < 2e-4
    assert np.linalg.norm(blender_tips - targets, axis=1).max() < 1e-3  # Blender's stretch reaches too
    beyond = np.linalg.norm(targets, axis=1) > 1.5
    assert 3 <= beyond.sum() < FRAMES
    world_scale = []
    for f in range(1, FRAMES + 1):
        bpy.context.scene.frame_set(f)
        world_scale.append([arm.pose.bones[b].matrix.col[1].length for b in ("Shoulder", "Elbow", "Wrist")])
    world_scale = np.array(world_scale)
    assert np.all(world_scale[beyond].max(axis=1) > 1.01)
    # the most stretchy bone takes the most
    assert np.all(world_scale[beyond, 2] - 1 > world_scale[beyond, 1] - 1)
    np.testing.assert_allclose(world_scale[~beyond], 1.0, atol=1e-5)
    assert any("stretched its bones" in n for n in report["notes"])
    assert max(entry["stretch"]) == pytest.approx(world_scale.max(), rel=1e-4)


def test_without_stretch_the_same_frames_miss(empty_scene, tmp_path):
    """Stretch off on the constraint (it is on by default; the bones' IK Stretch 0 by default is what keeps a
    default rig from stretching): the frames beyond reach miss and no scale is keyed."""
    arm = arm_of_three()
    target = animated_target("T", (0.3, 0.2, 1.0), (0.6, 0.5, 1.9), FRAMES)
    _ik(arm, target, use_stretch=False)
    for name in ("Shoulder", "Elbow", "Wrist"):
        arm.pose.bones[name].ik_stretch = 1.0
    assert bpy.ops.articulate.chains_from_constraints() == {"FINISHED"}
    report = _bake(tmp_path)
    assert report["missed_frames"] and "stretch" not in report["chains"][0]
    assert not any(k.startswith('pose.bones["Wrist"].scale') for k in _paths(arm))


def _paths(arm):
    """Data paths of the armature's F-curves (layered actions on 4.4+, plain ones before)."""
    adt = arm.animation_data
    action = adt.action
    if hasattr(action, "layers") and action.layers:
        return {fc.data_path for fc in action.layers[0].strips[0].channelbag(adt.action_slot).fcurves}
    return {fc.data_path for fc in action.fcurves}


def test_live_posing_stretches_toward_a_target_beyond_reach_and_back(empty_scene):
    """Live posing with Stretch: the tip follows a target 0.4 m beyond reach, the bones scaled; back in reach,
    the bones return to their length."""
    arm = arm_of_three()
    target = bpy.data.objects.new("T", None)
    bpy.context.scene.collection.objects.link(target)
    target.location = (0.3, 0.3, 1.0)
    chain = arm.articulate.chains.add()
    chain.tip_bone, chain.chain_length, chain.target, chain.use_stretch = "Wrist", 3, target, True
    for name in ("Shoulder", "Elbow", "Wrist"):
        arm.pose.bones[name].ik_stretch = 0.7
    arm.articulate.live = True
    bpy.context.view_layer.update()
    for location, stretched in (((0.6, 0.6, 1.7), True), ((0.3, 0.3, 1.0), False)):
        target.location = location
        bpy.context.view_layer.update()
        bpy.context.view_layer.update()
        tip = np.array(arm.matrix_world @ arm.pose.bones["Wrist"].tail)
        assert np.linalg.norm(tip - np.array(location)) < 2e-4, (location, tip)
        scales = [arm.pose.bones[b].matrix.col[1].length for b in ("Shoulder", "Elbow", "Wrist")]
        assert (max(scales) > 1.05) == stretched, scales
        if not stretched:
            np.testing.assert_allclose(scales, 1.0, atol=1e-6)
    arm.articulate.live = False


def test_removing_a_chain_keeps_the_next_chains_influence_keys(empty_scene):
    """Influence keys are on the chains by index: removing chain 0 removes its keys and moves chain 1's down."""
    arm = arm_of_three()
    data = arm.articulate
    for name, values in (("A", (0.0, 1.0)), ("B", (0.25, 0.75))):
        chain = data.chains.add()
        chain.name = name
        for frame, value in zip((1, 10), values):
            chain.influence = value
            arm.keyframe_insert(f"articulate.chains[{len(data.chains) - 1}].influence", frame=frame)
    bpy.context.view_layer.objects.active = arm
    data.active_chain = 0
    assert bpy.ops.articulate.chain_remove() == {"FINISHED"}
    assert [c.name for c in data.chains] == ["B"]
    assert {p for p in _paths(arm) if p.startswith("articulate")} == {"articulate.chains[0].influence"}
    bpy.context.scene.frame_set(10)
    assert data.chains[0].influence == pytest.approx(0.75)
