# SPDX-License-Identifier: GPL-3.0-or-later
"""Full-body bake on a CMU skeleton imported with Blender's BVH importer: head and hands meet the trackers."""

import json

import bpy
import numpy as np
import pytest
from data_files import REPO_ROOT, data_file

MOCAP = data_file("mocap", "cmu_131_02.bvh")
FRAMES = 40


@pytest.fixture
def cmu(empty_scene, addon):
    """The CMU skeleton with its motion, and three empties keyed on its head and hands (the trackers)."""
    return cmu_tracked(FRAMES)


def cmu_tracked(frames: int):
    """The CMU skeleton with its motion, and three empties keyed on its head and hands on ``frames`` frames."""
    bpy.ops.import_anim.bvh(filepath=str(MOCAP), frame_start=1, use_fps_scale=False)
    arm = bpy.context.object
    scene = bpy.context.scene
    bones = {"head": "Head", "hand_l": "LeftWrist", "hand_r": "RightWrist"}  # the CMU joints' bones
    samples = {k: [] for k in bones}
    for f in range(1, frames + 1):
        scene.frame_set(f)
        for k, b in bones.items():
            samples[k].append(np.array(arm.matrix_world @ arm.pose.bones[b].matrix))
    trackers = {}
    for k, mats in samples.items():
        empty = bpy.data.objects.new(f"tracker.{k}", None)
        scene.collection.objects.link(empty)
        for f, M in enumerate(mats, start=1):
            empty.matrix_world = __import__("mathutils").Matrix(M.tolist())
            empty.keyframe_insert("location", frame=f)
            empty.keyframe_insert("rotation_euler", frame=f)
        trackers[k] = empty
        setattr(arm.articulate.body, k, empty)
    arm.articulate.body.reference_frame = 1
    bpy.context.view_layer.objects.active = arm
    return arm, trackers


def test_roles_are_detected_on_the_cmu_skeleton(cmu):
    """Detect Roles maps the CMU bone names (hips, spine, arms, legs) into the panel's list."""
    arm, _ = cmu
    assert bpy.ops.articulate.body_detect_roles() == {"FINISHED"}
    roles = {r.role: r.bone for r in arm.articulate.body.roles}
    assert roles["pelvis"] == "Hips" and roles["head"] == "Head"
    assert roles["hand_l"] == "LeftWrist" and roles["forearm_r"] == "RightElbow"
    assert roles["thigh_l"] == "LeftHip" and roles["shin_r"] == "RightKnee"


def test_bake_puts_head_and_hands_on_their_trackers(cmu, tmp_path):
    """After the bake, the head and hand bones sit within 1 mm of their trackers on every frame."""
    arm, trackers = cmu
    report = tmp_path / "body.json"
    assert bpy.ops.articulate.body_bake(use_scene_range=False, frame_start=1, frame_end=FRAMES,
                                        report_path=str(report)) == {"FINISHED"}
    data = json.loads(report.read_text())
    assert data["max_reachable_error_m"] < 1e-3
    scene = bpy.context.scene
    for f in (1, 17, FRAMES):
        scene.frame_set(f)
        for k, b in {"head": "Head", "hand_l": "LeftWrist", "hand_r": "RightWrist"}.items():
            bone = np.array(arm.matrix_world @ arm.pose.bones[b].head)
            assert np.linalg.norm(bone - np.array(trackers[k].matrix_world.translation)) < 2e-3


def test_missing_tracker_and_bad_roles_fail_cleanly(cmu):
    """No hand tracker, or a role map naming a missing bone: a clear error and no new keys."""
    arm, _ = cmu
    before = len(arm.animation_data.action.fcurves) if hasattr(arm.animation_data.action, "fcurves") else None
    arm.articulate.body.hand_r = None
    with pytest.raises(RuntimeError, match="hand_r"):
        bpy.ops.articulate.body_bake()
    arm.articulate.body.hand_r = bpy.data.objects["tracker.hand_r"]
    item = arm.articulate.body.roles.add()
    item.role, item.bone = "pelvis", "NoSuchBone"
    with pytest.raises(RuntimeError, match="NoSuchBone"):
        bpy.ops.articulate.body_bake()
    if before is not None:
        assert len(arm.animation_data.action.fcurves) == before


