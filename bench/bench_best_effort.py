# SPDX-License-Identifier: GPL-3.0-or-later
"""Best effort under limits (issue 23): every solver and Auto against an independent global optimizer.

Run from the repo root, in the bench venv (scipy is the optimizer; the add-on never needs it)::

    python3.11 -m venv .venvs/bench && .venvs/bench/bin/pip install -r bench/requirements-peers.txt
    .venvs/bench/bin/python bench/bench_best_effort.py [--quick] [--json] [--seed 0] [--trees 8] [--trees-only]

(``make bench-env`` does the same; a venv with only ``numpy==2.4.6 scipy==1.17.1`` is enough.)

Scenes. Random limited serial chains of 2-12 bones (seeded), each bone along its local Y, 0.1-0.4 m
long, the root joint at the origin, effector ``tip`` at the end of the last bone. Each chain has a
family that decides its joints: ``euler`` (ball joints with :class:`EulerLimit`, Blender's
pose-bone IK semantics, random orders, some locked axes), ``swing`` (:class:`SwingTwistLimit`,
some with a locked twist), ``cone`` (:class:`ConeTwistLimit`), ``hinge`` (revolute joints about X
or Z with ranges, about one in six locked (lower == upper, not always 0), one in six wider than
2 pi, plus continuous joints), ``mixed`` (any of these per bone) and, for 2-bone chains only,
``limb`` (a limited ball joint then a hinge: the two-bone solver's shape). Targets, position mode:

- ``reach``: FK of ``project_configuration`` of a random configuration (reachable in the limits).
- ``out``: FK of a random configuration that violates the limits (so inside the chain's length),
  kept only where the optimum's residual exceeds 1 mm.
- ``beyond``: 1.05-1.6 chain lengths from the root in a random direction.

The optimum. An independent global optimizer of the best-effort problem (the configuration inside
the limits whose effector is closest to the target). It calls no ik_core solver: the feasible set
is parametrised exactly by box variables (hinge angles; Euler angles in their ranges for Euler
limits; for swing/cone limits the twist in its range and the swing ellipse as the image of a
square), so the problem is smooth with bounds. ``--starts`` random starts (plus the rest pose) run
a batched projected Levenberg-Marquardt descent; the best few are polished by scipy's L-BFGS-B
with an analytic gradient. The parametrisation is checked against ik_core's FK and
``limit_violation`` on every chain, and every optimum's ``limit_violation`` must be < 1e-9.

Solvers. Each of ``SOLVER_NAMES`` (``two_bone`` only on 2-bone limbs) and Auto (``resolve_solver
("auto", bones, pole=False, full_pose=False, robot=False)``) with default settings, one target at a
time from the rest pose (``q0=None``). Columns: ``n`` targets; ``out<=1mm`` / ``far<=1mm``: share of
out-of-limit / beyond-reach targets whose distance is within 1 mm of the optimum's; ``p95 out`` /
``p95 far``: 95th percentile of the excess over the optimum [mm]; ``reached``: share of reachable
targets with ``converged``; ``p95 rch``: their 95th percentile error [mm]; ``not-min``: share of
unconverged answers from which a plain local descent (L-BFGS-B inside the limits) still gains more
than 0.01 mm; ``ms``/``ms p95``: wall time per target; ``nan``: answers with a non-finite q;
``exc``: exceptions (first message printed below the table); ``viol``: answers outside the limits
(``limit_violation`` > 1e-9); ``beat``: answers more than 0.01 mm closer than the optimum (the
optimizer's misses; should be 0). The second table gives, per family, the share within 1 mm
(out and beyond pooled) / the share of reachable targets reached.

Takes. Random 3-7 bone chains of the same families, a target on a circle or a Lissajous curve
sweeping in and out of the limited workspace, baked as the add-on bakes a character chain:
``solve_track(solver, targets, None, max_jump=0.5, segment=32)`` (the whole take as one segment
for two-bone), Auto's solver with default settings. The per-frame optimum is the global optimizer's
best of the previous frame's optimum descended (continuity) and fresh random starts (taken only
when more than 0.01 mm closer), then, frame by frame backward, the next frame's optimum descended
and polished into it where that is more than 0.01 mm closer (fresh starts find a basin only some
frames after it takes over). Columns: ``<=1mm``: share of frames within 1 mm of the optimum;
``p95 exc`` [mm]; ``pops``: frames where some joint turns more than 0.2 rad from the frame before
while no joint of the optimum turns more than 0.05 rad and the answer is not nearer than the
optimum by more than the best effort's switch margin (0.2 mm), at that frame or the one before;
``pops+``: such frames where the best pose itself jumps and the jump is the answer's to make: the
answer is nearer than the optimum by more than that at either (the optimum's continuation missed
a better pose, and the answer jumps into it or out of it), or a hinge wider than a turn unwinds a
whole turn where its limit forces it (the optimum unwinds at another frame of the overlap); ``opt jumps``:
frames where the optimum itself turns a joint more than 0.2 rad; ``max step`` [rad]; ``ms/frame``.

Trees (issue 23, item 6; ``--trees N``; ``--trees-only`` skips the chains and takes). Random trees
from their own stream (``default_rng([seed, 6])``: the tables above stay those of the seed): a
spine of 1-3 joints at the origin (limited ball joints of the three limit kinds, one in ten a
hinge), then two arms of 2-4 bones (each joint of any kind; hinges about X, Z or, two in five, an
odd unit axis) hanging from the spine's last joint beside its tip, turned out sideways and a
little askew, each ending in an effector (``left``, ``right``). Bones 0.1-0.4 m. The optimizer is
the same box with both effectors' error rows stacked: an effector's Jacobian columns are zero off
its ancestor path, and the objective is the sum over the effectors of the squared distances,
which is what ik_core's best effort minimises for several effectors (``BestEffort._errors``: the
stacked position rows, unit weights with default settings). ``Feasible.check`` compares every
effector with ik_core's FK, ``limit_violation`` and the Jacobian with central differences on
every tree (and every arm below). Target pairs: ``reach`` (FK of an in-limit configuration: both
reachable together), ``out`` (FK of a configuration outside the limits, kept where the optimum
leaves more than 1 mm), ``far`` (one arm's target 1.05-1.6 times its path length from the root,
alternately left and right, the other arm's target FK of an in-limit configuration). A target's
optimum is the best of the global optimizer and an L-BFGS-B descent from every solver's answer (a
nearer feasible pose is the better reference; the count of targets it changed is printed).
Solvers: each reach solver that takes two effectors (FABRIK, CCD, DLS; two-bone drives one) with
both effectors and default settings, one target pair at a time from the rest pose. Auto is DLS:
what the bake builds for a tree (``operators/baking.py`` ``tree_solver``; at the chains' default
tolerance, iterations and weights it is DLS's defaults). The first table has the serial columns,
with the distance the stacked one (the objective's square root), except on ``far`` pairs: there
each effector's best effort is judged given the other's (ik_core lets the effectors within reach
lead, ``Solver.leading_effectors``), so ``far<=1mm`` / ``p95 far`` take as the excess the reachable
arm's distance from its target plus the far arm's excess over its own best effort with the rest
of the tree held where the answer put it (below), and ``not-min`` asks whether a descent of the
far arm alone still gains. The second, on ``far`` pairs:
``near reached``: the reachable arm within the 0.1 mm tolerance, ``near p95 mm`` its error;
``far arm<=1mm|rest``: the far arm within 1 mm of its own best effort with the rest of the tree
held where the answer put it (a global optimum of the arm alone); ``far arm<=1mm|led`` and ``p95 led
exc mm``: the far arm against the led problem's optimum, where the rest of the tree is free and only
the reachable arm must stay on its target (:func:`_led_reference`: scipy from random starts and from
every solver's answer), so a spine that could lean toward the far target and does not is counted;
``bake``: the bake's scheme for
such a frame (``_track_tree``): the tree solver with both effectors (the reachable one leads), then
the far arm's own bones solved again (DLS) from the tree's pose of the bone they hang from. Auto's
misses are listed with the trees' joint kinds and the reasons. Tree takes (``--tree-takes``, from
``default_rng([seed, 7])``): each arm's target on its own circle around a reachable point (radius
0.2-0.5 of the arm's path length), baked as a tree unit (DLS, ``solve_track`` with ``max_jump=0.5,
segment=32``), against the per-frame optimum (:func:`take_optimum`), columns as the takes'; ``mixed``:
frames where one arm's target lies beyond its path length and the other's not; ``led``: those of
them whose other arm reaches its target alone (its own DLS solve, the spine free, finds a pose
that does), judged per effector as the ``far`` pairs are (the far arm against its own best effort
from the take's fresh starts); the other mixed frames have no arm to lead them (the solver then
weighs both, ``Solver.follow_missed``) and are judged by the summed squares, as the rest; ``led<=1mm`` /
``p95 led``: on led frames, the share whose reachable arm is on its target and whose far arm is within 1 mm
of the far arm of :func:`led_track` (the led problem's optimum, the spine free), and the far arm's excess
over it [mm] (infinite where the reachable arm is off its target). Pops on
tree takes are judged against the optimum of each frame's own problem (:func:`led_track`): on led
frames the led problem's track, not the summed squares' (whose stillness says nothing of a problem
the answer does not solve); ``opt jumps`` counts that track's own jumps.

The goals of issue 23 are printed below the tables. Timings are wall clock on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ik_core import (  # noqa: E402
    ConeTwistLimit,
    Effector,
    EulerLimit,
    Joint,
    JointKind,
    Skeleton,
    effector_poses,
    forward_kinematics,
    limit_violation,
    make_solver,
    project_configuration,
    solve_track,
)
from ik_core.limits import SwingTwistLimit, circular_clamp  # noqa: E402
from ik_core.model.euler import AXIS_INDICES, euler_to_matrix_unchecked, matrix_to_euler_unchecked  # noqa: E402
from ik_core.model.rotations import EULER_ORDERS, matrix_to_rotvec, rotvec_to_matrix  # noqa: E402
from ik_core.solvers import SOLVER_NAMES, resolve_solver  # noqa: E402
from ik_core.solvers.best_effort import SWITCH_MARGIN  # noqa: E402

try:
    from scipy.optimize import minimize
except ImportError:  # pragma: no cover - the message is the point
    sys.exit("bench_best_effort.py needs scipy: run it with .venvs/bench/bin/python (make bench-env)")

FAMILIES = ("euler", "swing", "cone", "hinge", "mixed")
CLASSES = ("reach", "out", "far")
MM = 1e-3
NEAR = 1e-3  # "within 1 mm of the optimum"
GAIN = 1e-5  # a local descent gaining more than 0.01 mm: not a local minimum
POP, STILL = 0.2, 0.05  # joint step [rad] of a pop, and the optimum's step below which it "does not jump"
TWO_PI = 2.0 * np.pi
_SPLIT_Y = ConeTwistLimit(np.pi, np.pi, -np.pi, np.pi)  # swing @ twist about Y, no bounds: SwingTwistLimit's split
_STEPS = np.concatenate([np.eye(3), -np.eye(3)]) * 1e-6  # finite-difference steps of ball-joint box variables


def _offset(y: float) -> np.ndarray:
    T = np.eye(4)
    T[1, 3] = y
    return T


# ---------------------------------------------------------------------------------------------
# Random limited chains


def _ball_limit(rng: np.random.Generator, kind: str):
    if kind == "euler":
        lo, hi = -rng.uniform(0.1, 1.6, 3), rng.uniform(0.1, 1.6, 3)
        lo[1], hi[1] = lo[1] * 0.5, hi[1] * 0.5
        locked = rng.random(3) < 0.12
        order = "XYZ" if rng.random() < 0.6 else str(rng.choice(EULER_ORDERS))
        return EulerLimit(tuple(lo), tuple(hi), tuple(bool(v) for v in locked), order)
    if kind == "swing":
        lo = -rng.uniform(0.0, 1.6, 3) * (rng.random(3) < 0.85)
        hi = rng.uniform(0.0, 1.6, 3) * (rng.random(3) < 0.85)
        lo[1], hi[1] = lo[1] * 0.5, hi[1] * 0.5
        locked = (False, bool(rng.random() < 0.3), False)
        return SwingTwistLimit(tuple(lo), tuple(hi), locked)
    lo_t = -rng.uniform(0.0, 0.8)
    return ConeTwistLimit(rng.uniform(0.1, 1.5), rng.uniform(0.1, 1.5), lo_t, lo_t + rng.uniform(0.0, 1.2))


def _joint(rng: np.random.Generator, kind: str, name: str, parent: int, origin: np.ndarray) -> Joint:
    if kind in ("euler", "swing", "cone"):
        return Joint(name, JointKind.BALL, parent, origin, limit=_ball_limit(rng, kind))
    axis = (1.0, 0.0, 0.0) if rng.random() < 0.6 else (0.0, 0.0, 1.0)
    u = rng.random()
    if u < 0.12:
        return Joint(name, JointKind.CONTINUOUS, parent, origin, axis=axis)
    if u < 0.28:  # a locked axis: a single-value range
        v = 0.0 if rng.random() < 0.5 else rng.uniform(-0.6, 0.6)
        return Joint(name, JointKind.REVOLUTE, parent, origin, axis=axis, lower=v, upper=v)
    if u < 0.42:  # wider than 2 pi
        w = rng.uniform(3.3, 4.5)
        return Joint(name, JointKind.REVOLUTE, parent, origin, axis=axis, lower=-w, upper=w)
    lo = rng.uniform(-2.0, 0.4)
    return Joint(name, JointKind.REVOLUTE, parent, origin, axis=axis, lower=lo, upper=lo + rng.uniform(0.2, 2.6))


def random_chain(rng: np.random.Generator, bones: int, family: str, name: str) -> Skeleton:
    """A serial chain of ``bones`` bones along local Y, joints drawn for ``family``, effector ``tip``."""
    lengths = rng.uniform(0.1, 0.4, bones)
    joints = []
    for k in range(bones):
        if family == "limb":
            kind = str(rng.choice(("euler", "swing", "cone"))) if k == 0 else "hinge"
        elif family == "mixed":
            kind = str(rng.choice(("euler", "swing", "cone", "hinge")))
        else:
            kind = family
        origin = np.eye(4) if k == 0 else _offset(lengths[k - 1])
        joint = _joint(rng, kind, f"b{k}", k - 1, origin)
        if family == "limb" and k == 1 and joint.kind is JointKind.CONTINUOUS:
            joint = Joint("b1", JointKind.REVOLUTE, 0, origin, axis=(1.0, 0.0, 0.0), lower=0.0, upper=2.6)
        joints.append(joint)
    return Skeleton(joints, [Effector("tip", bones - 1, _offset(lengths[-1]))], name=name)


def chain_length(skeleton: Skeleton) -> float:
    """Sum of the bone lengths [m] (the root is at the origin)."""
    return float(sum(np.linalg.norm(j.origin[:3, 3]) for j in skeleton.joints[1:]) + np.linalg.norm(
        skeleton.effectors[0].offset[:3, 3]))


# ---------------------------------------------------------------------------------------------
# The independent optimizer: the feasible set as the image of a box


def _square_to_disk(u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return u * np.sqrt(1.0 - 0.5 * v * v), v * np.sqrt(1.0 - 0.5 * u * u)


def _disk_to_square(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r = np.hypot(x, y)
    scale = np.where(r > 1.0, 1.0 / np.where(r > 0, r, 1.0), 1.0)
    x, y = x * scale, y * scale
    s2 = 2.0 * np.sqrt(2.0)
    a, b = 2.0 + x * x - y * y, 2.0 - x * x + y * y
    u = 0.5 * np.sqrt(np.maximum(a + s2 * x, 0.0)) - 0.5 * np.sqrt(np.maximum(a - s2 * x, 0.0))
    v = 0.5 * np.sqrt(np.maximum(b + s2 * y, 0.0)) - 0.5 * np.sqrt(np.maximum(b - s2 * y, 0.0))
    return np.clip(u, -1.0, 1.0), np.clip(v, -1.0, 1.0)


@dataclass
class _Var:
    joint: int
    kind: str  # "hinge", "euler", "ellipse"
    start: int  # first box variable
    q_start: int
    limit: object | None = None
    axis: np.ndarray | None = None
    semi: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)  # ellipse +x, -x, +z, -z semi-axes
    split: ConeTwistLimit | None = None
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None
    free: np.ndarray | None = None


class Feasible:
    """The limited configurations of a chain or tree as the image of a box ``z`` in ``[lo, hi]``.

    ``q(z)`` is inside the limits for every ``z`` in the box, and every configuration inside the
    limits is ``q(z)`` of some ``z`` (up to measure-zero gimbal cases), so minimising over the box
    with bounds is the best-effort problem itself.
    """

    def __init__(self, skeleton: Skeleton):
        self.skeleton = skeleton
        self.vars: list[_Var] = []
        lo, hi = [], []
        for i, joint in enumerate(skeleton.joints):
            s, qs = len(lo), int(skeleton.q_index[i])
            if joint.kind in (JointKind.REVOLUTE, JointKind.CONTINUOUS):
                cont = joint.kind is JointKind.CONTINUOUS
                lo.append(-TWO_PI if cont else joint.lower)
                hi.append(TWO_PI if cont else joint.upper)
                self.vars.append(_Var(i, "hinge", s, qs, axis=np.asarray(joint.axis)))
            elif isinstance(joint.limit, EulerLimit):
                lim = joint.limit
                lk = np.asarray(lim.locked)
                elo, ehi = np.where(lk, 0.0, lim.lower), np.where(lk, 0.0, lim.upper)
                free = ~lk & ~(ehi - elo < TWO_PI)
                elo, ehi = np.where(free, -TWO_PI, elo), np.where(free, TWO_PI, ehi)
                lo += list(elo)
                hi += list(ehi)
                self.vars.append(_Var(i, "euler", s, qs, limit=lim, lo=elo, hi=ehi, free=free))
            else:
                lim = joint.limit
                if isinstance(lim, SwingTwistLimit):
                    lk = np.asarray(lim.locked)
                    slo = np.where(lk, 0.0, np.clip(lim.lower, -np.pi, 0.0))
                    shi = np.where(lk, 0.0, np.clip(lim.upper, 0.0, np.pi))
                    semi = (shi[0], -slo[0], shi[2], -slo[2])
                    tlo, thi, split = slo[1], shi[1], _SPLIT_Y
                elif isinstance(lim, ConeTwistLimit):
                    semi = (lim.swing_x, lim.swing_x, lim.swing_z, lim.swing_z)
                    tlo, thi, split = lim.twist_min, lim.twist_max, lim
                else:
                    raise ValueError(f"joint {joint.name!r}: unsupported limit {lim!r}")
                lo += [-1.0, -1.0, tlo]
                hi += [1.0, 1.0, thi]
                self.vars.append(_Var(i, "ellipse", s, qs, limit=lim, semi=tuple(float(v) for v in semi),
                                      split=split, lo=np.array([tlo]), hi=np.array([thi])))
        self.lo, self.hi = np.array(lo, dtype=float), np.array(hi, dtype=float)
        self.n = len(lo)
        # Every effector of the skeleton, in its order: the error rows are stacked effector by
        # effector, and a variable moves an effector only if its joint is on the effector's path.
        self.effectors = list(skeleton.effectors)
        columns = np.array([v.joint for v in self.vars for _ in range(1 if v.kind == "hinge" else 3)])
        self.paths = [np.isin(columns, skeleton.ancestors(e.joint)) for e in self.effectors]

    # -- local rotations --------------------------------------------------------------------
    def _rotation(self, var: _Var, z: np.ndarray) -> np.ndarray:
        if var.kind == "euler":
            return euler_to_matrix_unchecked(z, var.limit.order)
        x, y = _square_to_disk(z[..., 0], z[..., 1])
        px, nx, pz, nz = var.semi
        su = x * np.where(x >= 0.0, px, nx)
        sw = y * np.where(y >= 0.0, pz, nz)
        return var.split.compose(su, sw, z[..., 2])

    def q(self, z: np.ndarray) -> np.ndarray:
        """(B, dof) configurations of box points ``z`` (B, n)."""
        out = np.zeros((len(z), self.skeleton.dof))
        for var in self.vars:
            if var.kind == "hinge":
                out[:, var.q_start] = z[:, var.start]
            else:
                R = self._rotation(var, z[:, var.start:var.start + 3])
                out[:, var.q_start:var.q_start + 3] = matrix_to_rotvec(R)
        return out

    def evaluate(self, z: np.ndarray, jac: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """Stacked effector positions (B, 3E) [m] and, with ``jac``, d positions / dz (B, 3E, n).

        Rows ``3e:3e + 3`` are effector ``e``'s position; its Jacobian columns are zero for the
        variables of joints off its ancestor path (the other arm of a tree).
        """
        B = len(z)
        eye = np.broadcast_to(np.eye(3), (B, 3, 3))
        R_of, o_of = {}, {}  # per joint: world rotation after its own turn, world pivot
        pre_R, origins, omegas = [], [], []
        for var in self.vars:
            joint = self.skeleton.joints[var.joint]
            R_parent = eye if joint.parent < 0 else R_of[joint.parent]
            o = (0.0 if joint.parent < 0 else o_of[joint.parent]) + R_parent @ joint.origin[:3, 3]
            P = R_parent @ joint.origin[:3, :3]
            if var.kind == "hinge":
                a = var.axis
                th = z[:, var.start]
                c, s = np.cos(th)[:, None, None], np.sin(th)[:, None, None]
                K = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
                R = np.eye(3) + s * K + (1.0 - c) * (K @ K)
                w = [np.broadcast_to(a, (B, 3))]
            else:
                zz = z[:, var.start:var.start + 3]
                R = self._rotation(var, zz)
                w = []
                if jac:  # central differences of the local rotation, all six in one call
                    shifted = self._rotation(var, (zz[None] + _STEPS[:, None, :]).reshape(-1, 3)).reshape(6, B, 3, 3)
                    W = (shifted[:3] - shifted[3:]) / 2e-6 @ np.swapaxes(R, -1, -2)
                    w = list(0.5 * np.stack([W[..., 2, 1] - W[..., 1, 2], W[..., 0, 2] - W[..., 2, 0],
                                             W[..., 1, 0] - W[..., 0, 1]], axis=-1))
            pre_R.append(P)
            origins.append(o)
            omegas.append(w)
            R_of[var.joint], o_of[var.joint] = P @ R, o
        tips = [o_of[e.joint] + R_of[e.joint] @ e.offset[:3, 3] for e in self.effectors]
        p = np.concatenate(tips, axis=1)
        if not jac:
            return p, None
        # Column k: the world angular velocity of its joint crossed with the lever to the effector.
        W = np.stack([P @ wk[..., None] for P, w in zip(pre_R, omegas) for wk in w], axis=1)[..., 0]  # (B, n, 3)
        pivots = np.stack([oi for oi, w in zip(origins, omegas) for _ in w], axis=1)
        blocks = []
        for tip, path in zip(tips, self.paths):
            r = tip[:, None, :] - pivots
            blocks.append(np.stack([W[..., 1] * r[..., 2] - W[..., 2] * r[..., 1],
                                    W[..., 2] * r[..., 0] - W[..., 0] * r[..., 2],
                                    W[..., 0] * r[..., 1] - W[..., 1] * r[..., 0]], axis=1) * path)
        return p, np.concatenate(blocks, axis=1)

    def z_of(self, q: np.ndarray) -> np.ndarray:
        """(B, n) box points whose configurations are (nearly) ``q`` (B, dof): clipped into the box."""
        q = np.atleast_2d(q)
        z = np.zeros((len(q), self.n))
        for var in self.vars:
            if var.kind == "hinge":
                v = q[:, var.q_start]
                if self.lo[var.start] == -TWO_PI:
                    v = np.mod(v + np.pi, TWO_PI) - np.pi
                z[:, var.start] = v
                continue
            R = rotvec_to_matrix(q[:, var.q_start:var.q_start + 3])
            if var.kind == "euler":
                i, j, k = AXIS_INDICES[var.limit.order]
                e0 = matrix_to_euler_unchecked(R, var.limit.order)
                e1 = e0.copy()
                e1[:, i] += np.pi
                e1[:, j] = np.pi - e0[:, j]
                e1[:, k] += np.pi
                best, dist = None, None
                for e in (e0, e1):
                    c, d = circular_clamp(e, var.lo, var.hi)
                    c = np.where(var.free, np.mod(e + np.pi, TWO_PI) - np.pi, c)
                    d = np.where(var.free, 0.0, d).max(axis=-1)
                    best = c if best is None else np.where((d < dist)[:, None], c, best)
                    dist = d if dist is None else np.minimum(d, dist)
                z[:, var.start:var.start + 3] = best
            else:
                su, sw, tw = var.split.swing_twist_angles(R)
                px, nx, pz, nz = var.semi
                ax, az = np.where(su >= 0.0, px, nx), np.where(sw >= 0.0, pz, nz)
                x = np.where(ax > 0, su / np.where(ax > 0, ax, 1.0), 0.0)
                y = np.where(az > 0, sw / np.where(az > 0, az, 1.0), 0.0)
                u, v = _disk_to_square(x, y)
                z[:, var.start] = u
                z[:, var.start + 1] = v
                z[:, var.start + 2] = circular_clamp(tw, var.lo[0], var.hi[0])[0]
        return np.clip(z, self.lo, self.hi)

    def sample(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """(count, n) uniform box points (periodic variables over one turn)."""
        lo, hi = np.maximum(self.lo, -np.pi), np.minimum(self.hi, np.pi)
        lo, hi = np.where(self.lo == self.hi, self.lo, lo), np.where(self.lo == self.hi, self.hi, hi)
        return rng.uniform(lo, hi, (count, self.n))

    def check(self, rng: np.random.Generator) -> None:
        """Raise when the parametrisation disagrees with ik_core's FK or limits (a bench bug)."""
        z = self.sample(rng, 16)
        q = self.q(z)
        p, _ = self.evaluate(z, jac=False)
        p_ref = np.concatenate([effector_poses(self.skeleton, q, e.name)[:, :3, 3] for e in self.effectors], axis=1)
        viol = limit_violation(self.skeleton, q)
        p_back, _ = self.evaluate(self.z_of(q), jac=False)
        # The Jacobian (path masks included) against central differences of the positions.
        _, J = self.evaluate(z[:2])
        steps = np.eye(self.n) * 1e-6
        fd = np.stack([(self.evaluate(z[:2] + h, jac=False)[0] - self.evaluate(z[:2] - h, jac=False)[0]) / 2e-6
                       for h in steps], axis=-1)
        jac_err = np.abs(J - fd).max()
        if (np.abs(p - p_ref).max() > 1e-9 or viol.max() > 1e-9 or np.abs(p_back - p).max() > 1e-7
                or jac_err > 1e-5):
            raise AssertionError(f"{self.skeleton.name}: parametrisation off: FK {np.abs(p - p_ref).max():.2e}, "
                                 f"violation {viol.max():.2e}, round trip {np.abs(p_back - p).max():.2e}, "
                                 f"Jacobian {jac_err:.2e}")


