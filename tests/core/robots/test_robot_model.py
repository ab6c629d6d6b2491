# SPDX-License-Identifier: GPL-3.0-or-later
"""RobotModel: the whole URDF tree a rig stores, its JSON round trip, tool links and joint values."""

import json
import math
import warnings

import numpy as np
import pytest
from data_files import data_file
from robot_cases import dual_arm_urdf, rail_arm_urdf

from ik_core import SkeletonError, URDFError, effector_poses
from ik_core.robots.model import RobotModel, wrap_into_limits
from ik_core.robots.presets import list_presets, load_preset


def _random_q(skeleton, rng, n=20):
    lo = np.where(np.isfinite(skeleton.lower), skeleton.lower, -2 * np.pi)
    hi = np.where(np.isfinite(skeleton.upper), skeleton.upper, 2 * np.pi)
    return rng.uniform(lo, hi, size=(n, skeleton.dof))


@pytest.mark.parametrize("make", [rail_arm_urdf, dual_arm_urdf])
def test_json_round_trip_is_exact(make):
    """A model read back from its JSON has the same joints, limits (inf included) and forward kinematics."""
    model = RobotModel.from_urdf(make())
    text = model.to_json()
    json.loads(text)  # plain JSON: no Infinity or NaN literals
    assert "Infinity" not in text
    back = RobotModel.from_json(text)
    assert back.urdf == model.urdf and back.joint_order == model.joint_order
    q = _random_q(model.skeleton, np.random.default_rng(0))
    np.testing.assert_array_equal(effector_poses(back.skeleton, q), effector_poses(model.skeleton, q))


def _json_joint_by_joint(model):
    """The JSON text of the model as written one joint at a time (the code before issue 26)."""
    def number(value):
        return float(value) if math.isfinite(value) else None

    joints = []
    for j in model.urdf.joints:
        entry = {"name": j.name, "type": j.type, "parent": j.parent, "child": j.child, "xyz": list(j.xyz),
                 "rpy": list(j.rpy), "axis": list(j.axis), "lower": number(j.lower), "upper": number(j.upper),
                 "velocity": number(j.velocity), "effort": number(j.effort)}
        if j.mimic is not None:
            entry["mimic"] = {"joint": j.mimic.joint, "multiplier": j.mimic.multiplier, "offset": j.mimic.offset}
        joints.append(entry)
    return json.dumps({"schema": "articulate-robot-model/1", "name": model.name, "links": list(model.urdf.links),
                       "joints": joints, "home": {k: float(v) for k, v in model.home.items()},
                       "acceleration": {k: float(v) for k, v in model.acceleration.items()},
                       "source": dict(model.source)})


@pytest.mark.parametrize("make", [rail_arm_urdf, dual_arm_urdf, lambda: data_file("robots", "panda.urdf"),
                                  lambda: "ur5e", lambda: "kinova_gen3_7dof"])
def test_json_text_equals_the_joint_by_joint_text(make):
    """to_json writes, character for character, what writing one joint at a time wrote (mimics, nulls, presets)."""
    source = make()
    model = RobotModel.from_preset(source) if source in list_presets() else RobotModel.from_urdf(source)
    assert model.to_json() == _json_joint_by_joint(model)


@pytest.mark.parametrize("preset", list_presets())
def test_preset_model_matches_the_preset_skeleton(preset):
    """A preset's model puts its default tool exactly where the preset skeleton's tool is, home pose included."""
    model = RobotModel.from_preset(preset)
    old = load_preset(preset)
    (tool,) = model.default_tools()
    chain = model.chain_skeleton(tool)
    assert chain.moving_joint_names == old.moving_joint_names
    np.testing.assert_allclose(chain.preferred_q, old.preferred_q)
    q = _random_q(old, np.random.default_rng(1))
    np.testing.assert_allclose(effector_poses(chain, q, tool), effector_poses(old, q, "tool"), atol=1e-12)
    assert model.source["preset"] == preset


def test_default_tools_are_one_per_arm():
    """Tree robots get a tool per arm (not per gripper finger); the official Panda its flange, not a collision link."""
    assert RobotModel.from_urdf(dual_arm_urdf()).default_tools() == ["l_tool", "r_tool"]
    assert RobotModel.from_urdf(rail_arm_urdf()).default_tools() == ["tool0"]
    panda = RobotModel.from_urdf(data_file("robots", "panda.urdf"))
    assert panda.default_tools() == ["panda_link8"]