def test_tracker_csv_import_and_errors(empty_scene, addon, tmp_path):
    """A tracker CSV becomes three animated empties; a bad cell is reported with its line."""
    fields = ("x", "y", "z", "qw", "qx", "qy", "qz")
    cols = ["time"] + [f"{t}_{f}" for t in ("head", "hand_l", "hand_r") for f in fields]
    pose = [1.6, 0, 0, 1, 0, 0, 0, 0.3, 0.4, 1.0, 1, 0, 0, 0, -0.3, 0.4, 1.0, 1, 0, 0, 0]
    rows = [[i / 24] + pose for i in range(10)]
    path = tmp_path / "trackers.csv"
    path.write_text(",".join(cols) + "\n" + "\n".join(",".join(str(v) for v in r) for r in rows) + "\n")
    assert bpy.ops.articulate.trackers_import(filepath=str(path)) == {"FINISHED"}
    assert {"tracker.head", "tracker.hand_l", "tracker.hand_r"} <= set(bpy.data.objects.keys())
    lines = path.read_text().splitlines()
    lines[3] = lines[3].replace("1.6", "abc", 1)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(RuntimeError, match="line 4"):
        bpy.ops.articulate.trackers_import(filepath=str(path))


def test_constraint_driven_bones_are_refused(cmu):
    """A mapped bone driven by Copy Transforms would ignore its keys: the bake refuses and says why."""
    arm, _ = cmu
    con = arm.pose.bones["LeftElbow"].constraints.new("COPY_TRANSFORMS")
    con.target = bpy.data.objects["tracker.head"]
    with pytest.raises(RuntimeError, match="follow constraints.*LeftElbow"):
        bpy.ops.articulate.body_bake()


def test_rig_away_from_its_trackers_is_warned_measured_and_aligned(cmu, tmp_path):
    """A rig standing 2 m from its trackers: the bake warns, the report measures the offset in world space,
    and Align Rig to Trackers stands it back under them (the next bake puts the bones on the trackers)."""
    arm, trackers = cmu
    arm.location, arm.rotation_euler, arm.scale = (2.0, 0.5, 0.0), (0.0, 0.0, 0.6), (1.1, 1.1, 1.1)
    report = tmp_path / "body.json"
    assert bpy.ops.articulate.body_bake(use_scene_range=False, frame_start=1, frame_end=FRAMES,
                                        report_path=str(report)) == {"FINISHED"}
    data = json.loads(report.read_text())
    assert data["calibration_offsets_m"]["head"] > 1.0 and any("tracker head" in w for w in data["warnings"])
    assert data["max_world_error_m"] > 1.0  # what playback shows, not the error against the kept offsets
    summary = arm.articulate.body.last_summary
    assert "of their goals" in summary and f"{data['max_world_error_m'] * 1000:.3g} mm from the trackers" in summary
    assert bpy.ops.articulate.body_align() == {"FINISHED"}
    np.testing.assert_allclose(np.array(arm.matrix_world), np.eye(4), atol=1e-4)
    assert bpy.ops.articulate.body_bake(use_scene_range=False, frame_start=1, frame_end=FRAMES,
                                        report_path=str(report)) == {"FINISHED"}
    data = json.loads(report.read_text())
    assert data["warnings"] == [] and data["max_world_error_m"] < 2e-3


@pytest.mark.slow
def test_cli_body_exits_3_on_warnings_and_takes_a_step(cmu, tmp_path):
    """`cli.py body`: exit 0 when the bake has nothing to warn about, exit 3 (warnings on stderr) for a rig
    standing away from its trackers; `--frames A-B:N` keys every N-th frame; a step is refused by ik-to-fk."""
    from test_cli import run_cli

    arm, trackers = cmu
    args = ["--armature", arm.name, "--head", trackers["head"].name, "--hand-l", trackers["hand_l"].name,
            "--hand-r", trackers["hand_r"].name, "--reference-frame", "1"]
    good = tmp_path / "good.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(good))
    report = tmp_path / "body.json"
    proc = run_cli("body", str(good), *args, "--frames", f"1-{FRAMES}:3", "--report", str(report), tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert json.loads(report.read_text())["frames"] == list(range(1, FRAMES + 1, 3))
    arm.location = (2.0, 0.5, 0.0)
    away = tmp_path / "away.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(away))
    proc = run_cli("body", str(away), *args, "--frames", f"1-{FRAMES}", tmp_path=tmp_path)
    assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "warning" in proc.stderr and "tracker head" in proc.stderr
    proc = run_cli("ik-to-fk", str(good), "--armature", arm.name, "--frames", "1-20:2", tmp_path=tmp_path)
    assert proc.returncode == 2 and "every frame" in proc.stderr


def test_bundled_tracker_take_is_the_one_made_from_the_bundled_mocap(addon, tmp_path):
    """data/mocap/cmu_131_01_trackers.csv is what dev/doc_pictures.py writes from cmu_131_01.bvh (75 frames at
    30 Hz, head and both hands), so the full-body guide's input is reproducible from the repository."""
    import sys

    sys.path.insert(0, str(REPO_ROOT / "dev"))
    try:
        import doc_pictures
    finally:
        sys.path.remove(str(REPO_ROOT / "dev"))
    bundled = data_file("mocap", "cmu_131_01_trackers.csv")
    assert doc_pictures.TRACKERS == bundled
    again = tmp_path / "again.csv"
    doc_pictures.write_mocap_trackers(addon.__name__, again)
    assert again.read_text().splitlines()[0] == bundled.read_text().splitlines()[0]
    a, b = (np.loadtxt(p, delimiter=",", skiprows=1) for p in (bundled, again))
    assert a.shape == (75, 1 + 3 * 7)
    np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)  # 6 significant digits in the file
    np.testing.assert_allclose(np.diff(a[:, 0]), 1 / 30, atol=1e-4)


