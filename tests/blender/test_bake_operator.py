# SPDX-License-Identifier: GPL-3.0-or-later
"""The bake keys what the core solves, reports misses, and changes nothing when it fails."""

import json
import math

import bpy
import numpy as np
import pytest


@pytest.fixture
def demo(empty_scene, addon_module):
    """The bundled example scene (3-bone arm with one chain, animated target), 30 frames."""
    return addon_module("operators.demo").build_demo_scene(frames=30)


def _bake(**overrides):
    kwargs = dict(use_scene_settings=False, frame_start=1, frame_end=30)
    kwargs.update(overrides)
    return bpy.ops.articulate.bake(**kwargs)


def _state():
    """Everything a failed bake must leave alone: every object's keys, pose and markers."""
    bpy.context.view_layer.update()  # compare evaluated state, not matrices awaiting an update
    state = [bpy.context.scene.frame_current]
    for obj in bpy.data.objects:
        adt = obj.animation_data
        keys = []
        if adt and adt.action:
            for layer in getattr(adt.action, "layers", []):
                for strip in layer.strips:
                    for bag in strip.channelbags:
                        keys += [(fc.data_path, fc.array_index, tuple(tuple(k.co) for k in fc.keyframe_points))
                                 for fc in bag.fcurves]
            if hasattr(adt.action, "fcurves"):
                keys += [(fc.data_path, fc.array_index, tuple(tuple(k.co) for k in fc.keyframe_points))
                         for fc in adt.action.fcurves]
        pose = [tuple(pb.matrix_basis.col[i][j] for i in range(4) for j in range(4))
                for pb in obj.pose.bones] if obj.pose else []
        cons = [(pb.name, c.name, c.mute) for pb in obj.pose.bones for c in pb.constraints] if obj.pose else []
        state.append((obj.name, sorted(keys), pose, cons, tuple(obj.matrix_world.col[3])))
    markers = [(m.name, m.frame) for m in bpy.context.scene.timeline_markers]
    return repr((state, markers))  # repr: a NaN key must compare equal to itself


def _target_x_curve():
    target = bpy.data.objects["Target"]
    adt = target.animation_data
    if bpy.app.version >= (4, 4):
        bag = adt.action.layers[0].strips[0].channelbag(adt.action_slot)
        return bag.fcurves.find("location", index=0)
    return adt.action.fcurves.find("location", index=0)


@pytest.mark.parametrize("solver", ["dls", "fabrik", "ccd"])
def test_baked_tip_follows_the_target_on_every_frame(demo, tmp_path, solver):
    """After the bake, frame_set puts the chain's tip on the target (within tolerance) on each frame."""
    arm, target = bpy.data.objects["Arm"], bpy.data.objects["Target"]
    arm.articulate.chains[0].solver = solver
    report = tmp_path / "r.json"
    assert _bake(report_path=str(report)) == {"FINISHED"}
    data = json.loads(report.read_text())
    assert data["missed_frames"] == [] and len(data["frames"]) == 30
    tip = arm.pose.bones[demo["tip_bone"]]
    for f in (1, 11, 30):
        bpy.context.scene.frame_set(f)
        tail = np.array(arm.matrix_world @ tip.tail)
        assert np.linalg.norm(tail - np.array(target.matrix_world.translation)) < 2e-4


def test_bake_respects_the_bones_ik_limits(demo, core):
    """A locked Y axis (no twist about the bone) and an X range on the elbow hold on every baked frame.

    Blender's IK reads a bone's limits as a twist about its Y axis and a swing about X and Z,
    so the twist is measured by swing-twist decomposition (an Euler Y angle is not a twist).
    """
    arm = bpy.data.objects["Arm"]
    elbow = arm.pose.bones["Elbow"]
    elbow.lock_ik_y = True
    elbow.use_ik_limit_x, elbow.ik_min_x, elbow.ik_max_x = True, math.radians(-5), math.radians(120)
    assert _bake() == {"FINISHED"}
    rot = core.model.rotations
    for f in range(1, 31, 3):
        bpy.context.scene.frame_set(f)
        q = np.array(elbow.matrix_basis.to_quaternion())
        assert abs(rot.twist_angle(q, np.array([0.0, 1.0, 0.0]))) < 1e-4
        swing, _ = rot.swing_twist(q, np.array([0.0, 1.0, 0.0]))
        sx = rot.quat_to_rotvec(swing)[0]
        assert math.radians(-5) - 1e-4 <= sx <= math.radians(120) + 1e-4


