# SPDX-License-Identifier: GPL-3.0-or-later
"""The URDF reader loads what urdfdom loads (issue 26): sloppy mimics, floating and planar joints,
rigid robots and single links, with notes; truly broken files fail naming the element and its line;
time is linear in the number of joints."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from ik_core.errors import SkeletonError, URDFError
from ik_core.formats.urdf import URDFElementError, load_urdf, parse_urdf
from ik_core.formats.urdf_model import UrdfJoint, UrdfModel, resolve_mimics
from ik_core.model.kinematics import effector_poses
from ik_core.model.skeleton import Mimic
from ik_core.robots.model import RobotModel


def robot(body: str, links: str, name: str = "r") -> str:
    return f"<robot name='{name}'>{''.join(f'<link name={n!r}/>' for n in links.split())}{body}</robot>"


def joint(name: str, jtype: str, parent: str, child: str, inner: str = "", xyz: str = "0.1 0 0") -> str:
    limit = "<limit lower='-3' upper='3' effort='1' velocity='1'/>" if jtype in ("revolute", "prismatic") else ""
    return (f"<joint name='{name}' type='{jtype}'><parent link='{parent}'/><child link='{child}'/>"
            f"<origin xyz='{xyz}'/><axis xyz='0 0 1'/>{limit}{inner}</joint>")


def planar_xy(angles: list[float], lengths: list[float]) -> np.ndarray:
    """(2,) end of a planar chain whose joint k turns by angles[k] about z, then reaches lengths[k] along x."""
    heading, point = 0.0, np.zeros(2)
    for a, length in zip(angles, lengths, strict=True):
        heading += a
        point += length * np.array([math.cos(heading), math.sin(heading)])
    return point


# --- mimics ------------------------------------------------------------------------------------


MIMIC_CHAIN = robot(
    joint("c", "revolute", "base", "l1", xyz="0 0 0")
    + joint("b", "continuous", "l1", "l2", "<mimic joint='c' multiplier='-2' offset='0.3'/>", xyz="0.4 0 0")
    + joint("a", "revolute", "l2", "l3", "<mimic joint='b' multiplier='0.5' offset='-0.1'/>", xyz="0.3 0 0")
    + joint("tool_joint", "fixed", "l3", "tool", xyz="0.2 0 0"),
    "base l1 l2 l3 tool",
)


@pytest.mark.parametrize("q", [-2.0, -0.3, 0.0, 0.7, 2.5])
def test_mimic_of_mimic_with_negative_multiplier_and_offsets_matches_hand_fk(q: float) -> None:
    """b = -2 c + 0.3 and a = 0.5 b - 0.1 = -c + 0.05: one variable, and the tool lands where the planar sum says."""
    skel = load_urdf(MIMIC_CHAIN, tip_links="tool")
    assert skel.dof == 1 and skel.moving_joint_names == ("c",)
    a, b = (skel.joints[skel.joint_index(n)].mimic for n in "ab")
    assert (a.joint, a.multiplier, a.offset) == ("c", -1.0, pytest.approx(0.05, abs=1e-15))
    assert b == Mimic("c", -2.0, 0.3)
    T = effector_poses(skel, np.array([q]), "tool")
    b = -2 * q + 0.3
    expected = planar_xy([q, b, 0.5 * b - 0.1], [0.4, 0.3, 0.2])
    np.testing.assert_allclose(T[:2, 3], expected, atol=1e-12)
    assert abs(T[2, 3]) < 1e-12


def test_resolve_mimics_is_linear_on_a_long_mimic_of_mimic_chain() -> None:
    """20,000 joints each mimicking the one before compose to multipliers 2^-k without walking each chain again."""
    n = 20_000
    joints = [UrdfJoint("j0", "continuous", "l0", "l1")]
    joints += [UrdfJoint(f"j{k}", "continuous", f"l{k}", f"l{k + 1}", mimic=Mimic(f"j{k - 1}", 0.5, 1.0))
               for k in range(1, n)]
    start = time.process_time()
    model = UrdfModel("long", tuple(f"l{k}" for k in range(n + 1)), tuple(joints))
    resolved = resolve_mimics(model.joints)
    assert time.process_time() - start < 5.0  # the walk per joint took minutes
    assert resolved["j1"] == Mimic("j0", 0.5, 1.0)
    # j_k = 0.5 j_{k-1} + 1: multiplier 0.5^k, offset 2 (1 - 0.5^k)
    assert resolved["j30"].joint == "j0" and resolved["j30"].multiplier == 0.5 ** 30
    assert resolved["j30"].offset == pytest.approx(2 * (1 - 0.5 ** 30), abs=1e-12)


MIMIC_TO_TOOL = robot(
    joint("src", "revolute", "root", "side", xyz="0 1 0")
    + joint("mount", "fixed", "root", "arm1", xyz="0 0 0")
    + joint("follower", "revolute", "arm1", "arm2", "<mimic joint='src' multiplier='-1'/>", xyz="0 0 0")
    + joint("tool_joint", "fixed", "arm2", "tool", xyz="0.5 0 0"),
    "root side arm1 arm2 tool",
)


def test_mimic_on_the_way_to_a_tool_pulls_in_its_source() -> None:
    """The only joint between root and tool mimics a joint on another branch: that joint is kept and drives the tool."""
    skel = load_urdf(MIMIC_TO_TOOL, tip_links="tool")
    assert skel.moving_joint_names == ("src",) and "follower" in skel.joint_names
    for q in (-1.0, 0.4, 2.0):
        np.testing.assert_allclose(effector_poses(skel, np.array([q]), "tool")[:2, 3],
                                   [0.5 * math.cos(-q), 0.5 * math.sin(-q)], atol=1e-12)
    model = RobotModel.from_urdf(MIMIC_TO_TOOL)
    assert "tool" in model.links_below() and model.chain_skeleton("tool").dof == 1
    assert model.joint_order == ("src",)


def test_mimic_on_a_fixed_joint_is_ignored_with_a_note() -> None:
    """urdfdom reads a mimic on a fixed joint and nothing follows it: the joint stays fixed, the file loads."""
    xml = robot(joint("f", "fixed", "a", "b", "<mimic joint='g' multiplier='2'/>")
                + joint("g", "continuous", "b", "c"), "a b c")
    model = parse_urdf(xml)
    assert model.joint("f").mimic is None and model.joint("f").type == "fixed"
    assert len(model.notes) == 1 and "'f'" in model.notes[0] and "ignored" in model.notes[0]
    assert load_urdf(xml).dof == 1


@pytest.mark.parametrize(("target", "why"), [("ghost", "names no joint"), ("f", "names a fixed joint"),
                                             ("free", "names a floating joint")])
def test_mimic_of_a_missing_or_still_joint_is_skipped_and_the_joint_moves_alone(target: str, why: str) -> None:
    """A mimic naming no joint, or a joint that does not move, is dropped with a note; its joint owns a variable."""
    xml = robot(joint("f", "fixed", "a", "b") + joint("free", "floating", "b", "c")
                + joint("m", "revolute", "c", "d", f"<mimic joint='{target}' multiplier='3'/>"), "a b c d")
    model = parse_urdf(xml)
    assert model.joint("m").mimic is None
    assert any("'m'" in n and why in n and "moves on its own" in n for n in model.notes)
    skel = model.to_skeleton()
    assert skel.moving_joint_names == ("m",) and skel.dof == 1
    assert RobotModel(model).joint_order == ("m",)


def test_a_cycle_of_mimics_is_refused_with_the_cycle_and_line() -> None:
    """Mimics that follow each other in a circle cannot be resolved: the error names the cycle and a line."""
    xml = robot(
        "\n" + joint("p", "continuous", "a", "b", "<mimic joint='q'/>")
        + "\n" + joint("q", "continuous", "b", "c", "<mimic joint='p'/>") + "\n", "a b c")
    with pytest.raises(URDFElementError, match=r"mimic joints form a cycle: p -> q -> p \(line 2\)"):
        parse_urdf(xml)


# --- joint types urdfdom reads that a rig holds still -------------------------------------------


@pytest.mark.parametrize("kind", ["floating", "planar"])
def test_floating_and_planar_joints_are_held_at_their_origin(kind: str) -> None:
    """A floating base or a planar joint loads as a fixed joint at its origin, noted; the arm on it moves."""
    xml = robot(joint("base_joint", kind, "world", "base", xyz="1 2 3")
                + joint("j1", "revolute", "base", "l1", xyz="0.5 0 0")
                + joint("tip_joint", "fixed", "l1", "tip", xyz="0.5 0 0"), "world base l1 tip")
    model = parse_urdf(xml)
    assert model.joint("base_joint").type == kind and not model.joint("base_joint").moves
    assert any("'base_joint'" in n and kind in n and "held at its origin" in n for n in model.notes)
    skel = model.to_skeleton(tip_links="tip")
    assert skel.moving_joint_names == ("j1",)
    np.testing.assert_allclose(effector_poses(skel, np.array([math.pi / 2]), "tip")[:3, 3], [1.5, 2.5, 3.0],
                               atol=1e-12)


def test_elements_and_attributes_urdfdom_ignores_are_ignored() -> None:
    """Dynamics, calibration, safety controllers, transmissions, gazebo, sensors and unknown tags change nothing."""
    plain = robot(joint("j", "revolute", "a", "b"), "a b")
    noisy = robot(
        "<material name='m'><color rgba='1 0 0 1'/></material><sensor name='s'/><custom foo='bar'><joint/></custom>"
        + joint("j", "revolute", "a", "b", "<dynamics damping='0.1'/><calibration rising='0'/>"
                "<safety_controller k_velocity='1'/><unknown_tag/>").replace("<joint ", "<joint extra='x' ")
        + "<transmission name='t'><joint name='j'/><actuator name='m'/></transmission>"
        "<gazebo reference='b'><joint name='fake' type='hinge'/></gazebo>", "a b")
    assert parse_urdf(noisy) == parse_urdf(plain) and parse_urdf(noisy).notes == ()


def test_negative_velocity_or_effort_is_read_as_unknown_with_a_note() -> None:
    """urdfdom reads a negative limit as written; it cannot bound anything, so it becomes unknown (inf), noted."""
    xml = robot("<joint name='j' type='revolute'><parent link='a'/><child link='b'/>"
                "<limit lower='0' upper='1' velocity='-1' effort='5'/></joint>", "a b")
    model = parse_urdf(xml)
    assert model.joint("j").velocity == math.inf and model.joint("j").effort == 5.0
    assert model.notes and "velocity='-1'" in model.notes[0]


# --- rigid robots and single links --------------------------------------------------------------


def test_robot_without_a_moving_joint_is_a_model_with_no_tools_and_a_reason() -> None:
    """Only fixed joints: a model and a skeleton of fixed joints (dof 0) whose link frames are exact."""
    xml = robot(joint("f1", "fixed", "base", "body", xyz="0 0 1") + joint("f2", "fixed", "body", "camera", xyz="1 0 0"),
                "base body camera", name="statue")
    model = RobotModel.from_urdf(xml)
    assert model.joint_order == () and model.default_tools() == [] and model.links_below() == []
    reason = model.no_tools_reason()
    assert reason is not None and "'statue' has no moving joint" in reason and "2 fixed joints" in reason
    assert model.skeleton.dof == 0 and model.serial_tool() is None and model.tool_candidates() == []
    np.testing.assert_allclose(model.link_rest_frame("camera")[:3, 3], [1.0, 0.0, 1.0])
    back = RobotModel.from_json(model.to_json())
    assert back.urdf == model.urdf


def test_single_link_robot_is_a_model_with_one_frame() -> None:
    """One link, no joint: the model loads; its skeleton is one fixed joint at the identity named after the link."""
    model = RobotModel.from_urdf("<robot name='rock'><link name='body'><visual/></link></robot>")
    assert model.urdf.links == ("body",) and model.urdf.root_link == "body" and model.joint_order == ()
    assert "'rock' is a single link ('body')" in model.no_tools_reason()
    sk = model.skeleton
    assert sk.joint_names == ("body",) and sk.dof == 0 and sk.effector_names == ("body",)
    np.testing.assert_array_equal(effector_poses(sk, np.zeros(0), "body"), np.eye(4))
    np.testing.assert_array_equal(model.link_rest_frame("body"), np.eye(4))
    assert model.default_tools() == [] and model.links_below() == []
    with pytest.raises(SkeletonError, match="the robot is a single link"):
        parse_urdf("<robot name='rock'><link name='body'/></robot>").to_skeleton()


def test_moving_robots_have_no_no_tools_reason() -> None:
    """The reason is only given when there is no moving joint."""
    assert RobotModel.from_urdf(MIMIC_CHAIN).no_tools_reason() is None


# --- truly broken files: the element and its line -----------------------------------------------


BROKEN = {
    "several roots": (robot("\n" + joint("j", "fixed", "a", "b") + "\n", "a b c"), "2 root links", None),
    "missing link": (robot("\n\n" + joint("j", "fixed", "a", "nowhere") + "\n", "a b"),
                     "child link 'nowhere' is not a <link>", 3),
    "cycle": (robot("\n" + joint("j1", "fixed", "a", "b") + "\n" + joint("j2", "fixed", "b", "c") + "\n"
                    + joint("j3", "fixed", "c", "b") + "\n", "a b c"), "child of two joints, 'j1' and 'j3'", 4),
    "detached cycle": (robot("\n" + joint("j1", "fixed", "a", "b") + "\n" + joint("j2", "fixed", "c", "d") + "\n"
                             + joint("j3", "fixed", "d", "c"), "a b c d"), "cycle through links 'c', 'd'", 4),
    "duplicate joint": (robot("\n" + joint("j", "fixed", "a", "b") + "\n" + joint("j", "fixed", "b", "c"), "a b c"),
                        "joint names must be unique", 3),
    "bad number": (robot("\n\n\n" + joint("elbow", "revolute", "a", "b", xyz="1 x 0"), "a b"),
                   "joint 'elbow': <origin xyz='1 x 0'> needs 3 finite numbers", 4),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_truly_broken_files_fail_naming_the_element_and_its_line(case: str) -> None:
    """What urdfdom refuses too is refused, the message naming the element and the line it is written on."""
    xml, message, line = BROKEN[case]
    with pytest.raises(URDFError) as info:
        parse_urdf(xml)
    text = str(info.value)
    assert message in text
    if line is not None:
        assert text.endswith(f"(line {line})")


def test_several_roots_name_the_roots_and_the_line_of_the_second(tmp_path) -> None:
    """Several roots: the roots are listed, with how to join them, and the file's line of the second root."""
    path = tmp_path / "two.urdf"
    path.write_text("<robot name='two'>\n  <link name='a'/>\n  <link name='b'/>\n</robot>\n")
    with pytest.raises(URDFError, match=r"two\.urdf: robot 'two' has 2 root links .*'a', 'b'.*joint.*\(line 3\)"):
        parse_urdf(path)


