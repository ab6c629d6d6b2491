# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of humanoid role detection on the common naming conventions and the real CMU files."""

from __future__ import annotations

import json

import pytest
from data_files import data_file

from ik_core.errors import InvalidInputError
from ik_core.formats.bvh import read_bvh
from ik_core.humanoid import MappingError, RoleMap, detect_roles, load_presets, preset_dir
from ik_core.humanoid.naming import parse_name


def chain(parent: str | None, *names: str) -> list[tuple[str, str | None]]:
    """(name, parent) pairs for a straight chain hanging from ``parent``."""
    out = []
    for name in names:
        out.append((name, parent))
        parent = name
    return out


def mirrored(make) -> list[tuple[str, str | None]]:
    """Left then right copies of a limb built by ``make(side_word)``."""
    return make("L") + make("R")


def rigify_metarig() -> list[tuple[str, str | None]]:
    bones = chain(None, "spine", "spine.001", "spine.002", "spine.003", "spine.004", "spine.005", "spine.006")
    bones += chain("spine.006", "face", "nose", "nose.001") + chain("face", "eye.L") + chain("face", "eye.R")
    for s in "LR":
        bones += chain("spine.003", f"shoulder.{s}", f"upper_arm.{s}", f"forearm.{s}", f"hand.{s}")
        bones += chain(f"hand.{s}", f"palm.01.{s}", f"f_index.01.{s}", f"f_index.02.{s}")
        bones += chain(f"palm.01.{s}", f"thumb.01.{s}", f"thumb.02.{s}")
        bones += chain("spine.003", f"breast.{s}") + chain("spine", f"pelvis.{s}")
        bones += chain("spine", f"thigh.{s}", f"shin.{s}", f"foot.{s}", f"toe.{s}") + chain(
            f"foot.{s}", f"heel.02.{s}"
        )
    return bones


def rigify_generated() -> list[tuple[str, str | None]]:
    """The parent links of a rig generated from Rigify's human metarig (Blender 5.0), trimmed.

    Its controls hang from MCH- bones that follow other controls through constraints (the
    shoulder is not a parent of the upper arm's FK control), and the DEF-/ORG- layers follow
    the controls; DEF-pelvis.L/R sit under the deform spine.
    """
    bones = [("root", None), ("MCH-torso.parent", None)]
    bones += chain("MCH-torso.parent", "torso", "hips") + chain("torso", "chest")
    bones += chain("torso", "MCH-spine.001", "spine_fk.001", "MCH-spine", "spine_fk", "tweak_spine", "ORG-spine")
    bones += chain("spine_fk", "tweak_spine.001", "ORG-spine.001")
    bones += chain("torso", "MCH-spine.002", "spine_fk.002", "tweak_spine.002", "ORG-spine.002")
    bones += chain("spine_fk.002", "MCH-spine.003", "spine_fk.003", "tweak_spine.003", "ORG-spine.003")
    bones += chain("spine_fk.003", "ORG-spine.004", "ORG-spine.005", "ORG-spine.006")
    bones += chain("spine_fk.003", "MCH-ROT-neck", "neck", "MCH-ROT-head", "head") + chain("neck", "tweak_spine.004")
    bones += chain("root", "DEF-spine", *[f"DEF-spine.00{i}" for i in range(1, 7)])
    for s in "LR":
        bones += chain("DEF-spine", f"DEF-pelvis.{s}") + chain("ORG-spine.003", f"shoulder.{s}")
        bones += chain("ORG-spine.003", f"ORG-shoulder.{s}", f"ORG-upper_arm.{s}", f"ORG-forearm.{s}", f"ORG-hand.{s}")
        bones += chain(f"ORG-shoulder.{s}", f"DEF-shoulder.{s}") + chain(f"ORG-shoulder.{s}", f"upper_arm_parent.{s}")
        bones += chain(f"ORG-shoulder.{s}", f"MCH-upper_arm_parent.{s}", f"upper_arm_fk.{s}", f"forearm_fk.{s}",
                       f"MCH-hand_fk.{s}", f"hand_fk.{s}")
        bones += chain(f"ORG-shoulder.{s}", f"DEF-upper_arm.{s}", f"DEF-upper_arm.{s}.001", f"DEF-forearm.{s}",
                       f"DEF-forearm.{s}.001", f"DEF-hand.{s}")
        bones += chain(None, f"MCH-hand_ik.parent.{s}", f"hand_ik.{s}")
        bones += chain("ORG-spine", f"ORG-thigh.{s}", f"ORG-shin.{s}", f"ORG-foot.{s}", f"ORG-toe.{s}")
        bones += chain("ORG-spine", f"thigh_parent.{s}")
        bones += chain("ORG-spine", f"MCH-thigh_parent.{s}", f"thigh_fk.{s}", f"shin_fk.{s}", f"MCH-foot_fk.{s}",
                       f"foot_fk.{s}", f"MCH-toe_fk.{s}", f"toe_fk.{s}")
        bones += chain("ORG-spine", f"DEF-thigh.{s}", f"DEF-thigh.{s}.001", f"DEF-shin.{s}", f"DEF-shin.{s}.001",
                       f"DEF-foot.{s}", f"DEF-toe.{s}")
        bones += chain(None, f"MCH-foot_ik.parent.{s}", f"foot_ik.{s}")
    return bones


