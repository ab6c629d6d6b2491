# SPDX-License-Identifier: GPL-3.0-or-later
"""Every registered Articulate operator, run in bad states: no traceback, and a refusal changes nothing.

The operators are enumerated from ``bpy.ops.articulate`` (a new one is covered without editing
this file). Each runs on scenes built once and reopened from a .blend per run: no object, the
wrong object type, edit mode, a chain whose bones or target were deleted or renamed, an
armature linked from a library, robot rigs whose stored data is damaged, and paths that cannot
be written. A run fails the test when:

- Python prints or raises a traceback (a ``RuntimeError`` from ``bpy.ops`` carrying one counts;
  an error the operator reports itself is what it should do);
- the operator refused (poll, error or CANCELLED) and the scene is not exactly what it was
  (objects, actions and every F-curve's keys, pose channels and rotation modes, constraints,
  custom and Articulate properties, scene frame, range, rate and markers, mode);
- it changed data linked from a library (the change would be lost on save).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import bpy
import numpy as np
import pytest
from data_files import ROBOTS

# ---------------------------------------------------------------------------------------------
# The scene's fingerprint: everything an operator could change, as plain comparable values.

_DATA = ("objects", "actions", "armatures", "meshes", "collections", "materials", "curves", "images",
         "cameras", "lights", "worlds", "libraries")


def _value(v):
    if isinstance(v, bpy.types.ID):
        return ("ID", v.name)
    for attr in ("to_dict", "to_list"):
        if hasattr(v, attr):
            return getattr(v, attr)()
    if hasattr(v, "__len__") and not isinstance(v, str):
        return tuple(_value(x) for x in v)
    return v


def _rna(struct, depth: int = 0) -> dict:
    """Every property of a property group (recursively), by identifier."""
    out = {}
    for prop in struct.bl_rna.properties:
        key = prop.identifier
        if key == "rna_type":
            continue
        value = getattr(struct, key)
        if prop.type == "POINTER" and not isinstance(value, bpy.types.ID) and value is not None:
            out[key] = _rna(value, depth + 1) if depth < 4 else "..."
        elif prop.type == "COLLECTION":
            out[key] = [_rna(item, depth + 1) for item in value] if depth < 4 else len(value)
        else:
            out[key] = _value(value)
    return out


def _custom(idb) -> dict:
    registered = idb.bl_rna.properties
    return {k: _value(idb[k]) for k in idb.keys() if k not in registered}


def _keys(fc) -> tuple:
    co = np.empty(2 * len(fc.keyframe_points), dtype=np.float32)
    fc.keyframe_points.foreach_get("co", co)
    interp = [k.interpolation for k in fc.keyframe_points]
    return (fc.data_path, fc.array_index, fc.extrapolation, fc.mute, co.tobytes(), tuple(interp))


def _fcurves(action) -> list:
    if hasattr(action, "fcurves") and bpy.app.version < (4, 4, 0):
        return sorted(_keys(fc) for fc in action.fcurves)
    out = []
    for layer in action.layers:
        for strip in layer.strips:
            for bag in strip.channelbags:
                out += [(bag.slot.identifier, *_keys(fc)) for fc in bag.fcurves]
    return sorted(out)


def _pose(obj) -> dict:
    if obj.type != "ARMATURE" or obj.pose is None:
        return {}
    out = {"bones": sorted(obj.data.bones.keys())}
    for pb in obj.pose.bones:
        out[pb.name] = (
            pb.rotation_mode, tuple(pb.location), tuple(pb.rotation_quaternion), tuple(pb.rotation_euler),
            tuple(pb.rotation_axis_angle), tuple(pb.scale),
            tuple((pb.use_ik_limit_x, pb.use_ik_limit_y, pb.use_ik_limit_z, pb.ik_min_x, pb.ik_max_x, pb.ik_min_y,
                   pb.ik_max_y, pb.ik_min_z, pb.ik_max_z)),
            tuple((c.name, c.type, c.mute, c.influence) for c in pb.constraints),
        )
    return out


def _object(obj) -> dict:
    adt = obj.animation_data
    return {
        "type": obj.type, "library": obj.library.filepath if obj.library else None,
        "data": obj.data.name if obj.data is not None else None,
        "parent": (obj.parent.name if obj.parent else None, obj.parent_type, obj.parent_bone),
        "transform": (tuple(obj.location), tuple(obj.rotation_euler), tuple(obj.rotation_quaternion), obj.rotation_mode,
                      tuple(obj.scale), tuple(tuple(r) for r in obj.matrix_world)),
        "hidden": (obj.hide_viewport, obj.hide_get() if obj.name in bpy.context.view_layer.objects else None),
        "collections": sorted(c.name for c in obj.users_collection),
        "custom": _custom(obj),
        "articulate": _rna(obj.articulate),
        "action": (adt is not None, adt.action.name if adt is not None and adt.action else None),
        "drivers": sorted(_keys(fc) for fc in adt.drivers) if adt is not None else [],
        "pose": _pose(obj),
        "mode": obj.mode,
    }


def fingerprint() -> dict:
    """The whole scene as comparable values."""
    scene = bpy.context.scene
    return {
        "data": {name: sorted(i.name for i in getattr(bpy.data, name)) for name in _DATA},
        "objects": {o.name: _object(o) for o in bpy.data.objects},
        "actions": {a.name: _fcurves(a) for a in bpy.data.actions},
        "scene": (scene.frame_current, scene.frame_start, scene.frame_end, scene.render.fps, scene.render.fps_base,
                  sorted((m.name, m.frame) for m in scene.timeline_markers), _rna(scene.articulate)),
        "active": (bpy.context.object.name if bpy.context.object else None, bpy.context.mode),
    }


def linked_part(print_: dict) -> dict:
    """The fingerprint of the objects linked from a library (a change there is lost on save)."""
    return {name: o for name, o in print_["objects"].items() if o["library"]}


def differences(a: dict, b: dict, path: str = "") -> list[str]:
    """Where two fingerprints differ (the first few), for the failure message."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            out += differences(a.get(k), b.get(k), f"{path}/{k}")
        return out[:3]
    return [] if a == b else [path]