# --- scale ----------------------------------------------------------------------------------------


def generated(n: int, tree: bool) -> str:
    """A robot of n revolute joints: a chain, or a binary tree (joint k hangs from link (k - 1) // 2)."""
    parts = ["<robot name='gen'>", "<link name='l0'/>"]
    for k in range(1, n + 1):
        parent = (k - 1) // 2 if tree else k - 1
        parts.append(f"<link name='l{k}'/><joint name='j{k}' type='revolute'><parent link='l{parent}'/>"
                     f"<child link='l{k}'/><origin xyz='0 0 0.1' rpy='0 0 0'/><axis xyz='0 0 1'/>"
                     "<limit lower='-1' upper='1' effort='1' velocity='1'/></joint>")
    parts.append("</robot>")
    return "\n".join(parts)


@pytest.mark.parametrize("tree", [False, True], ids=["chain", "tree"])
def test_100k_joints_parse_in_linear_time(tree: bool) -> None:
    """100,000 joints read and checked in a few seconds of CPU (the per-joint name scans took minutes)."""
    text = generated(100_000, tree)
    start = time.process_time()
    model = parse_urdf(text)
    spent = time.process_time() - start
    assert len(model.joints) == 100_000 and model.root_link == "l0"
    assert model.joint("j99999").parent == ("l49999" if tree else "l99998")
    assert len(model.leaf_links()) == (50_001 if tree else 1)  # links 0..49,999 have children
    assert spent < 10.0, f"{spent:.1f} s"
    start = time.process_time()
    rm = RobotModel(model)
    assert len(rm.links_below()) == 100_000 and len(rm.joint_order) == 100_000
    assert rm.serial_tool() == (None if tree else "l100000")
    assert time.process_time() - start < 10.0
    skeleton = rm.skeleton
    assert len(skeleton.joints) == len(skeleton.effectors) == 100_000 and skeleton.dof == 100_000
    parent = skeleton.joints[skeleton.joint_index("j99999")].parent
    assert parent == skeleton.joint_index("j49999" if tree else "j99998")


