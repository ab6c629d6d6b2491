# SPDX-License-Identifier: GPL-3.0-or-later
"""Motion capture onto a rig of other proportions (issue 27, item 5): planted feet skate less, stay above the floor.

CMU take 131_01 (walk, 995 frames at 120 Hz) imported by Blender's own BVH importer; a character
with other proportions (Rigify's basic human metarig, legs 1.23 times the capture's; or the
capture's skeleton with legs 1.1 times as long) follows it: its hips copy the capture's hips
scaled by the leg ratio (through an anchor placed so the hip joints coincide), each leg is a
two-bone chain whose target follows the capture's ankle scaled by the same ratio. Detect Contacts
and a bake with contacts (Lower Hips on the anchor) then plant the feet.
"""

import json

import bpy
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
bpy.context.scene["articulate_test"] = {"ratio": ratio, "shin_l": names["shin.L"], "shin_r": names["shin.R"]}
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


@pytest.mark.slow
def test_planted_mocap_feet_skate_less_and_stay_above_the_floor(mocap_blend, tmp_path):
    """Per foot chain: contacts found on the walk; the skate ratio over them never rises and is at most 0.5 %, the
    weighted skate falls, the penetration below the rest height is at most 1 mm (the capture's own dips are several),
    and every missed frame lies outside the contacts."""
    bpy.ops.wm.open_mainfile(filepath=str(mocap_blend))
    scene = bpy.context.scene
    info = scene["articulate_test"]
    character = bpy.data.objects["Character"]
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
        lines.append(f"{entry['chain']}: skate ratio {before['skate_ratio']:.3%} -> {after['skate_ratio']:.3%}, "
                     f"skate {before['skate_m_per_frame'] * 1e3:.3g} -> {after['skate_m_per_frame'] * 1e3:.3g} "
                     f"mm/frame, penetration {before['penetration_m'] * 1e3:.3g} -> "
                     f"{after['penetration_m'] * 1e3:.3g} mm")
        # Contacts start under 10 cm/s, so the animated target rarely slides over them already: the share of
        # contact frames sliding never rises and meets issue 27's chain-bake goal; the weighted skate falls.
        assert after["skate_ratio"] <= min(before["skate_ratio"], 0.005), lines[-1]
        assert after["skate_m_per_frame"] < before["skate_m_per_frame"], lines[-1]
        assert after["penetration_m"] <= 1e-3 < before["penetration_m"], lines[-1]
        inside = [f for f in entry["missed_frames"] if any(a <= f <= b for a, b in contacts["intervals"])]
        assert not inside, f"{entry['chain']}: contact frames missed: {inside[:10]}"
    print("\nMOCAP-CONTACTS " + "; ".join(lines))
