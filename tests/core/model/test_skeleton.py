# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of the skeleton model: validation, the q layout, names, and sub-chain extraction."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ik_core.errors import LimitError, SkeletonError, UnknownNameError
from ik_core.model.chains import sub_chain
from ik_core.model.kinematics import effector_poses
from ik_core.model.skeleton import Effector, Joint, JointKind, Mimic, Skeleton

KINDS = ("revolute", "continuous", "prismatic", "ball", "fixed")


def random_transform(rng: np.random.Generator) -> np.ndarray:
    """A random rigid transform (rotation from a QR decomposition with det +1)."""
    Q, R = np.linalg.qr(rng.normal(size=(3, 3)))
    Q = Q * np.sign(np.diag(R))
    if np.linalg.det(Q) < 0:
        Q[:, 0] = -Q[:, 0]
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = Q, rng.normal(scale=0.5, size=3)
    return T


def arm() -> Skeleton:
    """A branched skeleton: a ball shoulder, a limited elbow, a mimic wrist, a fixed tool, a side arm."""
    rng = np.random.default_rng(0)
    joints = [
        Joint("root", "fixed", -1, random_transform(rng)),
        Joint("shoulder", "ball", 0, random_transform(rng)),
        Joint("elbow", "revolute", 1, random_transform(rng), [0, 2, 0], -2.0, 0.5, velocity=3.0),
        Joint("wrist", "revolute", 2, random_transform(rng), [1, 0, 0], -1, 1, mimic=Mimic("elbow", 0.5)),
        Joint("slide", "prismatic", 3, random_transform(rng), [0, 0, 1], 0.0, 0.2, stiffness=0.5),
        Joint("tool", "fixed", 4, random_transform(rng)),
        Joint("other", "continuous", 0, random_transform(rng), [0, 0, 1]),
    ]
    effectors = [Effector("hand", 5, random_transform(rng)), Effector("side", 6)]
    return Skeleton(joints, effectors, name="arm")


# --- joint validation ---------------------------------------------------------------------------

BAD_JOINTS = {
    "empty name": (dict(name=""), SkeletonError, "non-empty"),
    "unknown kind": (dict(kind="hinge"), SkeletonError, "valid kinds: revolute, continuous, prismatic, ball"),
    "zero axis": (dict(axis=[0, 0, 0]), SkeletonError, "axis must be a finite non-zero 3-vector"),
    "nan axis": (dict(axis=[np.nan, 0, 1]), SkeletonError, "axis"),
    "short axis": (dict(axis=[1, 0]), SkeletonError, "axis"),
    "origin shape": (dict(origin=np.eye(3)), SkeletonError, "4x4 transform, got shape (3, 3)"),
    "origin nan": (dict(origin=np.full((4, 4), np.nan)), SkeletonError, "NaN"),
    "origin scaled": (dict(origin=np.diag([2.0, 1, 1, 1])), SkeletonError, "not a proper rotation"),
    "origin mirrored": (dict(origin=np.diag([-1.0, 1, 1, 1])), SkeletonError, "not a proper rotation"),
    "origin last row": (dict(origin=np.vstack([np.eye(4)[:3], [1, 0, 0, 1]])), SkeletonError, "last row"),
    "lower > upper": (dict(lower=1.0, upper=-1.0), LimitError, "lower limit 1.0 must not exceed upper"),
    "nan limit": (dict(lower=np.nan), LimitError, "lower limit"),
    "zero velocity": (dict(velocity=0.0), LimitError, "velocity limit must be > 0"),
    "stiffness": (dict(stiffness=1.0), LimitError, "stiffness must be in [0, 1)"),
    "ball mimic": (dict(kind="ball", mimic=Mimic("x")), SkeletonError, "only 1-DoF joints can mimic"),
}


