# SPDX-License-Identifier: GPL-3.0-or-later
"""Robot arms: add a preset or a URDF as a rig, import, check and export joint trajectories."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

import bpy
import numpy as np

from ..ik_core import ArticulateError
from ..ik_core.errors import name_hint
from ..ik_core.model.rotations import matrix_to_quat, quat_to_matrix
from ..ik_core.trajectory.mcap_files import DEFAULT_TOPIC
from . import bridge, compat
from .bridge.keys import rotation_part
from .bridge.stored import branch_joints, check_bones, robot_info, robot_model
from .files import (
    BLEND_RELATIVE,
    ExportFile,
    ImportFile,
    TimedImport,
    ensure_extension,
    report_path_problem,
    write_report,
)
from .polls import list_poll, robot_poll
from .wording import printable

# The robot model, the URDF and trajectory readers and the rig builder are imported by the
# operators that use them, when they run: registering the add-on (or baking a character) does not load them.
if TYPE_CHECKING:
    from ..ik_core.robots.model import RobotModel
    from ..ik_core.trajectory import JointTrajectory, PoseTrajectory, TrajectoryReport
    from .bridge.robot_trajectory import StoredTrajectory

CHECK_MARKER = "Robot check"


_PRESET_ITEMS: list = []  # Blender reads dynamic enum strings after the callback returns: keep them alive


def preset_items(_self, _context) -> list:
    """The robot presets as enum items: id, display name and a line saying what the arm is."""
    from ..ik_core.robots import presets

    items = []
    for name in presets.list_presets():
        info = presets.preset_info(name)
        label = info.get("display_name", name)
        maker = f"{info['manufacturer']} " if info.get("manufacturer") else ""
        items.append((name, label, f"{maker}{label}: {len(info.get('joints', []))} joints, with their published "
                                   "kinematics and joint limits"))
    _PRESET_ITEMS[:] = items
    return _PRESET_ITEMS


def _robot(context: bpy.types.Context) -> bpy.types.Object:
    """The active robot rig, checked, with a joint to pose, key, check or export.

    Raises:
        BridgeError: Not a robot rig, damaged stored data, or a rigid robot (the message says why).
    """

    obj = context.object
    if not robot_info(obj)["joints"]:  # robot_info raises BridgeError naming any damage
        model = robot_model(obj)
        raise bridge.BridgeError(f"{model.no_tools_reason() if model else repr(obj.name) + ' has no joint'}; "
                                 "it has no joint to pose, key, check or export")
    return obj


def _fail(op: bpy.types.Operator, err: Exception) -> set[str]:
    op.report({"ERROR"}, printable(str(err)))  # it may name a file whose name is not UTF-8
    return {"CANCELLED"}


def rig_name(name: str) -> str:
    """A robot's name as its rig, collection and target are named: letters, digits, ``_``, ``.`` and ``-``.

    The name is typed on command lines (``cli.py check --armature NAME``), so nothing in it needs
    quoting in a shell: "Universal Robots UR5 (CB3)" becomes "Universal_Robots_UR5_CB3".
    """
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "robot"


class ARTICULATE_OT_robot_add(bpy.types.Operator):
    """Add a robot arm from a preset, with its true kinematics and joint limits"""

    bl_idname = "articulate.robot_add"
    bl_label = "Add Robot"
    bl_options = {"REGISTER", "UNDO"}

    preset: bpy.props.EnumProperty(name="Robot", items=preset_items, description="The robot arm to add")

    def execute(self, context: bpy.types.Context) -> set[str]:
        from ..ik_core.formats.urdf_visuals import parse_visuals
        from ..ik_core.robots import presets
        from ..ik_core.robots.model import RobotModel
        from .bridge.robot import build_robot_rig

        try:
            model = RobotModel.from_preset(self.preset)
            info = presets.preset_info(self.preset)
            visuals_path = presets.preset_visuals(self.preset)
            visuals = parse_visuals(visuals_path) if visuals_path is not None else ()
            arm, _targets, warnings = build_robot_rig(
                model, rig_name(info.get("display_name", self.preset)), visuals=visuals,
                urdf_dir=str(visuals_path.parent) if visuals_path is not None else None,
                metadata={"preset": self.preset, "source": info.get("source"),
                          "acceleration": info.get("acceleration")},
            )
        except (ArticulateError, bridge.BridgeError) as err:
            return _fail(self, err)
        for w in warnings:
            self.report({"WARNING"}, w)
        context.view_layer.objects.active = arm
        return {"FINISHED"}


AUTO_TOOL = "AUTO"
NOTES_SHOWN = 5  # URDF reader notes reported one by one; the rest counted
_IMPORT_TOOL_ITEMS: list = []  # Blender reads dynamic enum strings after the callback returns: keep them alive
_IMPORT_MODELS: dict = {}  # (path, mtime) -> RobotModel or None: the dialog redraws often


def _file_model(op) -> RobotModel | None:
    """The model of the import dialog's URDF or xacro file (with its arguments), or None when unreadable (yet)."""
    from ..ik_core.formats.xacro_files import description_source, parse_xacro_args
    from ..ik_core.robots.model import RobotModel

    path = bpy.path.abspath(op.filepath) if op.filepath else ""
    try:
        key = (path, os.path.getmtime(path), op.xacro_args, op.package_dir)
    except OSError:
        return None
    if key not in _IMPORT_MODELS:
        _IMPORT_MODELS.clear()
        try:
            _IMPORT_MODELS[key] = RobotModel.from_urdf(description_source(
                path, parse_xacro_args(op.xacro_args), _package_dirs(op)))
        except ArticulateError:
            _IMPORT_MODELS[key] = None
    return _IMPORT_MODELS[key]


