# SPDX-License-Identifier: GPL-3.0-or-later
"""Robot arms: add a preset or a URDF as a rig, import, check and export joint trajectories."""

from __future__ import annotations

import os
from pathlib import Path

import bpy
import numpy as np

from ..ik_core import ArticulateError
from ..ik_core.errors import name_hint
from ..ik_core.formats.urdf_visuals import parse_visuals
from ..ik_core.robots import presets
from ..ik_core.robots.model import RobotModel
from ..ik_core.solvers import make_solver
from ..ik_core.solvers.branches import distinct_solutions
from ..ik_core.take.tracking import to_base_frame
from ..ik_core.trajectory import (
    JointTrajectory,
    check_trajectory,
    read_joint_csv,
    read_joint_json,
    read_pose_csv,
    resample,
    write_joint_csv,
    write_joint_json,
)
from . import bridge, compat
from .bridge.robot import (
    add_robot_chain,
    build_robot_rig,
    current_joint_values,
    read_joint_values,
    robot_info,
    robot_model,
    write_joint_values,
)
from .files import FileBrowserMixin, write_report
from .polls import robot_poll

CHECK_MARKER = "Robot check"


_PRESET_ITEMS: list = []  # Blender reads dynamic enum strings after the callback returns: keep them alive


def preset_items(_self, _context) -> list:
    """The robot presets as enum items: id, display name and a line saying what the arm is."""
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
    obj = context.object
    robot_info(obj)  # raises BridgeError naming the problem
    return obj


def _fail(op: bpy.types.Operator, err: Exception) -> set[str]:
    op.report({"ERROR"}, str(err))
    return {"CANCELLED"}


class ARTICULATE_OT_robot_add(bpy.types.Operator):
    """Add a robot arm from a preset, with its true kinematics and joint limits"""

    bl_idname = "articulate.robot_add"
    bl_label = "Add Robot"
    bl_options = {"REGISTER", "UNDO"}

    preset: bpy.props.EnumProperty(name="Robot", items=preset_items, description="The robot arm to add")

    def execute(self, context: bpy.types.Context) -> set[str]:
        try:
            model = RobotModel.from_preset(self.preset)
            info = presets.preset_info(self.preset)
            arm, _targets, warnings = build_robot_rig(
                model, info.get("display_name", self.preset).replace(" ", "_"),
                metadata={"preset": self.preset, "source": info.get("source"),
                          "acceleration": info.get("acceleration")},
            )
        except (ArticulateError, bridge.BridgeError) as err:
            return _fail(self, err)
        for w in warnings:
            self.report({"WARNING"}, w)
        context.view_layer.objects.active = arm
        return {"FINISHED"}


class ARTICULATE_OT_robot_import_urdf(FileBrowserMixin, bpy.types.Operator):
    """Build a robot rig from a whole URDF tree (kinematics, limits, link geometry where meshes resolve)"""

    bl_idname = "articulate.robot_import_urdf"
    bl_label = "Import URDF"
    bl_options = {"REGISTER", "UNDO"}

    filepath: bpy.props.StringProperty(name="URDF", subtype="FILE_PATH")
    filter_glob: bpy.props.StringProperty(default="*.urdf;*.xml", options={"HIDDEN"})
    tip_link: bpy.props.StringProperty(
        name="Tool Links",
        description="Comma-separated tool links, one chain each; empty for the end of every branch",
    )
    package_dir: bpy.props.StringProperty(
        name="Package Folder", description="Folder that package:// mesh paths are resolved against", subtype="DIR_PATH"
    )

    def execute(self, context: bpy.types.Context) -> set[str]:
        path = bpy.path.abspath(self.filepath)
        try:
            if not os.path.isfile(path):
                raise bridge.BridgeError(f"URDF file not found: {path!r}")
            model = RobotModel.from_urdf(path)
            tools = [t.strip() for t in self.tip_link.split(",") if t.strip()] or None
            arm, _targets, warnings = build_robot_rig(
                model, model.name, tools=tools, visuals=parse_visuals(path), urdf_dir=os.path.dirname(path),
                package_dirs=[bpy.path.abspath(self.package_dir)] if self.package_dir else [],
                metadata={"urdf": path},
            )
        except (ArticulateError, bridge.BridgeError) as err:
            return _fail(self, err)
        for w in warnings:
            self.report({"WARNING"}, w)
        chains = ", ".join(c.tool_link for c in arm.articulate.chains) or "none"
        self.report({"INFO"}, f"Imported {model.name!r}: {len(model.joint_order)} joints, chains to {chains}")
        context.view_layer.objects.active = arm
        return {"FINISHED"}


