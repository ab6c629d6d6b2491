# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests for ik_core.limits.chart (BoxChart) and the box coordinates of ball limits.

A :class:`BoxChart` re-expresses every limited ball joint in its limit's own coordinates. The
checks here hold it to what its docstrings promise, on random serial and branched skeletons
that mix every kind of joint and limit: the chart's effectors sit where the skeleton's do,
feasible poses survive the round trip, the projection lands inside the chart's box and swing
ellipses, is idempotent and is the exact Euclidean projection (variational inequality), and
its answers are poses the skeleton's own limits accept. ``quadrant_ellipse_project`` is checked
against brute-force sampling of the convex set's boundary.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ik_core import ConeTwistLimit, Effector, EulerLimit, Joint, JointKind, Skeleton
from ik_core.limits import SwingTwistLimit, limit_violation, project_configuration
from ik_core.limits.ball import BoxCoordinates, quadrant_ellipse_project
from ik_core.limits.chart import BoxChart
from ik_core.model.kinematics import effector_poses
from ik_core.model.rotations import EULER_ORDERS, euler_to_matrix, matrix_to_rotvec, rotvec_to_matrix
from ik_core.model.skeleton import Mimic

POSE_TOL = 1e-12  # effector poses [m, and rotation-matrix entries]
FEASIBLE = 1e-9  # rad or m: what limit_violation may report for a feasible pose
HYP = settings(max_examples=25, deadline=None)
SEEDS = range(6)


# --- random skeletons -----------------------------------------------------------------------


def random_transform(rng: np.random.Generator, reach: float = 0.4) -> np.ndarray:
    """A rigid transform with a random rotation (any angle) and translation."""
    T = np.eye(4)
    T[:3, :3] = rotvec_to_matrix(rng.normal(size=3) * 1.5)
    T[:3, 3] = rng.normal(size=3) * reach
    return T


def random_axis(rng: np.random.Generator) -> np.ndarray:
    """A unit axis in no special direction."""
    v = rng.normal(size=3)
    return v / np.linalg.norm(v)


def random_euler_limit(rng: np.random.Generator, order: str) -> EulerLimit:
    """Euler ranges of three different kinds among: ordinary, locked, free (>= 2 pi), across +-pi."""
    kinds = rng.permutation(["range", "locked", "free", "across"])[:3]
    lower, upper, locked = [], [], []
    for kind in kinds:
        if kind == "range":
            c, w = rng.uniform(-2.0, 2.0), rng.uniform(0.05, 1.2)
            lo, hi = c - w, c + w
        elif kind == "free":
            lo, hi = [(-np.pi, np.pi), (-4.0, 4.0), (-1.0, 2.0 * np.pi)][rng.integers(3)]
        elif kind == "across":  # an interval through +-pi, written past pi or past -pi
            lo, hi = [(2.5, 3.5), (-3.8, -2.6), (np.pi - 0.4, np.pi + 0.9)][rng.integers(3)]
        else:
            lo, hi = rng.uniform(-1.0, 0.0), rng.uniform(0.0, 1.0)  # the lock overrides the range
        lower.append(lo)
        upper.append(hi)
        locked.append(kind == "locked")
    return EulerLimit(tuple(lower), tuple(upper), tuple(locked), order)


def random_swing_twist_limit(rng: np.random.Generator) -> SwingTwistLimit:
    """Blender ranges: asymmetric sides, some of zero width, a locked or asymmetric twist."""
    lower, upper = [], []
    for _ in range(3):
        lower.append(0.0 if rng.random() < 0.3 else -rng.uniform(0.1, 2.9))
        upper.append(0.0 if rng.random() < 0.3 else rng.uniform(0.1, 2.9))
    locked = (bool(rng.random() < 0.2), bool(rng.random() < 0.5), bool(rng.random() < 0.2))
    return SwingTwistLimit(tuple(lower), tuple(upper), locked)


def random_cone_twist_limit(rng: np.random.Generator) -> ConeTwistLimit:
    """An elliptical (sometimes flat) cone about an odd twist axis, a twist range not always around 0."""
    sx, sz = (0.0 if rng.random() < 0.15 else rng.uniform(0.05, 2.9) for _ in range(2))
    if rng.random() < 0.25:
        lo, hi = -np.pi, np.pi  # free twist
    else:
        lo, hi = np.sort(rng.uniform(-np.pi, np.pi, 2))
    axis = [(0.0, -1.0, 0.0), (1.0, 0.0, 0.0), (0.0, 0.0, -1.0), tuple(random_axis(rng))][rng.integers(4)]
    return ConeTwistLimit(sx, sz, lo, hi, axis)