# ---------------------------------------------------------------------------------------------
# The bad states, each saved once as a .blend.

def _armature_rig(name: str = "Rig") -> bpy.types.Object:
    """root -> forearm -> hand along +Z, a chain to the hand's tail with an animated target, range 1..4."""
    scene = bpy.context.scene
    data = bpy.data.armatures.new(name)
    arm = bpy.data.objects.new(name, data)
    scene.collection.objects.link(arm)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    parent = None
    for k, bone in enumerate(("root", "forearm", "hand")):
        eb = data.edit_bones.new(bone)
        eb.head, eb.tail = (0, 0, 0.5 * k), (0, 0, 0.5 * (k + 1))
        eb.parent, eb.use_connect = parent, parent is not None
        parent = eb
    bpy.ops.object.mode_set(mode="OBJECT")
    target = bpy.data.objects.new(f"{name}.target", None)
    scene.collection.objects.link(target)
    for f, x in ((1, 0.3), (4, 0.6)):
        target.location = (x, 0.0, 1.0)
        target.keyframe_insert("location", frame=f)
    chain = arm.articulate.chains.add()
    chain.name, chain.tip_bone, chain.root_bone, chain.target = "arm", "hand", "root", target
    role = arm.articulate.body.roles.add()
    role.role, role.bone = "hand_l", "hand"
    scene.frame_start, scene.frame_end = 1, 4
    scene.frame_set(1)
    arm.data.bones.active = arm.data.bones["hand"]
    return arm


def _edit(arm, change) -> None:
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    change(arm.data.edit_bones)
    bpy.ops.object.mode_set(mode="OBJECT")


