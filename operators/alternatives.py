# SPDX-License-Identifier: GPL-3.0-or-later
"""Alternative poses of the active chain: find distinct poses reaching its target, key the one picked."""

from __future__ import annotations

from typing import TYPE_CHECKING

import bpy
import numpy as np

from ..ik_core import ArticulateError
from ..ik_core.model import rotations as rot
from ..ik_core.solvers import make_solver, solver_class
from ..ik_core.take.tracking import to_base_frame
from . import bridge
from .baking import BakeFailed, PreparedChain, chain_rotations, initial_q, prepare_chains
from .polls import chain_poll, list_poll
from .wording import angles_in_degrees

if TYPE_CHECKING:  # imported by the operators that search (find_alternatives), not on registration
    from ..ik_core.solvers.alternatives import AlternativePoses

MAX_VALUES = 32  # size of ARTICULATE_PG_alternative.values


class AlternativesFailed(Exception):
    """Alternative poses cannot be found or used; nothing was changed. The message says why."""


def active_chain(context: bpy.types.Context):
    """The active object, an armature, and its active chain.

    Raises:
        AlternativesFailed: No armature active, no chain, or a robot rig solved on its model.
    """
    arm = context.object
    if arm is None or arm.type != "ARMATURE":
        raise AlternativesFailed("select an armature with a chain first")
    data = arm.articulate
    if not 0 <= data.active_chain < len(data.chains):
        raise AlternativesFailed(f"armature {arm.name!r} has no active chain; add one in the Articulate panel")
    return arm, data.chains[data.active_chain]


def _prepared(arm: bpy.types.Object, chain) -> PreparedChain:
    """The chain checked and modelled as a bake models it (its target, bones and limits).

    Raises:
        AlternativesFailed: What the bake would refuse (missing target or bones, ...), a robot
            rig solved on its stored model, or more variables than an alternative stores.
    """
    robot = False
    if "articulate_robot" in arm:  # the robot model (and the URDF reader under it) only for robot rigs
        from .robot_bake import is_model_rig

        try:
            robot = is_model_rig(arm, [chain])
        except bridge.BridgeError as err:  # a robot rig's damaged stored model
            raise AlternativesFailed(str(err)) from None
    if robot:
        raise AlternativesFailed(f"chain {chain.name!r} belongs to a robot rig solved on its model: use Find IK "
                                 "Branches in the Robot panel")
    try:
        p = prepare_chains(arm, [chain])[0]
    except BakeFailed as err:
        raise AlternativesFailed(str(err)) from None
    if p.skeleton.dof > MAX_VALUES:
        raise AlternativesFailed(f"chain {chain.name!r} has {p.skeleton.dof} joint variables; at most {MAX_VALUES} "
                                 "are supported")
    return p


def find_alternatives(
    context: bpy.types.Context, arm: bpy.types.Object, chain, count: int = 8, separation: float = 0.3,
    random_starts: int = 32,
) -> tuple[PreparedChain, AlternativePoses]:
    """Distinct poses of ``chain`` reaching its target on the current frame, from the pose it has.

    The target, base and pole are sampled on the current frame as a bake samples them; the
    core solves in the chain's base frame (DLS without restarts or null-space pull, so each
    start keeps its own way of reaching).

    Raises:
        AlternativesFailed: An invalid chain, or samples that are not finite.
    """
    from ..ik_core.solvers.alternatives import alternative_poses

    p = _prepared(arm, chain)
    scale = bridge.check_armature(arm)
    scene = context.scene
    s = bridge.sample_chains(scene, [scene.frame_current], [p.source])[0]
    if not (np.all(np.isfinite(s.base)) and np.all(np.isfinite(s.target))):
        raise AlternativesFailed(f"chain {chain.name!r}: its target or base has NaN or infinite values")
    local = to_base_frame(s.base, s.target)[0]
    target = local if chain.use_rotation else local[:3, 3]
    pole = None
    if s.pole is not None and np.all(np.isfinite(s.pole)):
        pole = (np.linalg.inv(s.base[0]) @ np.append(s.pole[0], 1.0))[:3]
    current = initial_q(p, rot.matrix_to_rotvec(bridge.pose_rotations(p.bones)))
    try:
        solver = make_solver("dls", p.skeleton, "tip", mode="full" if chain.use_rotation else "position",
                             tolerance=chain.tolerance / scale, max_iterations=max(chain.iterations, 100),
                             restarts=0, null_space_gain=0.0)
        found = alternative_poses(solver, target, current, pole, count=count, separation=separation,
                                  random_starts=random_starts)
    except ArticulateError as err:
        raise AlternativesFailed(f"chain {chain.name!r}: {err}") from None
    return p, found


