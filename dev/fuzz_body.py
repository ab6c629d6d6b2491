# SPDX-License-Identifier: GPL-3.0-or-later
"""Random humanoids and walking legs through the animator's body, contact and IK/FK operators.

Run from the repo root with a bpy venv::

    BLENDER_USER_RESOURCES=$(mktemp -d) .venvs/5.0.1/bin/python dev/fuzz_body.py [--seconds 300] \
        [--first-seed 1000] [--seeds 1004,1017]

Each seed builds an empty scene and runs one of two scenarios through the add-on's operators:

- **Full body** (two seeds in three): a random humanoid armature (Rigify metarig, Mixamo with any
  namespace, Unreal, CMU/BVH, VRoid, Unity words, ``.L``/``_l`` names, or arbitrary names mapped
  in the panel by hand; random proportions, T or A pose, bone rolls, rotation modes, twist bones
  and fingers, no neck, clavicles or toes, a root bone, a bone that does not inherit rotation,
  the object moved, turned and scaled, sometimes non-uniformly), keyed empties as head and hand
  trackers (walking, crouching, turning, hands out of reach, a hand keyed constant (a dropout),
  a jump; sometimes pelvis and foot trackers), or the same trackers written to a CSV and read by
  ``articulate.trackers_import`` (uneven times, NaN cells). Then ``body_detect_roles``,
  ``body_align``, ``body_steps_detect``, the Known Steps list buttons and ``body_bake`` (twice,
  the second with Known Steps), and ``ik_to_fk`` / ``fk_to_ik`` on IK constraints added to the arms.
- **Contacts** (one seed in three): an armature with one or two legs of 2-4 bones under a Hips
  bone, sometimes a foot bone and a toe, each leg's target keyed along a walking path (stance with
  jitter and dips, swings), the hips walking, a ground plane at some height or a ground collection
  of steps, slopes and floors; chains from ``chain_add`` or from IK constraints
  (``chains_from_constraints``), random contact thresholds, rest height, blend, Plant Foot, Lower
  Hips (the Hips bone, the armature, an empty); then ``contacts_detect``, ``contact_add`` /
  ``contact_remove``, ``bake`` and ``ik_to_fk`` / ``fk_to_ik``.

Printed, one line per finding (a seed stops at its first): ``EXC`` an operator's traceback, an
"unexpected error" report, or a traceback Python printed while it ran; ``WRONG`` a refusal blaming
something the user did not do (a tracker "not calibrated": the bake calibrates what it solves);
``UNCLEAR`` a refusal in a core check's words that name no setting (:data:`UNCLEAR`); ``CHANGED`` an operator
that refused but changed the scene (objects and their matrices, pose channels, constraints, keys,
markers, Articulate settings); ``NAN`` a successful operator that left NaN or infinite keys on
the rig or its controls (trackers read from a CSV with NaN cells excluded), or NaN in its report's
numbers. Refusals with a message about the input are fine. With ``--seeds`` each operator run is
printed too.

A development tool: its findings become tests (``tests/blender/test_fullbody_bake.py``,
``tests/blender/test_contacts.py``, ``tests/blender/test_operator_failures.py``).
"""

from __future__ import annotations

import argparse
import importlib
import io
import json
import math
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="articulate-fuzz-"))
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "blender")]  # the test harness's differences

import bpy  # noqa: E402
import numpy as np  # noqa: E402
from mathutils import Euler, Matrix  # noqa: E402
from test_operator_failures import differences  # noqa: E402  (where two snapshots differ)

import cli  # noqa: E402

compat = None  # the add-on's operators.compat, set by main()
transaction = None  # the add-on's operators.transaction (its rna_state), set by main()
VERBOSE = False
TMP = Path(tempfile.mkdtemp(prefix="articulate-fuzz-body-"))


# Refusals passing on a core check's words that name no setting of the panel (the user cannot tell what to change).
UNCLEAR = ("clearance must be", "pose, got shape (4, 4)")


class Finding(Exception):
    """Something this script reports for the seed."""


# ---------------------------------------------------------------------------------------------
# The scene's snapshot: what a refused operator must leave as it was.

def _nums(values) -> tuple:
    """Numbers (a vector, a matrix) as a comparable tuple: NaN equal to NaN."""
    a = np.asarray(values, dtype=float).ravel()
    return tuple("nan" if math.isnan(x) else x for x in a.tolist())


def _keys(fc) -> tuple:
    co = np.empty(2 * len(fc.keyframe_points), dtype=np.float32)
    fc.keyframe_points.foreach_get("co", co)
    return (fc.data_path, fc.array_index, fc.mute, co.tobytes())


def _object(obj) -> dict:
    adt = obj.animation_data
    out = {
        "parent": (obj.parent.name if obj.parent else None, obj.parent_bone),
        "transform": (_nums(obj.location), _nums(obj.rotation_euler), _nums(obj.rotation_quaternion),
                      obj.rotation_mode, _nums(obj.scale), _nums(obj.matrix_world)),
        "action": (adt is not None, adt.action.name if adt is not None and adt.action else None),
        "constraints": tuple((c.name, c.type, c.mute, c.influence) for c in obj.constraints),
        "mode": obj.mode,
    }
    if obj.type == "ARMATURE":
        out["articulate"] = transaction.rna_state(obj.articulate)
        out["pose"] = {pb.name: (pb.rotation_mode, _nums(pb.location), _nums(pb.rotation_quaternion),
                                 _nums(pb.rotation_euler), _nums(pb.rotation_axis_angle), _nums(pb.scale),
                                 tuple((c.name, c.type, c.mute, c.influence) for c in pb.constraints),
                                 tuple((k, pb[k]) for k in pb.keys() if isinstance(pb[k], (int, float))))
                       for pb in obj.pose.bones}
    return out


def snapshot() -> dict:
    scene = bpy.context.scene
    scene.frame_set(scene.frame_current)  # evaluated as a run that restores its frame leaves it
    return {
        "data": {n: sorted(i.name for i in getattr(bpy.data, n)) for n in ("objects", "actions", "collections",
                                                                            "meshes", "armatures")},
        "objects": {o.name: _object(o) for o in bpy.data.objects},
        "actions": {a.name: sorted(_keys(fc) for fc in compat.action_fcurves(a)) for a in bpy.data.actions},
        "scene": (scene.frame_current, scene.frame_start, scene.frame_end, scene.render.fps, scene.render.fps_base,
                  sorted((m.name, m.frame) for m in scene.timeline_markers), transaction.rna_state(scene.articulate)),
        "active": (bpy.context.object.name if bpy.context.object else None, bpy.context.mode),
    }


# ---------------------------------------------------------------------------------------------
# Checks after an operator: NaN keys, NaN in its report.

def nan_keys(skip: set[str]) -> list[str]:
    """Animated objects' channels holding a non-finite key or handle (objects named in ``skip`` left out)."""
    out = []
    for obj in bpy.data.objects:
        if obj.name in skip or obj.animation_data is None:
            continue
        for fc in compat.iter_fcurves(obj):
            n = len(fc.keyframe_points)
            for attr in ("co", "handle_left", "handle_right"):
                co = np.empty(2 * n, dtype=np.float32)
                fc.keyframe_points.foreach_get(attr, co)
                if not np.isfinite(co).all():
                    out.append(f"{obj.name}: {fc.data_path}[{fc.array_index}] {attr}")
                    break
    return out