# Known Steps of the test below: the left foot steps on frames 61-89, the right on 101-179.
KNOWN = {"l": [(1, 60), (90, 240)], "r": [(1, 100), (180, 240)]}


def _still(arm, bone: str, first: int, last: int) -> float:
    """Largest horizontal distance [m] of ``bone``'s head from its place on ``first``, over ``first``..``last``."""
    scene = bpy.context.scene
    points = []
    for f in range(first, last + 1):
        scene.frame_set(f)
        points.append(np.array(arm.matrix_world @ arm.pose.bones[bone].head)[:2])
    return float(np.max(np.linalg.norm(np.array(points) - points[0], axis=-1)))


def test_known_steps_time_the_feet(empty_scene, addon, tmp_path):
    """Known Steps (the panel's foot contacts): the bake's feet lift and land on their frames and stand still
    on the listed contacts (blends aside), the report gives the steps; on with empty lists, a clear error;
    `cli.py body --steps CSV` does the same from a file and refuses a bad line (exit 2)."""
    from test_cli import run_cli

    arm, trackers = cmu_tracked(240)
    body = arm.articulate.body
    body.use_steps = True
    with pytest.raises(RuntimeError, match="neither foot lists a contact"):
        bpy.ops.articulate.body_bake(use_scene_range=False, frame_start=1, frame_end=240)
    csv = tmp_path / "steps.csv"
    csv.write_text("foot,frame_start,frame_end\n" + "".join(
        f"{foot},{a},{b}\n" for foot, spans in KNOWN.items() for a, b in spans))
    blend = tmp_path / "known.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    report = tmp_path / "body.json"
    args = ["--armature", arm.name, "--head", trackers["head"].name, "--hand-l", trackers["hand_l"].name,
            "--hand-r", trackers["hand_r"].name, "--reference-frame", "1", "--frames", "1-240"]
    proc = run_cli("body", str(blend), *args, "--steps", str(csv), "--report", str(report), tmp_path=tmp_path)
    assert proc.returncode in (0, 3), proc.stdout[-2000:] + proc.stderr[-2000:]
    steps = json.loads(report.read_text())["steps"]
    assert steps == {"known": 2, "lift": [61, 101], "land": [90, 180], "foot": ["l", "r"]}
    bad = tmp_path / "bad.csv"
    bad.write_text("foot,frame_start,frame_end\nl,1,60\nx,5,9\n")
    proc = run_cli("body", str(blend), *args, "--steps", str(bad), tmp_path=tmp_path)
    assert proc.returncode == 2 and "line 3" in proc.stderr, proc.stderr[-2000:]
    # The same from the panel's lists, in this session.
    for foot, spans in KNOWN.items():
        items = getattr(body, f"contacts_{foot}")
        for a, b in spans:
            item = items.add()
            item.frame_start, item.frame_end = a, b
    panel_report = tmp_path / "panel.json"
    assert bpy.ops.articulate.body_bake(use_scene_range=False, frame_start=1, frame_end=240,
                                        report_path=str(panel_report)) == {"FINISHED"}
    assert json.loads(panel_report.read_text())["steps"] == steps
    blend_frames = 12  # plant_blend and the swing's push-off, at 120 fps
    for foot, bone in (("l", "LeftAnkle"), ("r", "RightAnkle")):
        for a, b in KNOWN[foot]:
            assert _still(arm, bone, a + blend_frames, b - blend_frames) < 2e-3, (foot, a, b)
    # Each foot moves during its step.
    assert _still(arm, "LeftAnkle", 61, 90) > 0.01 or _still(arm, "RightAnkle", 101, 180) > 0.01