def random_joints(rng: np.random.Generator, orders: tuple[str, str]) -> list[dict]:
    """Specifications of one joint of every kind (two Euler-limited balls), mimic after its source."""
    specs = [
        {"kind": JointKind.BALL, "limit": random_euler_limit(rng, orders[0])},
        {"kind": JointKind.BALL, "limit": random_euler_limit(rng, orders[1])},
        {"kind": JointKind.BALL, "limit": random_swing_twist_limit(rng), "tag": "swing"},
        {"kind": JointKind.BALL, "limit": random_cone_twist_limit(rng), "tag": "cone"},
        {"kind": JointKind.BALL},
        {"kind": JointKind.REVOLUTE, "lower": -0.7, "upper": 1.9, "tag": "leader"},
        {"kind": JointKind.CONTINUOUS},
        {"kind": JointKind.PRISMATIC, "lower": -0.2, "upper": 0.5},
        {"kind": JointKind.FIXED},
        {"kind": JointKind.REVOLUTE, "lower": -1.0, "upper": 1.0, "tag": "mimic"},
    ]
    specs = [specs[i] for i in rng.permutation(len(specs))]
    tags = [s.get("tag") for s in specs]
    i, j = tags.index("leader"), tags.index("mimic")
    if j < i:
        specs[i], specs[j] = specs[j], specs[i]
    return specs


def random_skeleton(seed: int, tree: bool) -> Skeleton:
    """A random serial chain, or a trunk with two branches, of every joint kind and limit.

    Euler orders cycle with the seed so every order appears over :data:`SEEDS`. Effectors: the
    tip(s), and one on the cone-twist joint itself (its frame is behind the chart's swing basis).
    """
    rng = np.random.default_rng(1000 * seed + tree)
    orders = (EULER_ORDERS[(2 * seed) % 6], EULER_ORDERS[(2 * seed + 1) % 6])
    specs = random_joints(rng, orders)
    n = len(specs)
    if tree:
        trunk = 3
        split = trunk + (n - trunk) // 2
        parents = [i - 1 for i in range(split)] + [trunk - 1] + list(range(split, n - 1))
        tips = [split - 1, n - 1]
    else:
        parents = list(range(-1, n - 1))
        tips = [n - 1]
    names = [f"j{i}" for i in range(n)]
    leader = names[[s.get("tag") for s in specs].index("leader")]
    joints = []
    for i, s in enumerate(specs):
        mimic = Mimic(leader, multiplier=-0.8, offset=0.3) if s.get("tag") == "mimic" else None
        joints.append(Joint(
            names[i], s["kind"], parents[i], random_transform(rng), random_axis(rng),
            s.get("lower", -np.inf), s.get("upper", np.inf), mimic=mimic, limit=s.get("limit"),
        ))
    cone = [s.get("tag") for s in specs].index("cone")
    effectors = [Effector(f"tip{k}", t, random_transform(rng)) for k, t in reversed(list(enumerate(tips)))]
    effectors.append(Effector("on_cone", cone, random_transform(rng)))
    return Skeleton(joints, effectors, name=f"random{seed}{'tree' if tree else 'chain'}")


SKELETONS = [
    pytest.param(seed, tree, id=f"{'tree' if tree else 'chain'}{seed}") for tree in (False, True) for seed in SEEDS
]


def swing_axes(skeleton: Skeleton) -> np.ndarray:
    """(K, 4) swing semi-axes of the skeleton's swing-twist and cone-twist joints, in joint order."""
    coords = [
        j.limit.box_coordinates() for j in skeleton.joints if j.kind is JointKind.BALL and j.limit is not None
    ]
    return np.array([c.swing for c in coords if c.kind == "swing_twist"]).reshape(-1, 4)


