# SPDX-License-Identifier: GPL-3.0-or-later
"""Hard robots written as URDF text for tests and benchmarks: trees, rails, continuous and wide joints, odd axes.

None of these are tuned for: they exist to break assumptions a serial 6R arm would let slip
(a prismatic joint, a joint limited to more than 2 pi, a continuous joint, axes that are not
coordinate axes, origins with rotations, a tree with a shared torso, mimic fingers).
"""

from __future__ import annotations

import numpy as np


def _joint(name, kind, parent, child, xyz=(0, 0, 0), rpy=(0, 0, 0), axis=None, limit=None, mimic=None) -> str:
    parts = [f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>',
             f'<origin xyz="{xyz[0]} {xyz[1]} {xyz[2]}" rpy="{rpy[0]} {rpy[1]} {rpy[2]}"/>']
    if axis is not None:
        parts.append(f'<axis xyz="{axis[0]} {axis[1]} {axis[2]}"/>')
    if limit is not None:
        parts.append(f'<limit lower="{limit[0]}" upper="{limit[1]}" effort="10" velocity="2"/>')
    if mimic is not None:
        parts.append(f'<mimic joint="{mimic[0]}" multiplier="{mimic[1]}" offset="{mimic[2]}"/>')
    parts.append("</joint>")
    return "".join(parts)


def _robot(name: str, joints: list[str]) -> str:
    links = set()
    for j in joints:
        for tag in ("parent", "child"):
            start = j.index(f'<{tag} link="') + len(f'<{tag} link="')
            links.add(j[start:j.index('"', start)])
    body = "".join(f'<link name="{n}"/>' for n in sorted(links)) + "".join(joints)
    return f'<?xml version="1.0"?>\n<robot name="{name}">{body}</robot>\n'


def _tilted_arm(parent: str) -> list[str]:
    """A 6R arm and its flange from link ``parent``: a continuous joint, one limited to +-7 rad, tilted axes
    and rotated origins (the rig's bones are not aligned with the armature's axes)."""
    a = 1 / np.sqrt(2.0)
    return [
        _joint("turn", "continuous", parent, "l1", xyz=(0, 0, 0.2), axis=(0, 0, 1)),
        _joint("shoulder", "revolute", "l1", "l2", xyz=(0.05, 0, 0.15), rpy=(0.2, 0, 0.3), axis=(0, 1, 0.2),
               limit=(-7.0, 7.0)),
        _joint("elbow", "revolute", "l2", "l3", xyz=(0, 0, 0.45), axis=(0, 1, 0), limit=(-2.6, 2.6)),
        _joint("wrist1", "revolute", "l3", "l4", xyz=(0, 0.02, 0.38), rpy=(0, 0.4, 0), axis=(a, 0, a),
               limit=(-3.0, 3.0)),
        _joint("wrist2", "revolute", "l4", "l5", xyz=(0, 0, 0.1), axis=(0, 1, 0), limit=(-2.2, 2.2)),
        _joint("wrist3", "revolute", "l5", "l6", xyz=(0, 0, 0.09), axis=(0.6, 0, 0.8), limit=(-3.0, 3.0)),
        _joint("flange", "fixed", "l6", "tool0", xyz=(0, 0, 0.06), rpy=(0, 0, 0.5)),
    ]


def rail_arm_urdf() -> str:
    """A 6R arm on a 1.6 m linear rail: 7 variables, one prismatic, one continuous, one limited to +-7 rad.

    The arm's axes are tilted off the coordinate axes and its origins carry rotations, so the
    rig's bones are not aligned with the armature's axes.
    """
    return _robot("rail_arm", [
        _joint("rail", "prismatic", "world", "carriage", axis=(1, 0, 0), limit=(-0.8, 0.8)),
        *_tilted_arm("carriage"),
    ])