def _package_dirs(op) -> list[str]:
    """The import's Package Folder as a list of absolute folders (empty when not set)."""
    return [bpy.path.abspath(op.package_dir)] if op.package_dir else []


def _import_tool_items(op, _context) -> list:
    """Automatic, then the links of the chosen URDF a chain can end on, likeliest first."""
    model = _file_model(op) if op is not None else None
    if model is None:
        auto = "The end of the arm, or one chain per branch end"
        links = []
    else:
        tip = model.serial_tool()
        auto = (f"{tip}, the end of the single chain" if tip else model.no_tools_reason() or
                "One chain per branch end: " + ", ".join(model.default_tools()))
        links = model.tool_candidates()
    _IMPORT_TOOL_ITEMS[:] = [(AUTO_TOOL, "Automatic", auto)] + [
        (link, link, f"One chain, from the robot's root to {link}") for link in links]
    return _IMPORT_TOOL_ITEMS


class ARTICULATE_OT_robot_import_urdf(ImportFile, bpy.types.Operator):
    """Build a robot rig from a whole URDF tree, or a xacro file expanded (kinematics, limits, link geometry)"""

    bl_idname = "articulate.robot_import_urdf"
    bl_label = "Import URDF"
    bl_options = {"REGISTER", "UNDO"}

    filename_ext = ".urdf"
    filter_glob: bpy.props.StringProperty(default="*.urdf;*.xml;*.xacro", options={"HIDDEN"},
                                           description="File names the file browser lists")
    # Before Tool Link: Blender sets properties in this order, and its items read these two.
    package_dir: bpy.props.StringProperty(
        name="Package Folder", description="Folder that package:// mesh paths and xacro's $(find pkg) are resolved "
                                            "against (the folder holding the packages, or a package itself)",
        subtype="DIR_PATH", options=set(BLEND_RELATIVE),
    )
    xacro_args: bpy.props.StringProperty(
        name="Xacro Arguments",
        description="For .xacro files: arguments as xacro's command line takes them, name:=value separated by "
                    "spaces (prefix:=left_ use_gripper:=false); quote a value with spaces (\"name:=my robot\")",
    )
    tool_link: bpy.props.EnumProperty(
        name="Tool Link", items=_import_tool_items,
        description="Link the chain ends on; Automatic: the end of a single arm, else one chain per branch end",
    )
    tip_link: bpy.props.StringProperty(
        name="Tool Links",
        description="Comma-separated tool links, one chain each (overrides Tool Link); empty for Tool Link",
    )

    def execute(self, context: bpy.types.Context) -> set[str]:
        from ..ik_core.formats.urdf_visuals import parse_visuals
        from ..ik_core.formats.xacro_files import description_source, parse_xacro_args
        from ..ik_core.robots.model import RobotModel
        from .bridge.robot import build_robot_rig

        path = bpy.path.abspath(self.filepath)
        try:
            if not os.path.isfile(path):
                raise bridge.BridgeError(f"URDF file not found: {path!r}")
            xacro_args = parse_xacro_args(self.xacro_args)
            source = description_source(path, xacro_args, _package_dirs(self))
            model = RobotModel.from_urdf(source)
            tools = [t.strip() for t in self.tip_link.split(",") if t.strip()]
            if not tools and self.tool_link not in ("", AUTO_TOOL):
                tools = [self.tool_link]
            arm, _targets, warnings = build_robot_rig(
                model, rig_name(model.name), tools=tools or None, visuals=parse_visuals(source),
                urdf_dir=os.path.dirname(path), package_dirs=_package_dirs(self),
                metadata={"urdf": path, **({"xacro_args": xacro_args} if xacro_args else {}),
                          **({"package_dirs": _package_dirs(self)} if self.package_dir else {})},
            )
        except (ArticulateError, bridge.BridgeError) as err:
            return _fail(self, err)
        for w in warnings:
            self.report({"WARNING"}, w)
        # What xacro warned about, then what the lenient reader ignored or changed.
        notes = [*getattr(source, "notes", ()), *model.notes]
        for note in notes[:NOTES_SHOWN]:
            self.report({"WARNING"}, note)
        if len(notes) > NOTES_SHOWN:
            self.report({"WARNING"}, f"... and {len(notes) - NOTES_SHOWN} more such notes")
        chains = ", ".join(c.tool_link for c in arm.articulate.chains) or "none"
        how, rigid = "", model.no_tools_reason()
        if rigid:
            how = f" ({rigid})"
        elif not tools:
            how = (" (the end of its single chain)" if model.serial_tool() else
                   "; one per branch end: pick a Tool Link for a single chain")
        self.report({"INFO"}, f"Imported {model.name!r}: {len(model.joint_order)} joints, chains to {chains}{how}")
        context.view_layer.objects.active = arm
        return {"FINISHED"}


