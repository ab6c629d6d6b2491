# SPDX-License-Identifier: GPL-3.0-or-later
"""Aim chains: a spine, neck and head baked to look at a moving target, checked by playing the keys back."""

import json
import math

import aim_scenes as aims
import bpy
import numpy as np
import pytest
from mathutils import Matrix

FRAMES = 48
BEHIND = range(38, 43)  # frames whose target is behind the head: beyond the limits


@pytest.fixture
def axes(addon):
    return aims.axes(addon)


@pytest.fixture
def rig(empty_scene, addon):
    """Spine, neck and head pointing up, limited by Blender IK limits (swing cone, twist range); an animated target."""
    arm, target, front = aims.build_look_rig(addon, aims.target_path(FRAMES, behind=BEHIND))
    chain = arm.articulate.chains.add()
    chain.name, chain.tip_bone, chain.chain_length, chain.target = "Look", "Head", 3, target
    chain.mode, chain.aim_axis, chain.up_axis, chain.aim_spread = "AIM", front, "Y", 0.5
    return arm, target, chain


def _bake(tmp_path) -> dict:
    path = tmp_path / "report.json"
    assert bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=FRAMES,
                                   report_path=str(path)) == {"FINISHED"}
    return json.loads(path.read_text())


def _played(arm, target, chain, axes):
    """Per frame, as playback shows it: head origin, aim axis, up axis (bone Y), target, and each bone's basis."""
    return aims.playback(arm, target, axes[chain.aim_axis], FRAMES)


def test_baked_head_looks_at_the_target_within_its_limits(rig, axes, tmp_path):
    """Playback: the head's aim axis points at the target within 0.1 degree wherever the limits allow; the
    frames behind the head are reported missed with a reason; every bone stays inside its swing cone."""
    arm, target, chain = rig
    report = _bake(tmp_path)
    entry = report["chains"][0]
    assert report["measured_by"] == "playback" and entry["mode"] == "aim" and entry["solver"] == "aim"
    played = _played(arm, target, chain, axes)
    err = aims.angle(played["aim"], played["target"] - played["origin"])
    behind = np.array([f in BEHIND for f in range(1, FRAMES + 1)])
    assert np.degrees(err[~behind]).max() < 0.1
    assert np.all(np.degrees(err[behind]) > 20.0)
    assert entry["converged"] == (~behind).tolist()
    assert report["missed_frames"] == list(BEHIND)
    for k in np.flatnonzero(behind):
        assert entry["reasons"][k].startswith("limits stop the aim") and "deg short" in entry["reasons"][k]
    # The report's aim angles are what playback shows (float32 evaluation aside).
    np.testing.assert_allclose(entry["aim_error_rad"], err, atol=1e-5)
    for b, (name, deg) in enumerate(aims.SWING_DEG.items()):
        swing = aims.angle(played["basis"][:, b, :, 1], np.array([0.0, 1.0, 0.0]))
        assert np.degrees(swing).max() <= deg + 1e-3, name
        q = np.array([Matrix(R.tolist()).to_quaternion() for R in played["basis"][:, b]])
        twist = 2.0 * np.arctan2(q[:, 2], q[:, 0])  # swing-twist: the twist about Y
        twist = (twist + np.pi) % (2 * np.pi) - np.pi
        assert np.degrees(np.abs(twist)).max() <= aims.TWIST_DEG[name] + 1e-3, name
    assert max(np.degrees(aims.angle(played["basis"][:, b, :, 1], np.array([0.0, 1.0, 0.0]))).max()
               for b in range(3)) > 15.0  # the limits were reached


def test_up_axis_keeps_the_head_from_rolling(rig, axes, tmp_path):
    """With up axis +Y (the top of the head) the head's top turns toward world up; without it, it rolls."""
    arm, target, chain = rig
    report = _bake(tmp_path)
    played = _played(arm, target, chain, axes)
    reachable = np.array([f not in BEHIND for f in range(1, FRAMES + 1)])
    roll = aims.roll_error(played)
    assert np.degrees(roll[reachable]).max() < 0.1
    np.testing.assert_allclose(np.array(report["chains"][0]["up_error_rad"])[reachable], roll[reachable], atol=1e-5)
    chain.up_axis = "NONE"
    _bake(tmp_path)
    free = _played(arm, target, chain, axes)
    assert np.degrees(aims.roll_error(free)[reachable]).max() > 0.5