def in_quadrant_ellipses(w: np.ndarray, u: np.ndarray, axes: np.ndarray, tol: float = 1e-12) -> np.ndarray:
    """Whether (w, u) (..., K) lie in the quarter ellipses with semi-axes ``axes`` (K, 4) (zero: a segment)."""
    a = np.where(w >= 0.0, axes[:, 0], axes[:, 1])
    b = np.where(u >= 0.0, axes[:, 2], axes[:, 3])
    ok_w = np.where(a > 0.0, True, w == 0.0)
    ok_u = np.where(b > 0.0, True, u == 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(a > 0.0, (w / np.where(a > 0.0, a, 1.0)) ** 2, 0.0)
        r = r + np.where(b > 0.0, (u / np.where(b > 0.0, b, 1.0)) ** 2, 0.0)
    return ok_w & ok_u & (r <= 1.0 + tol)


def random_chart_points(chart: BoxChart, rng: np.random.Generator, n: int) -> np.ndarray:
    """Chart points far outside the limits (half) and spread over the finite box (half)."""
    far = rng.normal(size=(n // 2, chart.skeleton.dof)) * 3.0
    lo, hi = chart.lower, chart.upper
    finite = np.isfinite(lo) & np.isfinite(hi)
    u = rng.uniform(size=(n - n // 2, chart.skeleton.dof))
    inside = np.where(finite, lo, 0.0) + u * np.where(finite, hi - lo, 0.0)
    box = np.where(finite, inside, rng.normal(size=u.shape) * 3.0)
    return np.concatenate([far, box])


def feasible_configurations(skeleton: Skeleton, rng: np.random.Generator, n: int) -> np.ndarray:
    """Feasible q: projections of wild configurations (many on limits) and of mild ones (many inside)."""
    q = rng.normal(size=(n, skeleton.dof)) * np.where(np.arange(n) % 2 == 0, 2.5, 0.3)[:, None]
    return project_configuration(skeleton, q)


# --- BoxChart on random skeletons -----------------------------------------------------------


@pytest.mark.parametrize("seed,tree", SKELETONS)
def test_chart_effectors_are_the_skeletons(seed: int, tree: bool) -> None:
    """The chart keeps effector names and order and re-expresses every limited ball joint in its coordinates."""
    skeleton = random_skeleton(seed, tree)
    chart = BoxChart(skeleton)
    assert not chart.identity
    assert chart.skeleton.effector_names == skeleton.effector_names
    # Euler balls become three hinges (3 -> 3 variables); swing-twist and cone-twist balls a
    # swing ball plus a twist hinge (3 -> 4).
    assert chart.skeleton.dof == skeleton.dof + 2
    assert len(chart.swing_starts) == 2
    assert chart.lower.shape == chart.upper.shape == (chart.skeleton.dof,)
    assert np.all(chart.lower <= chart.upper)
    # The third swing component is pinned: swings are about axes perpendicular to the twist axis.
    s = np.array(chart.swing_starts)
    assert np.all(chart.lower[s + 2] == 0.0) and np.all(chart.upper[s + 2] == 0.0)


@pytest.mark.parametrize("seed,tree", SKELETONS)
def test_feasible_poses_map_to_the_same_poses(seed: int, tree: bool) -> None:
    """to_chart keeps every feasible pose's effectors (1e-12), and from_chart brings the same pose back.

    Feasible poses come from the skeleton's own projection (so many sit on Euler bounds, swing
    ellipses and twist ends) and from the chart itself (from_chart of projected chart points).
    """
    skeleton = random_skeleton(seed, tree)
    chart = BoxChart(skeleton)
    rng = np.random.default_rng(seed)
    q = feasible_configurations(skeleton, rng, 300)
    q = np.concatenate([q, chart.from_chart(chart.project(random_chart_points(chart, rng, 100)))])
    assert np.all(limit_violation(skeleton, q) <= FEASIBLE)
    want = effector_poses(skeleton, q)
    x = chart.to_chart(q)
    assert x.shape == (len(q), chart.skeleton.dof)
    assert np.abs(effector_poses(chart.skeleton, x) - want).max() <= POSE_TOL
    back = chart.from_chart(x)
    assert back.shape == q.shape
    assert np.abs(effector_poses(skeleton, back) - want).max() <= POSE_TOL
    assert np.all(x >= chart.lower) and np.all(x <= chart.upper)


@pytest.mark.parametrize("seed,tree", SKELETONS)
def test_to_chart_of_infeasible_poses_lands_inside(seed: int, tree: bool) -> None:
    """to_chart projects on the way: any q lands in the box and ellipses, at a pose the skeleton accepts."""
    skeleton = random_skeleton(seed, tree)
    chart = BoxChart(skeleton)
    rng = np.random.default_rng(seed + 50)
    x = chart.to_chart(rng.normal(size=(200, skeleton.dof)) * 2.5)
    assert np.all(x >= chart.lower) and np.all(x <= chart.upper)
    s = np.array(chart.swing_starts)
    assert np.all(in_quadrant_ellipses(x[:, s], x[:, s + 1], swing_axes(skeleton)))
    assert np.all(limit_violation(skeleton, chart.from_chart(x)) <= FEASIBLE)


@pytest.mark.parametrize("seed,tree", SKELETONS)
def test_projection_lands_inside_at_poses_the_skeleton_accepts(seed: int, tree: bool) -> None:
    """project(x) is inside chart.lower/upper and every swing ellipse; from_chart of it is feasible
    for the skeleton's own limits and has the chart's effector poses."""
    skeleton = random_skeleton(seed, tree)
    chart = BoxChart(skeleton)
    rng = np.random.default_rng(seed + 100)
    x = random_chart_points(chart, rng, 400)
    x0 = x.copy()
    y = chart.project(x)
    assert np.array_equal(x, x0), "project must not write into its argument"
    assert np.all(y >= chart.lower) and np.all(y <= chart.upper)
    s = np.array(chart.swing_starts)
    assert np.all(in_quadrant_ellipses(y[:, s], y[:, s + 1], swing_axes(skeleton)))
    q = chart.from_chart(y)
    assert np.all(limit_violation(skeleton, q) <= FEASIBLE)
    assert np.abs(effector_poses(skeleton, q) - effector_poses(chart.skeleton, y)).max() <= POSE_TOL


@pytest.mark.parametrize("seed,tree", SKELETONS)
def test_projection_is_idempotent(seed: int, tree: bool) -> None:
    """project(project(x)) == project(x) to 1e-12, also for points already on swing ellipses."""
    skeleton = random_skeleton(seed, tree)
    chart = BoxChart(skeleton)
    rng = np.random.default_rng(seed + 200)
    y = chart.project(random_chart_points(chart, rng, 300))
    assert np.abs(chart.project(y) - y).max() <= 1e-12


def swing_columns(chart: BoxChart) -> np.ndarray:
    """Chart columns of the swing pairs (the only non-box blocks of the feasible set)."""
    s = np.array(chart.swing_starts)
    return np.concatenate([s, s + 1])


@pytest.mark.parametrize("seed,tree", SKELETONS)
def test_projection_is_exact_on_the_box_variables(seed: int, tree: bool) -> None:
    """Outside the swing pairs the set is a box: every coordinate obeys (x - Px)(z - Px) <= 0 for feasible z.

    For a product of intervals the Euclidean projection satisfies the variational inequality
    coordinate by coordinate; a clamp to the wrong end or a wrapped angle breaks it.
    """
    skeleton = random_skeleton(seed, tree)
    chart = BoxChart(skeleton)
    rng = np.random.default_rng(seed + 200)
    x = random_chart_points(chart, rng, 300)
    y = chart.project(x)
    z = chart.project(random_chart_points(chart, rng, 300))
    box = np.setdiff1d(np.arange(chart.skeleton.dof), swing_columns(chart))
    vi = (x - y)[:, None, box] * (z[None, :, box] - y[:, None, box])
    assert vi.max() <= 1e-12


def test_projection_is_exact_on_the_swing_pairs() -> None:
    """The whole projection is Euclidean: (x - Px).(z - Px) <= 1e-9 for feasible z, swing pairs included.

    BoxChart's docstring promises the exact projection (what makes its box-constrained
    descents sound); this holds it to the variational inequality on every random skeleton.
    """
    worst = 0.0
    for seed in SEEDS:
        for tree in (False, True):
            chart = BoxChart(random_skeleton(seed, tree))
            rng = np.random.default_rng(seed + 200)
            x = random_chart_points(chart, rng, 300)
            y = chart.project(x)
            z = chart.project(random_chart_points(chart, rng, 300))
            worst = max(worst, np.einsum("pd,pzd->pz", x - y, z[None, :, :] - y[:, None, :]).max())
    assert worst <= 1e-9


# --- identity charts ------------------------------------------------------------------------


def test_a_skeleton_without_limited_ball_joints_is_its_own_chart() -> None:
    """No limited ball joint: chart.identity, chart.skeleton is the source, maps are clamps and copies."""
    rng = np.random.default_rng(7)
    joints = [
        Joint("ball", JointKind.BALL, -1, random_transform(rng)),
        Joint("hinge", JointKind.REVOLUTE, 0, random_transform(rng), random_axis(rng), -0.5, 1.0),
        Joint("spin", JointKind.CONTINUOUS, 1, random_transform(rng), random_axis(rng)),
        Joint("slide", JointKind.PRISMATIC, 2, random_transform(rng), random_axis(rng), -0.1, 0.3),
        Joint("weld", JointKind.FIXED, 3, random_transform(rng)),
        Joint("copy", JointKind.REVOLUTE, 4, random_transform(rng), random_axis(rng), mimic=Mimic("hinge", 2.0)),
    ]
    skeleton = Skeleton(joints, [Effector("tip", 5, random_transform(rng))])
    chart = BoxChart(skeleton)
    assert chart.identity
    assert chart.skeleton is skeleton
    assert chart.swing_starts == []
    assert np.array_equal(chart.lower, skeleton.lower) and np.array_equal(chart.upper, skeleton.upper)
    q = rng.normal(size=(50, skeleton.dof)) * 2.0
    clamped = np.clip(q, skeleton.lower, skeleton.upper)
    assert np.array_equal(chart.to_chart(q), clamped)
    assert np.array_equal(chart.project(q), clamped)
    back = chart.from_chart(clamped)
    assert np.array_equal(back, clamped) and back is not clamped


# --- box coordinates of the limits ----------------------------------------------------------


def elemental(axis: int, angle: np.ndarray) -> np.ndarray:
    """(..., 3, 3) rotations about coordinate axis ``axis`` (independent of the chart's helper)."""
    v = np.zeros(np.shape(angle) + (3,))
    v[..., axis] = angle
    return rotvec_to_matrix(v)


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_euler_box_coordinates_are_the_angles_outermost_first(order: str) -> None:
    """EulerLimit.box_coordinates: axes in chain order (R = Rk Rj Ri), ranges reordered, locked 0, free infinite."""
    limit = EulerLimit((-0.3, -4.0, 0.2), (0.5, 4.0, 0.9), (False, False, False), order)
    coords = limit.box_coordinates()
    assert isinstance(coords, BoxCoordinates) and coords.kind == "euler"
    chain = tuple("XYZ".index(c) for c in order[::-1])
    assert coords.axes == chain
    lo = {0: -0.3, 1: -np.inf, 2: 0.2}
    hi = {0: 0.5, 1: np.inf, 2: 0.9}
    assert list(coords.lower) == [lo[a] for a in chain] and list(coords.upper) == [hi[a] for a in chain]
    locked = EulerLimit((-0.3, -0.2, 0.2), (0.5, 0.4, 0.9), (True, False, True), order).box_coordinates()
    assert [locked.lower[n] == locked.upper[n] == 0.0 for n in range(3)] == [a != 1 for a in chain]
    # The chain's composition is the Euler matrix of the same angles.
    rng = np.random.default_rng(3)
    angles = rng.uniform(-3.0, 3.0, (20, 3))
    chained = elemental(chain[0], angles[:, chain[0]]) @ elemental(chain[1], angles[:, chain[1]])
    chained = chained @ elemental(chain[2], angles[:, chain[2]])
    assert np.allclose(chained, euler_to_matrix(angles, order), atol=1e-14, rtol=0)


def swing_rotation(coords: BoxCoordinates, sw: np.ndarray, su: np.ndarray, twist: np.ndarray) -> np.ndarray:
    """R = B^T exp([s_w, s_u, 0]^) Rz(t) B, the composition BoxCoordinates documents."""
    v = np.stack([sw, su, np.zeros_like(sw)], axis=-1)
    return coords.basis.T @ rotvec_to_matrix(v) @ elemental(2, twist) @ coords.basis


def test_swing_twist_box_coordinates_follow_blender_sides() -> None:
    """SwingTwistLimit: swing semi-axes (Z+, Z-, X+, X-), twist = the Y range, locked axes zero, basis (Z, X, Y)."""
    limit = SwingTwistLimit((-0.4, -0.3, -1.1), (1.2, 0.0, 0.6))
    coords = limit.box_coordinates()
    assert coords.kind == "swing_twist"
    assert np.array_equal(coords.swing, [0.6, 1.1, 1.2, 0.4])
    assert np.array_equal(coords.lower, [-1.1, -0.4, -0.3]) and np.array_equal(coords.upper, [0.6, 1.2, 0.0])
    assert np.allclose(coords.basis, [[0, 0, 1], [1, 0, 0], [0, 1, 0]], atol=1e-15)
    locked = SwingTwistLimit((-0.4, -0.3, -1.1), (1.2, 0.2, 0.6), (True, False, False)).box_coordinates()
    assert np.array_equal(locked.swing, [0.6, 1.1, 0.0, 0.0])
    free = SwingTwistLimit((-0.4, -np.pi, -1.1), (1.2, np.pi, 0.6)).box_coordinates()
    assert free.lower[2] == -np.inf and free.upper[2] == np.inf
    # A swing about Z (first swing component) moves the bone (Y) towards -X, as Rz does.
    R = swing_rotation(coords, np.array(0.5), np.array(0.0), np.array(0.0))
    assert np.allclose(R, elemental(2, np.array(0.5)), atol=1e-15)


@pytest.mark.parametrize("axis", [(0.0, 1.0, 0.0), (0.0, -1.0, 0.0), (1.0, 0.0, 0.0), (0.3, -0.5, 0.8)])
def test_cone_twist_box_coordinates_compose_like_the_limit(axis: tuple[float, float, float]) -> None:
    """ConeTwistLimit: swing (sz, sz, sx, sx), twist range, and the documented R equals the limit's compose."""
    limit = ConeTwistLimit(0.9, 0.4, -0.2, 1.3, axis)
    coords = limit.box_coordinates()
    assert np.array_equal(coords.swing, [0.4, 0.4, 0.9, 0.9])
    assert np.array_equal(coords.lower, [-0.4, -0.9, -0.2]) and np.array_equal(coords.upper, [0.4, 0.9, 1.3])
    assert np.allclose(coords.basis @ coords.basis.T, np.eye(3), atol=1e-14)
    assert np.isclose(np.linalg.det(coords.basis), 1.0) and np.allclose(coords.basis[2], limit.twist_axis)
    rng = np.random.default_rng(11)
    sw, su, tw = rng.uniform(-1.5, 1.5, (3, 40))
    assert np.allclose(swing_rotation(coords, sw, su, tw), limit.compose(su, sw, tw), atol=1e-14, rtol=0)
    # Inside the ellipse and twist range: a rotation the limit contains.
    w, u = quadrant_ellipse_project(sw, su, np.broadcast_to(coords.swing, (40, 4)))
    assert np.all(limit.contains_matrix(swing_rotation(coords, w, u, np.clip(tw, -0.2, 1.3))))
    free = ConeTwistLimit(0.9, 0.4, -np.pi, np.pi, axis).box_coordinates()
    assert free.lower[2] == -np.inf and free.upper[2] == np.inf


# --- quadrant_ellipse_project ---------------------------------------------------------------


def brute_force_closest(x: float, y: float, axes: np.ndarray, n: int = 20_000) -> np.ndarray:
    """Closest of 4 n boundary samples of the quadrant set, refined by n more around the best."""
    th = np.linspace(0.0, np.pi / 2, n)
    best, best_d = None, np.inf
    for sx, sy in ((1, 1), (-1, 1), (1, -1), (-1, -1)):
        a = axes[0] if sx > 0 else axes[1]
        b = axes[2] if sy > 0 else axes[3]
        k = int(np.argmin(np.hypot(sx * a * np.cos(th) - x, sy * b * np.sin(th) - y)))
        # Refine between the neighbouring samples.
        fine = np.linspace(th[max(k - 1, 0)], th[min(k + 1, n - 1)], n)
        fx, fy = sx * a * np.cos(fine), sy * b * np.sin(fine)
        fd = np.hypot(fx - x, fy - y)
        m = int(np.argmin(fd))
        if fd[m] < best_d:
            best, best_d = np.array([fx[m], fy[m]]), fd[m]
    return best


def random_quadrant_axes(rng: np.random.Generator, n: int) -> np.ndarray:
    """(n, 4) semi-axes from 0.02 to 3, about one in six zero or 1e-13 (thin sides)."""
    axes = rng.uniform(0.02, 3.0, (n, 4))
    thin = rng.random((n, 4)) < 0.17
    return np.where(thin, rng.choice([0.0, 1e-13], (n, 4)), axes)


def quadrant_semi_axes(x: np.ndarray, y: np.ndarray, axes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The semi-axes (a, b) of each point's own quadrant."""
    return np.where(x >= 0.0, axes[:, 0], axes[:, 1]), np.where(y >= 0.0, axes[:, 2], axes[:, 3])


def test_quadrant_ellipse_inside_points_are_unchanged_bit_for_bit() -> None:
    """Points strictly inside their quadrant's ellipse come back exactly as given."""
    rng = np.random.default_rng(21)
    axes = rng.uniform(0.05, 3.0, (5000, 4))
    r, phi = np.sqrt(rng.uniform(0.0, 0.999, 5000)), rng.uniform(-np.pi, np.pi, 5000)
    x, y = r * np.cos(phi), r * np.sin(phi)
    a, b = quadrant_semi_axes(x, y, axes)
    x, y = x * a, y * b
    px, py = quadrant_ellipse_project(x, y, axes)
    assert np.array_equal(px, x) and np.array_equal(py, y)


def test_quadrant_ellipse_outside_points_go_to_the_closest_boundary_point() -> None:
    """Outside points land on their quadrant's ellipse and at the set's closest point (brute force, 1e-6)."""
    rng = np.random.default_rng(22)
    n = 120
    axes = rng.uniform(0.02, 3.0, (n, 4))
    axes[:10] = rng.uniform(0.02, 0.1, (10, 4))  # very eccentric when mixed with long sides
    axes[:10, ::2] = rng.uniform(2.0, 3.0, (10, 2))
    x, y = rng.normal(size=(2, n)) * 3.0
    a, b = quadrant_semi_axes(x, y, axes)
    out = (x / a) ** 2 + (y / b) ** 2 > 1.0
    assert out.sum() > 60
    px, py = quadrant_ellipse_project(x, y, axes)
    pa, pb = quadrant_semi_axes(px, py, axes)
    assert np.all(np.sign(px[out]) * np.sign(x[out]) >= 0) and np.all(np.sign(py[out]) * np.sign(y[out]) >= 0)
    assert np.allclose(((px / pa) ** 2 + (py / pb) ** 2)[out], 1.0, atol=1e-9, rtol=0)
    for i in np.nonzero(out)[0]:
        bf = brute_force_closest(x[i], y[i], axes[i])
        ours = np.hypot(px[i] - x[i], py[i] - y[i])
        assert ours <= np.hypot(*(bf - (x[i], y[i]))) + 1e-12
        assert np.hypot(*(bf - (px[i], py[i]))) <= 1e-6


@HYP
@given(st.integers(0, 2**32 - 1))
def test_quadrant_ellipse_thin_sides_match_brute_force(seed: int) -> None:
    """With zero or 1e-13 sides mixed in, results stay in the set and are the brute-force closest point."""
    rng = np.random.default_rng(seed)
    axes = random_quadrant_axes(rng, 12)
    x, y = rng.normal(size=(2, 12)) * 3.0
    px, py = quadrant_ellipse_project(x, y, axes)
    effective = np.where(axes < 1e-12, 0.0, axes)
    assert np.all(in_quadrant_ellipses(px, py, effective, tol=1e-9))
    inside = in_quadrant_ellipses(x, y, effective, tol=0.0)
    assert np.array_equal(px[inside], x[inside]) and np.array_equal(py[inside], y[inside])
    for i in np.nonzero(~inside)[0]:
        bf = brute_force_closest(x[i], y[i], axes[i])
        assert np.hypot(*(bf - (px[i], py[i]))) <= 1e-6


def test_quadrant_ellipse_thin_semi_axes_clip_to_a_segment() -> None:
    """A side of 0 or 1e-13 makes the quadrant's set the segment of the other axis: coordinates are clipped."""
    for thin in (0.0, 1e-13):
        x = np.array([2.0, 0.3, -5.0, 5e-14, 1.0, -1.0])
        y = np.array([1.0, -4.0, 0.2, 0.5, 0.0, -0.0])
        axes = np.tile([thin, thin, 0.7, 1.5], (6, 1))  # no width in x: the set is x = 0, y in [-1.5, 0.7]
        px, py = quadrant_ellipse_project(x, y, axes)
        assert np.all(px == 0.0)
        assert np.array_equal(py, np.clip(y, -1.5, 0.7))
        axes = np.tile([0.8, 0.4, thin, thin], (6, 1))  # no height: the set is y = 0, x in [-0.4, 0.8]
        px, py = quadrant_ellipse_project(x, y, axes)
        assert np.all(py == 0.0)
        assert np.array_equal(px, np.clip(x, -0.4, 0.8))
        # One thin side only: a half ellipse, whose flat side takes the points beyond it.
        axes = np.tile([thin, 1.0, 0.5, 0.5], (6, 1))
        px, py = quadrant_ellipse_project(x, y, axes)
        right = x >= 0.0
        assert np.all(px[right] == 0.0) and np.array_equal(py[right], np.clip(y[right], -0.5, 0.5))


def test_quadrant_ellipse_never_returns_nan() -> None:
    """Origin, axis points (+-0), far points and every thin/zero combination of sides give finite answers."""
    vals = np.array([0.0, -0.0, 1e-300, -1e-13, 0.5, -2.0, 1e6, -1e6])
    x, y = (g.ravel() for g in np.meshgrid(vals, vals))
    sides = np.array([0.0, 1e-13, 1e-12, 0.3, 2.0])
    combos = np.array(np.meshgrid(sides, sides, sides, sides)).reshape(4, -1).T
    X, Y = np.repeat(x, len(combos)), np.repeat(y, len(combos))
    axes = np.tile(combos, (len(x), 1))
    px, py = quadrant_ellipse_project(X, Y, axes)
    assert np.all(np.isfinite(px)) and np.all(np.isfinite(py))
    assert np.all(in_quadrant_ellipses(px, py, np.where(axes < 1e-12, 0.0, axes), tol=1e-9))
    # The origin is in every set and never moves.
    origin = (X == 0.0) & (Y == 0.0)
    assert np.all(px[origin] == 0.0) and np.all(py[origin] == 0.0)


# --- exactness of the swing projection ------------------------------------------------------

SWING_LIMITS = [
    pytest.param(SwingTwistLimit((-0.2, -0.5, -1.4), (2.1, 0.3, 0.0)), id="swing_twist"),
    pytest.param(
        SwingTwistLimit((0.0, -0.1, -0.05), (2.8, 0.0, 2.5), (False, True, False)),
        id="swing_twist_zero_sides",
    ),
    pytest.param(ConeTwistLimit(2.4, 0.3, 0.4, 1.1, (0.3, -0.5, 0.8)), id="cone_odd_axis"),
    # A flat cone: the swing set is a segment.
    pytest.param(ConeTwistLimit(0.0, 1.2, -np.pi, np.pi, (0.0, 0.0, -1.0)), id="cone_flat"),
]


def swing_variational_gap(p: np.ndarray, c: np.ndarray, z: np.ndarray) -> float:
    """max over pairs of (p - c) . (z - c): <= 0 exactly when each c is the projection of its p."""
    return float(np.einsum("pd,pzd->pz", p - c, z[None, :, :] - c[:, None, :]).max())


def feasible_swings(axes: np.ndarray, rng: np.random.Generator, n: int) -> np.ndarray:
    """(n, 2) points of the quadrant set: projections of far points (boundary), shrunk copies (inside)."""
    z = rng.normal(size=(n, 2)) * 2.0
    z = np.stack(quadrant_ellipse_project(z[:, 0], z[:, 1], np.broadcast_to(axes, (n, 4))), axis=1)
    z[n // 2 :] *= rng.uniform(0.0, 1.0, (n - n // 2, 1))
    return z


@pytest.mark.parametrize("limit", [p.values[0] for p in SWING_LIMITS], ids=[p.id for p in SWING_LIMITS])
def test_quadrant_ellipse_projection_satisfies_the_variational_inequality(limit: object) -> None:
    """For each limit's swing set, c = quadrant_ellipse_project(p) obeys (p - c).(z - c) <= 1e-9 for feasible z."""
    axes = limit.box_coordinates().swing
    rng = np.random.default_rng(31)
    p = rng.normal(size=(400, 2)) * 3.0
    c = np.stack(quadrant_ellipse_project(p[:, 0], p[:, 1], np.broadcast_to(axes, (400, 4))), axis=1)
    assert (np.hypot(*(p - c).T) > 1e-6).sum() > 300
    assert swing_variational_gap(p, c, feasible_swings(axes, rng, 3000)) <= 1e-9


@pytest.mark.parametrize("limit", SWING_LIMITS)
def test_chart_swing_projection_satisfies_the_variational_inequality(limit: object) -> None:
    """Through BoxChart.project: the swing pair of c = P(p) obeys (p - c).(z - c) <= 1e-9 for feasible z,
    and the poses behind c are poses the limit accepts."""
    skeleton = Skeleton(
        [Joint("root", JointKind.REVOLUTE, -1, np.eye(4), (0, 0, 1), -1, 1),
         Joint("ball", JointKind.BALL, 0, random_transform(np.random.default_rng(5)), limit=limit)],
        [Effector("tip", 1, random_transform(np.random.default_rng(6)))],
    )
    chart = BoxChart(skeleton)
    s = chart.swing_starts[0]
    rng = np.random.default_rng(31)
    p = np.repeat(chart.project(np.zeros((1, chart.skeleton.dof))), 400, axis=0)  # feasible elsewhere
    p[:, s : s + 2] = rng.normal(size=(400, 2)) * 3.0
    c = chart.project(p)
    assert np.all(limit_violation(skeleton, chart.from_chart(c)) <= FEASIBLE)
    pw, cw = p[:, s : s + 2], c[:, s : s + 2]
    assert (np.hypot(*(pw - cw).T) > 1e-6).sum() > 300
    assert swing_variational_gap(pw, cw, feasible_swings(limit.box_coordinates().swing, rng, 3000)) <= 1e-9


# --- corner cases the chart does not (yet) handle -------------------------------------------


@pytest.mark.parametrize(
    "limit",
    [SwingTwistLimit((-np.pi, -0.5, -np.pi), (np.pi, 0.5, np.pi)), ConeTwistLimit(np.pi, np.pi, 0.5, 1.0)],
    ids=["swing_twist_only_twist_limited", "cone_full"],
)
def test_projected_swings_of_half_a_turn_are_feasible_poses(limit: object) -> None:
    """Chart points projected onto a swing boundary of pi must still be poses the limit accepts."""
    skeleton = Skeleton([Joint("ball", JointKind.BALL, limit=limit)])
    chart = BoxChart(skeleton)
    phi = np.linspace(-np.pi, np.pi, 64, endpoint=False)
    x = np.stack([4.0 * np.cos(phi), 4.0 * np.sin(phi), np.zeros(64), np.full(64, 0.5)], axis=1)
    y = chart.project(x)
    # Swings stop just short of half a turn, where the twist could not be read back.
    radius = np.hypot(y[:, 0], y[:, 1])
    assert np.all((radius > np.pi - 1e-5) & (radius < np.pi))
    assert limit_violation(skeleton, chart.from_chart(y)).max() <= FEASIBLE


@pytest.mark.parametrize("order, middle", [("XYZ", np.pi / 2), ("XYZ", -np.pi / 2), ("ZYX", np.pi / 2),
                                           ("YXZ", -np.pi / 2), ("XZY", np.pi / 2)])
def test_feasible_poses_at_gimbal_lock_map_to_the_same_pose(order: str, middle: float) -> None:
    """A feasible Euler pose at gimbal lock (only the coupled angle fits) keeps its effector pose.

    The tidy split of the coupled angle (one outer angle 0) fits neither range here: the chart must share
    it out along the line that keeps the pose, whichever way the outer angles couple.
    """
    angles = {"X": 0.3, "Y": 0.3, "Z": 0.3}
    axes = ["XYZ".index(c) for c in order]
    # Outer ranges that hold the pose's own outer angles but not 0 (nor the whole coupled angle).
    lower, upper = np.zeros(3), np.zeros(3)
    for position, axis in enumerate(axes):
        if position == 1:
            lower[axis], upper[axis] = middle - 0.5, middle + 0.5
            angles["XYZ"[axis]] = middle
        else:
            # Ends at uneven distances, so that clamping both outer angles cannot keep their combination.
            value, below, above = (0.3, 0.01, 0.03) if position == 0 else (0.15, 0.03, 0.01)
            angles["XYZ"[axis]] = value
            lower[axis], upper[axis] = value - below, value + above
    limit = EulerLimit(tuple(lower), tuple(upper), order=order)
    offset = np.eye(4)
    offset[:3, 3] = (0.3, 1.0, 0.2)
    skeleton = Skeleton([Joint("ball", JointKind.BALL, limit=limit)], [Effector("tip", 0, offset)])
    q = matrix_to_rotvec(euler_to_matrix(np.array([angles["X"], angles["Y"], angles["Z"]]), order))[None]
    assert limit_violation(skeleton, q)[0] <= FEASIBLE
    chart = BoxChart(skeleton)
    x = chart.to_chart(q)
    assert np.abs(effector_poses(chart.skeleton, x) - effector_poses(skeleton, q)).max() <= 1e-9
