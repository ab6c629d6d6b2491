# SPDX-License-Identifier: GPL-3.0-or-later
"""Keys corrected through the constraints after them: what playback shows is the solved pose, or the report says not."""

import json
import math

import bpy
import numpy as np
import parity_scenes as ps
import pytest

FRAMES = 40


def _chain_with_copy(influence: float, space: str = "LOCAL") -> bpy.types.Object:
    """The three-bone parity chain with a Copy Rotation from a turning empty on its tip bone, after the IK."""
    ps.load(ps.BY_NAME["chain3"], FRAMES)
    arm = bpy.data.objects["Rig"]
    spinner = ps.empty("Spinner")
    for f in range(1, FRAMES + 1):
        spinner.rotation_euler = (0.3 * math.sin(f / 7.0), 0.2, 0.4 * f / FRAMES)
        spinner.keyframe_insert("rotation_euler", frame=f)
    copy = arm.pose.bones["B3"].constraints.new("COPY_ROTATION")
    copy.target, copy.influence = spinner, influence
    copy.owner_space = copy.target_space = space
    ps.activate(arm)
    return arm


def _bake(arm, tmp_path) -> dict:
    assert bpy.ops.articulate.chains_from_constraints() == {"FINISHED"}
    path = tmp_path / "report.json"
    assert bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=FRAMES,
                                   report_path=str(path)) == {"FINISHED"}
    return json.loads(path.read_text())


@pytest.mark.parametrize("influence", [0.2, 0.4])
def test_a_partial_copy_rotation_after_the_ik_is_keyed_around(addon, tmp_path, influence):
    """Every frame the solver reaches is on target in playback with the Copy Rotation live, the report says
    how, and an independent playback measure agrees with the report on every frame."""
    arm = _chain_with_copy(influence)
    specs = ps.live_iks(arm)
    report = _bake(arm, tmp_path)
    (chain,) = report["chains"]
    assert any(chain["solver_converged"]) and not chain["overridden_frames"]
    assert chain["converged"] == chain["solver_converged"]
    assert sum("keys were corrected" in note for note in report["notes"]) == 1, report["notes"]
    assert not any("will not show" in w for w in report["warnings"])  # they do show: no warning says otherwise
    assert arm.pose.bones["B3"].constraints["Copy Rotation"].mute is False  # still live in playback
    residual = ps.score(arm, specs, list(range(1, FRAMES + 1)))["residual_m"]
    assert not ps.compare_report(report, specs, residual)
    reached = np.array(chain["converged"])
    assert residual[reached].max() <= chain["tolerance_m"] + 1e-6


def test_where_no_key_gets_through_the_copy_the_report_says_so(addon, tmp_path):
    """At influence 0.8 a bone can end at most 36 degrees from the copied rotation: the frames whose solved
    rotation lies farther are reported overridden, the others are reached, and playback agrees throughout."""
    arm = _chain_with_copy(0.8)
    specs = ps.live_iks(arm)
    report = _bake(arm, tmp_path)
    (chain,) = report["chains"]
    solved = np.array(chain["solver_converged"])
    reached = np.array(chain["converged"])
    overridden = set(chain["overridden_frames"])
    assert reached.any() and overridden  # both kinds in this take
    assert overridden == {f for f, s, r in zip(range(1, FRAMES + 1), solved, reached) if s and not r}
    note = next(n for n in report["notes"] if "keys were corrected" in n)
    assert f": {int(reached.sum())} now on target" in note, note
    residual = ps.score(arm, specs, list(range(1, FRAMES + 1)))["residual_m"]
    assert not ps.compare_report(report, specs, residual)


def test_a_copy_rotation_that_overrides_outright_is_reported_and_the_solved_keys_stay(addon, tmp_path):
    """A world-space Copy Rotation at full influence leaves nothing to key around: every frame is reported
    overridden, and the keys are still the solved pose (on target once the copy is muted)."""
    arm = _chain_with_copy(1.0, "WORLD")
    specs = ps.live_iks(arm)
    report = _bake(arm, tmp_path)
    (chain,) = report["chains"]
    solved = np.array(chain["solver_converged"])
    assert solved.any()
    assert chain["overridden_frames"] == [f for f, ok in zip(range(1, FRAMES + 1), solved) if ok]
    assert any("0 now on target" in note for note in report["notes"]), report["notes"]
    assert any("will not show" in w for w in report["warnings"])
    arm.pose.bones["B3"].constraints["Copy Rotation"].mute = True
    residual = ps.score(arm, specs, list(range(1, FRAMES + 1)))["residual_m"][:, 0]
    assert residual[solved].max() <= chain["tolerance_m"] + 1e-6


def test_chains_nothing_moves_are_not_played_again(addon, tmp_path):
    """Without constraints after the keys there is nothing to correct and no note."""
    ps.load(ps.BY_NAME["chain3"], FRAMES)
    arm = bpy.data.objects["Rig"]
    ps.activate(arm)
    report = _bake(arm, tmp_path)
    assert not any("corrected" in note for note in report.get("notes", []))


def test_bones_that_do_not_inherit_rotation_are_left_to_the_report(addon, tmp_path):
    """The correction reads local rotations as a child of its parent's: a chain bone that does not inherit
    rotation is not corrected, and its frames stay reported overridden."""
    arm = _chain_with_copy(0.4)
    arm.data.bones["B3"].use_inherit_rotation = False
    report = _bake(arm, tmp_path)
    (chain,) = report["chains"]
    assert not any("corrected" in note for note in report.get("notes", []))
    assert chain["overridden_frames"]