def test_up_target_turns_the_up_axis_toward_an_object(rig, axes, tmp_path):
    """An Up Target: the head's up axis turns toward the direction from the head to that object."""
    arm, target, chain = rig
    up = bpy.data.objects.new("Up", None)
    bpy.context.scene.collection.objects.link(up)
    up.location = (0.4, -1.0, 3.5)  # above and to the side: the head rolls about 12 degrees toward it
    chain.up_target = up
    report = _bake(tmp_path)
    played = _played(arm, target, chain, axes)
    d = played["aim"] / np.linalg.norm(played["aim"], axis=-1, keepdims=True)
    v = np.array(up.location) - played["origin"]
    want = v - np.sum(v * d, axis=-1, keepdims=True) * d
    reachable = np.array([f not in BEHIND for f in range(1, FRAMES + 1)])
    assert np.degrees(aims.angle(played["up"], want)[reachable]).max() < 0.1
    assert np.degrees(aims.roll_error(played)[reachable]).max() > 10.0  # not world up: rolled toward the object
    assert report["chains"][0]["up_target"] == "Up"


def test_a_second_bake_keys_the_same_poses(rig, axes, tmp_path):
    """Every frame turns from the rest pose, not from the keys a bake left: baking twice changes nothing."""
    arm, target, chain = rig
    _bake(tmp_path)
    first = _played(arm, target, chain, axes)["basis"]
    _bake(tmp_path)
    np.testing.assert_allclose(_played(arm, target, chain, axes)["basis"], first, atol=1e-6)


def test_influence_turns_each_bone_part_of_the_way(rig, axes, tmp_path):
    """Influence 0.5: every bone turns half the angle it turns at full influence; playback shows the blend."""
    arm, target, chain = rig
    chain.up_axis = "NONE"
    _bake(tmp_path)
    full = _played(arm, target, chain, axes)
    chain.influence = 0.5
    report = _bake(tmp_path)
    half = _played(arm, target, chain, axes)
    angle_full = np.arccos(np.clip((np.trace(full["basis"], axis1=-2, axis2=-1) - 1) / 2, -1, 1))
    angle_half = np.arccos(np.clip((np.trace(half["basis"], axis1=-2, axis2=-1) - 1) / 2, -1, 1))
    np.testing.assert_allclose(angle_half, 0.5 * angle_full, atol=1e-4)
    entry = report["chains"][0]
    assert entry["influence"] == [0.5] * FRAMES
    reachable = np.array([f not in BEHIND for f in range(1, FRAMES + 1)])
    assert np.array(entry["converged"])[reachable].all()
    # Measured against where the blended aim points, not the target, which the head now misses.
    assert max(np.array(entry["aim_error_rad"])[reachable]) < 1e-4
    err = aims.angle(half["aim"], half["target"] - half["origin"])
    assert np.degrees(err[reachable]).max() > 10.0


def test_reduced_keys_keep_the_aim(rig, axes, tmp_path):
    """Reduce Keys on an aim chain: fewer keys, and playback still aims within the tolerance it reports."""
    arm, target, chain = rig
    chain.aim_tolerance = math.radians(0.05)
    path = tmp_path / "reduced.json"
    assert bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=FRAMES, key_tolerance=0.001,
                                   report_path=str(path)) == {"FINISHED"}
    report = json.loads(path.read_text())
    assert report["key_reduction"]["keys_after"] < report["key_reduction"]["keys_before"]
    played = _played(arm, target, chain, axes)
    err = aims.angle(played["aim"], played["target"] - played["origin"])
    entry = report["chains"][0]
    np.testing.assert_allclose(entry["aim_error_rad"], err, atol=1e-5)
    reached = np.array(entry["converged"])
    # Judged against the aim tolerance plus what the key tolerance allows at the head's length.
    assert chain.aim_tolerance < entry["aim_tolerance_rad"] < chain.aim_tolerance + 0.011
    assert reached.sum() == FRAMES - len(BEHIND)
    assert np.all(err[reached] <= entry["aim_tolerance_rad"] + 1e-6)


def test_solve_current_frame_aims_without_keys(rig, axes):
    arm, target, chain = rig
    bpy.context.scene.frame_set(10)
    assert bpy.ops.articulate.solve_frame() == {"FINISHED"}
    bpy.context.view_layer.update()
    M = np.array(arm.matrix_world @ arm.pose.bones["Head"].matrix)
    aim = M[:3, :3] @ np.array(axes[chain.aim_axis], dtype=float)
    assert np.degrees(aims.angle(aim, np.array(target.matrix_world.translation) - M[:3, 3])) < 0.1
    assert arm.animation_data is None or arm.animation_data.action is None