def store_alternatives(arm: bpy.types.Object, chain_name: str, frame: int, found: AlternativePoses) -> None:
    """Replace the armature's alternative-pose list by ``found`` (values in the chain's ``q`` order)."""
    data = arm.articulate
    data.alternatives.clear()
    for k in range(len(found)):
        item = data.alternatives.add()
        q = found.q[k]
        item.name = f"Pose {k + 1}" + (" (current)" if found.distance[k] < 1e-4 else "")
        item.chain = chain_name
        item.frame = frame
        item.dof = len(q)
        item.values = [*q.tolist(), *[0.0] * (MAX_VALUES - len(q))]
        item.score = float(found.score[k])
        item.distance = float(found.distance[k])
        item.margin = float(found.margin[k])
    data.active_alternative = 0


def key_alternative(context: bpy.types.Context, arm: bpy.types.Object, index: int) -> list[str]:
    """Pose the chain's bones on alternative ``index`` and key their rotations on the current frame.

    Returns:
        Warnings for the user (a pose found on another frame, a pole the bake follows).

    Raises:
        AlternativesFailed: No such alternative, its chain gone or changed; nothing is keyed.
    """
    data = arm.articulate
    if not 0 <= index < len(data.alternatives):
        raise AlternativesFailed("choose a pose from the list first (Find Alternative Poses fills it)")
    item = data.alternatives[index]
    chain = next((c for c in data.chains if c.name == item.chain), None)
    if chain is None:
        raise AlternativesFailed(f"chain {item.chain!r} of this pose no longer exists; find the poses again")
    p = _prepared(arm, chain)
    if p.skeleton.dof != item.dof:
        raise AlternativesFailed(f"chain {chain.name!r} has changed since its poses were found ({item.dof} variables, "
                                 f"now {p.skeleton.dof}); find the poses again")
    q = np.array(item.values[: item.dof])
    bones, R = chain_rotations(p, q[None])
    scene = context.scene
    frame = scene.frame_current
    bridge.write_bone_rotations(arm, bones, np.array([float(frame)]), R, replace=(frame, frame))
    scene.frame_set(frame)
    warnings = []
    if frame != item.frame:
        warnings.append(f"the pose was found for frame {item.frame} and keyed on frame {frame}: if the target moved, "
                        "it may miss")
    if p.source.pole is not None and "pole" in solver_class(p.solver).call_options:
        warnings.append(f"chain {chain.name!r} has a pole: a bake bends it toward the pole ({p.solver}), which may "
                        "leave this pose")
    return warnings


class ARTICULATE_OT_chain_alternatives(bpy.types.Operator):
    """Find distinct poses of the active chain reaching its target on this frame, by distance and limit margin"""

    bl_idname = "articulate.chain_alternatives"
    bl_label = "Find Alternative Poses"
    bl_options = {"REGISTER", "UNDO"}

    count: bpy.props.IntProperty(name="Poses", default=8, min=1, max=32, description="Most poses listed")
    separation: bpy.props.FloatProperty(
        name="Separation", default=0.3, min=0.01, max=np.pi, subtype="ANGLE",
        description="Poses whose joints all turn less than this from one another count as one",
    )
    random_starts: bpy.props.IntProperty(
        name="Random Starts", default=32, min=0, max=1024, description="Samples of the limit ranges tried"
    )

    @classmethod
    def poll(cls, context):
        return chain_poll(cls, context, editable=True)

    def execute(self, context):
        try:
            arm, chain = active_chain(context)
            _p, found = find_alternatives(context, arm, chain, self.count, self.separation, self.random_starts)
        except AlternativesFailed as err:
            self.report({"ERROR"}, angles_in_degrees(str(err)))
            return {"CANCELLED"}
        if not len(found):
            self.report({"ERROR"}, f"chain {chain.name!r}: no pose reaches its target on this frame: "
                                   + angles_in_degrees(found.reason))
            return {"CANCELLED"}
        store_alternatives(arm, chain.name, context.scene.frame_current, found)
        self.report({"INFO"}, f"{len(found)} alternative pose(s) for chain {chain.name!r}, best first")
        return {"FINISHED"}


class ARTICULATE_OT_chain_use_alternative(bpy.types.Operator):
    """Pose the chain on the chosen alternative and key it on this frame, so a bake from here keeps it"""

    bl_idname = "articulate.chain_use_alternative"
    bl_label = "Use Pose"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return list_poll(cls, context, "alternatives", "find alternative poses", editable=True)

    def execute(self, context):
        arm = context.object
        try:
            warnings = key_alternative(context, arm, arm.articulate.active_alternative)
        except AlternativesFailed as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        item = arm.articulate.alternatives[arm.articulate.active_alternative]
        self.report({"INFO"}, f"{item.name} of chain {item.chain!r} keyed on frame {context.scene.frame_current}; "
                              "a bake from here keeps it")
        for warning in warnings:  # after the success line, so the status bar shows the warning
            self.report({"WARNING"}, warning)
        return {"FINISHED"}


classes = (ARTICULATE_OT_chain_alternatives, ARTICULATE_OT_chain_use_alternative)