def test_a_two_bone_chain_whose_root_is_a_hinge_bakes_with_auto_and_keeps_its_locks(demo, tmp_path):
    """Auto picks the two-bone closed form for two bones, whose limb is a ball joint then a hinge. A root bone
    that IK Lock leaves one axis is a hinge itself: Auto then picks DLS for the chain (the bake failed with
    "is not a two-bone limb"), the locks hold on every frame and the report says which solver ran. Picked by
    hand, Two-bone still refuses the chain, saying what it needs."""
    arm = bpy.data.objects["Arm"]
    chain = arm.articulate.chains[0]
    chain.tip_bone, chain.chain_length = "Elbow", 2
    shoulder = arm.pose.bones["Shoulder"]
    shoulder.lock_ik_x = shoulder.lock_ik_y = True
    report = tmp_path / "report.json"
    assert _bake(report_path=str(report)) == {"FINISHED"}
    (entry,) = json.loads(report.read_text())["chains"]
    assert (entry["solver_setting"], entry["solver"]) == ("auto", "dls")
    for f in range(1, 31, 3):
        bpy.context.scene.frame_set(f)
        x, y, _ = shoulder.matrix_basis.to_euler("ZXY")
        assert abs(x) < 1e-4 and abs(y) < 1e-4
    chain.solver = "two_bone"
    before = _state()
    with pytest.raises(RuntimeError, match="not a two-bone limb"):
        _bake()
    assert _state() == before


def test_only_the_baked_range_is_replaced(demo, addon_module):
    """Keys outside the baked range stay exactly as they were."""
    assert _bake() == {"FINISHED"}
    arm = bpy.data.objects["Arm"]
    compat = addon_module("operators.compat")
    outside = {(fc.data_path, fc.array_index): [tuple(k.co) for k in fc.keyframe_points if k.co[0] > 20]
               for fc in compat.iter_fcurves(arm)}
    assert _bake(frame_start=5, frame_end=20) == {"FINISHED"}
    after = {(fc.data_path, fc.array_index): [tuple(k.co) for k in fc.keyframe_points if k.co[0] > 20]
             for fc in compat.iter_fcurves(arm)}
    assert after == outside


def test_unreachable_frames_are_reported_and_marked(demo, tmp_path):
    """Moving the target out of reach on some frames gives a WARNING, a report and timeline markers."""
    fc = _target_x_curve()
    for k in fc.keyframe_points[9:12]:  # frames 10-12 go 5 m away
        k.co[1] = 5.0
    fc.update()
    report = tmp_path / "r.json"
    assert _bake(report_path=str(report), mark_missed=True) == {"FINISHED"}
    data = json.loads(report.read_text())
    assert data["missed_frames"] == [10, 11, 12]
    chain = data["chains"][0]
    assert all(not ok for ok in chain["converged"][9:12]) and all(chain["converged"][:9])
    assert [m.frame for m in bpy.context.scene.timeline_markers if m.name.startswith("IK miss")] == [10, 11, 12]


def test_clear_bake_removes_the_range(demo, addon_module):
    """Clearing removes the chain bones' rotation keys inside the scene's bake range only."""
    assert _bake() == {"FINISHED"}
    settings = bpy.context.scene.articulate
    settings.frame_range, settings.frame_start, settings.frame_end = "CUSTOM", 10, 19
    assert bpy.ops.articulate.clear_bake() == {"FINISHED"}
    compat = addon_module("operators.compat")
    for fc in compat.iter_fcurves(bpy.data.objects["Arm"]):
        frames = [k.co[0] for k in fc.keyframe_points]
        assert frames == [f for f in range(1, 31) if not 10 <= f <= 19]


def test_solve_frame_poses_without_keys(demo):
    """Solving the current frame moves the tip onto the target and writes no key."""
    arm, target = bpy.data.objects["Arm"], bpy.data.objects["Target"]
    bpy.context.scene.frame_set(7)
    assert bpy.ops.articulate.solve_frame() == {"FINISHED"}
    bpy.context.view_layer.update()
    tail = np.array(arm.matrix_world @ arm.pose.bones["Wrist"].tail)
    assert np.linalg.norm(tail - np.array(target.matrix_world.translation)) < 2e-4
    assert arm.animation_data is None or arm.animation_data.action is None