def test_joint_order_is_document_order_without_mimics():
    """Exports follow the URDF's joint order; mimic joints own no value."""
    model = RobotModel.from_urdf(dual_arm_urdf())
    assert model.joint_order[0] == "torso" and "l_finger2" not in model.joint_order
    assert model.joint_order.index("l_j6") < model.joint_order.index("l_finger1") < model.joint_order.index("r_j1")
    kinds = dict(zip(model.joint_order, model.kinds()))
    assert kinds["l_finger1"] == "prismatic" and kinds["torso"] == "revolute"


def test_chain_from_a_base_link_starts_there():
    """A chain from an inner link has that link's frame as its world and only the joints below it."""
    model = RobotModel.from_urdf(dual_arm_urdf())
    chain = model.chain_skeleton("l_tool", "chest")
    assert "torso" not in chain.moving_joint_names and chain.moving_joint_names[0] == "l_j1"
    q_whole = np.zeros(model.skeleton.dof)
    whole_tool = effector_poses(model.skeleton, q_whole, "l_tool")
    chest = model.link_rest_frame("chest")
    np.testing.assert_allclose(chest @ effector_poses(chain, np.zeros(chain.dof), "l_tool"), whole_tool, atol=1e-12)


def test_tool_not_below_base_lists_valid_tools():
    """A tool link outside the base's sub-tree is refused with the valid tool links named."""
    model = RobotModel.from_urdf(dual_arm_urdf())
    with pytest.raises(SkeletonError, match="valid tool links: .*'r_tool'") as err:
        model.chain_skeleton("l_tool", "r_l2")
    assert "l_tool" not in str(err.value).split("valid tool links:")[1]


@pytest.mark.parametrize("kind", ["floating", "planar"])
def test_floating_and_planar_joints_are_held_and_noted(kind):
    """Floating and planar joints load (urdfdom reads them), held at their origin, with a note naming them."""
    plain = RobotModel.from_urdf(rail_arm_urdf())
    text = rail_arm_urdf().replace('name="turn" type="continuous"', f'name="turn" type="{kind}"')
    model = RobotModel.from_urdf(text)
    assert model.urdf.joint("turn").type == kind and "turn" not in model.joint_order
    assert model.joint_order == tuple(n for n in plain.joint_order if n != "turn")
    assert any("'turn'" in note and kind in note and "held" in note for note in model.notes)
    held, rest = effector_poses(model.skeleton, np.zeros(model.skeleton.dof)), effector_poses(
        plain.skeleton, np.zeros(plain.skeleton.dof))
    np.testing.assert_allclose(held, rest, atol=1e-12)  # held where the joint's zero puts it


def test_stored_model_of_another_schema_is_refused():
    """Text that is not a stored model fails with a message, never a KeyError."""
    with pytest.raises(URDFError, match="schema"):
        RobotModel.from_json(json.dumps({"schema": "other/1"}))
    with pytest.raises(URDFError, match="not valid JSON"):
        RobotModel.from_json("{")
    data = RobotModel.from_urdf(rail_arm_urdf()).to_dict()
    del data["joints"][0]["parent"]
    with pytest.raises(URDFError, match="malformed"):
        RobotModel.from_dict(data)


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_a_stored_model_with_an_angle_that_is_no_number_names_the_joint_quietly(value: float) -> None:
    """JSON reads "Infinity" and "NaN": such an origin angle is refused by joint name, with no RuntimeWarning."""
    data = RobotModel.from_urdf(rail_arm_urdf()).to_dict()
    name = data["joints"][2]["name"]
    data["joints"][2]["rpy"] = [0.0, value, 0.0]
    model = RobotModel.from_json(json.dumps(data))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(SkeletonError, match=f"joint '{name}': origin contains NaN or infinite values"):
            _ = model.skeleton


