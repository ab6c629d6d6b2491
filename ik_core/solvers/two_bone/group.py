# SPDX-License-Identifier: GPL-3.0-or-later
"""Several two-bone limbs (each its own lengths, axes and limits) solved in one batched evaluation.

Live posing solves four limbs per update, one target each: one vectorized pass over the four
costs about what one limb's solve costs, where four ``solve`` calls pay the per-call overhead
of numpy four times. :class:`TwoBoneGroup` runs the closed form of
:mod:`~ik_core.solvers.two_bone.kernel` on the limbs stacked row by row and then does what
:meth:`Solver.solve` does (limits, errors, reasons), so each row gets the answer its limb's
own :class:`~ik_core.solvers.two_bone.solver.TwoBoneSolver` gives.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ...errors import InvalidInputError, require_finite
from ...limits.ball import FEASIBLE_TOL, TWO_PI, clamp_ranges
from ...limits.cone_twist import swing_twist_in_basis
from ...limits.euler import EulerLimit
from ...limits.swing_twist import SwingTwistLimit
from ...model.euler import matrix_to_euler_unchecked
from ...model.rotations import rotvec_to_matrix_unchecked
from ..base import IKResult, Solver, Targets
from .kernel import effector_world, solve_limbs, stack_limbs, swivel_into_limit


def _swing_twist_inside(limits: list[SwingTwistLimit]) -> Callable[[np.ndarray], np.ndarray]:
    """A check of rotations (k, 3, 3), one per limit, that :meth:`SwingTwistLimit.project` keeps (its early out)."""
    B = np.stack([lim._split._basis for lim in limits])
    Bt = np.swapaxes(B, -1, -2)
    lo = np.stack([lim._lo for lim in limits])
    hi = np.stack([lim._hi for lim in limits])
    # circular_clamp's preparation of the twist ranges, done once.
    tw_free = ~(hi[:, 1] - lo[:, 1] < TWO_PI)
    tw_lo, tw_hi = np.where(tw_free, -np.pi, lo[:, 1]), np.where(tw_free, np.pi, hi[:, 1])

    def check(R: np.ndarray) -> np.ndarray:
        su, sw, tw = swing_twist_in_basis(B @ R @ Bt)  # each row in its own limit's basis
        tw_d = clamp_ranges(tw, tw_lo, tw_hi, tw_free)[1]
        a = np.where(su >= 0, hi[:, 0], -lo[:, 0])
        b = np.where(sw >= 0, hi[:, 2], -lo[:, 2])
        # The caller holds np.errstate(all="ignore"): a huge ratio overflowing to inf is "outside".
        ru = np.where(a > 0, (su / np.where(a > 0, a, 1.0)) ** 2, np.where(su == 0, 0.0, np.inf))
        rw = np.where(b > 0, (sw / np.where(b > 0, b, 1.0)) ** 2, np.where(sw == 0, 0.0, np.inf))
        return (ru + rw <= 1.0) & (tw_d <= FEASIBLE_TOL)

    return check


def _euler_inside(limits: list[EulerLimit]) -> Callable[[np.ndarray], np.ndarray]:
    """A check of rotations (k, 3, 3), one per limit, inside by the first decomposition (its early out)."""
    orders = [(order, np.array([k for k, lim in enumerate(limits) if lim.order == order]))
              for order in sorted({lim.order for lim in limits})]
    clamps = [[np.stack([limits[k]._clamp[n] for k in rows]) for n in range(3)] for _, rows in orders]

    def check(R: np.ndarray) -> np.ndarray:
        out = np.zeros(len(limits), dtype=bool)
        for (order, rows), clamp in zip(orders, clamps):
            d0 = clamp_ranges(matrix_to_euler_unchecked(R[rows], order), *clamp)[1]
            out[rows] = d0.max(axis=-1) <= FEASIBLE_TOL
        return out

    return check


_EARLY_OUT = ((SwingTwistLimit, _swing_twist_inside), (EulerLimit, _euler_inside))


class TwoBoneGroup:
    """C two-bone solvers in position mode, solved together for one target each.

    Args:
        solvers: The limbs' solvers, all :class:`TwoBoneSolver` in "position" mode with the
            same variable layout (ball then hinge, as every two-bone skeleton has); checked by name and
            mode, and typed by the base class, since the solver module imports this one.

    Raises:
        InvalidInputError: No solvers, another solver or mode, or different layouts.
    """

    def __init__(self, solvers: Sequence[Solver]) -> None:
        solvers = list(solvers)
        if not solvers:
            raise InvalidInputError("a two-bone group needs at least one TwoBoneSolver, got none")
        for s in solvers:
            if getattr(s, "name", None) != "two_bone" or getattr(s, "mode", None) != "position":
                raise InvalidInputError(
                    f"a two-bone group takes TwoBoneSolvers in 'position' mode, got {type(s).__name__} "
                    f"in mode {getattr(s, 'mode', None)!r}"
                )
        layouts = {(s.skeleton.dof, s._ball_q, s._hinge_q) for s in solvers}
        if len(layouts) != 1:
            raise InvalidInputError(
                f"the group's limbs must share one variable layout (dof, ball, hinge), got {sorted(layouts)}"
            )
        self.solvers = solvers
        self.dof, self._bq, self._hq = layouts.pop()
        self._limb = stack_limbs([s._limb for s in solvers])
        self._lower = np.stack([s.skeleton.lower for s in solvers])
        self._upper = np.stack([s.skeleton.upper for s in solvers])
        self._limits = [s.skeleton.joints[s._ball].limit for s in solvers]
        # Per limit class with a vectorized early out, its rows; the remaining limited rows are
        # projected one by one.
        self._early = []
        claimed = set()
        for cls, check in _EARLY_OUT:
            rows = [c for c, lim in enumerate(self._limits) if type(lim) is cls]
            if rows:
                try:
                    self._early.append((np.array(rows), check([self._limits[c] for c in rows])))
                except AttributeError:
                    continue  # the limit class changed its internals: project those rows one by one
                claimed.update(rows)
        self._always = [c for c, lim in enumerate(self._limits) if lim is not None and c not in claimed]

    def __len__(self) -> int:
        """Number of limbs C."""
        return len(self.solvers)

    def _project_ball(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Ball rotation vectors (C, 3) [rad] projected onto each limb's ball limit, as ``project`` does.

        Returns:
            The projected rotation vectors (C, 3) and their rotation matrices (C, 3, 3).
        """
        R = rotvec_to_matrix_unchecked(v)
        todo = list(self._always)
        for rows, check in self._early:
            todo += rows[~check(R[rows])].tolist()
        if not todo:
            return v.copy(), R
        out = v.copy()
        for c in todo:
            out[c] = self._limits[c].project(v[c])
        R[todo] = rotvec_to_matrix_unchecked(out[todo])
        return out, R

    def _inside(self, R: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """(k,) whether ball rotations R (k, 3, 3) are inside the limits of limbs ``rows`` (k,)."""
        out = np.ones(len(rows), dtype=bool)
        for c in np.unique(rows):
            limit = self._limits[c]
            if limit is not None:
                mine = rows == c
                out[mine] = limit.contains_matrix(R[mine])
        return out

    def solve(
        self, targets: np.ndarray, q0: np.ndarray, poles: Sequence[np.ndarray | None] | None = None
    ) -> IKResult:
        """Solve each limb for its own target, as ``solvers[c].solve(targets[c], q0[c], pole=poles[c])``.

        Args:
            targets: (C, 3) positions or (C, 4, 4) poses (only the position is used) [m].
            q0: (C, dof) warm starts.
            poles: Per limb a (3,) pole point [m] or None; None for no poles at all.

        Returns:
            An :class:`IKResult` with batch shape (C,).

        Raises:
            InvalidInputError: Bad shapes, or NaN/infinite targets, warm starts or poles.
        """
        C = len(self.solvers)
        t = np.asarray(targets, dtype=float)
        if t.shape not in ((C, 3), (C, 4, 4)):
            raise InvalidInputError(f"targets must have shape ({C}, 3) or ({C}, 4, 4), got {t.shape}")
        if not np.isfinite(t).all():
            require_finite("targets", t)
        positions = t if t.ndim == 2 else t[:, :3, 3]
        q0 = np.asarray(q0, dtype=float)
        if q0.shape != (C, self.dof):
            raise InvalidInputError(f"q0 must have shape ({C}, {self.dof}), got {q0.shape}")
        if not np.isfinite(q0).all():
            require_finite("q0", q0)
        pole, has_pole = self._poles(poles, C)
        # project_configuration's box clip now; the ball projection only if a fallback needs it.
        q0 = np.clip(q0, self._lower, self._upper)
        bq, hq = self._bq, self._hq
        # One errstate for the closed form and the limit checks (the checks rely on it).
        with np.errstate(all="ignore"):
            q = solve_limbs(
                self._limb, positions, q0.copy(), bq, hq, pole, has_pole, lambda v: self._project_ball(v)[1]
            )
            if self._always or self._early:
                q[:, bq : bq + 3] = swivel_into_limit(self._limb, positions, q[:, bq : bq + 3], self._inside)
            bad = ~np.isfinite(q).all(axis=-1)
            if bad.any():
                start = q0.copy()
                start[:, bq : bq + 3] = self._project_ball(q0[:, bq : bq + 3])[0]
                q = np.where(bad[:, None], start, q)
            q = np.clip(q, self._lower, self._upper)
            q[:, bq : bq + 3], R_ball = self._project_ball(q[:, bq : bq + 3])
        d = effector_world(self._limb, q, bq, hq, R_ball) - positions
        pos_err = np.sqrt(np.add.reduce(d * d, axis=-1))
        rot_err = np.zeros(C)
        converged = (pos_err <= np.array([s.tolerance for s in self.solvers])) & ~bad
        reason = np.empty(C, dtype=object)
        reason[...] = "converged"
        for c in np.flatnonzero(~converged & ~bad):
            solver = self.solvers[c]
            tg = Targets(positions[c][None], None)
            if solver.best_effort and not solver.at_reach_bound(tg, pos_err[c : c + 1], rot_err[c : c + 1])[0]:
                # A missed limb takes the general template, whose best effort finishes it: the same
                # answer, to the bit, as the solver's own solve (rare rows; the closed form is the fast part).
                with_pole = pole is not None and (has_pole is None or has_pole[c])
                own = Solver.solve(solver, positions[c], q0[c], **({"pole": pole[c]} if with_pole else {}))
                q[c], pos_err[c], converged[c], reason[c] = own.q, own.position_error, own.converged, own.reason[()]
        for c in np.flatnonzero(~converged):
            if reason[c] != "converged":
                continue
            if bad[c]:
                reason[c] = "numerical failure; returned the warm start"
            else:
                tg = Targets(positions[c][None], None)
                reason[c] = self.solvers[c]._unreached_reason(tg, q[c], (), float(pos_err[c]), 0.0)
        at_limit = (np.abs(q - self._lower) <= 1e-9) | (np.abs(q - self._upper) <= 1e-9)
        return IKResult(q, converged, pos_err, rot_err, np.ones(C, dtype=int), reason,
                        np.count_nonzero(at_limit, axis=-1))

    @staticmethod
    def _poles(poles: Sequence[np.ndarray | None] | None, C: int) -> tuple[np.ndarray | None, np.ndarray | None]:
        """(C, 3) pole points (rows without a pole hold zeros) and (C,) which rows have one."""
        if poles is None:
            return None, None
        if len(poles) != C:
            raise InvalidInputError(f"poles must hold {C} entries (a (3,) point or None each), got {len(poles)}")
        if all(p is None for p in poles):
            return None, None
        has_pole = np.array([p is not None for p in poles])
        pole = np.zeros((C, 3))
        for c in np.flatnonzero(has_pole):
            pole[c] = np.asarray(poles[c], dtype=float).reshape(-1) if np.size(poles[c]) == 3 else np.nan
        if not np.isfinite(pole).all():
            bad = [c for c in range(C) if not np.isfinite(pole[c]).all()]
            raise InvalidInputError(f"pole of limb(s) {bad} must be a finite (3,) world point [m]")
        return pole, (None if has_pole.all() else has_pole)