def nan_numbers(data, path: str = "") -> list[str]:
    """Paths of the non-finite numbers in a report."""
    if isinstance(data, float):
        return [] if math.isfinite(data) else [path or "/"]
    if isinstance(data, dict):
        return [p for k, v in data.items() for p in nan_numbers(v, f"{path}/{k}")]
    if isinstance(data, list):
        found = [p for i, v in enumerate(data) for p in nan_numbers(v, f"{path}[{i}]")]
        return found[:1] + ([f"... {len(found) - 1} more"] if len(found) > 1 else [])
    return []


class Run:
    """One seed's operator runs: each checked for tracebacks, refusals that changed the scene, and NaN."""

    def __init__(self, seed: int):
        self.seed = seed
        self.skip_nan: set[str] = set()  # objects whose keys may hold NaN by design (tracker dropouts)

    def op(self, name: str, report: Path | None = None, **kwargs) -> bool:
        """Run ``bpy.ops.articulate.<name>(**kwargs)``; True when it finished. Raises Finding."""
        before = snapshot()
        if report is not None:
            kwargs["report_path"] = str(report)
            report.unlink(missing_ok=True)
        captured, saved = io.StringIO(), sys.stderr
        sys.stderr = captured
        message = ""
        try:
            result = getattr(bpy.ops.articulate, name)(**kwargs)
        except RuntimeError as err:
            message = str(err)
            if "Traceback" in message or "unexpected error" in message:
                changed = differences(before, snapshot())
                raise Finding(f"EXC {name}({_args(kwargs)}): {_tail(message)}"
                              + (f"\n    and the scene changed: {changed}" if changed else "")) from None
            if "was not calibrated" in message:  # the bake calibrates the trackers it passes: never the user's fault
                raise Finding(f"WRONG {name}({_args(kwargs)}): {message.strip()[:300]}") from None
            if any(text in message for text in UNCLEAR):
                raise Finding(f"UNCLEAR {name}({_args(kwargs)}): {message.strip()[:300]}") from None
            result = {"CANCELLED"}
        except Exception as err:  # noqa: BLE001 (anything else is a finding)
            raise Finding(f"EXC {name}({_args(kwargs)}): {type(err).__name__}: {err}\n"
                          f"{traceback.format_exc(limit=-4)}") from None
        finally:
            sys.stderr = saved
        printed = captured.getvalue()
        if "Traceback" in printed:
            raise Finding(f"EXC {name}({_args(kwargs)}) printed: {_tail(printed)}")
        done = "FINISHED" in result
        if VERBOSE:
            print(f"  {name}({_args(kwargs)}) -> {sorted(result)} {message.strip()[:300]}", flush=True)
        if not done:
            after = snapshot()
            changed = differences(before, after)
            if changed:
                raise Finding(f"CHANGED {name}({_args(kwargs)}) refused ({message.strip()[:300]!r}) but changed "
                              f"{changed}")
            return False
        bad = nan_keys(self.skip_nan)
        if bad:
            raise Finding(f"NAN {name}({_args(kwargs)}) left non-finite keys: {bad[:4]}")
        if report is not None and report.exists():
            data = json.loads(report.read_text())
            found = nan_numbers(data)
            if name == "body_bake" and not self.skip_nan:
                found += [f"/world_error_m[{i}]" for i, row in enumerate(data.get("world_error_m", []))
                          if any(v is None for v in row)][:1]
            if found:
                raise Finding(f"NAN {name}({_args(kwargs)}) report has non-finite numbers at {found[:4]}")
        return True


def _args(kwargs: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in kwargs.items() if k != "report_path")


def _tail(text: str, lines: int = 8) -> str:
    return "\n    ".join(text.strip().splitlines()[-lines:])


# ---------------------------------------------------------------------------------------------
# Building: armatures, keys.

def make_armature(name: str, bones: list[dict], rng) -> bpy.types.Object:
    """An armature with ``bones``: dicts of name, head, tail, parent (name or None), roll, connect."""
    data = bpy.data.armatures.new(name)
    arm = bpy.data.objects.new(name, data)
    bpy.context.scene.collection.objects.link(arm)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    for b in bones:
        eb = data.edit_bones.new(b["name"])
        eb.head, eb.tail = tuple(b["head"]), tuple(b["tail"])
        eb.roll = b.get("roll", 0.0)
    for b in bones:
        if b["parent"] is not None:
            eb = data.edit_bones[b["name"]]
            eb.parent = data.edit_bones[b["parent"]]
            eb.use_connect = bool(b.get("connect")) and np.allclose(b["head"], eb.parent.tail, atol=1e-6)
    bpy.ops.object.mode_set(mode="OBJECT")
    return arm


def key_object(obj: bpy.types.Object, frames, locations, rotations=None) -> None:
    """Key an object's location (N, 3) and, given, its Euler rotation (N, 3) on ``frames``."""
    channels = [compat.Channel("location", i, "Object Transforms") for i in range(3)]
    values = np.asarray(locations, dtype=float)
    if rotations is not None:
        channels += [compat.Channel("rotation_euler", i, "Object Transforms") for i in range(3)]
        values = np.column_stack([values, rotations])
    compat.write_channels(obj, channels, np.asarray(frames, dtype=float), values)


def new_empty(name: str, location=(0.0, 0.0, 0.0)) -> bpy.types.Object:
    obj = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(obj)
    obj.location = tuple(location)
    return obj


def fresh_scene(rng, frames: int) -> bpy.types.Scene:
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = int(rng.choice([24, 25, 30, 60, 120])), 1.0
    if rng.random() < 0.1:
        scene.render.fps, scene.render.fps_base = 30, 1.001
    scene.frame_start, scene.frame_end = 1, frames
    scene.frame_set(1)
    return scene


def select_only(obj) -> None:
    for o in bpy.context.view_layer.objects:
        o.select_set(o == obj)
    bpy.context.view_layer.objects.active = obj


# ---------------------------------------------------------------------------------------------
# Humanoids.

SIDE_X = {"l": 1.0, "r": -1.0}  # Blender rigs face -Y; the character's left is +X


