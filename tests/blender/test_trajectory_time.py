# SPDX-License-Identifier: GPL-3.0-or-later
"""Trajectories keep their own time: the file's rate and range offered to the scene, check and export on the
trajectory's frames, and the file's own samples checked so a jump between two frames is still flagged."""

import json
from pathlib import Path

import bpy
import numpy as np
import pytest
from mathutils import Matrix

EXAMPLES = Path(__file__).resolve().parents[2] / "presets" / "examples"
HOME = np.array([0.0, -1.5, 1.5, -1.5, 1.5, 0.0])


@pytest.fixture
def ur5(empty_scene, core):
    assert bpy.ops.articulate.robot_add(preset="ur5") == {"FINISHED"}
    return bpy.context.object


def _names(arm):
    return [j["name"] for j in json.loads(arm["articulate_robot"])["joints"]]


def _smooth(t):
    """(N, 6) a slow joint path around HOME: under 0.1 rad/s, far inside the UR5's limits."""
    return HOME + 0.05 * np.sin(np.outer(t, [1.0, 0.7, 0.5, 0.9, 1.1, 0.3]))


def _write(core, path, names, t, q):
    core.trajectory.write_joint_csv(path, core.trajectory.JointTrajectory(tuple(names), t, q))
    return str(path)


def _timing(scene):
    return scene.render.fps, scene.render.fps_base, scene.frame_start, scene.frame_end


def test_import_offers_the_files_rate_and_range(ur5, core, tmp_path):
    """A 100 Hz file of 2.5 s from frame 10 sets the scene to 100 fps, frames 10..260, one key per sample."""
    rna = bpy.ops.articulate.trajectory_import.get_rna_type().properties["use_file_timing"]
    assert rna.default is True and "frame rate" in rna.description
    scene = bpy.context.scene
    scene.render.fps, scene.frame_start, scene.frame_end = 24, 1, 250
    t = 3.0 + np.arange(251) / 100.0  # a file whose clock starts at 3 s
    q = _smooth(t)
    path = _write(core, tmp_path / "q100.csv", _names(ur5), t, q)
    assert bpy.ops.articulate.trajectory_import(filepath=path, start_frame=10) == {"FINISHED"}
    assert _timing(scene) == (100, 1.0, 10, 260)
    stored = json.loads(ur5["articulate_trajectory"])
    assert (stored["frame_start"], stored["frame_end"], stored["fps"], stored["kind"]) == (10, 260, 100.0, "joints")
    np.testing.assert_array_equal(stored["times"], t)  # the file's own clock, unchanged
    frames = np.arange(10, 261)
    exported = tmp_path / "out.csv"
    assert bpy.ops.articulate.trajectory_export(filepath=str(exported)) == {"FINISHED"}
    back = core.trajectory.read_joint_csv(exported, _names(ur5))
    np.testing.assert_allclose(back.times, (frames - 10) / 100.0, atol=1e-12)
    np.testing.assert_allclose(back.positions, q, atol=1e-6)  # every sample is a frame: keys are the samples


def test_a_2997_hz_file_sets_fps_and_fps_base(ur5, core, tmp_path):
    scene = bpy.context.scene
    t = np.arange(60) / 29.97
    assert bpy.ops.articulate.trajectory_import(filepath=_write(core, tmp_path / "ntsc.csv", _names(ur5), t,
                                                                _smooth(t))) == {"FINISHED"}
    assert scene.render.fps == 30 and scene.render.fps / scene.render.fps_base == pytest.approx(29.97, rel=1e-6)
    assert (scene.frame_start, scene.frame_end) == (1, 60)


def test_timing_off_keeps_the_scenes_rate_and_extends_its_range(ur5, core, tmp_path):
    """Off: 24 fps stays, the 100 Hz samples are resampled onto 61 frames, the range only grows to cover them."""
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base, scene.frame_start, scene.frame_end = 24, 1.0, 5, 20
    t = np.arange(251) / 100.0
    path = _write(core, tmp_path / "q100.csv", _names(ur5), t, _smooth(t))
    assert bpy.ops.articulate.trajectory_import(filepath=path, start_frame=1, use_file_timing=False) == {"FINISHED"}
    assert _timing(scene) == (24, 1.0, 5, 61)
    stored = json.loads(ur5["articulate_trajectory"])
    assert (stored["frame_start"], stored["frame_end"], stored["fps"]) == (1, 61, 24.0)