@pytest.mark.parametrize("case", sorted(BAD_JOINTS))
def test_invalid_joints_raise(case: str) -> None:
    """Each malformed joint field raises the documented error with a message naming the problem."""
    overrides, error, message = BAD_JOINTS[case]
    kwargs = {"name": "j", **overrides}
    with pytest.raises(error) as info:
        Joint(**kwargs)
    assert message in str(info.value)


def test_joint_normalisation() -> None:
    """Axes are normalised, unbounded kinds get infinite limits, arrays are read-only."""
    j = Joint("j", "revolute", axis=[0, 3, 4], lower=-1, upper=2)
    np.testing.assert_allclose(j.axis, [0, 0.6, 0.8], atol=1e-15)
    assert (j.lower, j.upper, j.dof) == (-1.0, 2.0, 1)
    for kind, dof in (("continuous", 1), ("ball", 3), ("fixed", 0)):
        k = Joint("k", kind, lower=-1, upper=1)
        assert (k.lower, k.upper, k.dof, k.kind.dof) == (-np.inf, np.inf, dof, dof)
    assert Joint("m", mimic=Mimic("j")).dof == 0
    with pytest.raises(ValueError):
        j.axis[0] = 1.0
    with pytest.raises(ValueError):
        j.origin[0, 3] = 1.0


# --- skeleton validation and layout -------------------------------------------------------------


def test_invalid_skeletons_raise() -> None:
    """Empty, duplicate names, bad parent order, bad mimics and bad effectors are rejected."""
    with pytest.raises(SkeletonError, match="at least one joint"):
        Skeleton([])
    with pytest.raises(SkeletonError, match="repeated: a"):
        Skeleton([Joint("a"), Joint("b", parent=0), Joint("a", parent=1)])
    with pytest.raises(SkeletonError, match=r"parents must come earlier in the list \(-1 for a root, 0..0"):
        Skeleton([Joint("a"), Joint("b", parent=1)])
    with pytest.raises(SkeletonError, match="has parent 5"):
        Skeleton([Joint("a"), Joint("b", parent=5)])
    with pytest.raises(SkeletonError, match="has parent -2"):
        Skeleton([Joint("a", parent=-2)])
    with pytest.raises(UnknownNameError, match="unknown joint 'ghost'; valid joints: 'a', 'b'"):
        Skeleton([Joint("a"), Joint("b", parent=0, mimic=Mimic("ghost"))])
    with pytest.raises(SkeletonError, match="non-mimic 1-DoF"):
        Skeleton([Joint("a", "ball"), Joint("b", parent=0, mimic=Mimic("a"))])
    with pytest.raises(SkeletonError, match="non-mimic 1-DoF"):
        Skeleton([Joint("a"), Joint("b", parent=0, mimic=Mimic("a")), Joint("c", parent=1, mimic=Mimic("b"))])
    with pytest.raises(SkeletonError, match="effector names must be unique"):
        Skeleton([Joint("a")], [Effector("e", 0), Effector("e", 0)])
    with pytest.raises(SkeletonError, match="outside 0..0"):
        Skeleton([Joint("a")], [Effector("e", 1)])
    with pytest.raises(SkeletonError, match="preferred_q must hold 1 finite values"):
        Skeleton([Joint("a")], preferred_q=[0.0, 1.0])
    with pytest.raises(SkeletonError, match="effector"):
        Effector("e", 0, np.eye(3))