def layered(with_def: bool = True) -> list[tuple[str, str | None]]:
    """A rig with Rigify-style DEF-/ORG- layers in plain parent chains and no Rigify controls."""
    bones = chain(None, "root")
    layers = ["ORG", "DEF"] if with_def else ["ORG"]
    for p in layers:
        bones += chain("root", f"{p}-spine", f"{p}-spine.001", f"{p}-spine.002", f"{p}-spine.003")
        bones += chain(f"{p}-spine.003", f"{p}-spine.004", f"{p}-spine.005", f"{p}-spine.006", f"{p}-jaw")
        for s in "LR":
            seg = [] if p == "ORG" else [".001"]
            arm = [f"{p}-shoulder.{s}", f"{p}-upper_arm.{s}"] + [f"{p}-upper_arm.{s}{x}" for x in seg]
            arm += [f"{p}-forearm.{s}"] + [f"{p}-forearm.{s}{x}" for x in seg] + [f"{p}-hand.{s}"]
            bones += chain(f"{p}-spine.003", *arm) + chain(
                f"{p}-hand.{s}", f"{p}-palm.01.{s}", f"{p}-f_index.01.{s}"
            )
            bones += chain(f"{p}-spine", f"{p}-pelvis.{s}") + chain(f"{p}-spine.003", f"{p}-breast.{s}")
            leg = [f"{p}-thigh.{s}"] + [f"{p}-thigh.{s}{x}" for x in seg] + [f"{p}-shin.{s}"]
            leg += [f"{p}-shin.{s}{x}" for x in seg] + [f"{p}-foot.{s}", f"{p}-toe.{s}"]
            bones += chain(f"{p}-spine", *leg)
    return bones


def mixamo(ns: str = "mixamorig:") -> list[tuple[str, str | None]]:
    m = ns
    bones = chain(
        None, f"{m}Hips", f"{m}Spine", f"{m}Spine1", f"{m}Spine2", f"{m}Neck", f"{m}Head", f"{m}HeadTop_End"
    )
    for s in ("Left", "Right"):
        bones += chain(f"{m}Spine2", f"{m}{s}Shoulder", f"{m}{s}Arm", f"{m}{s}ForeArm", f"{m}{s}Hand")
        for f in ("Thumb", "Index", "Middle"):
            bones += chain(f"{m}{s}Hand", *[f"{m}{s}Hand{f}{i}" for i in range(1, 5)])
        bones += chain(
            f"{m}Hips", f"{m}{s}UpLeg", f"{m}{s}Leg", f"{m}{s}Foot", f"{m}{s}ToeBase", f"{m}{s}Toe_End"
        )
    return bones


