# SPDX-License-Identifier: GPL-3.0-or-later
"""A lean DLS kernel for a few targets on a serial chain of 1-DoF joints (robot arms), racing seeds.

:class:`SerialModel` folds the chain's constants once and does each iteration's forward
kinematics, Jacobian, errors and damped step in few numpy calls; the functions below race
seeds and restarts on it.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..base import IKResult, Solver, Targets
from .kinematics import LEVI_CIVITA, LOG_PARTS, QUARTER, rotation_log
from .restarts import DAMPING_DOWN, DAMPING_UP, SEED_DAMPING, STALL_RATIO
from .seeds import RANKED_SEEDS
from .small import limit_passes, small_direction

# Batches of at most this many targets take the serial kernel, one target after the other: for
# so few particles numpy's per-call overhead, not arithmetic, is the cost, and this kernel makes
# far fewer calls per iteration than the general path.
SERIAL_TARGETS = 8


class SerialModel:
    """Constants of a solver's serial chain folded once, and the per-iteration maths on them.

    The chain's every variable is a revolute, continuous or prismatic joint of the path to the
    one effector (no ball joint, mimic or stiffness); the effector is driven in "full" or
    "position" mode. Everything here works on P particles of one target at a time: for a few
    particles numpy's per-call overhead, not arithmetic, is the cost, so the kinematics take
    one sin, one product for all local transforms, a log-depth scan and one product for the
    errors, and per-particle scalars come back as Python lists.

    Args:
        solver: The :class:`~.solver.DLSSolver` that builds this kernel (limits, weights, null-space
            pull, mode); typed by the base class, since the solver module imports this one.
    """

    def __init__(self, solver: Solver) -> None:
        self.solver = solver
        chain = solver.model.chains[0]
        self.n = chain.n
        # Local transforms of all joints as one product: [sin q_0, cos q_0, sin q_1, ...] (P, 2n)
        # times a block-diagonal (2n, 16n) matrix, plus the constant parts (16n,).
        self.B12_block = np.zeros((2 * chain.n, 16 * chain.n))
        for j in range(chain.n):
            self.B12_block[2 * j : 2 * j + 2, 16 * j : 16 * j + 16] = chain.B12[j]
        self.B0_row = chain.B0flat.reshape(-1)
        self.end = chain.end
        self.shifts = chain.shifts
        slide = ~np.array(chain.rotating, dtype=bool)
        self.slide = np.flatnonzero(slide) if slide.any() else None
        self.full = solver.mode == "full"
        self.m = 6 if self.full else 3
        self.sqrt_w = solver._sqrt_w if solver._weighted else None
        self.lo, self.hi = solver._lo, solver._hi
        self.lo_list, self.hi_list = self.lo.tolist(), self.hi.tolist()
        self.null = solver._null
        self.null_w, self.pref = solver._null_w, solver._pref
        # Entries of a flattened homogeneous pose holding its rotation R[j, k] (row-major).
        self._rot_entries = np.array([4 * j + k for j in range(3) for k in range(3)])
        self._G0 = np.zeros((16, 7 if self.full else 3))
        self._G0[[3, 7, 11], [0, 1, 2]] = -1.0
        self._G_of_R = np.zeros((16 * 7, 9))  # the rotation part of G, linear in the target rotation
        if self.full:
            self._G0[15, 6] = -1.0
            # (tR R^T)_il = tR_ik R_lk and LOG_PARTS maps its flattened entries (3 i + l) to the
            # parts: G[(l, k), c] = sum_i LOG_PARTS[(i, l), c] tR_ik.
            log_lci = LOG_PARTS.reshape(3, 3, 4).transpose(1, 2, 0)  # (l, c, i)
            for m in range(9):
                G = np.zeros((16, 7))
                G[self._rot_entries, 3:] = (log_lci @ np.eye(9)[m].reshape(3, 3)).transpose(0, 2, 1).reshape(9, 4)
                self._G_of_R[:, m] = G.reshape(-1)

    # --- kinematics and residual -------------------------------------------------------------
    def target_terms(self, tp: np.ndarray, tR: np.ndarray | None) -> np.ndarray:
        """(16, c) matrix G with ``pose.reshape(16) @ G`` = the error parts of a (4, 4) effector pose.

        The parts are the position error ``tp - p`` (3) and, in "full" mode, the skew part
        ``2 sin(theta) axis`` (3) and ``2 cos(theta)`` of ``tR R^T``: all affine in the effector
        pose for a fixed target, and the pose's last row (0, 0, 0, 1) carries the constants.
        """
        G = self._G0.copy() if not self.full else (self._G_of_R @ tR.reshape(9)).reshape(16, 7) + self._G0
        G[15, :3] = tp
        return G

    def evaluate(
        self, q: np.ndarray, G: np.ndarray, tR: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[float], list[float], list[float]]:
        """Weighted errors and Jacobians of configurations q (P, n) for one target.

        Args:
            q: (P, n) configurations.
            G: (16, c) error parts of the target, from :meth:`target_terms`.
            tR: (3, 3) target rotation, or None in position mode.

        Returns:
            Effector poses (P, 4, 4), JT (P, n, m) transposed weighted Jacobians, ew (P, m)
            weighted errors, and as lists 0.5 |ew|^2, position errors [m] and rotation errors [rad].
        """
        P, n = q.shape
        sc = np.sin(q[:, :, None] + QUARTER)  # (sin q, cos q) in one call
        if self.slide is not None:
            sc[:, self.slide, 0] = q[:, self.slide]
            sc[:, self.slide, 1] = 1.0
        L = (sc.reshape(P, 2 * n) @ self.B12_block + self.B0_row).reshape(P, n, 4, 4)
        for k in self.shifts:  # Hillis-Steele scan: L[:, i] becomes the world frame of joint i
            L[:, k:] = L[:, :-k] @ L[:, k:]
        pose = L[:, -1] @ self.end
        z = L[:, :, :3, 2]
        d = pose[:, None, :3, 3] - L[:, :, :3, 3]
        lin = (z[..., :, None] * d[..., None, :]).reshape(P, n, 9) @ LEVI_CIVITA
        if self.slide is not None:
            lin[:, self.slide] = z[:, self.slide]
            z = z.copy()
            z[:, self.slide] = 0.0
        X = pose.reshape(P, 16) @ G  # the pose's last row is (0, 0, 0, 1): G's last row adds g
        if self.full:
            JT = np.concatenate([lin, z], axis=-1)
            # Per-particle scalars in Python: cheaper than numpy calls on arrays of a few entries.
            norms = np.hypot.reduce(X[:, :6].reshape(P, 2, 3), -1).tolist()  # (|dp|, 2 sin theta)
            pe = [a for a, _ in norms]
            re = [math.atan2(sn, c2) for (_, sn), c2 in zip(norms, X[:, 6].tolist())]
            ew = X[:, :6]
            # theta / (2 sin theta) stays exact as theta -> 0; where sn is 0, the skew part is 0 too.
            ew[:, 3:] *= np.array([a / max(sn, 1e-300) for a, (_, sn) in zip(re, norms)]).reshape(P, 1)
            if max(re) > 3.0:  # near pi the skew part vanishes: the careful log
                w, angle = rotation_log(tR @ pose[:, :3, :3].transpose(0, 2, 1))
                ew[:, 3:] = w
                re = angle.tolist()
        else:
            JT, ew, re = lin, X, [0.0] * P
            pe = np.hypot.reduce(X, -1).tolist()
        if self.sqrt_w is not None:
            ew = ew * self.sqrt_w
            JT = JT * self.sqrt_w
            E = (0.5 * np.add.reduce(ew * ew, -1)).tolist()
        else:
            E = [0.5 * (a * a + b * b) for a, b in zip(pe, re)]
        return pose, JT, ew, E, pe, re

    # --- the step ----------------------------------------------------------------------------
    def step(self, q: np.ndarray, JT: np.ndarray, ew: np.ndarray, E: list[float], lam: list[float]) -> np.ndarray:
        """One damped step from q (P, n), stopped on the limits and solved again without the stopped joints.

        The general path's small-batch maths (:mod:`.dls_small`) on the transposed Jacobians.
        """
        z = None
        if self.null:
            # The pull toward the preferred pose fades with the error (1 / DLSSolver's _NULL_FADE).
            z = (self.pref - q) * np.multiply.outer([min(math.sqrt(2.0 * e) * 10.0, 1.0) for e in E], self.null_w)
        J, lam = JT.transpose(0, 2, 1), np.asarray(lam)
        q_new = q + small_direction(ew, J, lam, z)
        lo, hi = self.lo, self.hi
        out = (q_new < lo) | (q_new > hi)
        if not np.count_nonzero(out):
            return q_new
        q_new = limit_passes(q, q_new, ew, J, lam, z, out, lo, hi, None, self.solver.limit_passes)
        return np.minimum(np.maximum(q_new, lo), hi)


class SerialKernel(SerialModel):
    """Single-target Levenberg-Marquardt on a serial chain, several particles racing in one array.

    The same maths and the same restart rules as :class:`~.dls.DLSSolver`'s general path (see
    :class:`~.dls_restarts.Particles`), specialised to one effector driven in "full" or
    "position" mode on a chain whose every variable is a revolute, continuous or prismatic joint
    of that chain (no ball joint, mimic, stiffness or cone limit): constants are folded once, a
    particle's forward kinematics and Jacobian take a handful of numpy calls, and the particles
    of one target (warm start, raced seeds, restarts) step together.

    Use :meth:`build`, which returns None when the solver's problem is not of that kind.
    """

    def __init__(self, solver: Solver, race: int, boost: tuple[int, int]) -> None:
        super().__init__(solver)
        # Library seeds raced beside the warm start, and (k, count): after k iterations a target
        # still running races count more.
        self.race, self.boost = int(race), boost
        self._rng: np.random.Generator | None = None
        self._lib_terms: tuple | None = None

    @classmethod
    def build(cls, solver: Solver, race: int, boost: tuple[int, int]) -> SerialKernel | None:
        """The kernel for ``solver``, or None when its skeleton, effectors or mode need the general path."""
        chains = solver.model.chains
        if chains is None or len(chains) != 1 or solver.mode not in ("full", "position"):
            return None
        if not chains[0].identity or solver._scaled or solver._project or chains[0].n == 0:
            return None
        return cls(solver, race, boost)

    # --- the solve ---------------------------------------------------------------------------
    def solve_call(self, targets: object, q0: object) -> IKResult | None:
        """``Solver.solve`` for a few well-formed targets, or None to leave the call to the template.

        Takes only float64 arrays: (4, 4) or (N, 4, 4) poses ("full"), (3,) or (N, 3) positions
        ("position"), N <= SERIAL_TARGETS, finite, rotations orthonormal, and a finite warm start
        of shape (dof,) or (N, dof) or None. Anything else (including every input the template
        rejects or repairs, and targets beyond the effector's reach) goes through the template,
        which raises or orthonormalises as usual.
        The result is the template's: limits, errors, converged flags and reasons alike.
        """
        t, n = targets, self.n
        if type(t) is not np.ndarray or t.dtype != np.float64:
            return None
        single = t.ndim == (2 if self.full else 1)
        shape = (4, 4) if self.full else (3,)
        if t.shape[t.ndim - len(shape):] != shape or t.ndim > len(shape) + 1:
            return None
        N = 1 if single else len(t)
        if not 0 < N <= SERIAL_TARGETS:
            return None
        solver = self.solver
        if q0 is None:
            q0 = solver.skeleton.preferred_q
        if type(q0) is not np.ndarray or q0.dtype != np.float64 or q0.shape not in ((n,), (n,) if single else (N, n)):
            return None
        # NaN and infinities propagate into the sums (a finite overflow only sends us to the template).
        if not math.isfinite(float(np.add.reduce(t, None)) + float(np.add.reduce(q0, None))):
            return None
        if self.full:
            t = t.reshape(N, 4, 4)
            if not all(_is_rotation(R) for R in t[:, :3, :3].tolist()):
                return None  # the template orthonormalises it
            tp, tr = t[:, :3, 3], t[:, :3, :3]
        else:
            tp, tr = t.reshape(N, 3), None
        # A target beyond reach takes the template, whose general path spends no restart on it.
        d = tp - solver.reach_bound.bases[0]
        if float(np.add.reduce(d * d, -1).max()) > (
            float(solver.reach_bound.lengths[0]) + solver.tolerance
        ) ** 2:
            return None
        start = time.perf_counter()
        q_start = np.minimum(np.maximum(q0, self.lo), self.hi)
        budget = solver.time_budget_s
        with np.errstate(all="ignore"):
            out = [
                self._solve_one(
                    tp[i], None if tr is None else tr[i], q_start if q_start.ndim == 1 else q_start[i],
                    None if budget is None else start + budget * (i + 1),
                )
                for i in range(N)
            ]
        batch = () if single else (N,)
        q = np.array([o[0] for o in out])
        if not math.isfinite(float(np.add.reduce(q, None))):  # never expected; the template's rule
            return None
        pe, re = [o[3] for o in out], [o[4] for o in out]
        tol, rot_tol = solver.tolerance, solver.rotation_tolerance
        converged = [a <= tol and b <= rot_tol for a, b in zip(pe, re)]
        solver._last_restarts = np.array([o[2] for o in out]).reshape(batch)
        q = q.reshape(*batch, n)
        pe_a, re_a = np.array(pe).reshape(batch), np.array(re).reshape(batch)
        reason = np.empty(batch, dtype=object)
        reason[...] = "converged"
        if not all(converged):
            tg = Targets(tp.reshape(*batch, 1, 3).copy(), None if tr is None else tr.reshape(*batch, 1, 3, 3).copy())
            for i, ok in enumerate(converged):
                if not ok:
                    idx = () if single else (i,)
                    reason[idx] = solver._unreached_reason(tg, q, idx, pe_a[idx], re_a[idx])
        lower, upper = self.lo_list, self.hi_list
        hits = [
            sum(1 for x, lo, hi in zip(row, lower, upper) if abs(x - lo) <= 1e-9 or abs(x - hi) <= 1e-9)
            for row in q.reshape(N, n).tolist()
        ]
        return IKResult(
            q=q, converged=np.array(converged).reshape(batch), position_error=pe_a, rotation_error=re_a,
            iterations=np.array([o[1] for o in out]).reshape(batch), reason=reason,
            limit_hits=np.array(hits).reshape(batch),
        )

    def solve(
        self, tp: np.ndarray, tr: np.ndarray | None, q0: np.ndarray, deadline_start: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Solve N targets one after the other (the template's ``_solve`` for calls it validated).

        Args:
            tp: (N, 1, 3) target positions [m].
            tr: (N, 1, 3, 3) target rotations, or None in position mode.
            q0: (N, n) warm starts inside the limits.
            deadline_start: ``time.perf_counter()`` when the call started; target i must end
                by ``deadline_start + (i + 1) * time_budget_s``.

        Returns:
            q (N, n), iterations (N,), restarts (N,), position errors (N,) [m] and rotation
            errors (N,) [rad].
        """
        budget = self.solver.time_budget_s
        out = [
            self._solve_one(
                tp[i, 0], None if tr is None else tr[i, 0], q0[i],
                None if budget is None else deadline_start + budget * (i + 1),
            )
            for i in range(len(q0))
        ]
        q = np.array([o[0] for o in out]).reshape(len(q0), self.n)
        return (q, *(np.array([o[j] for o in out]) for j in range(1, 5)))

    def _draw(self, count: int) -> np.ndarray:
        """(count, n) uniform configurations inside the limits (unbounded variables: [-pi, pi])."""
        if self._rng is None:
            self._rng = np.random.default_rng(self.solver.policy.seed)
        lib = self.solver.seed_library()
        if lib is not None:
            return lib.uniform(self._rng, count)
        finite = np.isfinite(self.lo) & np.isfinite(self.hi)
        lo, hi = np.where(finite, self.lo, -np.pi), np.where(finite, self.hi, np.pi)
        return self._rng.uniform(lo, hi, (count, self.n))

    def _solve_one(
        self, tp: np.ndarray, tR: np.ndarray | None, q0: np.ndarray, deadline: float | None
    ) -> tuple[np.ndarray, int, int, float, float, float]:
        """(q, iterations, restarts, position error, rotation error, best E or -1) for one target.

        The particles' scalars (errors, damping, stall state) are Python lists: for a handful of
        particles a list comprehension costs less than one numpy call.
        """
        solver = self.solver
        policy = solver.policy
        tol, rot_tol = solver.tolerance, solver.rotation_tolerance
        min_damping, damping = solver.min_damping, solver.damping
        stall = policy.stall_iterations
        self._rng = None  # every target draws the same uniform restarts as a fresh solve would
        G = self.target_terms(tp, tR)
        lib = solver.seed_library() if policy.restarts > 0 else None
        order: np.ndarray | None = None  # library entries ranked by pose distance to the target
        f = d = None
        race = 0
        if lib is not None:
            if self._lib_terms is None or self._lib_terms[0] is not lib:
                factor = lib.scale / math.sqrt(2.0)  # SeedLibrary.describe's weight of a rotation
                self._lib_terms = (lib, -2.0 * lib.features, factor)
            _, neg2F, factor = self._lib_terms
            f = tp if tR is None else np.concatenate([tp, tR.reshape(9) * factor])
            # Squared distances to the library poses, less |f|^2 (the same for every entry).
            d = neg2F @ f + lib.norms
            race = min(self.race, policy.restarts, len(d))
        top: list[int] = []
        if race:
            # The nearest few by repeated argmin (cheaper than a partition of the whole library);
            # the full ranking waits until a restart needs it.
            d_top = d.copy()
            for _ in range(race):
                top.append(int(d_top.argmin()))
                d_top[top[-1]] = np.inf
        # The warm start and the candidates to race it, evaluated together.
        q = np.concatenate([q0[None], lib.q[top]]) if race else q0[None].copy()
        pose, JT, ew, E, pe, re = self.evaluate(q, G, tR)
        if pe[0] <= tol and re[0] <= rot_tol:
            return q[0], 0, 0, pe[0], re[0], -1.0
        restarts = 0
        if race:
            # Only entries nearer the target than the warm start race it: a warm start close to
            # its target (tracking) runs alone and keeps its branch.
            # The warm start's distance, from its errors: |R - tR|_F^2 = 4 (1 - cos theta).
            own = pe[0] ** 2 + (0.0 if tR is None else 4.0 * factor**2 * (1.0 - math.cos(re[0])))
            limit = own - float(f @ f)
            restarts = sum(1 for x in d[top].tolist() if x < limit)
            if restarts < race:
                keep = slice(0, restarts + 1)
                q, JT, ew, E, pe, re = q[keep], JT[keep], ew[keep], E[keep], pe[keep], re[keep]
        P = len(E)
        lam = [damping * min(e, 1.0) * (1.0 if i == 0 else SEED_DAMPING) + min_damping for i, e in enumerate(E)]
        ref_E, check_at = list(E), [stall] * P
        first = [restarts == 0] + [False] * (P - 1)  # a lone warm start's first stall spawns a batch
        for i in range(1, P):
            if pe[i] <= tol and re[i] <= rot_tol:
                return q[i], 0, restarts, pe[i], re[i], -1.0
        raced = restarts > 0
        best = (math.inf, q0, math.inf, math.inf)
        next_check = stall
        boost_at, boost = self.boost if raced else (-1, 0)
        k = 0
        while P and k < solver.max_iterations:
            if deadline is not None and time.perf_counter() > deadline:
                break
            k += 1
            q_new = self.step(q, JT, ew, E, lam)
            _, JTn, ewn, En, pen, ren = self.evaluate(q_new, G, tR)
            reject = [i for i in range(P) if not En[i] < E[i]]
            if reject:
                # Undo the steps that raised the error, and damp those particles more.
                if len(reject) == P:
                    q_new, JTn, ewn = q, JT, ew
                else:
                    ri = np.array(reject)
                    q_new[ri], JTn[ri], ewn[ri] = q[ri], JT[ri], ew[ri]
                for i in reject:
                    En[i], pen[i], ren[i] = E[i], pe[i], re[i]
                    lam[i] *= DAMPING_UP / DAMPING_DOWN
            lam = [max(x * DAMPING_DOWN, min_damping) for x in lam]
            q, JT, ew, E, pe, re = q_new, JTn, ewn, En, pen, ren
            for i in range(P):  # the earliest loaded (the warm start first) wins ties
                if pe[i] <= tol and re[i] <= rot_tol:
                    return q[i], k, restarts, pe[i], re[i], -1.0
            if k < next_check and k != boost_at:
                continue
            spawn = 0
            if k >= next_check:
                # Every stall_iterations iterations an attempt must have cut its error by 30 %.
                stalled = []
                for i in range(P):
                    if check_at[i] <= k:
                        if E[i] > STALL_RATIO * ref_E[i]:
                            stalled.append(i)
                        ref_E[i], check_at[i] = E[i], k + stall
                if stalled:
                    j = min(stalled, key=E.__getitem__)
                    if E[j] < best[0]:
                        best = (E[j], q[j], pe[j], re[j])
                    want = sum(policy.batch if first[i] else 1 for i in stalled)
                    spawn = min(want, policy.restarts - restarts)
                    keep = [i for i in range(P) if i not in stalled]
                    q, JT, ew = q[keep], JT[keep], ew[keep]
                    E, pe, re, lam = [E[i] for i in keep], [pe[i] for i in keep], [re[i] for i in keep], [
                        lam[i] for i in keep]
                    ref_E, check_at, first = [ref_E[i] for i in keep], [check_at[i] for i in keep], [
                        first[i] for i in keep]
                    P = len(keep)
            if k == boost_at and P:
                # The raced seeds have not converged within the iterations most targets need.
                spawn += max(min(policy.restarts - restarts - spawn, boost), 0)
            if spawn:
                if order is None and lib is not None:
                    order = _rank(d)
                n_ranked = max(min(spawn, (0 if order is None else len(order)) - restarts), 0)
                seeds = lib.q[order[restarts:restarts + n_ranked]] if n_ranked else np.empty((0, self.n))
                if n_ranked < spawn:
                    seeds = np.concatenate([seeds, self._draw(spawn - n_ranked)])
                restarts += spawn
                _, JTs, ews, Es, pes, res = self.evaluate(seeds, G, tR)
                q, JT, ew = np.concatenate([q, seeds]), np.concatenate([JT, JTs]), np.concatenate([ew, ews])
                E, pe, re, ref_E = E + Es, pe + pes, re + res, ref_E + Es
                lam = lam + [damping * SEED_DAMPING * min(e, 1.0) + min_damping for e in Es]
                check_at, first = check_at + [k + stall] * spawn, first + [False] * spawn
                P += spawn
            if P:
                next_check = min(check_at)
        if P:
            j = min(range(P), key=E.__getitem__)
            if E[j] < best[0]:
                best = (E[j], q[j], pe[j], re[j])
        return best[1], k, restarts, best[2], best[3], best[0]


def _is_rotation(R: list[list[float]]) -> bool:
    """The template's test of a target rotation (orthonormal, right-handed), on a (3, 3) nested list."""
    for i in range(3):
        for j in range(i, 3):
            dot = R[0][i] * R[0][j] + R[1][i] * R[1][j] + R[2][i] * R[2][j]
            if abs(dot - (i == j)) > (1e-9 + 1e-5 if i == j else 1e-9):
                return False
    (a, b, c), (d, e, f), (g, h, k) = R
    return a * (e * k - f * h) - b * (d * k - f * g) + c * (d * h - e * g) > 0


def _rank(d: np.ndarray) -> np.ndarray:
    """Indices of the RANKED_SEEDS smallest entries of d (K,), nearest first."""
    top = min(RANKED_SEEDS, len(d))
    part = np.argpartition(d, top - 1)[:top] if top < len(d) else np.arange(len(d))
    return part[np.argsort(d[part], kind="stable")]