_TOOL_ITEMS: list = []  # Blender reads dynamic enum strings after the callback returns: keep them alive


def _tool_link_items(context) -> list:
    """Links of the active robot rig's stored model that a chain can end on."""
    obj = context.object if context is not None else None
    try:
        model = robot_model(obj) if obj is not None and "articulate_robot" in obj else None
    except bridge.BridgeError:
        model = None
    links = model.links_below() if model is not None else []
    _TOOL_ITEMS[:] = [(link, link, f"A chain from the robot's root to {link}") for link in links]
    return _TOOL_ITEMS


class ARTICULATE_OT_robot_chain_add(bpy.types.Operator):
    """Add a chain to a tool link of the robot, with its own target (both arms, each leg)"""

    bl_idname = "articulate.robot_chain_add"
    bl_label = "Add Robot Chain"
    bl_options = {"REGISTER", "UNDO"}

    tool_link: bpy.props.EnumProperty(name="Tool Link", description="Link the chain's target drives",
                                      items=lambda _self, context: _tool_link_items(context))
    base_link: bpy.props.StringProperty(name="Base Link", description="Link the chain starts from; empty for the root")

    @classmethod
    def poll(cls, context):
        return robot_poll(cls, context)

    def execute(self, context: bpy.types.Context) -> set[str]:
        try:
            arm = _robot(context)
            model = robot_model(arm)
            if model is None:
                raise bridge.BridgeError(f"robot {arm.name!r} was built before rigs stored their model; "
                                         "build it again to add chains")
            if any(c.tool_link == self.tool_link and c.base_link == self.base_link for c in arm.articulate.chains):
                raise bridge.BridgeError(f"robot {arm.name!r} already has a chain to {self.tool_link!r}")
            add_robot_chain(arm, model, self.tool_link, self.base_link)
        except (ArticulateError, bridge.BridgeError) as err:
            return _fail(self, err)
        context.view_layer.objects.active = arm
        return {"FINISHED"}


class ARTICULATE_OT_trajectory_import(FileBrowserMixin, bpy.types.Operator):
    """Key a joint trajectory (CSV: time then one column per joint; or ROS JointTrajectory JSON)"""

    bl_idname = "articulate.trajectory_import"
    bl_label = "Import Joint Trajectory"
    bl_options = {"REGISTER", "UNDO"}

    filepath: bpy.props.StringProperty(name="File", subtype="FILE_PATH")
    filter_glob: bpy.props.StringProperty(default="*.csv;*.json", options={"HIDDEN"})
    start_frame: bpy.props.IntProperty(name="Start Frame", default=1)

    @classmethod
    def poll(cls, context):
        return context.object is not None and "articulate_robot" in context.object

    def execute(self, context: bpy.types.Context) -> set[str]:
        try:
            arm = _robot(context)
            names = [j["name"] for j in robot_info(arm)["joints"]]
            path = bpy.path.abspath(self.filepath)
            reader = read_joint_json if path.lower().endswith(".json") else read_joint_csv
            traj = reader(path, names)
            fps = context.scene.render.fps / context.scene.render.fps_base
            traj = resample(traj, fps)
            frames = self.start_frame + np.round((traj.times - traj.times[0]) * fps)
        except (ArticulateError, bridge.BridgeError, OSError) as err:
            return _fail(self, err)
        write_joint_values(arm, frames, traj.positions)
        context.scene.frame_end = max(context.scene.frame_end, int(frames[-1]))
        self.report({"INFO"}, f"Keyed {len(frames)} frames of {len(names)} joints from {Path(path).name}")
        return {"FINISHED"}