def vrm() -> list[tuple[str, str | None]]:
    bones = chain(None, "hips", "spine", "chest", "upperChest", "neck", "head", "jaw")
    for s in ("left", "right"):
        bones += chain("head", f"{s}Eye")
        bones += chain("upperChest", f"{s}Shoulder", f"{s}UpperArm", f"{s}LowerArm", f"{s}Hand")
        bones += chain(f"{s}Hand", f"{s}ThumbProximal", f"{s}ThumbIntermediate", f"{s}ThumbDistal")
        bones += chain(f"{s}Hand", f"{s}IndexProximal", f"{s}IndexIntermediate")
        bones += chain("hips", f"{s}UpperLeg", f"{s}LowerLeg", f"{s}Foot", f"{s}Toes")
    return bones


def vroid() -> list[tuple[str, str | None]]:
    c = "J_Bip_C_"
    bones = chain(
        None, "Root", f"{c}Hips", f"{c}Spine", f"{c}Chest", f"{c}UpperChest", f"{c}Neck", f"{c}Head"
    )
    bones += chain(f"{c}Head", "J_Adj_L_FaceEye") + chain(f"{c}Head", "J_Sec_Hair1_01", "J_Sec_Hair2_01")
    for s in "LR":
        b = f"J_Bip_{s}_"
        bones += chain(
            f"{c}UpperChest", f"{b}Shoulder", f"{b}UpperArm", f"{b}LowerArm", f"{b}Hand", f"{b}Index1"
        )
        bones += chain(f"{c}UpperChest", f"J_Sec_{s}_Bust1") + chain(f"{b}Hand", f"{b}Thumb1")
        bones += chain(f"{c}Hips", f"{b}UpperLeg", f"{b}LowerLeg", f"{b}Foot", f"{b}ToeBase")
    return bones


def cmu_cgspeed() -> list[tuple[str, str | None]]:
    bones = chain(None, "Hips", "LowerBack", "Spine", "Spine1", "Neck", "Neck1", "Head")
    for s, c in (("Left", "L"), ("Right", "R")):
        bones += chain("Hips", f"{c}HipJoint", f"{s}UpLeg", f"{s}Leg", f"{s}Foot", f"{s}ToeBase")
        bones += chain(
            "Spine1", f"{s}Shoulder", f"{s}Arm", f"{s}ForeArm", f"{s}Hand", f"{s}FingerBase", f"{s}HandIndex1"
        )
        bones += chain(f"{s}Hand", f"{c}Thumb")
    return bones


def unreal() -> list[tuple[str, str | None]]:
    bones = chain(None, "root", "pelvis", "spine_01", "spine_02", "spine_03", "neck_01", "head")
    bones += chain("root", "ik_foot_root", "ik_foot_l") + chain("root", "ik_hand_root", "ik_hand_gun")
    for s in "lr":
        bones += chain(
            "spine_03", f"clavicle_{s}", f"upperarm_{s}", f"lowerarm_{s}", f"hand_{s}", f"index_01_{s}"
        )
        bones += chain(f"upperarm_{s}", f"upperarm_twist_01_{s}") + chain(
            f"lowerarm_{s}", f"lowerarm_twist_01_{s}"
        )
        bones += chain("pelvis", f"thigh_{s}", f"calf_{s}", f"foot_{s}", f"ball_{s}") + chain(
            f"thigh_{s}", f"thigh_twist_01_{s}"
        )
    return bones


CONVENTIONS = {
    "rigify_metarig": rigify_metarig,
    "rigify_generated": rigify_generated,
    "mixamo": mixamo,
    "vrm": vrm,
    "vroid": vroid,
    "cmu_bvh": cmu_cgspeed,
    "unreal_mannequin": unreal,
}

