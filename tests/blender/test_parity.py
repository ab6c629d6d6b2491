# SPDX-License-Identifier: GPL-3.0-or-later
"""Parity with Blender's IK (issue 16): each scene baked by ``nla.bake`` and by Articulate, scored by one playback code.

Per scene: (a) Articulate's median and p95 residual are at most Blender's + 1 mm, (b) no more
pops than Blender's bake, (c) the bake's report agrees with playback on every frame, and (d) the
converted IK constraints stay muted in playback, so the keys are what plays. Known gaps are
strict xfails whose reasons hold the measured numbers (the same on bpy 4.2.23, 4.5.15 and
5.0.1): a fix turns them into failures that ask for the mark to go.
"""

import json
import math

import bpy
import numpy as np
import parity_scenes as ps
import pytest

SLACK_MM = 1.0  # Articulate may trail Blender's median and p95 residual by this much [mm]
# Known gaps (check, scene) -> the measured numbers, marked strict xfail; none is open: the last,
# copy_limit_after (p95 323.2 vs Blender's 308.8 mm), closed when a redundant chain's frames started
# from the frame before (p95 9.1 mm).
GAPS: dict[tuple[str, str], str] = {}


def _scenes(check: str) -> list:
    """Every scene, the known gaps of ``check`` marked strict xfail with their measured numbers."""
    return [pytest.param(s.name, marks=pytest.mark.xfail(strict=True, reason=GAPS[check, s.name]))
            if (check, s.name) in GAPS else s.name for s in ps.SCENES]


@pytest.fixture(scope="module")
def results(addon, blend_from_script):
    """``results(scene)``: both routes of the scene, baked and scored once per module."""
    cache: dict[str, dict[str, ps.RouteResult]] = {}
    rigify: list = []

    def get(name: str) -> dict[str, ps.RouteResult]:
        if name not in cache:
            scene = ps.BY_NAME[name]
            if scene.rigify and not rigify:
                rigify.append(blend_from_script(ps.RIGIFY_SCRIPT, "parity_rigify", ps.FRAMES))
            blend = rigify[0] if scene.rigify else None
            cache[name] = {route: ps.run(scene, route, ps.FRAMES, blend) for route in ("blender", "articulate")}
        return cache[name]

    return get


def _both(results, name: str) -> tuple[ps.RouteResult, ps.RouteResult]:
    both = results(name)
    ours = both["articulate"]
    if ours.error:
        pytest.fail(f"Articulate refused scene {name!r}: {ours.error}")
    return both["blender"], ours


def _numbers(blender: ps.RouteResult, ours: ps.RouteResult) -> str:
    return (f"ours median {ours.median_mm:.4f} mm, p95 {ours.p95_mm:.4f} mm, {ours.pops} pops, "
            f"{ours.missed} missed; Blender median {blender.median_mm:.4f} mm, p95 {blender.p95_mm:.4f} mm, "
            f"{blender.pops} pops")


@pytest.mark.parametrize("name", _scenes("residuals"))
def test_residuals_no_worse_than_blenders(results, name):
    """(a) Articulate's median and p95 playback residual are at most Blender's + 1 mm."""
    blender, ours = _both(results, name)
    ours_mm, blender_mm = (ours.median_mm, ours.p95_mm), (blender.median_mm, blender.p95_mm)
    assert ours_mm[0] <= blender_mm[0] + SLACK_MM, _numbers(blender, ours)
    assert ours_mm[1] <= blender_mm[1] + SLACK_MM, _numbers(blender, ours)


@pytest.mark.parametrize("name", ["influence_half", "influence_keyed", "influence_tree"])
def test_influence_goal_is_where_blenders_ik_puts_the_end(results, name):
    """The influence scenes score both routes against the goal Blender's IK blends (FK end + w (target - FK end)):
    Blender's own bake lands on it, so the goal is Blender's, not one of ours."""
    blender, ours = _both(results, name)
    assert blender.median_mm < 0.5, _numbers(blender, ours)
    assert ours.median_mm < 0.5, _numbers(blender, ours)


@pytest.mark.parametrize("name", _scenes("pops"))
def test_no_more_pops_than_blenders(results, name):
    """(b) No more frames where a chain bone jumps 5 cm while its target holds still than Blender's bake."""
    blender, ours = _both(results, name)
    pops = ours.pops
    assert pops <= blender.pops, f"{_numbers(blender, ours)}; our pops at frames {ours.pop_frames}"


@pytest.mark.parametrize("name", _scenes("report"))
def test_report_agrees_with_playback(results, name):
    """(c) On every frame the report's residual is playback's (1e-5 m) and converged means within tolerance."""
    _, ours = _both(results, name)
    agrees = ours.agrees
    assert agrees, f"{len(ours.disagreements)} disagreements, first: {ours.disagreements[:5]}"