class ARTICULATE_OT_cartesian_import(FileBrowserMixin, bpy.types.Operator):
    """Animate the robot's target from a CSV of poses (time, x, y, z, qw, qx, qy, qz), ready to bake"""

    bl_idname = "articulate.cartesian_import"
    bl_label = "Import Cartesian Path"
    bl_options = {"REGISTER", "UNDO"}

    filepath: bpy.props.StringProperty(name="File", subtype="FILE_PATH")
    filter_glob: bpy.props.StringProperty(default="*.csv", options={"HIDDEN"})
    start_frame: bpy.props.IntProperty(name="Start Frame", default=1)
    chain: bpy.props.StringProperty(
        name="Chain", description="Chain whose target follows the poses; empty for the active chain"
    )
    bake: bpy.props.BoolProperty(name="Bake", default=True, description="Solve the joints on every frame now")

    @classmethod
    def poll(cls, context):
        return context.object is not None and "articulate_robot" in context.object

    def execute(self, context: bpy.types.Context) -> set[str]:
        try:
            arm = _robot(context)
            chain = _named_chain(arm, self.chain)
            if chain.target is None:
                raise bridge.BridgeError(f"chain {chain.name!r} of robot {arm.name!r} has no target to drive")
            poses = read_pose_csv(bpy.path.abspath(self.filepath))
            fps = context.scene.render.fps / context.scene.render.fps_base
            poses = resample(poses, fps)
        except (ArticulateError, bridge.BridgeError, OSError) as err:
            return _fail(self, err)
        target = chain.target
        frames = self.start_frame + np.round((poses.times - poses.times[0]) * fps)
        target.rotation_mode = "QUATERNION"
        channels = [compat.Channel("location", i, "Object Transforms") for i in range(3)]
        channels += [compat.Channel("rotation_quaternion", i, "Object Transforms") for i in range(4)]
        values = np.hstack([poses.positions, poses.quaternions])
        compat.write_channels(target, channels, frames, values)
        scene = context.scene
        scene.frame_end = max(scene.frame_end, int(frames[-1]))
        if self.bake:
            return bpy.ops.articulate.bake(use_scene_settings=False, frame_start=int(frames[0]),
                                           frame_end=int(frames[-1]), mark_missed=True)
        return {"FINISHED"}


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
    return skeleton, chain.tool_link, [arm.pose.bones[n] for n in skeleton.moving_joint_names]


def robot_check(context: bpy.types.Context, arm: bpy.types.Object, start: int, end: int, **thresholds):
    """The core's per-frame trajectory check of the active chain's keyed joints, frames ``start..end``."""
    info = robot_info(arm)
    skeleton, effector, _bones = robot_chain_model(arm)
    frames = np.arange(start, end + 1, dtype=float)
    fps = context.scene.render.fps / context.scene.render.fps_base
    names = [j["name"] for j in info["joints"]]
    values = read_joint_values(arm, frames)
    order = [names.index(n) for n in skeleton.moving_joint_names]
    traj = JointTrajectory(skeleton.moving_joint_names, (frames - frames[0]) / fps, values[:, order])
    accel = [info["joints"][k].get("acceleration") for k in order]
    if not any(a is not None for a in accel) and info.get("acceleration"):  # rigs built before joints carried it
        accel = [info["acceleration"][k] for k in order]
    return frames, check_trajectory(traj, skeleton, effector, velocity_limits=[info["joints"][k]["velocity"]
                                    for k in order], acceleration_limits=accel, **thresholds)


class ARTICULATE_OT_trajectory_check(bpy.types.Operator):
    """Check the robot's keyed trajectory: limits, velocity, acceleration, singularities, jumps"""

    bl_idname = "articulate.trajectory_check"
    bl_label = "Check Trajectory"
    bl_options = {"REGISTER", "UNDO"}

    report_path: bpy.props.StringProperty(name="Report", subtype="FILE_PATH",
                                          description="Write the per-frame report (.json or .csv)")
    singularity_threshold: bpy.props.FloatProperty(name="Singularity Threshold", default=1e-2, min=0.0)
    jump_threshold: bpy.props.FloatProperty(name="Jump Threshold", default=0.5, min=1e-6, subtype="ANGLE")

    @classmethod
    def poll(cls, context):
        return context.object is not None and "articulate_robot" in context.object

    def execute(self, context: bpy.types.Context) -> set[str]:
        scene = context.scene
        try:
            arm = _robot(context)
            frames, report = robot_check(context, arm, scene.frame_start, scene.frame_end,
                                         singularity_threshold=self.singularity_threshold,
                                         jump_threshold=self.jump_threshold)
        except (ArticulateError, bridge.BridgeError) as err:
            return _fail(self, err)
        for m in [m for m in scene.timeline_markers if m.name.startswith(CHECK_MARKER)]:
            scene.timeline_markers.remove(m)
        bad = ~np.asarray(report.frame_ok)
        for f in frames[bad]:
            scene.timeline_markers.new(f"{CHECK_MARKER}", frame=int(f))
        summary = report.summary()
        issues = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in summary["frames_per_issue"].items() if v)
        scene.articulate.last_summary = f"{int(bad.sum())} of {len(frames)} frames flagged" + (
            f": {issues}" if issues else ""
        )
        if self.report_path:
            if self.report_path.lower().endswith(".csv"):
                write_report(self.report_path, report.to_csv())
            else:
                data = report.to_dict()
                data["frames"]["frame"] = frames.astype(int).tolist()
                write_report(self.report_path, {"armature": arm.name, **data})
        self.report({"WARNING"} if bad.any() else {"INFO"}, scene.articulate.last_summary)
        return {"FINISHED"}