def humanoid_parts(rng) -> tuple[list[dict], dict]:
    """A humanoid's bones in armature space, named by canonical keys, and the drawn options."""
    H = float(rng.choice([rng.uniform(0.5, 2.3), rng.uniform(0.5, 2.3), rng.uniform(0.05, 12.0)]))

    def m(lo=0.8, hi=1.25):
        return float(rng.uniform(lo, hi))

    o = {"H": H, "spine": int(rng.integers(1, 5)), "neck": int(rng.choice([0, 1, 1, 1, 2])),
         "clavicle": rng.random() < 0.8, "toe": rng.random() < 0.75, "root": rng.random() < 0.3,
         "twist": rng.random() < 0.3, "twist_between": rng.random() < 0.15, "fingers": rng.random() < 0.3,
         "extras": rng.random() < 0.3, "apose": float(rng.choice([0.0, rng.uniform(20, 55), rng.uniform(-10, 80)])),
         "asym": rng.random() < 0.2}
    parts = []

    def add(key, head, tail, parent, connect=True):
        parts.append({"key": key, "head": np.array(head, float), "tail": np.array(tail, float),
                      "parent": parent, "connect": connect})

    shin = 0.24 * H * m()
    thigh = 0.25 * H * m()
    ankle_z = 0.045 * H * m()
    hip_z = ankle_z + shin + thigh
    hip_w = 0.09 * H * m()
    torso = 0.3 * H * m()
    pelvis_len = 0.06 * H * m()
    if o["root"]:
        add(("root",), (0, 0, 0), (0, 0.2 * H, 0), None, False)
    add(("pelvis",), (0, 0, hip_z), (0, 0, hip_z + pelvis_len), ("root",) if o["root"] else None, False)
    cuts = np.sort(rng.uniform(0, 1, o["spine"] - 1))
    levels = hip_z + pelvis_len + torso * np.concatenate([[0.0], cuts, [1.0]])
    parent = ("pelvis",)
    for i in range(o["spine"]):
        y = float(rng.normal(0, 0.01 * H))
        add(("spine", i + 1), (0, y, levels[i]), (0, y, levels[i + 1]), parent)
        parts[-1]["head"][1] = parts[-2]["tail"][1] if i else 0.0
        parent = ("spine", i + 1)
    chest = levels[-1]
    top = chest
    for i in range(o["neck"]):
        add(("neck", i + 1), (0, 0, top), (0, -0.01 * H, top + 0.05 * H * m() / o["neck"]), parent)
        parent = ("neck", i + 1)
        top = parts[-1]["tail"][2]
    head_len = 0.12 * H * m()
    add(("head",), (0, 0, top), (0, 0, top + head_len), parent, o["neck"] > 0)
    if o["extras"]:
        add(("headtop",), (0, 0, top + head_len), (0, 0, top + head_len * 1.2), ("head",))
        add(("jaw",), (0, -0.02 * H, top + 0.3 * head_len), (0, -0.08 * H, top + 0.2 * head_len), ("head",), False)
        for s in "lr":
            add(("eye", s), (SIDE_X[s] * 0.03 * H, -0.06 * H, top + 0.6 * head_len),
                (SIDE_X[s] * 0.03 * H, -0.09 * H, top + 0.6 * head_len), ("head",), False)
    spine_top = ("spine", o["spine"])
    a = math.radians(o["apose"])
    for s in "lr":
        k = m(0.9, 1.1) if o["asym"] else 1.0
        x = SIDE_X[s]
        shoulder_z = chest - 0.02 * H
        sh = np.array([x * 0.18 * H * m(), float(rng.normal(0, 0.01 * H)), shoulder_z])
        arm_parent = spine_top
        if o["clavicle"]:
            add(("clavicle", s), (x * 0.02 * H, -0.02 * H, shoulder_z), sh, spine_top, False)
            arm_parent = ("clavicle", s)
        d = np.array([x * math.cos(a), 0.0, -math.sin(a)])
        bend = np.array([0.0, float(rng.uniform(-0.02, 0.03)) * H, 0.0])
        elbow = sh + d * 0.17 * H * m() * k + bend
        wrist = elbow + d * 0.15 * H * m() * k
        tip = wrist + d * 0.09 * H * m()
        add(("upper_arm", s), sh, elbow, arm_parent, o["clavicle"])
        fore_parent = ("upper_arm", s)
        if o["twist"]:
            if o["twist_between"]:  # the forearm hangs from a twist bone (looked through by detection)
                add(("twist", s), elbow, elbow + d * 0.03 * H, ("upper_arm", s))
                fore_parent = ("twist", s)
            else:
                add(("twist", s), sh, (sh + elbow) / 2, ("upper_arm", s), False)
        add(("forearm", s), elbow, wrist, fore_parent, not o["twist_between"])
        add(("hand", s), wrist, tip, ("forearm", s))
        if o["fingers"]:
            for f in range(int(rng.integers(1, 6))):
                base = tip + np.array([0.0, (f - 2) * 0.01 * H, 0.0])
                prev = ("hand", s)
                for j in range(3):
                    end = base + d * 0.025 * H
                    add(("finger", s, f, j + 1), base, end, prev, j > 0)
                    prev, base = ("finger", s, f, j + 1), end
        hip = np.array([x * hip_w, 0.0, hip_z])
        knee = np.array([x * hip_w * m(0.8, 1.2), -float(rng.uniform(0.0, 0.03)) * H, ankle_z + shin * k])
        ankle = np.array([x * hip_w * m(0.8, 1.2), 0.0, ankle_z])
        ball = ankle + np.array([0.0, -0.12 * H * m(), -ankle_z * 0.8])
        add(("thigh", s), hip, knee, ("pelvis",), False)
        add(("shin", s), knee, ankle, ("thigh", s))
        add(("foot", s), ankle, ball, ("shin", s))
        if o["toe"]:
            add(("toe", s), ball, ball + np.array([0.0, -0.05 * H, 0.0]), ("foot", s))
            if o["extras"]:
                add(("toe_end", s), ball + np.array([0.0, -0.05 * H, 0.0]), ball + np.array([0.0, -0.07 * H, 0.0]),
                    ("toe", s))
        if o["extras"]:
            add(("heel", s), ankle + np.array([0.0, 0.04 * H, -ankle_z]), ankle + np.array([x * 0.03 * H, 0.04 * H,
                                                                                           -ankle_z]), ("shin", s),
                False)
    return parts, o


def _mixamo(key, o, ns):
    kind, rest = key[0], key[1:]
    side = {"l": "Left", "r": "Right"}.get(rest[0], "") if rest and isinstance(rest[0], str) else ""
    fixed = {"root": "Root", "pelvis": "Hips", "head": "Head", "headtop": "HeadTop_End", "jaw": "Jaw",
             "clavicle": "Shoulder", "upper_arm": "Arm", "forearm": "ForeArm", "hand": "Hand", "thigh": "UpLeg",
             "shin": "Leg", "foot": "Foot", "toe": "ToeBase", "toe_end": "Toe_End", "eye": "Eye", "twist": "ArmTwist",
             "heel": "Heel"}
    if kind == "spine":
        name = "Spine" if rest[0] == 1 else f"Spine{rest[0] - 1}"
    elif kind == "neck":
        name = "Neck" if rest[0] == 1 else f"Neck{rest[0] - 1}"
    elif kind == "finger":
        name = f"{side}Hand{['Thumb', 'Index', 'Middle', 'Ring', 'Pinky'][rest[1]]}{rest[2]}"
        return ns + name
    else:
        name = side + fixed[kind]
    return ns + name


def _rigify(key, o):
    kind, rest = key[0], key[1:]
    side = "." + rest[0].upper() if rest and isinstance(rest[0], str) else ""
    ns, nn = o["spine"], o["neck"]
    if kind == "pelvis":
        return "spine"
    if kind == "spine":
        return f"spine.{rest[0]:03d}"
    if kind == "neck":
        return f"spine.{ns + rest[0]:03d}"
    if kind == "head":
        return f"spine.{ns + nn + 1:03d}"
    if kind == "finger":
        return f"{['thumb', 'f_index', 'f_middle', 'f_ring', 'f_pinky'][rest[1]]}.{rest[2]:02d}{side}"
    return {"root": "root", "headtop": "spine.head_end", "jaw": "jaw", "clavicle": "shoulder", "upper_arm": "upper_arm",
            "forearm": "forearm", "hand": "hand", "thigh": "thigh", "shin": "shin", "foot": "foot", "toe": "toe",
            "toe_end": "toe.001", "eye": "eye", "twist": "upper_arm_twist", "heel": "heel.02"}[kind] + side