def _robot(files: Path) -> bpy.types.Object:
    """A UR5 rig with a joint trajectory imported on frames 1..4, the scene on frames 1..4."""
    assert bpy.ops.articulate.robot_add(preset="ur5") == {"FINISHED"}
    arm = bpy.context.object
    assert bpy.ops.articulate.trajectory_import(filepath=str(files / "joints.csv"), start_frame=1) == {"FINISHED"}
    bpy.context.scene.frame_set(1)
    return arm


def _fresh() -> None:
    bpy.ops.wm.read_homefile(use_empty=True)


def _set(key: str, value):
    def change(arm):
        arm[key] = value
    return change


def _model_wrong_types(arm) -> None:
    model = json.loads(arm["articulate_robot_model"])
    model["joints"][1]["xyz"] = "up"
    model["joints"][2]["lower"] = [1, 2]
    arm["articulate_robot_model"] = json.dumps(model)


def _stale_branches(arm) -> None:
    branch = arm.articulate.branches.add()
    branch.name, branch.joints = "Branch 1: stale", "shoulder_pan_joint,gone_joint"
    branch.values = [0.1] * 32
    arm.articulate.active_branch = 0


def _remove(getter):
    def change(arm):
        bpy.data.objects.remove(getter(arm))
    return change


def _chain_states(files: Path) -> dict:
    def rig_with(change=None):
        _fresh()
        arm = _armature_rig()
        if change is not None:
            change(arm)
        return arm

    def roles_damaged(arm):
        arm.articulate.body.roles[0].bone = "no_such_bone"
        bogus = arm.articulate.body.roles.add()
        bogus.role, bogus.bone = "tentacle", "root"

    def chains_damaged(arm):
        chain = arm.articulate.chains[0]
        chain.root_bone, chain.chain_length = "hand", 7  # the root below the tip
        arm.articulate.active_chain = 9

    def contacts_on(arm):
        chain = arm.articulate.chains[0]
        chain.use_contacts, chain.hips = True, arm
        item = chain.contacts.add()
        item.frame_start, item.frame_end = 1, 3

    def contacts_damaged(arm):
        chain = arm.articulate.chains[0]
        chain.use_contacts, chain.ground = True, "COLLECTION"  # and no collection
        chain.hips, chain.hips_bone = arm, "hand"  # connected: its location cannot lower it
        item = chain.contacts.add()
        item.frame_start, item.frame_end = 3, 1

    return {
        "chain_rig": lambda: rig_with(),
        "contacts_on": lambda: rig_with(contacts_on),
        "contacts_damaged": lambda: rig_with(contacts_damaged),
        "tip_bone_deleted": lambda: rig_with(lambda a: _edit(a, lambda eb: eb.remove(eb["hand"]))),
        "root_bone_renamed": lambda: rig_with(lambda a: _edit(a, lambda eb: setattr(eb["root"], "name", "base"))),
        "target_deleted": lambda: rig_with(_remove(lambda a: a.articulate.chains[0].target)),
        "roles_damaged": lambda: rig_with(roles_damaged),
        "chains_damaged": lambda: rig_with(chains_damaged),
    }


def _robot_states(files: Path) -> dict:
    def robot_with(change=None):
        _fresh()
        arm = _robot(files)
        if change is not None:
            change(arm)
        return arm

    def joint_bone_deleted(arm):
        _edit(arm, lambda eb: eb.remove(eb["wrist_2_joint"]))

    def no_joints(arm):
        info = json.loads(arm["articulate_robot"])
        del info["joints"]
        arm["articulate_robot"] = json.dumps(info)

    return {
        "robot": lambda: robot_with(),
        "robot_info_not_json": lambda: robot_with(_set("articulate_robot", "{robot: ur5")),
        "robot_info_without_joints": lambda: robot_with(no_joints),
        "robot_info_wrong_types": lambda: robot_with(_set("articulate_robot", json.dumps({"joints": [{"name": 3}]}))),
        "robot_model_wrong_types": lambda: robot_with(_model_wrong_types),
        "robot_model_not_json": lambda: robot_with(_set("articulate_robot_model", "[1, 2")),
        "robot_joint_bone_deleted": lambda: robot_with(joint_bone_deleted),
        "robot_target_deleted": lambda: robot_with(_remove(lambda a: a.articulate.chains[0].target)),
        "robot_branches_stale": lambda: robot_with(_stale_branches),
        "robot_chain_stale": lambda: robot_with(lambda a: setattr(a.articulate.chains[0], "tool_link", "gone_link")),
    }


