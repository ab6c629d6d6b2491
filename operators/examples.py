# SPDX-License-Identifier: GPL-3.0-or-later
"""The bundled example behind README command (a): Rigify's human metarig with four limb chains."""

from __future__ import annotations

import math

import addon_utils
import bpy
import numpy as np

from . import compat
from .demo import add_camera_and_light, add_target_marker, dress_bones

LIMB_CHAINS = (
    # name, tip bone, pole offset from the middle joint [m] (the character faces -Y)
    ("arm.L", "forearm.L", (0.1, 0.35, 0.0)),
    ("arm.R", "forearm.R", (-0.1, 0.35, 0.0)),
    ("leg.L", "shin.L", (0.0, -0.5, 0.0)),
    ("leg.R", "shin.R", (0.0, -0.5, 0.0)),
)
HINGE_RANGE = (0.0, math.radians(150.0))  # elbows and knees flex one way only


def _limb_targets(tail_rest: np.ndarray, frames: int, side: float, is_leg: bool) -> np.ndarray:
    """(frames, 3) world positions for one wrist or ankle: reaching circles or marching steps."""
    t = np.linspace(0.0, 2.0 * math.pi, frames)
    if is_leg:
        phase = t * 2 + (0.0 if side > 0 else math.pi)
        lift = np.clip(np.sin(phase), 0.0, None)
        return tail_rest + np.column_stack([np.zeros_like(t), -0.12 * lift, 0.28 * lift])
    phase = t + (0.0 if side > 0 else math.pi / 2)
    centre = tail_rest + np.array([-0.12 * side, -0.25, 0.2])
    return centre + 0.12 * np.column_stack([np.cos(phase) * side, np.zeros_like(t), np.sin(phase)])


def build_metarig_scene(frames: int = 120, solver: str = "dls") -> dict:
    """Replace the current file with the example: a metarig whose limbs follow animated targets."""
    addon_utils.enable("rigify", default_set=True)
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    bpy.ops.object.armature_basic_human_metarig_add()
    arm = bpy.context.object
    arm.name = "Metarig"
    frame_numbers = np.arange(1.0, frames + 1.0)
    for name, tip, pole_offset in LIMB_CHAINS:
        is_leg = name.startswith("leg")
        side = 1.0 if name.endswith(".L") else -1.0
        middle = arm.pose.bones[tip]
        middle.lock_ik_y = middle.lock_ik_z = True
        middle.use_ik_limit_x = True
        middle.ik_min_x, middle.ik_max_x = HINGE_RANGE
        upper = middle.parent
        upper.use_ik_limit_y = True  # no corkscrew twist of the upper arm or thigh
        upper.ik_min_y, upper.ik_max_y = math.radians(-40), math.radians(40)
        target = bpy.data.objects.new(f"target.{name}", None)
        target.empty_display_type, target.empty_display_size = "SPHERE", 0.04
        scene.collection.objects.link(target)
        path = _limb_targets(np.array(middle.bone.tail_local), frames, side, is_leg)
        compat.write_channels(target, [compat.Channel("location", i, "Object Transforms") for i in range(3)],
                              frame_numbers, path)
        add_target_marker(scene, target, path)
        pole = bpy.data.objects.new(f"pole.{name}", None)
        pole.empty_display_type, pole.empty_display_size = "CONE", 0.03
        pole.location = tuple(np.array(middle.bone.head_local) + pole_offset)
        scene.collection.objects.link(pole)
        chain = arm.articulate.chains.add()
        chain.name, chain.tip_bone, chain.chain_length = name, tip, 2
        chain.target, chain.pole, chain.solver = target, pole, solver
    dress_bones(arm, skip=("heel", "breast", "pelvis"))
    add_camera_and_light(scene, look_at=(0.0, 0.0, 0.95), location=(1.9, -2.9, 1.6))
    bpy.context.view_layer.objects.active = arm
    arm.select_set(True)
    return {"armature": arm.name, "picture_frame": frames // 4}