def test_uneven_waypoints_keep_the_scenes_rate_with_a_warning(ur5, core, tmp_path, capfd):
    """Waypoints at 0, 1, 1.5 and 4 s have no rate of their own: 24 fps stays (a warning says so), the range
    becomes theirs."""
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = 24, 1.0
    t = np.array([0.0, 1.0, 1.5, 4.0])
    path = _write(core, tmp_path / "waypoints.csv", _names(ur5), t, _smooth(t))
    assert bpy.ops.articulate.trajectory_import(filepath=path) == {"FINISHED"}
    assert _timing(scene) == (24, 1.0, 1, 97)
    assert "4 samples are not evenly spaced in time: kept the scene's 24 fps" in capfd.readouterr().out


def test_a_bad_file_changes_neither_timing_nor_the_stored_trajectory(ur5, core, tmp_path):
    scene = bpy.context.scene
    good = _write(core, tmp_path / "good.csv", _names(ur5), np.arange(48) / 24.0, _smooth(np.arange(48) / 24.0))
    assert bpy.ops.articulate.trajectory_import(filepath=good, start_frame=3) == {"FINISHED"}
    before, stored = _timing(scene), ur5["articulate_trajectory"]
    bad = tmp_path / "bad.csv"
    bad.write_text("time," + ",".join(_names(ur5)) + "\n0," + ",".join(["0"] * 6) + "\n0.01,x" + ",0" * 5 + "\n")
    with pytest.raises(RuntimeError, match="line 3"):
        bpy.ops.articulate.trajectory_import(filepath=str(bad), start_frame=50)
    assert _timing(scene) == before and ur5["articulate_trajectory"] == stored


def test_check_and_export_cover_the_trajectorys_frames_not_the_scenes(ur5, core, tmp_path):
    """After an import on frames 5..52 the user narrows the scene to 1..10: check and export still cover 5..52;
    Frames: Scene covers 1..10."""
    scene = bpy.context.scene
    t = np.arange(48) / 24.0
    q = _smooth(t)
    assert bpy.ops.articulate.trajectory_import(filepath=_write(core, tmp_path / "q.csv", _names(ur5), t, q),
                                                start_frame=5) == {"FINISHED"}
    scene.frame_start, scene.frame_end = 1, 10
    report = tmp_path / "check.json"
    assert bpy.ops.articulate.trajectory_check(report_path=str(report)) == {"FINISHED"}
    data = json.loads(report.read_text())
    assert data["frames"]["frame"] == list(range(5, 53)) and data["frame_range"]["source"].endswith("q.csv")
    assert scene.articulate.last_summary.startswith("0 of 48 frames flagged (5..52, the trajectory from q.csv)")
    out = tmp_path / "out.csv"
    assert bpy.ops.articulate.trajectory_export(filepath=str(out)) == {"FINISHED"}
    back = core.trajectory.read_joint_csv(out, _names(ur5))
    np.testing.assert_allclose(back.times, t, atol=1e-12)
    np.testing.assert_allclose(back.positions, q, atol=1e-6)
    assert bpy.ops.articulate.trajectory_export(filepath=str(out), frame_range="SCENE") == {"FINISHED"}
    back = core.trajectory.read_joint_csv(out, _names(ur5))
    assert len(back) == 10
    np.testing.assert_allclose(back.positions[4:], q[:6], atol=1e-6)  # frames 5..10 are samples 0..5
    assert bpy.ops.articulate.trajectory_check(report_path=str(report), frame_range="SCENE") == {"FINISHED"}
    assert json.loads(report.read_text())["frames"]["frame"] == list(range(1, 11))


