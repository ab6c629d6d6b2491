# SPDX-License-Identifier: GPL-3.0-or-later
"""Robot-arm presets stored as JSON data, loaded into :class:`~ik_core.model.skeleton.Skeleton` objects.

One file per robot in ``presets/robots/<name>.json`` (next to the ``ik_core`` folder), schema
``articulate-robot-preset/1``. Angles are radians, lengths metres, speeds per second::

    {
      "schema": "articulate-robot-preset/1",
      "name": "ur5",                      # identifier, equal to the file stem (lower case)
      "display_name": "Universal Robots UR5 (CB3)",
      "manufacturer": "Universal Robots",
      "source": "citation: URL or document title and version the numbers come from",
      "notes": "caveats: which numbers are uncertain, rounded or chosen by Articulate",
      "base_link": "base_link",           # name of the world (base) frame
      "visuals": "meshes/ur5/ur5_visuals.urdf",  # optional: a URDF (relative to this folder)
                                          # whose link <visual>s draw the robot's links
      "joints": [                         # serial chain, base to tip; each joint's parent is
        {                                 # the previous joint (the base for the first one)
          "name": "shoulder_pan_joint",
          "type": "revolute",             # revolute | continuous | prismatic | fixed
          "link": "shoulder_link",        # child link (the joint's own frame)
          "xyz": [0, 0, 0.089159],        # parent-to-joint origin translation [m]
          "rpy": [0, 0, 0],               # origin rotation, URDF roll-pitch-yaw [rad]
          "axis": [0, 0, 1],              # moving joints: axis in the joint frame
          "lower": -6.28, "upper": 6.28,  # revolute and prismatic only [rad or m]
          "velocity": 3.14,               # moving joints: limit [rad/s or m/s]
          "acceleration": 15.0            # optional limit [rad/s^2 or m/s^2]
        }
      ],
      "home": {"shoulder_pan_joint": 0.0, ...},   # every moving joint [rad or m]
      "tool": {"name": "tool0", "xyz": [0, 0, 0], "rpy": [0, 0, 0]},  # offset on the last link
      "dh": {                             # optional: closed-form IK data (ik_core.robots.analytic_ur)
        "family": "ur",                   # UR structure: standard DH, alpha (pi/2,0,0,pi/2,-pi/2,0)
        "d1": 0.089159, "a2": -0.425, "a3": -0.39225, "d4": 0.10915, "d5": 0.09465, "d6": 0.0823,
        "base": {"xyz": [0, 0, 0], "rpy": [0, 0, 3.14159]},  # world (base_link) -> DH base
        "tool": {"xyz": [0, 0, 0], "rpy": [0, 0, 0]},        # DH frame 6 -> last link
        "source": "citation of the DH table"
      }
    }

Origins compose as in URDF: ``T = Trans(xyz) @ Rz(yaw) @ Ry(pitch) @ Rx(roll)``, then the joint
moves about (or along) ``axis``. :func:`load_preset` builds one :class:`Joint` per entry
(fixed joints included, so link frames stay exact), an effector named ``"tool"`` at the tool
frame, and uses the home pose as the skeleton's ``preferred_q``.
"""

from __future__ import annotations

import copy
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import SkeletonError, UnknownNameError
from ..model.skeleton import Effector, Joint, JointKind, Skeleton

SCHEMA = "articulate-robot-preset/1"
PRESETS_FOLDER: Path = Path(__file__).resolve().parents[2] / "presets" / "robots"
JOINT_TYPES: tuple[str, ...] = ("revolute", "continuous", "prismatic", "fixed")
TOOL_EFFECTOR = "tool"


def _folder(folder: str | os.PathLike | None) -> Path:
    return PRESETS_FOLDER if folder is None else Path(folder)


def list_presets(folder: str | os.PathLike | None = None) -> list[str]:
    """Names of the robot presets available.

    Args:
        folder: Folder holding ``*.json`` presets; defaults to :data:`PRESETS_FOLDER`.

    Returns:
        Sorted preset names (file stems); empty when the folder does not exist.
    """
    path = _folder(folder)
    return sorted(p.stem for p in path.glob("*.json")) if path.is_dir() else []


