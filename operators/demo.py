# SPDX-License-Identifier: GPL-3.0-or-later
"""The bundled example scene baked by README command (a): an arm following a moving target."""

from __future__ import annotations

import math

import bpy
import numpy as np

from . import bridge, compat

ARM_BONES = (("Shoulder", 0.45), ("Elbow", 0.40), ("Wrist", 0.15))
SHOULDER = np.array([0.0, 0.0, 1.2])


def target_path(frames: int) -> np.ndarray:
    """(frames, 3) a figure-eight in front of the shoulder, inside the arm's reach [m]."""
    t = np.linspace(0.0, 2.0 * math.pi, frames)
    return SHOULDER + np.column_stack([0.55 + 0.12 * np.sin(2 * t), 0.35 * np.sin(t), 0.25 * np.cos(t) - 0.05])


def build_demo_scene(frames: int = 120) -> dict:
    """Replace the current file with the example scene; returns what the bake needs."""
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    lengths = np.array([length for _, length in ARM_BONES])
    ends = SHOULDER + np.outer(np.cumsum(lengths), (1.0, 0.0, 0.0))
    heads = np.vstack([SHOULDER, ends[:-1]])
    arm = bridge.create_armature("Arm", heads, ends, [-1, 0, 1], [name for name, _ in ARM_BONES])
    # The elbow bends like an elbow: a Blender IK limit the bake must respect is read in later issues.
    target = bpy.data.objects.new("Target", None)
    target.empty_display_type = "SPHERE"
    target.empty_display_size = 0.05
    scene.collection.objects.link(target)
    path = target_path(frames)
    channels = [compat.Channel("location", i, "Object Transforms") for i in range(3)]
    compat.write_channels(target, channels, np.arange(1.0, frames + 1.0), path)
    _add_render_dressing(scene, arm, target, path)
    chain = arm.articulate.chains.add()
    chain.name, chain.tip_bone, chain.chain_length, chain.target = "Arm", ARM_BONES[-1][0], len(ARM_BONES), target
    bpy.context.view_layer.objects.active = arm
    arm.select_set(True)
    return {"armature": arm.name, "tip_bone": ARM_BONES[-1][0], "chain_length": len(ARM_BONES),
            "target": target.name, "picture_frame": frames // 3}


def _material(name: str, rgb: tuple[float, float, float]) -> bpy.types.Material:
    mat = bpy.data.materials.new(name)
    mat.diffuse_color = (*rgb, 1.0)
    if bpy.app.version < (5, 0, 0):  # 5.0 materials always use nodes (the flag is deprecated)
        mat.use_nodes = True
    bsdf = mat.node_tree.nodes.get("Principled BSDF")
    if bsdf is not None:
        bsdf.inputs["Base Color"].default_value = (*rgb, 1.0)
    return mat


def _add_render_dressing(scene, arm, target, path) -> None:
    """Meshes on the bones, a ball on the target, the path as a tube, a camera and a light."""
    bone_mat = _material("Bone", (0.8, 0.55, 0.3))
    for name, length in ARM_BONES:
        bpy.ops.mesh.primitive_cylinder_add(radius=0.035, depth=length * 0.92, vertices=24)
        link = bpy.context.object
        link.name = f"Link.{name}"
        link.data.materials.append(bone_mat)
        link.parent, link.parent_type, link.parent_bone = arm, "BONE", name
        # A bone-parented child sits at the bone's tail with Y along the bone.
        link.location = (0.0, -length / 2, 0.0)
        link.rotation_euler = (math.pi / 2, 0.0, 0.0)
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.045)
    ball = bpy.context.object
    ball.name = "Target.Ball"
    ball.data.materials.append(_material("Target", (0.9, 0.15, 0.15)))
    ball.parent = target
    curve = bpy.data.curves.new("TargetPath", "CURVE")
    curve.dimensions, curve.bevel_depth = "3D", 0.006
    spline = curve.splines.new("POLY")
    spline.points.add(len(path) - 1)
    spline.points.foreach_set("co", np.hstack([path, np.ones((len(path), 1))]).astype(np.float32).ravel())
    path_obj = bpy.data.objects.new("TargetPath", curve)
    path_obj.data.materials.append(_material("Path", (0.2, 0.4, 0.9)))
    scene.collection.objects.link(path_obj)
    bpy.ops.mesh.primitive_plane_add(size=4.0, location=(0.5, 0.0, 0.0))
    cam_data = bpy.data.cameras.new("Camera")
    cam = bpy.data.objects.new("Camera", cam_data)
    scene.collection.objects.link(cam)
    cam.location = (2.6, -2.2, 1.9)
    direction = np.array([0.5, 0.0, 1.1]) - np.array(cam.location)
    cam.rotation_euler = (math.atan2(math.hypot(direction[0], direction[1]), -direction[2]), 0.0,
                          math.atan2(direction[1], direction[0]) - math.pi / 2)
    scene.camera = cam
    light = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", "SUN"))
    light.data.energy = 3.0
    light.rotation_euler = (0.6, 0.2, 0.8)
    scene.collection.objects.link(light)
    world = bpy.data.worlds.new("World")
    world.color = (0.05, 0.05, 0.06)
    scene.world = world


def render_picture(filepath: str, frame: int, samples: int = 16) -> None:
    """Render one frame with Cycles on the CPU (works headless) to a PNG."""
    scene = bpy.context.scene
    scene.frame_set(frame)
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = samples
    scene.render.resolution_x, scene.render.resolution_y = 640, 480
    scene.render.image_settings.file_format = "PNG"
    scene.render.filepath = filepath
    bpy.ops.render.render(write_still=True)