def test_without_an_import_check_and_export_fall_back_to_the_scene(ur5, core, tmp_path, addon_module):
    """Keys written without an import: nothing is stored, the scene's range is used (and said)."""
    robot = addon_module("operators.bridge.robot")
    robot.write_joint_values(ur5, np.arange(1.0, 31.0), _smooth(np.arange(30) / 24.0))
    assert "articulate_trajectory" not in ur5
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 3, 12
    out = tmp_path / "out.json"
    assert bpy.ops.articulate.trajectory_export(filepath=str(out)) == {"FINISHED"}
    assert len(core.trajectory.read_joint_json(out).times) == 10
    assert bpy.ops.articulate.trajectory_check() == {"FINISHED"}
    assert "(3..12, the scene's range)" in scene.articulate.last_summary


def _spike_file(core, arm, tmp_path):
    """240 Hz for 2 s with joint 0 one sample 1 rad off at sample 125 (t = 0.52 s): between frames 13 and 14."""
    t = np.arange(481) / 240.0
    q = _smooth(t)
    q[125, 0] += 1.0
    return _write(core, tmp_path / "spike.csv", _names(arm), t, q), t, q


def test_file_samples_catch_a_spike_the_resampling_misses(ur5, core, tmp_path):
    """At the scene's 24 fps the keys fall on every tenth sample and never see the spike; the check of the
    file's own samples flags it, on the frame nearest it, with a marker, a summary and report entries."""
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = 24, 1.0
    path, t, q = _spike_file(core, ur5, tmp_path)
    assert bpy.ops.articulate.trajectory_import(filepath=path, use_file_timing=False) == {"FINISHED"}
    assert (scene.frame_start, scene.frame_end) == (1, 250)  # the scene's range is kept, the trajectory's is 1..49
    exported = tmp_path / "keys.csv"
    assert bpy.ops.articulate.trajectory_export(filepath=str(exported)) == {"FINISHED"}
    keys = core.trajectory.read_joint_csv(exported, _names(ur5)).positions
    np.testing.assert_allclose(keys, _smooth(np.arange(49) / 24.0), atol=1e-6)  # the spike is not in the keys
    report = tmp_path / "check.json"
    assert bpy.ops.articulate.trajectory_check(report_path=str(report)) == {"FINISHED"}
    data = json.loads(report.read_text())
    assert all(data["frames"]["ok"])  # the keyed check alone passes: that is the trap
    flagged = [f for f, bad in zip(data["frames"]["frame"], data["frames"]["file_sample_flagged"]) if bad]
    assert flagged == [14]  # sample 125 at frame 13.5 and its way back, sample 126 at 13.6
    samples = data["file_samples"]
    assert samples["source"] == "spike.csv" and len(samples["frame"]) == 481
    bad_samples = [k for k, ok in enumerate(samples["frames"]["ok"]) if not ok]
    assert 125 in bad_samples and 126 in bad_samples and set(bad_samples) <= {124, 125, 126, 127}
    jumps = [k for k, row in enumerate(samples["frames"]["jump"]) if any(row)]
    assert jumps == [125, 126]
    assert [(m.name, m.frame) for m in scene.timeline_markers] == [("Robot check: file sample", 14)]
    summary = scene.articulate.last_summary
    assert summary.startswith("1 of 49 frames flagged") and "the file's own samples:" in summary and "jump 2" in summary
    csv_report = tmp_path / "check.csv"
    assert bpy.ops.articulate.trajectory_check(report_path=str(csv_report)) == {"FINISHED"}
    rows = csv_report.read_text().splitlines()
    assert rows[0].endswith(",file_sample_flagged") and len(rows) == 50
    assert [k + 1 for k, row in enumerate(rows[1:]) if row.endswith(",1")] == [14]


def test_file_samples_survive_save_and_reload(ur5, core, tmp_path):
    """The stored samples are part of the .blend: after reopening it, the check still flags the spike."""
    path, _t, _q = _spike_file(core, ur5, tmp_path)
    assert bpy.ops.articulate.trajectory_import(filepath=path, use_file_timing=False) == {"FINISHED"}
    blend = tmp_path / "spike.blend"
    name = ur5.name
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    arm = bpy.data.objects[name]
    bpy.context.view_layer.objects.active = arm
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 5  # a narrower scene is not what is checked
    assert bpy.ops.articulate.trajectory_check() == {"FINISHED"}
    assert bpy.context.scene.articulate.last_summary.startswith("1 of 49 frames flagged")
    assert [m.frame for m in bpy.context.scene.timeline_markers] == [14]