_TOOL_ITEMS: list = []  # Blender reads dynamic enum strings after the callback returns: keep them alive


def _tool_link_items(_op, context) -> list:
    """Links of the active robot rig's stored model that a chain can end on, likeliest first."""

    obj = context.object if context is not None else None
    try:
        model = robot_model(obj) if obj is not None and "articulate_robot" in obj else None
    except bridge.BridgeError:
        model = None
    links = model.tool_candidates() if model is not None else []
    _TOOL_ITEMS[:] = [(link, link, f"A chain from the robot's root to {link}") for link in links]
    return _TOOL_ITEMS


class ARTICULATE_OT_robot_chain_add(bpy.types.Operator):
    """Add a chain to a tool link of the robot, with its own target (both arms, each leg)"""

    bl_idname = "articulate.robot_chain_add"
    bl_label = "Add Robot Chain"
    bl_options = {"REGISTER", "UNDO"}

    tool_link: bpy.props.EnumProperty(name="Tool Link", description="Link the chain's target drives",
                                      items=_tool_link_items)
    # (A lambda calling _tool_link_items raised NameError when Blender called it: the annotation is
    # a string under ``from __future__ import annotations``, evaluated outside this module's names.)
    base_link: bpy.props.StringProperty(name="Base Link", description="Link the chain starts from; empty for the root")

    @classmethod
    def poll(cls, context):
        return robot_poll(cls, context, editable=True)

    def execute(self, context: bpy.types.Context) -> set[str]:
        from .bridge.robot import add_robot_chain

        try:
            arm = _robot(context)
            model = robot_model(arm)
            if model is None:
                raise bridge.BridgeError(f"robot {arm.name!r} was built before rigs stored their model; "
                                         "build it again to add chains")
            if any(c.tool_link == self.tool_link and c.base_link == self.base_link for c in arm.articulate.chains):
                raise bridge.BridgeError(f"robot {arm.name!r} already has a chain to {self.tool_link!r}")
            target = add_robot_chain(arm, model, self.tool_link, self.base_link)
        except (ArticulateError, bridge.BridgeError) as err:
            return _fail(self, err)
        context.view_layer.objects.active = arm
        chain = arm.articulate.chains[-1]
        self.report({"INFO"}, f"added chain {chain.name!r} from {self.base_link or 'the root'} to "
                              f"{self.tool_link}: move its target {target.name!r}, then solve or bake")
        return {"FINISHED"}


class ARTICULATE_OT_trajectory_import(TimedImport, bpy.types.Operator):
    """Key a joint trajectory (CSV: time, then a column per joint; ROS JSON; or a ROS 2 bag, MCAP) at the file's rate
    or the scene's"""

    bl_idname = "articulate.trajectory_import"
    bl_label = "Import Joint Trajectory"
    bl_options = {"REGISTER", "UNDO"}

    filename_ext = ".csv"
    filter_glob: bpy.props.StringProperty(default="*.csv;*.json;*.mcap", options={"HIDDEN"},
                                           description="File names the file browser lists")
    topic: bpy.props.StringProperty(
        name="Topic", description="MCAP files: the topic of JointState or JointTrajectory messages to read; empty "
                                  "when the file has only one such topic",
    )

    @classmethod
    def poll(cls, context):
        return robot_poll(cls, context, editable=True)

    def execute(self, context: bpy.types.Context) -> set[str]:
        from ..ik_core.trajectory import JointTrajectory, read_joint_csv, read_joint_json, resample
        from ..ik_core.trajectory.mcap_files import read_joint_mcap
        from .bridge.robot import write_joint_values
        from .bridge.robot_trajectory import StoredTrajectory, store_trajectory

        scene = context.scene
        try:
            arm = _robot(context)
            joints = robot_info(arm)["joints"]
            names = file_joint_names(joints)
            path = bpy.path.abspath(self.filepath)
            bag = None
            if path.lower().endswith(".mcap"):
                bag = read_joint_mcap(path, names, topic=self.topic.strip() or None)
                raw = bag.trajectory
            else:
                raw = (read_joint_json if path.lower().endswith(".json") else read_joint_csv)(path, names)
            raw = JointTrajectory(tuple(j["name"] for j in joints), raw.times, raw.positions)  # the rig's names
            rate = self.key_rate(scene, raw.times)
            fps = rate.rate
            traj = resample(raw, fps)
            frames = self.start_frame + np.round((traj.times - traj.times[0]) * fps)
        except (ArticulateError, bridge.BridgeError, OSError) as err:
            return _fail(self, err)
        self.apply_timing(scene, rate, int(frames[-1]))
        write_joint_values(arm, frames, traj.positions)
        store_trajectory(arm, StoredTrajectory(Path(path).name, "joints", self.start_frame, int(frames[-1]), fps, raw))
        if rate.warning:
            self.report({"WARNING"}, rate.warning)
        for note in bag.notes if bag is not None else ():
            self.report({"WARNING"}, note)
        source = f" ({bag.topic}, {bag.message_type.rpartition('/')[2]}, timed by {bag.clock})" if bag else ""
        self.report({"INFO"}, printable(f"Keyed {len(names)} joints on frames {self.start_frame}..{int(frames[-1])} "
                                        f"at {fps:.4g} fps from {len(raw)} samples of {Path(path).name}{source}"))
        return {"FINISHED"}