def test_wrap_into_limits_moves_whole_turns_only():
    """Angles outside [lower, upper] move by whole turns inside; others, prismatic and unbounded stay."""
    rng = np.random.default_rng(3)
    lower = np.array([-1.0, -7.0, -np.inf, -0.5])
    upper = np.array([2.0, 7.0, np.inf, 0.5])
    revolute = np.array([True, True, False, False])
    legal = rng.uniform([-1.0, -7.0, -20.0, -0.5], [2.0, 7.0, 20.0, 0.5], size=(200, 4))
    turns = rng.integers(-3, 4, size=(200, 4)) * 2 * np.pi * np.array([1, 1, 0, 0])
    out = wrap_into_limits(legal + turns, lower, upper, revolute)
    assert np.all((out >= lower - 1e-12) & (out <= upper + 1e-12))
    np.testing.assert_allclose(np.remainder(out - legal - turns + np.pi, 2 * np.pi) - np.pi, 0, atol=1e-9)
    np.testing.assert_array_equal(out[:, 2:], legal[:, 2:])
    inside = wrap_into_limits(legal, lower, upper, revolute)
    np.testing.assert_array_equal(inside, legal)
    stuck = wrap_into_limits(np.array([[3.0, 0, 0, 0]]), np.array([-1.0, 0, 0, 0]), np.array([1.0, 0, 0, 0]),
                             revolute)
    assert stuck[0, 0] == 3.0  # no turn brings 3 rad into [-1, 1]: left for the limit check to report


def test_serial_tool_is_the_tip_of_a_single_chain():
    """A single arm's tool is picked by structure; a tree, or a chain with two tool-like ends, has none."""
    assert RobotModel.from_urdf(rail_arm_urdf()).serial_tool() == "tool0"
    assert RobotModel.from_urdf(dual_arm_urdf()).serial_tool() is None
    # The Panda's self-collision links hang from every link by fixed joints: still one chain.
    assert RobotModel.from_urdf(data_file("robots", "panda.urdf")).serial_tool() == "panda_link8"
    two_ends = rail_arm_urdf().replace("</robot>", '<link name="tcp"/><joint name="tcp_joint" type="fixed">'
                                                   '<parent link="l6"/><child link="tcp"/></joint></robot>')
    model = RobotModel.from_urdf(two_ends)
    assert model.default_tools() == ["tool0", "tcp"] and model.serial_tool() is None
    # Fingers (a prismatic joint and its mimic) branch the chain below the wrist.
    fingers = rail_arm_urdf().replace("</robot>", "".join(
        f'<link name="f{k}"/><joint name="f{k}_joint" type="prismatic"><parent link="l6"/><child link="f{k}"/>'
        '<axis xyz="0 1 0"/><limit lower="0" upper="0.04" effort="1" velocity="1"/></joint>'
        for k in (1, 2)) + "</robot>")
    assert RobotModel.from_urdf(fingers).serial_tool() is None


def test_tool_candidates_put_the_default_tools_first():
    """Every link a chain can end on, once each: default tools, then the other leaves, then the rest."""
    model = RobotModel.from_urdf(dual_arm_urdf())
    candidates = model.tool_candidates()
    assert candidates[:2] == model.default_tools() == ["l_tool", "r_tool"]
    assert sorted(candidates) == sorted(model.links_below())
    leaves = set(model.urdf.leaf_links())
    ranks = [0 if c in model.default_tools() else 1 if c in leaves else 2 for c in candidates]
    assert ranks == sorted(ranks)


# --- the queries an import makes, against walks of the tree joint by joint ------------------------------------
def _walk_nearest_moving(urdf):
    """Link -> the nearest moving joint at or above it, or None: a walk down the tree (the code before issue 26)."""
    nearest = {urdf.root_link: None}
    for j in urdf.joints_below(urdf.root_link):
        nearest[j.child] = j.name if j.moves else nearest[j.parent]
    return nearest


def _walk_links_below(urdf, base):
    moved = {base: False}
    for j in urdf.joints_below(base):
        moved[j.child] = moved[j.parent] or j.moves
    return [link for link in urdf.links if moved.get(link)]