@pytest.mark.parametrize("name", _scenes("only_keys"))
def test_converted_ik_stays_muted_in_playback(results, name):
    """(d) After the bake no converted IK constraint is live on any frame: the keys are what plays."""
    _, ours = _both(results, name)
    live = ours.ik_live_frames
    assert not live, f"IK live again on {len(live)} frames: {live[:10]}"


def test_keys_outside_the_range_survive(results):
    """Keys before and after the baked range keep their frames and values (Blender's route with
    ``use_current_action`` keeps them too)."""
    both = results("existing_action")
    assert both["articulate"].keys_kept is True
    assert both["blender"].keys_kept is True


def test_chains_sharing_a_spine_bake_as_one_tree(addon, addon_module, tmp_path):
    """Two IK constraints through a shared spine: one solve for both arms, the spine keyed once, both hands on
    their targets in playback on every frame, and the report says the chains were solved together."""
    frames = 24
    ps.load(ps.BY_NAME["shared_spine"], frames)
    arm = bpy.data.objects["Rig"]
    ps.activate(arm)
    assert bpy.ops.articulate.chains_from_constraints() == {"FINISHED"}
    report_path = tmp_path / "report.json"
    assert bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=frames,
                                   report_path=str(report_path)) == {"FINISHED"}
    report = json.loads(report_path.read_text())
    assert any("solved together as one tree" in note for note in report.get("notes", []))
    compat = addon_module("operators.compat")
    spine_curves = [fc for fc in compat.iter_fcurves(arm) if fc.data_path.startswith('pose.bones["Spine1"].rotation')]
    assert len(spine_curves) == 4  # one quaternion, keyed once for both chains
    for chain in report["chains"]:
        assert all(chain["converged"]), chain["reasons"]
        assert max(chain["position_error_m"]) <= chain["tolerance_m"] + 2e-6
    assert [c.mute for pb in arm.pose.bones for c in pb.constraints] == [True, True]


def _spine_with_poles(frames: int) -> tuple[bpy.types.Object, dict]:
    """The shared-spine scene with a pole on each arm's IK constraint (in front of and above the hands)."""
    ps.load(ps.BY_NAME["shared_spine"], frames)
    arm = bpy.data.objects["Rig"]
    poles = {}
    for side, sx in (("L", 1.0), ("R", -1.0)):
        poles[side] = ps.empty(f"Pole.{side}", (0.4 * sx, -0.6, 1.2))
        arm.pose.bones[f"Hand.{side}"].constraints[0].pole_target = poles[side]
    return arm, poles


def _bend_angles(arm, poles, frames) -> np.ndarray:
    """(F, 2) signed angle [deg] from the pole to the elbow about each shoulder-to-hand line, per frame."""
    out = []
    for f in frames:
        bpy.context.scene.frame_set(f)
        row = []
        for side in ("L", "R"):
            upper = arm.pose.bones[f"Arm.{side}"]
            shoulder, elbow = np.array(upper.head), np.array(upper.tail)
            line = np.array(arm.pose.bones[f"Hand.{side}"].tail) - shoulder
            line /= np.linalg.norm(line)
            bend = elbow - shoulder - ((elbow - shoulder) @ line) * line
            pole = np.array(poles[side].matrix_world.translation) - shoulder
            pole -= (pole @ line) * line
            row.append(np.degrees(np.arctan2(np.cross(pole, bend) @ line, pole @ bend)))
        out.append(row)
    return np.array(out)


def test_chains_sharing_a_spine_keep_their_poles_where_blenders_ik_drops_them(addon, tmp_path):
    """Poles on both arms through a shared spine. Blender's IK solves the two chains as one tree and drops
    their poles (its bake with the poles is its bake without them, to the bit on bpy 4.2-5.0); ours bends
    each arm below the spine toward its pole, turned by the chain's pole angle, on every frame, each hand
    on its target, and the report says how the two differ."""
    frames = list(range(1, 21))
    blender = {}
    for poled in (True, False):
        arm, poles = _spine_with_poles(len(frames))
        if not poled:
            for side in ("L", "R"):
                arm.pose.bones[f"Hand.{side}"].constraints[0].pole_target = None
        ps.bake_blender(arm, ps.live_iks(arm), frames)
        ps.mute_ik(arm)
        blender[poled] = _bend_angles(arm, poles, frames)
    assert np.abs(blender[True] - blender[False]).max() < 1e-3
    arm, poles = _spine_with_poles(len(frames))
    ps.activate(arm)
    assert bpy.ops.articulate.chains_from_constraints() == {"FINISHED"}
    report_path = tmp_path / "poles.json"
    assert bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=len(frames),
                                   report_path=str(report_path)) == {"FINISHED"}
    report = json.loads(report_path.read_text())
    for chain in report["chains"]:
        assert all(chain["converged"]), chain["reasons"]
    pole_notes = [note for note in report["notes"] if "drops the poles" in note]
    assert len(pole_notes) == 2, report["notes"]
    by_side = {c.tip_bone[-1]: math.degrees(c.pole_angle) for c in arm.articulate.chains}
    asked = np.array([by_side["L"], by_side["R"]])
    ours = _bend_angles(arm, poles, frames)
    difference = (ours - asked + 180.0) % 360.0 - 180.0
    assert np.abs(difference).max() < 0.5, np.round(difference, 2)
    # The poles matter here: Blender's arms, which follow the solver, end up far from the asked bend.
    assert (np.abs((blender[True] - asked + 180.0) % 360.0 - 180.0).max() > 30.0)


