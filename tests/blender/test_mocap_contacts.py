# SPDX-License-Identifier: GPL-3.0-or-later
"""Motion capture onto a rig of other proportions (issue 27, item 5): planted feet skate less, stay above the floor.

CMU take 131_01 (walk, 995 frames at 120 Hz) imported by Blender's own BVH importer; a character
with other proportions (Rigify's basic human metarig, legs 1.23 times the capture's; or the
capture's skeleton with legs 1.1 times as long) follows it: its hips copy the capture's hips
scaled by the leg ratio (through an anchor placed so the hip joints coincide), each leg is a
two-bone chain whose target follows the capture's ankle scaled by the same ratio, its foot bone
(``foot.L``; ``LeftAnkle``, whose tail is the ``LeftToe`` joint) found below the shin and keyed
to turn as the capture's foot does. Detect
Contacts and a bake with contacts (Lower Hips on the anchor) then plant the ankles and the balls
of the feet.
"""

import json

import bpy
import numpy as np
import pytest
from data_files import data_file

# Built in a child process: enabling Rigify in this one makes bpy 4.2 segfault and 4.5 hang at exit.
_SCENE = """
import os, sys

import bpy
import addon_utils
import numpy as np

path, bvh, kind = sys.argv[1:4]
bpy.ops.wm.read_homefile(use_empty=True)
bpy.ops.import_anim.bvh(filepath=bvh, axis_forward="-Z", axis_up="Y", update_scene_duration=True,
                        update_scene_fps=True)
capture = bpy.context.object
capture.name = "Capture"
rigify = kind == "rigify"
if rigify:
    addon_utils.enable("rigify", default_set=True)
    bpy.ops.object.armature_basic_human_metarig_add()
    character = bpy.context.object
    names = {"hips": "spine", "thigh.L": "thigh.L", "shin.L": "shin.L", "thigh.R": "thigh.R", "shin.R": "shin.R"}
else:
    character = capture.copy()
    character.data = capture.data.copy()
    character.animation_data_clear()
    bpy.context.scene.collection.objects.link(character)
    names = {"hips": "Hips", "thigh.L": "LeftHip", "shin.L": "LeftKnee", "thigh.R": "RightHip", "shin.R": "RightKnee"}
character.name = "Character"
cap = {"hips": "Hips", "thigh.L": "LeftHip", "shin.L": "LeftKnee", "thigh.R": "RightHip", "shin.R": "RightKnee"}
bones = capture.data.bones
leg_capture = bones["LeftHip"].length + bones["LeftKnee"].length
if not rigify:  # other proportions: legs 1.1 times as long
    bpy.context.view_layer.objects.active = character
    bpy.ops.object.mode_set(mode="EDIT")
    eb = character.data.edit_bones
    for side in ("Left", "Right"):
        chain = [eb[f"{side}Hip"], eb[f"{side}Knee"], eb[f"{side}Ankle"], eb[f"{side}Toe"]]
        shift = None
        for k, b in enumerate(chain):
            if shift is not None:
                b.head = b.head + shift
                b.tail = b.tail + shift
            if k < 2:
                old = b.tail.copy()
                b.tail = b.head + (b.tail - b.head) * 1.1
                shift = (b.tail - old) + (shift if shift is not None else 0 * old)
    bpy.ops.object.mode_set(mode="OBJECT")
cbones = character.data.bones
ratio = (cbones[names["thigh.L"]].length + cbones[names["shin.L"]].length) / leg_capture
scaler = bpy.data.objects.new("Capture Scale", None)
scaler.scale = (ratio,) * 3
bpy.context.scene.collection.objects.link(scaler)


def follower(name, bone):
    obj = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(obj)
    obj.parent = scaler
    con = obj.constraints.new("COPY_LOCATION")
    con.target, con.subtarget, con.target_space, con.owner_space = capture, bone, "WORLD", "LOCAL"
    return obj


hips_proxy = follower("Hips Proxy", "Hips")
# The character's hips follow the capture's, scaled, placed so the hip joints (the thighs' heads) coincide
# at rest: an anchor under the proxy, offset by the difference of the two rigs' hips-to-hip-joints vectors.
def mid_hips(arm, hips, left, right):
    b = arm.data.bones
    return np.array(b[hips].head_local), (np.array(b[left].head_local) + np.array(b[right].head_local)) / 2

s_c, m_c = mid_hips(character, names["hips"], names["thigh.L"], names["thigh.R"])
h_k, m_k = mid_hips(capture, "Hips", "LeftHip", "RightHip")
anchor = bpy.data.objects.new("Hips Anchor", None)
bpy.context.scene.collection.objects.link(anchor)
anchor.parent = hips_proxy
anchor.location = ((s_c - m_c) - ratio * (h_k - m_k)) / ratio
pb = character.pose.bones[names["hips"]]
con = pb.constraints.new("COPY_LOCATION")  # Lower Hips keys the anchor's location
con.target = anchor
con = pb.constraints.new("COPY_ROTATION")
con.target, con.subtarget = capture, "Hips"
for side, bside in (("L", "Left"), ("R", "Right")):
    follower(f"Foot Target.{side}", f"{bside}Ankle")
# The feet turn as the capture's do (both bones point from the ankle to the ball): keyed by visual keying of a
# world-space Copy Rotation, which the bake then removes, so the keys alone turn the feet, as in a retarget.
feet = ("foot.L", "foot.R") if rigify else ("LeftAnkle", "RightAnkle")
bpy.context.view_layer.objects.active = character
bpy.ops.object.mode_set(mode="POSE")
bpy.ops.pose.select_all(action="DESELECT")
for foot, bside in zip(feet, ("Left", "Right")):
    pb = character.pose.bones[foot]
    con = pb.constraints.new("COPY_ROTATION")
    con.target, con.subtarget = capture, f"{bside}Ankle"
    if hasattr(pb, "select"):
        pb.select = True
    else:
        pb.bone.select = True
bpy.ops.nla.bake(frame_start=1, frame_end=995, only_selected=True, visual_keying=True, clear_constraints=True,
                 bake_types={"POSE"})
bpy.ops.object.mode_set(mode="OBJECT")
bpy.context.scene["articulate_test"] = {"ratio": ratio, "shin_l": names["shin.L"], "shin_r": names["shin.R"],
                                        "foot_l": feet[0], "foot_r": feet[1]}
bpy.ops.wm.save_as_mainfile(filepath=path)
sys.stdout.flush()
os._exit(0)
"""