EXPECTED = {
    "rigify_metarig": {
        "pelvis": "spine",
        "spine_3": "spine.003",
        "neck": "spine.004",
        "neck_2": "spine.005",
        "head": "spine.006",
        "clavicle_l": "shoulder.L",
        "upper_arm_r": "upper_arm.R",
        "hand_l": "hand.L",
        "thigh_r": "thigh.R",
        "toe_l": "toe.L",
    },
    "rigify_generated": {
        "pelvis": "torso",
        "spine_1": "spine_fk.002",
        "spine_2": "spine_fk.003",
        "neck": "neck",
        "head": "head",
        "clavicle_r": "shoulder.R",
        "upper_arm_l": "upper_arm_fk.L",
        "forearm_l": "forearm_fk.L",
        "hand_r": "hand_fk.R",
        "thigh_r": "thigh_fk.R",
        "shin_r": "shin_fk.R",
        "foot_l": "foot_fk.L",
        "toe_r": "toe_fk.R",
    },
    "mixamo": {
        "pelvis": "mixamorig:Hips",
        "spine_1": "mixamorig:Spine",
        "spine_3": "mixamorig:Spine2",
        "clavicle_l": "mixamorig:LeftShoulder",
        "upper_arm_l": "mixamorig:LeftArm",
        "shin_r": "mixamorig:RightLeg",
        "toe_r": "mixamorig:RightToeBase",
        "head": "mixamorig:Head",
    },
    "vrm": {
        "pelvis": "hips",
        "spine_3": "upperChest",
        "neck": "neck",
        "clavicle_l": "leftShoulder",
        "forearm_r": "rightLowerArm",
        "toe_l": "leftToes",
        "head": "head",
    },
    "vroid": {
        "pelvis": "J_Bip_C_Hips",
        "spine_2": "J_Bip_C_Chest",
        "hand_r": "J_Bip_R_Hand",
        "thigh_l": "J_Bip_L_UpperLeg",
        "toe_r": "J_Bip_R_ToeBase",
    },
    "cmu_bvh": {
        "pelvis": "Hips",
        "spine_1": "LowerBack",
        "spine_3": "Spine1",
        "neck": "Neck",
        "neck_2": "Neck1",
        "clavicle_l": "LeftShoulder",
        "upper_arm_l": "LeftArm",
        "hand_r": "RightHand",
        "thigh_l": "LeftUpLeg",
        "toe_l": "LeftToeBase",
    },
    "unreal_mannequin": {
        "pelvis": "pelvis",
        "spine_1": "spine_01",
        "clavicle_r": "clavicle_r",
        "upper_arm_r": "upperarm_r",
        "shin_l": "calf_l",
        "toe_l": "ball_l",
        "neck": "neck_01",
    },
}


# Spine bones per convention: a generated Rigify rig has two upper-body FK spine controls.
SPINE_BONES = {"rigify_generated": 2}


@pytest.mark.parametrize("convention", sorted(CONVENTIONS))
def test_heuristics_find_every_role(convention: str) -> None:
    """Name and hierarchy heuristics alone (no presets) map all 20 roles of each convention."""
    roles = detect_roles(CONVENTIONS[convention](), use_presets=False)
    assert roles.source == ("auto:rigify-controls" if convention == "rigify_generated" else "auto")
    for role, bone in EXPECTED[convention].items():
        assert roles[role] == bone, (role, roles[role], bone)
    assert len(roles.spine) == SPINE_BONES.get(convention, 3)
    assert {
        f"{r}_{s}"
        for r in ("clavicle", "upper_arm", "forearm", "hand", "thigh", "shin", "foot", "toe")
        for s in "lr"
    } <= set(roles)