def walk_to_skeleton(urdf: UrdfModel, base: str, tips: list[str]) -> tuple[list, list, list, list]:
    """``to_skeleton`` one joint at a time (the code before issue 26): names, parents, mimics and effector joints.

    Mimics are followed in document order (the code before took them from a set).
    """
    tips = list(dict.fromkeys(tips))
    by_child, by_name, children = {j.child: j for j in urdf.joints}, {j.name: j for j in urdf.joints}, {}
    for j in urdf.joints:
        children.setdefault(j.parent, []).append(j)
    order, stack = [], list(reversed(children.get(base, [])))
    while stack:
        order.append(stack.pop())
        stack.extend(reversed(children.get(order[-1].child, [])))
    keep: set[str] = set()

    def keep_path(link: str, what: str) -> set[str]:
        path = []
        while link != base:
            joint = by_child.get(link)
            if joint is None:
                raise SkeletonError(f"{what} does not descend from base link {base!r}")
            if joint.name in keep:
                break
            path.append(joint.name)
            link = joint.parent
        keep.update(path)
        return set(path)

    for tip in tips:
        if tip == base:
            raise SkeletonError(f"tip link {tip!r} is the base link; a chain needs at least one joint")
        keep_path(tip, f"tip link {tip!r}")
    resolved, mimics = resolve_mimics(urdf.joints), {}
    while pending := [j for j in urdf.joints if j.name in keep and j.mimic is not None and j.name not in mimics]:
        for joint in pending:
            mimic = mimics[joint.name] = resolved[joint.name]
            what = f"joint {mimic.joint!r} (mimicked by {joint.name!r})"
            if mimic.joint not in keep and mimic.joint not in keep_path(by_name[mimic.joint].child, what):
                raise SkeletonError(f"{what} sits above base link {base!r}, outside the chain")
    kept = [j for j in order if j.name in keep]
    index = {j.child: i for i, j in enumerate(kept)}
    return ([j.name for j in kept], [index.get(j.parent, -1) for j in kept], [mimics.get(j.name) for j in kept],
            [index[tip] for tip in tips])


