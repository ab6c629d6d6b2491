# SPDX-License-Identifier: GPL-3.0-or-later
"""A small example scene (a three-bone arm following a target), robot previews, and the demos' render helpers."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import bpy
import numpy as np

from ..ik_core.robots import presets
from . import bridge, compat
from .bridge.build import sphere_mesh_data
from .bridge.meshes import colour_material

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


def dress_bones(arm: bpy.types.Object, skip: tuple[str, ...] = ()) -> None:
    """A cylinder on every bone (armatures do not render), parented to the bone."""
    bone_mat = colour_material("Bone", (0.8, 0.55, 0.3, 1.0))
    for bone in arm.data.bones:
        if any(bone.name.startswith(s) for s in skip):
            continue
        mesh = bpy.data.meshes.new(f"Link.{bone.name}")
        mesh.from_pydata(*_cylinder(min(0.035, bone.length * 0.12), bone.length * 0.92))
        mesh.materials.append(bone_mat)
        link = bpy.data.objects.new(f"Link.{bone.name}", mesh)
        arm.users_collection[0].objects.link(link)
        link.parent, link.parent_type, link.parent_bone = arm, "BONE", bone.name
        # A bone-parented child sits at the bone's tail with Y along the bone.
        link.location = (0.0, -bone.length, 0.0)


def _cylinder(radius: float, length: float, sides: int = 16) -> tuple[list, list, list]:
    """Vertices and faces of a closed cylinder along +Y from y=0 to y=length."""
    a = np.linspace(0.0, 2.0 * math.pi, sides, endpoint=False)
    ring = np.column_stack([radius * np.cos(a), np.zeros(sides), radius * np.sin(a)])
    verts = np.vstack([ring, ring + (0.0, length, 0.0)]).tolist()
    sides_f = [(i, (i + 1) % sides, sides + (i + 1) % sides, sides + i) for i in range(sides)]
    caps = [tuple(range(sides))[::-1], tuple(range(sides, 2 * sides))]
    return verts, [], sides_f + caps


def aim_camera(cam: bpy.types.Object, look_at, location) -> None:
    """Put ``cam`` at ``location`` looking at ``look_at`` (world, metres), level with the horizon."""
    cam.location = location
    d = np.array(look_at, dtype=float) - np.array(location, dtype=float)
    cam.rotation_euler = (math.atan2(math.hypot(d[0], d[1]), -d[2]), 0.0, math.atan2(d[1], d[0]) - math.pi / 2)


def add_camera_and_light(scene, look_at=(0.5, 0.0, 1.1), location=(2.6, -2.2, 1.9)) -> None:
    """A camera aimed at ``look_at``, a sun, a floor and a dark world."""
    bpy.ops.mesh.primitive_plane_add(size=6.0, location=(look_at[0], look_at[1], 0.0))
    cam = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    scene.collection.objects.link(cam)
    aim_camera(cam, look_at, location)
    scene.camera = cam
    light = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", "SUN"))
    light.data.energy = 3.0
    light.rotation_euler = (0.6, 0.2, 0.8)
    scene.collection.objects.link(light)
    world = bpy.data.worlds.new("World")
    world.color = (0.05, 0.05, 0.06)
    scene.world = world


def add_target_marker(scene, target: bpy.types.Object, path: np.ndarray) -> None:
    """A red ball riding on ``target`` and its (frames, 3) path drawn as a thin blue tube."""
    ball_mesh = bpy.data.meshes.new(f"{target.name}.Ball")
    ball_mesh.from_pydata(*sphere_mesh_data(0.03))
    ball_mesh.materials.append(colour_material("Target", (0.9, 0.15, 0.15, 1.0)))
    ball = bpy.data.objects.new(f"{target.name}.Ball", ball_mesh)
    scene.collection.objects.link(ball)
    ball.parent = target
    curve = bpy.data.curves.new(f"{target.name}.Path", "CURVE")
    curve.dimensions, curve.bevel_depth = "3D", 0.004
    spline = curve.splines.new("POLY")
    spline.points.add(len(path) - 1)
    spline.points.foreach_set("co", np.hstack([path, np.ones((len(path), 1))]).astype(np.float32).ravel())
    path_obj = bpy.data.objects.new(f"{target.name}.Path", curve)
    path_obj.data.materials.append(colour_material("Path", (0.2, 0.4, 0.9, 1.0)))
    scene.collection.objects.link(path_obj)


def _add_render_dressing(scene, arm, target, path) -> None:
    """Meshes on the bones, the target and its path, a camera and a light."""
    dress_bones(arm)
    add_target_marker(scene, target, path)
    add_camera_and_light(scene)


FILMSTRIP_TILE = (360, 420)  # width, height of one frame of the filmstrip [px]


def filmstrip_frames(frames: int, count: int = 4) -> list[int]:
    """``count`` frames of 1..``frames``, each in the middle of an equal part of the take.

    For the bundled example these are the feet at their highest, each foot twice, and the hands
    a quarter of their circle apart.
    """
    return [1 + round((frames - 1) * (2 * k + 1) / (2 * count)) for k in range(count)]


def frame_caption(report: dict, frame: int, per_line: int = 2) -> str:
    """'frame N' and each chain's residual on that frame (distance of its tip to its target), from a bake report."""
    at = report["frames"].index(frame)
    parts = []
    for chain in report["chains"]:
        error = chain["position_error_m"][at]
        size = f"{error * 1e6:.2g} \u00b5m" if error < 1e-3 else f"{error * 1e3:.3g} mm"
        text = f"{chain['chain']} {size}"
        parts.append(text if chain["converged"][at] else f"{text} MISSED")
    lines = ["   ".join(parts[i:i + per_line]) for i in range(0, len(parts), per_line)]
    return "\n".join([f"frame {frame}", *lines])