def test_configuration_layout() -> None:
    """q concatenates ball (3), revolute and prismatic variables; fixed and mimic joints own none."""
    skel = arm()
    assert skel.dof == 6 and skel.moving_joint_names == ("shoulder", "elbow", "slide", "other")
    np.testing.assert_array_equal(skel.q_index, [-1, 0, 3, -1, 4, -1, 5])
    np.testing.assert_array_equal(skel.mimic_source, [-1, -1, -1, 2, -1, -1, -1])
    inf = np.inf
    np.testing.assert_array_equal(skel.lower, [-inf, -inf, -inf, -2.0, 0.0, -inf])
    np.testing.assert_array_equal(skel.upper, [inf, inf, inf, 0.5, 0.2, inf])
    np.testing.assert_array_equal(skel.velocity, [inf, inf, inf, 3.0, inf, inf])
    np.testing.assert_array_equal(skel.stiffness, [0, 0, 0, 0, 0.5, 0])
    np.testing.assert_allclose(skel.mid_q(), [0, 0, 0, -0.75, 0.1, 0])
    np.testing.assert_array_equal(skel.preferred_q, skel.mid_q())
    q = np.array([[5.0, -5, 0, 3, -1, 9], [0, 0, 0, -1, 0.1, 0]])
    np.testing.assert_array_equal(skel.clamp(q)[0], [5, -5, 0, 0.5, 0, 9])
    np.testing.assert_array_equal(skel.within_limits(q), [False, True])
    for arr in (skel.lower, skel.upper, skel.velocity, skel.q_index, skel.preferred_q):
        assert not arr.flags.writeable
    assert repr(skel) == "Skeleton('arm', joints=7, dof=6, effectors=['hand', 'side'])"


def test_names_and_structure() -> None:
    """Lookups by name and index, ancestors, children, and the default effector."""
    skel = arm()
    assert skel.joint_index("slide") == 4 and skel.joint_index(4) == 4
    assert skel.effector_index("side") == 1 and skel.effector("hand").joint == 5
    assert skel.ancestors("tool") == (0, 1, 2, 3, 4, 5) and skel.children("root") == (1, 6)
    single = Skeleton([Joint("a"), Joint("b", parent=0)])
    assert single.effector_names == ("b",) and single.effector("b").joint == 1


@pytest.mark.parametrize(
    ("lookup", "message"),
    [
        (lambda s: s.joint_index("elbw"), "unknown joint 'elbw'; valid joints: 'root', 'shoulder', 'elbow'"),
        (lambda s: s.joint_index(9), "unknown joint index '9'; valid joint index"),
        (lambda s: s.effector("hnd"), "unknown effector 'hnd'; valid effectors: 'hand', 'side'"),
        (lambda s: s.effector_index(2), "unknown effector index '2'; valid effector index"),
        (lambda s: sub_chain(s, "nope"), "unknown effector or joint 'nope'; valid effector or joints: 'hand'"),
        (lambda s: sub_chain(s, "hand", root="nope"), "unknown joint 'nope'"),
    ],
)
def test_unknown_names_list_the_valid_ones(lookup, message: str) -> None:  # noqa: ANN001
    """Unknown names raise UnknownNameError (a LookupError) whose message lists the valid names."""
    with pytest.raises(UnknownNameError) as info:
        lookup(arm())
    assert isinstance(info.value, LookupError) and message in str(info.value)


# --- chain extraction ---------------------------------------------------------------------------


@st.composite
def trees(draw: st.DrawFn) -> Skeleton:
    """Random trees (possibly with several roots) of every joint kind, some joints mimicking."""
    n = draw(st.integers(2, 8))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    joints: list[Joint] = []
    for i in range(n):
        kind = draw(st.sampled_from(KINDS))
        sources = [j.name for j in joints if j.kind.dof == 1 and j.mimic is None]
        mimic = (
            Mimic(draw(st.sampled_from(sources)), 1.5, 0.1)
            if sources and kind in KINDS[:3] and draw(st.booleans())
            else None
        )
        parent = draw(st.integers(-1, i - 1)) if i else -1
        axis = rng.normal(size=3) + 1e-3
        joints.append(Joint(f"j{i}", kind, parent, random_transform(rng), axis, -1.0, 1.0, mimic=mimic))
    effectors = [Effector(f"e{i}", i, random_transform(rng)) for i in range(n) if draw(st.booleans())]
    return Skeleton(joints, effectors or [Effector("e", n - 1)], name="tree")