def _linked_state(files: Path):
    """The chain rig and a robot, saved in a library and linked (not overridden) into an empty scene."""
    _fresh()
    rig = _armature_rig("LibRig")
    robot = _robot(files)
    library = files / "library.blend"
    keep = {rig, rig.data, robot, robot.data, rig.articulate.chains[0].target, robot.articulate.chains[0].target}
    names = {o.name for o in keep if isinstance(o, bpy.types.Object)}
    bpy.data.libraries.write(str(library), keep, fake_user=True)
    _fresh()
    with bpy.data.libraries.load(str(library), link=True) as (src, dst):
        dst.objects = [n for n in src.objects if n in names]
    for obj in dst.objects:
        bpy.context.scene.collection.objects.link(obj)
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 4
    bpy.context.view_layer.objects.active = bpy.data.objects["LibRig"]
    return bpy.context.object


def _override_state(files: Path):
    """The linked rig made a library override (Blender keeps none of the add-on's settings on one)."""
    _linked_state(files)
    override = bpy.data.objects["LibRig"].override_create(remap_local_usages=True)
    bpy.context.view_layer.objects.active = override
    return override


def _activate_linked_robot() -> None:
    bpy.context.view_layer.objects.active = next(o for o in bpy.data.objects
                                                 if o.library is not None and "articulate_robot" in o)


def _write_files(files: Path) -> None:
    names = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint",
             "wrist_3_joint"]
    rows = [",".join(["time", *names])]
    for k in range(4):
        rows.append(",".join([f"{k / 24:.6f}", *(f"{0.1 * k - 0.5 * (j % 3):.4f}" for j in range(6))]))
    (files / "joints.csv").write_text("\n".join(rows) + "\n")
    poses = ["time,x,y,z,qw,qx,qy,qz"] + [f"{k / 24:.6f},0.4,{0.1 + 0.02 * k:.3f},0.4,0,1,0,0" for k in range(4)]
    (files / "poses.csv").write_text("\n".join(poses) + "\n")
    header = "time," + ",".join(f"{t}_{c}" for t in ("head", "hand_l", "hand_r")
                                for c in ("x", "y", "z", "qw", "qx", "qy", "qz"))
    lines = [header] + [f"{k / 24:.5f}," + ",".join(["0.1", "0.2", "1.5", "1", "0", "0", "0"] * 3) for k in range(3)]
    (files / "trackers.csv").write_text("\n".join(lines) + "\n")
    (files / "a_file").write_text("not a folder\n")


@pytest.fixture(scope="module")
def states(addon, tmp_path_factory):
    """name -> (saved .blend, what to do after opening it); plus the folder of input files."""
    files = tmp_path_factory.mktemp("operator_failures")
    _write_files(files)
    builders = {"no_object": _fresh, "wrong_type": None, **_chain_states(files), **_robot_states(files),
                "linked": lambda: _linked_state(files), "override": lambda: _override_state(files)}

    def wrong_type():
        _fresh()
        empty = bpy.data.objects.new("Empty", None)
        bpy.context.scene.collection.objects.link(empty)
        bpy.context.view_layer.objects.active = empty

    builders["wrong_type"] = wrong_type
    saved = {}
    for name, build in builders.items():
        build()
        path = files / f"{name}.blend"
        bpy.ops.wm.save_as_mainfile(filepath=str(path))
        saved[name] = (path, None)
    # Reopened states that a file does not keep: modes.
    saved["edit_mode"] = (files / "chain_rig.blend", lambda: bpy.ops.object.mode_set(mode="EDIT"))
    saved["robot_pose_mode"] = (files / "robot.blend", lambda: bpy.ops.object.mode_set(mode="POSE"))
    saved["robot_edit_mode"] = (files / "robot.blend", lambda: bpy.ops.object.mode_set(mode="EDIT"))
    saved["linked_robot"] = (files / "linked.blend", _activate_linked_robot)
    saved["unwritable_paths"] = (files / "robot.blend", None)
    saved["unwritable_paths_chain"] = (files / "chain_rig.blend", None)
    return saved, files