def test_chains_from_ik_constraints(demo):
    """An IK constraint's chain length, target, pole and weights become a chain that bakes."""
    arm = bpy.data.objects["Arm"]
    arm.articulate.chains.clear()
    con = arm.pose.bones["Wrist"].constraints.new("IK")
    con.target, con.chain_count, con.weight = bpy.data.objects["Target"], 3, 0.8
    assert bpy.ops.articulate.chains_from_constraints() == {"FINISHED"}
    (chain,) = arm.articulate.chains
    assert (chain.tip_bone, chain.chain_length, chain.target.name, chain.constraint) == ("Wrist", 3, "Target", con.name)
    assert chain.weight_position == pytest.approx(0.8)
    assert _bake(mute_constraints=True) == {"FINISHED"}
    assert con.mute


def test_constraints_of_one_name_on_a_bone_and_the_bone_below_with_use_tail_off_stay_apart(demo):
    """Two IK constraints both named "IK": one on the elbow, one on the wrist with Use Tail off (its chain ends at
    the elbow too). Each becomes its own chain, converting again updates each in place, and the bake mutes both
    (it muted the elbow's twice and left the wrist's live, so Blender's IK moved the keyed bones in playback;
    found by a fuzz of random rigs)."""
    arm, target = bpy.data.objects["Arm"], bpy.data.objects["Target"]
    arm.articulate.chains.clear()
    elbow = arm.pose.bones["Elbow"].constraints.new("IK")
    wrist = arm.pose.bones["Wrist"].constraints.new("IK")
    assert elbow.name == wrist.name == "IK"
    elbow.target, elbow.chain_count = target, 1
    wrist.target, wrist.chain_count, wrist.use_tail = target, 2, False
    for _ in range(2):
        assert bpy.ops.articulate.chains_from_constraints() == {"FINISHED"}
        chains = {c.constraint_bone: (c.tip_bone, c.chain_length) for c in arm.articulate.chains}
        assert chains == {"Elbow": ("Elbow", 1), "Wrist": ("Elbow", 2)}
    assert _bake(mute_constraints=True) == {"FINISHED"}
    assert elbow.mute and wrist.mute


def test_a_chain_inside_another_bakes_with_it_as_one_tree(demo, tmp_path):
    """A second chain whose bones lie inside the first (its tip the elbow) is solved with it as one tree: the
    report says so, and each chain's residual is what playback shows between its own tip and target (the two
    targets cannot both be met on every frame: the tree gives the best compromise)."""
    arm = bpy.data.objects["Arm"]
    other = arm.articulate.chains.add()
    elbow = bpy.data.objects.new("ElbowTarget", None)
    bpy.context.scene.collection.objects.link(elbow)
    shoulder = np.array(arm.matrix_world @ arm.pose.bones["Shoulder"].head)
    tail = np.array(arm.matrix_world @ arm.pose.bones["Elbow"].tail)
    elbow.location = tuple(shoulder + 0.85 * (tail - shoulder) + [0.05, 0.0, 0.0])  # well in reach
    other.name, other.tip_bone, other.chain_length, other.target = "B", "Elbow", 2, elbow
    report_path = tmp_path / "tree.json"
    assert _bake(report_path=str(report_path)) == {"FINISHED"}
    report = json.loads(report_path.read_text())
    assert any("one tree" in note for note in report["notes"])
    by_name = {c["chain"]: c for c in report["chains"]}
    assert set(by_name) == {arm.articulate.chains[0].name, "B"}
    assert report["measured_by"] == "playback"
    scene = bpy.context.scene
    for k, f in enumerate(report["frames"][::7]):
        scene.frame_set(f)
        tip = np.array(arm.matrix_world @ arm.pose.bones["Elbow"].tail)
        shown = float(np.linalg.norm(tip - np.array(elbow.matrix_world.translation)))
        assert shown == pytest.approx(by_name["B"]["position_error_m"][7 * k], abs=1e-5)


def test_live_posing_refuses_overlapping_chains_by_name(demo, addon_module):
    """Live posing solves chain by chain: chains sharing a bone are refused with both names and the bone."""
    arm = bpy.data.objects["Arm"]
    other = arm.articulate.chains.add()
    other.name, other.tip_bone, other.chain_length = "B", "Elbow", 1
    other.target = arm.articulate.chains[0].target
    live = addon_module("operators.live")
    baking = addon_module("operators.baking")
    with pytest.raises(baking.BakeFailed, match=r"both move bone 'Elbow'.*must not overlap \(a bake solves them"):
        live.solve_live(arm)


