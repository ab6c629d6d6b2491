# SPDX-License-Identifier: GPL-3.0-or-later
"""Contacts on chains (issue 27): Detect Contacts fills the list as the core detects, bakes plant as the core plants.

The scene (:mod:`contact_scenes`) is a two-bone leg under hips walking at 0.5 m/s, its ankle
target standing with capture jitter for 18 frames and swinging for 12, dipping 2 cm into the
ground on two standing frames.
"""

import json

import bpy
import numpy as np
import parity_scenes as ps
import pytest
from contact_scenes import BALL, FPS, REST, build_leg_scene, foot_path
from strict_layout import draw_panel, drawn_operators, drawn_props
from test_operator_failures import differences, fingerprint

FRAMES = 60


@pytest.fixture
def leg(empty_scene, addon_module):
    """The walking leg, its chain's rest height set to the ankle's (8 cm) over a ground plane at 0."""
    arm = build_leg_scene(addon_module, FRAMES)
    chain = arm.articulate.chains[0]
    chain.rest_height_auto, chain.rest_height = False, REST
    return arm


def _detect(**kwargs):
    return bpy.ops.articulate.contacts_detect(use_scene_settings=False, frame_start=1, frame_end=FRAMES, **kwargs)


def _bake(report, **kwargs):
    assert bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=FRAMES,
                                   report_path=str(report), **kwargs) == {"FINISHED"}
    return json.loads(report.read_text())


def _tips(arm) -> np.ndarray:
    """(FRAMES, 3) the ankle (the shin's tail) in playback."""
    out = []
    for f in range(1, FRAMES + 1):
        bpy.context.scene.frame_set(f)
        out.append(np.array(arm.matrix_world @ arm.pose.bones["Shin"].tail))
    return np.array(out)


def _intervals(chain) -> list[tuple[int, int]]:
    return [(c.frame_start, c.frame_end) for c in chain.contacts]


def _mask(chain) -> np.ndarray:
    """(FRAMES,) True on the frames of the chain's contact intervals."""
    mask = np.zeros(FRAMES, dtype=bool)
    for a, b in _intervals(chain):
        mask[a - 1:b] = True
    return mask


def test_contacts_are_off_for_new_chains_with_the_cores_thresholds(leg, core):
    """A chain starts without contacts, its thresholds are the core's defaults, its list empty."""
    chain = leg.articulate.chains.add()
    defaults = core.contacts.ContactOptions()
    assert not chain.use_contacts and len(chain.contacts) == 0
    assert chain.contact_height == pytest.approx(defaults.height)
    assert chain.contact_speed == pytest.approx(defaults.speed)
    assert chain.contact_min_duration == pytest.approx(defaults.min_duration)
    assert chain.ground == "PLANE" and chain.ground_height == 0.0 and chain.hips is None


def test_detect_fills_the_list_as_the_core_detects(leg, core):
    """The intervals are the core's detect_contacts on the target's path; Contacts turns on; markers at each end."""
    chain = leg.articulate.chains[0]
    assert _detect() == {"FINISHED"}
    mask = core.contacts.detect_contacts(foot_path(FRAMES), 1.0 / FPS, 0.0, REST)
    want = [(int(a) + 1, int(b)) for a, b in core.contacts.contact_intervals(mask)]
    assert _intervals(chain) == want and len(want) == 2
    assert chain.use_contacts
    markers = sorted((m.frame, m.name) for m in bpy.context.scene.timeline_markers)
    ends = [(a, "Contact Leg:Foot down") for a, _ in want] + [(b, "Contact Leg:Foot up") for _, b in want]
    assert markers == sorted(ends)
    chain.contact_height = 0.001  # stricter thresholds: other intervals
    assert _detect(add_markers=False) == {"FINISHED"}
    assert len(bpy.context.scene.timeline_markers) == 4  # the old ones stay without new markers
    assert _detect() == {"FINISHED"}
    assert len(bpy.context.scene.timeline_markers) == 2 * len(chain.contacts)  # replaced, not added to


def test_detect_keeps_contacts_outside_the_range(leg):
    """Detecting over frames 31-60 replaces only the contacts there."""
    chain = leg.articulate.chains[0]
    assert _detect() == {"FINISHED"}
    first = _intervals(chain)[0]
    chain.contacts[0].frame_end = first[1] - 3  # an edit the second detection must keep
    assert bpy.ops.articulate.contacts_detect(use_scene_settings=False, frame_start=31, frame_end=FRAMES) == {
        "FINISHED"}
    assert _intervals(chain)[0] == (first[0], first[1] - 3) and len(chain.contacts) == 2