def operator_arguments(files: Path, unwritable: bool) -> dict:
    """Arguments a script would give each operator: real input files, or paths that cannot be used."""
    blocked = files / "a_file"  # a regular file: nothing can be written below it
    out = str(blocked / "out") if unwritable else str(files / "out")
    source = (lambda name: str(files / "missing" / name)) if unwritable else (lambda name: str(files / name))
    return {
        "robot_import_urdf": {"filepath": source("ur5.urdf") if unwritable else str(ROBOTS / "ur5.urdf")},
        "trajectory_import": {"filepath": source("joints.csv")},
        "cartesian_import": {"filepath": source("poses.csv")},
        "trackers_import": {"filepath": source("trackers.csv")},
        "trajectory_export": {"filepath": out + ".csv"},
        "trajectory_check": {"report_path": out + "_check.json"},
        "bake": {"report_path": out + "_bake.json"} if unwritable else {},
        "body_bake": {"report_path": out + "_body.json"} if unwritable else {},
        "ik_to_fk": {"report_path": out + "_switch.json"} if unwritable else {},
        "fk_to_ik": {"report_path": out + "_switch.json"} if unwritable else {},
    }


def registered_operators() -> list[str]:
    """Every operator the add-on registered under ``bpy.ops.articulate``."""
    return sorted(dir(bpy.ops.articulate))


def run(name: str, kwargs: dict, capfd) -> tuple[str, str]:
    """(outcome, message): FINISHED, CANCELLED, REFUSED (poll or reported error) or TRACEBACK."""
    capfd.readouterr()
    try:
        result = getattr(bpy.ops.articulate, name)(**kwargs)
        outcome, message = ("FINISHED" if "FINISHED" in result else "CANCELLED"), ""
    except RuntimeError as err:
        message = str(err)
        # The transactions' last line of defence reports an exception no check foresaw: a traceback hidden
        outcome = "TRACEBACK" if "Traceback" in message or "unexpected error" in message else "REFUSED"
    printed = capfd.readouterr()
    if "Traceback" in printed.out + printed.err:
        outcome, message = "TRACEBACK", (printed.err or printed.out)[-1500:]
    return outcome, message


STATES = ("no_object", "wrong_type", "edit_mode", "chain_rig", "contacts_on", "contacts_damaged", "tip_bone_deleted",
          "root_bone_renamed", "target_deleted", "roles_damaged", "chains_damaged", "linked", "linked_robot",
          "override", "robot", "robot_pose_mode", "robot_edit_mode", "robot_chain_stale",
          "robot_info_not_json", "robot_info_without_joints", "robot_info_wrong_types", "robot_model_wrong_types",
          "robot_model_not_json", "robot_joint_bone_deleted", "robot_target_deleted", "robot_branches_stale",
          "unwritable_paths", "unwritable_paths_chain")


def test_the_harness_covers_every_registered_operator(addon_module):
    """The enumeration is the add-on's class list: nothing registered is left out."""
    classes = addon_module("operators").classes
    assert sorted(c.bl_idname.split(".", 1)[1] for c in classes) == registered_operators()
    assert len(registered_operators()) >= 26