def _walk_default_tools(urdf):
    order = {link: k for k, link in enumerate(urdf.links)}
    nearest = _walk_nearest_moving(urdf)
    leaves = [link for link in urdf.leaf_links() if nearest[link] is not None]
    named = [link for link in leaves if any(key in link.lower() for key in ("tool", "tcp", "flange", "end_effector",
                                                                             "ee_link", "eef"))]
    covered = {nearest[link] for link in named}
    has_moving_child = {nearest[j.parent] for j in urdf.joints if j.moves}
    fixed_depth, under_covered = {urdf.root_link: 0}, {urdf.root_link: False}
    for j in urdf.joints_below(urdf.root_link):
        fixed_depth[j.child] = 0 if j.moves else fixed_depth[j.parent] + 1
        under_covered[j.child] = under_covered[j.parent] or (j.moves and j.name in covered)
    best = {}
    for leaf in leaves:
        end = nearest[leaf]
        if leaf in named or end in has_moving_child or under_covered[leaf]:
            continue
        score = (fixed_depth[leaf], order[leaf])
        if end not in best or score > best[end][0]:
            best[end] = (score, leaf)
    return sorted(named + [leaf for _score, leaf in best.values()], key=order.__getitem__)


def _walk_serial_tool(urdf):
    nearest = _walk_nearest_moving(urdf)
    parents = [nearest[j.parent] for j in urdf.joints if j.moves]
    tools = _walk_default_tools(urdf)
    return tools[0] if len(parents) == len(set(parents)) and len(tools) == 1 else None


def _walk_tool_candidates(urdf):
    below, leaves = _walk_links_below(urdf, urdf.root_link), set(urdf.leaf_links())
    first = [link for link in _walk_default_tools(urdf) if link in below]
    return first + [link for link in below if link in leaves and link not in first] + [
        link for link in below if link not in leaves and link not in first]


def _random_robot(seed: int, n: int) -> RobotModel:
    """n links in shuffled document order: random parents, some tool-like names, most joints fixed.

    Fixed joints give branch ends several rigidly attached leaves to choose a tool from.
    """
    from ik_core.formats.urdf_model import UrdfJoint, UrdfModel

    rng = np.random.default_rng(seed)
    names = [f"link{k}" + ("_TCP" if rng.random() < 0.1 else "") for k in range(n)]
    chain = rng.random() < 0.3
    joints = [UrdfJoint(f"j{k}", "fixed" if rng.random() < 0.6 else "revolute",
                        names[k - 1 if chain else int(rng.integers(0, k))], names[k], lower=-1.0, upper=1.0)
              for k in range(1, n)]
    links = [names[k] for k in rng.permutation(n)]
    return RobotModel(UrdfModel(f"random{seed}", tuple(links), tuple(joints[k] for k in rng.permutation(n - 1))))


@pytest.mark.parametrize("seed", range(40))
def test_tool_queries_equal_walks_of_the_tree(seed):
    """Tool links and candidates, links below any base and the serial check, on whole arrays, equal the walks."""
    model = _random_robot(seed, int(np.random.default_rng(seed).integers(2, 60)))
    urdf = model.urdf
    assert model.default_tools() == _walk_default_tools(urdf)
    assert model.serial_tool() == _walk_serial_tool(urdf)
    assert model.tool_candidates() == _walk_tool_candidates(urdf)
    for base in urdf.links:
        assert model.links_below(base) == _walk_links_below(urdf, base)


def test_json_text_keeps_integers_and_negative_zeros_as_written():
    """Numbers a model holds as ints or -0.0 are written as before, and limits as floats or null."""
    from ik_core.formats.urdf_model import UrdfJoint, UrdfModel
    from ik_core.model.skeleton import Mimic

    joints = (UrdfJoint("a", "revolute", "base", "l1", (0, 0, 1), (-0.0, 0.0, 1e-300), (0, 0, 1), -1, 2, 3),
              UrdfJoint("b", "prismatic", "l1", "l2", axis=(1.0, 0.0, 0.0), lower=0.0, upper=0.5,
                        mimic=Mimic("a", -2, 0.25)),
              UrdfJoint("c\u00e9\"", "fixed", "l2", "l3"))
    model = RobotModel(UrdfModel("r\u00e9", ("base", "l1", "l2", "l3"), joints), home={"a": 1})
    assert model.to_json() == _json_joint_by_joint(model)