def descend(feas: Feasible, target: np.ndarray, z: np.ndarray, iterations: int = 60) -> tuple[np.ndarray, np.ndarray]:
    """Batched projected Levenberg-Marquardt from box points ``z`` (B, n): (z, distance [m]) per start."""
    z = np.array(z, dtype=float)
    lam = np.full(len(z), 1e-2)
    locked = feas.lo == feas.hi
    p, J = feas.evaluate(z)
    e = p - target
    f = np.einsum("bi,bi->b", e, e)
    for _ in range(iterations):
        g = np.einsum("bij,bi->bj", J, e)
        free = ~(locked | ((z <= feas.lo + 1e-12) & (g > 0)) | ((z >= feas.hi - 1e-12) & (g < 0)))
        Jf = J * free[:, None, :]
        A = Jf @ np.swapaxes(Jf, 1, 2) + lam[:, None, None] * np.eye(e.shape[1])
        y = np.linalg.solve(A, e[..., None])[..., 0]
        z_new = np.clip(z - np.einsum("bij,bi->bj", Jf, y), feas.lo, feas.hi)
        p_new, J_new = feas.evaluate(z_new)
        e_new = p_new - target
        f_new = np.einsum("bi,bi->b", e_new, e_new)
        ok = f_new < f
        z = np.where(ok[:, None], z_new, z)
        e = np.where(ok[:, None], e_new, e)
        J = np.where(ok[:, None, None], J_new, J)
        gain = np.where(ok, f - f_new, 0.0)
        f = np.where(ok, f_new, f)
        lam = np.clip(np.where(ok, lam * 0.3, lam * 8.0), 1e-10, 1e8)
        if np.all((gain < 1e-14) & ~ok | (lam >= 1e8)):
            break
    return z, np.sqrt(f)