class ARTICULATE_OT_trajectory_export(FileBrowserMixin, bpy.types.Operator):
    """Export the robot's keyed joint trajectory (CSV or ROS JointTrajectory JSON) at a chosen rate"""

    bl_idname = "articulate.trajectory_export"
    bl_label = "Export Joint Trajectory"
    bl_options = {"REGISTER"}

    filepath: bpy.props.StringProperty(name="File", subtype="FILE_PATH")
    rate: bpy.props.FloatProperty(name="Rate (Hz)", default=0.0, min=0.0,
                                  description="Samples per second; 0 for the scene's frame rate")

    @classmethod
    def poll(cls, context):
        return context.object is not None and "articulate_robot" in context.object

    def execute(self, context: bpy.types.Context) -> set[str]:
        scene = context.scene
        try:
            arm = _robot(context)
            if not self.filepath:
                raise bridge.BridgeError("choose a file to export to (.csv or .json)")
            traj = export_trajectory(context, arm, scene.frame_start, scene.frame_end, self.rate)
            path = bpy.path.abspath(self.filepath)
            (write_joint_json if path.lower().endswith(".json") else write_joint_csv)(path, traj)
        except (ArticulateError, bridge.BridgeError, OSError) as err:
            return _fail(self, err)
        self.report({"INFO"}, f"Wrote {len(traj.times)} samples of {len(traj.joint_names)} joints to {path}")
        return {"FINISHED"}


def export_trajectory(context, arm, start: int, end: int, rate: float = 0.0) -> JointTrajectory:
    """The rig's joint trajectory over frames ``start..end``, resampled to ``rate`` Hz (0: the scene's)."""
    fps = context.scene.render.fps / context.scene.render.fps_base
    rate = rate or fps
    n = int(np.floor((end - start) / fps * rate + 1e-9)) + 1
    frames = start + np.arange(n) * fps / rate
    names = tuple(j["name"] for j in robot_info(arm)["joints"])
    return JointTrajectory(names, (frames - start) / fps, read_joint_values(arm, frames))


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
        return robot_poll(cls, context)

    def execute(self, context):
        try:
            arm = _robot(context)
            chain = _named_chain(arm, "")
            skeleton, effector, bones = robot_chain_model(arm)
            if skeleton.dof > MAX_JOINTS:
                raise bridge.BridgeError(f"at most {MAX_JOINTS} joints are supported, this chain has {skeleton.dof}")
            base = bridge.base_matrix(arm, bones[0])
            if robot_model(arm) is not None and chain.tool_link:
                model = robot_model(arm)
                base = base @ model.link_rest_frame(chain.base_link or model.urdf.root_link)
            target = to_base_frame(base[None], bridge.target_matrix(chain.target, chain.target_bone)[None])[0]
            current = current_joint_values(arm, skeleton)
            solver = make_solver("dls", skeleton, effector, mode="full", tolerance=chain.tolerance,
                                 rotation_tolerance=1e-4, restarts=0)
            found = distinct_solutions(solver, target, reference=current, seeds=self.seeds)
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
        if not robot_poll(cls, context):
            return False
        if not len(context.object.articulate.branches):
            cls.poll_message_set("The branch list is empty: Find IK Branches first")
            return False
        return True

    def execute(self, context):
        arm = context.object
        data = arm.articulate
        if not 0 <= data.active_branch < len(data.branches):
            self.report({"ERROR"}, "choose a branch from the list first")
            return {"CANCELLED"}
        branch = data.branches[data.active_branch]
        names = branch.joints.split(",") if branch.joints else [j["name"] for j in robot_info(arm)["joints"]]
        q = np.array(branch.values[: len(names)])
        frame = float(context.scene.frame_current)
        write_joint_values(arm, np.array([frame]), q[None], names)
        context.scene.frame_set(int(frame))
        return {"FINISHED"}


classes = (
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