def fk_agrees(full: Skeleton, sub: Skeleton, tips: list[str], rng: np.random.Generator) -> None:
    """Tip poses of ``sub`` equal those of ``full`` at rest and with random kept variables."""
    starts = [full.q_index[full.joint_index(n)] for n in sub.moving_joint_names]
    sizes = [full.joints[full.joint_index(n)].dof for n in sub.moving_joint_names]
    kept = np.array([k for s, d in zip(starts, sizes, strict=True) for k in range(s, s + d)], dtype=int)
    for scale in (0.0, 1.0):
        q_sub = scale * rng.uniform(-1, 1, sub.dof)
        q_full = np.zeros(full.dof)
        q_full[kept] = q_sub
        np.testing.assert_allclose(
            effector_poses(sub, q_sub, tips), effector_poses(full, q_full, tips), atol=1e-12
        )


@settings(max_examples=80, deadline=None)
@given(trees(), st.data())
def test_chain_keeps_tip_poses(skel: Skeleton, data: st.DataObject) -> None:
    """chain(tips) keeps exactly the tips' paths and their FK, at rest and for random kept q."""
    names = list(skel.effector_names)
    tips = data.draw(st.lists(st.sampled_from(names), min_size=1, max_size=len(names), unique=True))
    try:
        sub = sub_chain(skel, tips)
    except SkeletonError as e:  # a kept mimic joint may follow a joint outside the paths
        assert "outside the chain" in str(e)
        return
    path = sorted({i for t in tips for i in skel.ancestors(skel.effector(t).joint)})
    assert sub.joint_names == tuple(skel.joints[i].name for i in path)
    assert sub.effector_names == tuple(tips)
    fk_agrees(skel, sub, tips, np.random.default_rng(0))


@settings(max_examples=60, deadline=None)
@given(trees(), st.data())
def test_chain_from_an_inner_root_folds_the_rest_pose(skel: Skeleton, data: st.DataObject) -> None:
    """With root set, joints above it are folded at q = 0 and the tip FK is unchanged."""
    tip = data.draw(st.sampled_from(skel.effector_names))
    root = skel.joints[data.draw(st.sampled_from(skel.ancestors(skel.effector(tip).joint)))].name
    try:
        sub = sub_chain(skel, tip, root=root)
    except SkeletonError as e:
        assert "outside the chain" in str(e)
        return
    assert sub.joint_names[0] == root and sub.joints[0].parent == -1
    fk_agrees(skel, sub, [tip], np.random.default_rng(1))


def test_chain_details() -> None:
    """Joint names as tips, preferred_q carried over, multiple roots, and chain errors."""
    skel = Skeleton(arm().joints, arm().effectors, preferred_q=np.arange(6.0) / 10)
    sub = sub_chain(skel, ["elbow", "hand"])
    assert sub.effector_names == ("elbow", "hand") and sub.effector("elbow").joint == 2
    np.testing.assert_array_equal(sub.preferred_q, [0.0, 0.1, 0.2, 0.3, 0.4])
    with pytest.raises(SkeletonError, match="tip 'side' does not descend from root 'shoulder'"):
        sub_chain(skel, "side", root="shoulder")
    with pytest.raises(SkeletonError, match="'wrist' mimics 'elbow', which is outside the chain"):
        sub_chain(skel, "hand", root="wrist")
    forest = Skeleton(
        [Joint("a"), Joint("b", "prismatic", 0), Joint("c", parent=-1, axis=[1, 0, 0])],
        [Effector("eb", 1), Effector("ec", 2)],
    )
    assert sub_chain(forest, "ec").joint_names == ("c",) and sub_chain(forest, ["eb", "ec"]).dof == 3


# --- whole robots at once: Skeleton.from_columns and Effector.many -------------------------------


