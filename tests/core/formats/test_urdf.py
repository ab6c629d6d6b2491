# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of the URDF loader: official robot files, independent FK checks, malformed input."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from data_files import data_file

from ik_core.errors import SkeletonError, UnknownNameError, URDFError
from ik_core.formats.urdf import chain_joint_names, load_urdf, parse_urdf
from ik_core.model.kinematics import effector_poses
from ik_core.model.skeleton import JointKind, Mimic

TWO_PI = 6.283185307179586


def robot(name: str) -> Path:
    return data_file("robots", f"{name}.urdf")


def rx(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def ry(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def rz(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


# --- the official robot files (data/robots) ------------------------------------------------------

UR5_ARM = [
    "shoulder_pan_joint",
    "shoulder_lift_joint",
    "elbow_joint",
    "wrist_1_joint",
    "wrist_2_joint",
    "wrist_3_joint",
]
PANDA_ARM = [f"panda_joint{i}" for i in range(1, 8)]
IIWA_ARM = [f"joint_a{i}" for i in range(1, 8)]

# (lower, upper, velocity) exactly as written in the files.
LIMITS = {
    "ur5": [(-TWO_PI, TWO_PI, math.pi)] * 2
    + [(-math.pi, math.pi, math.pi)]
    + [(-TWO_PI, TWO_PI, math.pi)] * 3,
    "panda": [
        (-2.8973, 2.8973, 2.175),
        (-1.7628, 1.7628, 2.175),
        (-2.8973, 2.8973, 2.175),
        (-3.0718, -0.0698, 2.175),
        (-2.8973, 2.8973, 2.61),
        (-0.0175, 3.7525, 2.61),
        (-2.8973, 2.8973, 2.61),
    ],
    "lbr_iiwa_14_r820": [
        (-2.9668, 2.9668, 1.4834),
        (-2.0942, 2.0942, 1.4834),
        (-2.9668, 2.9668, 1.7452),
        (-2.0942, 2.0942, 1.3089),
        (-2.9668, 2.9668, 2.2688),
        (-2.0942, 2.0942, 2.356),
        (-3.0541, 3.0541, 2.356),
    ],
}
TOOL = {
    "ur5": ("tool0", UR5_ARM),
    "panda": ("panda_link8", PANDA_ARM),
    "lbr_iiwa_14_r820": ("tool0", IIWA_ARM),
}


@pytest.mark.parametrize(
    ("name", "leaves", "n_joints"),
    [
        ("ur5", ["tool0", "base"], 10),
        ("panda", [*(f"panda_link{i}_sc" for i in range(8)), "panda_link8"], 16),
        ("lbr_iiwa_14_r820", ["tool0", "base"], 9),
    ],
)
def test_official_robot_default_load(name: str, leaves: list[str], n_joints: int) -> None:
    """By default every URDF joint is kept and every leaf link becomes an effector of that name."""
    skel = load_urdf(robot(name))
    assert list(skel.effector_names) == leaves
    assert len(skel.joints) == n_joints == len(parse_urdf(robot(name)).joints)
    assert skel.dof == len(TOOL[name][1])
    assert list(skel.moving_joint_names) == TOOL[name][1]


@pytest.mark.parametrize("name", sorted(TOOL))
def test_chain_to_tool_frame(name: str) -> None:
    """Chain extraction to the flange keeps the arm joints in order plus the fixed tool joints."""
    tip, arm = TOOL[name]
    skel = load_urdf(robot(name), tip_links=tip)
    assert skel.effector_names == (tip,)
    assert chain_joint_names(skel, tip, moving_only=True) == arm
    assert all(
        skel.joints[i].kind is JointKind.REVOLUTE for i in range(len(skel.joints)) if skel.joints[i].dof
    )
    full = load_urdf(robot(name))
    q = np.random.default_rng(1).uniform(-1, 1, (4, skel.dof))
    np.testing.assert_allclose(effector_poses(skel, q, tip), effector_poses(full, q, tip), atol=1e-14)


@pytest.mark.parametrize("name", sorted(LIMITS))
def test_limits_equal_the_file(name: str) -> None:
    """Position and velocity limits are the numbers written in the file, in q order."""
    skel = load_urdf(robot(name), tip_links=TOOL[name][0])
    lower, upper, velocity = np.array(LIMITS[name]).T
    np.testing.assert_array_equal(skel.lower, lower)
    np.testing.assert_array_equal(skel.upper, upper)
    np.testing.assert_array_equal(skel.velocity, velocity)


def test_effort_and_velocity_are_kept_in_the_model() -> None:
    """The parsed model keeps effort (even 0) and velocity; fixed joints get neither."""
    ur5 = parse_urdf(robot("ur5"))
    assert ur5.joint("shoulder_pan_joint").effort == 150.0
    assert ur5.joint("wrist_3_joint").effort == 28.0
    assert ur5.joint("wrist_3_joint").velocity == math.pi
    assert ur5.joint("flange-tool0").type == "fixed" and ur5.joint("flange-tool0").effort == math.inf
    iiwa = parse_urdf(robot("lbr_iiwa_14_r820"))
    assert iiwa.joint("joint_a4").effort == 0.0 and iiwa.joint("joint_a4").axis == (0.0, -1.0, 0.0)
    assert iiwa.name == "kuka_lbr_iiwa_14_r820" and iiwa.root_link == "base_link"


def ur5_dh(q: np.ndarray) -> np.ndarray:
    """(4, 4) pose of DH frame 6 from UR's published standard DH parameters."""
    d = [0.089159, 0.0, 0.0, 0.10915, 0.09465, 0.0823]
    a = [0.0, -0.42500, -0.39225, 0.0, 0.0, 0.0]
    alpha = [math.pi / 2, 0.0, 0.0, math.pi / 2, -math.pi / 2, 0.0]
    T = np.eye(4)
    for theta, di, ai, al in zip(q, d, a, alpha, strict=True):
        A = np.eye(4)
        A[:3, :3] = rz(theta) @ rx(al)
        A[:3, 3] = (ai * math.cos(theta), ai * math.sin(theta), di)
        T = T @ A
    return T


def test_ur5_matches_published_dh_parameters() -> None:
    """UR5 tool0 equals the DH chain up to constant frames, to 1e-9 at 200 random poses.

    base_link is REP-103 aligned, i.e. the DH base frame turned by pi about z (the convention
    ros-industrial documents). The tool-side constant is measured at one pose: it must be an
    exact axis relabelling with no translation (it is the identity: tool0 is DH frame 6).
    The file writes pi/2 as 1.570796327 (3.2e-10 rad off), which bounds the agreement.
    """
    skel = load_urdf(robot("ur5"), tip_links="tool0")
    base = np.diag([-1.0, -1.0, 1.0, 1.0])
    rng = np.random.default_rng(7)
    q0 = rng.uniform(-math.pi, math.pi, 6)
    measured = np.linalg.inv(base @ ur5_dh(q0)) @ effector_poses(skel, q0, "tool0")
    tool = np.round(measured)
    np.testing.assert_allclose(measured, tool, atol=1e-9)
    np.testing.assert_array_equal(tool, np.eye(4))
    q = rng.uniform(skel.lower, skel.upper, (200, 6))
    ours = effector_poses(skel, q, "tool0")
    theirs = np.stack([base @ ur5_dh(qi) @ tool for qi in q])
    assert np.max(np.linalg.norm(ours[:, :3, 3] - theirs[:, :3, 3], axis=-1)) < 1e-9
    assert np.max(np.abs(ours[:, :3, :3] - theirs[:, :3, :3])) < 1e-9


def test_panda_and_iiwa_hand_computed_poses() -> None:
    """Panda flange at q=0 is (0.088, 0, 0.926) facing down; iiwa tool0 follows joint_a2 by hand."""
    panda = load_urdf(robot("panda"), tip_links="panda_link8")
    T = effector_poses(panda, np.zeros(7), "panda_link8")
    np.testing.assert_allclose(T[:3, 3], [0.088, 0.0, 0.333 + 0.316 + 0.384 - 0.107], atol=1e-12)
    np.testing.assert_allclose(T[:3, :3], np.diag([1.0, -1.0, -1.0]), atol=1e-12)
    iiwa = load_urdf(robot("lbr_iiwa_14_r820"), tip_links="tool0")
    np.testing.assert_allclose(effector_poses(iiwa, np.zeros(7), "tool0")[:3, 3], [0, 0, 1.306], atol=1e-12)
    q = np.zeros(7)
    q[1] = math.pi / 2  # joint_a2 turns about +y: the arm above it tips over towards +x
    expected = np.array([-0.00043624, 0.0, 0.36]) + ry(math.pi / 2) @ [0.00043624, 0.0, 0.42 + 0.4 + 0.126]
    np.testing.assert_allclose(effector_poses(iiwa, q, "tool0")[:3, 3], expected, atol=1e-12)


PANDA_HAND = """
  <link name="panda_hand"/><link name="panda_leftfinger"/><link name="panda_rightfinger"/>
  <link name="panda_hand_tcp"/>
  <joint name="panda_hand_joint" type="fixed">
    <parent link="panda_link8"/><child link="panda_hand"/><origin rpy="0 0 -0.785398163397" xyz="0 0 0"/>
  </joint>
  <joint name="panda_hand_tcp_joint" type="fixed">
    <origin rpy="0 0 0" xyz="0 0 0.1034"/><parent link="panda_hand"/><child link="panda_hand_tcp"/>
  </joint>
  <joint name="panda_finger_joint1" type="prismatic">
    <parent link="panda_hand"/><child link="panda_leftfinger"/><origin rpy="0 0 0" xyz="0 0 0.0584"/>
    <axis xyz="0 1 0"/><limit effort="100" lower="0.0" upper="0.04" velocity="0.2"/>
  </joint>
  <joint name="panda_finger_joint2" type="prismatic">
    <parent link="panda_hand"/><child link="panda_rightfinger"/><origin rpy="0 0 0" xyz="0 0 0.0584"/>
    <axis xyz="0 -1 0"/><limit effort="100" lower="0.0" upper="0.04" velocity="0.2"/>
    <mimic joint="panda_finger_joint1"/>
  </joint>
</robot>"""


def panda_with_hand() -> str:
    return robot("panda").read_text().replace("</robot>", PANDA_HAND)


def test_panda_hand_fingers_are_prismatic_with_mimic() -> None:
    """Finger 2 mimics finger 1: one extra variable, fingers open symmetrically about the hand."""
    skel = load_urdf(panda_with_hand())
    assert {"panda_leftfinger", "panda_rightfinger", "panda_hand_tcp"} <= set(skel.effector_names)
    assert skel.dof == 8 and skel.moving_joint_names[-1] == "panda_finger_joint1"
    f1, f2 = (skel.joints[skel.joint_index(f"panda_finger_joint{i}")] for i in (1, 2))
    assert f1.kind is f2.kind is JointKind.PRISMATIC
    assert f2.mimic == Mimic("panda_finger_joint1", 1.0, 0.0) and f2.dof == 0
    assert (skel.lower[-1], skel.upper[-1], skel.velocity[-1]) == (0.0, 0.04, 0.2)
    q = np.concatenate([np.random.default_rng(3).uniform(-1, 1, 7), [0.03]])
    left, right, hand = effector_poses(skel, q, ["panda_leftfinger", "panda_rightfinger", "panda_hand_tcp"])
    np.testing.assert_allclose(np.linalg.norm(left[:3, 3] - right[:3, 3]), 0.06, atol=1e-12)
    np.testing.assert_allclose(
        (left[:3, 3] + right[:3, 3]) / 2 - hand[:3, 3], -(0.1034 - 0.0584) * hand[:3, 2], atol=1e-12
    )


def test_panda_chain_to_hand_excludes_fingers_and_mimic_pulls_its_source() -> None:
    """A chain to the hand has the 7 arm joints; a chain to the mimic finger keeps its source."""
    hand = load_urdf(panda_with_hand(), tip_links="panda_hand")
    assert hand.dof == 7 and chain_joint_names(hand)[-2:] == ["panda_joint8", "panda_hand_joint"]
    right = load_urdf(panda_with_hand(), tip_links=["panda_rightfinger"])
    assert right.dof == 8 and "panda_finger_joint1" in right.joint_names
    assert right.effector_names == ("panda_rightfinger",)


def test_path_pathlike_and_string_sources_agree() -> None:
    """A str path, a Path and the XML text itself load identical skeletons."""
    path = robot("ur5")
    q = np.random.default_rng(5).uniform(-3, 3, (3, 6))
    poses = [
        effector_poses(load_urdf(src, tip_links="tool0"), q, "tool0")
        for src in (str(path), path, path.read_text(), "\n  " + path.read_text())
    ]
    for other in poses[1:]:
        np.testing.assert_array_equal(poses[0], other)


def test_base_link_option_expresses_the_chain_in_the_base_frame() -> None:
    """With base_link set, the tip pose equals the full pose seen from that link's frame."""
    full = load_urdf(robot("ur5"), tip_links=["upper_arm_link", "tool0"])
    sub = load_urdf(robot("ur5"), base_link="upper_arm_link")
    assert sub.effector_names == ("tool0",) and sub.moving_joint_names == tuple(UR5_ARM[2:])
    q = np.random.default_rng(9).uniform(-3, 3, (10, 6))
    base, tip = np.moveaxis(effector_poses(full, q), -3, 0)
    np.testing.assert_allclose(effector_poses(sub, q[:, 2:], "tool0"), np.linalg.inv(base) @ tip, atol=1e-12)


# --- a small hand-written robot ----------------------------------------------------------------

TOY = """<?xml version="1.0"?>
<robot name="toy">
  <!-- comments, visuals and transmissions are ignored -->
  <link name="world"/><link name="slider"/><link name="wheel"/>
  <link name="arm"><visual><origin xyz="9 9 9"/></visual></link><link name="tip"/>
  <joint name="slide" type="prismatic">
    <parent link="world"/><child link="slider"/>
    <origin xyz="1 0 0" rpy="0 0 1.5707963267948966"/>
    <axis xyz="2 0 0"/><limit lower="-0.5" upper="0.5" velocity="2" effort="10"/>
  </joint>
  <joint name="spin" type="continuous">
    <parent link="slider"/><child link="wheel"/><origin xyz="0 0 0.5"/><axis xyz="0 0 1"/>
  </joint>
  <joint name="follow" type="revolute">
    <parent link="wheel"/><child link="arm"/><origin xyz="0.2 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-10" upper="10" velocity="0"/><mimic joint="spin" multiplier="2" offset="0.1"/>
  </joint>
  <joint name="tool" type="fixed">
    <parent link="arm"/><child link="tip"/><origin xyz="0.3 0 0" rpy="0.3 0.2 0.1"/><axis xyz="0 0 0"/>
  </joint>
  <transmission name="t"><joint name="slide"/></transmission>
  <gazebo reference="arm"><material>Gazebo/Red</material></gazebo>
</robot>
"""


def test_toy_robot_structure() -> None:
    """Kinds, limits, mimic and defaults come out as written; velocity 0 means unknown."""
    skel = load_urdf(TOY)
    assert skel.name == "toy" and skel.effector_names == ("tip",) and skel.dof == 2
    assert [j.kind for j in skel.joints] == [
        JointKind.PRISMATIC,
        JointKind.CONTINUOUS,
        JointKind.REVOLUTE,
        JointKind.FIXED,
    ]
    np.testing.assert_array_equal(skel.joints[0].axis, [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(skel.lower, [-0.5, -np.inf])
    np.testing.assert_array_equal(skel.upper, [0.5, np.inf])
    np.testing.assert_array_equal(skel.velocity, [2.0, np.inf])
    assert skel.joints[2].mimic == Mimic("spin", 2.0, 0.1) and skel.joints[2].velocity == np.inf


@pytest.mark.parametrize("seed", range(5))
def test_toy_robot_matches_hand_computed_fk(seed: int) -> None:
    """FK of prismatic + continuous + mimic + fixed (with roll, pitch and yaw) matches by hand."""
    s, theta = np.random.default_rng(seed).uniform(-0.5, 0.5), np.random.default_rng(seed + 99).uniform(-4, 4)
    T = effector_poses(load_urdf(TOY), np.array([s, theta]), "tip")
    # The slider's x axis is world y after the yaw of pi/2; the mimic turns 2 theta + 0.1 more.
    arm = np.array([1.0 - 0.2 * math.sin(theta), s + 0.2 * math.cos(theta), 0.5])
    phi = math.pi / 2 + theta + 2 * theta + 0.1
    np.testing.assert_allclose(
        T[:3, 3], arm + 0.3 * np.array([math.cos(phi), math.sin(phi), 0.0]), atol=1e-12
    )
    np.testing.assert_allclose(T[:3, :3], rz(phi) @ rz(0.1) @ ry(0.2) @ rx(0.3), atol=1e-12)


def test_mimic_of_mimic_is_composed() -> None:
    """a = 2 b + 0.1 and b = 3 c + 0.2 load as a = 6 c + 0.5, a single mimic of c."""
    xml = """<robot name="m"><link name="r"/><link name="x"/><link name="y"/><link name="z"/>
      <joint name="c" type="continuous"><parent link="r"/><child link="x"/></joint>
      <joint name="b" type="continuous"><parent link="x"/><child link="y"/>
        <mimic joint="c" multiplier="3" offset="0.2"/></joint>
      <joint name="a" type="continuous"><parent link="y"/><child link="z"/>
        <mimic joint="b" multiplier="2" offset="0.1"/></joint>
    </robot>"""
    skel = load_urdf(xml)
    assert skel.dof == 1 and skel.joints[2].mimic == Mimic("c", 6.0, 0.5)
    assert skel.joints[1].mimic == Mimic("c", 3.0, 0.2)
    np.testing.assert_array_equal(skel.joints[0].axis, [1.0, 0.0, 0.0])  # URDF's default axis


# --- malformed input (what urdfdom reads leniently is in test_urdf_lenient.py) --------------------


def doc(body: str, links: str = "a b") -> str:
    return f"<robot name='r'>{''.join(f'<link name={n!r}/>' for n in links.split())}{body}</robot>"


def joint(
    name: str = "j", jtype: str = "revolute", inner: str = "", parent: str = "a", child: str = "b"
) -> str:
    limit = "" if "<limit" in inner or jtype != "revolute" else "<limit lower='-1' upper='1' velocity='1'/>"
    return (
        f"<joint name='{name}' type='{jtype}'><parent link='{parent}'/><child link='{child}'/>"
        f"{limit}{inner}</joint>"
    )


MALFORMED = {
    "xml syntax": ("<robot name='r'>\n<link name='a'>\n</robot>", "XML parse error at line 3"),
    "root element": ("<model name='r'/>", "root element is <model>, expected <robot>"),
    "short xyz": (
        doc(joint("elbow", inner="<origin xyz='1 2'/>")),
        "joint 'elbow': <origin xyz='1 2'> needs 3",
    ),
    "rpy text": (doc(joint(inner="<origin rpy='0 x 0'/>")), "<origin rpy='0 x 0'> needs 3 finite numbers"),
    "nan xyz": (doc(joint(inner="<origin xyz='nan 0 0'/>")), "needs 3 finite numbers"),
    "limit text": (
        doc(joint(inner="<limit lower='low' upper='1' velocity='1'/>")),
        "<limit lower='low'> is not a number",
    ),
    "missing parent": (
        doc("<joint name='j' type='fixed'><child link='b'/></joint>"),
        "joint 'j': missing <parent",
    ),
    "missing child": (
        doc("<joint name='j' type='fixed'><parent link='a'/></joint>"),
        "joint 'j': missing <child",
    ),
    "empty child": (
        doc("<joint name='j' type='fixed'><parent link='a'/><child/></joint>"),
        "<child> has no link",
    ),
    "unknown link": (doc(joint(child="nowhere")), "child link 'nowhere' is not a <link>"),
    "two roots": (doc("", "a b"), "2 root links"),
    "no link": ("<robot name='r'/>", "has no <link>"),
    "cycle": (doc(joint("j1", parent="a", child="b") + joint("j2", parent="b", child="a")), "cycle"),
    "detached cycle": (
        doc(
            joint("j1", child="b") + joint("j2", parent="c", child="d") + joint("j3", parent="d", child="c"),
            "a b c d",
        ),
        "cycle through links 'c', 'd'",
    ),
    "self loop": (doc(joint("j1", child="b") + joint("j2", parent="c", child="c"), "a b c"), "cycle"),
    "two parents": (doc(joint("j1") + joint("j2")), "link 'b' is the child of two joints, 'j1' and 'j2'"),
    "duplicate link": (doc(joint(), "a b b"), "repeated: 'b'"),
    "duplicate joint": (
        doc(joint("j", child="b") + joint("j", child="c"), "a b c"),
        "joint names must be unique",
    ),
    "unknown type": (doc(joint("h", "hinge")), "type 'hinge' is unknown; URDF joint types: revolute"),
    "missing type": (doc("<joint name='j'><parent link='a'/><child link='b'/></joint>"), "missing type"),
    "revolute no limit": (
        doc("<joint name='k' type='revolute'><parent link='a'/><child link='b'/></joint>"),
        "a revolute joint needs a <limit> element",
    ),
    "prismatic no limit": (doc(joint(jtype="prismatic")), "a prismatic joint needs a <limit>"),
    "lower > upper": (doc(joint(inner="<limit lower='1' upper='-1' velocity='1'/>")), "has lower > upper"),
    "zero axis": (doc(joint(inner="<axis xyz='0 0 0'/>")), "<axis xyz='0 0 0'> must be a non-zero vector"),
    "mimic no joint": (doc(joint(inner="<mimic/>")), "<mimic> has no joint attribute"),
    "mimic cycle": (
        doc(
            joint("p", "continuous", "<mimic joint='q'/>")
            + joint("q", "continuous", "<mimic joint='p'/>", "b", "c"),
            "a b c",
        ),
        "mimic joints form a cycle",
    ),
    "nameless link": ("<robot name='r'><link name='a'/><link/></robot>", "<link> number 2"),
    "nameless joint": (doc("<joint type='fixed'/>"), "<joint> number 1"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_documents_raise_urdf_error_naming_the_element(case: str) -> None:
    """Every malformed document raises URDFError whose message points at the culprit."""
    xml, message = MALFORMED[case]
    with pytest.raises(URDFError) as info:
        load_urdf(xml)
    assert message in str(info.value)


def test_file_errors(tmp_path: Path) -> None:
    """Missing files, directories, wrong source types and broken files say what and where."""
    with pytest.raises(URDFError, match="not found"):
        load_urdf(tmp_path / "missing.urdf")
    with pytest.raises(URDFError, match="cannot read URDF file"):
        load_urdf(tmp_path)
    with pytest.raises(URDFError, match="file path or a URDF XML string, got int"):
        load_urdf(42)  # type: ignore[arg-type]
    broken = tmp_path / "broken.urdf"
    broken.write_text("<robot name='r'>\n  <link name='a'/>\n  <joint name='j' type='x'\n</robot>\n")
    with pytest.raises(URDFError, match=r"broken\.urdf: XML parse error at line 4"):
        load_urdf(broken)
    bad = tmp_path / "bad.urdf"
    bad.write_text(doc(joint("elbow", inner="<origin xyz='1 2'/>")))
    with pytest.raises(URDFError, match=r"bad\.urdf: joint 'elbow': <origin xyz='1 2'> needs 3"):
        load_urdf(bad)


def test_unknown_base_or_tip_lists_the_links() -> None:
    """Unknown base or tip links raise UnknownNameError whose message lists the valid links."""
    for kwargs in ({"base_link": "nope"}, {"tip_links": ["tip", "nope"]}):
        with pytest.raises(UnknownNameError) as info:
            load_urdf(TOY, **kwargs)
        assert "'nope'" in str(info.value) and "'world', 'slider', 'wheel', 'arm', 'tip'" in str(info.value)


def test_bad_chain_requests_raise_skeleton_error() -> None:
    """A tip outside the base's sub-tree, the base as tip, or a leaf base cannot form a chain."""
    with pytest.raises(SkeletonError, match="tip link 'slider' does not descend from base link 'wheel'"):
        load_urdf(TOY, base_link="wheel", tip_links="slider")
    with pytest.raises(SkeletonError, match="is the base link"):
        load_urdf(TOY, base_link="arm", tip_links=["tip", "arm"])
    with pytest.raises(SkeletonError, match="no tip link"):
        load_urdf(TOY, base_link="tip")
    with pytest.raises(SkeletonError, match="outside|mimicked by 'follow'"):
        load_urdf(TOY, base_link="wheel")  # follow mimics spin, which is above the base


# --- xacro: .xacro files are expanded (test_xacro_files.py); macros inside a .urdf are refused ---------

XACRO = """<?xml version="1.0"?>
<robot name="arm" xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:property name="length" value="0.5"/>
  <link name="base"/>
</robot>"""


@pytest.mark.parametrize("variant", ["elements", "no_namespace"])
def test_xacro_in_a_urdf_file_is_refused_with_the_way_out(tmp_path: Path, variant: str) -> None:
    """Macros in a file not named .xacro give a URDFError saying to give a .xacro file or expand it first."""
    path = tmp_path / "arm.urdf"
    if variant == "elements":
        path.write_text(XACRO)
    else:  # macros without the xmlns:xacro declaration are not even well-formed XML
        path.write_text(XACRO.replace(' xmlns:xacro="http://www.ros.org/wiki/xacro"', ""))
    with pytest.raises(URDFError, match=r"xacro.*the .xacro file itself.*`xacro robot.urdf.xacro > robot.urdf`"):
        parse_urdf(path)


def test_a_urdf_named_xacro_is_expanded(tmp_path: Path) -> None:
    """A plain URDF in a .urdf.xacro file reads as the URDF itself (xacro leaves it as it is)."""
    path = tmp_path / "arm.urdf.xacro"
    path.write_text(TOY)
    assert parse_urdf(path).joints == parse_urdf(TOY).joints


def test_expanded_urdf_keeping_the_xacro_namespace_reads() -> None:
    """Expanded files often keep xmlns:xacro on <robot> (the official iiwa does): they are URDFs."""
    text = TOY.replace("<robot ", '<robot xmlns:xacro="http://wiki.ros.org/xacro" ', 1)
    assert text != TOY
    assert parse_urdf(text).links == parse_urdf(TOY).links
