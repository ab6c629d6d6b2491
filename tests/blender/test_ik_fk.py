# SPDX-License-Identifier: GPL-3.0-or-later
"""IK to FK and back (issue 15 item 2), on Rigify's generated human rig and on a plain rig with IK constraints.

Every check is by playback, and measured by these tests themselves (not the operators' reports):
the limb bones' heads and tails after the switch against where they were before it.
"""

import json

import bpy
import numpy as np
import parity_scenes as ps
import pytest
from test_honest_bakes import animated_target, arm_of_three

FRAMES = 40


@pytest.fixture(scope="module")
def rigify_blend(addon, blend_from_script):
    return blend_from_script(ps.RIGIFY_SCRIPT, "ik_fk_rigify", FRAMES)


def _open(path):
    rig = ps.open_rigify_rig(path, FRAMES)
    scene = bpy.context.scene
    scene.articulate.frame_range, scene.articulate.frame_start, scene.articulate.frame_end = "CUSTOM", 1, FRAMES
    return rig


def _switch_values(rig, frames):
    out = []
    for f in frames:
        bpy.context.scene.frame_set(f)
        out.append([rig.pose.bones[s]["IK_FK"] for s in ps.SWITCHES])
    return np.array(out)


def test_rigify_ik_to_fk_then_back(rigify_blend, tmp_path):
    """IK to FK on the generated human rig: with the switches keyed to FK, every hand, foot and limb bone plays
    within 1 mm of where the IK controls put it, on every frame; then FK to IK puts the IK controls back so the
    IK plays the FK pose within 1 mm, the switches keyed to IK. Keys outside the range keep the switch as it was."""
    rig = _open(rigify_blend)
    ik_points = ps.limb_points(rig, FRAMES)
    report_path = tmp_path / "ik_fk.json"
    assert bpy.ops.articulate.ik_to_fk(report_path=str(report_path)) == {"FINISHED"}
    report = json.loads(report_path.read_text())
    assert len(report["limbs"]) == 4
    np.testing.assert_allclose(_switch_values(rig, range(1, FRAMES + 1)), 1.0)
    fk_points = ps.limb_points(rig, FRAMES)
    err = np.linalg.norm(fk_points - ik_points, axis=-1)
    assert err.max() < 1e-3, err.max()
    # the report's numbers are playback's
    assert max(m["max_error_m"] for m in report["limbs"]) == pytest.approx(err.max(), abs=1e-5)
    # and back: take the IK controls' keys off and move them away, so only the placement can bring the IK
    # onto the FK pose
    for name in ("hand_ik.L", "foot_ik.R"):
        pb = rig.pose.bones[name]
        for f in range(1, FRAMES + 1):
            pb.keyframe_delete("location", frame=f)
        pb.location = (0.3, 0.2, 0.1)
    bpy.context.scene.frame_set(5)
    bpy.context.scene.frame_set(1)
    moved = ps.limb_points(rig, FRAMES)
    with_ik = np.linalg.norm(moved - fk_points, axis=-1).max()
    assert with_ik < 1e-6  # still FK: the switches are keyed to FK
    # what the moved controls would play in IK: far off, so the test below can fail
    for name in ps.SWITCHES:
        rig.pose.bones[name]["IK_FK"] = 0.0
    assert bpy.ops.articulate.fk_to_ik(report_path=str(report_path)) == {"FINISHED"}
    back = json.loads(report_path.read_text())
    np.testing.assert_allclose(_switch_values(rig, range(1, FRAMES + 1)), 0.0)
    ik_again = ps.limb_points(rig, FRAMES)
    err = np.linalg.norm(ik_again - fk_points, axis=-1)
    assert err.max() < 1e-3, (err.max(), back["notes"])


def test_rigify_switch_keys_stay_outside_the_range(rigify_blend):
    rig = _open(rigify_blend)
    scene = bpy.context.scene
    scene.articulate.frame_range, scene.articulate.frame_start, scene.articulate.frame_end = "CUSTOM", 10, 20
    assert bpy.ops.articulate.ik_to_fk() == {"FINISHED"}
    values = _switch_values(rig, [9, 10, 20, 21])
    np.testing.assert_allclose(values, [[0.0] * 4, [1.0] * 4, [1.0] * 4, [0.0] * 4])