def _unreal(key, o):
    kind, rest = key[0], key[1:]
    side = "_" + rest[0] if rest and isinstance(rest[0], str) else ""
    if kind == "spine":
        return f"spine_{rest[0]:02d}"
    if kind == "neck":
        return f"neck_{rest[0]:02d}"
    if kind == "finger":
        return f"{['thumb', 'index', 'middle', 'ring', 'pinky'][rest[1]]}_{rest[2]:02d}{side}"
    return {"root": "root", "pelvis": "pelvis", "head": "head", "headtop": "head_end", "jaw": "jaw",
            "clavicle": "clavicle", "upper_arm": "upperarm", "forearm": "lowerarm", "hand": "hand", "thigh": "thigh",
            "shin": "calf", "foot": "foot", "toe": "ball", "toe_end": "ball_end", "eye": "eye",
            "twist": "upperarm_twist_01", "heel": "heel"}[kind] + side


def _words(key, o, style):
    """Generic names: ``style`` is ".L", "_L", "_l", "Left", "Left " (Unity words), "J_Bip" (VRoid) or "BVH"."""
    kind, rest = key[0], key[1:]
    s = rest[0] if rest and isinstance(rest[0], str) else None
    bvh = style == "BVH"
    words = {"root": "Root", "pelvis": "Hips", "head": "Head", "headtop": "HeadTop", "jaw": "Jaw",
             "clavicle": "Collar" if bvh else "Clavicle", "upper_arm": "Shoulder" if bvh else "UpperArm",
             "forearm": "Elbow" if bvh else "ForeArm", "hand": "Wrist" if bvh else "Hand",
             "thigh": "Hip" if bvh else "Thigh", "shin": "Knee" if bvh else "Shin", "foot": "Ankle" if bvh else "Foot",
             "toe": "Toe", "toe_end": "ToeEnd", "eye": "Eye", "twist": "UpperArmTwist", "heel": "Heel"}
    if style == "Left ":
        words.update(upper_arm="Upper Arm", forearm="Lower Arm", thigh="Upper Leg", shin="Lower Leg", toe="Toes",
                     clavicle="Shoulder", twist="Upper Arm Twist")
    if style == "J_Bip":
        words.update(upper_arm="UpperArm", forearm="LowerArm", thigh="UpperLeg", shin="LowerLeg", toe="ToeBase",
                     clavicle="Shoulder")
    if kind == "spine":
        names = ["Spine", "Chest", "UpperChest", "UpperChest2"] if style in ("J_Bip", "Left ") else \
            (["LowerBack", "Spine", "Spine1", "Chest"] if bvh else ["Spine", "Spine1", "Spine2", "Chest"])
        base = names[rest[0] - 1] if o["spine"] > 1 or style in ("J_Bip", "Left ") else "Spine"
    elif kind == "neck":
        base = "Neck" if rest[0] == 1 else f"Neck{rest[0] - 1}"
    elif kind == "finger":
        base = f"{['Thumb', 'Index', 'Middle', 'Ring', 'Little'][rest[1]]}{rest[2]}"
    else:
        base = words[kind]
    if style == "J_Bip":
        return f"J_Bip_{(s or 'C').upper()}_{base.replace(' ', '')}"
    if s is None:
        return base
    if style in ("Left", "BVH"):
        return ("Left" if s == "l" else "Right") + base
    if style == "Left ":
        return ("Left " if s == "l" else "Right ") + base
    suffix = {".L": ".", "_L": "_", "_l": "_"}[style]
    letter = s.upper() if style != "_l" else s
    return f"{base}{suffix}{letter}"


CONVENTIONS = ("rigify", "mixamo", "unreal", ".L", "_L", "_l", "Left", "Left ", "J_Bip", "BVH", "arbitrary")


def name_bones(parts, o, convention: str, rng) -> dict:
    """Canonical key -> bone name under ``convention``."""
    ns = str(rng.choice(["mixamorig:", "mixamorig12:", "rig:", ""]))
    out, used = {}, set()
    for k, p in enumerate(parts):
        key = p["key"]
        if convention == "rigify":
            name = _rigify(key, o)
        elif convention == "mixamo":
            name = _mixamo(key, o, ns)
        elif convention == "unreal":
            name = _unreal(key, o)
        elif convention == "arbitrary":
            name = str(rng.choice([f"Bone.{k:03d}", f"b{k}", f"joint{k}_x", f"Knochen{k}"]))
        else:
            name = _words(key, o, convention)
        while name in used:
            name += ".x"
        used.add(name)
        out[key] = name
    if convention not in ("arbitrary",) and rng.random() < 0.1:  # the same names in another case
        case = str(rng.choice(["lower", "upper"]))
        out = {k: getattr(v, case)() for k, v in out.items()}
        if len(set(out.values())) < len(out):
            out = {k: f"{v}.{i}" for i, (k, v) in enumerate(out.items())}
    return out


ROLE_OF = {"pelvis": "pelvis", "head": "head", "clavicle": "clavicle", "upper_arm": "upper_arm", "forearm": "forearm",
           "hand": "hand", "thigh": "thigh", "shin": "shin", "foot": "foot", "toe": "toe"}


def true_roles(parts, names) -> dict[str, str]:
    roles = {}
    for p in parts:
        kind, rest = p["key"][0], p["key"][1:]
        if kind == "spine":
            roles[f"spine_{rest[0]}"] = names[p["key"]]
        elif kind == "neck":
            roles["neck" if rest[0] == 1 else f"neck_{rest[0]}"] = names[p["key"]]
        elif kind in ROLE_OF:
            roles[ROLE_OF[kind] + (f"_{rest[0]}" if rest else "")] = names[p["key"]]
    return roles