def test_bake_plants_the_target_as_the_core_plants_it(leg, core, tmp_path):
    """In playback the ankle is plant_targets + keep_above_ground of the target's path on every frame; the report's
    skate falls, its penetration goes from the 2 cm dips to none."""
    chain = leg.articulate.chains[0]
    assert _detect() == {"FINISHED"}
    report = _bake(tmp_path / "r.json")
    assert report["missed_frames"] == []
    path = foot_path(FRAMES)
    mask = _mask(chain)
    planted = core.contacts.plant_targets(path, mask, 1.0 / FPS, blend_time=chain.contact_blend)
    want = core.contacts.keep_above_ground(planted.positions, 0.0, REST)
    tips = _tips(leg)
    assert np.abs(tips - want).max() < 2e-4  # the chain's tolerance (1e-4 m) and float32 keys
    held = np.all(planted.positions == planted.anchor, axis=1)[:18]  # the first contact's frames before its release
    # 9 of the 18 standing frames: the contact starts on frame 4 (the one-sided speed window of the range's first
    # frames and the dip on frame 5 read 14-21 cm/s, above Contact Speed) and its last 3 frames are the release.
    assert held.sum() >= 9 and np.ptp(tips[:18][held], axis=0).max() < 2e-4  # standing still
    free = ~mask & (path[:, 2] >= REST)
    assert np.abs(tips[free] - path[free]).max() < 2e-4  # outside contacts: the target, as without contacts
    contacts = report["chains"][0]["contacts"]
    assert [tuple(i) for i in contacts["intervals"]] == _intervals(chain)
    before, after = contacts["before"], contacts["after"]
    assert after["measured_by"] == "playback"
    assert before["penetration_m"] == pytest.approx(0.02, abs=1e-6) and after["penetration_m"] <= 1e-3
    assert after["skate_m_per_frame"] < 0.6 * before["skate_m_per_frame"]
    assert after["skate_ratio"] < before["skate_ratio"]
    measure = core.contacts.foot_skate(tips, 1.0 / FPS, REST, mask)
    assert after["skate_m_per_frame"] == pytest.approx(measure.skate, abs=1e-5)
    assert "ball" not in contacts  # no bone below the shin: planted by its target alone, as before


@pytest.fixture
def leg_with_foot(empty_scene, addon_module):
    """The walking leg with a foot bone "Sole" under the shin (ankle to the ball of the foot)."""
    arm = build_leg_scene(addon_module, FRAMES, foot=True)
    chain = arm.articulate.chains[0]
    chain.rest_height_auto, chain.rest_height = False, REST
    return arm


def _bone_frames(arm, name: str) -> np.ndarray:
    """(FRAMES, 4, 4) a bone's world frame in playback."""
    out = []
    for f in range(1, FRAMES + 1):
        bpy.context.scene.frame_set(f)
        out.append(np.array(arm.matrix_world @ arm.pose.bones[name].matrix))
    return np.array(out)


def test_a_foot_bone_plants_the_ball_as_plant_foot_does(leg_with_foot, core, tmp_path):
    """The bone under the shin is found as the foot; in playback the ankle and the foot's rotation are plant_foot's
    of the target's path and the foot's rotation before the bake (keyed on the foot), its ball skates less and
    stays above the ground; frames outside both contacts keep the foot's rotation; the report measures the ball."""
    arm = leg_with_foot
    chain = arm.articulate.chains[0]
    assert _detect() == {"FINISHED"}
    foot_before = _bone_frames(arm, "Sole")
    report = _bake(tmp_path / "r.json")
    assert report["missed_frames"] == []
    path = foot_path(FRAMES)
    mask = _mask(chain)
    R = foot_before[:, :3, :3]
    ball = np.array([0.0, np.linalg.norm(BALL), 0.0])  # the ball in the foot bone's frame: its tail
    ball_rest = float(np.percentile((path + R @ ball)[:, 2], 5))
    want = core.contacts.plant_foot(path, R, ball, 1.0 / FPS, 0.0, REST, ball_rest,
                                    core.contacts.ContactOptions(), chain.contact_blend, contact=mask)
    foot_after = _bone_frames(arm, "Sole")
    assert np.abs(_tips(arm) - want.ankle).max() < 2e-4
    assert np.abs(foot_after[:, :3, :3] - want.rotations).max() < 1e-4  # float32 keys
    assert want.ball_contact.sum() > mask.sum() / 2
    free = ~mask & ~want.ball_contact & np.all(want.ankle == path, axis=1)
    assert free.sum() >= 10 and np.abs(foot_after[free, :3, :3] - R[free]).max() < 1e-4
    contacts = report["chains"][0]["contacts"]
    ball_report = contacts["ball"]
    assert ball_report["bone"] == "Sole" and ball_report["after"]["measured_by"] == "playback"
    assert [tuple(i) for i in ball_report["intervals"]] == [
        (int(a) + 1, int(b)) for a, b in core.contacts.contact_intervals(want.ball_contact)]
    assert ball_report["after"]["skate_m_per_frame"] < 0.6 * ball_report["before"]["skate_m_per_frame"]
    assert ball_report["after"]["penetration_m"] <= 1e-3
    played = foot_after[:, :3, 3] + foot_after[:, :3, 1] * np.linalg.norm(BALL)
    measure = core.contacts.foot_skate(played, 1.0 / FPS, ball_rest, want.ball_contact)
    assert ball_report["after"]["skate_m_per_frame"] == pytest.approx(measure.skate, abs=1e-5)


