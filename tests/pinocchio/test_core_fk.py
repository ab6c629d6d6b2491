# SPDX-License-Identifier: GPL-3.0-or-later
"""The core's forward kinematics of every link against pinocchio's (issue 26), generated and real robots."""

import numpy as np
import pytest
from fk_cases import all_cases

from ik_core.formats.xacro_files import description_source, parse_xacro_args
from ik_core.model.kinematics import forward_kinematics
from ik_core.robots.model import RobotModel

CASES = all_cases()
ATOL = 1e-12  # [m] and rotation entries: both are double precision products of the same few matrices


def configuration(model: RobotModel, values: dict[str, float]) -> np.ndarray:
    """(dof,) the skeleton's configuration from joint values by name."""
    return np.array([values[name] for name in model.skeleton.moving_joint_names])


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_link_matches_pinocchio(reference, case):
    """The stored model's skeleton (what every bake solves on) puts every link where pinocchio does."""
    source = case.urdf if case.path is None else description_source(case.path, parse_xacro_args(case.xacro_args))
    model = RobotModel.from_urdf(source)
    skeleton = model.skeleton
    poses = reference.poses(case.name)
    assert set(poses) == set(model.urdf.links)
    link_joint = {j.name: i for i, j in enumerate(skeleton.joints)}
    joint_of_link = {j.child: j.name for j in model.urdf.joints}
    for k, values in enumerate(case.configurations):
        W = forward_kinematics(skeleton, configuration(model, values))
        for link, P in poses.items():
            mine = W[link_joint[joint_of_link[link]]] if link in joint_of_link else np.eye(4)
            np.testing.assert_allclose(mine, P[k], atol=ATOL, err_msg=f"{case.name}: link {link}, configuration {k}")


def test_the_cases_hold_what_they_promise(reference):
    """The generated robots draw every joint kind pinocchio knows, mimics included, and wide limits."""
    kinds = set()
    for case in CASES:
        kinds |= set(reference.joint_types(case.name).values())
    assert {"JointModelRevoluteUnaligned", "JointModelPrismaticUnaligned", "JointModelRevoluteUnboundedUnaligned",
            "JointModelFreeFlyer", "JointModelPlanar"} <= kinds, kinds
    text = "".join(c.urdf for c in CASES)
    assert "<mimic joint='j" in text and "multiplier='-2.0'" in text and "lower='-7.0' upper='7.0'" in text


def test_public_descriptions_expand_with_their_arguments():
    """The xacro descriptions expand as their arguments say: a prefix on every link, fingers that mimic or none."""
    cases = {c.name: c for c in CASES}
    models = {name: RobotModel.from_urdf(description_source(cases[name].path, parse_xacro_args(cases[name].xacro_args)))
              for name in ("kuka_kr6r700sixx", "px100", "px100_named", "px100_no_fingers")}
    assert models["kuka_kr6r700sixx"].joint_order == tuple(f"joint_a{k}" for k in range(1, 7))
    assert models["kuka_kr6r700sixx"].default_tools() == ["tool0"]
    finger = models["px100"].urdf.joint("right_finger").mimic
    assert (finger.joint, finger.multiplier, finger.offset) == ("left_finger", -1.0, 0.0)
    assert all(link.startswith("px100/") for link in models["px100_named"].urdf.links if link != "world")
    assert "world" in models["px100_named"].urdf.links and "world" not in models["px100"].urdf.links
    assert not [link for link in models["px100_no_fingers"].urdf.links if "finger_link" in link]