POSE_FRAMES = (
    ("WORLD", "World", "The poses are world placements of the tool: the target is keyed at them as they are"),
    ("BASE", "Robot Base", "The poses are relative to the robot's base (the rig object: the URDF's root link), as "
                           "robot controllers report them; placed in the world by the rig's transform at import"),
)


def base_to_world(arm: bpy.types.Object, poses: PoseTrajectory) -> PoseTrajectory:
    """Poses given in the rig's base frame placed in the world by its current transform.

    Positions take the whole transform (a rig scaled 2x reaches twice as far); rotations only
    its rotation.
    """
    from ..ik_core.trajectory import PoseTrajectory

    M = bridge.matrix_to_array(arm.matrix_world)
    R = rotation_part(M)
    positions = poses.positions @ M[:3, :3].T + M[:3, 3]
    quaternions = matrix_to_quat(R @ quat_to_matrix(poses.quaternions))
    return PoseTrajectory(poses.times, positions, quaternions)


class ARTICULATE_OT_cartesian_import(TimedImport, bpy.types.Operator):
    """Animate the robot's target from a CSV of tool poses (time, x, y, z, qw, qx, qy, qz), ready to bake"""

    bl_idname = "articulate.cartesian_import"
    bl_label = "Import Cartesian Path"
    bl_options = {"REGISTER", "UNDO"}

    filename_ext = ".csv"
    filter_glob: bpy.props.StringProperty(default="*.csv", options={"HIDDEN"},
                                           description="File names the file browser lists")
    pose_frame: bpy.props.EnumProperty(name="Poses In", items=POSE_FRAMES, default="WORLD",
                                       description="Frame the file's positions and rotations are given in")
    chain: bpy.props.StringProperty(
        name="Chain", description="Chain whose target follows the poses; empty for the active chain"
    )
    bake: bpy.props.BoolProperty(name="Bake", default=True, description="Solve the joints on every frame now")

    @classmethod
    def poll(cls, context):
        return robot_poll(cls, context, editable=True)

    def execute(self, context: bpy.types.Context) -> set[str]:
        from ..ik_core.model.euler import quat_make_continuous
        from ..ik_core.trajectory import read_pose_csv, resample
        from .bridge.robot_trajectory import StoredTrajectory, store_trajectory

        scene = context.scene
        try:
            arm = _robot(context)
            robot_model(arm)  # a damaged stored model would fail the bake after the poses were keyed
            chain = _named_chain(arm, self.chain)
            if chain.target is None:
                raise bridge.BridgeError(f"chain {chain.name!r} of robot {arm.name!r} has no target to drive")
            path = bpy.path.abspath(self.filepath)
            poses = read_pose_csv(path)
            if self.pose_frame == "BASE":
                poses = base_to_world(arm, poses)
            rate = self.key_rate(scene, poses.times)
            fps = rate.rate
            poses = resample(poses, fps)
        except (ArticulateError, bridge.BridgeError, OSError) as err:
            return _fail(self, err)
        target = chain.target
        frames = self.start_frame + np.round((poses.times - poses.times[0]) * fps)
        channels = [compat.Channel("location", i, "Object Transforms") for i in range(3)]
        channels += [compat.Channel("rotation_quaternion", i, "Object Transforms") for i in range(4)]
        self.apply_timing(scene, rate, int(frames[-1]))
        target.rotation_mode = "QUATERNION"
        # q and -q are one rotation, but keys interpolate componentwise: neighbours must agree in sign.
        values = np.hstack([poses.positions, quat_make_continuous(poses.quaternions)])
        compat.write_channels(target, channels, frames, values)
        store_trajectory(arm, StoredTrajectory(Path(path).name, "poses", self.start_frame, int(frames[-1]), fps))
        if rate.warning:
            self.report({"WARNING"}, rate.warning)
        if not self.bake:
            return {"FINISHED"}
        try:
            done = bpy.ops.articulate.bake(use_scene_settings=False, frame_start=int(frames[0]),
                                           frame_end=int(frames[-1]), mark_missed=True)
            why = "" if done == {"FINISHED"} else "the bake was cancelled"
        except RuntimeError as err:  # the bake reported an error
            why = str(err).removeprefix("Error: ").strip()
        if not why:
            return done
        # Cancelled, the import is undone with the bake: this operator runs as a transaction (transaction.py).
        self.report({"ERROR"}, f"the poses were not imported: {why}")
        return {"CANCELLED"}


