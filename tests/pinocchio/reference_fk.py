# SPDX-License-Identifier: GPL-3.0-or-later
"""Every link's world pose by pinocchio, for robots and joint values read from JSON: the tests' reference.

Run with the pinocchio venv's Python (``dev/envs.sh pinocchio``), never inside Blender::

    python reference_fk.py request.json answer.json

``request.json``: ``{"cases": [{"urdf": "<robot ...>", "configurations": [{"joint": value, ...}, ...]}]}``,
values in URDF units (rad, m) for the joints that move on their own. A mimic joint's value is
``multiplier * source + offset`` of its source's value, as the URDF spec says (pinocchio's own
mimic joints refuse mimics of mimics and continuous mimics, so the values are set here); a
mimic naming no moving joint is ignored (the joint is then given a value), as urdfdom does.
Floating and planar joints stay at pinocchio's neutral configuration: their origin.

``answer.json``: ``{"cases": [{"links": [...], "joint_types": {...}, "poses": [[(4, 4) per link] per
configuration]}]}``, links in document order, poses in the root link's frame [m].
"""

from __future__ import annotations

import json
import math
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin

MOVING = ("revolute", "continuous", "prismatic")


def joint_values(root: ET.Element, given: dict[str, float]) -> dict[str, float]:
    """Every moving joint's value: the given ones, and each mimic's from its source's (recursively)."""
    joints = {j.get("name"): j for j in root.findall("joint")}
    values = dict(given)

    def value(name: str, depth: int = 0) -> float:
        if name in values:
            return values[name]
        mimic = joints[name].find("mimic")
        source = joints.get(mimic.get("joint")) if mimic is not None else None
        if source is None or source.get("type") not in MOVING or depth > len(joints):
            raise KeyError(f"no value given for joint {name!r}")
        v = float(mimic.get("multiplier", 1.0)) * value(source.get("name"), depth + 1) + float(mimic.get("offset", 0.0))
        values[name] = v
        return v

    for name, joint in joints.items():
        if joint.get("type") in MOVING:
            value(name)
    return values


def link_poses(text: str, configurations: list[dict[str, float]]) -> dict:
    """Pinocchio's pose of every link for each configuration (see the module docstring)."""
    root = ET.fromstring(text)
    model = pin.buildModelFromXML(text)  # mimic joints as independent joints: values set by joint_values
    data = model.createData()
    links = [link.get("name") for link in root.findall("link")]
    frames = [model.getFrameId(link, pin.BODY) for link in links]
    types = {name: model.joints[i].shortname() for i, name in enumerate(model.names) if i > 0}
    poses = []
    for given in configurations:
        values = joint_values(root, given)
        q = pin.neutral(model)
        for i in range(1, model.njoints):
            name, joint = model.names[i], model.joints[i]
            if joint.nq == 1:
                q[joint.idx_q] = values[name]
            elif joint.nq == 2 and joint.nv == 1:  # continuous: (cos, sin) of the angle
                q[joint.idx_q:joint.idx_q + 2] = math.cos(values[name]), math.sin(values[name])
            # Free-flyer and planar joints stay neutral.
        pin.framesForwardKinematics(model, data, q)
        poses.append([np.asarray(data.oMf[f].homogeneous).tolist() for f in frames])
    return {"links": links, "joint_types": types, "poses": poses}


def main(argv: list[str]) -> int:
    """Answer the request file ``argv[0]`` into ``argv[1]``."""
    with open(argv[0]) as f:
        request = json.load(f)
    answer = {"pinocchio": pin.__version__,
              "cases": [link_poses(case["urdf"], case["configurations"]) for case in request["cases"]]}
    with open(argv[1], "w") as f:
        json.dump(answer, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