def _plain_rig(use_pole: bool):
    arm = arm_of_three()
    target = animated_target("T", (0.5, 0.3, 0.9), (-0.2, 0.5, 1.0), FRAMES)
    con = arm.pose.bones["Wrist"].constraints.new("IK")
    con.target, con.chain_count = target, 2
    if use_pole:
        pole = bpy.data.objects.new("Pole", None)
        bpy.context.scene.collection.objects.link(pole)
        pole.location = (0.0, 1.0, 0.7)
        con.pole_target, con.pole_angle = pole, -1.5707963
    arm.pose.bones["Shoulder"].rotation_mode = "XYZ"
    for f in range(1, FRAMES + 1):  # the chain's parent moves too
        arm.pose.bones["Shoulder"].rotation_euler = (0.3 * np.sin(0.2 * f), 0.0, 0.2 * np.cos(0.15 * f))
        arm.pose.bones["Shoulder"].keyframe_insert("rotation_euler", frame=f)
    bpy.context.view_layer.objects.active = arm
    bpy.context.scene.articulate.frame_range = "CUSTOM"
    bpy.context.scene.articulate.frame_start, bpy.context.scene.articulate.frame_end = 1, FRAMES
    return arm, con


def _points(arm, names=("Elbow", "Wrist")):
    out = []
    for f in range(1, FRAMES + 1):
        bpy.context.scene.frame_set(f)
        out.append([tuple(arm.matrix_world @ getattr(arm.pose.bones[n], e)) for n in names for e in ("head", "tail")])
    return np.array(out)


@pytest.mark.parametrize("use_pole", [False, True])
def test_plain_ik_constraint_to_fk_and_back(empty_scene, use_pole):
    """A plain rig: IK to FK keys the chain bones to the IK's pose and the constraint's influence to 0 on the
    range; FK to IK moves the target (and turns the pole) so the IK plays the FK pose again, influence keyed to 1."""
    arm, con = _plain_rig(use_pole)
    ik = _points(arm)
    assert bpy.ops.articulate.ik_to_fk() == {"FINISHED"}
    fk = _points(arm)
    assert np.linalg.norm(fk - ik, axis=-1).max() < 1e-4
    for f in (1, FRAMES):
        bpy.context.scene.frame_set(f)
        assert con.influence == 0.0
    # move the target and the pole away: FK to IK must find them again
    target = con.target
    target.animation_data_clear()
    target.location = (1.0, 1.0, 0.0)
    if use_pole:
        con.pole_target.location = (0.5, -1.0, 0.2)
    assert bpy.ops.articulate.fk_to_ik() == {"FINISHED"}
    for f in (1, FRAMES):
        bpy.context.scene.frame_set(f)
        assert con.influence == 1.0
    back = _points(arm)
    assert np.linalg.norm(back - fk, axis=-1).max() < 1e-3


def test_nothing_to_switch_is_named(empty_scene):
    arm = arm_of_three()
    bpy.context.view_layer.objects.active = arm
    with pytest.raises(RuntimeError, match="no IK/FK pair"):
        bpy.ops.articulate.ik_to_fk()


def test_rigify_fk_to_ik_turns_the_poles_when_the_limbs_use_them(rigify_blend):
    """With the limbs' pole on (``pole_vector``), FK to IK places the hand and foot controls and turns each
    pole so the elbows and knees bend as in FK: the IK plays the FK pose within 1 mm."""
    rig = _open(rigify_blend)
    for name in ps.SWITCHES:
        rig.pose.bones[name]["pole_vector"] = True
    assert bpy.ops.articulate.ik_to_fk() == {"FINISHED"}
    fk_points = ps.limb_points(rig, FRAMES)
    for name in ("upper_arm_ik_target.L", "thigh_ik_target.R"):
        rig.pose.bones[name].location = (0.2, -0.3, 0.1)
    assert bpy.ops.articulate.fk_to_ik() == {"FINISHED"}
    err = np.linalg.norm(ps.limb_points(rig, FRAMES) - fk_points, axis=-1)
    assert err.max() < 1e-3, err.max()


