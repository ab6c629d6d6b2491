# SPDX-License-Identifier: GPL-3.0-or-later
"""Aim scenes (issue 15 item 4): a spine, neck and head looking at a moving target, and how playback shows them.

The rig: three bones pointing up (spine 0.4 m, neck 0.15 m, head 0.2 m), each limited by Blender
IK limits to a swing cone about X and Z (:data:`SWING_DEG`) and a twist about its Y, which for
these bones is the yaw (:data:`TWIST_DEG`). The face looks along world -Y. Used by
``tests/blender/test_aim_chain.py`` and ``bench/bench_aim.py``; the add-on's modules are reached
from the enabled add-on module passed in (its name differs between the tests and the bench).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Iterable, Mapping, Sequence
from types import ModuleType

import bpy
import numpy as np

SWING_DEG = {"Spine": 20.0, "Neck": 25.0, "Head": 35.0}  # swing cones (about X and Z)
TWIST_DEG = {"Spine": 20.0, "Neck": 30.0, "Head": 45.0}  # twist about each bone's Y: the bones point up, so yaw
EYE = np.array([0.0, 0.0, 1.65])  # where the target path is centred [m]
FACE = (0.0, -1.0, 0.0)  # the way the face looks at rest (world)


def axes(addon: ModuleType) -> Mapping[str, tuple[float, float, float]]:
    """The add-on's aim and up axes by key ("X", "NEG_X", ...): unit vectors in the bone's frame."""
    return importlib.import_module(f"{addon.__name__}.operators.aiming").AXES


def target_path(frames: int, *, pitch_phase: float = 0.0, behind: Iterable[int] = ()) -> np.ndarray:
    """(frames, 3) target positions [m]: 2 m from :data:`EYE` in front of the face, sweeping yaw +-50 degrees
    once and pitch +-25 degrees twice (the pitch's sine starting at ``pitch_phase`` [rad]); on the 1-based
    frames ``behind``, behind the head instead (beyond the limits)."""
    t = np.linspace(0.0, 1.0, frames)
    yaw = np.radians(50.0) * np.sin(2 * np.pi * t)
    pitch = np.radians(25.0) * np.sin(4 * np.pi * t + pitch_phase)
    path = EYE + 2.0 * np.stack([np.sin(yaw) * np.cos(pitch), -np.cos(yaw) * np.cos(pitch), np.sin(pitch)], axis=1)
    for f in behind:
        path[f - 1] = EYE + np.array([0.3, 2.0, 0.2])
    return path


def front_axis(addon: ModuleType, arm: bpy.types.Object, bone: str = "Head") -> str:
    """The key of :func:`axes` along which ``bone`` points to :data:`FACE` at rest: the face's aim axis."""
    R = np.array(arm.data.bones[bone].matrix_local)[:3, :3]
    return next(k for k, v in axes(addon).items() if np.allclose(R @ np.array(v), FACE, atol=1e-6))


def build_look_rig(addon: ModuleType, path: np.ndarray) -> tuple[bpy.types.Object, bpy.types.Object, str]:
    """Into the current scene: the armature "Rig" (active) and the empty "Look" keyed along ``path`` (F, 3) on
    frames 1..F; returns (armature, target, the face's axis key)."""
    bridge = importlib.import_module(f"{addon.__name__}.operators.bridge")
    compat = importlib.import_module(f"{addon.__name__}.operators.compat")
    heads = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 1.4], [0.0, 0.0, 1.55]])
    tails = np.array([[0.0, 0.0, 1.4], [0.0, 0.0, 1.55], [0.0, 0.0, 1.75]])
    arm = bridge.create_armature("Rig", heads, tails, [-1, 0, 1], list(SWING_DEG))
    for name, deg in SWING_DEG.items():
        pb = arm.pose.bones[name]
        for axis in "xyz":
            limit = math.radians(TWIST_DEG[name] if axis == "y" else deg)
            setattr(pb, f"use_ik_limit_{axis}", True)
            setattr(pb, f"ik_min_{axis}", -limit)
            setattr(pb, f"ik_max_{axis}", limit)
    target = bpy.data.objects.new("Look", None)
    bpy.context.scene.collection.objects.link(target)
    compat.write_channels(target, [compat.Channel("location", i, "Object Transforms") for i in range(3)],
                          np.arange(1.0, len(path) + 1.0), path)
    bpy.context.view_layer.objects.active = arm
    return arm, target, front_axis(addon, arm)


def playback(arm: bpy.types.Object, target: bpy.types.Object, aim_local: Sequence[float], frames: int,
             bones: Sequence[str] = tuple(SWING_DEG)) -> dict[str, np.ndarray]:
    """Frames 1..frames as playback shows them: the head's ``origin`` (F, 3) [m], ``aim`` (its ``aim_local`` axis)
    and ``up`` (its Y) (F, 3) in world, the ``target`` (F, 3) [m], and each of ``bones``' ``basis`` (F, B, 3, 3)."""
    scene = bpy.context.scene
    aim_local = np.array(aim_local, dtype=float)
    out = {"origin": [], "aim": [], "up": [], "target": [], "basis": []}
    for f in range(1, frames + 1):
        scene.frame_set(f)
        M = np.array(arm.matrix_world @ arm.pose.bones["Head"].matrix)
        out["origin"].append(M[:3, 3])
        out["aim"].append(M[:3, :3] @ aim_local)
        out["up"].append(M[:3, 1])
        out["target"].append(np.array(target.matrix_world.translation))
        out["basis"].append([np.array(arm.pose.bones[n].matrix_basis)[:3, :3] for n in bones])
    return {k: np.array(v) for k, v in out.items()}


def angle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Angle between the vectors ``a`` and ``b`` (..., 3), broadcast [rad]."""
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    return np.arctan2(np.linalg.norm(np.cross(a, b), axis=-1), np.sum(a * b, axis=-1))


def roll_error(played: Mapping[str, np.ndarray]) -> np.ndarray:
    """(F,) angle between the head's up axis and world +Z, both seen across the aim direction [rad].

    ``played`` holds ``aim`` and ``up`` (F, 3), as :func:`playback` returns them.
    """
    d = played["aim"] / np.linalg.norm(played["aim"], axis=-1, keepdims=True)
    want = np.array([0.0, 0.0, 1.0]) - d[:, 2:3] * d
    return angle(played["up"], want)