def build_humanoid(rng) -> tuple[bpy.types.Object, dict, dict, str]:
    parts, o = humanoid_parts(rng)
    convention = str(rng.choice(CONVENTIONS))
    names = name_bones(parts, o, convention, rng)
    random_roll = rng.random() < 0.5
    bones = [{"name": names[p["key"]], "head": p["head"], "tail": p["tail"],
              "parent": names[p["parent"]] if p["parent"] is not None else None, "connect": p["connect"],
              "roll": float(rng.uniform(-math.pi, math.pi)) if random_roll else 0.0} for p in parts]
    arm = make_armature("Body", bones, rng)
    roles = true_roles(parts, names)
    modes = ["QUATERNION", "XYZ", "ZXY", "YXZ", "AXIS_ANGLE"]
    mixed = rng.random() < 0.4
    for pb in arm.pose.bones:
        if mixed:
            pb.rotation_mode = str(rng.choice(modes))
        if rng.random() < 0.05:
            pb.bone.use_inherit_rotation = False
        if rng.random() < 0.05:
            pb.bone.inherit_scale = str(rng.choice(["NONE", "ALIGNED", "FIX_SHEAR", "NONE_LEGACY"]))
        if rng.random() < 0.05:  # a pose off rest, unkeyed
            pb.rotation_mode = "XYZ"
            pb.rotation_euler = tuple(rng.normal(0, 0.2, 3))
    if rng.random() < 0.5:
        arm.location = tuple(rng.uniform(-3, 3, 3) * (1, 1, 0.2))
    if rng.random() < 0.5:
        arm.rotation_euler = (0.0, 0.0, float(rng.uniform(-math.pi, math.pi)))
    if rng.random() < 0.1:
        arm.rotation_euler = tuple(rng.normal(0, 0.4, 3))
    if rng.random() < 0.3:
        arm.scale = (float(rng.uniform(0.2, 4.0)),) * 3
    if rng.random() < 0.08:
        arm.scale = tuple(rng.uniform(0.5, 2.0, 3))  # non-uniform
    o["convention"] = convention
    bpy.context.view_layer.update()
    return arm, roles, o, convention


def _bone_world(arm, bone: str) -> np.ndarray:
    return np.array(arm.matrix_world @ arm.pose.bones[bone].matrix)


