# SPDX-License-Identifier: GPL-3.0-or-later
"""Parity with Blender's IK (issue 16): each scene baked by ``nla.bake`` and by Articulate, scored by one playback code.

Per scene: (a) Articulate's median and p95 residual are at most Blender's + 1 mm, (b) no more
pops than Blender's bake, (c) the bake's report agrees with playback on every frame, and (d) the
converted IK constraints stay muted in playback, so the keys are what plays. Known gaps are
strict xfails whose reasons hold the measured numbers (the same on bpy 4.2.23, 4.5.15 and
5.0.1): a fix turns them into failures that ask for the mark to go.
"""

import bpy
import numpy as np
import parity_scenes as ps
import pytest

SLACK_MM = 1.0  # Articulate may trail Blender's median and p95 residual by this much [mm]
REFUSED = ("Articulate refuses the scene: \"chain 'Hand.R IK' and chain 'Hand.L IK' both move bone 'Spine1'; "
           "chains must not overlap\" (Blender solves both arms and the shared spine as one tree: median "
           "0.006 mm, p95 0.054 mm)")
GAPS = {
    ("residuals", "copy_limit_after"): (
        "ours median 187.9 mm, p95 323.2 mm vs Blender 208.5 mm, 308.8 mm: the Copy Rotation (local, "
        "influence 0.5) after the IK overrides both bakes' keys; ours solves the tip as if its rotation were "
        "its own (it warns and reports all 60 frames overridden), Blender's visual keys get the copy twice"),
    ("residuals", "shared_spine"): REFUSED,
    ("pops", "shared_spine"): REFUSED,
    ("report", "shared_spine"): REFUSED,
    ("only_keys", "shared_spine"): REFUSED,
}


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


def test_overlapping_chains_are_refused_clearly_and_nothing_changes(addon):
    """Two IK constraints sharing the spine: the bake names both chains and the shared bone, and leaves the
    constraints live and the armature unkeyed."""
    ps.load(ps.BY_NAME["shared_spine"], 10)
    arm = bpy.data.objects["Rig"]
    ps.activate(arm)
    assert bpy.ops.articulate.chains_from_constraints() == {"FINISHED"}
    with pytest.raises(RuntimeError, match=r"chain 'Hand\.[LR] IK' and chain 'Hand\.[LR] IK' both move bone "
                                           r"'Spine1'; chains must not overlap"):
        bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=10)
    assert [c.mute for pb in arm.pose.bones for c in pb.constraints] == [False, False]
    assert arm.animation_data is None or arm.animation_data.action is None


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