def test_three_chains_on_one_root_with_one_target_out_of_reach(addon, tmp_path):
    """Three chains sharing a root, one target beyond reach: that chain alone misses, with a reason and its
    distance; the other two stay on target; the report is what playback shows on every frame."""
    frames = 20
    spec = ps.chain_bones(["Root"], [(0, 0, 0), (0, 0, 0.3)])
    ends = {"A": (0.5, 0.0, 0.3), "B": (-0.5, 0.0, 0.3), "C": (0.0, 0.5, 0.3)}
    for name, (x, y, z) in ends.items():
        spec += ps.chain_bones([f"{name}1", f"{name}2"], [(0, 0, 0.3), (x * 0.5, y * 0.5 + 0.02, z + 0.02), (x, y, z)],
                               "Root")
    bpy.ops.wm.read_homefile(use_empty=True)
    arm = ps.armature("Rig", spec)
    for name, end in ends.items():
        target = ps.empty(f"T.{name}")
        # In reach of the arm alone, the root bone still: the two reachable chains never compete.
        path = np.array([0.8 * end[0], 0.8 * end[1], end[2]]) + np.linspace(0.0, 1.0, frames)[:, None] * [0, 0, 0.1]
        if name == "C":
            path = np.array([0.0, 3.0, 0.3]) + path * 0  # far beyond the 0.8 m of Root and C1, C2
        ps.key_locations(target, path, list(range(1, frames + 1)))
        ps.add_ik(arm.pose.bones[f"{name}2"], target, chain_count=3)
    specs = ps.live_iks(arm)
    ps.activate(arm)
    assert bpy.ops.articulate.chains_from_constraints() == {"FINISHED"}
    report_path = tmp_path / "three.json"
    assert bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=frames,
                                   report_path=str(report_path)) == {"FINISHED"}
    report = json.loads(report_path.read_text())
    by_tip = {c["bones"][-1]: c for c in report["chains"]}
    assert not any(by_tip["C2"]["converged"])
    assert all("reach" in r for r in by_tip["C2"]["reasons"]), by_tip["C2"]["reasons"][:2]
    for tip in ("A2", "B2"):
        assert all(by_tip[tip]["converged"]), by_tip[tip]["reasons"]
    residual = ps.score(arm, specs, list(range(1, frames + 1)))["residual_m"]
    assert not ps.compare_report(report, specs, residual)


def test_scoring_sees_pops_and_disagreements(addon):
    """The harness itself: a bone kicked on a frame where the target holds still is a pop, and a report
    off by 0.1 mm on one frame disagrees with playback on that frame."""
    frames = list(range(1, 31))
    ps.load(ps.BY_NAME["chain3"], len(frames))
    arm = bpy.data.objects["Rig"]
    specs = ps.live_iks(arm)
    ps.bake_blender(arm, specs, frames)
    clean = ps.score(arm, specs, frames)
    assert clean["pop_frames"] == []
    still = len(frames) // 3 + 3  # inside target_path's hold
    b1 = arm.pose.bones["B1"]
    b1.rotation_quaternion = (np.cos(0.3), np.sin(0.3), 0.0, 0.0)
    b1.keyframe_insert("rotation_quaternion", frame=still)
    assert ps.score(arm, specs, frames)["pop_frames"] == [still, still + 1]
    residual = clean["residual_m"]
    report = {"frames": frames, "chains": [{
        "chain": "B3 IK", "bones": list(specs[0].bones), "tolerance_m": 1.0,
        "position_error_m": (residual[:, 0] + np.where(np.arange(len(frames)) == 4, 1e-4, 0.0)).tolist(),
        "converged": [True] * len(frames)}]}
    found = ps.compare_report(report, specs, residual)
    assert len(found) == 1 and "frame 5:" in found[0]