def _rigify_available() -> bool:
    import addon_utils

    return any(m.__name__ == "rigify" for m in addon_utils.modules())


@pytest.fixture(scope="module", params=["rigify", "generated"])
def mocap_blend(request, addon, blend_from_script):
    """The capture and the character, saved (a Rigify metarig where Blender bundles Rigify)."""
    if request.param == "rigify" and not _rigify_available():
        pytest.skip("this Blender has no Rigify: the generated character stands in")
    return blend_from_script(_SCENE, f"mocap_{request.param}", data_file("mocap", "cmu_131_01.bvh"),
                             request.param)


def _played(character, feet: list[str], targets: list) -> tuple[np.ndarray, np.ndarray]:
    """(F, N, 4, 4) the feet's world frames and (F, N, 3) their targets' positions over frames 1-995."""
    scene = bpy.context.scene
    frames, aims = [], []
    for f in range(1, 996):
        scene.frame_set(f)
        frames.append([np.array(character.matrix_world @ character.pose.bones[n].matrix) for n in feet])
        aims.append([np.array(t.matrix_world.translation) for t in targets])
    return np.array(frames).transpose(1, 0, 2, 3), np.array(aims).transpose(1, 0, 2)


def _line(label: str, m: dict) -> str:
    """One joint's skate ratio, weighted skate and penetration before -> after."""
    before, after = m["before"], m["after"]
    return (f"{label}: skate ratio {before['skate_ratio']:.3%} -> {after['skate_ratio']:.3%}, skate "
            f"{before['skate_m_per_frame'] * 1e3:.3g} -> {after['skate_m_per_frame'] * 1e3:.3g} mm/frame, "
            f"penetration {before['penetration_m'] * 1e3:.3g} -> {after['penetration_m'] * 1e3:.3g} mm")


def _inside(intervals, frames: np.ndarray) -> np.ndarray:
    return np.any([(frames >= a) & (frames <= b) for a, b in intervals], axis=0)


