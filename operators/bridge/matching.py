# SPDX-License-Identifier: GPL-3.0-or-later
"""Controls placed by evaluation: move a control until the bone it drives lands where it should.

A control rig drives its result bones through constraints and mechanism bones (Rigify's IK hand
control moves ``ORG-hand`` through an IK chain; a plain IK target moves the chain's end). Rather
than modelling those, the control is corrected by what the rig does: on each frame, evaluate,
measure where the driven bone is, move the control by the difference, and evaluate again, until
the driven bone is on its goal. Swivel controls (poles) are turned about their chain's axis
until the chain's middle lies in the goal's bend plane.

Also here: properties forced to a value while sampling (an IK/FK switch held at IK even where it
is keyed).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import bpy
import numpy as np
from mathutils import Matrix

from ...ik_core.model import rotations
from .. import compat
from .rig import matrix_to_array

ROUNDS = 8  # evaluations per frame at most
POSITION_TOLERANCE = 1e-6  # [m] a driven bone this close to its goal is placed
ROTATION_TOLERANCE = 1e-5  # [rad]


@contextlib.contextmanager
def forced(owner_paths: Sequence[tuple[bpy.types.ID, str, float]]) -> Iterator[None]:
    """Hold properties at values for the duration (their F-curves and drivers muted), then restore all.

    Args:
        owner_paths: (ID, RNA path from it, value), e.g. (rig, 'pose.bones["upper_arm_parent.L"]["IK_FK"]', 0.0)
            or (rig, 'pose.bones["Hand"].constraints["IK"].influence', 1.0).
    """
    saved = []
    try:
        for id_data, path, value in owner_paths:
            curves = [fc for fc in compat.iter_fcurves(id_data) if fc.data_path == path]
            adt = id_data.animation_data
            curves += [fc for fc in (adt.drivers if adt is not None else []) if fc.data_path == path]
            for fc in curves:
                saved.append((fc, "mute", fc.mute))
                compat.will_change(fc)
                fc.mute = True
            owner, prop = _resolve(id_data, path)
            saved.append((owner, prop, _get(owner, prop)))
            _set(owner, prop, value)
            _tag(id_data, curves)
        yield
    finally:
        for owner, prop, was in reversed(saved):
            _set(owner, prop, was)
        unmuted = [owner for owner, prop, _was in saved if prop == "mute"]
        for id_data, _path, _value in owner_paths:
            _tag(id_data, unmuted)


def _tag(id_data: bpy.types.ID, curves: Sequence) -> None:
    """Have the depsgraph copy a changed ID (and the actions of muted F-curves) before the next evaluation:
    a custom property set from Python, or an F-curve muted, is not seen until then."""
    id_data.update_tag()
    for fc in curves:
        fc.id_data.update_tag()


def _resolve(id_data: bpy.types.ID, path: str) -> tuple[object, str]:
    """(owner, property) of an RNA path: ``a.b["c"]`` -> (a.b, '["c"]'), ``a.b.c`` -> (a.b, 'c')."""
    if path.endswith('"]'):
        head, _, key = path[:-2].rpartition('["')
        return id_data.path_resolve(head), f'["{key}"]'
    head, _, prop = path.rpartition(".")
    return (id_data.path_resolve(head) if head else id_data), prop


def _get(owner, prop: str):
    return owner[prop[2:-2]] if prop.startswith('["') else getattr(owner, prop)


def _set(owner, prop: str, value) -> None:
    if prop.startswith('["'):
        owner[prop[2:-2]] = value
    else:
        setattr(owner, prop, value)


@dataclass
class Follower:
    """Where a control's effect is measured: a pose bone's frame, at its head or moved to its tail."""

    arm: bpy.types.Object
    bone: str
    tail: bool = False

    def world(self) -> np.ndarray:
        pb = self.arm.pose.bones[self.bone]
        M = matrix_to_array(self.arm.matrix_world) @ matrix_to_array(pb.matrix)
        if self.tail:
            M[:3, 3] += pb.bone.length * M[:3, 1]
        return M


@dataclass
class Control:
    """A control to place: a pose bone (``arm`` and ``bone``) or an object (``obj``).

    Attributes:
        follower: What it drives, measured against ``goal``.
        goal: (N, 4, 4) world frame the follower must reach per frame.
        rotation: Match the follower's orientation too (else its position only; the control
            keeps its own orientation).
        swivel: A pole: ``(root, middle)`` followers; the control turns about the axis from the
            root to ``follower`` until the middle lies in the goal's bend plane, whose middle
            is ``swivel_goal`` (N, 3).
    """

    follower: Follower
    goal: np.ndarray
    arm: bpy.types.Object | None = None
    bone: str = ""
    obj: bpy.types.Object | None = None
    rotation: bool = True
    swivel: tuple[Follower, Follower] | None = None
    swivel_goal: np.ndarray | None = None
    keys: np.ndarray | None = field(default=None, repr=False)  # (N, 4, 4) basis (bone) or matrix_basis (object)

    @property
    def label(self) -> str:
        return self.bone if self.obj is None else self.obj.name

    def world(self) -> np.ndarray:
        if self.obj is not None:
            return matrix_to_array(self.obj.matrix_world)
        return matrix_to_array(self.arm.matrix_world) @ matrix_to_array(self.arm.pose.bones[self.bone].matrix)

    def set_world(self, M: np.ndarray) -> None:
        if self.obj is not None:
            self.obj.matrix_world = Matrix(M.tolist())
            return
        pb = self.arm.pose.bones[self.bone]
        local = np.linalg.solve(matrix_to_array(self.arm.matrix_world), M)
        pb.matrix = Matrix(local.tolist())

    def basis(self) -> np.ndarray:
        if self.obj is not None:
            return matrix_to_array(self.obj.matrix_basis)
        return matrix_to_array(self.arm.pose.bones[self.bone].matrix_basis)

    def set_basis(self, B: np.ndarray) -> None:
        if self.obj is not None:
            self.obj.matrix_basis = Matrix(B.tolist())
        else:
            self.arm.pose.bones[self.bone].matrix_basis = Matrix(B.tolist())


def _swivel_error(root: np.ndarray, end: np.ndarray, middle: np.ndarray, goal_middle: np.ndarray) -> tuple:
    """(axis, angle [rad]) turning ``middle`` about the root-end axis into the plane of ``goal_middle``."""
    axis = end - root
    norm = np.linalg.norm(axis)
    if norm < 1e-9:
        return None, 0.0
    axis = axis / norm
    a = (middle - root) - np.dot(middle - root, axis) * axis
    b = (goal_middle - root) - np.dot(goal_middle - root, axis) * axis
    if np.linalg.norm(a) < 1e-9 or np.linalg.norm(b) < 1e-9:
        return axis, 0.0
    return axis, float(np.arctan2(np.dot(np.cross(a, b), axis), np.dot(a, b)))


def _errors(c: Control, i: int) -> tuple[float, float]:
    got = c.follower.world()
    pos = float(np.linalg.norm(got[:3, 3] - c.goal[i, :3, 3]))
    if c.swivel is not None:
        root, middle = (f.world()[:3, 3] for f in c.swivel)
        _axis, angle = _swivel_error(root, got[:3, 3], middle, c.swivel_goal[i])
        return 0.0, abs(angle)
    if not c.rotation:
        return pos, 0.0
    return pos, float(rotations.rotation_error(rotations.rotation_part(got), rotations.rotation_part(c.goal[i])))


def _correct(c: Control, i: int) -> None:
    """Move the control by what its follower misses (a pole: turn it about its chain's axis)."""
    C = c.world()
    got = c.follower.world()
    if c.swivel is not None:
        root, middle = (f.world()[:3, 3] for f in c.swivel)
        axis, angle = _swivel_error(root, got[:3, 3], middle, c.swivel_goal[i])
        if axis is None or angle == 0.0:
            return
        new = C.copy()
        new[:3, 3] = root + rotations.axis_angle_to_matrix(axis, angle) @ (C[:3, 3] - root)
        c.set_world(new)
        return
    if c.rotation:
        D = c.goal[i].copy()
        D[:3, :3] = rotations.rotation_part(D)
        A = got.copy()
        A[:3, :3] = rotations.rotation_part(A)
        c.set_world(D @ np.linalg.inv(A) @ C)
    else:
        new = C.copy()
        new[:3, 3] += c.goal[i, :3, 3] - got[:3, 3]
        c.set_world(new)


def place_controls(context: bpy.types.Context, frames: Sequence[int], groups: Sequence[Sequence[Control]],
                   hold: Sequence[tuple[bpy.types.ID, str, float]] = ()) -> np.ndarray:
    """Place every control on every frame by evaluation; fills each control's ``keys`` (its basis per frame).

    Args:
        context: Blender context.
        frames: Frames to place on.
        groups: Controls placed together, group after group on each frame (a pole after the
            target it swivels about).
        hold: Properties held at a value while placing (see :func:`forced`): the rig's IK on.

    Returns:
        (N, C) the largest remaining error per frame and control: position [m] or angle [rad].
        The controls' bases and the current frame are restored; nothing is keyed here.
    """
    scene = context.scene
    controls = [c for group in groups for c in group]
    saved = [c.basis() for c in controls]
    for c in controls:
        c.keys = np.empty((len(frames), 4, 4))
    errors = np.zeros((len(frames), len(controls)))
    current = scene.frame_current
    try:
        with forced(hold):
            for i, frame in enumerate(frames):
                scene.frame_set(int(frame))
                for group in groups:
                    for _ in range(ROUNDS):
                        context.view_layer.update()
                        worst = [_errors(c, i) for c in group]
                        if all(p <= POSITION_TOLERANCE and r <= ROTATION_TOLERANCE for p, r in worst):
                            break
                        for c in group:
                            _correct(c, i)
                    context.view_layer.update()
                for k, c in enumerate(controls):
                    c.keys[i] = c.basis()
                    errors[i, k] = max(_errors(c, i))
    finally:
        for c, B in zip(controls, saved):
            c.set_basis(B)
        scene.frame_set(current)
    return errors