def _named_chain(arm: bpy.types.Object, name: str):
    """The chain called ``name``, or the active chain for "".

    Raises:
        BridgeError: No chains, or no chain of that name (the message suggests the nearest).
    """
    data = arm.articulate
    if not data.chains:
        raise bridge.BridgeError(f"robot {arm.name!r} has no chain; add one with Add Robot Chain")
    if not name:
        return data.chains[min(data.active_chain, len(data.chains) - 1)]
    for chain in data.chains:
        if chain.name == name:
            return chain
    raise bridge.BridgeError(f"robot {arm.name!r} has no chain {name!r}; "
                             + name_hint(name, (c.name for c in data.chains), "chain"))


def robot_chain_model(arm: bpy.types.Object):
    """(skeleton, effector, joint names) of the rig's active chain, solved on the stored model.

    A rig built before models were stored is derived from its bones, as bakes of such rigs are.

    Raises:
        BridgeError: No chain, or a chain the model cannot build (the message says why).
    """

    chain = _named_chain(arm, "")
    model = robot_model(arm)
    if model is None or not chain.tool_link:
        bones = bridge.chain_bones(arm, chain)
        return bridge.chain_skeleton(arm, bones, use_tail=False), "tip", bones
    try:
        skeleton = model.chain_skeleton(chain.tool_link, chain.base_link or None)
    except ArticulateError as err:
        raise bridge.BridgeError(f"chain {chain.name!r}: {err}") from None
    check_bones(arm, skeleton.moving_joint_names, f"chain {chain.name!r}")
    return skeleton, chain.tool_link, [arm.pose.bones[n] for n in skeleton.moving_joint_names]


FRAME_RANGES = (
    ("TRAJECTORY", "Trajectory", "The frames of the trajectory last imported onto the robot (joint or Cartesian "
                                 "file); the scene's range when none was imported"),
    ("SCENE", "Scene", "The scene's frame range"),
)


def checked_range(context: bpy.types.Context, stored: StoredTrajectory | None, choice: str) -> tuple[int, int, str]:
    """(first, last, what they are) of the frames a check or export covers.

    ``choice`` "TRAJECTORY" gives the stored trajectory's frames when the rig has one, else the
    scene's; "SCENE" the scene's.
    """

    scene = context.scene
    if stored is not None and choice == "TRAJECTORY":
        return stored.frame_start, stored.frame_end, f"the trajectory from {stored.source}"
    return scene.frame_start, scene.frame_end, "the scene's range"


def robot_check(context: bpy.types.Context, arm: bpy.types.Object, start: int, end: int, **thresholds):
    """The core's per-frame trajectory check of the active chain's keyed joints, frames ``start..end``."""
    from ..ik_core.trajectory import JointTrajectory, check_trajectory
    from .bridge.robot import read_joint_values

    info = robot_info(arm)
    skeleton, effector, _bones = robot_chain_model(arm)
    frames = np.arange(start, end + 1, dtype=float)
    fps = context.scene.render.fps / context.scene.render.fps_base
    names = [j["name"] for j in info["joints"]]
    values = read_joint_values(arm, frames)
    order = [names.index(n) for n in skeleton.moving_joint_names]
    traj = JointTrajectory(skeleton.moving_joint_names, (frames - frames[0]) / fps, values[:, order])
    return frames, check_trajectory(traj, skeleton, effector, **_chain_limits(info, order), **thresholds)


def _chain_limits(info: dict, order: list[int]) -> dict:
    """Velocity and acceleration limits of the rig's joints at ``order``, for ``check_trajectory``."""
    accel = [info["joints"][k].get("acceleration") for k in order]
    if not any(a is not None for a in accel) and info.get("acceleration"):  # rigs built before joints carried it
        accel = [info["acceleration"][k] for k in order]
    return {"velocity_limits": [info["joints"][k]["velocity"] for k in order], "acceleration_limits": accel}


def file_sample_check(arm: bpy.types.Object, stored: StoredTrajectory | None, start: int, end: int,
                      **thresholds) -> tuple[np.ndarray, TrajectoryReport] | None:
    """The check of the joint file's own samples falling on frames ``start..end`` (None without any).

    The keys are the file resampled to the scene's rate; a spike between two frames is not in
    them, but it is in these samples. Returns ((M,) sample frames, report).
    """
    from ..ik_core.trajectory import JointTrajectory, check_trajectory

    if stored is None or stored.samples is None:
        return None
    frames = stored.sample_frames()
    inside = np.flatnonzero((frames >= start - 0.5) & (frames < end + 0.5))
    if inside.size == 0:
        return None
    info = robot_info(arm)
    skeleton, effector, _bones = robot_chain_model(arm)
    names = [j["name"] for j in info["joints"]]
    order = [names.index(n) for n in skeleton.moving_joint_names]
    samples = stored.samples.select(skeleton.moving_joint_names)
    picked = JointTrajectory(samples.joint_names, samples.times[inside], samples.positions[inside])
    report = check_trajectory(picked, skeleton, effector, **_chain_limits(info, order), **thresholds)
    return frames[inside], report


def _issues(report: TrajectoryReport) -> str:

    return ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in report.summary()["frames_per_issue"].items() if v)