@pytest.mark.parametrize("state", STATES)
def test_operators_in_bad_states(states, state, capfd):
    """No traceback from any operator; a refusal leaves the scene exactly as it was; linked data never changes."""
    saved, files = states
    path, after_open = saved[state]
    arguments = operator_arguments(files, unwritable=state.startswith("unwritable"))
    problems, counts = [], {"runs": 0, "finished": 0, "tracebacks": 0, "changed": 0, "linked": 0}
    for name in registered_operators():
        bpy.ops.wm.open_mainfile(filepath=str(path), load_ui=False)
        if after_open is not None:
            after_open()
        before = fingerprint()
        outcome, message = run(name, arguments.get(name, {}), capfd)
        after = fingerprint()
        counts["runs"] += 1
        counts["finished"] += outcome == "FINISHED"
        if outcome == "TRACEBACK":
            counts["tracebacks"] += 1
            problems.append(f"{name}: traceback: {message[-600:]}")
        if outcome != "FINISHED" and after != before:
            counts["changed"] += 1
            problems.append(f"{name}: {outcome} ({message[:200]}) but changed {differences(before, after)}")
        if linked_part(before) != linked_part(after):
            counts["linked"] += 1
            problems.append(f"{name}: {outcome} and changed linked data {differences(before, after)}")
    print(f"\nOPERATOR-HARNESS {state}: {counts}")
    assert not problems, f"{state}: {len(problems)} problem(s):\n" + "\n".join(problems)


# ---------------------------------------------------------------------------------------------
# The cases the issue named, each with the message it must give.

def test_every_operator_runs_as_a_transaction(addon_module):
    """Each registered class's execute is wrapped, so a new operator cannot skip the restore."""
    for cls in addon_module("operators").classes:
        assert getattr(cls.execute, "articulate_transaction", False), cls.bl_idname


def _open(states, name):
    saved, files = states
    bpy.ops.wm.open_mainfile(filepath=str(saved[name][0]), load_ui=False)
    return files


@pytest.mark.parametrize("op", ["bake", "solve_frame"])
def test_robot_bake_with_a_deleted_joint_bone_names_it_and_keeps_the_keys(states, op):
    """The bake refuses before keying: the deleted bone is named with the repair, the keys stay as imported."""
    _open(states, "robot_joint_bone_deleted")
    before = fingerprint()
    with pytest.raises(RuntimeError, match=r"'wrist_2_joint' were deleted or renamed.*rename the bones back"):
        getattr(bpy.ops.articulate, op)()
    assert fingerprint() == before


REPAIR = "press Repair Robot Data in the Robot panel"


@pytest.mark.parametrize("state, damage, repair", [
    ("robot_info_not_json", "robot description .* is damaged \\(not JSON", REPAIR + " \\(it rebuilds"),
    ("robot_info_without_joints", "robot description .* is damaged \\(it lists no joints", REPAIR),
    ("robot_model_wrong_types", "stored kinematic model .* is damaged", REPAIR + " \\(it reads the model again "
                                                                          "from the preset ur5\\)"),
    ("robot_joint_bone_deleted", "'wrist_2_joint' were deleted or renamed", "rename the bones back, or add the "
                                                                            "robot again"),
])
def test_damaged_robot_data_says_what_and_how_to_repair(states, state, damage, repair, addon_module):
    """The operators reading the damaged entry name it and the repair; the Robot panel's check says the same."""
    _open(states, state)
    for op in (bpy.ops.articulate.trajectory_check, bpy.ops.articulate.bake):
        with pytest.raises(RuntimeError, match=damage + ".*" + repair):
            op()
    assert re.search(damage, addon_module("operators.bridge.stored").robot_damage(bpy.context.object))


