# SPDX-License-Identifier: GPL-3.0-or-later
"""Data stored on rigs, read and validated in one place: a damaged entry is a clear error, never a traceback.

A robot rig stores its description (``articulate_robot``: name, joints and their limits) and its
kinematic model (``articulate_robot_model``) as JSON custom properties; armatures store chains,
branch lists and role maps in their Articulate settings. Any of these can be damaged: edited by
hand or by a script, a bone or target deleted or renamed after they were stored. Readers here
check what they return and raise :class:`BridgeError` saying what is damaged and how to repair
it.
"""

from __future__ import annotations

import json
import math
import os
from typing import TYPE_CHECKING

import bpy

from .errors import BridgeError

if TYPE_CHECKING:  # the model (and the URDF reader under it) is imported when a robot rig is read
    from ...ik_core.robots.model import RobotModel

INFO_KEY = "articulate_robot"  # the robot description a rig was built with
MODEL_KEY = "articulate_robot_model"  # the RobotModel JSON a rig was built from
JOINT_KINDS = ("revolute", "continuous", "prismatic")
REBUILD = "add the robot again (Add Robot, or Import URDF from its file) and use the new rig"
REPAIR = "press Repair Robot Data in the Robot panel"


def damaged(arm: bpy.types.Object, what: str, problem: str, repair: str = REBUILD) -> BridgeError:
    """The error for damaged stored data: which rig, which entry, what is wrong, how to repair it."""
    return BridgeError(f"robot rig {arm.name!r}: {what} is damaged ({problem}); {repair}")


def _number_or_none(value) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and not
                             math.isnan(value))


def _joint_problem(k: int, joint) -> str:
    """Why the ``k``-th joint entry of a robot description is unusable ("" when it is fine)."""
    if not isinstance(joint, dict):
        return f"joint {k + 1} is a {type(joint).__name__}, not an entry"
    name = joint.get("name")
    if not isinstance(name, str) or not name:
        return f"joint {k + 1} has no name"
    if joint.get("kind") not in JOINT_KINDS:
        return f"joint {name!r} has kind {joint.get('kind')!r}, not one of {', '.join(JOINT_KINDS)}"
    for key in ("lower", "upper", "velocity", "acceleration"):
        if not _number_or_none(joint.get(key)):
            return f"joint {name!r} has {key} {joint.get(key)!r}, not a number"
    if "velocity" not in joint:
        return f"joint {name!r} has no velocity limit"
    if "urdf_name" in joint and not (isinstance(joint["urdf_name"], str) and joint["urdf_name"]):
        return f"joint {name!r} has URDF name {joint['urdf_name']!r}, not a name"
    return ""


def missing_bones(arm: bpy.types.Object, names) -> list[str]:
    """The ``names`` that are not bones of ``arm`` (deleted or renamed since they were stored)."""
    bones = arm.pose.bones if arm.pose is not None else {}
    return [n for n in names if n not in bones]


def check_bones(arm: bpy.types.Object, names, what: str) -> None:
    """Refuse a rig whose stored data names bones it no longer has.

    Raises:
        BridgeError: The missing bones, named.
    """
    missing = missing_bones(arm, names)
    if missing:
        raise damaged(arm, what, f"its joint bone(s) {', '.join(map(repr, missing))} were deleted or renamed",
                      f"rename the bones back, or {REBUILD}")


def robot_info(arm: bpy.types.Object | None) -> dict:
    """The robot description stored on a rig built by ``build_robot_rig``, checked.

    Every joint entry has a name, a kind and numeric limits, and a bone of that name.

    Raises:
        BridgeError: Not a robot rig, or a damaged description (the message says what and how to repair it).
    """
    text = arm.get(INFO_KEY) if arm is not None else None
    if not text:
        name = arm.name if arm is not None else "(none)"
        raise BridgeError(f"{name!r} is not an Articulate robot rig; add one with Add Robot or Import URDF")
    what = f"its robot description (custom property {INFO_KEY!r})"
    try:
        info = json.loads(text) if isinstance(text, str) else None
    except json.JSONDecodeError as err:
        raise damaged(arm, what, f"not JSON: {err}", _info_repair(arm)) from None
    if not isinstance(info, dict):
        raise damaged(arm, what, "not a JSON object", _info_repair(arm))
    joints = info.get("joints")
    if not isinstance(joints, list) or not (joints or _rigid(arm)):
        raise damaged(arm, what, "it lists no joints", _info_repair(arm))
    for k, joint in enumerate(joints):
        if problem := _joint_problem(k, joint):
            raise damaged(arm, what, problem, _info_repair(arm))
    check_bones(arm, [j["name"] for j in joints], what)
    return info


def _rigid(arm: bpy.types.Object) -> bool:
    """Whether the rig's stored model is one rigid body (no moving joint): its description rightly lists no joints."""
    try:
        model = read_model(arm)
    except BridgeError:
        return False
    return model is not None and model.no_tools_reason() is not None