def _stamp(scene, note: str | None) -> None:
    """Burn ``note`` into the render's top-left corner (Blender's stamp), or no stamp at all when None."""
    render = scene.render
    for prop in render.bl_rna.properties:
        if prop.identifier.startswith("use_stamp_"):
            setattr(render, prop.identifier, False)
    render.use_stamp = note is not None
    if note is not None:
        render.use_stamp_note, render.stamp_note_text = True, note
        render.stamp_font_size = 13


def render_picture(filepath: str, frame: int, samples: int = 16, size: tuple[int, int] = (640, 480),
                   note: str | None = None) -> None:
    """Render one frame with Cycles on the CPU (works headless) to a PNG, ``note`` burnt in when given."""
    scene = bpy.context.scene
    scene.frame_set(frame)
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = samples
    scene.render.resolution_x, scene.render.resolution_y = size
    scene.render.resolution_percentage = 100
    scene.render.image_settings.file_format = "PNG"
    scene.render.filepath = str(filepath)
    _stamp(scene, note)
    bpy.ops.render.render(write_still=True)


def render_filmstrip(filepath: str, frames: list[int], captions: list[str], samples: int = 0,
                     size: tuple[int, int] = FILMSTRIP_TILE, gap: int = 4) -> None:
    """Render ``frames`` side by side into one PNG, each with its caption burnt in.

    Args:
        filepath: The PNG to write.
        frames: Scene frames, left to right.
        captions: One text per frame (lines separated by newlines), e.g. :func:`frame_caption`.
        samples: Cycles samples per frame; 0 renders with Workbench (about a second a frame).
        size: (width, height) of one frame [px].
        gap: Dark columns between frames [px].
    """
    scene = bpy.context.scene
    width, height = size
    tiles = []
    with tempfile.TemporaryDirectory(prefix="articulate-filmstrip-") as folder:
        for frame, caption in zip(frames, captions, strict=True):
            tile = Path(folder) / f"frame_{frame}.png"
            if samples > 0:
                render_picture(str(tile), frame, samples=samples, size=size, note=caption)
            else:
                scene.frame_set(frame)
                workbench_render(str(tile), size, note=caption)
            image = bpy.data.images.load(str(tile))
            pixels = np.empty(width * height * 4, dtype=np.float32)
            image.pixels.foreach_get(pixels)
            bpy.data.images.remove(image)
            tiles.append(pixels.reshape(height, width, 4))
    spacer = np.zeros((height, gap, 4), dtype=np.float32)
    spacer[..., 3] = 1.0
    strip = np.hstack([part for tile in tiles for part in (tile, spacer)][:-1])
    image = bpy.data.images.new("Filmstrip", strip.shape[1], height, alpha=False)
    image.pixels.foreach_set(strip.ravel())
    image.filepath_raw, image.file_format = str(filepath), "PNG"
    scene.render.image_settings.file_format, scene.render.image_settings.color_mode = "PNG", "RGB"
    image.save_render(str(filepath), scene=scene)
    bpy.data.images.remove(image)