def locked_arm_urdf() -> str:
    """The rail arm's 6R arm on a base joint locked at one value (``lower == upper``, as a URDF locks a joint).

    7 variables, 6 that move: the arm of one joint fewer, with its branches and no self-motion.
    """
    return _robot("locked_arm", [
        _joint("base", "revolute", "world", "pedestal", xyz=(0, 0, 0.1), axis=(0, 0, 1), limit=(0.4, 0.4)),
        *_tilted_arm("pedestal"),
    ])


def dual_arm_urdf() -> str:
    """A torso joint under two 6R arms, each with a two-finger gripper whose second finger mimics the first.

    13 variables: the torso is shared by both arms' chains, so they must be solved together.
    """
    joints = [_joint("torso", "revolute", "base", "chest", xyz=(0, 0, 0.6), axis=(0, 0, 1), limit=(-1.5, 1.5))]
    for side, y in (("left", 0.2), ("right", -0.2)):
        s = side[0]
        joints += [
            _joint(f"{s}_j1", "revolute", "chest", f"{s}_l1", xyz=(0, y, 0.3), rpy=(-np.sign(y) * 1.2, 0, 0),
                   axis=(0, 0, 1), limit=(-2.8, 2.8)),
            _joint(f"{s}_j2", "revolute", f"{s}_l1", f"{s}_l2", xyz=(0, 0, 0.1), axis=(0, 1, 0), limit=(-2.0, 2.0)),
            _joint(f"{s}_j3", "revolute", f"{s}_l2", f"{s}_l3", xyz=(0, 0, 0.3), axis=(0, 1, 0), limit=(-2.6, 2.6)),
            _joint(f"{s}_j4", "revolute", f"{s}_l3", f"{s}_l4", xyz=(0, 0, 0.25), axis=(0, 0, 1), limit=(-3.0, 3.0)),
            _joint(f"{s}_j5", "revolute", f"{s}_l4", f"{s}_l5", xyz=(0, 0, 0.08), axis=(0, 1, 0), limit=(-2.0, 2.0)),
            _joint(f"{s}_j6", "revolute", f"{s}_l5", f"{s}_l6", xyz=(0, 0, 0.07), axis=(0, 0, 1), limit=(-3.0, 3.0)),
            _joint(f"{s}_tool_joint", "fixed", f"{s}_l6", f"{s}_tool", xyz=(0, 0, 0.1)),
            _joint(f"{s}_finger1", "prismatic", f"{s}_l6", f"{s}_finger1_link", xyz=(0, 0.02, 0.05),
                   axis=(0, 1, 0), limit=(0, 0.04)),
            _joint(f"{s}_finger2", "prismatic", f"{s}_l6", f"{s}_finger2_link", xyz=(0, -0.02, 0.05),
                   axis=(0, -1, 0), limit=(0, 0.04), mimic=(f"{s}_finger1", 1.0, 0.0)),
        ]
    return _robot("dual_arm", joints)


def smooth_joint_path(lower: np.ndarray, upper: np.ndarray, frames: int, seed: int, start: np.ndarray,
                      amplitude: float = 0.6) -> np.ndarray:
    """(frames, J) a smooth joint path from ``start``, 0.05 inside finite limits (narrow ranges: a quarter)."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, frames)[:, None]
    freq = rng.uniform(0.5, 1.5, size=len(start))
    phase = rng.uniform(0, 2 * np.pi, size=len(start))
    span = np.where(np.isfinite(upper - lower), np.minimum(upper - lower, 2 * np.pi), 2 * np.pi)
    path = start + amplitude * 0.5 * span * (np.sin(2 * np.pi * freq * t + phase) - np.sin(phase))
    margin = np.minimum(0.05, 0.25 * np.where(np.isfinite(upper - lower), upper - lower, np.inf))
    lo = np.where(np.isfinite(lower), lower + margin, -np.inf)
    hi = np.where(np.isfinite(upper), upper - margin, np.inf)
    return np.clip(path, lo, hi)
