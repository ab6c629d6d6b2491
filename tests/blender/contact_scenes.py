# SPDX-License-Identifier: GPL-3.0-or-later
"""A walking leg for contact tests: a two-bone leg under moving hips, its ankle target stepping with jitter."""

import bpy
import numpy as np

FPS = 30
CYCLE, STANCE = 30, 18  # frames per step, of which the foot stands on the ground
REST = 0.08  # the ankle's height over the sole [m]
HIP = 0.95


def foot_path(frames: int, jitter: float = 0.003, seed: int = 3, dips: tuple[int, ...] = (5, 40)) -> np.ndarray:
    """(frames, 3) ankle target: stands (with capture jitter) for STANCE frames, swings 0.5 m forward; frame 1 first.

    ``dips``: frames (1-based) where the standing ankle sinks 2 cm below its rest height.
    """
    rng = np.random.default_rng(seed)
    out = np.zeros((frames, 3))
    for i in range(frames):
        k, u = divmod(i, CYCLE)
        if u < STANCE:
            x, z = 0.5 * k + 0.1, REST
        else:
            s = (u - STANCE + 1) / (CYCLE - STANCE + 1)
            s = s * s * (3 - 2 * s)
            x, z = 0.5 * k + 0.1 + 0.5 * s, REST + 0.12 * np.sin(np.pi * s)
        out[i] = (x, 0.1, z)
        if u < STANCE:
            out[i, :2] += rng.normal(0.0, jitter, 2)
    for f in dips:
        if f <= frames and (f - 1) % CYCLE < STANCE:
            out[f - 1, 2] = REST - 0.02
    return out


# The foot bone of :func:`build_leg_scene` with ``foot``: from the ankle forward and down to the ball.
BALL = (0.14, 0.0, -0.06)


def build_leg_scene(addon_module, frames: int = 60, hips_keys: bool = True, foot: bool = False) -> bpy.types.Object:
    """A fresh file: armature "Leg" (Hips > Thigh > Shin, ankle at the shin's tail; with ``foot`` a bone "Sole"
    under the Shin from the ankle to the ball of the foot, :data:`BALL`) walking +x at 0.5 m/s (its Hips bone
    keyed), empty "Foot" on :func:`foot_path`, and chain "Foot" (Shin, two bones, to Foot)."""
    bridge = addon_module("operators.bridge")
    compat = addon_module("operators.compat")
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = FPS, 1.0
    scene.frame_start, scene.frame_end = 1, frames
    heads = np.array([[0.0, 0.1, HIP], [0.0, 0.1, HIP], [0.03, 0.1, HIP / 2]])
    tails = np.array([[0.0, 0.1, HIP + 0.15], [0.03, 0.1, HIP / 2], [0.0, 0.1, 0.0]])
    names, parents = ["Hips", "Thigh", "Shin"], [-1, 0, 1]
    if foot:
        heads, tails = np.vstack([heads, tails[2]]), np.vstack([tails, tails[2] + BALL])
        names, parents = names + ["Sole"], parents + [2]
    arm = bridge.create_armature("Leg", heads, tails, parents, names)
    if hips_keys:  # the hips move forward: the Hips bone points up (+z), so world +x is its local +x
        t = np.arange(frames, dtype=float)
        channels = [compat.Channel(compat.bone_data_path("Hips", "location"), i, "Hips") for i in range(3)]
        compat.write_channels(arm, channels, t + 1.0, np.column_stack([0.5 * t / FPS, 0 * t, 0 * t]))
    foot = bpy.data.objects.new("Foot", None)
    scene.collection.objects.link(foot)
    channels = [compat.Channel("location", i, "Object Transforms") for i in range(3)]
    compat.write_channels(foot, channels, np.arange(1.0, frames + 1.0), foot_path(frames))
    chain = arm.articulate.chains.add()
    chain.name, chain.tip_bone, chain.chain_length, chain.target = "Foot", "Shin", 2, foot
    bpy.context.view_layer.objects.active = arm
    arm.select_set(True)
    return arm