def test_a_foot_its_constraints_turn_is_warned_about(leg_with_foot, tmp_path):
    """A Copy Rotation on the foot overrides its keys in playback: the bake says so, naming the constraint."""
    con = leg_with_foot.pose.bones["Sole"].constraints.new("COPY_ROTATION")
    con.target = bpy.data.objects["Foot"]
    assert _detect() == {"FINISHED"}
    report = _bake(tmp_path / "r.json")
    assert any(w.startswith("chain 'Foot''s foot: Sole follows") and con.name in w for w in report["warnings"])


def test_plant_foot_off_plants_the_target_alone(leg_with_foot, addon_module, tmp_path):
    """Plant Foot off: no foot keys, no ball in the report, the ankle as a chain without a foot has it."""
    chain = leg_with_foot.articulate.chains[0]
    assert _detect() == {"FINISHED"}
    chain.use_foot = False
    report = _bake(tmp_path / "r.json")
    assert "ball" not in report["chains"][0]["contacts"]
    fcurves = addon_module("operators.compat").iter_fcurves(leg_with_foot)
    assert not any('"Sole"' in fc.data_path for fc in fcurves)


def test_a_chain_without_contacts_bakes_as_before(leg, tmp_path):
    """Contacts off (the default), a filled list changes nothing: the keys follow the target, the report has no
    contacts; Solve Current Frame never plants."""
    chain = leg.articulate.chains[0]
    assert _detect() == {"FINISHED"}
    chain.use_contacts = False
    report = _bake(tmp_path / "r.json")
    assert "contacts" not in report["chains"][0] and report["warnings"] == []
    path = foot_path(FRAMES)
    assert np.abs(_tips(leg) - path).max() < 2e-4
    chain.use_contacts = True
    bpy.context.scene.frame_set(10)
    assert bpy.ops.articulate.solve_frame() == {"FINISHED"}
    bpy.context.view_layer.update()
    tip = np.array(leg.matrix_world @ leg.pose.bones["Shin"].tail)
    assert np.linalg.norm(tip - path[9]) < 2e-4


def test_contacts_on_with_an_empty_list_warns_and_keeps_the_ground(leg, tmp_path):
    """Nothing to plant: a warning says how to fill the list; no frame goes below the ground."""
    leg.articulate.chains[0].use_contacts = True
    report = _bake(tmp_path / "r.json")
    assert any("contact list is empty" in w for w in report["warnings"])
    assert _tips(leg)[:, 2].min() >= REST - 2e-4
    assert report["chains"][0]["contacts"]["intervals"] == []