def test_known_steps_lists_add_and_remove(cmu):
    """The Known Steps lists' + adds a contact of that foot on the current frame, - removes the selected one."""
    arm, _ = cmu
    body = arm.articulate.body
    bpy.context.scene.frame_set(7)
    assert bpy.ops.articulate.body_contact_add(foot="r") == {"FINISHED"}
    assert [(c.frame_start, c.frame_end) for c in body.contacts_r] == [(7, 7)] and not len(body.contacts_l)
    assert bpy.ops.articulate.body_contact_remove(foot="r") == {"FINISHED"}
    assert not len(body.contacts_r)
    with pytest.raises(RuntimeError, match="no contact of the left foot"):
        bpy.ops.articulate.body_contact_remove(foot="l")


def _foot_path(arm, bones: list[str], frames: range) -> np.ndarray:
    """(F, B, 3) world head positions of ``bones`` on ``frames``."""
    scene = bpy.context.scene
    out = []
    for f in frames:
        scene.frame_set(f)
        out.append([np.array(arm.matrix_world @ arm.pose.bones[b].head) for b in bones])
    return np.array(out)


def test_known_steps_detected_from_the_capture(empty_scene, addon, tmp_path):
    """Detect Known Steps fills each foot's list from the armature's own animation: on every listed contact
    the foot (ankle or ball) stands nearly still near its lowest height, between two contacts of a foot it
    swings, and at every frame of the walk some foot rests. A range of one frame is refused, lists kept.
    `cli.py body --steps animation` bakes with the same steps."""
    from test_cli import run_cli

    arm, trackers = cmu_tracked(240)
    body = arm.articulate.body
    blend = tmp_path / "capture.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    assert bpy.ops.articulate.body_steps_detect(use_scene_settings=False, frame_start=1, frame_end=240) == {"FINISHED"}
    assert body.use_steps
    frames = range(1, 241)
    resting = np.zeros(len(frames), dtype=bool)
    for foot, bones in (("l", ["LeftAnkle", "LeftToe"]), ("r", ["RightAnkle", "RightToe"])):
        spans = [(c.frame_start, c.frame_end) for c in getattr(body, f"contacts_{foot}")]
        assert spans, foot
        path = _foot_path(arm, bones, frames)
        speed = np.linalg.norm(np.diff(path, axis=0), axis=-1) * 120.0  # m/s at 120 fps, (F-1, B)
        low = path[..., 2].min(axis=0)
        for a, b in spans:
            i, j = a - 1, b - 1
            assert i <= j
            # Some part of the foot stays near its lowest height and slow through the contact.
            near = (path[i : j + 1, :, 2] - low < 0.05).all(axis=0)
            slow = np.median(speed[i:max(j, i + 1)], axis=0) < 0.3
            assert (near & slow).any(), (foot, a, b)
            resting[i : j + 1] = True
        for (_, b), (a, _) in zip(spans[:-1], spans[1:]):
            assert np.abs(path[a - 1, :, :2] - path[b - 1, :, :2]).max() > 0.05, (foot, b, a)  # a step between
    assert resting.mean() > 0.9
    before = [(c.frame_start, c.frame_end) for c in body.contacts_l]
    with pytest.raises(RuntimeError, match="at least two frames"):
        bpy.ops.articulate.body_steps_detect(use_scene_settings=False, frame_start=5, frame_end=5)
    assert [(c.frame_start, c.frame_end) for c in body.contacts_l] == before
    report = tmp_path / "body.json"
    proc = run_cli("body", str(blend), "--armature", arm.name, "--head", trackers["head"].name,
                   "--hand-l", trackers["hand_l"].name, "--hand-r", trackers["hand_r"].name, "--reference-frame", "1",
                   "--frames", "1-240", "--steps", "animation", "--report", str(report), tmp_path=tmp_path)
    assert proc.returncode in (0, 3), proc.stdout[-2000:] + proc.stderr[-2000:]
    steps = json.loads(report.read_text())["steps"]
    # Each foot lands on the first frame of each of its contacts (the first one too where it starts mid-take).
    landings = sorted(c.frame_start for f in "lr" for k, c in enumerate(getattr(body, f"contacts_{f}"))
                      if k or c.frame_start > 1)
    assert sorted(steps["land"]) == landings and steps["known"] == len(landings) >= 2


# Found by dev/fuzz_body.py (random humanoids, trackers and settings through the body operators):

