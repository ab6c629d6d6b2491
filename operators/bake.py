# SPDX-License-Identifier: GPL-3.0-or-later
"""Operators that solve and bake an armature's chains, and clear baked keys."""

from __future__ import annotations

import bpy

from ..ik_core.errors import name_hint
from . import bridge, compat, planting
from .baking import BakeFailed, bake_chains, clear_miss_markers, frame_runs, summary_line
from .bridge.stored import robot_info
from .files import BLEND_RELATIVE, chosen_report_path, report_path_problem, write_report
from .frames import FrameRangeOptions
from .polls import armature_poll
from .wording import angles_in_degrees, missed_chains


def _armature(context: bpy.types.Context, name: str) -> bpy.types.Object:
    """The named or active object, checked to be an armature the IK can pose.

    Raises:
        BakeFailed: No such object, or not an armature (the message says which).
    """
    obj = bpy.data.objects.get(name) if name else context.object
    if name and obj is None:
        armatures = [o.name for o in bpy.data.objects if o.type == "ARMATURE"]
        raise BakeFailed(f"no object named {name!r}; " + name_hint(name, armatures, "armature"))
    try:
        bridge.check_armature(obj)
    except bridge.BridgeError as err:
        raise BakeFailed(str(err)) from None
    return obj


def _chains(arm: bpy.types.Object, only_active: bool) -> list:
    data = arm.articulate
    if only_active:
        if not 0 <= data.active_chain < len(data.chains):
            raise BakeFailed(f"armature {arm.name!r} has no active chain to bake")
        return [data.chains[data.active_chain]]
    return [c for c in data.chains if c.enabled]


class _ChainOperator:
    # Set by scripts and cli.py, never remembered for the next run from the panel.
    armature: bpy.props.StringProperty(
        name="Armature", description="Armature object to work on; empty for the active object",
        options={"HIDDEN", "SKIP_SAVE"},
    )
    only_selected: bpy.props.BoolProperty(
        name="Active Chain Only", description="Only the active chain (else every enabled chain)"
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return armature_poll(cls, context)


def bake(context: bpy.types.Context, arm: bpy.types.Object, chains: list, frames: range, **options) -> dict:
    """Bake ``chains``: on the stored model for a robot rig (joint values keyed), else from the bones.

    Raises:
        BakeFailed: Invalid input, detected before the scene is changed.
    """
    if not chains:  # a robot rig too: its bake would otherwise key nothing and report success
        raise BakeFailed(f"armature {arm.name!r} has no enabled chain; add one in the Articulate panel "
                         "or enable one in its chain list")
    if "articulate_robot" in arm:
        # Robot rigs only: the robot model and the URDF reader under it are not imported for characters.
        from .robot_bake import bake_robot, is_model_rig

        try:  # a robot rig's stored description and model, checked before anything is solved or keyed
            robot_info(arm)
            robot = is_model_rig(arm, chains)
        except bridge.BridgeError as err:
            raise BakeFailed(str(err)) from None
    else:
        robot = False
    if robot:
        options.pop("mute_constraints", None)
        reduce = options.pop("key_tolerance", 0.0)
        report = bake_robot(context, arm, chains, frames, **options)
        if reduce:
            report.setdefault("notes", []).append(
                "keys were not reduced: a robot's joint trajectory keeps every frame (export resamples it)")
        return report
    report = bake_chains(context, arm, chains, frames, **options)
    if "articulate_robot" in arm:
        report.setdefault("notes", []).append(
            "this robot rig stores no kinematic model (built before models were stored): "
            "the bake derived the joints from its bones"
        )
    return report


def _report_warnings(op: bpy.types.Operator, report: dict) -> None:
    """Show the bake report's warnings (a pole its solver ignores, ...) as operator warnings."""
    for warning in report.get("warnings", []):
        op.report({"WARNING"}, warning)


class ARTICULATE_OT_bake(FrameRangeOptions, _ChainOperator, bpy.types.Operator):
    """Solve the armature's chains on every frame of a range and key the bones' rotations"""

    bl_idname = "articulate.bake"
    bl_label = "Bake Chains"
    bl_options = {"REGISTER", "UNDO"}

    frame_step: bpy.props.IntProperty(
        name="Step", default=1, min=1, description="Solve and key every this many frames, when Use Panel Settings "
                                                   "is off (1: every frame)",
    )
    mute_constraints: bpy.props.BoolProperty(
        name="Mute IK Constraints", default=True,
        description="Mute the IK and track constraints the chains were converted from, so playback shows the keys",
    )
    mark_missed: bpy.props.BoolProperty(
        name="Mark Missed Frames", default=True, description="Add a timeline marker on every frame a chain missed"
    )
    report_path: bpy.props.StringProperty(
        name="Report", description="Write a JSON report of every frame and chain to this file", subtype="FILE_PATH",
        options={"HIDDEN", "SKIP_SAVE", *BLEND_RELATIVE},
    )
    solver: bpy.props.StringProperty(
        name="Solver", options={"HIDDEN", "SKIP_SAVE"},
        description="Solver for every chain (auto, fabrik, ccd, dls, two_bone); empty keeps each chain's",
    )
    key_tolerance: bpy.props.FloatProperty(
        name="Reduce Keys", default=0.0, min=0.0, soft_max=0.01, subtype="DISTANCE", unit="LENGTH", precision=4,
        description="Key only the frames needed for every chain tip to play within this distance of the full bake "
                    "(0 keys every frame)",
    )

    def draw(self, context: bpy.types.Context) -> None:
        layout = self.layout
        self.draw_range(layout, context, "frame_step")
        if self.use_scene_settings:
            return  # the options come from the panel too
        for name in ("only_selected", "mute_constraints", "mark_missed", "key_tolerance"):
            layout.prop(self, name)

    def execute(self, context: bpy.types.Context) -> set[str]:
        report_path = chosen_report_path(self.report_path, context, self.use_scene_settings)
        if why := report_path_problem(report_path):
            self.report({"ERROR"}, why)
            return {"CANCELLED"}
        settings = context.scene.articulate
        if self.use_scene_settings:
            step = settings.frame_step
            only, mute, mark = settings.only_selected, settings.mute_constraints, settings.mark_missed
            reduce = settings.key_tolerance
        else:
            step = self.frame_step
            only, mute, mark = self.only_selected, self.mute_constraints, self.mark_missed
            reduce = self.key_tolerance
        try:
            arm = _armature(context, self.armature)
            frames = self.frames(context, step)
            report = bake(context, arm, _chains(arm, only), frames, mute_constraints=mute, mark_missed=mark,
                          solver=self.solver, key_tolerance=reduce)
        except BakeFailed as err:
            self.report({"ERROR"}, angles_in_degrees(str(err)))
            return {"CANCELLED"}
        if report_path:
            write_report(report_path, report)
        settings.last_summary = summary_line(report)
        _report_warnings(self, report)
        reduced = report.get("key_reduction")
        if reduced:
            self.report({"INFO"}, f"Keys reduced {reduced['keys_before']} -> {reduced['keys_after']}, tips within "
                                  f"{reduced['max_deviation_m'] * 1000:.3g} mm of the full bake")
        if planted := planting.summary(report):
            self.report({"INFO"}, f"Contacts planted: {planted}")
        missed = report["missed_frames"]
        if missed:
            self.report({"WARNING"}, f"{len(missed)} of {len(frames)} frames missed a target: {frame_runs(missed)}")
        else:
            self.report({"INFO"}, f"Baked {len(frames)} frames, every target reached")
        return {"FINISHED"}


class ARTICULATE_OT_solve_frame(_ChainOperator, bpy.types.Operator):
    """Pose the armature's chains toward their targets on the current frame (no keys)"""

    bl_idname = "articulate.solve_frame"
    bl_label = "Solve Current Frame"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context: bpy.types.Context) -> set[str]:
        try:
            arm = _armature(context, self.armature)
            frame = context.scene.frame_current
            live = {(pb.name, con.name) for pb in arm.pose.bones for con in pb.constraints if not con.mute}
            # As a bake with the panel's Mute IK Constraints would: the pose shown is the one the bake plays.
            report = bake(context, arm, _chains(arm, self.only_selected), range(frame, frame + 1), write_keys=False,
                          mute_constraints=context.scene.articulate.mute_constraints)
        except BakeFailed as err:
            self.report({"ERROR"}, angles_in_degrees(str(err)))
            return {"CANCELLED"}
        muted = sorted(f"{con!r} on {bone}" for bone, con in live
                       if arm.pose.bones[bone].constraints[con].mute)
        if muted:
            self.report({"INFO"}, f"muted the constraint(s) the chains were converted from, as a bake does "
                                  f"(Mute IK Constraints): {', '.join(muted)}")
        _report_warnings(self, report)
        if report["missed_frames"]:
            self.report({"WARNING"}, f"frame {frame}: " + "; ".join(missed_chains(report, 0)))
        return {"FINISHED"}


