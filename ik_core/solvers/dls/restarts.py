# SPDX-License-Identifier: GPL-3.0-or-later
"""Bookkeeping of the DLS solver's active set: accept or undo steps, adapt damping, restart stalls."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import InvalidInputError
from ..base import Solver

# Damping multipliers after a step that lowered the error, and after one that did not.
DAMPING_DOWN = 0.2
DAMPING_UP = 8.0
# An attempt must bring its error below this fraction of what it was stall_iterations ago.
STALL_RATIO = 0.7
# Initial damping of a library seed relative to the solver's: a seed is picked for a pose near
# the target, so it starts with (nearly) Gauss-Newton steps; a warm start may be anywhere.
SEED_DAMPING = 0.01


@dataclass(frozen=True)
class RestartPolicy:
    """When and how targets restart from other configurations.

    Attributes:
        restarts: Restart seeds each target may start, in all.
        batch: Seeds started together at a target's first restart (later stalls replace
            one seed by one), so a hard target explores several basins at once.
        stall_iterations: Iterations an attempt may take without cutting its error by 30 %.
        seed: Seed of the generator drawing the random configurations.
    """

    restarts: int = 50
    batch: int = 4
    stall_iterations: int = 6
    seed: int = 0

    def __post_init__(self) -> None:
        if int(self.restarts) < 0:
            raise InvalidInputError(f"restarts must be >= 0, got {self.restarts}")
        if int(self.batch) < 1:
            raise InvalidInputError(f"restart_batch must be >= 1, got {self.batch}")
        if int(self.stall_iterations) < 2:
            raise InvalidInputError(f"stall_iterations must be >= 2, got {self.stall_iterations}")


class Particles:
    """The active set: one or more candidate configurations per unfinished target.

    Every particle carries its configuration, weighted error and Jacobian, damping and
    stall-detection state, plus a copy of its target. A target finishes when one of its
    particles converges, or when it has no particle left and no restart to spend; the best
    configuration (lowest weighted error) seen for it is kept all along.

    Args:
        solver: The :class:`~.solver.DLSSolver` running the targets (residuals, limits, tolerances,
            policy); typed by the base class, since the solver module imports this one.
        q0: (N, dof) start configurations, already inside the limits.
        tp: (N, E, 3) target positions [m].
        tr: Target rotations or aim directions (see ``DLSSolver._residual``), or None.
        race: Library seeds raced beside each warm start from the first iteration (see :meth:`_race`).
        boost: (k, count): after iteration k every raced target still running races count more.
        policy: Restart policy; None means the solver's.
    """

    _FIELDS = (
        "q", "ew", "Jw", "E", "pe", "re", "lam", "tp", "tr", "t", "ref_E", "check_at", "first", "lo", "hi", "pref",
    )

    def __init__(
        self, solver: Solver, q0: np.ndarray, tp: np.ndarray, tr: np.ndarray | None, race: int = 0,
        boost: tuple[int, int] | None = None, policy: RestartPolicy | None = None,
    ) -> None:
        self.solver = solver
        self.policy = solver.policy if policy is None else policy
        # A local solve sets per-particle bounds and start configurations (P, dof) after
        # construction; None means the solver's own.
        self.lo: np.ndarray | None = None
        self.hi: np.ndarray | None = None
        self.pref: np.ndarray | None = None
        self.tol, self.rot_tol = solver.tolerance, solver.rotation_tolerance
        self.min_damping = solver.min_damping
        N = q0.shape[0]
        self._rng: np.random.Generator | None = None
        self.best_q = q0.copy()
        self.best_E = np.full(N, np.inf)
        self.best_pe = np.full(N, np.inf)
        self.best_re = np.full(N, np.inf)
        self.iterations = np.zeros(N, dtype=int)
        self.restarts = np.zeros(N, dtype=int)
        self.done = np.zeros(N, dtype=bool)
        self.target_tp, self.target_tr = tp, tr
        self.t = np.zeros(0, dtype=int)
        t, first = np.arange(N), np.ones(N, dtype=bool)
        # (k, count): after iteration k, every raced target still running adds count seeds.
        self._boost_at, self._boost = (-1, 0) if boost is None else boost
        self._raced = np.zeros(N, dtype=bool)
        # Where each target started: among its particles converging together, the nearest wins.
        self._start = q0.copy()
        # Light damping suits seeds picked for a pose near the target (a race); restart seeds
        # of a warm-started solve (tracking) keep the solver's damping, so they do not leap
        # across to another branch.
        self._seed_damping = SEED_DAMPING if race > 0 else 1.0
        if race > 0 and self.policy.restarts > 0:
            spawn, seeds = self._race(q0, min(int(race), self.policy.restarts))
            if len(spawn):
                self.restarts += np.bincount(spawn, minlength=N)
                # Raced targets already explore: a stall replaces one seed, not a batch.
                first[spawn] = False
                self._raced[spawn] = True
                t, q0 = np.concatenate([t, spawn]), np.concatenate([q0, seeds])
                first = np.concatenate([first, np.zeros(len(spawn), dtype=bool)])
        self._load(t, q0, first=first, k=0, seeded=np.arange(len(t)) >= N)
        self._settle(0)

    def _race(self, q0: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        """Library seeds to start beside the warm starts q0 (N, dof): target indices and (S, dof) seeds.

        A lone target from a far start would otherwise spend ``stall_iterations`` before its
        first restart; a batch of a few particles costs barely more per iteration than one.
        Up to ``count`` entries per target join, those whose pose is nearer the target than the
        warm start's, so a warm start close to its target (tracking) runs alone and keeps its
        branch. They are the entries :meth:`_seeds` ranks first, so later restarts go on down
        the same list.
        """
        lib = self.solver.seed_library()
        N = q0.shape[0]
        if lib is None:
            return np.zeros(0, dtype=int), q0[:0]
        tp, tr = self.target_tp, self.target_tr
        f = lib.describe(tp, tr)
        poses = self.solver.model.poses(q0)
        mode = self.solver.mode
        own = lib.describe(poses[..., 3], None if mode == "position" else (
            poses[..., :3] if mode == "full" else poses[..., :3] @ lib.aim_axis))
        own_d = np.add.reduce((own - f) ** 2, axis=1)
        d = lib.norms[None, :] - 2.0 * (f @ lib.features.T) + np.add.reduce(f * f, axis=1)[:, None]
        if not (d < own_d[:, None]).any():  # warm starts nearer than every entry (tracking): no sort
            return np.zeros(0, dtype=int), q0[:0]
        count = min(count, d.shape[1])
        part = np.argpartition(d, count - 1, axis=1)[:, :count] if count < d.shape[1] else np.argsort(d, axis=1)
        rows = np.arange(N)[:, None]
        part = part[rows, np.argsort(d[rows, part], axis=1)]
        nearer = d[rows, part] < own_d[:, None]  # a prefix of each sorted row
        want = np.count_nonzero(nearer, axis=1)
        return np.repeat(np.arange(N), want), lib.q[part[nearer]]

    @property
    def size(self) -> int:
        """Number of live particles."""
        return len(self.t)

    def _seeds(self, t: np.ndarray) -> np.ndarray:
        """(len(t), dof) restart configurations for targets t (sorted), inside the limits.

        The n-th restart of a target starts from the library entry n-th nearest to its pose;
        past the library's ranking (or without a library) from a uniform draw.
        """
        if self._rng is None:
            # Created on first use: the common case (no restart) never pays for the generator.
            self._rng = np.random.default_rng(self.policy.seed)
        lib = self.solver.seed_library()
        if lib is None:
            return self._uniform(len(t))
        first = np.searchsorted(t, t, side="left")
        rank = self.restarts[t] + np.arange(len(t)) - first
        targets, group = np.unique(t, return_inverse=True)
        tr = None if self.target_tr is None else self.target_tr[targets]
        idx = lib.nearest(lib.describe(self.target_tp[targets], tr), rank, group)
        q = lib.q[np.maximum(idx, 0)]
        miss = idx < 0
        if miss.any():
            q[miss] = lib.uniform(self._rng, int(miss.sum()))
        return q

    def _uniform(self, count: int) -> np.ndarray:
        lo, hi = self.solver._lo, self.solver._hi
        finite = np.isfinite(lo) & np.isfinite(hi)
        return self._rng.uniform(np.where(finite, lo, -np.pi), np.where(finite, hi, np.pi), (count, len(lo)))

    def _load(
        self, t: np.ndarray, q: np.ndarray, first: bool | np.ndarray, k: int, seeded: bool | np.ndarray = True
    ) -> None:
        """Evaluate new particles for targets t at q and append them to the active set.

        ``first`` marks warm starts (a stall spawns ``policy.batch`` seeds), ``seeded`` library
        seeds (smaller initial damping); both are scalars or (len(t),) masks.
        """
        tp = self.target_tp[t]
        tr = None if self.target_tr is None else self.target_tr[t]
        ew, Jw, E, pe, re = self.solver._evaluate(q, tp, tr)
        n = len(t)
        # Initial damping in proportion to the error (capped): a warm start close to its
        # target takes nearly Gauss-Newton steps at once, a far start cautious ones.
        new = {
            "q": q, "ew": ew, "Jw": Jw, "E": E, "pe": pe, "re": re,
            "lam": self.solver.damping * np.where(seeded, self._seed_damping, 1.0) * np.minimum(E, 1.0)
            + self.min_damping,
            "tp": tp, "tr": tr, "t": t,
            "ref_E": E.copy(), "check_at": np.full(n, k + self.policy.stall_iterations),
            "first": np.full(n, first),
        }
        if self.lo is not None:
            # Restarts of a bounded (local) solve search the whole range.
            lo, hi = self.solver._lo, self.solver._hi
            new.update(lo=np.broadcast_to(lo, q.shape).copy(), hi=np.broadcast_to(hi, q.shape).copy())
        if not len(self.t):
            for name, value in new.items():
                setattr(self, name, value)
        else:
            for name, value in new.items():
                old = getattr(self, name)
                setattr(self, name, None if old is None else np.concatenate([old, value]))
        self.next_check = int(self.check_at.min()) if len(self.t) else 0

    def _keep(self, mask: np.ndarray) -> None:
        if not mask.any():  # common when the last targets converge: skip the gathers
            self.t = self.t[:0]
            return
        for name in self._FIELDS:
            value = getattr(self, name)
            if value is not None:
                setattr(self, name, value[mask])

    def _absorb(self, idx: np.ndarray) -> None:
        """Record particles idx as their targets' best configuration where they beat it."""
        if not len(idx):
            return
        order = idx[np.lexsort((self.E[idx], self.t[idx]))]
        targets, first = np.unique(self.t[order], return_index=True)
        pick = order[first]
        better = self.E[pick] < self.best_E[targets]
        tb, pb = targets[better], pick[better]
        self.best_E[tb] = self.E[pb]
        self.best_q[tb] = self.q[pb]
        self.best_pe[tb] = self.pe[pb]
        self.best_re[tb] = self.re[pb]

    def update(
        self, q: np.ndarray, ew: np.ndarray, Jw: np.ndarray, E: np.ndarray, pe: np.ndarray, re: np.ndarray,
        k: int,
    ) -> None:
        """Take the step where it lowered the weighted error, undo it elsewhere, then settle.

        Args:
            q: (P, dof) stepped configurations (modified in place where a step is undone).
            ew: (P, m) their weighted errors.
            Jw: (P, m, dof) their weighted Jacobians.
            E: (P,) their weighted squared errors (halved).
            pe: (P,) their position errors [m].
            re: (P,) their rotation errors [rad].
            k: Iterations done so far.
        """
        accept = E < self.E
        reject = ~accept
        n_reject = int(np.count_nonzero(reject))
        if n_reject:
            # Undo the step where it raised the error: copy the few rejected rows back.
            ri = np.nonzero(reject)[0]
            q[ri], ew[ri], Jw[ri] = self.q[ri], self.ew[ri], self.Jw[ri]
            E[ri], pe[ri], re[ri] = self.E[ri], self.pe[ri], self.re[ri]
        self.q, self.ew, self.Jw, self.E, self.pe, self.re = q, ew, Jw, E, pe, re
        lam = self.lam * DAMPING_DOWN
        if n_reject:
            lam[ri] = self.lam[ri] * DAMPING_UP
        self.lam = np.maximum(lam, self.min_damping)
        self._settle(k)

    def _settle(self, k: int) -> None:
        """Finish converged targets and restart particles whose error stopped falling."""
        conv = (self.pe <= self.tol) & (self.re <= self.rot_tol)
        any_conv = conv.any()
        stalled = None
        if k >= self.next_check:
            # Every stall_iterations iterations an attempt must have cut its error by 30 %.
            due = self.check_at <= k
            stalled = due & (self.E > STALL_RATIO * self.ref_E) & ~conv
            self.ref_E = np.where(due, self.E, self.ref_E)
            self.check_at = np.where(due, k + self.policy.stall_iterations, self.check_at)
            self.next_check = int(self.check_at.min())
            if not stalled.any():
                stalled = None
        boost = k == self._boost_at
        if not any_conv and stalled is None and not boost:
            return
        if any_conv:
            ci = np.nonzero(conv)[0]
            tc = self.t[ci]
            if len(tc) > 1:
                # Several particles of a target converged at once: the one nearest the target's
                # start wins (the warm start itself on a tie), which keeps a tracked branch.
                near = np.einsum("ij,ij->i", self.q[ci] - self._start[tc], self.q[ci] - self._start[tc])
                order = np.lexsort((ci, near, tc))
                tc, first = np.unique(tc[order], return_index=True)
                ci = ci[order][first]
            self.best_q[tc] = self.q[ci]
            self.best_E[tc] = -1.0
            self.best_pe[tc] = self.pe[ci]
            self.best_re[tc] = self.re[ci]
            self.done[tc] = True
            self.iterations[tc] = k
        finished = self.done[self.t]
        spawn_t = np.zeros(0, dtype=int)
        if stalled is not None:
            stalled &= ~finished
            self._absorb(np.nonzero(stalled)[0])
            spawn_t = self._spawn_targets(stalled)
            finished |= stalled
        if boost:
            # The seeds raced so far have not converged within the iterations most targets
            # need: race the next-ranked entries too, keeping the running particles.
            live = np.unique(self.t[~finished])
            live = live[self._raced[live]]
            extra = np.clip(self.policy.restarts - self.restarts[live] - np.bincount(spawn_t, minlength=len(
                self.restarts))[live], 0, self._boost)
            if extra.any():
                spawn_t = np.sort(np.concatenate([spawn_t, np.repeat(live, extra)]))
        self._keep(~finished)
        if len(spawn_t):
            seeds = self._seeds(spawn_t)
            self.restarts += np.bincount(spawn_t, minlength=len(self.restarts))
            self._load(spawn_t, seeds, first=False, k=k)
        elif len(self.t):
            self.next_check = int(self.check_at.min())
        # Targets with no particle left and nothing more to try are finished, unconverged.
        if len(self.t):
            alive = np.zeros(len(self.done), dtype=bool)
            alive[self.t] = True
            ended = ~alive & ~self.done
        else:
            ended = ~self.done
        if ended.any():
            self.done |= ended
            self.iterations[ended] = k

    def _spawn_targets(self, stalled: np.ndarray) -> np.ndarray:
        """Target index of every seed to start for the stalled particles, within each budget."""
        if not stalled.any():
            return np.zeros(0, dtype=int)
        si = np.nonzero(stalled)[0]
        t = self.t[si]
        want = np.where(self.first[si], self.policy.batch, 1)
        # Several stalls of one target in one iteration share that target's remaining budget.
        left = self.policy.restarts - self.restarts
        order = np.argsort(t, kind="stable")
        t, want = t[order], want[order]
        cum = np.cumsum(want)
        start = np.concatenate([[0], cum[:-1]])
        group_start = start[np.searchsorted(t, t, side="left")]
        grant = np.clip(left[t] - (start - group_start), 0, want)
        return np.repeat(t, grant)

    def finish(self, k: int) -> None:
        """Absorb the remaining particles at the end of the budget."""
        self._absorb(np.arange(self.size))
        open_ = ~self.done
        self.iterations[open_] = k