def preset_path(name: str, folder: str | os.PathLike | None = None) -> Path:
    """The file of one preset (names match case-insensitively).

    Raises:
        UnknownNameError: If no preset has that name; the message lists the valid names.
    """
    names = list_presets(folder)
    lookup = {n.lower(): n for n in names}
    key = str(name).lower().removesuffix(".json")
    if key not in lookup:
        raise UnknownNameError("robot preset", str(name), names)
    return _folder(folder) / f"{lookup[key]}.json"


def preset_visuals(name: str, folder: str | os.PathLike | None = None) -> Path | None:
    """The URDF whose link visuals draw a preset (its ``"visuals"`` key), or None when it has none.

    Its mesh paths are relative to its own folder; its link names are the preset's.

    Raises:
        UnknownNameError: No preset has that name.
        SkeletonError: The preset names a visuals file that does not exist.
    """
    path = preset_path(name, folder)
    relative = _read(path).get("visuals")
    if not relative:
        return None
    visuals = path.parent / str(relative)
    if not visuals.is_file():
        raise _fail(path, "visuals", f"names {str(relative)!r}, which is not a file next to the preset")
    return visuals


def _fail(path: Path, where: str, problem: str) -> SkeletonError:
    return SkeletonError(f"robot preset {path}: {where}: {problem}")