def clear_baked(
    scene: bpy.types.Scene, arm: bpy.types.Object, chains: list, start: int, end: int
) -> tuple[int, int, int]:
    """Remove what a bake of ``chains`` keyed on frames ``start..end``; returns (keys, F-curves, markers) removed.

    The chain bones' rotation keys (and scale keys of chains with Stretch) go, then the F-curves
    that left empty, and the armature's miss markers in the range.

    Raises:
        BridgeError: A chain whose bones cannot be found (nothing is removed then).
    """
    paths = set()
    for chain in chains:
        props = ["rotation_quaternion", "rotation_euler", "rotation_axis_angle", *(["scale"] * chain.use_stretch)]
        for pb in bridge.chain_bones(arm, chain):
            paths.update(compat.bone_data_path(pb.name, prop) for prop in props)
    keys = compat.clear_range(arm, start, end, paths)
    empty = [fc for fc in compat.iter_fcurves(arm) if fc.data_path in paths and not len(fc.keyframe_points)]
    for fc in empty:
        compat.remove_fcurve(arm, fc)
    return keys, len(empty), clear_miss_markers(scene, arm.name, start, end)


class ARTICULATE_OT_clear_bake(FrameRangeOptions, _ChainOperator, bpy.types.Operator):
    """Remove the rotation keys of the chains' bones inside the bake range, with the miss markers there"""

    bl_idname = "articulate.clear_bake"
    bl_label = "Clear Baked Range"
    bl_options = {"REGISTER", "UNDO"}

    def draw(self, context: bpy.types.Context) -> None:
        self.draw_range(self.layout, context)
        self.layout.prop(self, "only_selected")

    def execute(self, context: bpy.types.Context) -> set[str]:
        settings = context.scene.articulate
        only = self.only_selected or (self.use_scene_settings and settings.only_selected)
        try:
            arm = _armature(context, self.armature)
            frames = self.frames(context)
            keys, curves, markers = clear_baked(context.scene, arm, _chains(arm, only), frames[0], frames[-1])
        except (BakeFailed, bridge.BridgeError) as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        self.report({"INFO"}, f"Removed {keys} keys on frames {frames[0]}-{frames[-1]}, {curves} F-curves left "
                              f"empty and {markers} miss markers")
        return {"FINISHED"}


classes = (ARTICULATE_OT_bake, ARTICULATE_OT_solve_frame, ARTICULATE_OT_clear_bake)