def test_an_up_axis_along_the_aim_axis_is_refused(rig):
    arm, _target, chain = rig
    chain.up_axis = chain.aim_axis
    with pytest.raises(RuntimeError, match="lies along the aim axis"):
        bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=5)


def test_live_posing_aims_the_head(rig, axes):
    """With Live on, moving the target turns the head toward it (no frame change, no operator)."""
    arm, target, chain = rig
    target.animation_data_clear()
    arm.articulate.live = True
    aim_local = np.array(axes[chain.aim_axis], dtype=float)
    for place in ((0.8, -2.0, 2.0), (-1.0, -1.5, 1.2)):
        target.location = place
        bpy.context.view_layer.update()
        M = np.array(arm.matrix_world @ arm.pose.bones["Head"].matrix)
        err = aims.angle(M[:3, :3] @ aim_local, np.array(place) - M[:3, 3])
        assert np.degrees(err) < 0.1
        assert np.degrees(aims.roll_error({"aim": (M[:3, :3] @ aim_local)[None], "up": M[None, :3, 1]})[0]) < 0.1


class _Layout:
    """Records what a panel draws, checking each property name exists."""

    def __init__(self, log):
        self.log = log
        self.active = True
        self.use_property_split = False

    def prop(self, data, name, **_kw):
        assert name in data.bl_rna.properties, name
        self.log.append(name)

    def prop_search(self, data, name, *_args, **_kw):
        self.prop(data, name)

    def __getattr__(self, _name):
        return lambda *a, **k: self


def test_the_chain_panel_shows_aim_settings_in_aim_mode(rig):
    arm, _target, chain = rig
    log = []
    bpy.types.ARTICULATE_PT_chain.draw(type("P", (), {"layout": _Layout(log)})(), bpy.context)
    assert {"aim_axis", "up_axis", "up_target", "aim_spread", "aim_tolerance"} <= set(log) and "pole" not in log
    chain.mode = "REACH"
    log.clear()
    bpy.types.ARTICULATE_PT_chain.draw(type("P", (), {"layout": _Layout(log)})(), bpy.context)
    assert "aim_axis" not in log and "pole" in log


def test_a_turret_of_two_hinges_tracks_a_target_all_around(empty_scene, addon_module, tmp_path):
    """A yaw hinge carrying a pitch hinge limited to +/-45 degrees: the barrel follows a target circling it,
    the hinges stay hinges, and frames whose elevation is beyond the pitch limit are reported missed."""
    bridge = addon_module("operators.bridge")
    compat = addon_module("operators.compat")
    arm = bridge.create_armature("Turret", np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.5]]),
                                 np.array([[0.0, 0.0, 0.5], [0.0, -1.0, 0.5]]), [-1, 0], ["Base", "Barrel"])
    base, barrel = arm.pose.bones["Base"], arm.pose.bones["Barrel"]
    base.lock_ik_x = base.lock_ik_z = True  # yaw about its Y (up)
    barrel.lock_ik_y = barrel.lock_ik_z = True  # pitch about its X
    barrel.use_ik_limit_x, barrel.ik_min_x, barrel.ik_max_x = True, -math.radians(45.0), math.radians(45.0)
    n = 48
    azimuth = np.linspace(0.0, 2.0 * np.pi, n)  # once around, through the back
    elevation = np.radians(30.0) * np.sin(3.0 * azimuth)
    high = np.arange(n) % 12 == 5  # four frames far above the pitch limit
    elevation[high] = np.radians(75.0)
    path = np.array([0.0, 0.0, 0.5]) + 4.0 * np.stack(
        [np.sin(azimuth) * np.cos(elevation), -np.cos(azimuth) * np.cos(elevation), np.sin(elevation)], axis=1)
    target = bpy.data.objects.new("Plane", None)
    empty_scene.collection.objects.link(target)
    compat.write_channels(target, [compat.Channel("location", i, "Object Transforms") for i in range(3)],
                          np.arange(1.0, n + 1.0), path)
    chain = arm.articulate.chains.add()
    chain.name, chain.tip_bone, chain.chain_length, chain.target = "Aim", "Barrel", 2, target
    chain.mode, chain.aim_axis, chain.aim_spread = "AIM", "Y", 1.0
    bpy.context.view_layer.objects.active = arm
    report_path = tmp_path / "turret.json"
    assert bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=n,
                                   report_path=str(report_path)) == {"FINISHED"}
    entry = json.loads(report_path.read_text())["chains"][0]
    assert entry["converged"] == (~high).tolist()
    assert all("deg short" in entry["reasons"][k] for k in np.flatnonzero(high))
    scene = bpy.context.scene
    err, yaw_steps, previous = [], [], None
    for f in range(1, n + 1):
        scene.frame_set(f)
        M = np.array(arm.matrix_world @ barrel.matrix)
        err.append(aims.angle(M[:3, 1], path[f - 1] - M[:3, 3]))
        Rb, Rp = np.array(base.matrix_basis)[:3, :3], np.array(barrel.matrix_basis)[:3, :3]
        np.testing.assert_allclose(Rb[:, 1], (0, 1, 0), atol=1e-5)  # a hinge about Y
        np.testing.assert_allclose(Rp[:, 0], (1, 0, 0), atol=1e-5)  # a hinge about X
        assert abs(math.degrees(math.atan2(Rp[2, 1], Rp[1, 1]))) <= 45.0 + 1e-3
        if previous is not None:
            yaw_steps.append(aims.angle(Rb[:, 0], previous[:, 0]))
        previous = Rb
    err = np.degrees(np.array(err))
    assert err[~high].max() < 0.1
    assert np.all(err[high] > 25.0)
    # Through the back the yaw keeps turning the same way: no frame turns much more than 360/47 degrees.
    assert np.degrees(max(yaw_steps)) < 2.0 * 360.0 / (n - 1)