@pytest.mark.parametrize("convention", sorted(CONVENTIONS))
def test_presets_agree_with_heuristics(convention: str) -> None:
    """Each convention's bundled preset fits its rig and maps exactly what the heuristics map."""
    bones = CONVENTIONS[convention]()
    if convention == "rigify_generated":
        # Read from the hierarchy first; the preset documents the default human metarig's controls.
        assert load_presets()[convention].bones == detect_roles(bones).bones
        return
    via_preset = detect_roles(bones)
    assert via_preset.source == f"preset:{convention}"
    assert via_preset.bones == detect_roles(bones, use_presets=False).bones


def test_namespaces_and_side_styles() -> None:
    """Other Mixamo namespaces, no namespace, and _L / L_ / left side spellings are understood."""
    for ns in ("mixamorig1:", "", "Armature|rig:"):
        roles = detect_roles(mixamo(ns))
        assert roles["forearm_r"] == f"{ns}RightForeArm"
    cases = {
        "UpperArm_L": ("l", "upperarm"),
        "L_UpperArm": ("l", "upperarm"),
        "upperarm_r": ("r", "upperarm"),
        "lhand": ("l", "hand"),
        "RightForeArm": ("r", "forearm"),
        "Shin.R": ("r", "shin"),
        "DEF-thigh.L.001": ("l", "thigh"),
        "leftLowerLeg": ("l", "lowerleg"),
        "LeftArm_jnt": ("l", "arm"),
        "Hips.001": (None, "hips"),
    }
    for name, (side, core) in cases.items():
        info = parse_name(name)
        assert (info.side, info.core) == (side, core), name


def test_rigify_generated_rig_maps_to_fk_controls() -> None:
    """A generated rig maps to its FK controls (what an animator keys), never to constraint-driven DEF/ORG/MCH bones."""
    roles = detect_roles(rigify_generated())
    assert roles.source == "auto:rigify-controls"
    assert not [b for b in roles.bones.values() if b.startswith(("DEF-", "ORG-", "MCH-"))]
    assert roles.spine == ("spine_fk.002", "spine_fk.003") and roles.neck == ("neck",)
    assert roles.parent_role("upper_arm_l") == "clavicle_l" and roles["clavicle_l"] == "shoulder.L"


def test_rigify_controls_follow_the_hierarchy() -> None:
    """A generated rig with a longer chest (spine_fk.004) and two neck controls is read from its hierarchy."""
    bones = [(n, "neck2" if n == "MCH-ROT-neck" else p) for n, p in rigify_generated()]
    bones += [("spine_fk.004", "spine_fk.003"), ("neck2", "spine_fk.004")]
    roles = detect_roles(bones)
    assert roles.source == "auto:rigify-controls"
    assert roles.spine == ("spine_fk.002", "spine_fk.003", "spine_fk.004")
    assert roles.neck == ("neck2", "neck")


def test_rigify_missing_fk_control_is_named() -> None:
    """Without the left hand's FK control, the error names the role and the control looked for."""
    bones = [(n, p) for n, p in rigify_generated() if n != "hand_fk.L"]
    with pytest.raises(MappingError) as info:
        detect_roles(bones)
    assert info.value.missing == ("hand_l",)
    assert "hand_fk.L" in str(info.value)


def test_layered_rig_without_controls_uses_deform_then_org_layer() -> None:
    """A rig with DEF-/ORG- layers but no Rigify controls maps its deform layer, or its ORG- layer without one."""
    roles = detect_roles(layered(), use_presets=False)
    assert roles["hand_l"] == "DEF-hand.L" and roles["pelvis"] == "DEF-spine" and roles["shin_r"] == "DEF-shin.R"
    roles = detect_roles(layered(with_def=False))
    assert all(b.startswith("ORG-") for b in roles.bones.values())
    assert roles["hand_l"] == "ORG-hand.L" and roles["head"] == "ORG-spine.006"


