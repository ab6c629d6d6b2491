# SPDX-License-Identifier: GPL-3.0-or-later
"""Latency benchmark: wall time of single-target ``solver.solve`` calls (the live-posing workload).

Run from the repo root: ``.venvs/core/bin/python bench/bench_latency.py [--n 500] [--json] [--quick]``.
Rows, each timed call by call (median and p95 over ``--n`` calls, after a short warm-up):
(a) ``two_bone``: TwoBoneSolver on a Blender-like limb (root BALL joint with an EulerLimit, REVOLUTE
elbow) with a pole, warm-started from the previous answer; (b) ``two_bone x4``: four such limbs
(two arms, two legs, different limits) solved in sequence, the cost of one depsgraph update;
(b') ``two_bone group x4``: the same four limbs in one ``TwoBoneGroup.solve`` (what live posing calls);
(c) ``dls ur5``: DLSSolver full pose on the UR5 preset (effector "tool"), from the middle of the
limits to the tool pose of a random in-limit configuration; (d) ``fabrik 3-ball``: FabrikSolver on
a 3-bone chain of ball joints with cone-twist limits, position targets, from the rest pose.
Goals: (b) and (b') < 5 ms, (c) median <= 2 ms. Timings move with the machine's load.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ik_core.limits import ConeTwistLimit, EulerLimit, project_configuration  # noqa: E402
from ik_core.model.kinematics import effector_poses  # noqa: E402
from ik_core.model.skeleton import Effector, Joint, JointKind, Skeleton  # noqa: E402
from ik_core.robots.presets import load_preset  # noqa: E402
from ik_core.solvers.dls.solver import DLSSolver  # noqa: E402
from ik_core.solvers.fabrik.solver import FabrikSolver  # noqa: E402
from ik_core.solvers.two_bone.group import TwoBoneGroup  # noqa: E402
from ik_core.solvers.two_bone.solver import TwoBoneSolver  # noqa: E402

SEED = 7


def _T(p: object = 0.0) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = p
    return T


def limb(
    root: tuple[float, float, float], l1: float, l2: float, limit: EulerLimit, hinge: tuple[float, float]
) -> Skeleton:
    """Blender-like limb: bones along +y, ball root with an Euler limit, hinge about x."""
    joints = [
        Joint("root", JointKind.BALL, origin=_T(root), limit=limit),
        Joint("hinge", JointKind.REVOLUTE, 0, _T([0, l1, 0]), axis=(1, 0, 0), lower=hinge[0], upper=hinge[1]),
    ]
    return Skeleton(joints, [Effector("hand", 1, _T([0, l2, 0]))], name="limb")


def limbs() -> list[Skeleton]:
    """Two arms and two legs with typical shoulder/hip Euler limits."""
    d = np.radians
    arm = EulerLimit((d(-90), d(-60), d(-100)), (d(90), d(60), d(60)), order="XYZ")
    leg = EulerLimit((d(-100), d(-45), d(-40)), (d(30), d(45), d(40)), order="XYZ")
    return [
        limb((0.2, 0.0, 1.4), 0.3, 0.25, arm, (0.0, d(150))),
        limb((-0.2, 0.0, 1.4), 0.3, 0.25, arm, (0.0, d(150))),
        limb((0.1, 0.0, 0.9), 0.45, 0.42, leg, (d(-150), 0.0)),
        limb((-0.1, 0.0, 0.9), 0.45, 0.42, leg, (d(-150), 0.0)),
    ]


def random_q(skel: Skeleton, n: int, rng: np.random.Generator) -> np.ndarray:
    """(n, dof) in-limit configurations (ball joints drawn small, then projected)."""
    lo = np.where(np.isfinite(skel.lower), skel.lower, -np.pi)
    hi = np.where(np.isfinite(skel.upper), skel.upper, np.pi)
    q = rng.uniform(lo, hi, size=(n, skel.dof))
    return project_configuration(skel, q)


def timed(n: int, warm: int, call: Callable[[int], object]) -> np.ndarray:
    """(n,) wall times [s] of ``call(i)``."""
    for i in range(warm):
        call(i)
    out = np.empty(n)
    for i in range(n):
        t0 = time.perf_counter()
        call(i)
        out[i] = time.perf_counter() - t0
    return out


def bench_two_bone(n: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """Times of one update solving ``count`` limbs in sequence, each warm-started."""
    skels = limbs()[:count]
    solvers = [TwoBoneSolver(s, "hand") for s in skels]
    goals = [effector_poses(s, random_q(s, n, rng), "hand")[..., :3, 3] for s in skels]
    poles = [s.joints[0].origin[:3, 3] + np.array([0.0, -0.5, 0.0]) for s in skels]
    state = [None] * count

    def call(i: int) -> None:
        for k, solver in enumerate(solvers):
            state[k] = solver.solve(goals[k][i % n], state[k], pole=poles[k]).q

    return timed(n, 20, call)


def bench_two_bone_group(n: int, rng: np.random.Generator) -> np.ndarray:
    """Times of one update solving the four limbs of :func:`limbs` in one batched call, warm-started."""
    skels = limbs()
    group = TwoBoneGroup([TwoBoneSolver(s, "hand") for s in skels])
    goals = np.stack([effector_poses(s, random_q(s, n, rng), "hand")[..., :3, 3] for s in skels], axis=1)
    poles = [s.joints[0].origin[:3, 3] + np.array([0.0, -0.5, 0.0]) for s in skels]
    state = [np.stack([s.preferred_q for s in skels])]

    def call(i: int) -> None:
        state[0] = group.solve(goals[i % n], state[0], poles).q

    return timed(n, 20, call)


def bench_dls(n: int, rng: np.random.Generator) -> np.ndarray:
    skel = load_preset("ur5")
    solver = DLSSolver(skel, "tool")
    goals = effector_poses(skel, random_q(skel, n, rng), "tool")
    lo = np.where(np.isfinite(skel.lower), skel.lower, -np.pi)
    mid = 0.5 * (lo + np.where(np.isfinite(skel.upper), skel.upper, np.pi))
    return timed(n, 10, lambda i: solver.solve(goals[i % n], mid))


def bench_fabrik(n: int, rng: np.random.Generator) -> np.ndarray:
    cone = ConeTwistLimit(np.pi / 4, np.pi / 4, -np.pi / 6, np.pi / 6)
    joints = [Joint(f"j{i}", JointKind.BALL, i - 1, _T([0, 0.2 if i else 0, 0]), limit=cone) for i in range(3)]
    skel = Skeleton(joints, [Effector("tip", 2, _T([0, 0.2, 0]))], name="3-ball")
    solver = FabrikSolver(skel, "tip")
    goals = effector_poses(skel, random_q(skel, n, rng), "tip")[..., :3, 3]
    return timed(n, 10, lambda i: solver.solve(goals[i % n]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500, help="timed calls per row")
    parser.add_argument("--json", action="store_true", help="one JSON object per row")
    parser.add_argument("--quick", action="store_true", help="50 calls per row")
    args = parser.parse_args()
    n = 50 if args.quick else args.n
    rows = []
    for name, run in (
        ("two_bone", lambda rng: bench_two_bone(n, 1, rng)),
        ("two_bone x4", lambda rng: bench_two_bone(n, 4, rng)),
        ("two_bone group x4", lambda rng: bench_two_bone_group(n, rng)),
        ("dls ur5", lambda rng: bench_dls(n, rng)),
        ("fabrik 3-ball", lambda rng: bench_fabrik(n, rng)),
    ):
        t = run(np.random.default_rng(SEED)) * 1e3
        rows.append({"case": name, "calls": n, "median_ms": float(np.median(t)), "p95_ms": float(np.percentile(t, 95))})
    if args.json:
        for row in rows:
            print(json.dumps(row))
        return
    print(f"{'case':<18}{'calls':>7}{'median ms':>12}{'p95 ms':>10}")
    for row in rows:
        print(f"{row['case']:<18}{row['calls']:>7}{row['median_ms']:>12.3f}{row['p95_ms']:>10.3f}")


if __name__ == "__main__":
    main()