class ARTICULATE_OT_trajectory_check(bpy.types.Operator):
    """Check the robot's keys and the joint file's own samples: limits, velocity, acceleration, singularities, jumps"""

    bl_idname = "articulate.trajectory_check"
    bl_label = "Check Trajectory"
    bl_options = {"REGISTER", "UNDO"}

    report_path: bpy.props.StringProperty(name="Report", subtype="FILE_PATH", options=set(BLEND_RELATIVE),
                                          description="Write the per-frame report (.json or .csv)")
    frame_range: bpy.props.EnumProperty(name="Frames", items=FRAME_RANGES, default="TRAJECTORY",
                                        description="Frames to check")
    singularity_threshold: bpy.props.FloatProperty(
        name="Singularity Threshold", default=1e-2, min=0.0,
        description="A frame is near a singularity when the Jacobian's smallest singular value falls below this "
                    "(the arm loses a direction it can move in)")
    jump_threshold: bpy.props.FloatProperty(
        name="Jump Threshold", default=0.5, min=1e-6, subtype="ANGLE",
        description="A joint jumps when it turns more than this between two frames (or a sliding joint moves more "
                    "than this many metres)")

    @classmethod
    def poll(cls, context):
        return robot_poll(cls, context)

    def execute(self, context: bpy.types.Context) -> set[str]:
        from .bridge.robot_trajectory import stored_trajectory

        if why := report_path_problem(self.report_path):
            self.report({"ERROR"}, why)
            return {"CANCELLED"}
        scene = context.scene
        thresholds = {"singularity_threshold": self.singularity_threshold, "jump_threshold": self.jump_threshold}
        try:
            arm = _robot(context)
            stored = stored_trajectory(arm)
            start, end, what = checked_range(context, stored, self.frame_range)
            frames, report = robot_check(context, arm, start, end, **thresholds)
            file_check = file_sample_check(arm, stored, start, end, **thresholds)
        except (ArticulateError, bridge.BridgeError) as err:
            return _fail(self, err)
        keyed_bad = ~np.asarray(report.frame_ok)
        file_bad = np.zeros(len(frames), dtype=bool)
        if file_check is not None:
            sample_frames, file_report = file_check
            nearest = np.clip(np.floor(sample_frames + 0.5), start, end).astype(int)
            file_bad[nearest[~file_report.frame_ok] - start] = True
        for m in [m for m in scene.timeline_markers if m.name.startswith(CHECK_MARKER)]:
            scene.timeline_markers.remove(m)
        for f, keyed in zip(frames[keyed_bad | file_bad], keyed_bad[keyed_bad | file_bad]):
            scene.timeline_markers.new(CHECK_MARKER if keyed else f"{CHECK_MARKER}: file sample", frame=int(f))
        bad = keyed_bad | file_bad
        issues = _issues(report)
        summary = f"{int(bad.sum())} of {len(frames)} frames flagged ({start}..{end}, {what})" + (
            f": {issues}" if issues else "")
        if file_check is not None:
            file_issues = _issues(file_report)
            summary += (f"; the file's own samples: {int((~file_report.frame_ok).sum())} of {len(sample_frames)} "
                        "flagged" + (f": {file_issues}" if file_issues else ""))
        scene.articulate.last_summary = summary
        if self.report_path:
            self._write(arm, frames, report, file_bad, stored, file_check, start, end, what)
        self.report({"WARNING"} if bad.any() else {"INFO"}, summary)
        return {"FINISHED"}

    def _write(self, arm, frames, report, file_bad, stored, file_check, start, end, what) -> None:
        """The report: per frame the keyed check and whether a flagged file sample falls there."""
        if self.report_path.lower().endswith(".csv"):
            lines = report.to_csv().splitlines()
            rows = [lines[0] + ",file_sample_flagged"]
            rows += [f"{line},{int(flag)}" for line, flag in zip(lines[1:], file_bad)]
            write_report(self.report_path, "\n".join(rows) + "\n")
            return
        data = report.to_dict()
        data["frames"]["frame"] = frames.astype(int).tolist()
        data["frames"]["file_sample_flagged"] = file_bad.tolist()
        head = {"armature": arm.name, "frame_range": {"start": start, "end": end, "source": what}}
        if file_check is not None:
            sample_frames, file_report = file_check
            head["file_samples"] = {"source": stored.source, "frame": sample_frames.tolist(), **file_report.to_dict()}
        write_report(self.report_path, {**head, **data})


EXPORT_FORMATS = (
    ("CSV", "CSV (.csv)", "A header 'time,<joint>,...', then a row per sample: seconds, radians or metres"),
    ("JSON", "ROS JSON (.json)", "Shaped like ROS trajectory_msgs/JointTrajectory: joint_names and points"),
    ("MCAP", "ROS 2 Bag (.mcap)", "sensor_msgs/msg/JointState messages on one topic, stamped in nanoseconds, "
                                  "uncompressed: ros2 bag play and Foxglove play it"),
)
FORMAT_EXTENSIONS = {"CSV": ".csv", "JSON": ".json", "MCAP": ".mcap"}