def tracker_motion(rng, arm, roles, frames: int, fps: float, o: dict) -> dict[str, np.ndarray]:
    """Per tracker name (N, 4, 4) world poses over ``frames`` frames: a walk, hands swinging, and trouble."""
    bpy.context.scene.frame_set(1)
    W = np.array(arm.matrix_world)
    size = float(np.cbrt(abs(np.linalg.det(W[:3, :3])))) * o["H"]  # the character's height in the world
    fwd = W[:3, :3] @ np.array([0.0, -1.0, 0.0])
    fwd[2] = 0.0
    fwd = fwd / np.linalg.norm(fwd) if np.linalg.norm(fwd) > 1e-6 else np.array([0.0, -1.0, 0.0])
    side = np.cross(np.array([0.0, 0.0, 1.0]), fwd)
    t = np.arange(frames) / fps
    speed = float(rng.choice([0.0, rng.uniform(0.2, 1.6)])) * size / 1.7
    cadence = float(rng.uniform(1.4, 2.2))
    turn = float(rng.choice([0.0, 0.0, rng.uniform(-2.0, 2.0)])) * t / max(t[-1], 1e-6)
    crouch = (rng.random() < 0.2) * float(rng.uniform(0.1, 0.5)) * size * np.sin(np.pi * t / max(t[-1], 1e-6)) ** 2
    out = {}
    ref = {n: _bone_world(arm, roles[n]) for n in ("head", "hand_l", "hand_r", "pelvis", "foot_l", "foot_r")}
    base = ref["head"][:3, 3].copy()
    for name, M0 in ref.items():
        p0 = M0[:3, 3].copy()
        if rng.random() < 0.3:  # a headset in front of the head, a controller in the palm
            p0 += rng.normal(0, 0.05, 3) * size / 1.7
        if rng.random() < 0.05:  # a tracker well away from its bone at the reference frame
            p0 += rng.normal(0, 0.5, 3) * size
        rel = p0 - base
        c, s = np.cos(turn), np.sin(turn)
        rot_rel = np.stack([c * rel[0] - s * rel[1], s * rel[0] + c * rel[1], np.full_like(t, rel[2])], axis=1)
        p = base + rot_rel + np.outer(speed * t, fwd)
        phase = 2 * np.pi * cadence * t
        if name == "head":
            p[:, 2] += 0.015 * size / 1.7 * np.cos(phase) - crouch
            p += np.outer(0.02 * size / 1.7 * np.sin(phase / 2), side)
        elif name.startswith("hand"):
            sign = 1.0 if name == "hand_l" else -1.0
            p += np.outer(0.15 * size / 1.7 * sign * np.sin(phase / 2), fwd)
            p[:, 2] -= crouch
            what = rng.random()
            if what < 0.15:  # out of reach: far from the shoulder
                k = slice(frames // 3, frames // 3 + max(2, frames // 4))
                p[k] += np.asarray(rng.normal(0, 1, 3)) / 1.7 * size * 1.2
            elif what < 0.25:  # overhead
                p[:, 2] += 0.5 * size * np.sin(np.pi * t / max(t[-1], 1e-6)) ** 2
            elif what < 0.35:  # a dropout: keyed constant
                p[:] = p[0]
            elif what < 0.4:  # constant over a stretch
                a = int(rng.integers(0, frames))
                p[a:] = p[a]
        elif name == "pelvis":
            p[:, 2] += 0.01 * size / 1.7 * np.cos(phase) - crouch
        else:  # feet: stand, swing
            sign = 0.0 if name == "foot_l" else np.pi
            lift = np.clip(np.sin(phase / 2 + sign), 0, None)
            p += np.outer(0.15 * size / 1.7 * np.sin(phase / 2 + sign), fwd) * (speed > 0)
            p[:, 2] += 0.08 * size / 1.7 * lift ** 2 * (speed > 0)
        if rng.random() < 0.05:  # a jump of the tracker on one frame
            p[int(rng.integers(0, frames))] += rng.normal(0, 0.4, 3) * size
        R = np.repeat(M0[None, :3, :3], frames, axis=0)
        if rng.random() < 0.5:
            wobble = rng.normal(0, 0.1, 3)
            for i in range(frames):
                R[i] = np.array(Euler(tuple(wobble * np.sin(phase[i] + i * 0.01) + [0, 0, turn[i]]),
                                      "XYZ").to_matrix()) @ R[i]
        R /= np.linalg.norm(R, axis=-2, keepdims=True)  # the bone's scale off: a tracker's rotation
        M = np.repeat(np.eye(4)[None], frames, axis=0)
        M[:, :3, :3], M[:, :3, 3] = R, p
        out[name] = M
    return out


def key_trackers(arm, motion: dict, names: list[str]) -> None:
    for name in names:
        empty = new_empty(f"tracker.{name}")
        M = motion[name]
        rot = np.array([list(Matrix(R.tolist()).to_euler("XYZ")) for R in M[:, :3, :3]])
        rot = np.unwrap(rot, axis=0)
        key_object(empty, np.arange(1, len(M) + 1), M[:, :3, 3], rot)
        setattr(arm.articulate.body, name, empty)


def write_tracker_csv(rng, motion: dict, names: list[str], fps: float, path: Path) -> bool:
    """Write the trackers' poses as a tracker CSV; True when some cells are NaN (dropouts)."""
    fields = ("x", "y", "z", "qw", "qx", "qy", "qz")
    n = len(motion["head"])
    times = np.arange(n) / fps
    if rng.random() < 0.2:
        times = times + rng.uniform(-0.2, 0.2, n) / fps  # uneven stamps
        times = np.maximum.accumulate(times) + np.arange(n) * 1e-6
    times += float(rng.choice([0.0, rng.uniform(-5, 100)]))
    cols = ["time"] + [f"{t}_{f}" for t in names for f in fields]
    rows = []
    for i in range(n):
        row = [f"{times[i]:.6f}"]
        for t in names:
            M = motion[t][i]
            q = Matrix(M[:3, :3].tolist()).to_quaternion()
            row += [f"{v:.6f}" for v in (*M[:3, 3], q.w, q.x, q.y, q.z)]
        rows.append(row)
    dropouts = rng.random() < 0.3
    if dropouts:  # empty or nan cells of one tracker over a few rows
        t = int(rng.integers(0, len(names)))
        a = int(rng.integers(0, n))
        for i in range(a, min(n, a + int(rng.integers(1, 6)))):
            for j in range(7):
                rows[i][1 + 7 * t + j] = str(rng.choice(["", "nan", "NaN"]))
    path.write_text(",".join(cols) + "\n" + "\n".join(",".join(r) for r in rows) + "\n")
    return dropouts


def body_scenario(run: Run, rng) -> None:
    frames = int(rng.integers(12, 49))
    scene = fresh_scene(rng, frames)
    arm, roles, o, convention = build_humanoid(rng)
    fps = scene.render.fps / scene.render.fps_base
    optional = ["pelvis", "foot_l", "foot_r"]
    if rng.random() < 0.05:  # a random subset
        optional = [n for n in optional if rng.random() < 0.5]
    elif rng.random() > 0.05:
        optional = []
    names = ["head", "hand_l", "hand_r"] + optional
    motion = tracker_motion(rng, arm, roles, frames, fps, o)
    body = arm.articulate.body
    select_only(arm)
    if VERBOSE:
        print(f"  humanoid {convention}: {len(arm.data.bones)} bones, H {o['H']:.3g}, trackers {names}, "
              f"{frames} frames at {fps:.4g} fps, object scale {tuple(round(v, 3) for v in arm.scale)}", flush=True)
    if rng.random() < 0.2:
        csv = TMP / f"trackers_{run.seed}.csv"
        if write_tracker_csv(rng, motion, names, fps, csv):  # NaN keys on the trackers, as the file has them
            run.skip_nan.update(f"tracker.{n}" for n in names)
        start = int(rng.choice([1, 1, rng.integers(-20, 40)]))
        if not run.op("trackers_import", filepath=str(csv), start_frame=start,
                      use_file_timing=bool(rng.random() < 0.7)):
            return
        body.reference_frame = scene.frame_start
    else:
        key_trackers(arm, motion, names)
        body.reference_frame = int(rng.choice([1, 1, 1, rng.integers(1, frames + 1), rng.integers(-5, frames + 8)]))
    if rng.random() < 0.3:
        body.floor = float(rng.choice([0.0, rng.normal(0, 0.3)]))
    if rng.random() < 0.2:
        body.offset_warning = float(rng.choice([0.0, rng.uniform(0, 1)]))
    # Roles: detected, set by hand (always for arbitrary names), or left for the bake to detect.
    how = rng.random()
    if convention == "arbitrary" or how < 0.15:
        if convention == "arbitrary" and rng.random() < 0.3:
            run.op("body_detect_roles")  # refused: nothing to recognise
        for role, bone in roles.items():
            item = body.roles.add()
            item.role, item.bone = role, bone
        if rng.random() < 0.1:  # a bone that is not there
            body.roles[int(rng.integers(0, len(body.roles)))].bone = "NoSuchBone"
    elif how < 0.85:
        run.op("body_detect_roles")
    if rng.random() < 0.1:  # animated object transforms: Align refuses
        arm.keyframe_insert("location", frame=1)
    if rng.random() < 0.35:
        run.op("body_align", by=str(rng.choice(["HEIGHT", "SPAN"])))
    step = int(rng.choice([1, 1, 1, 2, 3]))
    first, last = scene.frame_start, scene.frame_end
    if rng.random() < 0.2:
        first, last = sorted(int(v) for v in rng.integers(first - 3, last + 4, 2))
    rng_range = {"use_scene_settings": False, "frame_start": first, "frame_end": last}
    if rng.random() < 0.15:
        run.op("body_steps_detect", **rng_range)  # on the rest pose: feet standing on every frame
    report = TMP / f"body_{run.seed}.json"
    baked = run.op("body_bake", report, frame_step=step, **rng_range)
    if rng.random() < 0.5:
        if run.op("body_steps_detect", **rng_range) and rng.random() < 0.3:
            body.contacts_l[0].frame_end = body.contacts_l[0].frame_start - int(rng.integers(0, 3))
        run.op("body_bake", report, frame_step=step, **rng_range)
    elif rng.random() < 0.3:
        for _ in range(int(rng.integers(1, 4))):
            scene.frame_set(int(rng.integers(first, last + 1)))
            foot = str(rng.choice(["l", "r"]))
            run.op("body_contact_add", foot=foot)
            items = getattr(body, f"contacts_{foot}")
            if len(items):
                items[-1].frame_end = items[-1].frame_start + int(rng.integers(-2, 10))
        if rng.random() < 0.3:
            run.op("body_contact_remove", foot=str(rng.choice(["l", "r"])))
        body.use_steps = bool(rng.random() < 0.8)
        scene.frame_set(1)
        run.op("body_bake", report, frame_step=step, **rng_range)
    if baked and rng.random() < 0.35:  # IK constraints on the arms, then IK/FK both ways
        for s in "lr":
            if rng.random() < 0.8:
                con = arm.pose.bones[roles[f"forearm_{s}"]].constraints.new("IK")
                target = getattr(body, f"hand_{s}")
                if target.name in run.skip_nan and rng.random() < 0.7:  # not the tracker with NaN keys
                    target = new_empty(f"ik_target.{s}", tuple(target.matrix_world.translation))
                con.target, con.chain_count = target, int(rng.choice([2, 2, 3, 0]))
                con.use_tail = bool(rng.random() < 0.8)
                if rng.random() < 0.3:
                    con.pole_target = new_empty(f"pole.{s}", tuple(np.array(arm.matrix_world.translation)
                                                                     + rng.normal(0, 1, 3)))
                    con.pole_angle = float(rng.uniform(-3, 3))
                if VERBOSE:
                    print(f"  IK on {roles[f'forearm_{s}']}: chain_count {con.chain_count}, use_tail {con.use_tail}, "
                          f"pole {con.pole_target is not None}", flush=True)
        select_only(arm)
        ik = TMP / f"ikfk_{run.seed}.json"
        if run.op("ik_to_fk", ik, **{**rng_range, "frame_start": first, "frame_end": min(last, first + 15)}):
            run.op("fk_to_ik", ik, **{**rng_range, "frame_start": first, "frame_end": min(last, first + 15)})


# ---------------------------------------------------------------------------------------------
# Walking legs with contacts.

def walk_path(rng, frames: int, ground_at, rest: float, heading: float, start, scale: float) -> np.ndarray:
    """(frames, 3) an ankle target: stands (jitter, dips) and swings forward, over the ground ``ground_at(x, y)``."""
    cycle = int(rng.integers(12, 40))
    stance = int(rng.integers(3, cycle))
    step = float(rng.uniform(0.0, 0.8)) * scale
    lift = float(rng.uniform(0.0, 0.25)) * scale
    jitter = float(rng.choice([0.0, 0.001, 0.003, 0.01])) * scale
    offset = int(rng.integers(0, cycle))
    d = np.array([math.cos(heading), math.sin(heading), 0.0])
    out = np.zeros((frames, 3))
    for i in range(frames):
        k, u = divmod(i + offset, cycle)
        if u < stance:
            s, z = 0.0, 0.0
        else:
            s = (u - stance + 1) / (cycle - stance + 1)
            s = s * s * (3 - 2 * s)
            z = lift * math.sin(math.pi * s)
        xy = np.asarray(start[:2]) + d[:2] * step * (k + s)
        if u < stance:
            xy = xy + rng.normal(0, jitter, 2)
        out[i] = (*xy, ground_at(*xy) + rest + z)
        if u < stance and rng.random() < 0.05:
            out[i, 2] -= float(rng.uniform(0, 0.04)) * scale  # a dip into the ground
    return out


def ground_scene(rng, scale: float):
    """A ground collection of boxes, slopes and maybe a floor, and its height function (None: nothing under)."""
    coll = bpy.data.collections.new("Ground")
    bpy.context.scene.collection.children.link(coll)
    pieces = []
    floor = rng.random() < 0.7
    if floor:
        pieces.append(((-20.0, 20.0), (-20.0, 20.0), float(rng.choice([0.0, rng.normal(0, 0.2)])) * scale, 0.0))
    for _ in range(int(rng.integers(0 if floor else 1, 5))):
        x0 = float(rng.uniform(-1, 2)) * scale
        y0 = float(rng.uniform(-1, 0.5)) * scale
        w = float(rng.uniform(0.1, 1.5)) * scale
        pieces.append(((x0, x0 + w), (y0, y0 + w * 2), float(rng.uniform(0, 0.3)) * scale,
                       float(rng.choice([0.0, rng.uniform(-0.4, 0.4)]))))
    for k, ((x0, x1), (y0, y1), z, slope) in enumerate(pieces):
        mesh = bpy.data.meshes.new(f"G{k}")
        zs = [z, z + slope * (x1 - x0), z + slope * (x1 - x0), z]
        mesh.from_pydata([(x0, y0, zs[0]), (x1, y0, zs[1]), (x1, y1, zs[2]), (x0, y1, zs[3])], [], [(0, 1, 2, 3)])
        obj = bpy.data.objects.new(f"G{k}", mesh)
        coll.objects.link(obj)

    def height(x, y):
        best = None
        for (x0, x1), (y0, y1), z, slope in pieces:
            if x0 <= x <= x1 and y0 <= y <= y1:
                h = z + slope * (x - x0)
                best = h if best is None else max(best, h)
        return best if best is not None else 0.0

    if rng.random() < 0.05:  # meshes nowhere under the path
        for obj in coll.objects:
            obj.location.x += 100.0
    if rng.random() < 0.05:  # an empty collection
        for obj in list(coll.objects):
            coll.objects.unlink(obj)
    return coll, height


def legs_scenario(run: Run, rng) -> None:
    frames = int(rng.integers(20, 91))
    scene = fresh_scene(rng, frames)
    fps = scene.render.fps / scene.render.fps_base
    scale = float(rng.choice([1.0, 1.0, rng.uniform(0.05, 5.0)]))
    hip_z = float(rng.uniform(0.4, 1.2)) * scale
    count = int(rng.integers(2, 5))
    two = rng.random() < 0.4
    foot = rng.random() < 0.5
    toe = foot and rng.random() < 0.4
    rest = float(rng.choice([0.0, rng.uniform(0.02, 0.12)])) * scale
    bones = [{"name": "Hips", "head": np.array([0.0, 0.0, hip_z]), "tail": np.array([0.0, 0.0, hip_z + 0.15 * scale]),
              "parent": None, "roll": float(rng.uniform(-3, 3)) if rng.random() < 0.3 else 0.0}]
    sides = ["L", "R"] if two else ["L"]
    tips = {}
    for side in sides:
        x = (0.1 if side == "L" else -0.1) * scale
        top = np.array([x, 0.0, hip_z])
        bottom = np.array([x, 0.0, rest])
        pts = [top + (bottom - top) * k / count for k in range(count + 1)]
        for k in range(1, count):
            pts[k] = pts[k] + np.array([0.0, float(rng.uniform(-0.05, 0.02)) * scale, 0.0])
        parent = "Hips"
        for k in range(count):
            name = f"Leg{k}.{side}"
            bones.append({"name": name, "head": pts[k], "tail": pts[k + 1], "parent": parent,
                          "connect": k > 0, "roll": float(rng.uniform(-3, 3)) if rng.random() < 0.3 else 0.0})
            parent = name
        tips[side] = parent
        if foot:
            ball = pts[-1] + np.array([0.0, -0.14, -0.9 * rest]) * np.array([scale, scale, 1.0])
            bones.append({"name": f"Foot.{side}", "head": pts[-1], "tail": ball, "parent": parent, "connect": True})
            if toe:
                bones.append({"name": f"Toe.{side}", "head": ball, "tail": ball + np.array([0, -0.05 * scale, 0]),
                              "parent": f"Foot.{side}", "connect": True})
    arm = make_armature("Leg", bones, rng)
    for pb in arm.pose.bones:
        if rng.random() < 0.3:
            pb.rotation_mode = str(rng.choice(["XYZ", "ZXY", "AXIS_ANGLE", "QUATERNION"]))
    if rng.random() < 0.2:
        arm.rotation_euler = (0.0, 0.0, float(rng.uniform(-3, 3)))
    if rng.random() < 0.2:
        arm.location = tuple(rng.uniform(-1, 1, 3) * (1, 1, 0))
    if rng.random() < 0.1:
        arm.scale = (float(rng.uniform(0.5, 2.0)),) * 3
    heading = float(rng.uniform(-math.pi, math.pi)) if rng.random() < 0.3 else 0.0
    use_collection = rng.random() < 0.35
    plane = float(rng.choice([0.0, 0.0, rng.normal(0, 0.2)])) * scale
    if use_collection:
        coll, ground_at = ground_scene(rng, scale)
    else:
        coll = None

        def ground_at(x, y):
            return plane
    speed = float(rng.choice([0.0, rng.uniform(0.1, 1.5)])) * scale
    t = np.arange(frames) / fps
    if rng.random() < 0.7:  # the hips walk (the Hips bone points up: world x is its local x)
        up = float(rng.choice([0.0, 0.0, rng.uniform(-0.1, 0.15)])) * scale
        values = np.column_stack([speed * t * math.cos(heading), up + 0 * t, -speed * t * math.sin(heading)])
        channels = [compat.Channel(compat.bone_data_path("Hips", "location"), i, "Hips") for i in range(3)]
        compat.write_channels(arm, channels, t * fps + 1.0, values)
    select_only(arm)
    bpy.context.view_layer.update()
    targets = {}
    for side in sides:
        pb = arm.pose.bones[tips[side]]
        start = np.array(arm.matrix_world @ pb.tail)
        path = walk_path(rng, frames, ground_at, rest, heading, start, scale)
        target = new_empty(f"Target.{side}")
        rot = None
        if rng.random() < 0.2:
            rot = np.column_stack([0.2 * np.sin(t * 3), 0 * t, heading + 0 * t])
        key_object(target, np.arange(1, frames + 1), path, rot)
        targets[side] = target
    via_constraints = rng.random() < 0.4
    if via_constraints:
        bpy.ops.object.mode_set(mode="POSE")
        for side in sides:
            tip = tips[side]
            owner = arm.pose.bones[f"Foot.{side}"] if foot and rng.random() < 0.3 else arm.pose.bones[tip]
            con = owner.constraints.new("IK")
            con.target = targets[side]
            con.use_tail = owner.name == tip
            con.chain_count = int(rng.choice([count, count, 0, count + 1, 1]))
            if rng.random() < 0.2:
                con.use_rotation = True
            if rng.random() < 0.2:
                con.pole_target = new_empty(f"Pole.{side}", (0.0, -1.0 * scale, hip_z / 2))
        bpy.ops.object.mode_set(mode="OBJECT")
        select_only(arm)
        if not run.op("chains_from_constraints"):
            return
    else:
        for side in sides:
            arm.data.bones.active = arm.data.bones[tips[side]]
            if not run.op("chain_add"):
                return
            chain = arm.articulate.chains[arm.articulate.active_chain]
            chain.target = targets[side]
            chain.chain_length = int(rng.choice([count, count, 0, count - 1]))
            if rng.random() < 0.15:
                chain.root_bone = f"Leg0.{side}"
            if rng.random() < 0.15:
                chain.use_rotation = True
            if rng.random() < 0.1:
                chain.use_stretch = True
                for k in range(count):
                    arm.pose.bones[f"Leg{k}.{side}"].ik_stretch = float(rng.uniform(0, 1))
    hips_choice = rng.random()
    hips_obj = None
    if hips_choice < 0.15:
        hips_obj = new_empty("HipsEmpty")
        arm.parent = hips_obj
    for chain in arm.articulate.chains:
        if rng.random() < 0.3:
            chain.contact_height = float(rng.choice([1e-6, rng.uniform(0.001, 0.2)])) * scale
        if rng.random() < 0.3:
            chain.contact_speed = float(rng.choice([1e-6, rng.uniform(0.01, 2.0)])) * scale
        if rng.random() < 0.3:
            chain.contact_min_duration = float(rng.choice([0.0, rng.uniform(0, 1.5)]))
        if rng.random() < 0.3:
            chain.rest_height_auto = False
            chain.rest_height = float(rng.choice([rest, rng.uniform(0, 0.3) * scale]))
        if rng.random() < 0.3:
            chain.contact_blend = float(rng.choice([0.0, rng.uniform(0, 1.5)]))
        if use_collection:
            chain.ground = "COLLECTION"
            chain.ground_collection = coll if rng.random() < 0.95 else None
        else:
            chain.ground_height = plane
        if foot and rng.random() < 0.3:
            chain.use_foot = False
        if foot and rng.random() < 0.15:
            chain.foot_bone = str(rng.choice([f"Foot.{chain.name[-1]}", "Toe.L", "Hips", "Nope"]))
        if hips_choice < 0.15:
            chain.hips = hips_obj
        elif hips_choice < 0.45:
            chain.hips, chain.hips_bone = arm, "Hips"
        elif hips_choice < 0.5:
            chain.hips = arm
        if rng.random() < 0.1:
            chain.solver = str(rng.choice([i.identifier for i in chain.bl_rna.properties["solver"].enum_items]))
    first, last = 1, frames
    if rng.random() < 0.2:
        first, last = sorted(int(v) for v in rng.integers(-3, frames + 4, 2))
    span = {"use_scene_settings": False, "frame_start": first, "frame_end": last}
    if rng.random() < 0.2:
        scene.articulate.frame_range = "CUSTOM"
        scene.articulate.frame_start, scene.articulate.frame_end = first, last
        span = {}
    detect = rng.random()
    if detect < 0.4:
        for k in range(len(arm.articulate.chains)):
            arm.articulate.active_chain = k
            run.op("contacts_detect", add_markers=bool(rng.random() < 0.7), **span)
    elif detect < 0.7:
        for chain in arm.articulate.chains:
            chain.use_contacts = True
        run.op("contacts_detect", all_chains=True, **span)
    elif detect < 0.8:
        run.op("contacts_detect", chain=arm.articulate.chains[0].name, **span)
    elif detect < 0.9:
        arm.articulate.chains[0].use_contacts = True  # on, its list empty: only the ground is kept
    if rng.random() < 0.3:
        arm.articulate.active_chain = int(rng.integers(0, len(arm.articulate.chains)))
        for _ in range(int(rng.integers(1, 4))):
            scene.frame_set(int(rng.integers(first - 2, last + 3)))
            run.op("contact_add")
            chain = arm.articulate.chains[arm.articulate.active_chain]
            chain.contacts[-1].frame_end = chain.contacts[-1].frame_start + int(rng.integers(-2, 12))
            chain.use_contacts = True
        if rng.random() < 0.5:
            chain.active_contact = int(rng.integers(0, len(chain.contacts) + 1))
            run.op("contact_remove")
    scene.frame_set(1)
    report = TMP / f"bake_{run.seed}.json"
    bake_args = dict(span)
    step = int(rng.integers(2, 4)) if rng.random() < 0.2 else 1
    tolerance = float(rng.uniform(0, 0.01)) * scale if rng.random() < 0.15 else 0.0
    if span:
        bake_args.update(frame_step=step, key_tolerance=tolerance)
    else:
        scene.articulate.frame_step, scene.articulate.key_tolerance = step, tolerance
    run.op("bake", report, **bake_args)
    if via_constraints and rng.random() < 0.5:
        ik = TMP / f"ikfk_{run.seed}.json"
        if run.op("ik_to_fk", ik, **span):
            run.op("fk_to_ik", ik, **span)


def check(seed: int) -> str:
    rng = np.random.default_rng(seed)
    run = Run(seed)
    try:
        if rng.random() < 2 / 3:
            body_scenario(run, rng)
        else:
            legs_scenario(run, rng)
    except Finding as found:
        return str(found)
    except Exception as err:  # noqa: BLE001 (the generator's own failure: shown, so it gets fixed)
        return f"GENERATOR {type(err).__name__}: {err}\n{traceback.format_exc(limit=-3)}"
    return ""


def main() -> int:
    global compat, transaction, VERBOSE
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=300.0, help="stop starting new seeds after this long")
    parser.add_argument("--first-seed", type=int, default=1000)
    parser.add_argument("--seeds", default="", help="comma-separated seeds to run (verbose) instead")
    args = parser.parse_args()
    addon = cli.ensure_addon()
    compat = importlib.import_module(f"{addon.__name__}.operators.compat")
    transaction = importlib.import_module(f"{addon.__name__}.operators.transaction")
    chosen = [int(s) for s in args.seeds.split(",") if s]
    VERBOSE = bool(chosen)
    seeds = iter(chosen) if chosen else iter(range(args.first_seed, sys.maxsize))
    end = time.time() + args.seconds
    runs = found = 0
    for seed in seeds:
        if not chosen and time.time() > end:
            break
        if VERBOSE:
            print(f"seed {seed}:", flush=True)
        finding = check(seed)
        runs += 1
        if finding:
            found += 1
            print(f"seed {seed}: {finding}", flush=True)
    print(f"{runs} seeds, {found} findings")
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.exit(code)