@pytest.mark.parametrize("take", ["cmu_131_01", "cmu_131_02", "cmu_131_03"])
def test_real_cmu_files(take: str) -> None:
    """The shared CMU BVH files map: 3ds Max names where Shoulder is the upper arm, Collar the clavicle."""
    bones = read_bvh(data_file("mocap", f"{take}.bvh")).bones()
    for use_presets in (True, False):
        roles = detect_roles(bones, use_presets=use_presets)
        assert roles.spine == ("lowerback", "Chest", "Chest2")
        assert roles.neck == ("lowerneck", "Neck")
        expected = {
            "pelvis": "Hips",
            "head": "Head",
            "clavicle_l": "LeftCollar",
            "upper_arm_l": "LeftShoulder",
            "forearm_l": "LeftElbow",
            "hand_l": "LeftWrist",
            "thigh_r": "RightHip",
            "shin_r": "RightKnee",
            "foot_r": "RightAnkle",
            "toe_r": "RightToe",
        }
        assert {r: roles[r] for r in expected} == expected


def test_missing_roles_are_named_with_candidates() -> None:
    """Removing the left hand and forearm fails with an error naming those roles and the bones seen."""
    bones = [
        (n, p) for n, p in mixamo() if not n.startswith("mixamorig:LeftHand") and n != "mixamorig:LeftForeArm"
    ]
    with pytest.raises(MappingError) as info:
        detect_roles(bones)
    assert "hand_l" in info.value.missing
    message = str(info.value)
    assert "hand_l" in message and "mixamorig:RightHand" in message  # the right hand was a candidate


def test_duplicate_roles_are_reported() -> None:
    """Two unrelated left-hand bones make a duplicate-role error that names both (heuristics)."""
    bones = rigify_metarig() + [("Hand_L", "spine.003")]
    assert detect_roles(bones).source == "preset:rigify_metarig"  # exact names still fit
    with pytest.raises(MappingError) as info:
        detect_roles(bones, use_presets=False)
    assert set(info.value.duplicates["hand_l"]) == {"hand.L", "Hand_L"}
    assert "Hand_L" in str(info.value)


def test_bad_hierarchies_are_rejected() -> None:
    """Repeated names, unknown parents and cycles raise InvalidInputError naming the bone."""
    with pytest.raises(InvalidInputError, match="spine"):
        detect_roles([("spine", None), ("spine", None)])
    with pytest.raises(InvalidInputError, match="nowhere"):
        detect_roles([("a", "nowhere")])
    with pytest.raises(InvalidInputError, match="cycle"):
        detect_roles([("a", "b"), ("b", "a"), ("root", None)])
    with pytest.raises(MappingError, match="pelvis"):
        detect_roles([("root", None)])


def test_role_map_round_trip_and_parents() -> None:
    """to_dict/from_dict round-trips; the role tree hangs arms from the chest and legs from the pelvis."""
    roles = detect_roles(rigify_metarig())
    again = RoleMap.from_dict(json.loads(json.dumps(roles.to_dict())))
    assert again.bones == roles.bones
    assert roles.parent_role("clavicle_l") == "spine_3"
    assert roles.parent_role("upper_arm_l") == "clavicle_l"
    assert roles.parent_role("thigh_r") == "pelvis"
    assert roles.parent_role("head") == "neck_2"
    assert roles.parent_role("pelvis") is None
    with pytest.raises(MappingError, match="hand_l"):
        RoleMap({k: v for k, v in roles.bones.items() if k != "hand_l"})


def test_presets_are_valid_json_data() -> None:
    """Every preset file loads, names its rig and maps all required roles."""
    presets = load_presets()
    assert len(presets) >= 8
    for path in preset_dir().glob("*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        assert isinstance(data["name"], str) and data["name"]
        assert presets[path.stem].source == f"preset:{path.stem}"


def test_role_names_are_checked() -> None:
    """Unknown role names (typos, bare 'spine', 'neck_1') are rejected with the valid list."""
    roles = detect_roles(vrm()).bones
    for bad in ("hand_left", "spine", "neck_1", "head_2"):
        with pytest.raises(InvalidInputError, match="valid roles"):
            RoleMap({**roles, bad: "hips"})