@pytest.mark.slow
def test_planted_mocap_feet_skate_less_and_stay_above_the_floor(mocap_blend, tmp_path):
    """Per foot chain: contacts found on the walk; at the ankle and at the ball of the foot (its foot bone found
    below the shin) the skate ratio over the contacts is at most 0.5 % (at the ankle it never rises), the weighted
    skate falls, the penetration below the rest height is at most 1 mm (the capture's own dips are several); every
    missed frame lies outside the contacts, and outside both joints' contacts the foot keeps its rotation."""
    bpy.ops.wm.open_mainfile(filepath=str(mocap_blend))
    scene = bpy.context.scene
    info = scene["articulate_test"]
    character = bpy.data.objects["Character"]
    feet = [info["foot_l"], info["foot_r"]]
    targets = [bpy.data.objects[f"Foot Target.{side}"] for side in "LR"]
    feet_before, _aims = _played(character, feet, targets)
    bpy.context.view_layer.objects.active = character
    for side in "LR":
        chain = character.articulate.chains.add()
        chain.name, chain.tip_bone, chain.chain_length = f"Foot.{side}", info[f"shin_{side.lower()}"], 2
        chain.target, chain.hips = bpy.data.objects[f"Foot Target.{side}"], bpy.data.objects["Hips Anchor"]
        chain.rest_height_auto = True
        assert bpy.ops.articulate.contacts_detect(use_scene_settings=False, frame_start=1, frame_end=995,
                                                  chain=chain.name) == {"FINISHED"}
        assert len(chain.contacts) >= 5
    report_path = tmp_path / "report.json"
    assert bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=995,
                                   report_path=str(report_path)) == {"FINISHED"}
    report = json.loads(report_path.read_text())
    lines = []
    for entry in report["chains"]:
        contacts = entry["contacts"]
        before, after = contacts["before"], contacts["after"]
        lines.append(_line(entry["chain"], contacts))
        # Contacts start under 10 cm/s, so the animated target rarely slides over them already: the share of
        # contact frames sliding never rises and meets issue 27's chain-bake goal; the weighted skate falls.
        assert after["skate_ratio"] <= min(before["skate_ratio"], 0.005), lines[-1]
        assert after["skate_m_per_frame"] < before["skate_m_per_frame"], lines[-1]
        assert after["penetration_m"] <= 1e-3 < before["penetration_m"], lines[-1]
        inside = [f for f in entry["missed_frames"] if any(a <= f <= b for a, b in contacts["intervals"])]
        assert not inside, f"{entry['chain']}: contact frames missed: {inside[:10]}"
        ball = contacts["ball"]
        before, after = ball["before"], ball["after"]
        lines.append(_line(f"{entry['chain']} ball ({ball['bone']})", ball))
        assert ball["bone"] == feet["LR".index(entry["chain"][-1])], lines[-1]
        assert after["skate_ratio"] <= 0.005 and after["contact_frames"] > 100, lines[-1]
        assert after["skate_m_per_frame"] < before["skate_m_per_frame"], lines[-1]
        assert after["penetration_m"] <= 1e-3, lines[-1]
    # Outside both joints' contacts, where the ankle is above its rest height and the ball above its own (nothing
    # to lift), the foot is as animated: its world rotation as the frame played before the bake.
    feet_after, aims = _played(character, feet, targets)
    frames = np.arange(1, 996)
    for k, entry in enumerate(report["chains"]):
        contacts = entry["contacts"]
        ball = contacts["ball"]
        length = character.data.bones[feet[k]].length * character.matrix_world.to_scale()[0]
        balls = aims[k] + (feet_before[k, :, :3, 1] / np.linalg.norm(feet_before[k, :, :3, 1], axis=-1)[:, None]
                           * length)
        free = (~_inside(contacts["intervals"], frames) & ~_inside(ball["intervals"], frames)
                & (aims[k][:, 2] > contacts["rest_height_m"] + 1e-3) & (balls[:, 2] > ball["rest_height_m"] + 1e-3))
        R0, R1 = (m[:, :3, :3] / np.linalg.norm(m[:, :3, :3], axis=-2, keepdims=True)
                  for m in (feet_before[k], feet_after[k]))
        assert free.sum() > 100 and np.abs(R1[free] - R0[free]).max() < 1e-3, entry["chain"]
    print("\nMOCAP-CONTACTS " + "; ".join(lines))