@pytest.mark.parametrize("seed", range(60))
def test_to_skeleton_equals_the_walk_joint_by_joint(seed: int) -> None:
    """Random trees in shuffled document order, with held joints and mimics of mimics: any base, any tips."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 40))
    kinds = rng.choice(["revolute", "continuous", "prismatic", "fixed", "floating"], n)
    joints = []
    for k in range(1, n):
        moving = [i for i in range(1, k) if kinds[i] in ("revolute", "continuous", "prismatic")]
        mimic = (Mimic(f"j{rng.choice(moving)}", float(rng.normal()), float(rng.normal()))
                 if moving and kinds[k] in ("revolute", "prismatic") and rng.random() < 0.3 else None)
        joints.append(UrdfJoint(f"j{k}", str(kinds[k]), f"l{k - 1 if seed % 4 == 0 else rng.integers(0, k)}", f"l{k}",
                                tuple(rng.normal(size=3)), tuple(rng.normal(size=3)), (0.0, 0.6, 0.8), -1.0, 1.0,
                                float(rng.uniform(0.5, 2.0)), mimic=mimic))
    urdf = UrdfModel("r", tuple(f"l{k}" for k in rng.permutation(n)), tuple(joints[k] for k in rng.permutation(n - 1)))
    up = {j.child: j.parent for j in joints}

    def descends(link: str, base: str) -> bool:
        while link != base and link in up:
            link = up[link]
        return link == base

    for _ in range(8):
        base = f"l{rng.integers(0, n)}"
        below = [f"l{k}" for k in range(n) if f"l{k}" != base and descends(f"l{k}", base)]
        pool = below if below and rng.random() < 0.8 else [f"l{k}" for k in range(n)]  # mostly good requests
        tips = [str(t) for t in rng.choice(pool, int(rng.integers(1, 4)))]
        try:
            names, parents, mimics, tip_joints = walk_to_skeleton(urdf, base, tips)
        except SkeletonError as expected:
            with pytest.raises(SkeletonError) as got:
                urdf.to_skeleton(base, tips)
            assert str(got.value) == str(expected)
            continue
        skeleton = urdf.to_skeleton(base, tips)
        assert skeleton.joint_names == tuple(names)
        assert [j.parent for j in skeleton.joints] == parents and [j.mimic for j in skeleton.joints] == mimics
        assert [e.joint for e in skeleton.effectors] == tip_joints
        assert skeleton.effector_names == tuple(dict.fromkeys(tips))
        for j in skeleton.joints:
            source = urdf.joint(j.name)
            np.testing.assert_allclose(j.origin, source.origin, atol=1e-15)
            assert j.kind == (source.type if source.moves else "fixed")
            assert j.velocity == (source.velocity if source.moves else np.inf)
        assert urdf.leaf_links(base) == [j.child for j in urdf.joints_below(base) if not any(
            k.parent == j.child for k in urdf.joints)]
    assert urdf.joints_below("no such link") == []


def test_a_default_namespace_on_robot_is_read_as_urdfdom_reads_it() -> None:
    """``<robot xmlns="...">`` puts every element in a namespace for ElementTree, not for urdfdom: it loads the same."""
    plain = robot(joint("j", "revolute", "a", "b"), "a b")
    spaced = plain.replace("<robot ", "<robot xmlns='http://www.ros.org' ", 1)
    assert parse_urdf(spaced) == parse_urdf(plain)


def test_mimic_on_a_held_joint_is_ignored_and_a_mimic_of_a_skipped_mimic_still_follows() -> None:
    """A floating joint's mimic is dropped (it is held); b's mimic of a fixed joint is dropped, so a follows b alone."""
    xml = robot(joint("f", "fixed", "w", "x") + joint("free", "floating", "x", "y", "<mimic joint='b'/>")
                + joint("b", "revolute", "y", "z", "<mimic joint='f'/>")
                + joint("a", "revolute", "z", "t", "<mimic joint='b' multiplier='-1'/>"), "w x y z t")
    model = parse_urdf(xml)
    assert model.joint("free").mimic is None and model.joint("b").mimic is None
    assert model.joint("a").mimic == Mimic("b", -1.0, 0.0)
    assert any("'free'" in n and "held at its origin" in n for n in model.notes)
    assert load_urdf(xml).moving_joint_names == ("b",)


def test_a_held_joint_survives_the_stored_model_round_trip() -> None:
    """A rig stores its model as JSON: a floating joint comes back floating, held, out of the joint order."""
    xml = robot(joint("float", "floating", "world", "base", xyz="0 0 1") + joint("j", "revolute", "base", "tip"),
                "world base tip")
    model = RobotModel.from_urdf(xml)
    back = RobotModel.from_json(model.to_json())
    assert back.urdf == model.urdf and back.urdf.joint("float").type == "floating"
    assert back.joint_order == ("j",) and back.notes == ()  # notes belong to the import, not the stored model
    np.testing.assert_array_equal(back.link_rest_frame("tip"), model.link_rest_frame("tip"))


def test_joints_read_all_at_once_equal_joints_read_one_by_one(monkeypatch) -> None:
    """The reader that reads each field for all joints at once gives exactly the joints of the one-by-one reader,
    which takes over the whole file when one joint needs a note: missing origins, axes and limits, scaled axes,
    stray axes on fixed joints, limits without velocity or with velocity 0, mimics, held joints."""
    import ik_core.formats.urdf as reader

    calls = []
    one_by_one = reader._joints_one_by_one
    monkeypatch.setattr(reader, "_joints_one_by_one", lambda *args: calls.append(1) or one_by_one(*args))
    body = "".join([
        joint("a", "revolute", "l0", "l1"),
        "<joint name='b' type='continuous'><parent link='l1'/><child link='l2'/><axis xyz='0 3 4'/></joint>",
        "<joint name='c' type='fixed'><parent link='l2'/><child link='l3'/><axis xyz='0 0 0'/>"
        "<origin rpy='0.1 0.2 0.3'/></joint>",
        "<joint name='d' type='prismatic'><parent link='l3'/><child link='l4'/><limit lower='0' upper='0.1'/>"
        "<mimic joint='a' multiplier='-2' offset='0.5'/></joint>",
        "<joint name='e' type='continuous'><parent link='l4'/><child link='l5'/><limit effort='2' velocity='0'/>"
        "<origin xyz='1e-3 -2 3.5' rpy='0 0 0'/></joint>",
        "<joint name='f' type='floating'><parent link='l5'/><child link='l6'/><origin xyz='1 2 3'/></joint>",
        "<joint name='g' type='revolute'><parent link='l0'/><child link='l7'/><axis xyz='1 1 0'/>"
        "<limit lower='-1' upper='1' velocity='2' effort='3'/><mimic joint='missing'/></joint>",
    ])
    links = " ".join(f"l{k}" for k in range(8))
    at_once = parse_urdf(robot(body, links))
    assert not calls
    noted = parse_urdf(robot(body + joint("h", "revolute", "l0", "l8").replace("velocity='1'", "velocity='-1'"),
                             links + " l8"))
    assert calls and any("negative" in note for note in noted.notes)
    assert noted.joints[:-1] == at_once.joints and len(at_once.notes) == 2  # the missing mimic, the floating joint
    assert noted.notes == ("joint 'h': <limit velocity='-1'> is negative; read as unknown", *at_once.notes)
    assert at_once.joint("b").axis == (0.0, 0.6, 0.8) and at_once.joint("e").velocity == math.inf


def _random_number_text(rng: np.random.Generator) -> str:
    """A number as files write it: repeated or not, signed, exponents, padded, Python-only spellings now and then."""
    kind = rng.integers(8)
    if kind == 0:
        return str(rng.choice(["0", "1", "-1", "0.0", "+.5", "1e-3", "1_0", "-0"]))
    value = rng.uniform(-4.0, 4.0)
    text = f"{value:.{rng.integers(1, 18)}g}" if kind < 6 else repr(float(value))
    return f" {text}\t" if kind == 7 else text


def test_joints_read_all_at_once_equal_joints_read_one_by_one_on_random_joints() -> None:
    """Bit for bit, on 300 random joints of every type: numbers distinct and repeated, odd spellings and spacing,
    absent attributes and elements, axes to normalise, fixed joints with stray axes and limits, mimics."""
    import xml.etree.ElementTree as ET

    import ik_core.formats.urdf as reader

    rng = np.random.default_rng(26)
    types = ["revolute", "continuous", "prismatic", "fixed", "floating", "planar"]
    parts = []
    for k in range(300):
        jtype = str(rng.choice(types))
        three = " ".join(_random_number_text(rng) for _ in range(3))
        inner = [f"<parent link='l{k}'/>", f"<child link='l{k + 1}'/>"]
        if rng.random() < 0.8:
            attrs = "".join(f" {a}='{' '.join(_random_number_text(rng) for _ in range(3))}'"
                            for a in ("xyz", "rpy") if rng.random() < 0.8)
            inner.append(f"<origin{attrs}/>")
        if rng.random() < 0.8 or jtype == "fixed":
            inner.append(f"<axis xyz='{three if jtype != 'fixed' or rng.random() < 0.5 else '0 0 0'}'/>")
        if jtype in ("revolute", "prismatic") or rng.random() < 0.5:
            low = -abs(float(rng.uniform(0.0, 3.0)))
            bounds = {"lower": f"{low:.{rng.integers(1, 18)}g}", "upper": f"{abs(low) + rng.random():.5g}",
                      "velocity": str(rng.choice(["0", "2.5", "1e3", _random_number_text(rng).strip("- ")])),
                      "effort": str(rng.choice(["0", "50", "7.25"]))}
            inner.append("<limit" + "".join(f" {a}='{v}'" for a, v in bounds.items() if rng.random() < 0.85) + "/>")
        if k and rng.random() < 0.1:
            inner.append(f"<mimic joint='j{k - 1}' multiplier='{_random_number_text(rng)}'/>")
        rng.shuffle(inner)
        parts.append(f"<joint name='j{k}' type='{jtype}'>{''.join(inner)}</joint>")
    elems = ET.fromstring(robot("".join(parts), " ".join(f"l{k}" for k in range(301)))).findall("joint")
    at_once = reader._plain_joints(elems)
    assert at_once is not None  # nothing here needs a note: the reader that reads all joints at once read them
    notes: list[str] = []
    one_by_one = reader._joints_one_by_one(elems, notes)
    assert at_once.joints() == one_by_one and not notes
    # Bit for bit, the signs of zeros included (== takes -0.0 for 0.0).
    for field in ("xyz", "rpy", "axis"):
        got = np.array([getattr(j, field) for j in at_once.joints()])
        np.testing.assert_array_equal(np.signbit(got), np.signbit([getattr(j, field) for j in one_by_one]))


def test_a_model_read_as_columns_equals_the_model_of_its_joints() -> None:
    """The reader's columns go into the model as they are: the joints made from them on demand, one joint
    looked up, the numbers, the skeleton and the checks are those of a model made from UrdfJoint tuples."""
    body = "".join([
        joint("a", "revolute", "l0", "l1"),
        "<joint name='b' type='continuous'><parent link='l1'/><child link='l2'/><axis xyz='0 3 4'/></joint>",
        joint("c", "prismatic", "l1", "l3", "<mimic joint='a' multiplier='-2' offset='0.5'/>"),
        "<joint name='d' type='fixed'><parent link='l0'/><child link='l4'/><origin rpy='0.1 0.2 0.3'/></joint>",
    ])
    read = parse_urdf(robot(body, "l0 l1 l2 l3 l4"))
    made = UrdfModel(read.name, read.links, tuple(read.joints))
    assert read == made and hash(read) == hash(made) and read.joints == made.joints
    assert read.joint("b") == made.joint("b") == read.joints[1] and read.joint("c").mimic == Mimic("a", -2.0, 0.5)
    for got, want in zip(read.numbers, made.numbers, strict=True):
        np.testing.assert_array_equal(got, want)
    assert read.to_skeleton().joint_names == made.to_skeleton().joint_names
    with pytest.raises(AttributeError, match="immutable"):
        read.name = "other"  # type: ignore[misc]


def test_a_joints_first_child_of_each_tag_is_read_as_find_reads_it() -> None:
    """Children found for all joints at once: a repeated element's first one counts, unknown elements and the
    order of the children do not matter, and a joint without a child element of some tag gets its default."""
    body = ("<joint name='a' type='revolute'><limit lower='-1' upper='1' effort='1' velocity='1'/><junk/>"
            "<origin xyz='1 0 0'/><origin xyz='2 0 0'/><child link='l1'/><axis xyz='0 1 0'/><parent link='l0'/>"
            "<axis xyz='1 0 0'/></joint>"
            "<joint name='b' type='fixed'><parent link='l1'/><child link='l2'/></joint>")
    model = parse_urdf(robot(body, "l0 l1 l2"))
    a, b = model.joints
    assert (a.parent, a.child, a.xyz, a.axis, a.lower) == ("l0", "l1", (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), -1.0)
    assert (b.xyz, b.rpy, b.upper, b.mimic) == ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), math.inf, None)
    with pytest.raises(URDFError, match="missing <parent link"):
        parse_urdf(robot("<joint name='c' type='fixed'><child link='l1'/></joint>", "l0 l1"))
