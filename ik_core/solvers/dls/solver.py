# SPDX-License-Identifier: GPL-3.0-or-later
"""Damped least squares (Levenberg-Marquardt) IK, batched over targets, with random restarts."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from ...errors import InvalidInputError
from ...limits import free_directions, project_configuration
from ...model.skeleton import JointKind, Skeleton
from ..base import IKResult, Solver, Targets
from ..reach import stretch_toward
from .kinematics import EffectorModel, aim_residual, rotation_log
from .linalg import dls_direction, limit_passes_rows
from .restarts import Particles, RestartPolicy
from .seeds import SeedLibrary
from .serial import SERIAL_TARGETS, SerialKernel
from .small import SMALL_STEP, limit_passes, small_direction

# Rows of the 6-D error (x, y, z, rx, ry, rz) each mode drives.
_MODE_ROWS = {"position": 3, "aim": 6, "full": 6}
# Weighted error norm below which the null-space pull fades in proportion.
_NULL_FADE = 0.1
# A ball joint the projection moved by more than this [rad] was pressed on its limit by the step.
_PRESSED = 1e-12
# Rows within this share of the chain's reach of their targets (or 10 tolerances, if more) slide
# along the ball limits they press on: 1 mm on a 1 m chain.
_SLIDE_NEAR = 1e-3
# While tracking, a joint within this fraction of its range from a limit is pulled toward the
# preferred pose unfaded, growing to the full null-space gain on the limit.
_LIMIT_MARGIN = 0.15
# Batches of at most _RACE_TARGETS targets race up to _RACE_SEEDS library seeds beside each warm
# start from the first iteration: for so few particles numpy's per-call overhead dominates, so
# racing costs little per iteration and saves the iterations a stall-triggered restart wastes.
_RACE_TARGETS = 4
_RACE_SEEDS = 3
# Raced targets still running after _RACE_BOOST[0] iterations (on UR5, Panda and iiwa 80-90 %
# converge by then) add the next _RACE_BOOST[1] entries: the tail gets many seeds without every
# solve paying for them.
_RACE_BOOST = (5, 8)
# Iterations a target beyond its effector's reach gets, without restarts: no restart can reach
# it, and the error of a chain stretched toward it stops falling within a few iterations.
REACH_POLISH = 12
# In a local (boxed) solve of a chain with charted ball limits, an attempt must cut its error by
# STALL_RATIO every this many iterations, about 8 % of the distance an iteration: one that crawls
# along a limit stops there and goes to the best effort's descent (see _solve_within). Attempts
# that converge faster go on to convergence as before.
_CRAWL_CHECK = 2
# Iterations of that descent: the targets it reaches take a few; the others are held by the limits,
# and the best effort descends them fully (and checks them globally) in the finish.
_HANDOFF_DESCENT = 20
# Library seeds polished beside each of a few targets beyond reach (one each in larger batches):
# a lone call's start (the preferred pose) may point anywhere.
_REACH_SEEDS = 8
# A library seed replaces the start's best effort on such a target only if it leaves a weighted
# squared error this much smaller: near-ties keep the start, so a run of unreachable frames
# does not flicker between two equally stretched poses.
_SEED_MARGIN = 0.9


def _variable_bounds(skeleton: Skeleton, still: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """(dof,) lower and upper bounds of the skeleton's variables for the damped steps [rad or m].

    The skeleton's ranges, and for each ball joint of ``still`` (joint indices: limits that hold
    them still) the one rotation vector it may take as both bounds: a step then stops its columns
    at once and is solved for the other joints alone (see :meth:`DLSSolver._boxed_step`), as if
    the joint were fixed. Left free, its columns took a share of every step that the projection
    then threw away.
    """
    lo, hi = np.array(skeleton.lower, dtype=float), np.array(skeleton.upper, dtype=float)
    if still:
        held = project_configuration(skeleton, np.zeros(skeleton.dof))
        for i in still:
            s = int(skeleton.q_index[i])
            lo[s : s + 3] = hi[s : s + 3] = held[s : s + 3]
    return lo, hi


class DLSSolver(Solver):
    """Levenberg-Marquardt damped least squares on the SE(3) log error, with random restarts.

    All targets of a batch iterate together: per iteration one batched forward-kinematics and
    Jacobian evaluation and one batched (m x m) solve, where m is the number of task rows.
    The damping adapts per target (smaller after a step that lowers the weighted error,
    larger after one that does not, which is then undone), so steps are Gauss-Newton near a
    solution and gradient-like near singularities. Every step is clamped to the joint limits;
    on redundant chains a null-space term pulls toward ``skeleton.preferred_q``, joints with
    ``stiffness`` s move (1 - s) times as readily. Targets whose error stalls restart, several
    seeds at a time, from the entries of a seeded library of in-limit configurations whose
    effector poses lie nearest the target (then from uniform draws): identical calls give
    identical results, and warm starts that converge never restart, so they keep the nearby
    solution. A batch of at most four targets (a lone target, typically) does not wait for a
    stall: beside each warm start it races, from the first iteration, the three nearest library
    entries whose poses are nearer the target than the warm start's (eight more after five
    iterations without convergence), and the first particle to converge wins (the warm start
    on ties); a warm start near its target races nothing. Batches of at most eight targets on a
    serial arm (one effector, "full" or "position" mode, no ball joint, mimic or stiffness) run
    these rules in the lean kernel of :mod:`.dls_serial`, one target after the other.

    Args:
        skeleton: The skeleton to pose.
        effectors: Effector name(s) or index(es) driven by the targets.
        mode: "position", "aim" (position plus ``aim_axis`` of the effector along the target's
            same axis) or "full" (6-D pose).
        tolerance: Position tolerance [m].
        rotation_tolerance: Rotation (or aim) tolerance [rad].
        max_iterations: Iteration budget per target, restarts included.
        aim_axis: (3,) axis in the effector frame used by "aim" mode.
        weights: (6,) non-negative weights of the error rows x, y, z [1/m^2] and rx, ry, rz
            [1/rad^2] (world axes), or (E, 6) such rows, one per effector (how much each counts
            where effectors compete for shared joints, as the IK constraint's weight); they
            shape the path, not the convergence test.
        damping: Initial Levenberg-Marquardt damping [m^2] of a warm start with a unit error,
            in proportion to the error below it (library seeds start at 1 % of that).
        min_damping: Damping floor [m^2]; keeps every system positive definite.
        null_space_gain: Pull per iteration toward ``preferred_q`` on redundant chains, as a
            fraction of the distance (0 disables it).
        restarts: Restart seeds allowed per target (0 disables restarts). Not spent where a ball
            joint is limited while ``best_effort`` is on: its global check takes their place.
        restart_batch: Seeds started in parallel at a target's first restart.
        stall_iterations: Iterations an attempt may go without cutting its weighted error by
            30 % before it is abandoned for a restart.
        time_budget_s: Wall-clock budget per target [s]; a batch of N targets stops after
            N times this. ``None`` means only the iteration budget applies.
        seed: Seed of the seed library and of the uniform restart draws.
        limit_passes: Times a step is solved again without the joints it pushed onto a limit.
        library_size: Configurations in the restart library (0: uniform restarts only).

    ``solve`` takes one per-call option, ``radius`` (scalar or batch-shaped) [rad or m]: each
    target is first solved inside a box of that half-width around its start, without restarts,
    so it stays on the start's IK branch (frame-to-frame tracking); on non-redundant chains the
    start also holds the joints along near-singular directions. Targets that fail there get
    the ordinary solve, restarts included.

    Raises:
        InvalidInputError: A weight is negative or all are zero, or a parameter is out of range.
    """

    name = "dls"
    call_options = ("radius",)

    def __init__(
        self,
        skeleton: Skeleton,
        effectors: str | int | Sequence[str | int] = 0,
        *,
        mode: str = "full",
        tolerance: float = 1e-5,
        rotation_tolerance: float = 1e-5,
        max_iterations: int = 100,
        aim_axis: Sequence[float] = (0.0, 0.0, 1.0),
        weights: Sequence[float] = (1.0, 1.0, 1.0, 1.0, 1.0, 1.0),
        damping: float = 1.0,
        min_damping: float = 1e-9,
        null_space_gain: float = 0.05,
        restarts: int = 50,
        restart_batch: int = 4,
        stall_iterations: int = 6,
        time_budget_s: float | None = None,
        seed: int = 0,
        limit_passes: int = 1,
        library_size: int = 2048,
    ) -> None:
        super().__init__(
            skeleton, effectors, mode=mode, tolerance=tolerance, rotation_tolerance=rotation_tolerance,
            max_iterations=max_iterations, aim_axis=aim_axis,
        )
        w = np.asarray(weights, dtype=float)
        n_eff = len(self.effector_ids)
        if (w.shape not in ((6,), (n_eff, 6)) or not np.all(np.isfinite(w)) or np.any(w < 0)
                or not np.any(w[..., : _MODE_ROWS[mode]] > 0)):
            raise InvalidInputError(
                f"weights must be 6 finite values >= 0 (x, y, z, rx, ry, rz), or ({n_eff}, 6) such rows (one per "
                f"effector), not all zero for mode {mode!r}; got {weights!r}"
            )
        for label, value in (("damping", damping), ("min_damping", min_damping)):
            if not (np.isfinite(value) and value > 0):
                raise InvalidInputError(f"{label} must be a finite number > 0, got {value!r}")
        if not (np.isfinite(null_space_gain) and 0 <= null_space_gain <= 1):
            raise InvalidInputError(f"null_space_gain must be in [0, 1], got {null_space_gain!r}")
        if time_budget_s is not None and not time_budget_s > 0:
            raise InvalidInputError(f"time_budget_s must be > 0 s or None, got {time_budget_s!r}")
        if int(limit_passes) < 0:
            raise InvalidInputError(f"limit_passes must be >= 0, got {limit_passes!r}")
        self.policy = RestartPolicy(
            restarts=restarts, batch=restart_batch, stall_iterations=stall_iterations, seed=seed
        )
        self.weights = w
        self.damping = float(damping)
        self.min_damping = float(min_damping)
        self.null_space_gain = float(null_space_gain)
        self.time_budget_s = time_budget_s
        self.limit_passes = int(limit_passes)
        self.model = EffectorModel(skeleton, self.effector_ids)
        rows = _MODE_ROWS[mode]
        # One row of weights per effector (the same for all when one row is given).
        self._sqrt_w = np.sqrt(np.broadcast_to(w, (n_eff, 6))[:, :rows]).reshape(-1)
        self._weighted = bool(np.any(self._sqrt_w != 1.0))
        self._eye = {k: np.eye(k) for k in {len(self._sqrt_w), skeleton.dof}}
        # Limited ball joints, less those their limit holds still (every axis locked): those take
        # their one rotation vector as both bounds and are then held by the box like a locked
        # hinge, with no projection, slide or chart (restarts stay on for a chain they are in).
        limited = [
            i for i, j in enumerate(skeleton.joints) if j.kind is JointKind.BALL and j.limit is not None and j.dof
        ]
        still = [i for i in limited if skeleton.joints[i].limit.free_axes() == 0]
        moving = [i for i in limited if i not in still]
        self._lo, self._hi = _variable_bounds(skeleton, still)
        # Ball joints with cone/twist limits need a projection beyond the box clamp.
        self._project = bool(moving)
        # First columns of the limited ball joints (the steps that press on them slide along them).
        self._limited_balls = np.array([skeleton.q_index[i] for i in moving], dtype=int)
        # Ball limits the best effort re-expresses in box coordinates: its global check, descents
        # from in-limit starts where the limits are exact, does what restarts would, better (see
        # _restart_policy).
        self._charted = any(skeleton.joints[i].limit.box_coordinates() is not None for i in moving)
        self._pref = np.asarray(skeleton.preferred_q)
        reach = float(np.max(self.reach_bound.lengths, initial=0.0))
        self._slide_near = max(_SLIDE_NEAR * reach, 10.0 * self.tolerance)
        # Stiff joints get proportionally shorter columns, hence smaller steps.
        self._col_scale = 1.0 - np.asarray(skeleton.stiffness)
        self._scaled = bool(np.any(self._col_scale != 1.0))
        # Redundant where the limits leave more directions than the task has rows (a fully locked
        # ball joint adds variables, not directions): there the null space pulls toward the
        # preferred pose; otherwise a local solve holds its start along near-singular directions.
        self._null = null_space_gain > 0 and free_directions(skeleton) > len(self._sqrt_w)
        lo, hi = np.asarray(skeleton.lower), np.asarray(skeleton.upper)
        bounded = np.isfinite(hi - lo)
        # A range that is a single value is a locked axis: it has no room to be pulled within
        # (and its width would divide by zero), so it gets neither pull nor margin.
        moving = bounded & (hi - lo > 0)
        span = np.where(moving, hi - lo, 2.0 * np.pi)
        # Null-space pull in range-normalised units, so wide joints are not favoured.
        self._null_w = null_space_gain * (np.pi / span) ** 2 * np.where(moving, 1.0, 0.0)
        # Unbounded variables are infinitely far from a limit: inf * this gives no pull, not NaN;
        # locked ones get 0, so their margin term is 0 * 0.
        self._margin_inv = np.where(bounded & ~moving, 0.0, 1.0 / (_LIMIT_MARGIN * span))
        self._last_restarts: np.ndarray | None = None
        self._cache: tuple | None = None
        if int(library_size) < 0:
            raise InvalidInputError(f"library_size must be >= 0, got {library_size!r}")
        self.library_size = int(library_size)
        self._library: SeedLibrary | None = None
        # Few targets on a serial arm (the common single-target call) take the lean kernel.
        self._serial = SerialKernel.build(self, _RACE_SEEDS, _RACE_BOOST)
        if self._restart_policy().restarts > 0:
            self.seed_library()  # built now (a few ms) rather than inside the first timed solve

    def _restart_policy(self) -> RestartPolicy:
        """The restarts a solve spends: none on limited ball joints while the best effort finishes misses.

        There a restart, a fresh DLS descent in rotation vectors projected onto the limits, ends
        where the projection stops it as often as not; the best effort's global check runs
        descents from in-limit starts in the limits' own coordinates, and on targets the
        limits keep away, restarts only spent time (measured: same answers, a third less time).
        """
        if self._charted and self.best_effort:
            return replace(self.policy, restarts=0)
        return self.policy

    def seed_library(self) -> SeedLibrary | None:
        """The restart library (built on first use), or None when ``library_size`` is 0."""
        if self._library is None and self.library_size > 0:
            reach = float(np.max(self.reach_bound.lengths, initial=0.0))
            self._library = SeedLibrary(
                self.model, self._lo, self._hi, self.library_size, self.mode, self.aim_axis,
                rotation_scale=0.3 * reach if reach > 0 else 0.3, seed=self.policy.seed,
            )
        return self._library

    def solve(self, targets: np.ndarray, q0: np.ndarray | None = None, **options: object) -> IKResult:
        """See :meth:`Solver.solve`; a few plain targets on a serial arm skip to the lean kernel."""
        # Subclasses that wrap _solve keep the template around it.
        if self._serial is not None and not options and type(self)._solve is DLSSolver._solve:
            result = self._serial.solve_call(targets, q0)
            if result is not None:
                return self.finish_missed(targets, q0, result)
        return super().solve(targets, q0, **options)

    def best_effort_weights(self) -> np.ndarray | None:
        """The square roots of the task weights: best effort balances the effectors as the solve does."""
        return self._sqrt_w if self._weighted else None

    # --- residuals -------------------------------------------------------------------------
    def _residual(
        self, poses: np.ndarray, tp: np.ndarray, tr: np.ndarray | None, J: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, np.ndarray]:
        """Weighted error rows and Jacobian, plus the worst position and rotation errors.

        Args:
            poses: (P, E, 3, 4) effector poses.
            tp: (P, E, 3) target positions [m].
            tr: (P, E, 3, 3) target rotations ("full"), (P, E, 3) target aim directions
                ("aim") or None ("position").
            J: Optional (P, E, 6, dof) Jacobians.

        Returns:
            ew (P, m), Jw (P, m, dof) or None, position error (P,) [m], rotation error (P,) [rad].
        """
        P, E = poses.shape[:2]
        dp = tp - poses[..., 3]
        pos_err = np.hypot.reduce(dp, -1)
        pos_err = pos_err[:, 0] if E == 1 else pos_err.max(axis=1)
        if self.mode == "position":
            e, Jr, rot_err = dp, None if J is None else J[:, :, :3], np.zeros(P)
        elif self.mode == "full":
            w, angle = rotation_log(tr @ poses[..., :3].swapaxes(-1, -2))
            e = np.concatenate([dp, w.reshape(P, E, 3)], axis=-1)
            Jr, rot_err = J, (angle if E == 1 else angle.reshape(P, E).max(axis=1))
        else:
            e, Jr, rot_err = aim_residual(poses, dp, tr, J, self.aim_axis)
        ew = e.reshape(P, -1)
        if self._weighted:
            ew = ew * self._sqrt_w
        if Jr is None:
            return ew, None, pos_err, rot_err
        Jw = Jr.reshape(P, -1, Jr.shape[-1])
        if self._weighted:
            Jw = Jw * self._sqrt_w[:, None]
        if self._scaled:
            Jw = Jw * self._col_scale
        return ew, Jw, pos_err, rot_err

    def _evaluate(self, q: np.ndarray, tp: np.ndarray, tr: np.ndarray | None) -> tuple[np.ndarray, ...]:
        """ew, Jw, 0.5 |ew|^2, position and rotation errors for configurations q (P, dof)."""
        poses, J = self.model.poses_and_jacobians(q)
        ew, Jw, pe, re = self._residual(poses, tp, tr, J)
        return ew, Jw, 0.5 * np.add.reduce(ew * ew, -1), pe, re

    def _step(
        self, q: np.ndarray, ew: np.ndarray, Jw: np.ndarray, E: np.ndarray, lam: np.ndarray,
        lo: np.ndarray | None = None, hi: np.ndarray | None = None, pref: np.ndarray | None = None,
    ) -> np.ndarray:
        """One damped least-squares step from q (P, dof), kept inside the limits.

        ``lo``/``hi`` (P, dof) optionally replace the limits (a local solve's box around its
        start); ``pref`` (P, dof) is a local solve's start, held along near-singular directions
        of non-redundant chains.

        Joints the step would push past a limit are stopped on it and the step is solved again
        for the other joints, with the error left by the stopped ones: plain clamping would
        leave that error to the next iteration, which stalls on every limit.
        """
        z = None
        if self._null:
            # Fading the pull with the error keeps its second-order effect below the error.
            fade = np.minimum(np.sqrt(2.0 * E) * (1.0 / _NULL_FADE), 1.0)
            w = self._null_w * fade[:, None]
            if lo is not None:
                # Tracking: a joint nearing a limit is pulled back at full strength, or the
                # self-motion drifts onto the limit, where the path later forces a jump.
                near = 1.0 - np.minimum(np.minimum(q - self._lo, self._hi - q) * self._margin_inv, 1.0)
                w = np.maximum(w, self._null_w * near)
            z = (self._pref - q) * w
        elif pref is not None:
            # A local solve on a non-redundant chain: the damped pseudo-inverse cancels this pull
            # except along near-singular directions, where it holds the joints at the start
            # instead of letting them slide along the family of singular solutions.
            z = pref - q
        if lo is None:
            lo, hi = self._lo, self._hi
        q_new = self._boxed_step(q, ew, Jw, lam, z, lo, hi)
        if not self._project:
            return q_new
        q_in = project_configuration(self.skeleton, q_new)
        # Near the target, where the step's linear model holds, only the cut keeps the error up.
        near = np.sqrt(2.0 * E) <= self._slide_near
        return self._slide_on_ball_limits(q, q_new, q_in, ew, Jw, lam, z, lo, hi, near)

    def _boxed_step(
        self, q: np.ndarray, ew: np.ndarray, Jw: np.ndarray, lam: np.ndarray, z: np.ndarray | None,
        lo: np.ndarray, hi: np.ndarray,
    ) -> np.ndarray:
        """The configurations q (P, dof) moved by the damped least-squares step, joints stopped at lo/hi."""
        small = len(q) <= SMALL_STEP
        dq = small_direction(ew, Jw, lam, z) if small else dls_direction(ew, Jw, lam, z)
        if self._scaled:
            dq = dq * self._col_scale
        q_new = q + dq
        out = (q_new < lo) | (q_new > hi)
        if not out.any():
            return q_new
        scale = self._col_scale if self._scaled else None
        passes = limit_passes if small else limit_passes_rows
        q_new = passes(q, q_new, ew, Jw, lam, z, out, lo, hi, scale, self.limit_passes)
        return np.minimum(np.maximum(q_new, lo), hi)

    def _slide_on_ball_limits(
        self, q: np.ndarray, q_new: np.ndarray, q_in: np.ndarray, ew: np.ndarray, Jw: np.ndarray, lam: np.ndarray,
        z: np.ndarray | None, lo: np.ndarray, hi: np.ndarray, near: np.ndarray,
    ) -> np.ndarray:
        """The step again for the rows near their targets whose step the ball limits cut: tangent to the limits.

        ``q_new`` is the step's end and ``q_in`` its projection onto the limits (P, dof); ``near``
        (P,) marks the rows near their targets (``_SLIDE_NEAR`` of the chain's reach). A ball
        joint the projection moved was pushed out along (about) the limit's normal: its columns
        lose their part along that push and the step is solved again, so the other joints take
        up what the pressed joint cannot give in the same step. Projecting the full step instead
        returns the pressed joint to the limit and leaves the others where that step put them:
        the error then falls by a few percent an iteration, not quadratically (measured: 30-100
        iterations from 1 mm to the tolerance on 5-ball chains). Farther out the rows keep the
        projected step: the best effort's descent, in the limits' own coordinates, finishes a
        target the limits hold, and sliding there moved a take's missed frames apart (more
        follow work and pops on the bench takes).
        """
        cols = self._limited_balls[:, None] + np.arange(3)
        push = (q_new - q_in)[:, cols]  # (P, B, 3)
        depth = np.sqrt(np.add.reduce(push * push, -1))
        pressed = depth > _PRESSED
        rows = np.flatnonzero(pressed.any(axis=1) & near)
        if not len(rows):
            return q_in
        normal = np.where(pressed[rows, :, None], push[rows] / np.maximum(depth[rows, :, None], 1e-300), 0.0)
        J = Jw[rows].copy()
        flat = cols.reshape(-1)
        Jb = J[:, :, flat].reshape(len(rows), J.shape[1], len(cols), 3)
        Jb = Jb - np.einsum("pmbk,pbk->pmb", Jb, normal)[..., None] * normal[:, None]
        J[:, :, flat] = Jb.reshape(len(rows), J.shape[1], -1)
        zr = None
        if z is not None:
            zr = z[rows].copy()
            zb = zr[:, flat].reshape(len(rows), len(cols), 3)
            zr[:, flat] = (zb - np.add.reduce(zb * normal, -1)[..., None] * normal).reshape(len(rows), -1)
        slid = self._boxed_step(q[rows], ew[rows], J, lam[rows], zr, lo[rows] if lo.ndim == 2 else lo,
                                hi[rows] if hi.ndim == 2 else hi)
        out = q_in.copy()
        out[rows] = project_configuration(self.skeleton, slid)
        return out

    # --- the solve -------------------------------------------------------------------------
    def _solve(
        self, targets: Targets, q0: np.ndarray, radius: float | np.ndarray | None = None, **options: object
    ) -> tuple[np.ndarray, np.ndarray]:
        """Solve all targets together, locally first when ``radius`` is given.

        A local solve keeps every target inside a box of half-width ``radius`` (scalar or
        batch-shaped) [rad or m] around its start, without restarts, so the answer stays on the
        start's IK branch; only targets that fail there get the ordinary solve with restarts.
        Targets beyond their effector's reach get neither: :meth:`_reach_toward` polishes them
        in ``REACH_POLISH`` iterations over the whole range.
        """
        if options:
            raise InvalidInputError(
                f"DLSSolver.solve takes only the per-call option 'radius', got {', '.join(sorted(options))}; "
                "set weights, damping, restarts and budgets in the constructor"
            )
        start = time.perf_counter()
        batch = targets.batch_shape
        dof = self.skeleton.dof
        N = int(np.prod(batch, dtype=int))
        if N == 0:
            self._last_restarts = np.zeros(batch, dtype=int)
            return q0, np.zeros(batch, dtype=int)
        E = len(self.effector_ids)
        tp = targets.positions.reshape(N, E, 3)
        if self.mode == "full":
            tr = targets.rotations.reshape(N, E, 3, 3)
        elif self.mode == "aim":
            tr = targets.rotations.reshape(N, E, 3, 3) @ self.aim_axis
        else:
            tr = None
        deadline = None if self.time_budget_s is None else start + self.time_budget_s * max(N, 1)
        q0 = q0.reshape(N, dof)
        if radius is not None:
            r = np.asarray(radius, dtype=float)
            if not (np.all(np.isfinite(r)) and np.all(r > 0)):
                raise InvalidInputError(f"radius must be finite and > 0 [rad or m], got {radius!r}")
            try:
                r = np.broadcast_to(r, batch).reshape(N, 1)
            except ValueError:
                raise InvalidInputError(f"radius of shape {r.shape} does not broadcast to batch {batch}") from None
        # Targets beyond reach cannot converge: no restart for them, only a short polish.
        beyond = self._beyond(targets).reshape(N) > self.tolerance
        if not beyond.any():
            q, iters, restarts, pe, re = self._solve_within(q0, tp, tr, None if radius is None else r, start, deadline)
        else:
            q, pe, re = q0.copy(), np.zeros(N), np.zeros(N)
            iters, restarts = np.zeros(N, dtype=int), np.zeros(N, dtype=int)
            inside, outside = np.flatnonzero(~beyond), np.flatnonzero(beyond)
            if len(inside):
                solved = self._solve_within(
                    q0[inside], tp[inside], None if tr is None else tr[inside], None if radius is None else r[inside],
                    start, deadline,
                )
                for dst, src in zip((q, iters, restarts, pe, re), solved):
                    dst[inside] = src
            solved = self._reach_toward(q0[outside], tp[outside], None if tr is None else tr[outside])
            for dst, src in zip((q, iters, pe, re), solved):
                dst[outside] = src
        self._last_restarts = restarts.reshape(batch)
        q = q.reshape(*batch, dof)
        # The template measures the errors of the answer next; they were just computed.
        self._cache = (targets, q.copy(), pe.reshape(batch), re.reshape(batch))
        return q, iters.reshape(batch)

    def _solve_within(
        self, q0: np.ndarray, tp: np.ndarray, tr: np.ndarray | None, r: np.ndarray | None, start: float,
        deadline: float | None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Solve N targets that may be within reach: in a box first when ``r`` is given, restarts after.

        With best effort on, a boxed attempt handed to the best effort's descent and still short
        is left to the best effort's finish (its global check), not solved again over the range.

        Args:
            q0: (N, dof) starts inside the limits.
            tp: (N, E, 3) target positions [m].
            tr: Target rotations or aim directions (see :meth:`_residual`), or None.
            r: (N, 1) half-widths of the boxes [rad or m], or None for the ordinary solve.
            start: ``time.perf_counter()`` when the call started (the serial kernel's deadlines).
            deadline: Wall-clock end of the call, or None.

        Returns:
            q (N, dof), iterations (N,), restarts (N,), position errors (N,) [m] and rotation
            errors (N,) [rad].
        """
        N = len(q0)
        if r is None:
            if N <= SERIAL_TARGETS and self._serial is not None:
                return self._serial.solve(tp, tr, q0, start)
            race = N <= _RACE_TARGETS
            pts = Particles(
                self, q0, tp, tr, race=_RACE_SEEDS if race else 0, boost=_RACE_BOOST if race else None,
                policy=self._restart_policy(),
            )
            pts.finish(self._run(pts, deadline, self.max_iterations))
            return pts.best_q, pts.iterations, pts.restarts, pts.best_pe, pts.best_re
        handoff = self._charted and self.mode != "aim"
        stall = _CRAWL_CHECK if handoff else self.policy.stall_iterations
        local = RestartPolicy(restarts=0, batch=1, stall_iterations=stall, seed=self.policy.seed)
        pts = Particles(self, q0, tp, tr, policy=local)
        lo, hi = np.maximum(self._lo, q0 - r), np.minimum(self._hi, q0 + r)
        pts.lo, pts.hi = lo[pts.t], hi[pts.t]
        if not self._null:
            pts.pref = q0[pts.t]
        k = self._run(pts, deadline, self.max_iterations)
        pts.finish(k)
        miss = np.flatnonzero(pts.best_E >= 0.0)  # converged targets carry best_E = -1
        q, iters, pe, re = pts.best_q, pts.iterations, pts.best_pe, pts.best_re
        best_E = pts.best_E
        if handoff and len(miss):
            # Near a limit DLS in rotation vectors crawls: each step projected back onto a swing
            # or an Euler limit keeps a few percent of what it promised (about 100 iterations
            # where the target is a few millimetres away), so an attempt that crawls stops early
            # (_CRAWL_CHECK). The best effort's descent runs in the limits' own coordinates, where
            # they are a box, and reaches such targets in a few iterations (see below for the
            # targets it leaves short). Only crawling attempts are handed over: one that
            # converges in DLS ends where its pull settles it, so a bake stays the same on CPUs
            # whose float maths differ in the last bits (tests/blender/test_determinism.py).
            q, pe, re, best_E = self._descend_missed(q, pe, re, best_E, miss, tp, tr)
            # What the descent leaves short goes to the best effort (its local descent and global
            # check, in the template's finish): a fresh DLS run over the whole range from the
            # start, with restarts off on charted chains, only repeated that work in rotation
            # vectors (measured on 16 limited takes: the same answers, 8 % less time).
            miss = np.flatnonzero(best_E >= 0.0) if not self.best_effort else miss[:0]
        restarts = np.zeros(N, dtype=int)
        if len(miss) and (deadline is None or time.perf_counter() < deadline):
            # Off the start's branch (or out of the box): the ordinary solve, restarts included.
            far = Particles(self, q0[miss], tp[miss], None if tr is None else tr[miss], policy=self._restart_policy())
            far.finish(self._run(far, deadline, max(self.max_iterations - k, 1)))
            better = far.best_E < best_E[miss]
            take = miss[better]
            q[take], pe[take], re[take] = far.best_q[better], far.best_pe[better], far.best_re[better]
            iters[miss] += far.iterations
            restarts[miss] = far.restarts
        return q, iters, restarts, pe, re

    def _descend_missed(
        self, q: np.ndarray, pe: np.ndarray, re: np.ndarray, best_E: np.ndarray, rows: np.ndarray,
        tp: np.ndarray, tr: np.ndarray | None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The answers of ``rows`` descended by the best effort toward their targets, where that brings them nearer.

        Args:
            q: (N, dof) answers.
            pe: (N,) their position errors [m].
            re: (N,) their rotation errors [rad].
            best_E: (N,) their halved weighted squared errors (-1 where converged).
            rows: (R,) the rows to descend.
            tp: (N, E, 3) target positions [m].
            tr: (N, E, 3, 3) target rotations ("full" mode), or None.

        Returns:
            q, pe, re and best_E updated (copies; converged rows' best_E set to -1).
        """
        best = self._best_effort()
        rot = None if tr is None or best.mode == "position" else tr[rows]
        goal = min(self.tolerance, self.rotation_tolerance) if self.mode == "full" else self.tolerance
        x, _ = best.descend(q[rows], tp[rows], rot, tolerance=goal, max_iterations=_HANDOFF_DESCENT)
        ew, _, p_err, r_err = self._residual(self.model.poses(x), tp[rows], None if tr is None else tr[rows])
        E = 0.5 * np.add.reduce(ew * ew, -1)
        reached = (p_err <= self.tolerance) & (r_err <= self.rotation_tolerance)
        keep = reached | (E < best_E[rows])
        take = rows[keep]
        q, pe, re, best_E = q.copy(), pe.copy(), re.copy(), best_E.copy()
        q[take], pe[take], re[take] = x[keep], p_err[keep], r_err[keep]
        best_E[take] = np.where(reached[keep], -1.0, E[keep])
        return q, pe, re, best_E

    def _reach_toward(
        self, q0: np.ndarray, tp: np.ndarray, tr: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Best effort for M targets beyond reach: ``REACH_POLISH`` iterations, no restarts.

        Each start is polished beside other candidates: itself stretched toward the target
        (:func:`~.reach.stretch_toward`, one effector) and the library entries whose poses are
        nearest the target (one per target in a batch, ``_REACH_SEEDS`` for a few targets),
        which matter when the start points elsewhere or links cannot line up. No stall ends a
        polish early: the error of an unreachable target falls slowly near its best. The better
        of the start and its stretched self is kept unless a library entry leaves a weighted
        squared error below ``_SEED_MARGIN`` times its: a near tie keeps the start's swivel.

        Args:
            q0: (M, dof) starts inside the limits.
            tp: (M, E, 3) target positions [m].
            tr: Target rotations or aim directions (see :meth:`_residual`), or None.

        Returns:
            q (M, dof), iterations (M,), position errors (M,) [m], rotation errors (M,) [rad]
            and halved weighted squared errors (M,).
        """
        M = len(q0)
        candidates = [q0]
        if len(self.effector_ids) == 1:
            candidates.append(stretch_toward(self.skeleton, q0, self.effector_ids[0], tp[:, 0]))
        own = len(candidates)  # the start and its stretched self: the same swivel, the same twist
        lib = self.seed_library()
        seeds = 0 if lib is None else (_REACH_SEEDS if M <= _RACE_TARGETS else 1)
        if seeds:
            rank = np.repeat(np.arange(seeds), M)
            entry = lib.nearest(lib.describe(tp, tr), rank, np.tile(np.arange(M), seeds))
            candidates.append(project_configuration(self.skeleton, lib.q[np.maximum(entry, 0)]))
        starts = np.concatenate(candidates)
        C = len(starts) // M
        rows = np.tile(np.arange(M), C)
        polish = RestartPolicy(restarts=0, batch=1, stall_iterations=REACH_POLISH + 1, seed=self.policy.seed)
        pts = Particles(self, starts, tp[rows], None if tr is None else tr[rows], policy=polish)
        pts.finish(self._run(pts, None, REACH_POLISH))
        # Row c * M + m holds candidate c of target m: the best of the start's own candidates,
        # then a library entry's only where it is clearly better.
        E_all = pts.best_E.reshape(C, M)
        pick = np.argmin(E_all[:own], axis=0) * M + np.arange(M)
        if C > own:
            other = (own + np.argmin(E_all[own:], axis=0)) * M + np.arange(M)
            pick = np.where(pts.best_E[other] < _SEED_MARGIN * pts.best_E[pick], other, pick)
        iters = np.max(pts.iterations.reshape(C, M), axis=0)
        return pts.best_q[pick], iters, pts.best_pe[pick], pts.best_re[pick], pts.best_E[pick]

    def _run(self, pts: Particles, deadline: float | None, budget: int) -> int:
        """Iterate the particles until they finish, ``budget`` iterations or the deadline; returns k."""
        k = 0
        while pts.size and k < budget:
            if deadline is not None and time.perf_counter() > deadline:
                break
            k += 1
            q_new = self._step(pts.q, pts.ew, pts.Jw, pts.E, pts.lam, pts.lo, pts.hi, pts.pref)
            pts.update(q_new, *self._evaluate(q_new, pts.tp, pts.tr), k)
        return k

    def errors(self, q: np.ndarray, tg: Targets) -> tuple[np.ndarray, np.ndarray]:
        """(...,) worst position error [m] and rotation (or aim) error [rad] over the effectors."""
        cache, self._cache = self._cache, None
        if cache is not None and cache[0] is tg and cache[1].shape == q.shape and np.array_equal(cache[1], q):
            return cache[2], cache[3]
        batch = q.shape[:-1]
        N = int(np.prod(batch, dtype=int))
        if N == 0:
            return np.zeros(batch), np.zeros(batch)
        E = len(self.effector_ids)
        poses = self.model.poses(q.reshape(N, -1))
        tr = None
        if self.mode != "position" and tg.rotations is not None:
            tr = np.broadcast_to(tg.rotations, (*batch, E, 3, 3)).reshape(N, E, 3, 3)
            if self.mode == "aim":
                tr = tr @ self.aim_axis
        tp = np.broadcast_to(tg.positions, (*batch, E, 3)).reshape(N, E, 3)
        if tr is None and self.mode != "position":
            pe = np.sqrt(np.sum((tp - poses[..., 3]) ** 2, axis=-1)).max(axis=1)
            return pe.reshape(batch), np.zeros(batch)
        _, _, pe, re = self._residual(poses, tp, tr)
        return pe.reshape(batch), re.reshape(batch)

    def _unreached_reason(
        self, tg: Targets, q: np.ndarray, idx: tuple[int, ...], pos_err: float, rot_err: float,
        held: list[int] | None = None,
    ) -> str:
        """Explain one unconverged target: out of reach, held by limits, or out of budget."""
        far = self._out_of_reach_reason(tg, idx, pos_err)
        if far is not None:
            return far
        if self.best_effort:
            return self._held_reason(q, idx, pos_err, rot_err, held)
        n = 0 if self._last_restarts is None else int(self._last_restarts[idx])
        errs = f"position error {pos_err:.3g} m"
        if self.mode != "position":
            errs += f", {'aim' if self.mode == 'aim' else 'rotation'} error {rot_err:.3g} rad"
        lo, hi = self.skeleton.lower, self.skeleton.upper
        qi = q[idx]
        on_limit = np.isclose(qi, lo, atol=1e-9) | np.isclose(qi, hi, atol=1e-9)
        if np.any(on_limit):
            names = np.asarray(self.skeleton.moving_joint_names, dtype=object)
            held = ", ".join(names[on_limit[: len(names)]][:4]) if len(names) == len(qi) else "some joints"
            return f"joint limits prevent reaching the target ({held} on a limit; {errs}; after {n} restarts)"
        return f"iteration or time budget exhausted after {n} restarts ({errs})"