@pytest.mark.parametrize("state, done", [
    ("robot_info_not_json", "robot description rebuilt from the stored model"),
    ("robot_info_wrong_types", "robot description rebuilt from the stored model"),
    ("robot_model_wrong_types", "stored model read again from its preset ur5"),
    ("robot_model_not_json", "stored model read again from its preset ur5"),
    ("robot_target_deleted", "has a new target 'Universal_Robots_UR5_CB3_target' on its tool"),
    ("robot_branches_stale", "stale IK branch list cleared"),
])
def test_repair_makes_a_damaged_robot_whole(states, state, done, addon_module):
    """After Repair the rig bakes and checks again, nothing is left damaged, and the joint keys were not touched."""
    _open(states, state)
    arm = bpy.context.object
    keys = fingerprint()["actions"]
    with pytest.raises(RuntimeError):  # damaged: every robot operator refuses, or the bake has no target
        bpy.ops.articulate.robot_use_branch() if "branches" in state else bpy.ops.articulate.bake()
    assert bpy.ops.articulate.robot_repair() == {"FINISHED"}
    assert fingerprint()["actions"] == keys
    assert addon_module("operators.bridge.stored").robot_damage(arm) == ""
    info = json.loads(arm["articulate_robot"])
    assert [j["name"] for j in info["joints"]][:2] == ["shoulder_pan_joint", "shoulder_lift_joint"]
    assert info.get("preset") == "ur5" or "info" in state  # kept, unless the description was unreadable
    assert bpy.ops.articulate.trajectory_check() == {"FINISHED"}
    assert bpy.ops.articulate.bake() == {"FINISHED"}


def test_repair_says_what_it_did(states, capfd):
    """The report lists the repairs; a whole rig has nothing to repair."""
    _open(states, "robot_model_wrong_types")
    bpy.ops.articulate.robot_repair()
    assert "Repaired: stored model read again from its preset ur5" in capfd.readouterr().out
    bpy.ops.articulate.robot_repair()
    assert "Nothing to repair" in capfd.readouterr().out


def test_repair_refuses_what_only_a_new_rig_repairs(states):
    """Deleted joint bones: refused, naming them, and nothing is changed."""
    _open(states, "robot_joint_bone_deleted")
    before = fingerprint()
    with pytest.raises(RuntimeError, match="'wrist_2_joint' were deleted or renamed"):
        bpy.ops.articulate.robot_repair()
    assert fingerprint() == before


@pytest.mark.parametrize("op", ["chain_add", "chain_remove", "chain_use_blender_tip", "chains_from_constraints"])
def test_chain_edits_on_a_linked_armature_are_refused_as_bake_refuses(states, op):
    """The same message as Bake's, and nothing changes (the edit would be lost on save)."""
    _open(states, "linked")
    before = fingerprint()
    with pytest.raises(RuntimeError, match=r"armature 'LibRig' is linked from .* read-only; make it local"):
        bpy.ops.articulate.bake()
    with pytest.raises(RuntimeError, match=r"armature 'LibRig' is linked from .* read-only; make it local"):
        getattr(bpy.ops.articulate, op)()
    assert fingerprint() == before


def test_blender_tip_with_the_tip_bone_deleted_says_so(states):
    """Not "already ends where Blender's IK would": the chain's tip bone is gone."""
    _open(states, "tip_bone_deleted")
    with pytest.raises(RuntimeError, match=r"ends at bone 'hand', which armature 'Rig' does not have"):
        bpy.ops.articulate.chain_use_blender_tip()


def test_stale_branch_is_refused_with_how_to_refresh(states):
    """A branch naming a joint the rig lacks is refused before any key is written."""
    _open(states, "robot_branches_stale")
    before = fingerprint()
    with pytest.raises(RuntimeError, match=r"IK branch .* is stale .*'gone_joint'.*Find IK Branches again"):
        bpy.ops.articulate.robot_use_branch()
    assert fingerprint() == before