def test_a_damaged_stored_trajectory_is_reported(ur5, core, tmp_path):
    ur5["articulate_trajectory"] = '{"source": "x.csv"}'
    with pytest.raises(RuntimeError, match="stored trajectory .* is damaged"):
        bpy.ops.articulate.trajectory_check()
    with pytest.raises(RuntimeError, match="delete the property or import the trajectory again"):
        bpy.ops.articulate.trajectory_export(filepath=str(tmp_path / "o.csv"))
    assert not (tmp_path / "o.csv").exists()


def _target_keys(target, frame):
    bpy.context.scene.frame_set(frame)
    return np.array(target.matrix_world)


def test_cartesian_import_takes_the_files_clock_and_range(ur5, core, tmp_path):
    """A 50 Hz pose file sets 50 fps and its range, and check/export then cover that range."""
    scene = bpy.context.scene
    t = np.arange(26) / 50.0
    poses = core.trajectory.PoseTrajectory(t, np.c_[0.4 + 0.1 * t, 0.1 + 0 * t, 0.4 + 0 * t],
                                           np.tile([0.0, 1.0, 0.0, 0.0], (26, 1)))
    core.trajectory.write_pose_csv(tmp_path / "p.csv", poses)
    assert bpy.ops.articulate.cartesian_import(filepath=str(tmp_path / "p.csv"), start_frame=3,
                                               bake=False) == {"FINISHED"}
    assert _timing(scene) == (50, 1.0, 3, 28)
    stored = json.loads(ur5["articulate_trajectory"])
    assert (stored["kind"], stored["frame_start"], stored["frame_end"]) == ("poses", 3, 28) and "times" not in stored
    scene.frame_start, scene.frame_end = 1, 2
    out = tmp_path / "o.csv"
    assert bpy.ops.articulate.trajectory_export(filepath=str(out)) == {"FINISHED"}
    assert len(core.trajectory.read_joint_csv(out)) == 26


@pytest.mark.parametrize("pose_frame", ["WORLD", "BASE"])
def test_cartesian_poses_in_world_or_robot_base(ur5, core, tmp_path, pose_frame):
    """With the rig moved, turned and scaled: World keys the target at the file's poses, Robot Base at the rig's
    transform times them (rotation without the scale)."""
    M = Matrix.Translation((1.0, -2.0, 0.5)) @ Matrix.Rotation(0.7, 4, "Z") @ Matrix.Scale(2.0, 4)
    ur5.matrix_world = M
    src = EXAMPLES / "ur5_cartesian_poses.csv"
    poses = core.trajectory.read_pose_csv(src)
    assert bpy.ops.articulate.cartesian_import(filepath=str(src), bake=False, pose_frame=pose_frame) == {"FINISHED"}
    assert bpy.context.scene.render.fps == 10
    target = ur5.articulate.chains[0].target
    A = np.array(M)
    R = A[:3, :3] / 2.0
    for k in range(len(poses)):
        got = _target_keys(target, 1 + k)
        rot = core.model.rotations.quat_to_matrix(poses.quaternions[k])
        want_p, want_R = poses.positions[k], rot
        if pose_frame == "BASE":
            want_p, want_R = A[:3, :3] @ want_p + A[:3, 3], R @ rot
        np.testing.assert_allclose(got[:3, 3], want_p, atol=1e-5)
        np.testing.assert_allclose(got[:3, :3], want_R, atol=1e-5)