def _number(path: Path, where: str, value: Any, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _fail(path, where, f"must be a finite number, got {value!r}")
    if positive and not value > 0:
        raise _fail(path, where, f"must be > 0, got {value!r}")
    return float(value)


def _vector(path: Path, where: str, value: Any) -> tuple[float, float, float]:
    if not isinstance(value, list) or len(value) != 3:
        raise _fail(path, where, f"must be a list of 3 numbers, got {value!r}")
    x, y, z = (_number(path, f"{where}[{i}]", v) for i, v in enumerate(value))
    return x, y, z


def origin_matrix(xyz: tuple[float, float, float], rpy: tuple[float, float, float]) -> np.ndarray:
    """(4, 4) URDF origin: translation ``xyz`` [m], then ``Rz(yaw) @ Ry(pitch) @ Rx(roll)`` [rad]."""
    (cr, cp, cy), (sr, sp, sy) = np.cos(rpy), np.sin(rpy)
    T = np.eye(4)
    # Same expression as the URDF loader, so presets copied from URDFs match them bit for bit.
    T[:3, :3] = [
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ]
    T[:3, 3] = xyz
    return T


def _frame(path: Path, where: str, entry: Any) -> np.ndarray:
    if not isinstance(entry, dict):
        raise _fail(path, where, f"must be an object with 'xyz' and 'rpy', got {entry!r}")
    xyz = _vector(path, f"{where}.xyz", entry.get("xyz", [0.0, 0.0, 0.0]))
    rpy = _vector(path, f"{where}.rpy", entry.get("rpy", [0.0, 0.0, 0.0]))
    return origin_matrix(xyz, rpy)


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise SkeletonError(f"robot preset {path}: invalid JSON at line {e.lineno}: {e.msg}") from None
    except OSError as e:
        raise SkeletonError(f"cannot read robot preset {path}: {e.strerror or e}") from None
    if not isinstance(data, dict):
        raise _fail(path, "top level", "must be a JSON object")
    if data.get("schema") != SCHEMA:
        raise _fail(path, "schema", f"is {data.get('schema')!r}, expected {SCHEMA!r}")
    for key in ("name", "display_name", "manufacturer", "source", "joints", "home", "tool"):
        if key not in data:
            raise _fail(path, key, "missing (required keys: name, display_name, manufacturer, source, "
                        "joints, home, tool)")
    return data


def _joint(path: Path, index: int, entry: Any) -> tuple[Joint, float | None]:
    where = f"joints[{index}]"
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise _fail(path, where, "must be an object with a string 'name'")
    where = f"joints[{index}] ({entry['name']!r})"
    jtype = entry.get("type")
    if jtype not in JOINT_TYPES:
        raise _fail(path, f"{where}.type", f"is {jtype!r}; valid types: {', '.join(JOINT_TYPES)}")
    origin = _frame(path, where, entry)
    if jtype == "fixed":
        return Joint(entry["name"], JointKind.FIXED, index - 1, origin), None
    axis = _vector(path, f"{where}.axis", entry.get("axis"))
    lower, upper = -math.inf, math.inf
    if jtype in ("revolute", "prismatic"):
        lower = _number(path, f"{where}.lower", entry.get("lower"))
        upper = _number(path, f"{where}.upper", entry.get("upper"))
        if lower > upper:
            raise _fail(path, where, f"lower limit {lower} exceeds upper limit {upper}")
    velocity = _number(path, f"{where}.velocity", entry.get("velocity"), positive=True)
    accel = entry.get("acceleration")
    if accel is not None:
        accel = _number(path, f"{where}.acceleration", accel, positive=True)
    try:
        joint = Joint(entry["name"], JointKind(jtype), index - 1, origin, axis, lower, upper, velocity)
    except SkeletonError as e:
        raise _fail(path, where, str(e)) from None
    return joint, accel


def _build(path: Path, data: dict[str, Any]) -> tuple[Skeleton, np.ndarray]:
    entries = data["joints"]
    if not isinstance(entries, list) or not entries:
        raise _fail(path, "joints", "must be a non-empty list")
    built = [_joint(path, i, e) for i, e in enumerate(entries)]
    joints = [j for j, _ in built]
    accel = np.array([math.inf if a is None else a for j, a in built if j.dof], dtype=float)
    tool = data["tool"]
    if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
        raise _fail(path, "tool", "must be an object with a string 'name' and 'xyz', 'rpy' offsets")
    effector = Effector(TOOL_EFFECTOR, len(joints) - 1, _frame(path, "tool", tool))
    home = data["home"]
    moving = [j.name for j in joints if j.dof]
    if not isinstance(home, dict) or set(home) != set(moving):
        given = sorted(home) if isinstance(home, dict) else home
        raise _fail(path, "home", f"must map every moving joint {moving} to a value, got {given!r}")
    preferred = [_number(path, f"home.{n}", home[n]) for n in moving]
    try:
        skeleton = Skeleton(joints, [effector], name=str(data["name"]), preferred_q=preferred)
    except SkeletonError as e:
        raise SkeletonError(f"robot preset {path}: {e}") from None
    if not bool(skeleton.within_limits(skeleton.preferred_q)):
        raise _fail(path, "home", "lies outside the joint limits")
    return skeleton, accel


def load_preset(name: str, folder: str | os.PathLike | None = None) -> Skeleton:
    """Load a robot preset as a skeleton.

    Args:
        name: Preset name (see :func:`list_presets`), case-insensitive.
        folder: Folder holding the presets; defaults to :data:`PRESETS_FOLDER`.

    Returns:
        A serial :class:`Skeleton` (fixed joints included) named after the preset, with one
        effector ``"tool"`` at the tool frame and ``preferred_q`` equal to the home pose.

    Raises:
        UnknownNameError: No preset has that name; the message lists the valid names.
        SkeletonError: The file is unreadable or malformed; the message names the file and
            the offending entry.
    """
    path = preset_path(name, folder)
    return _build(path, _read(path))[0]


def preset_info(name: str, folder: str | os.PathLike | None = None) -> dict[str, Any]:
    """Everything a preset file says, plus derived facts, as plain JSON-compatible data.

    Args:
        name: Preset name, case-insensitive.
        folder: Folder holding the presets; defaults to :data:`PRESETS_FOLDER`.

    Returns:
        A deep copy of the file's object with extra keys ``"path"`` (str), ``"dof"`` (int),
        ``"joint_names"`` (moving joints in ``q`` order), ``"lower"``, ``"upper"``,
        ``"velocity"``, ``"acceleration"`` (lists per moving joint; ``None`` where unlimited
        or unpublished) and ``"home_q"`` (list).

    Raises:
        UnknownNameError: No preset has that name.
        SkeletonError: The file is unreadable or malformed.
    """
    path = preset_path(name, folder)
    data = _read(path)
    skeleton, accel = _build(path, data)

    def listed(values: np.ndarray) -> list[float | None]:
        return [float(v) if math.isfinite(v) else None for v in values]

    info = copy.deepcopy(data)
    info.update(
        path=str(path),
        dof=skeleton.dof,
        joint_names=list(skeleton.moving_joint_names),
        lower=listed(skeleton.lower),
        upper=listed(skeleton.upper),
        velocity=listed(skeleton.velocity),
        acceleration=listed(accel),
        home_q=[float(v) for v in skeleton.preferred_q],
    )
    return info