class ARTICULATE_OT_trajectory_export(ExportFile, bpy.types.Operator):
    """Export the robot's keyed joint trajectory (CSV, ROS JointTrajectory JSON or a ROS 2 bag) at a chosen rate"""

    bl_idname = "articulate.trajectory_export"
    bl_label = "Export Joint Trajectory"
    bl_options = {"REGISTER"}

    filename_ext = ".csv"
    filter_glob: bpy.props.StringProperty(default="*.csv;*.json;*.mcap", options={"HIDDEN"},
                                           description="File names the file browser lists")
    file_format: bpy.props.EnumProperty(
        name="Format", items=EXPORT_FORMATS, default="CSV",
        description="File format; a file name ending in .csv, .json or .mcap decides it",
    )
    topic: bpy.props.StringProperty(name="Topic", default=DEFAULT_TOPIC,
                                    description="MCAP: the topic of the JointState messages")
    frame_range: bpy.props.EnumProperty(name="Frames", items=FRAME_RANGES, default="TRAJECTORY",
                                        description="Frames to export")
    rate: bpy.props.FloatProperty(name="Rate (Hz)", default=0.0, min=0.0,
                                  description="Samples per second; 0 for the scene's frame rate")

    @classmethod
    def poll(cls, context):
        return robot_poll(cls, context)

    def default_name(self, context: bpy.types.Context) -> str:
        return export_name(context.object)

    def check(self, context: bpy.types.Context) -> bool:
        # The chosen format's extension replaces the file's (Blender's own exporters do the same).
        return ensure_extension(self, FORMAT_EXTENSIONS[self.file_format])

    def execute(self, context: bpy.types.Context) -> set[str]:
        from ..ik_core.trajectory import write_joint_csv, write_joint_json
        from ..ik_core.trajectory.mcap_files import write_joint_mcap
        from .bridge.robot_trajectory import stored_trajectory

        try:
            arm = _robot(context)
            path = export_path(self.filepath, self.file_format)
            start, end, what = checked_range(context, stored_trajectory(arm), self.frame_range)
            traj = export_trajectory(context, arm, start, end, self.rate)
            if path.lower().endswith(".mcap"):
                write_joint_mcap(path, traj, topic=self.topic.strip())
            else:
                (write_joint_json if path.lower().endswith(".json") else write_joint_csv)(path, traj)
        except (ArticulateError, bridge.BridgeError, OSError) as err:
            return _fail(self, err)
        self.report({"INFO"}, printable(f"Wrote {len(traj.times)} samples of {len(traj.joint_names)} joints, frames "
                                        f"{start}..{end} ({what}), to {path}"))
        return {"FINISHED"}


def export_name(arm: bpy.types.Object | None) -> str:
    """File name (without extension) an export of ``arm``'s trajectory proposes: ``<robot>_trajectory``."""
    return f"{arm.name if arm is not None else 'robot'}_trajectory"


def export_path(filepath: str, file_format: str) -> str:
    """The absolute file to write: ``filepath`` as given when it ends in .csv, .json or .mcap, else with the format's.

    Raises:
        BridgeError: No path, or a path with another extension (the message lists the valid ones).
    """
    if not filepath:
        raise bridge.BridgeError("choose a file to export to (.csv, .json or .mcap)")
    path = bpy.path.abspath(filepath)
    ext = os.path.splitext(path)[1].lower()
    if ext in FORMAT_EXTENSIONS.values():
        return path
    if ext:
        raise bridge.BridgeError(f"cannot export to {os.path.basename(path)!r}: the extension {ext!r} is not "
                                 "'.csv' (CSV), '.json' (ROS JSON) or '.mcap' (ROS 2 bag)")
    return path + FORMAT_EXTENSIONS[file_format]


def export_trajectory(context, arm, start: int, end: int, rate: float = 0.0) -> JointTrajectory:
    """The rig's joint trajectory over frames ``start..end``, resampled to ``rate`` Hz (0: the scene's)."""
    from ..ik_core.trajectory import JointTrajectory
    from ..ik_core.trajectory.check import onto_limits
    from .bridge.robot import read_joint_values

    fps = context.scene.render.fps / context.scene.render.fps_base
    rate = rate or fps
    n = int(np.floor((end - start) / fps * rate + 1e-9)) + 1
    frames = start + np.arange(n) * fps / rate
    joints = robot_info(arm)["joints"]
    names = tuple(file_joint_names(joints))
    # Float32 keys a rounding beyond a limit (a locked joint's) go out on the limit itself.
    lower = np.array([-np.inf if j.get("lower") is None else j["lower"] for j in joints], dtype=float)
    upper = np.array([np.inf if j.get("upper") is None else j["upper"] for j in joints], dtype=float)
    return JointTrajectory(names, (frames - start) / fps, onto_limits(read_joint_values(arm, frames), lower, upper))


def file_joint_names(joints: list[dict]) -> list[str]:
    """The names trajectory files give the rig's joints (its description's ``joints``): the URDF's.

    A joint whose name was too long for a bone has a shortened one on the rig (``name``) and its
    URDF name beside it (``urdf_name``).
    """
    return [j.get("urdf_name") or j["name"] for j in joints]


MAX_JOINTS = 32  # size of ARTICULATE_PG_branch.values