def test_tracker_import_takes_the_files_clock(empty_scene, tmp_path, addon_module):
    """The 60 Hz tracker example (stamps rounded to 0.1 ms) sets 60 fps exactly and frames 1..4, keyed on
    whole frames; with the option off, the samples keep their times at the scene's 24 fps."""
    scene = bpy.context.scene
    compat = addon_module("operators.compat")
    assert bpy.ops.articulate.trackers_import(filepath=str(EXAMPLES / "trackers.csv")) == {"FINISHED"}
    assert _timing(scene) == (60, 1.0, 1, 4)
    hand = bpy.data.objects["tracker.hand_l"]
    assert [k.co[0] for k in compat.find_fcurve(hand, "location", 1).keyframe_points] == [1.0, 2.0, 3.0, 4.0]
    for frame, y in ((1, 0.30), (4, 0.33)):
        scene.frame_set(frame)
        assert hand.matrix_world.translation.y == pytest.approx(y, abs=1e-6)
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = 24, 1.0
    assert bpy.ops.articulate.trackers_import(filepath=str(EXAMPLES / "trackers.csv"),
                                              use_file_timing=False) == {"FINISHED"}
    keys = [k.co[0] for k in compat.find_fcurve(bpy.data.objects["tracker.hand_l"], "location", 1).keyframe_points]
    np.testing.assert_allclose(keys, [1.0, 1.0 + 0.0167 * 24, 1.0 + 0.0333 * 24, 1.0 + 0.05 * 24], atol=1e-5)


def test_joint_example_imports_at_its_10_hz(ur5, core, tmp_path):
    """The documented joint example keys the UR5 on frames 1..5 of a 10 fps scene, its values as written."""
    src = EXAMPLES / "ur5_joint_trajectory.csv"
    assert bpy.ops.articulate.trajectory_import(filepath=str(src)) == {"FINISHED"}
    assert _timing(bpy.context.scene) == (10, 1.0, 1, 5)
    out = tmp_path / "o.csv"
    assert bpy.ops.articulate.trajectory_export(filepath=str(out)) == {"FINISHED"}
    np.testing.assert_allclose(core.trajectory.read_joint_csv(out).positions,
                               core.trajectory.read_joint_csv(src, _names(ur5)).positions, atol=1e-6)


def test_cartesian_import_whose_bake_fails_leaves_the_scene_as_it_was(ur5, core, tmp_path):
    """Import with Bake on, and a bake that refuses (every chain disabled): the target keeps its own keys and
    rotation mode, no F-curve is left behind, the scene keeps its clock and range, nothing is stored on the rig."""
    scene = bpy.context.scene
    scene.render.fps, scene.frame_start, scene.frame_end = 24, 1, 40
    target = ur5.articulate.chains[0].target
    target.rotation_mode = "XYZ"
    for f, x in ((1, 0.3), (20, 0.5)):
        target.location.x = x
        target.keyframe_insert("location", index=0, frame=f)
    before = [tuple(k.co) for k in _location_x(target).keyframe_points]
    for chain in ur5.articulate.chains:
        chain.enabled = False
    t = np.arange(26) / 50.0
    poses = core.trajectory.PoseTrajectory(t, np.c_[0.4 + 0.1 * t, 0.1 + 0 * t, 0.4 + 0 * t],
                                           np.tile([0.0, 1.0, 0.0, 0.0], (26, 1)))
    core.trajectory.write_pose_csv(tmp_path / "p.csv", poses)
    with pytest.raises(RuntimeError, match="not imported.*no enabled chain"):
        bpy.ops.articulate.cartesian_import(filepath=str(tmp_path / "p.csv"), start_frame=3, bake=True)
    assert _timing(scene) == (24, 1.0, 1, 40)
    assert target.rotation_mode == "XYZ" and "articulate_trajectory" not in ur5
    assert [tuple(k.co) for k in _location_x(target).keyframe_points] == before
    paths = {(fc.data_path, fc.array_index) for fc in _fcurves(target)}
    assert paths == {("location", 0)}


def _fcurves(obj):
    action = obj.animation_data.action
    if hasattr(action, "fcurves") and bpy.app.version < (4, 4, 0):
        return list(action.fcurves)
    return [fc for layer in action.layers for strip in layer.strips for bag in strip.channelbags for fc in bag.fcurves]


def _location_x(obj):
    return next(fc for fc in _fcurves(obj) if fc.data_path == "location" and fc.array_index == 0)


def test_check_with_a_report_path_it_cannot_write_changes_nothing(ur5):
    """A report path that is a folder: the check refuses before it marks any frame."""
    markers = len(bpy.context.scene.timeline_markers)
    with pytest.raises(RuntimeError, match="is a folder"):
        bpy.ops.articulate.trajectory_check(report_path=str(EXAMPLES))
    assert len(bpy.context.scene.timeline_markers) == markers