def random_columns(rng: np.random.Generator, n: int) -> dict:
    """Columns of n joints of every kind: some rotations noisy (snapped), axes of any length, mimics, stiffness."""
    kinds = [KINDS[k] for k in rng.integers(0, len(KINDS), n)]
    origins = np.stack([random_transform(rng) for _ in range(n)])
    origins[:, :3, :3] += rng.normal(scale=1e-7, size=(n, 3, 3)) * (rng.random((n, 1, 1)) < 0.5)
    lower = rng.uniform(-2.0, 0.0, n)
    mimics: list[Mimic | None] = [None] * n
    for i in range(n):
        sources = [k for k in range(i) if kinds[k] in KINDS[:3] and mimics[k] is None]
        if kinds[i] in KINDS[:3] and sources and rng.random() < 0.3:
            mimics[i] = Mimic(f"j{rng.choice(sources)}", float(rng.normal()), float(rng.normal()))
    return {
        "names": [f"j{i}" for i in range(n)], "kinds": kinds,
        "parents": [int(rng.integers(-1, i)) if i else -1 for i in range(n)], "origins": origins,
        "axes": rng.normal(size=(n, 3)) * rng.uniform(0.1, 10.0, (n, 1)), "lower": lower,
        "upper": lower + rng.uniform(0.0, 3.0, n), "velocity": rng.uniform(0.5, 5.0, n),
        "mimics": mimics, "stiffness": rng.uniform(0.0, 0.9, n),
    }


def one_by_one(columns: dict, i: int) -> dict:
    """The keyword arguments of joint i's constructor."""
    c = columns
    return {"name": c["names"][i], "kind": c["kinds"][i], "parent": c["parents"][i], "origin": c["origins"][i],
            "axis": c["axes"][i], "lower": c["lower"][i], "upper": c["upper"][i], "velocity": c["velocity"][i],
            "mimic": c["mimics"][i], "stiffness": c["stiffness"][i]}


@pytest.mark.parametrize("seed", range(8))
def test_from_columns_equals_joints_made_one_by_one(seed: int) -> None:
    """Every joint field and every skeleton array of from_columns equals, bit for bit, the one-by-one build."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    columns = random_columns(rng, n)
    offsets = np.stack([random_transform(rng) for _ in range(n)])
    effectors = [Effector(f"e{i}", i, offsets[i]) for i in range(n)]
    slow = Skeleton([Joint(**one_by_one(columns, i)) for i in range(n)], effectors, name="s")
    fast = Skeleton.from_columns(*columns.values(), effectors=Effector.many([f"e{i}" for i in range(n)],
                                                                            np.arange(n), offsets), name="s")
    for a, b in zip(slow.joints, fast.joints, strict=True):
        assert (a.name, a.kind, a.parent, a.lower, a.upper, a.velocity, a.mimic, a.limit, a.stiffness) == (
            b.name, b.kind, b.parent, b.lower, b.upper, b.velocity, b.mimic, b.limit, b.stiffness)
        assert type(b.kind) is JointKind and type(b.parent) is int
        np.testing.assert_array_equal(a.origin, b.origin)
        np.testing.assert_array_equal(a.axis, b.axis)
        assert not (b.origin.flags.writeable or b.axis.flags.writeable)
    for a, b in zip(slow.effectors, fast.effectors, strict=True):
        assert (a.name, a.joint) == (b.name, b.joint)
        np.testing.assert_array_equal(a.offset, b.offset)
    for attr in ("q_index", "mimic_source", "lower", "upper", "velocity", "stiffness", "preferred_q"):
        np.testing.assert_array_equal(getattr(slow, attr), getattr(fast, attr))
    assert (slow.dof, slow.ball_q_starts, slow.joint_names, slow.moving_joint_names) == (
        fast.dof, fast.ball_q_starts, fast.joint_names, fast.moving_joint_names)


@pytest.mark.parametrize("case", sorted(set(BAD_JOINTS) - {"short axis", "origin shape"}))  # no array holds those
def test_from_columns_raises_what_the_first_bad_joint_raises(case: str) -> None:
    """A bad joint among good ones raises the constructor's error and message; a later bad joint waits its turn."""
    overrides, error, _ = BAD_JOINTS[case]
    rng = np.random.default_rng(1)
    columns = random_columns(rng, 6)
    columns["mimics"], columns["kinds"][3] = [None] * 6, "revolute"  # limits and mimics apply
    bad = {**one_by_one(columns, 3), **overrides}
    with pytest.raises(error) as alone:
        Joint(**bad)
    for field, value in (("names", bad["name"]), ("kinds", bad["kind"]), ("mimics", bad["mimic"])):
        columns[field][3] = value
    for field, key in (("origins", "origin"), ("axes", "axis"), ("lower", "lower"), ("upper", "upper"),
                       ("velocity", "velocity"), ("stiffness", "stiffness")):
        columns[field][3] = bad[key]
    columns["kinds"][5] = "hinge"  # a second bad joint, after the first
    with pytest.raises(error) as together:
        Skeleton.from_columns(*columns.values())
    assert str(together.value) == str(alone.value)