def polish(feas: Feasible, target: np.ndarray, z0: np.ndarray, maxiter: int = 300,
           weights: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """scipy L-BFGS-B on the box from ``z0`` (n,): (z, distance [m]).

    With ``weights`` (one per stacked target coordinate) the distance is of the weighted errors.
    """
    w = np.ones(np.size(target)) if weights is None else weights
    t = np.ravel(target)

    def fun(z):
        p, J = feas.evaluate(z[None])
        e = (p[0] - t) * w / MM  # in mm, so that the tolerances mean something
        return float(e @ e), 2.0 * (J[0].T @ (w * e)) / MM

    res = minimize(fun, z0, jac=True, method="L-BFGS-B", bounds=list(zip(feas.lo, feas.hi)),
                   options={"maxiter": maxiter, "ftol": 1e-15, "gtol": 1e-9})
    z = np.clip(res.x, feas.lo, feas.hi)
    p, _ = feas.evaluate(z[None], jac=False)
    return z, float(np.linalg.norm((p[0] - t) * w))


def global_optimum(feas: Feasible, target: np.ndarray, rng: np.random.Generator, starts: int,
                   extra: np.ndarray | None = None, keep: int = 3) -> tuple[np.ndarray, float]:
    """Best box point over ``starts`` random starts (plus the rest pose and ``extra``): (z, distance [m])."""
    z0 = [feas.sample(rng, starts), feas.z_of(np.zeros(feas.skeleton.dof))]
    if extra is not None:
        z0.append(np.atleast_2d(extra))
    z, d = descend(feas, target, np.concatenate(z0))
    best_z, best_d = None, np.inf
    for k in np.argsort(d)[:keep]:
        zk, dk = polish(feas, target, z[k], maxiter=150)
        if dk > d[k]:
            zk, dk = z[k], float(d[k])
        if dk < best_d:
            best_z, best_d = zk, dk
    return best_z, best_d


def distance(skeleton: Skeleton, q: np.ndarray, target: np.ndarray) -> np.ndarray:
    """(...,) effector distance [m] to the target by ik_core's FK."""
    return np.linalg.norm(effector_poses(skeleton, q, "tip")[..., :3, 3] - target, axis=-1)


# ---------------------------------------------------------------------------------------------
# Single targets


def _raw_configuration(skeleton: Skeleton, rng: np.random.Generator, spread: float) -> np.ndarray:
    q = np.zeros(skeleton.dof)
    for i, joint in enumerate(skeleton.joints):
        s = skeleton.q_index[i]
        if joint.kind is JointKind.BALL:
            axis = rng.normal(size=3)
            q[s:s + 3] = axis / np.linalg.norm(axis) * rng.uniform(0.0, spread)
        elif joint.kind is JointKind.CONTINUOUS:
            q[s] = rng.uniform(-np.pi, np.pi)
        else:
            lo, hi = max(joint.lower, -np.pi), min(joint.upper, np.pi)
            q[s] = rng.uniform(lo - spread / 2, hi + spread / 2)
    return q


def make_targets(skeleton: Skeleton, feas: Feasible, rng: np.random.Generator, per_class: int, starts: int):
    """Targets of each class: list of (class, target (3,), optimum distance [m], optimum q)."""
    out = []
    for _ in range(per_class):
        q = project_configuration(skeleton, _raw_configuration(skeleton, rng, 2.5))
        out.append(("reach", effector_poses(skeleton, q, "tip")[:3, 3], 0.0, q))
    found, tries = 0, 0
    while found < per_class and tries < 6 * per_class:
        tries += 1
        t = effector_poses(skeleton, _raw_configuration(skeleton, rng, np.pi), "tip")[:3, 3]
        # A cheap screen first: any start within 1 mm proves the target is (nearly) reachable.
        _, d = descend(feas, t, np.concatenate([feas.sample(rng, 12), feas.z_of(np.zeros(skeleton.dof))]), 30)
        if d.min() <= NEAR:
            continue
        z, d_opt = global_optimum(feas, t, rng, starts)
        if d_opt > NEAR:
            out.append(("out", t, d_opt, feas.q(z[None])[0]))
            found += 1
    length = chain_length(skeleton)
    for _ in range(per_class):
        u = rng.normal(size=3)
        t = u / np.linalg.norm(u) * length * rng.uniform(1.05, 1.6)
        z, d_opt = global_optimum(feas, t, rng, starts)
        out.append(("far", t, d_opt, feas.q(z[None])[0]))
    return out


def solvers_for(skeleton: Skeleton, bones: int, limb: bool) -> list[tuple[str, str]]:
    """(row label, solver name) pairs for a chain: every solver (two-bone only on limbs) and Auto."""
    rows = [(n, n) for n in SOLVER_NAMES if n != "two_bone" or limb]
    return rows + [("auto", resolve_solver("auto", bones, pole=False, full_pose=False, robot=False, limb=limb))]


def run_targets(args, rng: np.random.Generator, chains: list[tuple[Skeleton, str, int]]) -> tuple[list, dict]:
    """Solve every target of every chain with every solver; one record per (solver, target)."""
    records, errors = [], {}
    for skeleton, family, bones in chains:
        feas = Feasible(skeleton)
        feas.check(rng)
        targets = make_targets(skeleton, feas, rng, args.per_class, args.starts)
        for label, name in solvers_for(skeleton, bones, family == "limb"):
            try:
                solver = make_solver(name, skeleton, "tip", mode="position")
            except Exception as exc:  # noqa: BLE001 - counted and reported, never fatal
                errors.setdefault(label, f"{skeleton.name} ({family}): make_solver({name!r}): {exc}")
                for cls, *_ in targets:
                    records.append({"solver": label, "family": family, "bones": bones, "cls": cls, "exc": True})
                continue
            for cls, target, d_opt, _ in targets:
                rec = {"solver": label, "family": family, "bones": bones, "cls": cls, "exc": False, "opt": d_opt,
                       "chain": skeleton.name}
                t0 = time.perf_counter()
                try:
                    res = solver.solve(target, None)
                except Exception as exc:  # noqa: BLE001
                    errors.setdefault(label, f"{skeleton.name} ({family}): {type(exc).__name__}: {exc}")
                    rec["exc"] = True
                    records.append(rec)
                    continue
                rec["ms"] = (time.perf_counter() - t0) * 1e3
                q = np.asarray(res.q, dtype=float).reshape(-1)
                rec["nan"] = not bool(np.isfinite(q).all())
                if rec["nan"]:
                    records.append(rec)
                    continue
                rec["viol"] = bool(limit_violation(skeleton, q) > 1e-9)
                d = float(distance(skeleton, q, target))
                rec["d"] = d
                rec["converged"] = bool(np.asarray(res.converged).reshape(-1)[0])
                rec["reason"] = str(np.asarray(res.reason).reshape(-1)[0])
                rec["not_min"] = False
                if not rec["converged"]:
                    _, d_local = polish(feas, target, feas.z_of(q)[0], maxiter=40)
                    rec["not_min"] = d - d_local > GAIN
                    if cls != "reach" and d_local < d_opt - GAIN:  # the optimizer missed: keep the better one
                        rec["opt_missed"] = d_opt - d_local
                records.append(rec)
    return records, errors


def _share(mask: np.ndarray) -> float:
    return float(np.mean(mask)) if len(mask) else float("nan")


def _p95(values: list[float]) -> float:
    return float(np.percentile(values, 95)) if len(values) else float("nan")


def summarise(records: list[dict], label: str) -> dict:
    """One table row: the records of solver ``label``."""
    rs = [r for r in records if r["solver"] == label]
    ok = [r for r in rs if not r["exc"] and not r.get("nan")]
    row = {"solver": label, "n": len(rs)}
    for cls, key in (("out", "out"), ("far", "far")):
        excess = [r.get("lead_excess", r["d"] - r["opt"]) for r in ok if r["cls"] == cls]
        row[f"{key}_within"] = _share(np.array(excess) <= NEAR) * len(excess) / max(
            1, sum(1 for r in rs if r["cls"] == cls))
        row[f"{key}_p95_mm"] = _p95(excess) / MM if excess else float("nan")
    reach = [r for r in rs if r["cls"] == "reach"]
    row["reached"] = _share(np.array([r.get("converged", False) for r in reach]))
    row["reach_p95_mm"] = _p95([r["d"] for r in reach if "d" in r]) / MM
    unconv = [r for r in ok if not r["converged"]]
    row["not_min"] = _share(np.array([r["not_min"] for r in unconv]))
    ms = [r["ms"] for r in ok]
    row["ms_mean"] = float(np.mean(ms)) if ms else float("nan")
    row["ms_p95"] = _p95(ms)
    row["nan"] = sum(1 for r in rs if r.get("nan"))
    row["exc"] = sum(1 for r in rs if r["exc"])
    row["viol"] = sum(1 for r in ok if r["viol"])
    row["beat"] = sum(1 for r in ok if r["cls"] != "reach" and "lead_excess" not in r and r["d"] < r["opt"] - GAIN)
    return row


def by_family(records: list[dict], label: str) -> dict:
    """Per family: share within 1 mm (out + far) and share of reachable targets reached."""
    out = {}
    for fam in (*FAMILIES, "limb"):
        rs = [r for r in records if r["solver"] == label and r["family"] == fam]
        if not rs:
            continue
        hard = [r for r in rs if r["cls"] != "reach"]
        near = [("d" in r) and r["d"] - r["opt"] <= NEAR for r in hard]
        reach = [r.get("converged", False) for r in rs if r["cls"] == "reach"]
        out[fam] = (_share(np.array(near)), _share(np.array(reach)))
    return out


# ---------------------------------------------------------------------------------------------
# Takes


def _joint_turns(skeleton: Skeleton, q: np.ndarray) -> np.ndarray:
    """(N-1, joints) each joint's turn [rad or m] between consecutive frames (ball joints as rotation angles)."""
    turns = np.zeros((len(q) - 1, len(skeleton.joints)))
    for i, joint in enumerate(skeleton.joints):
        s = skeleton.q_index[i]
        if joint.kind is JointKind.BALL:
            R = rotvec_to_matrix(q[:, s:s + 3])
            rel = np.swapaxes(R[:-1], -1, -2) @ R[1:]
            c = np.clip((np.trace(rel, axis1=-2, axis2=-1) - 1.0) / 2.0, -1.0, 1.0)
            turns[:, i] = np.arccos(c)
        elif joint.dof:
            turns[:, i] = np.abs(np.diff(q[:, s]))
    return turns


def _joint_steps(skeleton: Skeleton, q: np.ndarray) -> np.ndarray:
    """(N-1,) largest joint turn [rad] between consecutive frames (ball joints as rotation angles)."""
    return _joint_turns(skeleton, q).max(axis=1, initial=0.0)


def take_targets(skeleton: Skeleton, rng: np.random.Generator, frames: int) -> np.ndarray:
    """(frames, 3) a circle or a Lissajous curve around a reachable point, reaching past the limited workspace."""
    length = chain_length(skeleton)
    centre = effector_poses(skeleton, project_configuration(skeleton, _raw_configuration(skeleton, rng, 1.5)),
                            "tip")[:3, 3] * rng.uniform(0.5, 1.0)
    a = rng.normal(size=3)
    a /= np.linalg.norm(a)
    b = np.cross(a, rng.normal(size=3))
    b /= np.linalg.norm(b)
    t = np.linspace(0.0, 1.0, frames)[:, None]
    r1, r2 = length * rng.uniform(0.4, 0.9, 2)
    if rng.random() < 0.5:
        return centre + r1 * np.cos(TWO_PI * t) * a + r1 * np.sin(TWO_PI * t) * b
    f1, f2 = rng.integers(1, 4, 2)
    phase = rng.uniform(0, TWO_PI)
    return centre + r1 * np.sin(TWO_PI * f1 * t + phase) * a + r2 * np.sin(TWO_PI * f2 * t) * b


def take_optimum(feas: Feasible, targets: np.ndarray, rng: np.random.Generator, starts: int):
    """Per-frame optimum q (N, dof) and distance (N,).

    Forward, each frame takes the previous optimum descended, or fresh starts where nearer;
    backward, the next frame's optimum carried back where that is nearer.
    """
    n = len(targets)
    z0 = feas.sample(rng, n * starts)
    tt = np.repeat(targets, starts, axis=0)
    z_r, d_r = descend(feas, tt, z0, 60)
    z_r, d_r = z_r.reshape(n, starts, -1), d_r.reshape(n, starts)
    zs, ds = [], []
    prev = None
    for f in range(n):
        k = int(np.argmin(d_r[f]))
        zf, df = z_r[f, k], float(d_r[f, k])
        if prev is None and df > NEAR:
            zp, dp = polish(feas, targets[f], zf, maxiter=100)
            zf, df = (zp, dp) if dp < df else (zf, df)
        elif prev is not None:
            zw, dw = descend(feas, targets[f], prev[None], 30)
            zw, dw = zw[0], float(dw[0])
            if dw > NEAR:  # out of the limited workspace: converge properly
                zp, dp = polish(feas, targets[f], zw, maxiter=40)
                zw, dw = (zp, dp) if dp < dw else (zw, dw)
            # Ties (within 0.01 mm) go to the previous frame's basin: the optimum track stays continuous.
            if df < dw - GAIN:
                zp, dp = polish(feas, targets[f], zf, maxiter=60)
                zf, df = (zp, dp) if dp < df else (zf, df)
            if not df < dw - GAIN:
                zf, df = zw, dw
        zs.append(zf)
        ds.append(df)
        prev = zf
    # Backward: a basin the fresh starts first find on a later frame is often nearer on the frames
    # before it too (the take's own answers reached one 0.14 mm nearer a frame earlier). Each frame
    # takes the answer carried back from the frame after where that is nearer by more than GAIN,
    # so the optimum does not lag where a basin takes over.
    for f in range(n - 2, -1, -1):
        zb, db = descend(feas, targets[f], zs[f + 1][None], 30)
        zb, db = zb[0], float(db[0])
        if db > NEAR:  # out of the limited workspace: converge properly, as forward
            zp, dp = polish(feas, targets[f], zb, maxiter=40)
            zb, db = (zp, dp) if dp < db else (zb, db)
        if db < ds[f] - GAIN:
            zs[f], ds[f] = zb, db
    return feas.q(np.array(zs)), np.array(ds)


def random_take(rng: np.random.Generator, k: int, frames: int, take_starts: int):
    """Take k as :func:`run_takes` draws it from ``rng``.

    Returns:
        The chain, its family, its bones, the targets (F, 3) [m], and the per-frame optimum
        (F, dof) and its distances (F,) [m] (see :func:`take_optimum`).
    """
    bones = int(rng.integers(3, 8))
    family = str(rng.choice(FAMILIES))
    skeleton = random_chain(rng, bones, family, f"take{k}_{family}{bones}")
    feas = Feasible(skeleton)
    feas.check(rng)
    targets = take_targets(skeleton, rng, frames)
    q_opt, d_opt = take_optimum(feas, targets, rng, take_starts)
    return skeleton, family, bones, targets, q_opt, d_opt


def forced_turns(skeleton: Skeleton, q: np.ndarray, turns: np.ndarray) -> np.ndarray:
    """(F-1,) steps of answers q (F, dof) whose only joints turning more than POP make whole turns the limits force.

    ``turns`` (F-1, joints): q's :func:`_joint_turns`.

    A hinge whose range is wider than a turn (a continuous joint, or limits of +-4 rad) holds some
    poses twice, a turn apart; following a target that keeps turning, it must unwind a whole turn
    where it meets its limit: the frame's pose continued in the frame before's turn lies outside
    the range. Which frame of that overlap the optimum unwinds at is its own choice; the answer's
    unwinding is the best pose jumping, not a pop. A whole turn the range would let the joint
    skip stays a pop.
    """
    lower, upper = skeleton.lower, skeleton.upper
    big = turns > POP
    forced = np.ones(len(big), dtype=bool)
    turned = np.zeros(len(big), dtype=bool)
    for i, joint in enumerate(skeleton.joints):
        if joint.kind not in (JointKind.REVOLUTE, JointKind.CONTINUOUS):
            forced &= ~big[:, i]
            continue
        s = skeleton.q_index[i]
        d = np.diff(q[:, s])
        whole_turns = np.round(d / TWO_PI)
        continued = q[1:, s] - whole_turns * TWO_PI
        outside = (continued < lower[s]) | (continued > upper[s])
        whole = (whole_turns != 0) & (np.abs(d - whole_turns * TWO_PI) <= POP) & outside
        forced &= ~big[:, i] | whole
        turned |= whole
    return forced & turned


def take_pops(skeleton: Skeleton, q: np.ndarray, q_opt: np.ndarray, excess: np.ndarray) -> tuple[int, int]:
    """Pops of a take's answers q (F, dof) against the optimum's, and such jumps where the best pose itself jumps.

    A pop: some joint turns more than POP from the frame before while no joint of the optimum turns
    more than STILL, and the answer is not nearer than the optimum by more than SWITCH_MARGIN, at
    that frame or the frame before (``excess`` (F,) [m]: the answer's distance less the optimum's),
    and the step is not a whole turn the limits force (:func:`forced_turns`).
    Where the answer is nearer at either end of the step, the optimum missed a better pose there
    and its stillness proves nothing: the answer leaving a basin it found nearer than the
    optimum's, back into the optimum's, is the best pose jumping. Those steps and the forced whole
    turns are the second count.
    """
    pops, best = pop_steps(skeleton, q, q_opt, excess)
    return int(pops.sum()), int(best.sum())


def pop_steps(
    skeleton: Skeleton, q: np.ndarray, q_opt: np.ndarray, excess: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(F-1,) the steps of :func:`take_pops`' two counts: step i is frame i to frame i + 1."""
    turns = _joint_turns(skeleton, q)
    steps, opt_steps = turns.max(axis=1, initial=0.0), _joint_steps(skeleton, q_opt)
    jumps = (steps > POP) & (opt_steps < STILL)
    nearer = (excess[1:] < -SWITCH_MARGIN) | (excess[:-1] < -SWITCH_MARGIN)
    best_jumps = nearer | forced_turns(skeleton, q, turns)
    return jumps & ~best_jumps, jumps & best_jumps


def run_takes(args, rng: np.random.Generator) -> tuple[list[dict], dict]:
    """Bake each take as the add-on does and compare it with the per-frame optimum."""
    rows, errors = [], {}
    for k in range(args.takes):
        skeleton, family, bones, targets, q_opt, d_opt = random_take(rng, k, args.frames, args.take_starts)
        name = resolve_solver("auto", bones, pole=False, full_pose=False, robot=False, limb=False)
        row = {"take": k, "family": family, "bones": bones, "solver": f"auto({name})", "frames": len(targets)}
        try:
            solver = make_solver(name, skeleton, "tip", mode="position")
            segment = len(targets) if name == "two_bone" else 32
            t0 = time.perf_counter()
            res = solve_track(solver, targets, None, max_jump=0.5, segment=segment)
            row["ms_frame"] = (time.perf_counter() - t0) * 1e3 / len(targets)
        except Exception as exc:  # noqa: BLE001
            errors.setdefault("take", f"{skeleton.name}: {type(exc).__name__}: {exc}")
            row["exc"] = True
            rows.append(row)
            continue
        q = np.asarray(res.q)
        row["nan"] = int((~np.isfinite(q).all(axis=1)).sum())
        q = np.where(np.isfinite(q), q, 0.0)
        d = distance(skeleton, q, targets)
        excess = d - d_opt
        steps, opt_steps = _joint_steps(skeleton, q), _joint_steps(skeleton, q_opt)
        pops, pops_nearer = take_pops(skeleton, q, q_opt, excess)
        row.update(
            exc=False,
            within=int((excess <= NEAR).sum()),
            excess=excess.tolist(),
            pops=pops,
            pops_nearer=pops_nearer,
            opt_jumps=int((opt_steps > POP).sum()),
            max_step=float(steps.max()),
            viol=int((limit_violation(skeleton, q) > 1e-9).sum()),
            beat=int((excess < -GAIN).sum()),
            out_frames=int((d_opt > NEAR).sum()),
        )
        rows.append(row)
    return rows, errors


# ---------------------------------------------------------------------------------------------
# Trees (issue 23, item 6): two arms hanging from a limited spine


TREE_KINDS = ("euler", "swing", "cone", "hinge")
#: The reach solvers that take a tree with two effectors (two-bone drives one effector only).
TREE_SOLVERS = ("fabrik", "ccd", "dls")
ARMS = ("left", "right")


def _tree_joint(rng: np.random.Generator, kind: str, name: str, parent: int, origin: np.ndarray) -> Joint:
    """A joint of ``kind`` (hinges about X or Z, or in two of five about an odd unit axis)."""
    joint = _joint(rng, kind, name, parent, origin)
    if kind == "hinge" and rng.random() < 0.4:
        axis = rng.normal(size=3)
        joint = replace(joint, axis=axis / np.linalg.norm(axis))
    return joint


def random_tree(rng: np.random.Generator, name: str) -> tuple[Skeleton, str]:
    """A spine of 1-3 limited joints and two arms of 2-4 bones from its last joint, effectors ``left``, ``right``.

    Returns the skeleton and its joint kinds (``spine|left|right``, a letter per joint: e Euler,
    s swing-twist, c cone-twist, h hinge) to characterise misses by.
    """
    spine = int(rng.integers(1, 4))
    lengths = rng.uniform(0.1, 0.4, spine)
    joints, kinds = [], []
    for k in range(spine):
        kind = str(rng.choice(TREE_KINDS, p=(0.3, 0.3, 0.3, 0.1)))  # mostly limited ball joints
        joints.append(_tree_joint(rng, kind, f"s{k}", k - 1, np.eye(4) if k == 0 else _offset(lengths[k - 1])))
        kinds.append(kind[0])
    effectors = []
    for side, sign in zip(ARMS, (1.0, -1.0)):
        kinds.append("|")
        bones = int(rng.integers(2, 5))
        arm = rng.uniform(0.1, 0.4, bones)
        for k in range(bones):
            kind = str(rng.choice(TREE_KINDS))
            if k == 0:  # the shoulder: beside the spine's tip, the arm turned out sideways (and a little askew)
                origin = _offset(lengths[-1])
                origin[0, 3] = sign * rng.uniform(0.05, 0.2)
                origin[:3, :3] = rotvec_to_matrix(np.array([0.0, 0.0, sign * np.pi / 2]) + rng.normal(0.0, 0.3, 3))
                parent = spine - 1
            else:
                origin, parent = _offset(arm[k - 1]), len(joints) - 1
            joints.append(_tree_joint(rng, kind, f"{side[0]}{k}", parent, origin))
            kinds.append(kind[0])
        effectors.append(Effector(side, len(joints) - 1, _offset(arm[-1])))
    return Skeleton(joints, effectors, name=name), "".join(kinds)


def _positions(skeleton: Skeleton, q: np.ndarray) -> np.ndarray:
    """(..., E, 3) positions [m] of every effector, by ik_core's FK."""
    return np.stack([effector_poses(skeleton, q, e.name)[..., :3, 3] for e in skeleton.effectors], axis=-2)


def _path_length(skeleton: Skeleton, effector: int) -> float:
    """Sum of the rest distances [m] from the root (at the origin) along the effector's path: its reach."""
    eff = skeleton.effectors[effector]
    path = skeleton.ancestors(eff.joint)[1:]  # the root's origin is the origin
    return float(sum(np.linalg.norm(skeleton.joints[j].origin[:3, 3]) for j in path)
                 + np.linalg.norm(eff.offset[:3, 3]))


def tree_targets(skeleton: Skeleton, feas: Feasible, rng: np.random.Generator, per_class: int, starts: int):
    """Target pairs of each class: list of (class, targets (E, 3), optimum distance [m], far effector or -1,
    the optimum's per-effector distances (E,) [m])."""
    out = []
    for _ in range(per_class):
        q = project_configuration(skeleton, _raw_configuration(skeleton, rng, 2.5))
        out.append(("reach", _positions(skeleton, q), 0.0, -1, np.zeros(2)))

    def optimum(t: np.ndarray) -> tuple[float, np.ndarray]:
        z, d_opt = global_optimum(feas, t.ravel(), rng, starts)
        p, _ = feas.evaluate(z[None], jac=False)
        return d_opt, np.linalg.norm(p[0].reshape(-1, 3) - t, axis=-1)

    found, tries = 0, 0
    while found < per_class and tries < 6 * per_class:
        tries += 1
        t = _positions(skeleton, _raw_configuration(skeleton, rng, np.pi))
        _, d = descend(feas, t.ravel(), np.concatenate([feas.sample(rng, 12), feas.z_of(np.zeros(skeleton.dof))]), 30)
        if d.min() <= NEAR:
            continue
        d_opt, per = optimum(t)
        if d_opt > NEAR:
            out.append(("out", t, d_opt, -1, per))
            found += 1
    for i in range(per_class):
        k = i % 2  # which arm's target lies beyond its reach
        t = _positions(skeleton, project_configuration(skeleton, _raw_configuration(skeleton, rng, 2.5)))
        u = rng.normal(size=3)
        t[k] = u / np.linalg.norm(u) * _path_length(skeleton, k) * rng.uniform(1.05, 1.6)
        d_opt, per = optimum(t)
        out.append(("far", t, d_opt, k, per))
    return out


def _arm_given_rest(skeleton: Skeleton, q: np.ndarray, k: int) -> tuple[Skeleton, np.ndarray]:
    """The arm of effector ``k`` alone, hanging where pose ``q`` puts the spine: (arm skeleton with
    effector ``tip``, the indices of its variables in the tree's q)."""
    eff = skeleton.effectors[k]
    path = list(skeleton.ancestors(eff.joint))
    spine_end = max(j for j in path if all(j in skeleton.ancestors(e.joint) for e in skeleton.effectors))
    arm = [j for j in path if j > spine_end]
    frames = forward_kinematics(skeleton, q)
    joints = []
    for n, j in enumerate(arm):
        joint = skeleton.joints[j]
        origin = frames[spine_end] @ joint.origin if n == 0 else joint.origin
        joints.append(replace(joint, parent=n - 1, origin=origin))
    sub = Skeleton(joints, [Effector("tip", len(joints) - 1, eff.offset)], name=f"{skeleton.name}-{eff.name}")
    cols = np.concatenate([np.arange(skeleton.q_index[j], skeleton.q_index[j] + skeleton.joints[j].dof) for j in arm])
    return sub, cols


def _arm_best_given_rest(skeleton: Skeleton, q: np.ndarray, target: np.ndarray, far: int, rng: np.random.Generator,
                         starts: int, check: bool = False) -> tuple[Feasible, np.ndarray, float]:
    """The far arm alone where pose ``q`` puts the rest of the tree, and its own best effort toward ``target``.

    Returns the arm's box (``Feasible``, checked against ik_core's FK when ``check``), the indices of
    its variables in the tree's q, and the distance [m] of its global optimum (the answer's own arm
    pose one of the starts).
    """
    sub, cols = _arm_given_rest(skeleton, q, far)
    arm = Feasible(sub)
    if check:
        arm.check(rng)
    _, d_arm = global_optimum(arm, target, rng, starts, extra=arm.z_of(q[cols]))
    return arm, cols, d_arm


def _tree_record(skeleton, feas, label, cls, t, d_opt, far, per_opt, kinds, q, ms, converged, reason, rng,
                 starts) -> dict:
    """One record: the answer's stacked distance, per-effector distances, and the checks of the serial table."""
    rec = {"solver": label, "cls": cls, "exc": False, "opt": d_opt, "far_arm": far, "kinds": kinds,
           "opt_per": per_opt, "ms": ms}
    rec["nan"] = not bool(np.isfinite(q).all())
    if rec["nan"]:
        return rec
    rec["viol"] = bool(limit_violation(skeleton, q) > 1e-9)
    rec["q"] = q
    per = np.linalg.norm(_positions(skeleton, q) - t, axis=-1)
    rec["per"], rec["d"] = per, float(np.sqrt(per @ per))
    rec["converged"], rec["reason"] = converged, reason
    rec["not_min"] = False
    if not rec["converged"] and far < 0:
        z_local, d_local = polish(feas, t.ravel(), feas.z_of(q)[0], maxiter=40)
        rec["not_min"] = rec["d"] - d_local > GAIN
        rec["gain"] = rec["d"] - d_local
        p_local, _ = feas.evaluate(z_local[None], jac=False)
        rec["local"] = (d_local, np.linalg.norm(p_local[0].reshape(-1, 3) - t, axis=-1))
    if far >= 0:
        # Each effector's best effort given the others: the reachable arm on its target, the far
        # arm against its own optimum with the rest of the tree held where the answer put it.
        arm, cols, d_arm = _arm_best_given_rest(skeleton, q, t[far], far, rng, starts, check=True)
        rec["far_excess"] = per[far] - min(d_arm, per[far])
        if not rec["converged"]:
            _, d_local = polish(arm, t[far], arm.z_of(q[cols])[0], maxiter=40)
            rec["gain"] = per[far] - d_local
            rec["not_min"] = rec["gain"] > GAIN
        # The excess the far class is judged by: the reachable arm's miss plus the far arm's.
        rec["lead_excess"] = per[1 - far] + rec["far_excess"]
    return rec


def _bake_like(skeleton: Skeleton, t: np.ndarray, far: int) -> np.ndarray:
    """The bake's answer to a tree frame with one arm's target beyond reach (operators/baking.py ``_track_tree``).

    The tree solver (DLS) with both effectors (the reachable one leads, the spine leans), then the
    far arm's own bones solved again (DLS) from the tree's pose of the bone they hang from, toward
    its target.
    """
    tree = make_solver("dls", skeleton, list(ARMS), mode="position")
    q = np.array(tree.solve(t, None).q, dtype=float)
    sub, cols = _arm_given_rest(skeleton, q, far)
    tail = make_solver("dls", sub, "tip", mode="position")
    q[cols] = tail.solve(t[far], q[cols]).q
    return q


def run_trees(args, rng: np.random.Generator) -> tuple[list[dict], dict]:
    """Solve every target pair of every tree with each tree solver, Auto's (the bake's DLS) and the bake's scheme."""
    records, errors = [], {}
    for k in range(args.trees):
        skeleton, kinds = random_tree(rng, f"tree{k}")
        feas = Feasible(skeleton)
        feas.check(rng)
        targets = tree_targets(skeleton, feas, rng, args.per_class, args.starts)
        first = len(records)
        for label in (*TREE_SOLVERS, "bake"):
            name = "dls" if label == "bake" else label
            try:
                solver = make_solver(name, skeleton, list(ARMS), mode="position")
            except Exception as exc:  # noqa: BLE001 - counted and reported, never fatal
                errors.setdefault(label, f"{skeleton.name} ({kinds}): make_solver({name!r}): {exc}")
                records += [{"solver": label, "cls": c, "exc": True, "kinds": kinds, "target": (k, i)}
                            for i, (c, *_) in enumerate(targets)]
                continue
            for i, (cls, t, d_opt, far, per_opt) in enumerate(targets):
                if label == "bake" and far < 0:  # no arm beyond reach: the bake solves the whole tree (the dls row)
                    continue
                t0 = time.perf_counter()
                try:
                    if label == "bake":
                        q = _bake_like(skeleton, t, far)
                        converged, reason = False, "bake: the tree, then the far arm's own bones"
                    else:
                        res = solver.solve(t, None)
                        q = np.asarray(res.q, dtype=float)
                        converged, reason = bool(np.asarray(res.converged).reshape(-1)[0]), str(res.reason.ravel()[0])
                except Exception as exc:  # noqa: BLE001
                    errors.setdefault(label, f"{skeleton.name} ({kinds}) {cls}: {type(exc).__name__}: {exc}")
                    records.append({"solver": label, "cls": cls, "exc": True, "kinds": kinds, "target": (k, i)})
                    continue
                ms = (time.perf_counter() - t0) * 1e3
                records.append(_tree_record(skeleton, feas, label, cls, t, d_opt, far, per_opt, kinds, q, ms,
                                            converged, reason, rng, args.starts))
                records[-1]["target"] = (k, i)
        _best_reference(records[first:])
        _led_reference(records[first:], feas, targets, rng)
    return records, errors


# Random starts of a far pair's led optimum beside every solver's answer (each a scipy polish).
LED_STARTS = 16


def _led_reference(records: list[dict], feas: Feasible, targets: list, rng: np.random.Generator) -> None:
    """Give each far pair's records the far arm's distance in the led problem's optimum, ``led_far`` [m].

    The led problem: the reachable arm on its target, the far arm as near as any such pose brings it
    (the rest of the tree free, unlike ``far_excess``, which holds it where the answer put it). Found
    by :func:`_led_polish` from LED_STARTS random box points and from every solver's answer; the
    best whose reachable arm is within 0.1 mm. ``led_excess`` on each record: its far arm's distance
    less that (where its reachable arm is on its target).
    """
    by_target: dict = {}
    for r in records:
        by_target.setdefault(r["target"], []).append(r)
    for (_, i), rs in by_target.items():
        cls, t, _, far, _ = targets[i]
        if cls != "far":
            continue
        near = 1 - far
        starts = list(feas.sample(rng, LED_STARTS)) + [feas.z_of(r["q"])[0] for r in rs if "q" in r]
        best = np.inf
        for z0 in starts:
            z, _ = _led_polish(feas, t, near, z0)
            p, _ = feas.evaluate(z[None], jac=False)
            per = np.linalg.norm(p[0].reshape(-1, 3) - t, axis=-1)
            if per[near] <= 1e-4:
                best = min(best, float(per[far]))
        for r in rs:
            r["led_far"] = best
            if "per" in r and r["per"][near] <= 1e-4:
                r["led_excess"] = float(r["per"][far]) - best


def _best_reference(records: list[dict]) -> None:
    """Make each target's optimum the best of the global optimizer and the local descents from every answer.

    With two arms the optimizer's starts cover the box more thinly than on a chain; a descent from
    some solver's answer that ends nearer is a feasible pose, so it is the better reference (the
    record keeps the optimizer's miss [m] as ``opt_missed``, on the record whose descent found it).
    """
    by_target: dict = {}
    for r in records:
        by_target.setdefault(r["target"], []).append(r)
    for rs in by_target.values():
        if rs[0]["cls"] == "reach":
            continue
        local = [r for r in rs if "local" in r]
        if not local:
            continue
        best = min(local, key=lambda r: r["local"][0])
        d_best, per_best = best["local"]
        if d_best < rs[0]["opt"] - GAIN:
            best["opt_missed"] = rs[0]["opt"] - d_best
            for r in rs:
                r["opt"], r["opt_per"] = d_best, per_best


def tree_effectors(records: list[dict], label: str) -> dict:
    """Per effector, on the ``far`` pairs: the reachable arm reached (share, p95 [mm]), the far arm within 1 mm of
    its best given the rest of the answer's tree, and within 1 mm of the led problem's optimum (the rest of the
    tree free, the reachable arm on its target; share, p95 excess [mm]); and the same share of the sum-of-squares
    optimum."""
    far = [r for r in records if r["solver"] == label and r["cls"] == "far" and "per" in r]
    near = np.array([r["per"][1 - r["far_arm"]] for r in far])
    opt_near = [r["opt_per"][1 - r["far_arm"]] for r in far]
    return {
        "opt_near_p95_mm": _p95(opt_near) / MM,
        "n": len(far),
        "near_reached": _share(near <= 1e-4),
        "near_p95_mm": _p95(list(near)) / MM,
        "far_given_rest": _share(np.array([r["far_excess"] <= NEAR for r in far])),
        "far_led": _share(np.array([r.get("led_excess", np.inf) <= NEAR for r in far])),
        "far_led_p95_mm": _p95([r.get("led_excess", np.inf) for r in far]) / MM,
        "opt_near_reached": _share(np.array([r["opt_per"][1 - r["far_arm"]] <= 1e-4 for r in far])),
    }




# The near arm's weight in a led frame's objective (see led_track): a near arm 0.1 mm off its target costs
# what a far arm 10 cm farther would.
LED_WEIGHT = 1e3


def _led_polish(feas: Feasible, target: np.ndarray, near: int, z0: np.ndarray,
                maxiter: int = 200) -> tuple[np.ndarray, float]:
    """:func:`polish` for a led frame: (z, its objective [m]).

    The objective is the norm of the stacked errors (target (2, 3) [m]) with the near arm's
    (``near``) weighted by LED_WEIGHT: the near arm on its target, the far arm as near as it gets.
    """
    w = np.ones(target.size)
    w[3 * near : 3 * near + 3] = LED_WEIGHT
    return polish(feas, target, z0, maxiter, weights=w)


def led_track(feas: Feasible, targets: np.ndarray, led: np.ndarray, near: np.ndarray, q_opt: np.ndarray,
              q_answer: np.ndarray) -> np.ndarray:
    """The per-frame optimum (F, dof) with each led frame's replaced by the optimum of its own problem.

    On a led frame (``led`` (F,); ``near`` (F,): the arm whose target is reachable) the answer's
    problem is not the summed squares: the near arm on its target, the far arm as near as it gets.
    The summed squares' optimum is then no reference for stillness (it may hold still while the
    led problem's best pose moves, and the other way round). This track is that problem's optimum,
    found as :func:`take_optimum` finds its track: forward, each led frame polished
    (:func:`_led_polish`) from the track's frame before (ties within SWITCH_MARGIN go to it, so
    the track stays continuous), from the summed squares' optimum and from the answer's pose;
    backward, a led frame takes the next frame's pose carried back where nearer by GAIN.
    Other frames keep ``q_opt``.
    """
    z = feas.z_of(q_opt)
    score = np.full(len(z), np.inf)
    frames = np.flatnonzero(led)
    for f in frames:
        starts = [z[f - 1]] if f > 0 else []
        starts += [feas.z_of(q_answer[f])[0], z[f]]
        found = [_led_polish(feas, targets[f], int(near[f]), z0) for z0 in starts]
        best = min(range(len(found)), key=lambda k: found[k][1])
        if f > 0 and found[0][1] <= found[best][1] + SWITCH_MARGIN:
            best = 0
        z[f], score[f] = found[best]
    for f in frames[::-1]:
        if f + 1 < len(z) and led[f + 1] and near[f + 1] == near[f]:
            zb, sb = _led_polish(feas, targets[f], int(near[f]), z[f + 1])
            if sb < score[f] - GAIN:
                z[f], score[f] = zb, sb
    return feas.q(z)


def run_tree_takes(args, rng: np.random.Generator) -> list[dict]:
    """Bake each tree take as the add-on bakes a tree unit (its DLS, ``solve_track`` with the bake's jump and
    segment) and compare it with the per-frame optimum of the summed squared distances."""
    rows = []
    for k in range(args.tree_takes):
        skeleton, kinds = random_tree(rng, f"treetake{k}")
        feas = Feasible(skeleton)
        feas.check(rng)
        t = np.linspace(0.0, 1.0, args.frames)[:, None]
        arms = []
        for e in range(2):  # each arm's target on its own circle around a reachable point, in and out of the limits
            centre = _positions(skeleton, project_configuration(skeleton, _raw_configuration(skeleton, rng, 1.5)))[e]
            a, b = rng.normal(size=3), rng.normal(size=3)
            a /= np.linalg.norm(a)
            b = np.cross(a, b)
            b /= np.linalg.norm(b)
            r = _path_length(skeleton, e) * rng.uniform(0.2, 0.5)
            phase = rng.uniform(0.0, TWO_PI)
            arms.append(centre + r * np.cos(TWO_PI * t + phase) * a + r * np.sin(TWO_PI * t + phase) * b)
        targets = np.stack(arms, axis=1)  # (N, 2, 3)
        q_opt, d_opt = take_optimum(feas, targets.reshape(len(t), -1), rng, args.take_starts)
        row = {"take": k, "kinds": kinds, "frames": len(t)}
        try:
            solver = make_solver("dls", skeleton, list(ARMS), mode="position")
            t0 = time.perf_counter()
            res = solve_track(solver, targets, None, max_jump=0.5, segment=32)
            row["ms_frame"] = (time.perf_counter() - t0) * 1e3 / len(t)
        except Exception as exc:  # noqa: BLE001
            row.update(exc=True, message=f"{skeleton.name} ({kinds}): {type(exc).__name__}: {exc}")
            rows.append(row)
            continue
        q = np.asarray(res.q)
        row["nan"] = int((~np.isfinite(q).all(axis=1)).sum())
        q = np.where(np.isfinite(q), q, 0.0)
        per = np.linalg.norm(_positions(skeleton, q) - targets, axis=-1)  # (N, 2)
        d = np.linalg.norm(per, axis=-1)
        excess = d - d_opt
        # Frames where one arm's target lies beyond its path length and the other's does not, and the
        # other arm can reach its target (its own solver, the spine free, finds a pose that does):
        # judged per effector (the reachable arm's distance plus the far arm's excess over its own
        # best effort with the rest of the tree where the answer put it), as the far target pairs
        # are. Where the other arm's target lies beyond what its limits allow too, no arm leads
        # (Solver.follow_missed): the frame is judged by the summed squares, as the others.
        beyond = np.stack([np.linalg.norm(targets[:, e], axis=-1) > _path_length(skeleton, e) + solver.tolerance
                           for e in range(2)], axis=1)
        mixed = np.flatnonzero(beyond.any(axis=1) & ~beyond.all(axis=1))
        near_arm = 1 - np.argmax(beyond[mixed], axis=1)
        led = np.zeros(len(mixed), dtype=bool)
        for e in (0, 1):
            arm_frames = np.flatnonzero(near_arm == e)
            if len(arm_frames):
                alone = make_solver("dls", skeleton, [ARMS[e]], mode="position").solve(
                    targets[mixed[arm_frames], e], None)
                led[arm_frames] = np.asarray(alone.converged, dtype=bool).reshape(-1)
        judge = np.random.default_rng([args.seed, 8, k])  # its own stream: the next takes stay what they were
        for f in mixed[led]:
            far = int(np.argmax(beyond[f]))
            _, _, d_arm = _arm_best_given_rest(skeleton, q[f], targets[f, far], far, judge, args.take_starts)
            excess[f] = per[f, 1 - far] + per[f, far] - min(d_arm, per[f, far])
        # Stillness is judged against the optimum of each frame's own problem: the led problem's on led frames.
        led_frames = np.zeros(len(t), dtype=bool)
        led_frames[mixed[led]] = True
        near_of = np.zeros(len(t), dtype=int)
        near_of[mixed] = near_arm
        q_ref = led_track(feas, targets, led_frames, near_of, q_opt, q)
        # On led frames, the far arm against the led track's (the led problem's optimum, the spine free).
        led_exc = []
        ref_per = np.linalg.norm(_positions(skeleton, q_ref) - targets, axis=-1)  # (N, 2)
        for f in mixed[led]:
            far = int(np.argmax(beyond[f]))
            on_target = per[f, 1 - far] <= solver.tolerance + 1e-9
            led_exc.append(per[f, far] - ref_per[f, far] if on_target else np.inf)
        steps, opt_steps = _joint_steps(skeleton, q), _joint_steps(skeleton, q_ref)
        pops, pops_nearer = take_pops(skeleton, q, q_ref, excess)
        row.update(
            exc=False, within=int((excess <= NEAR).sum()), p95_mm=_p95(list(excess)) / MM,
            pops=pops, pops_nearer=pops_nearer, opt_jumps=int((opt_steps > POP).sum()), max_step=float(steps.max()),
            viol=int((limit_violation(skeleton, q) > 1e-9).sum()), beat=int((excess < -GAIN).sum()),
            out_frames=int((d_opt > NEAR).sum()), mixed=len(mixed), led=int(led.sum()),
            led_within=int((np.asarray(led_exc) <= NEAR).sum()),
            led_p95_mm=_p95(led_exc) / MM if led_exc else float("nan"),
        )
        rows.append(row)
    return rows


def print_trees(args, records: list[dict], takes: list[dict], errors: dict, seconds: float) -> dict:
    """Print the trees' tables, Auto's misses and goals line, and the tree takes; return the goals."""
    if not records:
        _print_tree_takes(args, takes)
        return {}
    labels = [*TREE_SOLVERS, "bake"]
    rows = {label: summarise(records, label) for label in TREE_SOLVERS}
    effs = {label: tree_effectors(records, label) for label in labels}
    counts = {cls: sum(1 for r in records if r["solver"] == "dls" and r["cls"] == cls) for cls in CLASSES}
    print(f"\n{args.trees} trees (seed {args.seed}), spine 1-3 joints, two arms of 2-4 bones; target pairs: "
          f"{counts['reach']} reach, {counts['out']} out, {counts['far']} far; optimizer {args.starts} starts; "
          f"{seconds:.0f} s")
    print(f"{'solver':9}{'n':>5}{'out<=1mm':>9}{'far<=1mm':>9}{'p95 out':>9}{'p95 far':>9}{'reached':>8}"
          f"{'p95 rch':>8}{'not-min':>8}{'ms':>8}{'ms p95':>9}{'nan':>5}{'exc':>5}{'viol':>5}{'beat':>5}")
    for label, r in rows.items():
        name = "auto=dls" if label == "dls" else label
        print(f"{name:9}{r['n']:5d}{r['out_within']:9.3f}{r['far_within']:9.3f}{r['out_p95_mm']:9.1f}"
              f"{r['far_p95_mm']:9.1f}{r['reached']:8.3f}{r['reach_p95_mm']:8.2f}{r['not_min']:8.3f}"
              f"{r['ms_mean']:8.0f}{r['ms_p95']:9.0f}{r['nan']:5d}{r['exc']:5d}{r['viol']:5d}{r['beat']:5d}")
    missed_opt = sum(1 for r in records if r.get("opt_missed"))
    if missed_opt:
        print(f"(the optimizer's optimum replaced by a local descent from a solver's answer on {missed_opt} targets)")
    opt = effs["dls"]["opt_near_reached"]
    print(f"\nper effector, far pairs (one arm's target beyond its reach, the other's reachable); the sum-of-squares "
          f"optimum reaches the reachable one on {opt:.3f} (p95 {effs['dls']['opt_near_p95_mm']:.2f} mm)")
    print(f"{'solver':9}{'n':>5}{'near reached':>13}{'near p95 mm':>12}{'far arm<=1mm|rest':>18}"
          f"{'far arm<=1mm|led':>17}{'p95 led exc mm':>15}")
    for label in labels:
        e = effs[label]
        name = "auto=dls" if label == "dls" else label
        print(f"{name:9}{e['n']:5d}{e['near_reached']:13.3f}{e['near_p95_mm']:12.2f}{e['far_given_rest']:18.3f}"
              f"{e['far_led']:17.3f}{e['far_led_p95_mm']:15.1f}")
    misses = [r for r in records if r["solver"] == "dls" and not r["exc"] and not r.get("nan") and (
        (r["cls"] == "reach" and not r["converged"])
        or (r["cls"] != "reach" and r.get("lead_excess", r["d"] - r["opt"]) > NEAR))]
    if misses:
        print(f"Auto (dls) misses: {len(misses)} (kinds spine|left|right: e Euler, s swing, c cone, h hinge; far "
              f"pairs: excess = the reachable arm's miss + the far arm's over its best given the rest)")
    for r in misses[:12]:
        print(f"  {r['cls']:5} {r['kinds']:14} excess {r.get('lead_excess', r['d'] - r['opt']) / MM:8.2f} mm, arms "
              f"{r['per'][0] / MM:.2f}/{r['per'][1] / MM:.2f} mm (optimum {r['opt_per'][0] / MM:.2f}/"
              f"{r['opt_per'][1] / MM:.2f}): {r['reason'][:100]}")
    gains = sorted((r["gain"] / MM for r in records if r["solver"] == "dls" and r.get("not_min")), reverse=True)
    if gains:
        print("Auto (dls) not-min, what a local descent still gains [mm]: " + ", ".join(f"{g:.3f}" for g in gains))
    auto, e = rows["dls"], effs["dls"]
    goals = {
        "tree_auto_out_within_1mm>=0.99": auto["out_within"] >= 0.99,
        "tree_auto_far_within_1mm>=0.99": auto["far_within"] >= 0.99,
        "tree_auto_reached>=0.999": auto["reached"] >= 0.999,
        "tree_auto_near_arm_reached>=0.999": e["near_reached"] >= 0.999,
        "tree_auto_far_arm_led>=0.99": e["far_led"] >= 0.99,
    }
    marks = {k: "ok" if v else "MISS" for k, v in goals.items()}
    print(f"goals (issue 23, trees): Auto out<=1mm {auto['out_within']:.3f} >= 0.99 "
          f"{marks['tree_auto_out_within_1mm>=0.99']}, far<=1mm {auto['far_within']:.3f} >= 0.99 "
          f"{marks['tree_auto_far_within_1mm>=0.99']}, reached {auto['reached']:.3f} >= 0.999 "
          f"{marks['tree_auto_reached>=0.999']}, reachable arm of far pairs reached {e['near_reached']:.3f} >= 0.999 "
          f"{marks['tree_auto_near_arm_reached>=0.999']}, far arm within 1 mm of the led optimum {e['far_led']:.3f} "
          f">= 0.99 {marks['tree_auto_far_arm_led>=0.99']}")
    _print_tree_takes(args, takes)
    for label, message in errors.items():
        print(f"first exception ({label}, trees): {message}")
    return goals


def _print_tree_takes(args, takes: list[dict]) -> None:
    """Print a row per tree take and the takes' goals line (pops where the optimum is still, ms per frame)."""
    if takes:
        print(f"\ntree takes: {len(takes)} x {args.frames} frames, each arm's target on a circle, Auto (dls) via "
              f"solve_track; optimum {args.take_starts} fresh starts/frame")
        print(f"{'take':5}{'kinds':>15}{'<=1mm':>7}{'p95 exc':>9}{'out':>5}{'mixed':>6}{'led':>5}{'led<=1mm':>9}"
              f"{'p95 led':>8}{'pops':>6}{'pops+':>6}{'opt jumps':>10}{'max step':>9}{'ms/frame':>9}{'nan':>5}"
              f"{'viol':>5}{'beat':>5}")
    for t in takes:
        if t.get("exc"):
            print(f"  take {t['take']}: exception {t['message']}")
            continue
        print(f"{t['take']:<5}{t['kinds']:>15}{t['within'] / t['frames']:7.3f}{t['p95_mm']:9.1f}{t['out_frames']:5d}"
              f"{t['mixed']:6d}{t['led']:5d}{t['led_within'] / max(t['led'], 1):9.3f}{t['led_p95_mm']:8.1f}"
              f"{t['pops']:6d}{t['pops_nearer']:6d}{t['opt_jumps']:10d}{t['max_step']:9.3f}{t['ms_frame']:9.2f}"
              f"{t['nan']:5d}{t['viol']:5d}{t['beat']:5d}")
    ok = [t for t in takes if not t.get("exc")]
    if ok:
        pops = sum(t["pops"] for t in ok)
        ms = float(np.mean([t["ms_frame"] for t in ok]))
        print(f"goals (issue 23, tree takes): pops {pops} == 0 {'ok' if pops == 0 else 'MISS'}, {ms:.2f} ms/frame "
              f"<= 0.5 {'ok' if ms <= 0.5 else 'MISS'}")


# ---------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object per row")
    parser.add_argument("--quick", action="store_true", help="a ~30 s run: fewer chains, starts and takes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chains", type=int, default=None, help="random chains (default 40, quick 6)")
    parser.add_argument("--per-class", type=int, default=None, help="targets per class and chain (default 2, quick 1)")
    parser.add_argument("--starts", type=int, default=None, help="optimizer random starts (default 100, quick 16)")
    parser.add_argument("--takes", type=int, default=None, help="takes (default 16, quick 2)")
    parser.add_argument("--frames", type=int, default=None, help="frames per take (default 240, quick 120)")
    parser.add_argument("--take-starts", type=int, default=None, help="fresh starts per frame (default 6, quick 3)")
    parser.add_argument("--trees", type=int, default=None, help="random two-arm trees (default 8, quick 2)")
    parser.add_argument("--tree-takes", type=int, default=None, help="tree takes (default 2, quick 1)")
    parser.add_argument("--trees-only", action="store_true", help="only the trees (no chains, no takes)")
    args = parser.parse_args()
    quick = {"chains": 6, "per_class": 1, "starts": 16, "takes": 2, "frames": 120, "take_starts": 3, "trees": 2,
             "tree_takes": 1}
    full = {"chains": 40, "per_class": 2, "starts": 100, "takes": 16, "frames": 240, "take_starts": 6, "trees": 8,
            "tree_takes": 2}
    for key, value in (quick if args.quick else full).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.trees_only:
        args.chains = args.takes = 0
    rng = np.random.default_rng(args.seed)
    # The trees draw from their own stream: the chains' and takes' tables stay those of the seed.
    t0 = time.perf_counter()
    trees, tree_errors = run_trees(args, np.random.default_rng([args.seed, 6]))
    tree_takes = run_tree_takes(args, np.random.default_rng([args.seed, 7]))
    t_trees = time.perf_counter() - t0

    chains = []
    for c in range(args.chains):
        # A quarter of the chains have 2 bones (most of them limbs, the two-bone solver's shape).
        bones = 2 if c % 4 == 0 else int(rng.integers(3, 13))
        family = ("limb" if c % 8 == 0 or rng.random() < 0.6 else str(rng.choice(FAMILIES))) if bones == 2 else (
            FAMILIES[c % len(FAMILIES)])
        chains.append((random_chain(rng, bones, family, f"c{c}_{family}{bones}"), family, bones))
    t0 = time.perf_counter()
    records, errors = run_targets(args, rng, chains)
    t_targets = time.perf_counter() - t0
    t0 = time.perf_counter()
    takes, take_errors = run_takes(args, rng)
    t_takes = time.perf_counter() - t0
    errors.update(take_errors)

    labels = [*[n for n in SOLVER_NAMES], "auto"]
    rows = [summarise(records, label) for label in labels]
    fams = {label: by_family(records, label) for label in labels}
    counts = {cls: sum(1 for r in records if r["solver"] == "auto" and r["cls"] == cls) for cls in CLASSES}
    missed_opt = sum(1 for r in records if r.get("opt_missed"))
    ok_takes = [t for t in takes if not t.get("exc")]
    frames = sum(t["frames"] for t in ok_takes)
    excess = np.concatenate([t["excess"] for t in ok_takes]) if ok_takes else np.zeros(0)
    take_row = {
        "takes": len(takes), "frames": frames,
        "within": sum(t["within"] for t in ok_takes) / max(frames, 1),
        "p95_mm": _p95(list(excess)) / MM if len(excess) else float("nan"),
        "pops": sum(t["pops"] for t in ok_takes), "opt_jumps": sum(t["opt_jumps"] for t in ok_takes),
        "pops_nearer": sum(t["pops_nearer"] for t in ok_takes),
        "max_step": max((t["max_step"] for t in ok_takes), default=float("nan")),
        "ms_frame": float(np.mean([t["ms_frame"] for t in ok_takes])) if ok_takes else float("nan"),
        "nan": sum(t["nan"] for t in ok_takes), "exc": sum(1 for t in takes if t.get("exc")),
        "viol": sum(t["viol"] for t in ok_takes), "beat": sum(t["beat"] for t in ok_takes),
        "out_frames": sum(t["out_frames"] for t in ok_takes),
    }
    auto = rows[-1]
    goals = {
        "auto_out_within_1mm>=0.99": auto["out_within"] >= 0.99,
        "auto_reached>=0.999": auto["reached"] >= 0.999,
        "take_pops_where_optimum_still==0": take_row["pops"] == 0,
        "take_ms_per_frame<=0.5": take_row["ms_frame"] <= 0.5,
    }
    if args.json:
        for row in rows:
            print(json.dumps({"table": "targets", **row, "by_family": fams[row["solver"]]}))
        for t in takes:
            print(json.dumps({"table": "take", **{k: v for k, v in t.items() if k != "excess"}}))
        print(json.dumps({"table": "takes", **take_row}))
        for label in TREE_SOLVERS:
            print(json.dumps({"table": "trees", **summarise(trees, label), **tree_effectors(trees, label)}))
        print(json.dumps({"table": "trees", "solver": "bake", **tree_effectors(trees, "bake")}))
        for t in tree_takes:
            print(json.dumps({"table": "tree_take", **t}))
        print(json.dumps({"table": "goals", **goals, "errors": errors, "tree_errors": tree_errors, "counts": counts,
                          "seconds": {"targets": t_targets, "takes": t_takes, "trees": t_trees}}))
        return 0
    if args.trees_only:
        print_trees(args, trees, tree_takes, tree_errors, t_trees)
        return 0

    print(f"{args.chains} chains (seed {args.seed}), targets per class: {counts['reach']} reach, {counts['out']} out, "
          f"{counts['far']} far; optimizer {args.starts} starts; {t_targets:.0f} s")
    head = (f"{'solver':9}{'n':>5}{'out<=1mm':>9}{'far<=1mm':>9}{'p95 out':>9}{'p95 far':>9}{'reached':>8}"
            f"{'p95 rch':>8}{'not-min':>8}{'ms':>8}{'ms p95':>8}{'nan':>5}{'exc':>5}{'viol':>5}{'beat':>5}")
    print(head)
    for r in rows:
        print(f"{r['solver']:9}{r['n']:5d}{r['out_within']:9.3f}{r['far_within']:9.3f}{r['out_p95_mm']:9.1f}"
              f"{r['far_p95_mm']:9.1f}{r['reached']:8.3f}{r['reach_p95_mm']:8.2f}{r['not_min']:8.3f}"
              f"{r['ms_mean']:8.2f}{r['ms_p95']:8.2f}{r['nan']:5d}{r['exc']:5d}{r['viol']:5d}{r['beat']:5d}")
    fam_names = [f for f in (*FAMILIES, "limb") if any(f in fams[label] for label in labels)]
    print("\nwithin 1 mm (out+far) / reached, per family")
    print(f"{'solver':9}" + "".join(f"{f:>13}" for f in fam_names))
    for label in labels:
        cells = [fams[label].get(f) for f in fam_names]
        print(f"{label:9}" + "".join(f"{c[0]:7.2f}/{c[1]:.2f}" if c else f"{'-':>13}" for c in cells))
    if missed_opt:
        print(f"(local descents from solver answers beat the optimum on {missed_opt} answers)")
    misses = [r for r in records if r["solver"] == "auto" and not r["exc"] and not r.get("nan")
              and r["cls"] != "reach" and r["d"] - r["opt"] > NEAR]
    for r in misses:
        print(f"auto miss: {r['chain']} ({r['cls']}): {1e3 * (r['d'] - r['opt']):.2f} mm above the optimum "
              f"({1e3 * r['d']:.2f} vs {1e3 * r['opt']:.2f} mm){', not a local minimum' if r['not_min'] else ''}; "
              f"{r['reason']}")
    print(f"\ntakes: {take_row['takes']} x {args.frames} frames, 3-7 bones, Auto via solve_track; "
          f"{take_row['out_frames']} frames out of the limited workspace; optimum {args.take_starts} fresh "
          f"starts/frame; {t_takes:.0f} s")
    print(f"{'':9}{'<=1mm':>7}{'p95 exc':>9}{'pops':>6}{'pops+':>6}{'opt jumps':>10}{'max step':>9}{'ms/frame':>9}"
          f"{'nan':>5}{'exc':>5}{'viol':>5}{'beat':>5}")
    print(f"{'auto':9}{take_row['within']:7.3f}{take_row['p95_mm']:9.1f}{take_row['pops']:6d}{take_row['pops_nearer']:6d}"
          f"{take_row['opt_jumps']:10d}{take_row['max_step']:9.3f}{take_row['ms_frame']:9.2f}{take_row['nan']:5d}"
          f"{take_row['exc']:5d}{take_row['viol']:5d}{take_row['beat']:5d}")
    for t in takes:
        if not t.get("exc"):
            print(f"  take {t['take']:2d} {t['family']:6}{t['bones']:2d} bones {t['solver']:15} "
                  f"<=1mm {t['within'] / t['frames']:.3f} pops {t['pops']:3d} pops+ {t['pops_nearer']:3d} "
                  f"opt jumps {t['opt_jumps']:3d} "
                  f"{t['ms_frame']:.2f} ms/frame")
    marks = {k: "ok" if v else "MISS" for k, v in goals.items()}
    print(f"\ngoals (issue 23): Auto out<=1mm {auto['out_within']:.3f} >= 0.99 {marks['auto_out_within_1mm>=0.99']}, "
          f"reached {auto['reached']:.3f} >= 0.999 {marks['auto_reached>=0.999']}, "
          f"take pops {take_row['pops']} == 0 {marks['take_pops_where_optimum_still==0']}, "
          f"{take_row['ms_frame']:.2f} ms/frame <= 0.5 {marks['take_ms_per_frame<=0.5']}")
    for label, message in errors.items():
        print(f"first exception ({label}): {message}")
    if args.trees:
        print_trees(args, trees, tree_takes, tree_errors, t_trees)
    return 0


if __name__ == "__main__":
    sys.exit(main())
