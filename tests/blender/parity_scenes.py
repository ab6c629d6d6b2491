# SPDX-License-Identifier: GPL-3.0-or-later
"""Parity scenes (issue 16): small rigs baked by Blender's IK and by Articulate, scored by one playback code.

Each scene is built fresh for each route into an empty file (Rigify's from a .blend saved by a
child process, see :data:`RIGIFY_SCRIPT`):

- Blender's route: the scene's IK constraints live, ``nla.bake`` with visual keying of the
  selected chain bones (:data:`BLENDER_BAKE`), then every IK constraint muted (and the drivers
  on their mute or influence, which would unmute them) so only keys play.
- Articulate's route: ``articulate.chains_from_constraints`` then ``articulate.bake`` with
  default settings over the same frames (it mutes the IK constraints it converted).

Both are scored by :func:`score`: per frame and live IK constraint, the distance from the
chain's end point (the owner's tail with use_tail, else its head) to its target in playback,
and pops (a chain bone's head jumping while its target holds still). Used by
``tests/blender/test_parity.py`` and ``bench/bench_parity.py``; the Rigify rig's helpers
(:func:`open_rigify_rig`, :func:`limb_points`) by ``tests/blender/test_ik_fk.py`` and
``bench/bench_ik_fk.py``. Imports the add-on's operators only through ``bpy.ops``.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import bpy
import numpy as np

FRAMES = 60  # frames per take (1..FRAMES); the bench's --quick uses QUICK_FRAMES
QUICK_FRAMES = 30
OUT_OF_REACH = 0.05  # share of frames whose target lies beyond the chain's reach, where a scene has them
POP_MOVE_M = 0.05  # a chain bone's head moving more than this between frames ...
POP_STILL_M = 0.01  # ... while its target moved less than this is a pop [m]
AGREE_M = 1e-5  # the report's residual and playback's may differ by this [m]
FLOAT_SLACK_M = 2e-6  # playback's single precision: converged means residual <= tolerance + this [m]
ARTICULATE_TOLERANCE_M = 1e-4  # a chain's default tolerance; Blender's "missed" frames are judged by it
# Blender's route. ``use_current_action``: without it nla.bake replaces the armature's action by a
# new one holding the selected bones only, dropping every other key of the armature (a target bone
# keyed on it, keys outside the range), which would score Blender's route against a lost target.
BLENDER_BAKE = {"only_selected": True, "visual_keying": True, "clear_constraints": False,
                "bake_types": {"POSE"}, "use_current_action": True}
RIGIFY_LIMBS = ("hand_ik.L", "hand_ik.R", "foot_ik.L", "foot_ik.R")


@dataclass(frozen=True)
class IKSpec:
    """A live IK constraint as Blender solves it: the bones it moves and where its end must go."""

    owner: str
    constraint: str
    bones: tuple[str, ...]  # root first (Blender's chain_count and use_tail semantics)
    use_tail: bool
    target: str  # object name
    subtarget: str  # bone of the target armature, or ""


@dataclass
class SceneInfo:
    """What a builder leaves behind: the armature to bake and keys that must survive the bake."""

    armature: str
    # (data_path, index) -> [(frame, value)] of keys outside the baked range, checked after it
    outside_keys: dict[tuple[str, int], list[tuple[float, float]]] = field(default_factory=dict)


@dataclass(frozen=True)
class ParityScene:
    """One scene of the suite: a name, a builder into the current (empty) file, what it exercises."""

    name: str
    build: Callable[[int], SceneInfo]
    about: str
    rigify: bool = False  # built from the Rigify .blend (the builder gets the loaded file)


@dataclass
class RouteResult:
    """One route baked on one scene and scored by playback."""

    scene: str
    route: str  # "blender" or "articulate"
    frames: int
    seconds: float = math.nan  # the bake operator(s) alone
    residual_m: np.ndarray | None = field(default=None, repr=False)  # (F, C) per frame and live IK constraint
    pops: int = 0
    pop_frames: list[int] = field(default_factory=list)
    missed: int | None = None  # Articulate: the report's missed frames; Blender: frames over tolerance
    report: dict | None = field(default=None, repr=False)
    agrees: bool | None = None  # Articulate: the report matches playback on every frame
    disagreements: list[str] = field(default_factory=list, repr=False)
    keys_kept: bool | None = None  # keys outside the range survived (scenes that have some)
    error: str = ""  # the bake refused the scene: its message
    ik_live_frames: list[int] = field(default_factory=list)  # frames an IK constraint still posed the chain
    specs: list[IKSpec] = field(default_factory=list, repr=False)

    @property
    def median_mm(self) -> float:
        return float(np.median(self.residual_m)) * 1000.0 if self.residual_m is not None else math.nan

    @property
    def p95_mm(self) -> float:
        return float(np.percentile(self.residual_m, 95)) * 1000.0 if self.residual_m is not None else math.nan

    def row(self) -> dict:
        """A JSON-ready summary (the bench's row); numbers a refused bake has none of are None."""

        def num(x: float) -> float | None:
            return None if math.isnan(x) else x

        return {"scene": self.scene, "route": self.route, "frames": self.frames, "seconds": num(self.seconds),
                "median_mm": num(self.median_mm), "p95_mm": num(self.p95_mm),
                "max_mm": float(self.residual_m.max()) * 1000.0 if self.residual_m is not None else None,
                "pops": None if self.error else self.pops, "pop_frames": self.pop_frames, "missed_frames": self.missed,
                "report_agrees": self.agrees, "disagreements": self.disagreements[:5],
                "keys_kept": self.keys_kept, "ik_live_frames": len(self.ik_live_frames), "error": self.error,
                "blender": bpy.app.version_string}


# --- building blocks ---------------------------------------------------------------------------


def _link(obj: bpy.types.Object) -> bpy.types.Object:
    bpy.context.scene.collection.objects.link(obj)
    return obj


def armature(name: str, bones: Sequence[tuple], location=(0.0, 0.0, 0.0)) -> bpy.types.Object:
    """An armature object with ``bones``: (name, head, tail, parent or None, connected) each."""
    arm = _link(bpy.data.objects.new(name, bpy.data.armatures.new(name)))
    arm.location = location
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    for bone, head, tail, parent, connect in bones:
        eb = arm.data.edit_bones.new(bone)
        eb.head, eb.tail = head, tail
        if parent is not None:
            eb.parent, eb.use_connect = arm.data.edit_bones[parent], connect
    bpy.ops.object.mode_set(mode="OBJECT")
    return arm


def chain_bones(names: Sequence[str], points: Sequence, first_parent: str | None = None) -> list[tuple]:
    """Connected bones through ``points`` (one more point than names), the first under ``first_parent``."""
    out = []
    for k, name in enumerate(names):
        parent = first_parent if k == 0 else names[k - 1]
        out.append((name, tuple(points[k]), tuple(points[k + 1]), parent, k > 0 or first_parent is not None))
    return out


def zigzag(n: int, length: float, start=(0.0, 0.0, 0.0), bend: float = 0.05) -> list[tuple]:
    """``n + 1`` points up +Z from ``start``, ``length`` apart vertically, alternately offset by ``bend`` in +Y.

    A slight bend at rest gives Blender's IK (and the pole conversion) a bend direction.
    """
    x, y, z = start
    return [(x, y + (bend if k % 2 else 0.0), z + k * length) for k in range(n + 1)]


def empty(name: str, location=(0.0, 0.0, 0.0), parent: bpy.types.Object | None = None) -> bpy.types.Object:
    obj = _link(bpy.data.objects.new(name, None))
    obj.location = location
    obj.parent = parent
    return obj


def key_locations(owner, positions: np.ndarray, frames: Sequence[int]) -> None:
    """Key ``owner.location`` (an object or a pose bone) to ``positions`` (F, 3) on ``frames``."""
    for f, p in zip(frames, positions):
        owner.location = tuple(float(v) for v in p)
        owner.keyframe_insert("location", frame=int(f))


def target_path(n: int, root, reach: float, *, up=(0.0, 0.0, 1.0), phase: float = 0.0, out: bool = True,
                near: float = 0.55, far: float = 0.85, swing_deg: float = 50.0,
                tilt_deg: tuple[float, float] = (30.0, 60.0)) -> np.ndarray:
    """(n, 3) a target path around ``root`` [m]: a loop, a hold, and ``OUT_OF_REACH`` of frames beyond ``reach``.

    The direction from ``root`` swings +-``swing_deg`` about ``up`` from azimuth ``phase`` [rad] and
    ``tilt_deg`` (least, most) away from ``up``; the distance moves between ``near`` and ``far`` times ``reach``
    (a few centimetres per frame on a metre-long chain). From a third of the take the target
    holds still for 6 frames (where pops are counted), then goes on where it stopped. With
    ``out``, a run of frames at two thirds of the take lies at 1.15 ``reach``, with 0.9 and 0.97
    ``reach`` on the two frames either side.
    """
    up = np.asarray(up, float) / np.linalg.norm(up)
    side = np.cross(up, (1.0, 0.0, 0.0) if abs(up[0]) < 0.9 else (0.0, 1.0, 0.0))
    side /= np.linalg.norm(side)
    front = np.cross(up, side)
    steps = np.ones(n - 1)
    steps[n // 3 - 1:n // 3 + 4] = 0.0  # frames n//3 .. n//3 + 5 (1-based) share one position
    s = 2.0 * math.pi * np.concatenate([[0.0], np.cumsum(steps)]) / steps.sum()
    az = phase + math.radians(swing_deg) * np.sin(s)
    mid, half = math.radians(0.5 * (tilt_deg[0] + tilt_deg[1])), math.radians(0.5 * (tilt_deg[1] - tilt_deg[0]))
    el = mid + half * np.sin(2.0 * s + 1.0)
    dist = reach * (near + (far - near) * 0.5 * (1.0 + np.sin(1.5 * s + 0.5)))
    if out:
        m = max(2, round(OUT_OF_REACH * n))
        first = (2 * n) // 3
        dist[first:first + m] = 1.15 * reach
        dist[first - 1] = dist[first + m] = 0.97 * reach
        dist[first - 2] = max(dist[first - 2], 0.9 * reach)
        dist[first + m + 1] = max(dist[first + m + 1], 0.9 * reach)
    d = (np.cos(el)[:, None] * up + np.sin(el)[:, None] * (np.cos(az)[:, None] * front + np.sin(az)[:, None] * side))
    return np.asarray(root, float) + dist[:, None] * d


def add_ik(pb: bpy.types.PoseBone, target: bpy.types.Object, subtarget: str = "", chain_count: int = 0,
           **settings) -> bpy.types.Constraint:
    """An IK constraint on ``pb`` (500 iterations, Blender's default) with ``settings`` set on it."""
    con = pb.constraints.new("IK")
    con.target = target
    if subtarget:
        con.subtarget = subtarget
    con.chain_count = chain_count
    for key, value in settings.items():
        setattr(con, key, value)
    return con


def ik_limits(pb: bpy.types.PoseBone, *, x: tuple[float, float] | None = None, y: tuple[float, float] | None = None,
              z: tuple[float, float] | None = None, lock: str = "") -> None:
    """Blender's IK limits on ``pb``: ``use_ik_limit_<axis>`` with (min, max) [degrees] per axis given, and
    ``lock_ik_<axis>`` for each axis named in ``lock`` ("y": no twist)."""
    for axis, bounds in (("x", x), ("y", y), ("z", z)):
        if bounds is not None:
            setattr(pb, f"use_ik_limit_{axis}", True)
            setattr(pb, f"ik_min_{axis}", math.radians(bounds[0]))
            setattr(pb, f"ik_max_{axis}", math.radians(bounds[1]))
    for axis in lock:
        setattr(pb, f"lock_ik_{axis}", True)


def _frames(n: int) -> list[int]:
    return list(range(1, n + 1))


def _chain_scene(n: int, bones: int, chain_count: int, *, length: float = 0.4, base: bool = True,
                 phase: float = 0.0, **ik) -> tuple[bpy.types.Object, bpy.types.Object]:
    """An armature Rig: an optional fixed Base bone, then ``bones`` connected bones; an IK on the last one.

    Returns the armature and the target empty (keyed along :func:`target_path` starting at ``phase``).
    """
    names = [f"B{k + 1}" for k in range(bones)]
    start = (0.0, 0.0, 0.3) if base else (0.0, 0.0, 0.0)
    spec = [("Base", (0.0, 0.0, 0.0), start, None, False)] if base else []
    spec += chain_bones(names, zigzag(bones, length, start), "Base" if base else None)
    arm = armature("Rig", spec)
    moved = bones if chain_count == 0 else chain_count
    root = np.array(arm.data.bones[names[-moved]].head_local)
    target = empty("Target")
    key_locations(target, target_path(n, root, moved * length, phase=phase), _frames(n))
    add_ik(arm.pose.bones[names[-1]], target, chain_count=chain_count, **ik)
    return arm, target


# --- the scenes ----------------------------------------------------------------------------------


def build_chain3(n: int) -> SceneInfo:
    """Base + 3 bones, IK chain_count 3."""
    return SceneInfo(_chain_scene(n, 3, 3)[0].name)


def build_chain5(n: int) -> SceneInfo:
    """Base + 5 bones of 0.3 m, IK chain_count 5."""
    return SceneInfo(_chain_scene(n, 5, 5, length=0.3, phase=0.5)[0].name)


def build_chain0(n: int) -> SceneInfo:
    """4 bones from the armature's origin, IK chain_count 0 (up to the root bone)."""
    return SceneInfo(_chain_scene(n, 4, 0, base=False, length=0.35, phase=1.0)[0].name)


def build_tail_off(n: int) -> SceneInfo:
    """use_tail off: IK on the hand, chain_count 2 moves forearm and upper arm, the end is the hand's head."""
    spec = chain_bones(["Upper", "Fore", "Hand"], [(0, 0, 0), (0, 0.05, 0.5), (0, 0, 1.0), (0, 0, 1.2)])
    arm = armature("Rig", spec)
    target = empty("Target")
    key_locations(target, target_path(n, (0, 0, 0), 1.0, phase=-0.5), _frames(n))
    add_ik(arm.pose.bones["Hand"], target, chain_count=2, use_tail=False)
    return SceneInfo(arm.name)


def _two_bone(name: str = "Rig") -> bpy.types.Object:
    """Upper (0.5 m) and Lower (0.5 m) up +Z, bent toward +Y at rest."""
    return armature(name, chain_bones(["Upper", "Lower"], [(0, 0, 0), (0, 0.06, 0.5), (0, 0, 1.0)]))


def _pole_path(n: int) -> np.ndarray:
    """(n, 3) a pole drifting around +Y in front of the elbow [m]."""
    t = np.linspace(0.0, 1.0, n)
    return np.column_stack([0.4 * np.sin(2.0 * math.pi * t), 0.8 + 0.1 * np.cos(2.0 * math.pi * t),
                            0.5 + 0.1 * np.sin(4.0 * math.pi * t)])


def build_pole_object(n: int) -> SceneInfo:
    """Two bones, a pole empty, pole angle -90 degrees."""
    arm = _two_bone()
    target, pole = empty("Target"), empty("Pole")
    key_locations(target, target_path(n, (0, 0, 0), 1.0, phase=0.3), _frames(n))
    key_locations(pole, _pole_path(n), _frames(n))
    add_ik(arm.pose.bones["Lower"], target, chain_count=2, pole_target=pole, pole_angle=math.radians(-90.0))
    return SceneInfo(arm.name)


def build_pole_bone(n: int) -> SceneInfo:
    """Two bones; the pole is a keyed bone of another armature (moved 0.2 m off the origin)."""
    arm = _two_bone()
    ctrl = armature("Controls", [("Pole", (0, 0, 0), (0, 0, 0.1), None, False)], location=(0.0, 0.2, 0.0))
    target = empty("Target")
    key_locations(target, target_path(n, (0, 0, 0), 1.0, phase=0.6), _frames(n))
    key_locations(ctrl.pose.bones["Pole"], _pole_path(n) - (0.0, 0.2, 0.0), _frames(n))
    add_ik(arm.pose.bones["Lower"], target, chain_count=2, pole_target=ctrl, pole_subtarget="Pole",
           pole_angle=math.radians(-90.0))
    return SceneInfo(arm.name)


def build_pole_twist(n: int) -> SceneInfo:
    """Two bones with a pole, the root bone's twist limited to +-20 degrees (``use_ik_limit_y``)."""
    arm = _two_bone()
    upper = arm.pose.bones["Upper"]
    upper.use_ik_limit_y = True
    upper.ik_min_y, upper.ik_max_y = math.radians(-20.0), math.radians(20.0)
    target, pole = empty("Target"), empty("Pole")
    key_locations(target, target_path(n, (0, 0, 0), 1.0, phase=0.9), _frames(n))
    key_locations(pole, _pole_path(n), _frames(n))
    add_ik(arm.pose.bones["Lower"], target, chain_count=2, pole_target=pole, pole_angle=math.radians(-90.0))
    return SceneInfo(arm.name)


def build_target_own_bone(n: int) -> SceneInfo:
    """The target is a keyed bone (Ctrl, outside the chain) of the same armature."""
    spec = chain_bones(["B1", "B2", "B3"], zigzag(3, 0.4)) + [("Ctrl", (0.5, 0, 0), (0.5, 0, 0.1), None, False)]
    arm = armature("Rig", spec)
    path = target_path(n, (0, 0, 0), 1.2, phase=4.5) - (0.5, 0.0, 0.0)  # Ctrl's location is relative to its rest head
    key_locations(arm.pose.bones["Ctrl"], path[:, [0, 2, 1]] * (1, 1, -1), _frames(n))  # bone axes: Y up, Z -Y
    add_ik(arm.pose.bones["B3"], arm, "Ctrl", chain_count=3)
    return SceneInfo(arm.name)


def build_target_other_bone(n: int) -> SceneInfo:
    """The target is a keyed bone of another armature, itself rotated and moved."""
    arm = armature("Rig", chain_bones(["B1", "B2", "B3"], zigzag(3, 0.4)))
    other = armature("Other", [("Goal", (0, 0, 0), (0, 0.1, 0), None, False)], location=(0.3, -0.2, 0.1))
    other.rotation_euler = (0.0, 0.0, math.radians(30.0))
    bpy.context.view_layer.update()
    world = target_path(n, (0, 0, 0), 1.2, phase=5.0)
    # Goal's rest frame in the world: the object's matrix (its bone lies along the object's Y).
    local = (np.linalg.inv(np.array(other.matrix_world)) @ np.c_[world, np.ones(n)].T).T[:, :3]
    key_locations(other.pose.bones["Goal"], local[:, [0, 1, 2]], _frames(n))
    add_ik(arm.pose.bones["B3"], other, "Goal", chain_count=3)
    return SceneInfo(arm.name)


def build_weight_half(n: int) -> SceneInfo:
    """IK weight 0.5 (``con.weight``)."""
    return SceneInfo(_chain_scene(n, 3, 3, phase=1.5, weight=0.5)[0].name)


def key_fk_swing(arm: bpy.types.Object, names: Sequence[str], n: int, amplitude: float = 0.35) -> None:
    """Key an FK swing on ``names`` (Euler XYZ) over 1..n: what the chain does without IK."""
    for k, name in enumerate(names):
        pb = arm.pose.bones[name]
        pb.rotation_mode = "XYZ"
        for f in _frames(n):
            t = 2.0 * math.pi * (f - 1) / max(n - 1, 1)
            pb.rotation_euler = (amplitude * math.sin(t + k), 0.0, 0.5 * amplitude * math.cos(t - k))
            pb.keyframe_insert("rotation_euler", frame=f)


def build_influence_half(n: int) -> SceneInfo:
    """IK influence 0.5 on a chain swung by FK keys: the end goes half way from its FK pose to the target."""
    arm, _ = _chain_scene(n, 3, 3, phase=0.7, influence=0.5)
    key_fk_swing(arm, ["B1", "B2", "B3"], n)
    return SceneInfo(arm.name)


def build_influence_keyed(n: int) -> SceneInfo:
    """IK influence keyed 1 -> 0 (held) -> 1 over the take, on a chain swung by FK keys."""
    arm, _ = _chain_scene(n, 3, 3, phase=1.1)
    key_fk_swing(arm, ["B1", "B2", "B3"], n)
    con = arm.pose.bones["B3"].constraints[0]
    for frame, value in ((1, 1.0), (n // 4, 0.0), (n // 2, 0.0), ((3 * n) // 4, 1.0)):
        con.influence = value
        con.keyframe_insert("influence", frame=frame)
    return SceneInfo(arm.name)


def build_stretch(n: int) -> SceneInfo:
    """IK with Stretch, the bones' IK Stretch 0.1, 0.5 and 1.0: the out-of-reach frames are reached by stretching."""
    arm, _ = _chain_scene(n, 3, 3, phase=0.3, use_stretch=True)
    for name, stretch in (("B1", 0.1), ("B2", 0.5), ("B3", 1.0)):
        arm.pose.bones[name].ik_stretch = stretch
    return SceneInfo(arm.name)


def build_itasc(n: int) -> SceneInfo:
    """The armature solved by iTaSC (its defaults: a Copy Pose goal on the location)."""
    arm, _ = _chain_scene(n, 3, 3, phase=0.9)
    arm.pose.ik_solver = "ITASC"
    return SceneInfo(arm.name)


def build_muted_beside_live(n: int) -> SceneInfo:
    """A live IK on B3 and a muted one on B2 toward another target: only the live one counts."""
    arm, _ = _chain_scene(n, 3, 3, phase=2.0)
    other = empty("Other", (0.6, 0.3, 0.6))
    con = add_ik(arm.pose.bones["B2"], other, chain_count=2)
    con.mute = True
    return SceneInfo(arm.name)


def build_copy_limit_after(n: int) -> SceneInfo:
    """After the IK on the tip bone: Copy Rotation (local spaces, influence 0.5) from a turning empty, then
    Limit Rotation (X within +-30 degrees, local)."""
    arm, _ = _chain_scene(n, 3, 3, phase=2.5)
    tip = arm.pose.bones["B3"]
    spinner = empty("Spinner")
    for f in _frames(n):
        spinner.rotation_euler = (0.4 * math.sin(f / 7.0), 0.3, 0.2 * f / n)
        spinner.keyframe_insert("rotation_euler", frame=f)
    copy = tip.constraints.new("COPY_ROTATION")
    copy.target, copy.influence = spinner, 0.5
    copy.owner_space = copy.target_space = "LOCAL"
    limit = tip.constraints.new("LIMIT_ROTATION")
    limit.use_limit_x, limit.min_x, limit.max_x = True, math.radians(-30.0), math.radians(30.0)
    limit.owner_space = "LOCAL"
    return SceneInfo(arm.name)


def build_object_transform(n: int) -> SceneInfo:
    """The armature rotated, scaled 1.5 and parented to an empty that turns and slides; the target rides it too."""
    carrier = empty("Carrier")
    for f in _frames(n):
        carrier.location = (0.2 * math.sin(f / 9.0), 0.05 * f / n, 0.0)
        carrier.rotation_euler = (0.0, 0.0, 0.3 * math.sin(f / 11.0))
        carrier.keyframe_insert("location", frame=f)
        carrier.keyframe_insert("rotation_euler", frame=f)
    spec = [("Base", (0.0, 0.0, 0.0), (0.0, 0.0, 0.3), None, False)]
    spec += chain_bones(["B1", "B2", "B3"], zigzag(3, 0.4, (0.0, 0.0, 0.3)), "Base")
    arm = armature("Rig", spec, location=(0.1, 0.2, 0.3))
    arm.rotation_euler = (0.3, -0.2, 0.8)
    arm.scale = (1.5, 1.5, 1.5)
    arm.parent = carrier
    bpy.context.view_layer.update()
    # In the carrier's frame (parent inverse is identity): the chain root and its up direction.
    local = np.array(arm.matrix_local)
    root = (local @ (0.0, 0.0, 0.3, 1.0))[:3]
    up = local[:3, 2] / np.linalg.norm(local[:3, 2])
    target = empty("Target", parent=carrier)
    key_locations(target, target_path(n, root, 1.5 * 1.2, up=up, phase=5.5), _frames(n))
    add_ik(arm.pose.bones["B3"], target, chain_count=3)
    return SceneInfo(arm.name)


def build_rotation_modes(n: int) -> SceneInfo:
    """Chain bones in Euler XYZ, Euler ZXY and axis-angle rotation modes."""
    arm, _ = _chain_scene(n, 3, 3, phase=3.0)
    for name, mode in (("B1", "XYZ"), ("B2", "ZXY"), ("B3", "AXIS_ANGLE")):
        arm.pose.bones[name].rotation_mode = mode
    return SceneInfo(arm.name)


def build_existing_action(n: int) -> SceneInfo:
    """Chain bones keyed before and after the range (frames -20 and n + 20): the bake must keep those keys."""
    arm, _ = _chain_scene(n, 3, 3, phase=3.5)
    keys: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for frame, angle in ((-20, 0.4), (n + 20, -0.3)):
        for k, name in enumerate(("B1", "B2", "B3")):
            pb = arm.pose.bones[name]
            pb.rotation_quaternion = (math.cos(angle / 2), math.sin(angle / 2) * (k % 2), 0.0,
                                      math.sin(angle / 2) * ((k + 1) % 2))
            pb.keyframe_insert("rotation_quaternion", frame=frame)
            for i in range(4):
                keys.setdefault((pb.path_from_id("rotation_quaternion"), i), []).append(
                    (float(frame), float(pb.rotation_quaternion[i])))
    return SceneInfo(arm.name, keys)


def build_nla_strip(n: int) -> SceneInfo:
    """The chain's parent bone moves by an NLA strip (no active action)."""
    arm, _ = _chain_scene(n, 3, 3, phase=4.0)
    base = arm.pose.bones["Base"]
    for f in _frames(n):
        base.location = (0.1 * math.sin(f / 8.0), 0.0, 0.05 * math.cos(f / 5.0))
        base.rotation_quaternion = (math.cos(0.1 * math.sin(f / 6.0)), 0.0, math.sin(0.1 * math.sin(f / 6.0)), 0.0)
        base.keyframe_insert("location", frame=f)
        base.keyframe_insert("rotation_quaternion", frame=f)
    adt = arm.animation_data
    action = adt.action
    track = adt.nla_tracks.new()
    strip = track.strips.new("Base motion", 1, action)
    if hasattr(strip, "action_slot") and strip.action_slot is None:  # 4.4+: slots
        strip.action_slot = adt.action_slot
    adt.action = None
    return SceneInfo(arm.name)


def build_shared_spine(n: int, weights: tuple[float, float] = (1.0, 1.0), out: bool = False) -> SceneInfo:
    """Two arms hanging from a two-bone spine, an IK on each hand running through the spine (chain_count 4)."""
    spec = chain_bones(["Spine1", "Spine2"], [(0, 0, 0), (0, 0.03, 0.4), (0, 0, 0.8)])
    for side, sx in (("L", 1.0), ("R", -1.0)):
        pts = [(0.0, 0.0, 0.8), (0.4 * sx, 0.05, 0.8), (0.8 * sx, 0.0, 0.8)]
        spec += chain_bones([f"Arm.{side}", f"Hand.{side}"], pts, "Spine2")
    arm = armature("Rig", spec)
    for (side, sx), weight in zip((("L", 1.0), ("R", -1.0)), weights):
        target = empty(f"Target.{side}")
        key_locations(target, target_path(n, (0, 0, 0.8), 0.8, up=(sx, 0.0, 0.0), out=out and side == "R",
                                          far=0.95), _frames(n))
        add_ik(arm.pose.bones[f"Hand.{side}"], target, chain_count=4, weight=weight)
    return SceneInfo(arm.name)


def build_shared_spine_weights(n: int) -> SceneInfo:
    """The shared spine with IK weights 1.0 (left) and 0.3 (right), the right target beyond reach on some frames."""
    return build_shared_spine(n, weights=(1.0, 0.3), out=True)


# Limited chains (issue 23): long chains with IK limits set the way riggers set them, each IK constraint
# with a user's defaults (a target and chain_count; 500 iterations, Blender's default tolerance), targets
# sweeping in and out of what the limits allow: some frames reachable, some only past the limits (in
# reach of the bones' lengths), some beyond reach. Bone axes of a bone up +Z with roll 0: X is world X
# (bends forward and back), Z is world -Y (bends sideways), Y the twist.
SPINE_LIMITS = {"x": (-25.0, 35.0), "y": (-15.0, 15.0), "z": (-30.0, 30.0)}  # [degrees]
NECK_LIMITS = {"x": (-40.0, 40.0), "y": (-20.0, 20.0), "z": (-35.0, 35.0)}
TAIL_LIMITS = {"x": (-25.0, 25.0), "z": (-20.0, 20.0), "lock": "y"}
SHOULDER_LIMITS = {"x": (-20.0, 20.0), "z": (-20.0, 20.0), "lock": "y"}
# Hips, then the spine bowed forward at the waist and back at the chest (Blender's front is -Y) [m].
HIPS = ("Hips", (0.0, 0.0, 0.9), (0.0, 0.0, 1.0), None, False)
SPINE_POINTS = [(0.0, 0.0, 1.0), (0.0, -0.015, 1.12), (0.0, -0.02, 1.24), (0.0, -0.005, 1.37), (0.0, 0.02, 1.53),
                (0.0, 0.0, 1.63)]


def chain_reach(arm: bpy.types.Object, names: Sequence[str]) -> float:
    """How far the end of bones ``names`` (root first, each a child of the one before) can get from the
    root's head: the distances from head to head, then the last bone's length, at rest [m]."""
    bones = [arm.data.bones[name] for name in names]
    heads = [np.array(b.head_local) for b in bones] + [np.array(bones[-1].tail_local)]
    return float(sum(np.linalg.norm(b - a) for a, b in zip(heads, heads[1:])))


def build_influence_tree(n: int) -> SceneInfo:
    """The shared spine (two arms, one tree) swung by FK keys on every bone, both IK influences keyed 1 -> 0 -> 1."""
    info = build_shared_spine(n)
    arm = bpy.data.objects[info.armature]
    key_fk_swing(arm, ["Spine1", "Spine2", "Arm.L", "Hand.L", "Arm.R", "Hand.R"], n, amplitude=0.25)
    for side in ("L", "R"):
        con = arm.pose.bones[f"Hand.{side}"].constraints[0]
        for frame, value in ((1, 1.0), (n // 4, 0.0), (n // 2, 0.0), ((3 * n) // 4, 1.0)):
            con.influence = value
            con.keyframe_insert("influence", frame=frame)
    return info


def build_limited_spine(n: int) -> SceneInfo:
    """Hips, three spine bones, Chest and Neck, each with swing and twist limits (Neck a wider range); an IK on
    Neck (chain_count 5) toward a target looping around the front, sideways and down further than the limits
    let the spine bend, and out of reach on a few frames."""
    names = ["Spine1", "Spine2", "Spine3", "Chest", "Neck"]
    arm = armature("Rig", [HIPS] + chain_bones(names, SPINE_POINTS, "Hips"))
    for name in names:
        ik_limits(arm.pose.bones[name], **(NECK_LIMITS if name == "Neck" else SPINE_LIMITS))
    target = empty("Target")
    key_locations(target, target_path(n, SPINE_POINTS[0], chain_reach(arm, names), phase=-0.5 * math.pi,
                                      swing_deg=100.0, tilt_deg=(10.0, 100.0), near=0.8, far=0.99), _frames(n))
    add_ik(arm.pose.bones["Neck"], target, chain_count=len(names))
    return SceneInfo(arm.name)


def _tail(n: int, name: str = "Rig") -> bpy.types.Object:
    """Hips and a tail of 9 bones (0.1 m each, back and down from the hips, twist locked, swing +-25 / +-20
    degrees); an IK on the tip (chain_count 9) toward a target sweeping sideways and up and down past what the
    limits allow, and out of reach on a few frames."""
    names = [f"Tail{k + 1}" for k in range(9)]
    back = np.array([0.0, 0.94, -0.34])  # the tail's direction at rest: back (+Y) and a little down
    points = [np.array((0.0, 0.05, 0.92)) + 0.1 * k * back + (0.0, 0.0, 0.01 * (k % 2)) for k in range(10)]
    spec = chain_bones(names, points)
    spec[0] = (*spec[0][:3], "Hips", False)  # parented to the hips, not connected
    arm = armature(name, [HIPS] + spec)
    for bone in names:
        ik_limits(arm.pose.bones[bone], **TAIL_LIMITS)
    target = empty("Target")
    key_locations(target, target_path(n, points[0], chain_reach(arm, names), up=back, phase=0.0, swing_deg=180.0,
                                      tilt_deg=(15.0, 105.0), near=0.7, far=0.98), _frames(n))
    add_ik(arm.pose.bones[names[-1]], target, chain_count=len(names))
    return arm


def build_limited_tail(n: int) -> SceneInfo:
    """The 9-bone limited tail of :func:`_tail`, solved by Blender's standard IK solver."""
    return SceneInfo(_tail(n).name)


def build_itasc_tail(n: int) -> SceneInfo:
    """The 9-bone limited tail of :func:`_tail`, the armature solved by iTaSC (its defaults otherwise)."""
    arm = _tail(n)
    arm.pose.ik_solver = "ITASC"
    return SceneInfo(arm.name)


def build_limited_chain0(n: int) -> SceneInfo:
    """6 bones of 0.2 m from the armature's origin, each limited (the root bone +-20 degrees swing, +-10 twist;
    the others +-30 and +-15), an IK on the last with chain_count 0 (up to the root bone)."""
    names = [f"B{k + 1}" for k in range(6)]
    arm = armature("Rig", chain_bones(names, zigzag(6, 0.2, bend=0.02)))
    for k, name in enumerate(names):
        swing, twist = (20.0, 10.0) if k == 0 else (30.0, 15.0)
        ik_limits(arm.pose.bones[name], x=(-swing, swing), y=(-twist, twist), z=(-swing, swing))
    target = empty("Target")
    key_locations(target, target_path(n, (0.0, 0.0, 0.0), chain_reach(arm, names), phase=1.0, swing_deg=120.0,
                                      tilt_deg=(10.0, 100.0), near=0.75, far=0.98), _frames(n))
    add_ik(arm.pose.bones[names[-1]], target, chain_count=0)
    return SceneInfo(arm.name)


def build_limited_arms_spine(n: int) -> SceneInfo:
    """Hips, a limited spine (Spine1, Spine2, Chest), unconnected shoulders (twist locked, swing +-20 degrees)
    and free arms; an IK on each forearm through shoulder and spine (chain_count 6), the targets reaching out
    to the sides and forward, the right one out of the whole chain's reach on a few frames."""
    spine = ["Spine1", "Spine2", "Chest"]
    spec = [HIPS] + chain_bones(spine, [(0.0, 0.0, 1.0), (0.0, -0.015, 1.12), (0.0, -0.01, 1.25), (0.0, 0.02, 1.45)],
                                "Hips")
    for side, sx in (("L", 1.0), ("R", -1.0)):
        spec.append((f"Shoulder.{side}", (0.02 * sx, -0.03, 1.40), (0.17 * sx, 0.0, 1.42), "Chest", False))
        pts = [(0.17 * sx, 0.0, 1.42), (0.45 * sx, 0.03, 1.40), (0.72 * sx, 0.0, 1.40)]  # elbow a little back
        spec += chain_bones([f"UpperArm.{side}", f"Forearm.{side}"], pts, f"Shoulder.{side}")
    arm = armature("Rig", spec)
    for name in spine:
        ik_limits(arm.pose.bones[name], **SPINE_LIMITS)
    for side, sx in (("L", 1.0), ("R", -1.0)):
        ik_limits(arm.pose.bones[f"Shoulder.{side}"], **SHOULDER_LIMITS)
        names = [*spine, f"Shoulder.{side}", f"UpperArm.{side}", f"Forearm.{side}"]
        target = empty(f"Target.{side}")  # around the chain's root, up and out to the side
        key_locations(target, target_path(n, SPINE_POINTS[0], chain_reach(arm, names), up=(sx, 0.0, 1.0),
                                          phase=-0.5 * math.pi, swing_deg=70.0, tilt_deg=(20.0, 70.0),
                                          out=side == "R", near=0.6, far=0.95), _frames(n))
        add_ik(arm.pose.bones[f"Forearm.{side}"], target, chain_count=len(names))
    return SceneInfo(arm.name)


# A child-process script: ``python -c RIGIFY_SCRIPT out.blend frames`` saves Rigify's generated human rig
# with its IK hand and foot controls keyed over 1..frames. Rigify is enabled only in that child: enabling
# it in the test process makes bpy 4.2 segfault and 4.5 hang at exit (see ``conftest.blend_from_script``).
RIGIFY_SCRIPT = """
import math, os, sys
import bpy
import addon_utils
addon_utils.enable("rigify", default_set=True)
bpy.ops.wm.read_homefile(use_empty=True)
bpy.ops.object.armature_human_metarig_add()
ok = bpy.ops.pose.rigify_generate() == {"FINISHED"} and bpy.context.object.name == "rig"
rig = bpy.data.objects["rig"]
n = int(sys.argv[2])
bpy.context.view_layer.update()
rest = {name: rig.pose.bones[name].matrix.copy() for name in LIMBS}
for f in range(1, n + 1):
    t = (f - 1) / (n - 1)
    hold = 0.33 if 0.33 <= t <= 0.43 else t  # a still stretch, where pops are counted
    s, c = math.sin(2 * math.pi * hold), 1 - math.cos(2 * math.pi * hold)
    for name in LIMBS:
        side = 1.0 if name.endswith(".L") else -1.0
        pb = rig.pose.bones[name]
        M = rest[name].copy()
        if name.startswith("hand"):  # reach in toward the chest and forward, and up
            M.translation += type(M.translation)((-0.12 * side * c, -0.18 * s, 0.12 * c))
        else:  # step: lift the foot forward and up
            M.translation += type(M.translation)((0.0, -0.15 * max(side * s, 0.0), 0.18 * max(side * s, 0.0)))
        pb.matrix = M
        pb.keyframe_insert("location", frame=f)
bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, n
ok = ok and bpy.ops.wm.save_as_mainfile(filepath=sys.argv[1]) == {"FINISHED"}
sys.stdout.flush()
os._exit(0 if ok else 1)
""".replace("LIMBS", repr(RIGIFY_LIMBS))


def build_rigify(n: int) -> SceneInfo:
    """Rigify's generated human rig (already loaded): its four limb IK constraints, hands and feet keyed."""
    return SceneInfo("rig")


def make_rigify_blend(path: Path, frames: int) -> Path:
    """Run :data:`RIGIFY_SCRIPT` in a child Python (this interpreter) and return the saved .blend."""
    env = dict(os.environ)
    env["BLENDER_USER_RESOURCES"] = tempfile.mkdtemp(prefix="articulate-rigify-")
    done = subprocess.run([sys.executable, "-c", RIGIFY_SCRIPT, str(path), str(frames)], env=env,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0 or not path.is_file():
        raise RuntimeError("generating the Rigify rig failed:\n" + done.stdout[-2000:] + done.stderr[-2000:])
    return path


# The generated rig's ORG limb bones (each with .L and .R) whose heads and tails an IK/FK switch must keep,
# arm then leg, and the bones holding each limb's IK_FK switch.
LIMB_BONES = ("ORG-upper_arm", "ORG-forearm", "ORG-hand", "ORG-thigh", "ORG-shin", "ORG-foot", "ORG-toe")
SWITCHES = tuple(f"{limb}_parent.{side}" for limb in ("upper_arm", "thigh") for side in "LR")


def open_rigify_rig(path: Path, frames: int) -> bpy.types.Object:
    """Open the .blend of :func:`make_rigify_blend`, scene range 1..frames; return its rig, active, alone selected."""
    bpy.ops.wm.open_mainfile(filepath=str(path))
    rig = bpy.data.objects["rig"]
    activate(rig)
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, frames
    return rig


def limb_points(rig: bpy.types.Object, frames: int) -> np.ndarray:
    """(F, P, 3) world heads and tails of every :data:`LIMB_BONES` bone on frames 1..frames, in playback [m]."""
    names = [f"{b}.{s}" for b in LIMB_BONES for s in "LR"]
    out = np.empty((frames, 2 * len(names), 3))
    for f in range(1, frames + 1):
        bpy.context.scene.frame_set(f)
        mw = np.array(rig.matrix_world)
        pts = np.array([tuple(getattr(rig.pose.bones[n], end)) for n in names for end in ("head", "tail")])
        out[f - 1] = pts @ mw[:3, :3].T + mw[:3, 3]
    return out


SCENES: tuple[ParityScene, ...] = (
    ParityScene("chain3", build_chain3, "IK chain_count 3"),
    ParityScene("chain5", build_chain5, "IK chain_count 5"),
    ParityScene("chain0", build_chain0, "IK chain_count 0 (up to the root)"),
    ParityScene("tail_off", build_tail_off, "use_tail off"),
    ParityScene("pole_object", build_pole_object, "pole: an object"),
    ParityScene("pole_bone", build_pole_bone, "pole: a bone of another armature"),
    ParityScene("pole_twist", build_pole_twist, "pole, root twist limited (use_ik_limit_y)"),
    ParityScene("target_own_bone", build_target_own_bone, "target: a bone of the same armature"),
    ParityScene("target_other_bone", build_target_other_bone, "target: a bone of another armature"),
    ParityScene("weight_half", build_weight_half, "IK weight 0.5"),
    ParityScene("influence_half", build_influence_half, "IK influence 0.5, the chain swung by FK keys"),
    ParityScene("influence_keyed", build_influence_keyed, "IK influence keyed 1 -> 0 -> 1, FK keys"),
    ParityScene("stretch", build_stretch, "Stretch on, bones' IK Stretch 0.1 / 0.5 / 1.0"),
    ParityScene("itasc", build_itasc, "the iTaSC solver (Copy Pose goal)"),
    ParityScene("muted_beside_live", build_muted_beside_live, "a muted IK beside a live one"),
    ParityScene("copy_limit_after", build_copy_limit_after, "Copy Rotation, Limit Rotation after the IK"),
    ParityScene("object_transform", build_object_transform, "armature rotated, scaled 1.5, parented"),
    ParityScene("rotation_modes", build_rotation_modes, "Euler XYZ, Euler ZXY, axis-angle bones"),
    ParityScene("existing_action", build_existing_action, "keys outside the baked range"),
    ParityScene("nla_strip", build_nla_strip, "the chain's parent moved by an NLA strip"),
    ParityScene("shared_spine", build_shared_spine, "two IK chains sharing the spine"),
    ParityScene("shared_spine_weights", build_shared_spine_weights,
                "the shared spine, IK weights 1.0 / 0.3, the lighter arm's target out of reach at times"),
    ParityScene("influence_tree", build_influence_tree,
                "the shared spine, both IK influences keyed 1 -> 0 -> 1, FK keys"),
    ParityScene("limited_spine", build_limited_spine,
                "5-bone spine with swing and twist limits, the target looping past them and out of reach"),
    ParityScene("limited_tail", build_limited_tail,
                "9-bone tail, twist locked, swing limited, the target sweeping past the limits and out of reach"),
    ParityScene("limited_chain0", build_limited_chain0, "6 limited bones, root included, IK chain_count 0"),
    ParityScene("itasc_tail", build_itasc_tail, "the limited 9-bone tail solved by iTaSC"),
    ParityScene("limited_arms_spine", build_limited_arms_spine,
                "two arms through a limited spine and shoulders, the right target out of reach at times"),
    ParityScene("rigify", build_rigify, "Rigify's generated human rig", rigify=True),
)
BY_NAME = {s.name: s for s in SCENES}


# --- routes and scoring --------------------------------------------------------------------------


def live_iks(arm: bpy.types.Object) -> list[IKSpec]:
    """The armature's IK constraints Blender solves (not muted, influence > 0, with a target), in bone order."""
    out = []
    for pb in arm.pose.bones:
        for con in pb.constraints:
            if con.type != "IK" or con.mute or con.influence <= 0.0 or con.target is None:
                continue
            if not getattr(con, "enabled", True):
                continue
            first = pb if con.use_tail else pb.parent
            if first is None:
                continue
            bones = [first]
            while bones[-1].parent is not None and (con.chain_count == 0 or len(bones) < con.chain_count):
                bones.append(bones[-1].parent)
            sub = con.subtarget if con.target.type == "ARMATURE" else ""
            out.append(IKSpec(pb.name, con.name, tuple(b.name for b in reversed(bones)), con.use_tail,
                              con.target.name, sub))
    return out


def _target_position(spec: IKSpec) -> np.ndarray:
    obj = bpy.data.objects[spec.target]
    if spec.subtarget:
        return np.array(obj.matrix_world @ obj.pose.bones[spec.subtarget].head)
    return np.array(obj.matrix_world.translation)


def influence_goals(arm: bpy.types.Object, specs: Sequence[IKSpec], frames: Sequence[int]) -> np.ndarray | None:
    """(F, C, 3) where each IK constraint's end must go, for scenes whose IK influence is below 1 somewhere; else None.

    Blender's IK at influence ``w`` solves for a goal ``w`` of the way from where the chain's end
    is without IK to the target (its solver's "enforce" blend). Sampled before any bake, every IK
    constraint muted, then restored: the end's FK position, the target and the influence per frame.
    """
    cons = [arm.pose.bones[s.owner].constraints[s.constraint] for s in specs]
    keyed = {fc.data_path for fc in _fcurves(arm)}
    if all(c.influence >= 1.0 and f"{c.path_from_id()}.influence" not in keyed for c in cons):
        return None
    scene = bpy.context.scene
    every = [c for pb in arm.pose.bones for c in pb.constraints if c.type == "IK"]
    was = [c.mute for c in every]
    F, C = len(frames), len(specs)
    end, target, weight = np.empty((F, C, 3)), np.empty((F, C, 3)), np.empty((F, C))
    try:
        for c in every:
            c.mute = True
        for i, f in enumerate(frames):
            scene.frame_set(int(f))
            mw = arm.matrix_world
            for c, spec in enumerate(specs):
                pb = arm.pose.bones[spec.owner]
                end[i, c] = tuple(mw @ (pb.tail if spec.use_tail else pb.head))
                target[i, c] = _target_position(spec)
                weight[i, c] = cons[c].influence
    finally:
        for c, m in zip(every, was):
            c.mute = m
        scene.frame_set(int(frames[0]))
    return end + weight[..., None] * (target - end)


def score(arm: bpy.types.Object, specs: Sequence[IKSpec], frames: Sequence[int],
          goals: np.ndarray | None = None) -> dict:
    """Playback of ``frames``: per frame and IK constraint the end-to-target residual, and pops.

    With ``goals`` (F, C, 3) (see :func:`influence_goals`) the residual is measured to those instead.

    Returns:
        ``residual_m`` (F, C) [m]; ``pop_frames``: frames where some chain bone's head moved more
        than ``POP_MOVE_M`` since the previous frame while that chain's target moved less than
        ``POP_STILL_M``; ``ik_live_frames``: frames where one of the IK constraints is not muted
        (a driver can unmute what a bake muted: then the IK, not the keys, poses the chain).
    """
    scene = bpy.context.scene
    F, C = len(frames), len(specs)
    residual = np.empty((F, C))
    targets = np.empty((F, C, 3))
    heads = [np.empty((F, len(s.bones), 3)) for s in specs]
    cons = [arm.pose.bones[s.owner].constraints[s.constraint] for s in specs]
    live = []
    for i, f in enumerate(frames):
        scene.frame_set(int(f))
        if any(not con.mute for con in cons):
            live.append(int(f))
        mw = arm.matrix_world
        for c, spec in enumerate(specs):
            pb = arm.pose.bones[spec.owner]
            end = np.array(mw @ (pb.tail if spec.use_tail else pb.head))
            targets[i, c] = _target_position(spec)
            residual[i, c] = np.linalg.norm(end - (targets[i, c] if goals is None else goals[i, c]))
            heads[c][i] = [tuple(mw @ arm.pose.bones[b].head) for b in spec.bones]
    pops = set()
    for c in range(C):
        moved = np.linalg.norm(np.diff(heads[c], axis=0), axis=-1).max(axis=-1, initial=0.0)
        still = np.linalg.norm(np.diff(targets[:, c], axis=0), axis=-1) < POP_STILL_M
        pops |= {int(frames[i + 1]) for i in np.flatnonzero((moved > POP_MOVE_M) & still)}
    return {"residual_m": residual, "pop_frames": sorted(pops), "ik_live_frames": live}


def select_bones(arm: bpy.types.Object, names: set[str]) -> None:
    """Select the pose bones named in ``names`` and deselect the others (the armature in pose mode)."""
    on_pose_bone = "select" in bpy.types.PoseBone.bl_rna.properties  # 5.0 moved selection off Bone
    for pb in arm.pose.bones:
        (pb if on_pose_bone else pb.bone).select = pb.name in names


def activate(arm: bpy.types.Object) -> None:
    if bpy.context.object is not None and bpy.context.object.mode != "OBJECT":
        bpy.ops.object.mode_set(mode="OBJECT")
    for obj in bpy.context.view_layer.objects:
        obj.select_set(obj == arm)
    bpy.context.view_layer.objects.active = arm


def mute_ik(arm: bpy.types.Object) -> None:
    """Mute every IK constraint of ``arm`` and the drivers that would set their mute or influence back."""
    paths = set()
    for pb in arm.pose.bones:
        for con in pb.constraints:
            if con.type == "IK":
                con.mute = True
                base = con.path_from_id()
                paths |= {f"{base}.mute", f"{base}.influence", f"{base}.enabled"}
    if arm.animation_data is not None:
        for fc in arm.animation_data.drivers:
            if fc.data_path in paths:
                fc.mute = True


def bake_blender(arm: bpy.types.Object, specs: Sequence[IKSpec], frames: Sequence[int]) -> float:
    """Blender's route: ``nla.bake`` with visual keying of the chain bones, then the IK muted; returns seconds."""
    scene = bpy.context.scene
    scene.frame_set(frames[0])
    activate(arm)
    bpy.ops.object.mode_set(mode="POSE")
    select_bones(arm, {b for s in specs for b in s.bones})
    t0 = time.perf_counter()
    result = bpy.ops.nla.bake(frame_start=frames[0], frame_end=frames[-1], **BLENDER_BAKE)
    seconds = time.perf_counter() - t0
    bpy.ops.object.mode_set(mode="OBJECT")
    if "FINISHED" not in result:
        raise RuntimeError(f"nla.bake returned {result}")
    mute_ik(arm)
    return seconds


def bake_articulate(arm: bpy.types.Object, frames: Sequence[int], report_path: Path) -> tuple[float, dict]:
    """Articulate's route: chains from the IK constraints, then the bake with defaults; returns (seconds, report).

    Raises:
        RuntimeError: Either operator refused (Blender turns its error report into this).
    """
    activate(arm)
    t0 = time.perf_counter()
    assert bpy.ops.articulate.chains_from_constraints() == {"FINISHED"}
    result = bpy.ops.articulate.bake(use_scene_settings=False, frame_start=frames[0], frame_end=frames[-1],
                                     report_path=str(report_path))
    seconds = time.perf_counter() - t0
    if "FINISHED" not in result:
        raise RuntimeError(f"articulate.bake returned {result}")
    return seconds, json.loads(report_path.read_text())


def compare_report(report: dict, specs: Sequence[IKSpec], residual: np.ndarray) -> list[str]:
    """Where the report and playback disagree: every frame of every chain (empty when they agree).

    Per chain the report's ``position_error_m`` must be playback's residual within ``AGREE_M``, and
    ``converged`` must be ``residual <= tolerance_m + FLOAT_SLACK_M``; every live IK constraint needs
    a chain (matched by its bones).
    """
    out = []
    by_bones = {tuple(ch["bones"]): ch for ch in report["chains"]}
    for c, spec in enumerate(specs):
        ch = by_bones.get(spec.bones)
        if ch is None:
            out.append(f"{spec.owner} {spec.constraint!r}: no chain in the report moves {list(spec.bones)}")
            continue
        err = np.asarray(ch["position_error_m"])
        conv = np.asarray(ch["converged"], dtype=bool)
        shown = residual[:, c] <= ch["tolerance_m"] + FLOAT_SLACK_M
        for i in np.flatnonzero(np.abs(err - residual[:, c]) >= AGREE_M):
            out.append(f"{ch['chain']} frame {report['frames'][i]}: report {err[i] * 1000:.4f} mm, "
                       f"playback {residual[i, c] * 1000:.4f} mm")
        for i in np.flatnonzero(conv != shown):
            out.append(f"{ch['chain']} frame {report['frames'][i]}: report converged={bool(conv[i])}, "
                       f"playback {residual[i, c] * 1000:.4f} mm vs tolerance {ch['tolerance_m'] * 1000:.3g} mm")
    return out


def _fcurves(obj: bpy.types.Object) -> list:
    adt = obj.animation_data
    if adt is None or adt.action is None:
        return []
    action = adt.action
    if hasattr(action, "layers") and action.layers:  # 4.4+: layered actions
        bag = action.layers[0].strips[0].channelbag(adt.action_slot) if action.layers[0].strips else None
        return list(bag.fcurves) if bag is not None else []
    return list(getattr(action, "fcurves", []))


def keys_kept(arm: bpy.types.Object, keys: dict[tuple[str, int], list[tuple[float, float]]]) -> bool:
    """Every key of ``keys`` is still on the armature's action, same frame and value (1e-5)."""
    curves = {(fc.data_path, fc.array_index): fc for fc in _fcurves(arm)}
    for channel, wanted in keys.items():
        fc = curves.get(channel)
        if fc is None:
            return False
        have = [tuple(p.co) for p in fc.keyframe_points]
        for frame, value in wanted:
            if not any(abs(f - frame) < 1e-4 and abs(v - value) < 1e-5 for f, v in have):
                return False
    return True


def load(scene: ParityScene, frames: int, rigify_blend: Path | None = None) -> SceneInfo:
    """Replace the current file by a fresh build of ``scene`` (frame range 1..frames)."""
    if scene.rigify:
        if rigify_blend is None:
            raise ValueError(f"scene {scene.name!r} needs the Rigify .blend (make_rigify_blend)")
        bpy.ops.wm.open_mainfile(filepath=str(rigify_blend))
    else:
        bpy.ops.wm.read_homefile(use_empty=True)
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, frames
    info = scene.build(frames)
    bpy.context.scene.frame_set(1)
    return info


def run(scene: ParityScene, route: str, frames: int, rigify_blend: Path | None = None) -> RouteResult:
    """Build ``scene`` fresh, bake it by ``route`` ("blender" or "articulate") and score its playback."""
    info = load(scene, frames, rigify_blend)
    arm = bpy.data.objects[info.armature]
    specs = live_iks(arm)
    frame_list = _frames(frames)
    out = RouteResult(scene.name, route, frames, specs=specs)
    goals = influence_goals(arm, specs, frame_list)
    if route == "blender":
        out.seconds = bake_blender(arm, specs, frame_list)
    elif route == "articulate":
        report_path = Path(tempfile.mkdtemp(prefix="articulate-parity-")) / "report.json"
        try:
            out.seconds, out.report = bake_articulate(arm, frame_list, report_path)
        except RuntimeError as err:
            out.error = str(err).strip()
            return out
    else:
        raise ValueError(f"unknown route {route!r}; valid: blender, articulate")
    scored = score(arm, specs, frame_list, goals)
    out.residual_m, out.pop_frames = scored["residual_m"], scored["pop_frames"]
    out.pops = len(out.pop_frames)
    out.ik_live_frames = scored["ik_live_frames"]
    if out.report is not None:
        out.missed = len(out.report["missed_frames"])
        out.disagreements = compare_report(out.report, specs, out.residual_m)
        out.agrees = not out.disagreements
    else:
        out.missed = int(np.count_nonzero((out.residual_m > ARTICULATE_TOLERANCE_M + FLOAT_SLACK_M).any(axis=1)))
    if info.outside_keys:
        out.keys_kept = keys_kept(arm, info.outside_keys)
    return out