class ARTICULATE_OT_robot_branches(bpy.types.Operator):
    """List the distinct joint solutions (IK branches) reaching the robot's target on this frame"""

    bl_idname = "articulate.robot_branches"
    bl_label = "Find IK Branches"
    bl_options = {"REGISTER", "UNDO"}

    seeds: bpy.props.IntProperty(
        name="Seeds", default=64, min=1, max=4096,
        description="Random joint configurations to solve from; more find rarer branches, and take longer",
    )

    @classmethod
    def poll(cls, context):
        return robot_poll(cls, context, editable=True)

    def execute(self, context):
        from ..ik_core.robots.branches import robot_branches
        from ..ik_core.solvers import make_solver
        from ..ik_core.take.tracking import to_base_frame
        from .bridge.robot import current_joint_values

        try:
            arm = _robot(context)
            chain = _named_chain(arm, "")
            skeleton, effector, bones = robot_chain_model(arm)
            if skeleton.dof > MAX_JOINTS:
                raise bridge.BridgeError(f"at most {MAX_JOINTS} joints are supported, this chain has {skeleton.dof}")
            if chain.target is None:
                raise bridge.BridgeError(f"chain {chain.name!r} of robot {arm.name!r} has no target (deleted?): "
                                         "pick one in its Target field, or add the chain again (Add Robot Chain)")
            base = bridge.base_matrix(arm, bones[0])
            if robot_model(arm) is not None and chain.tool_link:
                model = robot_model(arm)
                base = base @ model.link_rest_frame(chain.base_link or model.urdf.root_link)
            target = to_base_frame(base[None], bridge.target_matrix(chain.target, chain.target_bone)[None])[0]
            current = current_joint_values(arm, skeleton)
            solver = make_solver("dls", skeleton, effector, mode="full", tolerance=chain.tolerance,
                                 rotation_tolerance=1e-4, restarts=0)
            found = robot_branches(solver, target, reference=current, seeds=self.seeds)
        except (ArticulateError, bridge.BridgeError) as err:
            return _fail(self, err)
        data = arm.articulate
        data.branches.clear()
        for k, q in enumerate(found.q):
            item = data.branches.add()
            item.name = f"Branch {k + 1}: " + " ".join(f"{np.degrees(v):.0f}" for v in q)
            item.values = [*q.tolist(), *[0.0] * (MAX_JOINTS - len(q))]
            item.joints = ",".join(skeleton.moving_joint_names)
        data.active_branch = 0
        if not len(found):
            self.report({"WARNING"}, "no solution reaches the target from any seed")
        else:
            self.report({"INFO"}, f"{len(found)} distinct branch(es); the first is nearest the current pose")
        return {"FINISHED"}


class ARTICULATE_OT_robot_use_branch(bpy.types.Operator):
    """Pose the robot on the chosen branch and key it on this frame, so a bake from here keeps it"""

    bl_idname = "articulate.robot_use_branch"
    bl_label = "Use Branch"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return robot_poll(cls, context, editable=True) and list_poll(cls, context, "branches", "Find IK Branches")

    def execute(self, context):
        from .bridge.robot import write_joint_values

        arm = context.object
        data = arm.articulate
        if not 0 <= data.active_branch < len(data.branches):
            self.report({"ERROR"}, "choose a branch from the list first")
            return {"CANCELLED"}
        branch = data.branches[data.active_branch]
        try:
            _robot(context)
            names = branch_joints(arm, branch, [j["name"] for j in robot_info(arm)["joints"]])
        except bridge.BridgeError as err:
            return _fail(self, err)
        q = np.array(branch.values[: len(names)])
        frame = float(context.scene.frame_current)
        write_joint_values(arm, np.array([frame]), q[None], names)
        context.scene.frame_set(int(frame))
        label = branch.name.partition(":")[0] or f"branch {data.active_branch + 1}"
        self.report({"INFO"}, f"{label} keyed on frame {int(frame)} ({len(names)} joints); a bake from here keeps it")
        return {"FINISHED"}


class ARTICULATE_OT_robot_repair(bpy.types.Operator):
    """Repair the robot's damaged stored data: model from its preset or URDF, description, stale branches, targets"""

    bl_idname = "articulate.robot_repair"
    bl_label = "Repair Robot Data"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return robot_poll(cls, context, editable=True)

    def execute(self, context):
        from .bridge.robot import repair_robot

        try:
            done = repair_robot(context.object)
        except (ArticulateError, bridge.BridgeError, OSError) as err:
            return _fail(self, err)
        self.report({"INFO"}, "Repaired: " + "; ".join(done) if done else "Nothing to repair: the robot's stored "
                                                                        "data is whole")
        return {"FINISHED"}


classes = (
    ARTICULATE_OT_robot_repair,
    ARTICULATE_OT_robot_branches,
    ARTICULATE_OT_robot_use_branch,
    ARTICULATE_OT_robot_add,
    ARTICULATE_OT_robot_import_urdf,
    ARTICULATE_OT_robot_chain_add,
    ARTICULATE_OT_trajectory_import,
    ARTICULATE_OT_cartesian_import,
    ARTICULATE_OT_trajectory_check,
    ARTICULATE_OT_trajectory_export,
)