@pytest.mark.parametrize("state, op", [("robot", "bake"), ("chain_rig", "bake"), ("robot", "trajectory_import")])
def test_a_failure_after_keys_were_written_puts_everything_back(states, state, op, addon_module, monkeypatch):
    """An exception late in a run (after keys, poses and the frame changed) leaves the scene bit for bit as it was."""
    files = _open(states, state)
    scene = bpy.context.scene
    scene.frame_set(3)
    playback = addon_module("operators.playback")
    stored = addon_module("operators.bridge.robot_trajectory")  # the import operator imports it when it runs

    def fail(*_args, **_kwargs):
        raise KeyError("injected")

    monkeypatch.setattr(playback, "verify", fail)  # bakes measure playback after keying
    monkeypatch.setattr(stored, "store_trajectory", fail)  # the import stores its source after keying
    before = fingerprint()
    kwargs = {"filepath": str(files / "joints.csv")} if op == "trajectory_import" else {}
    with pytest.raises(RuntimeError, match=r"unexpected error \(KeyError at .*nothing was changed"):
        getattr(bpy.ops.articulate, op)(**kwargs)
    after = fingerprint()
    assert after == before, differences(before, after)


def test_cartesian_import_whose_bake_fails_is_undone_whole(states, addon_module, monkeypatch):
    """The nested bake fails after keying: the target's keys, the scene's rate and range and the joints all go back."""
    files = _open(states, "robot")
    scene = bpy.context.scene
    scene.render.fps, scene.frame_end = 30, 7  # the import would set 24 fps and frames 1..4

    def fail(*_args, **_kwargs):
        raise KeyError("injected")

    monkeypatch.setattr(addon_module("operators.playback"), "verify", fail)
    before = fingerprint()
    with pytest.raises(RuntimeError, match=r"the poses were not imported: Bake Chains: unexpected error"):
        bpy.ops.articulate.cartesian_import(filepath=str(files / "poses.csv"))
    after = fingerprint()
    assert after == before, differences(before, after)


class _Layout:
    """A stand-in for a panel's layout that records the operators it offers and the labels it shows."""

    def __init__(self, seen: list) -> None:
        self.seen = seen

    def __getattr__(self, name):
        def element(*args, **kwargs):
            if name in ("operator", "operator_menu_enum", "label"):
                self.seen.append((name, args[0] if args else kwargs.get("text", "")))
            return self
        return element


@pytest.mark.parametrize("state, offered", [("robot", False), ("robot_info_not_json", True),
                                            ("robot_target_deleted", True), ("robot_joint_bone_deleted", True)])
def test_robot_panel_offers_repair_only_on_damaged_data(states, state, offered, addon_module):
    """The Robot panel shows the damage and the Repair button; a whole rig shows neither."""
    _open(states, state)
    seen: list = []
    panel = addon_module("ui.panels").ARTICULATE_PT_robot
    panel.draw(type("Panel", (), {"layout": _Layout(seen)})(), bpy.context)
    assert (("operator", "articulate.robot_repair") in seen) == offered
    assert any(kind == "label" and "damaged" in text for kind, text in seen) == offered


def test_a_robot_chain_that_fails_after_its_tool_bone_was_made_leaves_no_bone(states, addon_module, monkeypatch):
    """Add Robot Chain makes a tool bone in edit mode before its target: a failure then removes the bone too."""
    _open(states, "robot")
    arm = bpy.context.object
    model = addon_module("operators.bridge.stored").robot_model(arm)
    used = {c.tool_link for c in arm.articulate.chains}
    link = next(link for link in model.tool_candidates() if link not in used)

    def fail(*_args, **_kwargs):
        raise ValueError("injected")

    monkeypatch.setattr(addon_module("operators.bridge.robot"), "new_target", fail)
    before = fingerprint()
    with pytest.raises(RuntimeError, match=r"Add Robot Chain: unexpected error \(ValueError"):
        bpy.ops.articulate.robot_chain_add(tool_link=link)
    after = fingerprint()
    assert after == before, differences(before, after)
    assert bpy.context.mode == "OBJECT"