# Found by dev/fuzz_body.py:

def _two_arms_through_a_spine():
    """Hips, Spine, Chest and two two-bone arms; the left arm's IK reaches the chest (3 bones), the right's the
    root (chain length 0: through the spine, sharing Chest with the left)."""
    scene = bpy.context.scene
    arm = ps.armature("Rig", [("Hips", (0, 0, 1.0), (0, 0, 1.1), None, False),
                              ("Spine", (0, 0, 1.1), (0, 0, 1.3), "Hips", True),
                              ("Chest", (0, 0, 1.3), (0, 0, 1.5), "Spine", True),
                              ("Arm.L", (0.2, 0, 1.45), (0.45, 0.02, 1.45), "Chest", False),
                              ("ForeArm.L", (0.45, 0.02, 1.45), (0.7, 0, 1.45), "Arm.L", True),
                              ("Arm.R", (-0.2, 0, 1.45), (-0.45, 0.02, 1.45), "Chest", False),
                              ("ForeArm.R", (-0.45, 0.02, 1.45), (-0.7, 0, 1.45), "Arm.R", True)])
    for side, x, count in (("L", 0.6, 3), ("R", -0.6, 0)):
        target = ps.empty(f"Target.{side}")
        ps.key_locations(target, np.array([(x, -0.1 * f, 1.3) for f in range(1, 5)]), range(1, 5))
        ps.add_ik(arm.pose.bones[f"ForeArm.{side}"], target, chain_count=count)
    scene.frame_start, scene.frame_end = 1, 4
    bpy.context.view_layer.objects.active = arm
    return arm


def test_ik_chains_sharing_bones_switch_to_fk_and_say_blender_may_flicker_there(empty_scene, tmp_path):
    """Two IK chains sharing the chest, one starting at it: IK to FK failed with a KeyError (the chest's parent
    was listed after it). Now it keys every FK bone on every frame, measures the match by playback, and its report
    says why that match can be off: Blender solves two IK constraints sharing bones from different roots in no set
    order (live, and on 5.0 muted too), so the pose it shows flickers between evaluations (CI saw this test's
    earlier, pose-comparing form fail one run in three)."""
    arm = _two_arms_through_a_spine()
    report = tmp_path / "switch.json"
    assert bpy.ops.articulate.ik_to_fk(use_scene_settings=False, frame_start=1, frame_end=4,
                                       report_path=str(report)) == {"FINISHED"}
    data = json.loads(report.read_text())
    assert [limb["limb"] for limb in data["limbs"]] == ["ForeArm.L: IK", "ForeArm.R: IK"]
    assert all(np.isfinite(limb["error_m"]).all() for limb in data["limbs"])
    assert any("in an order that can change between evaluations" in n and "share bones from Chest" in n
               for n in data["notes"])
    keyed = {fc.data_path.split('"')[1] for fc in ps._fcurves(arm) if len(fc.keyframe_points) >= 4}
    assert {"Spine", "Chest", "Arm.L", "ForeArm.L", "Arm.R", "ForeArm.R"} <= keyed


def test_an_ik_target_with_nan_keys_is_refused_naming_the_frames(empty_scene):
    """A target keyed NaN on frame 2 (a tracker's dropout): IK to FK stopped with an unexpected InvalidInputError or
    a singular matrix. Now it refuses, naming frame 2 and what to do, and keys nothing."""
    arm = _two_arms_through_a_spine()
    target = bpy.data.objects["Target.L"]
    target.location = (float("nan"),) * 3
    target.keyframe_insert("location", frame=2)
    with pytest.raises(RuntimeError, match=r"the IK pose is not a number on frame\(s\) 2 \(an IK target or pole "
                                           r"with NaN keys there") as refused:
        bpy.ops.articulate.ik_to_fk(use_scene_settings=False, frame_start=1, frame_end=4)
    assert "unexpected" not in str(refused.value)
    assert arm.animation_data is None or arm.animation_data.action is None