@pytest.mark.parametrize("urdf", [rail_arm_urdf, dual_arm_urdf])
def test_stored_model_read_a_column_at_a_time_is_the_model_written(urdf):
    """from_json reads all joints' fields at once: the model equals the one stored (mimic fingers and a
    continuous joint's unbounded limits included), writes the same text again, and a field of the wrong kind
    is malformed."""
    model = RobotModel.from_urdf(urdf())
    back = RobotModel.from_json(model.to_json())
    assert back.urdf == model.urdf and back.to_json() == model.to_json()
    assert back.urdf.joints == model.urdf.joints and back.joint_order == model.joint_order
    assert list(back.urdf.columns.mimics) == list(model.urdf.columns.mimics)
    for got, want in zip(back.limits(), model.limits(), strict=True):
        np.testing.assert_array_equal(got, want)
    data = model.to_dict()
    data["joints"][0]["lower"] = "low"
    with pytest.raises(URDFError, match="malformed"):
        RobotModel.from_dict(data)
    data = model.to_dict()
    data["joints"][-1]["xyz"] = 3.0
    with pytest.raises(URDFError, match="malformed"):
        RobotModel.from_dict(data)


def _long_named_robot() -> str:
    """Three joints whose names are too long for 20 bytes: two sharing a long start and end, one of two-byte
    characters (a mimic of the first, with the home pose given for the second), and a short one."""
    def joint(name, parent, child, inner=""):
        return (f"<joint name='{name}' type='revolute'><parent link='{parent}'/><child link='{child}'/>"
                f"<axis xyz='0 0 1'/><limit lower='-1' upper='1' effort='1' velocity='1'/>{inner}</joint>")
    links = "".join(f"<link name='l{k}'/>" for k in range(5))
    first = "arm_" + "x" * 20 + "_joint"
    mimic = f"<mimic joint='{first}' multiplier='2'/>"
    return (f"<robot name='r'>{links}{joint(first, 'l0', 'l1')}{joint('arm_' + 'x' * 19 + 'y_joint', 'l1', 'l2')}"
            f"{joint('é' * 15, 'l2', 'l3', mimic)}{joint('short', 'l3', 'l4')}</robot>")


def test_names_within_bytes_are_unique_short_utf8_and_keep_the_kinematics():
    """Long joint names (Blender keeps 63 bytes of a bone's name) are cut to start ~ end, unique, whole
    characters; mimic sources and home follow; the URDF's names are kept, through JSON too; FK is unchanged."""
    model = RobotModel.from_urdf(_long_named_robot())
    model = RobotModel(model.urdf, home={"arm_" + "x" * 19 + "y_joint": 0.5})
    short = model.within_bytes(20)
    names = short.skeleton.joint_names
    assert all(len(n.encode()) <= 20 for n in names) and len(set(names)) == len(names) and "short" in names
    assert sorted(short.urdf_names.values()) == sorted(["arm_" + "x" * 20 + "_joint", "arm_" + "x" * 19 + "y_joint",
                                                        "é" * 15])
    assert all("~" in n for n in short.urdf_names) and short.urdf_name("short") == "short"
    mimic = short.skeleton.joints[2]
    assert short.urdf_name(mimic.name) == "é" * 15
    assert short.urdf_name(mimic.mimic.joint) == "arm_" + "x" * 20 + "_joint"
    assert dict(zip(short.skeleton.moving_joint_names, short.skeleton.preferred_q))[
        next(k for k, v in short.urdf_names.items() if v.endswith("y_joint"))] == 0.5
    q = _random_q(model.skeleton, np.random.default_rng(1))
    np.testing.assert_array_equal(effector_poses(short.skeleton, q), effector_poses(model.skeleton, q))
    back = RobotModel.from_json(short.to_json())
    assert back.urdf_names == short.urdf_names and back.joint_order == short.joint_order
    assert short.within_bytes(20) is short and model.within_bytes(64) is model  # nothing to cut: itself
    assert short.within_bytes(20).to_json() == model.within_bytes(20).to_json()  # the same names every time


def test_renaming_onto_a_joint_kept_or_an_unknown_joint_is_refused():
    model = RobotModel.from_urdf(_long_named_robot())
    with pytest.raises(SkeletonError, match="several joints the name.*'short'"):
        model.renamed({model.joint_order[0]: "short"})
    with pytest.raises(SkeletonError, match="cannot rename 'ghost': not joints"):
        model.renamed({"ghost": "g"})
    with pytest.raises(URDFError, match="'urdf_names' is not a mapping of names"):
        RobotModel.from_dict({**model.to_dict(), "urdf_names": ["a"]})