def read_model(arm: bpy.types.Object | None) -> RobotModel | None:
    """The kinematic model stored on a rig as it reads back (its bones not checked); None when none is stored.

    Raises:
        BridgeError: A stored model that does not read back or build its skeleton.
    """
    text = arm.get(MODEL_KEY) if arm is not None else None
    if not text:
        return None
    from ...ik_core.robots.model import RobotModel

    try:
        model = RobotModel.from_json(text)
        _ = model.skeleton.moving_joint_names  # builds the skeleton: a malformed vector fails here
    except Exception as err:  # any malformed entry (a string for a vector, a list for a number) is damage
        raise damaged(arm, f"its stored kinematic model (custom property {MODEL_KEY!r})",
                      str(err) or type(err).__name__, _model_repair(arm)) from None
    return model


def robot_model(arm: bpy.types.Object | None) -> RobotModel | None:
    """The kinematic model stored on a robot rig, checked; None for rigs built before models were stored.

    The model must read back, build its skeleton and have a bone for every moving joint.

    Raises:
        BridgeError: A damaged stored model (the message says what and how to repair it).
    """
    model = read_model(arm)
    if model is not None:
        check_bones(arm, model.skeleton.moving_joint_names,
                    f"its stored kinematic model (custom property {MODEL_KEY!r})")
    return model


def model_source(info: dict | None) -> str:
    """What a rig's model can be read again from: "preset <id>", "URDF <path>" or "" (nothing)."""
    if not isinstance(info, dict):
        return ""
    if isinstance(info.get("preset"), str) and info["preset"]:
        return f"preset {info['preset']}"
    urdf = info.get("urdf")
    if isinstance(urdf, str) and os.path.isfile(urdf):
        return f"URDF {urdf}"
    return ""


def raw_info(arm: bpy.types.Object) -> dict | None:
    """The stored robot description as JSON gives it, unchecked (None when it is not a JSON object)."""
    try:
        info = json.loads(arm.get(INFO_KEY) or "")
    except (TypeError, json.JSONDecodeError):
        return None
    return info if isinstance(info, dict) else None


def _model_repair(arm: bpy.types.Object) -> str:
    source = model_source(raw_info(arm))
    return f"{REPAIR} (it reads the model again from the {source})" if source else REBUILD


def _info_repair(arm: bpy.types.Object) -> str:
    from ...ik_core.robots.model import RobotModel

    try:
        _ = RobotModel.from_json(arm.get(MODEL_KEY) or "").skeleton
    except Exception:  # no usable model: the description cannot be rebuilt from it
        return REBUILD
    return f"{REPAIR} (it rebuilds the description from the rig's stored model)"


_DAMAGE: dict[str, tuple[tuple, str]] = {}  # rig -> (what the check read, its answer): panels redraw often


def robot_damage(arm: bpy.types.Object) -> str:
    """What is damaged in a robot rig's stored data ("" when nothing is), for the Robot panel's Repair button.

    The answer is kept until anything it read changes (reading the model back takes milliseconds,
    and the panel asks on every redraw).
    """
    data = arm.articulate
    key = (arm.get(INFO_KEY), arm.get(MODEL_KEY), tuple(arm.pose.bones.keys()) if arm.pose else (),
           tuple((b.name, b.joints) for b in data.branches), tuple(c.target is None for c in data.chains))
    kept = _DAMAGE.get(arm.name_full)
    if kept is not None and kept[0] == key:
        return kept[1]
    try:
        robot_info(arm)
        robot_model(arm)
        for branch in data.branches:
            branch_joints(arm, branch, [j["name"] for j in robot_info(arm)["joints"]])
        missing = [c.name for c in data.chains if c.tool_link and c.target is None]
        answer = f"chain(s) {', '.join(map(repr, missing))} have no target" if missing else ""
    except BridgeError as err:
        answer = str(err)
    if len(_DAMAGE) > 32:
        _DAMAGE.clear()
    _DAMAGE[arm.name_full] = (key, answer)
    return answer


def branch_joints(arm: bpy.types.Object, branch, default: list[str]) -> list[str]:
    """The joints a stored IK branch gives values for, checked against the rig.

    Raises:
        BridgeError: A branch naming joints the rig does not have, or more than it stores values for.
    """
    names = [n for n in branch.joints.split(",") if n] if branch.joints else list(default)
    valid = set(default)
    stale = [n for n in names if n not in valid] + missing_bones(arm, [n for n in names if n in valid])
    if stale or len(names) > len(branch.values):
        problem = (f"it names joint(s) {', '.join(map(repr, stale))} the rig does not have" if stale else
                   f"it names {len(names)} joints but holds {len(branch.values)} values")
        raise BridgeError(f"robot rig {arm.name!r}: IK branch {branch.name!r} is stale ({problem}); "
                          "run Find IK Branches again")
    return names
