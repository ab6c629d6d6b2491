# SPDX-License-Identifier: GPL-3.0-or-later
"""The action compat module writes bulk keys that Blender evaluates back exactly, on every version."""

import bpy
import numpy as np
import pytest

EULER_ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")


@pytest.fixture
def rig(empty_scene, addon_module):
    """A 7-bone chain armature."""
    bridge = addon_module("operators.bridge")
    heads = np.array([[0.0, 0.0, z] for z in range(7)]) * 0.3
    tails = heads + [0.0, 0.0, 0.3]
    return bridge.create_armature("Rig", heads, tails, [-1, 0, 1, 2, 3, 4, 5])


def _evaluate(fcurves, frames):
    return np.array([[fc.evaluate(f) for fc in fcurves] for f in frames])


def test_quaternion_keys_round_trip_through_evaluate_and_frame_set(rig, addon_module):
    """Keys written in bulk evaluate to the written values, and frame_set poses the bone with them."""
    compat = addon_module("operators.compat")
    rng = np.random.default_rng(0)
    frames = np.arange(1.0, 51.0)
    q = rng.normal(size=(50, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    curves = compat.write_channels(rig, compat.bone_channels("Bone.002", "rotation_quaternion", 4), frames, q)
    assert len(curves) == 4
    np.testing.assert_allclose(_evaluate(curves, frames), q, atol=1e-6)
    scene = bpy.context.scene
    for f in (1, 17, 50):
        scene.frame_set(f)
        np.testing.assert_allclose(rig.pose.bones["Bone.002"].rotation_quaternion, q[f - 1], atol=1e-6)


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_euler_keys_for_every_order(rig, addon_module, order):
    """Euler channels are written and read back for each of Blender's six orders."""
    compat = addon_module("operators.compat")
    pb = rig.pose.bones["Bone.004"]
    pb.rotation_mode = order
    frames = np.arange(10.0, 30.0)
    e = np.random.default_rng(1).uniform(-3, 3, size=(20, 3))
    compat.write_channels(rig, compat.bone_channels(pb.name, "rotation_euler", 3), frames, e)
    bpy.context.scene.frame_set(15)
    np.testing.assert_allclose(tuple(pb.rotation_euler), e[5], atol=1e-5)
    assert pb.rotation_euler.order == order


def test_location_and_scale_channels_grouped_by_bone(rig, addon_module):
    """Location and scale curves exist, evaluate correctly, and sit in a group named after the bone."""
    compat = addon_module("operators.compat")
    frames = np.arange(1.0, 11.0)
    loc = np.linspace([0, 0, 0], [1, 2, 3], 10)
    scale = np.linspace([1, 1, 1], [2, 0.5, 3], 10)
    channels = compat.bone_channels("Bone.000", "location", 3) + compat.bone_channels("Bone.001", "scale", 3)
    curves = compat.write_channels(rig, channels, frames, np.hstack([loc, scale]))
    assert [fc.group.name for fc in curves] == ["Bone.000"] * 3 + ["Bone.001"] * 3
    bpy.context.scene.frame_set(10)
    np.testing.assert_allclose(tuple(rig.pose.bones["Bone.000"].location), [1, 2, 3], atol=1e-6)
    np.testing.assert_allclose(tuple(rig.pose.bones["Bone.001"].scale), [2, 0.5, 3], atol=1e-6)
    assert {fc.data_path for fc in compat.iter_fcurves(rig)} == {c.data_path for c in channels}


def test_replacing_a_range_keeps_keys_outside_untouched(rig, addon_module):
    """Writing frames 40-60 replaces only those keys; keys outside keep value, handles and interpolation."""
    compat = addon_module("operators.compat")
    channel = compat.bone_channels("Bone.003", "location", 1)
    frames = np.arange(1.0, 101.0)
    (fc,) = compat.write_channels(rig, channel, frames, np.sin(frames)[:, None], interpolation="BEZIER")
    kp = fc.keyframe_points[9]  # frame 10, outside the range replaced below
    kp.interpolation = "CONSTANT"
    kp.handle_left_type = kp.handle_right_type = "FREE"
    kp.handle_left = (9.5, 5.0)
    fc.update()

    def outside():
        # Auto handles follow their neighbours, so compare what a user set: value, frame,
        # interpolation, handle types, and the free handle itself.
        return [(k.co[0], k.co[1], k.interpolation, k.handle_left_type, k.handle_right_type)
                for k in fc.keyframe_points if not 40 <= k.co[0] <= 60]

    before = outside()
    new_frames = np.arange(40.0, 61.0, 2.0)
    compat.write_channels(rig, channel, new_frames, np.full((len(new_frames), 1), 7.0), replace=(40, 60))
    assert outside() == before
    assert tuple(fc.keyframe_points[9].handle_left) == pytest.approx((9.5, 5.0))
    inside = [(k.co[0], k.co[1]) for k in fc.keyframe_points if 40 <= k.co[0] <= 60]
    assert inside == [(f, 7.0) for f in new_frames]
    assert len(fc.keyframe_points) == 100 - 21 + len(new_frames)
    assert fc.evaluate(50) == pytest.approx(7.0)


def test_clear_range_removes_only_that_range(rig, addon_module):
    """clear_range deletes keys inside the range on every curve and nothing else."""
    compat = addon_module("operators.compat")
    frames = np.arange(1.0, 21.0)
    compat.write_channels(rig, compat.bone_channels("Bone.001", "location", 3), frames, np.ones((20, 3)))
    removed = compat.clear_range(rig, 5, 9)
    assert removed == 3 * 5
    for fc in compat.iter_fcurves(rig):
        assert [k.co[0] for k in fc.keyframe_points] == [f for f in frames if not 5 <= f <= 9]


def test_uses_the_version_specific_storage(rig, addon_module):
    """On 5.0 curves live in a slot's channelbag (no Action.fcurves); before 4.4 on the action."""
    compat = addon_module("operators.compat")
    compat.write_channels(rig, compat.bone_channels("Bone.000", "scale", 3), [1.0, 2.0], np.ones((2, 3)))
    action = rig.animation_data.action
    if bpy.app.version >= (5, 0, 0):
        assert not hasattr(action, "fcurves")
    if bpy.app.version >= (4, 4, 0):
        assert rig.animation_data.action_slot is not None
        assert len(action.layers[0].strips[0].channelbag(rig.animation_data.action_slot).fcurves) == 3
    else:
        assert len(action.fcurves) == 3


def test_bad_shapes_are_rejected(rig, addon_module):
    """Mismatched values or unsorted frames raise a clear ValueError before anything is written."""
    compat = addon_module("operators.compat")
    channels = compat.bone_channels("Bone.000", "location", 3)
    with pytest.raises(ValueError, match="shape"):
        compat.write_channels(rig, channels, [1.0, 2.0], np.ones((2, 2)))
    with pytest.raises(ValueError, match="increasing"):
        compat.write_channels(rig, channels, [2.0, 1.0], np.ones((2, 3)))
    assert compat.iter_fcurves(rig) == []