def _break(kind):
    arm = bpy.data.objects["Arm"]
    chain = arm.articulate.chains[0]
    if kind == "no bone":
        chain.tip_bone = "Nope"
    elif kind == "renamed bone":
        arm.data.bones["Elbow"].name = "Elbow.renamed"
        chain.root_bone = "Elbow"
    elif kind == "deleted target":
        bpy.data.objects.remove(bpy.data.objects["Target"])
    elif kind == "non-uniform scale":
        arm.scale = (1.0, 2.0, 1.0)
        bpy.context.view_layer.update()
    elif kind == "nan target":
        fc = _target_x_curve()
        fc.keyframe_points[4].co[1] = float("nan")
        fc.update()
    elif kind == "zero scale target":
        bpy.data.objects["Target"].scale = (0.0, 0.0, 0.0)
        arm.articulate.chains[0].use_rotation = True
    elif kind == "no chains":
        arm.articulate.chains.clear()
    elif kind == "locked chain":
        for bone in arm.pose.bones:
            bone.lock_ik_x = bone.lock_ik_y = bone.lock_ik_z = True


@pytest.mark.parametrize(
    "kind, overrides, message",
    [
        ("no bone", {}, "no tip bone 'Nope'"),
        ("renamed bone", {}, "no root bone 'Elbow'"),
        ("deleted target", {}, "no target"),
        ("non-uniform scale", {}, "non-uniformly"),
        ("nan target", {}, "NaN"),
        ("zero scale target", {}, "zero scale"),
        ("no chains", {}, "no enabled chain"),
        ("locked chain", {}, "chain '.*': every bone of the chain is locked"),
        (None, {"frame_start": 10, "frame_end": 5}, "empty"),
        (None, {"armature": "Target"}, "not an armature"),
        (None, {"report_path": "/tmp"}, "is a folder"),
        (None, {"report_path": __file__ + "/report.json"}, "is a file, not a folder"),
    ],
)
def test_bad_input_fails_cleanly_and_changes_nothing(demo, kind, overrides, message):
    """Each bad input gives an error naming the problem, and no key, pose, constraint or marker changes."""
    if kind:
        _break(kind)
    before = _state()
    with pytest.raises(RuntimeError, match=message):
        _bake(**overrides)
    assert _state() == before