def test_eyes_aim_from_the_baked_head(empty_scene, addon, addon_module, axes, tmp_path):
    """Two eye chains hang from a head chain: they are solved after it, from the head as baked, and hit the target."""
    bridge = addon_module("operators.bridge")
    compat = addon_module("operators.compat")
    heads = np.array([[0.0, 0.0, 1.4], [0.0, 0.0, 1.55], [0.035, -0.09, 1.65], [-0.035, -0.09, 1.65]])
    tails = np.array([[0.0, 0.0, 1.55], [0.0, 0.0, 1.75], [0.035, -0.11, 1.65], [-0.035, -0.11, 1.65]])
    arm = bridge.create_armature("Face", heads, tails, [-1, 0, 1, 1], ["Neck", "Head", "Eye.L", "Eye.R"])
    for name, deg in (("Neck", 15.0), ("Head", 20.0), ("Eye.L", 30.0), ("Eye.R", 30.0)):
        pb = arm.pose.bones[name]
        for axis in "xyz":
            setattr(pb, f"use_ik_limit_{axis}", True)
            setattr(pb, f"ik_min_{axis}", -math.radians(deg))
            setattr(pb, f"ik_max_{axis}", math.radians(deg))
    target = bpy.data.objects.new("Fly", None)
    empty_scene.collection.objects.link(target)
    n = 24
    t = np.linspace(0.0, 2.0 * np.pi, n)
    path = np.stack([0.6 * np.sin(t), -1.2 + 0.3 * np.cos(t), 1.65 + 0.3 * np.sin(2.0 * t)], axis=1)
    compat.write_channels(target, [compat.Channel("location", i, "Object Transforms") for i in range(3)],
                          np.arange(1.0, n + 1.0), path)
    front = aims.front_axis(addon, arm)
    for tip, length, axis in (("Head", 2, front), ("Eye.L", 1, "Y"), ("Eye.R", 1, "Y")):
        chain = arm.articulate.chains.add()
        chain.name, chain.tip_bone, chain.chain_length, chain.target = tip, tip, length, target
        chain.mode, chain.aim_axis, chain.aim_spread = "AIM", axis, 0.5
    bpy.context.view_layer.objects.active = arm
    path_json = tmp_path / "eyes.json"
    assert bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=n,
                                   report_path=str(path_json)) == {"FINISHED"}
    report = json.loads(path_json.read_text())
    assert report["missed_frames"] == []
    head_turn, eye_err = [], []
    for f in range(1, n + 1):
        bpy.context.scene.frame_set(f)
        goal = np.array(target.matrix_world.translation)
        for eye in ("Eye.L", "Eye.R"):
            M = np.array(arm.matrix_world @ arm.pose.bones[eye].matrix)
            eye_err.append(aims.angle(M[:3, 1], goal - M[:3, 3]))
        M = np.array(arm.matrix_world @ arm.pose.bones["Head"].matrix)
        head_turn.append(aims.angle(M[:3, :3] @ np.array(axes[front], dtype=float), np.array([0.0, -1.0, 0.0])))
    assert np.degrees(max(eye_err)) < 0.1
    assert np.degrees(max(head_turn)) > 15.0  # the head turned too: the eyes aimed from where it was keyed