def _key_tracker(arm, name: str, bone: str, frames: int):
    """An empty keyed on ``bone``'s pose over ``frames`` frames, set as the body's ``name`` tracker."""
    scene = bpy.context.scene
    mats = []
    for f in range(1, frames + 1):
        scene.frame_set(f)
        mats.append(arm.matrix_world @ arm.pose.bones[bone].matrix)
    empty = bpy.data.objects.new(f"tracker.{name}", None)
    scene.collection.objects.link(empty)
    for f, M in enumerate(mats, start=1):
        empty.matrix_world = M
        empty.keyframe_insert("location", frame=f)
        empty.keyframe_insert("rotation_euler", frame=f)
    setattr(arm.articulate.body, name, empty)
    return empty


@pytest.mark.parametrize("feet", [("foot_l",), ("foot_l", "foot_r")])
def test_foot_trackers_without_a_pelvis_tracker_bake(cmu, tmp_path, feet):
    """Foot trackers without a pelvis tracker are allowed, but the bake passed the trackers side by side and the
    solve, reading them by column, took the left foot's for the pelvis: refused on every take. Now they bake and
    the report lists them."""
    arm, _ = cmu
    for name in feet:
        _key_tracker(arm, name, {"foot_l": "LeftAnkle", "foot_r": "RightAnkle"}[name], FRAMES)
    report = tmp_path / "body.json"
    assert bpy.ops.articulate.body_bake(use_scene_range=False, frame_start=1, frame_end=FRAMES,
                                        report_path=str(report)) == {"FINISHED"}
    data = json.loads(report.read_text())
    assert data["trackers"] == ["head", "hand_l", "hand_r", *feet] and data["max_reachable_error_m"] < 1e-3


def test_a_floor_above_the_ankles_at_the_reference_frame_is_refused_naming_the_floor_height(cmu):
    """Floor Height above the rig's ankles at the reference frame stopped the bake with "clearance must be a finite
    number >= 0", which names no setting; now the refusal says which ankle, by how much, and what to change."""
    arm, _ = cmu
    arm.articulate.body.floor = 0.5
    with pytest.raises(RuntimeError, match=r"ankle is [0-9.]+ m below the floor \(floor height 0.5 m\).*lower the "
                                           r"floor height, or pick a reference frame") as refused:
        bpy.ops.articulate.body_bake(use_scene_range=False, frame_start=1, frame_end=FRAMES)
    assert "clearance" not in str(refused.value)


def test_a_tracker_dropout_on_the_reference_frame_is_refused_as_such(empty_scene, addon, tmp_path):
    """A tracker CSV whose right hand is lost on its first row (the reference frame): the refusal read as a shape
    error ("must be a finite (4, 4) pose, got shape (4, 4)"); now it names the dropout and what to pick."""
    bpy.ops.import_anim.bvh(filepath=str(data_file("mocap", "cmu_131_01.bvh")), frame_start=1, use_fps_scale=False)
    arm = bpy.context.object
    lines = data_file("mocap", "cmu_131_01_trackers.csv").read_text().splitlines()
    header, row = lines[0].split(","), lines[1].split(",")
    lines[1] = ",".join("" if col.startswith("hand_r_") else cell for col, cell in zip(header, row))
    csv = tmp_path / "trackers.csv"
    csv.write_text("\n".join(lines[:31]) + "\n")
    bpy.context.view_layer.objects.active = arm
    assert bpy.ops.articulate.trackers_import(filepath=str(csv)) == {"FINISHED"}
    arm.articulate.body.reference_frame = 1
    with pytest.raises(RuntimeError, match=r"tracker 'hand_r' has no pose on the reference frame \(NaN or infinite "
                                           r"values: a dropout\); pick a reference frame where every tracker is seen"):
        bpy.ops.articulate.body_bake(use_scene_range=False, frame_start=1, frame_end=30)


def test_detect_known_steps_on_a_foot_without_a_position_is_refused_naming_the_frames(cmu):
    """A foot bone keyed NaN (a capture's dropout): Detect Known Steps stopped with an unexpected error from the
    contact detection (found by dev/fuzz_body.py); now it names the bone and the frames."""
    arm, _ = cmu
    assert bpy.ops.articulate.body_detect_roles() == {"FINISHED"}
    foot = {r.role: r.bone for r in arm.articulate.body.roles}["foot_l"]
    pb = arm.pose.bones[foot]
    pb.location = (float("nan"),) * 3
    for f in (1, FRAMES):
        pb.keyframe_insert("location", frame=f)
    with pytest.raises(RuntimeError, match=rf"bone '{foot}' has no position \(NaN\) on frame\(s\) 1-{FRAMES}") as err:
        bpy.ops.articulate.body_steps_detect(use_scene_settings=False, frame_start=1, frame_end=FRAMES)
    assert "unexpected" not in str(err.value)