def test_from_columns_refuses_columns_of_the_wrong_shape_and_skeleton_errors() -> None:
    """Arrays that do not hold one entry per joint are refused; the skeleton's own checks still run."""
    origins = np.stack([np.eye(4)] * 2)
    with pytest.raises(SkeletonError, match=r"axes of 2 joints must have shape \(2, 3\), got \(3,\)"):
        Skeleton.from_columns(["a", "b"], ["revolute"] * 2, [-1, 0], origins, axes=[0.0, 0.0, 1.0])
    with pytest.raises(SkeletonError, match="repeated: a"):
        Skeleton.from_columns(["a", "a"], ["revolute"] * 2, [-1, 0], origins)
    with pytest.raises(SkeletonError, match="has parent 1"):
        Skeleton.from_columns(["a", "b"], ["revolute"] * 2, [-1, 1], origins)
    with pytest.raises(SkeletonError, match="at least one joint"):
        Skeleton.from_columns([], [], [], np.zeros((0, 4, 4)))
    with pytest.raises(SkeletonError, match=r"offsets of 1 effectors must have shape \(1, 4, 4\)"):
        Effector.many(["e"], [0], np.eye(4))
    with pytest.raises(SkeletonError, match="not a proper rotation"):
        Effector.many(["e", "f"], [0, 0], np.stack([np.eye(4), np.diag([-1.0, 1, 1, 1])]))


def test_mimic_errors_come_in_joint_order() -> None:
    """The first mimic joint with a bad source is the one reported, whatever is wrong with a later one."""
    a, b = Joint("a"), Joint("b", "ball", 0)
    with pytest.raises(SkeletonError, match="'c' mimics 'b', which must be a non-mimic 1-DoF"):
        Skeleton([a, b, Joint("c", parent=1, mimic=Mimic("b")), Joint("d", parent=2, mimic=Mimic("ghost"))])
    with pytest.raises(UnknownNameError, match="unknown joint 'ghost'"):
        Skeleton([a, b, Joint("c", parent=1, mimic=Mimic("ghost")), Joint("d", parent=2, mimic=Mimic("b"))])


def test_replace_shares_the_joints_and_checks_the_pose() -> None:
    """replace() renames or re-poses a skeleton without copying joints; a bad pose is refused; the original stays."""
    skel = arm()
    other = skel.replace(name="other", preferred_q=np.full(6, 0.1))
    assert other.joints is skel.joints and other.effectors is skel.effectors
    assert (other.name, skel.name) == ("other", "arm")
    np.testing.assert_array_equal(other.preferred_q, np.full(6, 0.1))
    np.testing.assert_array_equal(skel.preferred_q, skel.mid_q())
    assert skel.replace().preferred_q is skel.preferred_q
    with pytest.raises(SkeletonError, match="preferred_q must hold 6 finite values"):
        skel.replace(preferred_q=[np.nan] * 6)