def test_hips_lower_where_a_planted_target_is_out_of_reach(leg, addon_module, tmp_path):
    """Hips raised 8 cm put the standing ankle out of the leg's reach; Lower Hips keys them down just enough:
    no contact frame is missed, the note says how much, frames no contact needs keep their hips."""
    compat = addon_module("operators.compat")
    fc = compat.find_fcurve(leg, 'pose.bones["Hips"].location', 1)  # the Hips bone points up: local y is up
    for k in fc.keyframe_points:
        k.co[1] += 0.08
    fc.update()
    chain = leg.articulate.chains[0]
    assert _detect() == {"FINISHED"}
    plain = _bake(tmp_path / "plain.json")
    mask = _mask(chain)
    assert set(plain["missed_frames"]) & set(np.flatnonzero(mask) + 1)  # out of reach without the drop
    chain.hips, chain.hips_bone = leg, "Hips"
    report = _bake(tmp_path / "r.json")
    assert not set(report["missed_frames"]) & set(np.flatnonzero(mask) + 1)
    assert any("hips 'Leg:Hips' lowered" in n for n in report["notes"])
    heights = []
    for f in range(1, FRAMES + 1):
        bpy.context.scene.frame_set(f)
        heights.append((leg.matrix_world @ leg.pose.bones["Thigh"].head).z)
    drop = 0.95 + 0.08 - np.array(heights)
    assert drop.min() >= -1e-6 and 0.0 < drop.max() < 0.05


def _ground_collection(with_floor: bool = True) -> bpy.types.Collection:
    """A collection with a 10 cm step under the first stance (x 0-0.3) and, optionally, a floor at 0."""
    collection = bpy.data.collections.new("Ground")
    bpy.context.scene.collection.children.link(collection)
    boxes = [("Step", (-0.1, 0.3), (-0.3, 0.5), 0.1)] + ([("Floor", (-1.0, 3.0), (-1.0, 1.0), 0.0)] * with_floor)
    for name, (x0, x1), (y0, y1), z in boxes:
        mesh = bpy.data.meshes.new(name)
        mesh.from_pydata([(x0, y0, z), (x1, y0, z), (x1, y1, z), (x0, y1, z)], [], [(0, 1, 2, 3)])
        collection.objects.link(bpy.data.objects.new(name, mesh))
    return collection


def test_a_ground_collection_is_measured_by_ray_casts(leg, tmp_path):
    """Over the step the ankle stands on the step (its top plus the rest height), elsewhere on the floor."""
    chain = leg.articulate.chains[0]
    chain.ground, chain.ground_collection = "COLLECTION", _ground_collection()
    chain.contacts.add().frame_start, chain.contacts[0].frame_end = 1, 18
    chain.use_contacts = True
    report = _bake(tmp_path / "r.json")
    tips = _tips(leg)
    path = foot_path(FRAMES)
    on_step = (path[:, 0] > -0.1) & (path[:, 0] < 0.3)
    assert on_step[:18].all() and tips[:18, 2].min() >= 0.1 + REST - 2e-4
    assert tips[~on_step, 2].min() >= REST - 2e-4
    contacts = report["chains"][0]["contacts"]
    assert contacts["ground_m"] == pytest.approx([0.0, 0.1], abs=1e-6)
    assert contacts["after"]["penetration_m"] <= 1e-3


def test_the_contact_list_is_edited_by_its_buttons(leg):
    """Add Contact adds the current frame; the fields are editable; Remove Contact removes the selected one."""
    chain = leg.articulate.chains[0]
    bpy.context.scene.frame_set(12)
    assert bpy.ops.articulate.contact_add() == {"FINISHED"}
    assert _intervals(chain) == [(12, 12)]
    chain.contacts[0].frame_end = 20
    assert bpy.ops.articulate.contact_add() == {"FINISHED"}
    chain.active_contact = 0
    assert bpy.ops.articulate.contact_remove() == {"FINISHED"}
    assert _intervals(chain) == [(12, 12)]
    assert bpy.ops.articulate.contact_remove() == {"FINISHED"}
    assert not bpy.ops.articulate.contact_remove.poll()


def _refused(op, match: str) -> None:
    scene = bpy.context.scene
    scene.frame_set(scene.frame_current)  # evaluated as a refused run leaves it (it restores its frame)
    before = fingerprint()
    with pytest.raises(RuntimeError, match=match):
        op()
    after = fingerprint()
    assert after == before, differences(before, after)