def test_linked_armature_is_refused(demo, tmp_path):
    """An armature linked from another file is read-only: a clear error, nothing changed."""
    path = str(tmp_path / "lib.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.read_homefile(use_empty=True)
    with bpy.data.libraries.load(path, link=True) as (src, dst):
        dst.objects = ["Arm", "Target"]
    for obj in dst.objects:
        bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = bpy.data.objects["Arm"]
    with pytest.raises(RuntimeError, match="linked"):
        _bake()


@pytest.mark.parametrize("mode", ["QUATERNION", "XYZ", "ZXY", "YZX", "AXIS_ANGLE"])
def test_bake_keys_each_rotation_mode_continuously(demo, addon_module, mode):
    """Bones in any rotation mode are keyed in that mode, reach the target, and never flip between frames."""
    arm, target = bpy.data.objects["Arm"], bpy.data.objects["Target"]
    for pb in arm.pose.bones:
        pb.rotation_mode = mode
    assert _bake() == {"FINISHED"}
    compat = addon_module("operators.compat")
    prop = {"QUATERNION": "rotation_quaternion", "AXIS_ANGLE": "rotation_axis_angle"}.get(mode, "rotation_euler")
    curves = compat.iter_fcurves(arm)
    assert curves and all(fc.data_path.endswith(prop) for fc in curves)
    # A quaternion sign flip jumps by ~2 per channel, an Euler wrap by 2*pi and a switch to the
    # other Euler decomposition by ~pi; near gimbal lock a smooth motion may still move an Euler
    # angle fast, so Euler channels get a looser bound than quaternion ones.
    bound = 0.5 if mode in ("QUATERNION", "AXIS_ANGLE") else 2.0
    for fc in curves:
        values = np.array([k.co[1] for k in fc.keyframe_points])
        assert np.max(np.abs(np.diff(values))) < bound
    for f in (3, 17, 29):
        bpy.context.scene.frame_set(f)
        tail = np.array(arm.matrix_world @ arm.pose.bones["Wrist"].tail)
        assert np.linalg.norm(tail - np.array(target.matrix_world.translation)) < 2e-4


def test_panel_report_file_is_written_by_panel_bakes_only(demo, tmp_path):
    """The Bake panel's Report File takes each bake run with the panel's settings; a script's run with its own
    range and no report path writes none, and an operator's own report path wins."""
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 30
    panel_report = tmp_path / "panel.json"
    scene.articulate.report_path = str(panel_report)
    assert bpy.ops.articulate.bake() == {"FINISHED"}
    report = json.loads(panel_report.read_text())
    assert report["frames"] == list(range(1, 31))
    panel_report.unlink()
    assert _bake() == {"FINISHED"}
    assert not panel_report.exists()
    own = tmp_path / "own.json"
    assert bpy.ops.articulate.bake(report_path=str(own)) == {"FINISHED"}
    assert own.is_file() and not panel_report.exists()


def test_blend_relative_report_file_is_written_beside_the_blend_without_a_warning(demo, tmp_path):
    """A Report File of ``//report.json`` (Blender's "relative to the .blend" prefix) is accepted without
    Blender 4.5+'s "does not support blend relative" warning (a RuntimeWarning is an error in these tests)
    and written beside the saved .blend."""
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 30
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot.blend"))
    scene = bpy.context.scene
    scene.articulate.report_path = "//reports/report.json"
    assert bpy.ops.articulate.bake() == {"FINISHED"}
    assert json.loads((tmp_path / "reports" / "report.json").read_text())["frames"] == list(range(1, 31))


def test_every_path_setting_accepts_blend_relative_paths(addon_module):
    """Every file or folder setting of the add-on, on the scene's settings and on its operators, says it takes
    "//" paths (each goes through bpy.path.abspath), where the Blender has that flag (4.5+; 4.2 has none)."""
    supported = "is_path_supports_blend_relative" in bpy.types.Property.bl_rna.properties
    assert addon_module("operators.files").BLEND_RELATIVE == ({"PATH_SUPPORTS_BLEND_RELATIVE"} if supported else set())
    structs = [bpy.types.Scene.bl_rna.properties["articulate"].fixed_type]
    structs += [getattr(bpy.ops.articulate, name).get_rna_type() for name in dir(bpy.ops.articulate)]
    paths = [(s, p) for s in structs for p in s.properties
             if p.type == "STRING" and p.subtype in {"FILE_PATH", "DIR_PATH"}]
    names = {(s.identifier, p.identifier) for s, p in paths}
    assert {("ARTICULATE_OT_bake", "report_path"), ("ARTICULATE_OT_trajectory_export", "filepath"),
            ("ARTICULATE_OT_robot_import_urdf", "package_dir")} <= names, sorted(names)
    assert any(p.identifier == "report_path" for s, p in paths if s == structs[0])  # the panel's Report File
    if supported:
        missing = [(s.identifier, p.identifier) for s, p in paths if not p.is_path_supports_blend_relative]
        assert not missing, missing


def _convert_ik_constraint():
    arm = bpy.data.objects["Arm"]
    arm.articulate.chains.clear()
    con = arm.pose.bones["Wrist"].constraints.new("IK")
    con.target, con.chain_count = bpy.data.objects["Target"], 3
    assert bpy.ops.articulate.chains_from_constraints() == {"FINISHED"}
    return arm, con


def test_solve_frame_after_converting_mutes_the_constraint_as_the_bake_would(demo, capfd):
    """Solve Current Frame right after Chains from IK Constraints, with Mute IK Constraints on (the default),
    mutes the converted constraint as a bake does, so the posed frame is what the bake will play: the tip on
    the target, and no warning that keys will not show."""
    arm, con = _convert_ik_constraint()
    target = bpy.data.objects["Target"]
    assert bpy.context.scene.articulate.mute_constraints
    bpy.context.scene.frame_set(7)
    capfd.readouterr()
    assert bpy.ops.articulate.solve_frame() == {"FINISHED"}
    out = capfd.readouterr().out
    assert "will not show in playback" not in out
    assert con.mute and f"(Mute IK Constraints): {con.name!r} on Wrist" in out
    bpy.context.view_layer.update()
    tail = np.array(arm.matrix_world @ arm.pose.bones["Wrist"].tail)
    assert np.linalg.norm(tail - np.array(target.matrix_world.translation)) < 2e-4


def test_solve_frame_leaves_the_constraint_live_when_told_to_and_says_it_overrides(demo, capfd):
    """With Mute IK Constraints off, Solve Current Frame leaves the constraint alone and warns that it moves
    the bones (a bake with the same settings would leave it live too)."""
    _arm, con = _convert_ik_constraint()
    bpy.context.scene.articulate.mute_constraints = False
    capfd.readouterr()
    assert bpy.ops.articulate.solve_frame() == {"FINISHED"}
    assert not con.mute
    assert f"Wrist follows IK {con.name!r} on Wrist" in capfd.readouterr().out