# Preset, (x, y) of its base [m].
ROBOT_PREVIEWS = (("ur5", (0.0, 0.0)), ("panda", (0.0, 0.9)), ("lbr_iiwa_14_r820", (0.0, 1.8)))


def build_robot_previews(robots=ROBOT_PREVIEWS) -> list[str]:
    """Replace the current file with robot presets side by side, each in its own collection; returns the rigs."""
    bpy.ops.wm.read_homefile(use_empty=True)
    rigs = []
    for preset, (x, y) in robots:
        if "FINISHED" not in bpy.ops.articulate.robot_add(preset=preset):
            raise RuntimeError(f"could not add robot preset {preset!r}")
        arm = bpy.context.object
        for obj in arm.users_collection[0].objects:
            if obj.parent is None:  # the armature and its target; link meshes follow their bones
                obj.location = (obj.location[0] + x, obj.location[1] + y, obj.location[2])
        rigs.append(arm.name)
    return rigs


def robot_label(preset: str) -> str:
    """Two lines saying what a preset is: its maker and model, and how many joints move."""
    info = presets.preset_info(preset)
    return f"{info.get('display_name', preset)}\n{len(info.get('home', {}))} joints"


def label_robots(rigs: list[str], robots=ROBOT_PREVIEWS, camera_from=(2.7, -0.6, 1.3), size: float = 0.045) -> None:
    """A white text above each robot of :func:`build_robot_previews` saying what it is, turned to the camera."""
    scene = bpy.context.scene
    material = colour_material("Label", (0.95, 0.95, 0.95, 1.0))
    bpy.context.view_layer.update()  # the rigs were moved apart: world matrices first
    for rig, (preset, _base) in zip(rigs, robots, strict=True):
        arm = bpy.data.objects[rig]
        corners = np.array([np.array(obj.matrix_world) @ np.array((*c, 1.0)) for obj in arm.users_collection[0].objects
                            if obj.type == "MESH" for c in obj.bound_box]).reshape(-1, 4)[:, :3]
        top = corners[:, 2].max() if len(corners) else 1.0
        base = np.array(arm.matrix_world.translation)
        text = bpy.data.curves.new(f"Label.{rig}", "FONT")
        text.body, text.size, text.align_x = robot_label(preset), size, "CENTER"
        text.materials.append(material)
        label = bpy.data.objects.new(f"Label.{rig}", text)
        scene.collection.objects.link(label)
        at = np.array((base[0], base[1], top + 0.12))
        # Turned as the camera is (text faces its +Z, a camera looks down its -Z): read face on.
        aim_camera(label, look_at=2.0 * at - np.asarray(camera_from), location=tuple(at))


def render_workbench(filepath: str, look_at=(0.05, 0.9, 0.45), location=(2.7, -0.6, 1.3),
                     size: tuple[int, int] = (800, 500)) -> None:
    """Render the current scene with Workbench (fast, headless) in the materials' colours to a PNG."""
    scene = bpy.context.scene
    cam = bpy.data.objects.new("PreviewCamera", bpy.data.cameras.new("PreviewCamera"))
    scene.collection.objects.link(cam)
    aim_camera(cam, look_at, location)
    cam.data.lens = 40
    scene.camera = cam
    bpy.ops.mesh.primitive_plane_add(size=4.0, location=(look_at[0], look_at[1], 0.0))
    workbench_render(filepath, size)


def workbench_render(filepath: str, size: tuple[int, int], note: str | None = None) -> None:
    """Render the scene's camera with Workbench (material colours, studio light, shadows) to an 8-bit RGB PNG.

    The same scene gives the same file: no dither noise (which would also double the size) and no
    stamped date, render time or file name; only ``note``, when given, is burnt into the corner.
    """
    scene = bpy.context.scene
    scene.render.engine = "BLENDER_WORKBENCH"
    shading = scene.display.shading
    shading.light, shading.color_type = "STUDIO", "MATERIAL"
    shading.show_shadows = True
    scene.render.dither_intensity = 0.0
    _stamp(scene, note)
    scene.render.resolution_x, scene.render.resolution_y = size
    scene.render.resolution_percentage = 100
    settings = scene.render.image_settings
    settings.file_format, settings.color_mode, settings.color_depth, settings.compression = "PNG", "RGB", "8", 100
    scene.render.filepath = str(filepath)
    bpy.ops.render.render(write_still=True)