@pytest.mark.parametrize("case, match", [
    ("reversed", r"contact 'backwards' ends \(frame 5\) before it starts \(frame 9\)"),
    ("no_collection", "no ground collection is set"),
    ("empty_collection", "ground collection 'Ground' holds no mesh with faces"),
    ("nothing_under", "has no surface under the target on any frame"),
    ("connected_hips", "bone 'Shin' is connected to its parent"),
    ("locked_hips", "bone 'Hips' has its location locked"),
    ("missing_foot", "has no foot bone 'Toe'"),
    ("foot_of_another_bone", "foot bone 'Thigh' is not a child of the chain's tip bone 'Shin'"),
])
def test_bad_contact_settings_are_refused_and_change_nothing(leg, case, match):
    """Each bad setting is named by the bake, which leaves keys, markers and settings as they were."""
    chain = leg.articulate.chains[0]
    assert _detect() == {"FINISHED"}
    if case == "reversed":
        item = chain.contacts.add()
        item.name, item.frame_start, item.frame_end = "backwards", 9, 5
    elif case == "no_collection":
        chain.ground = "COLLECTION"
    elif case == "empty_collection":
        chain.ground, chain.ground_collection = "COLLECTION", bpy.data.collections.new("Ground")
    elif case == "nothing_under":
        chain.ground, chain.ground_collection = "COLLECTION", _ground_collection(with_floor=False)
        for obj in chain.ground_collection.objects:
            obj.location.x = 50.0
    elif case == "connected_hips":
        chain.hips, chain.hips_bone = leg, "Shin"
    elif case == "missing_foot":
        chain.foot_bone = "Toe"
    elif case == "foot_of_another_bone":
        chain.foot_bone = "Thigh"
    else:
        chain.hips, chain.hips_bone = leg, "Hips"
        leg.pose.bones["Hips"].lock_location[2] = True
    _refused(lambda: bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=FRAMES), match)


def test_detect_refuses_what_it_cannot_measure(leg):
    """No target, one frame, an unknown chain: refused with the reason, nothing changed."""
    chain = leg.articulate.chains[0]
    _refused(lambda: bpy.ops.articulate.contacts_detect(use_scene_settings=False, frame_start=4, frame_end=4),
             "at least two frames")
    _refused(lambda: _detect(chain="Fot"), "no chain 'Fot'.*Foot")
    _refused(lambda: _detect(all_chains=True), "no chain with Contacts on")
    chain.target = None
    _refused(_detect, "has no target")


def _searched(log: list) -> list[str]:
    """Names of the properties a draw showed with ``prop_search``."""
    return [bound["property"] for name, bound in (e for e in log if len(e) == 2 and isinstance(e[1], dict))
            if name == "prop_search"]


def test_contacts_panel_draws_its_settings_and_list(leg):
    """The panel shows the ground's own field (height or collection), the hips bone for an armature, the list and
    its buttons."""
    chain = leg.articulate.chains[0]
    chain.contacts.add()
    assert bpy.types.ARTICULATE_PT_contacts.poll(bpy.context)
    log = draw_panel(bpy.types.ARTICULATE_PT_contacts)
    props = drawn_props(log) + _searched(log)
    assert "ground_height" in props and "ground_collection" not in props and "hips_bone" not in props
    assert {"articulate.contacts_detect", "articulate.contact_add", "articulate.contact_remove"} <= set(
        drawn_operators(log))
    chain.ground, chain.hips = "COLLECTION", leg
    log = draw_panel(bpy.types.ARTICULATE_PT_contacts)
    props = drawn_props(log) + _searched(log)
    assert "ground_collection" in props and "hips_bone" in props and "ground_height" not in props
    chain.mode = "AIM"
    assert not bpy.types.ARTICULATE_PT_contacts.poll(bpy.context)


def test_two_bone_picked_by_hand_on_a_leg_that_is_no_limb_is_refused_with_lower_hips(leg, tmp_path):
    """Two-bone chosen by hand on a leg whose thigh IK Lock holds still is no limb. With Lower Hips the bake built
    the solver early, unguarded, and failed with an unexpected error (found by dev/fuzz_body.py); now the chain is
    refused with the two-bone solver's own words, and nothing is keyed."""
    chain = leg.articulate.chains[0]
    thigh = leg.pose.bones["Thigh"]
    thigh.lock_ik_x = thigh.lock_ik_y = thigh.lock_ik_z = True
    chain.solver = "two_bone"
    assert _detect() == {"FINISHED"}
    chain.hips, chain.hips_bone = leg, "Hips"
    keys = {(fc.data_path, fc.array_index): len(fc.keyframe_points) for fc in ps._fcurves(leg)}
    with pytest.raises(RuntimeError, match=r"chain '.*': skeleton .* is not a two-bone limb") as refused:
        bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=FRAMES)
    assert "unexpected" not in str(refused.value)
    assert keys == {(fc.data_path, fc.array_index): len(fc.keyframe_points) for fc in ps._fcurves(leg)}
