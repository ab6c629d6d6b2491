# SPDX-License-Identifier: GPL-3.0-or-later
"""The result type and the template every solver follows (validation, limits, errors, reasons)."""

from __future__ import annotations

import abc
import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..errors import InvalidInputError, require_finite
from ..limits import fully_locked, project_configuration
from ..model.kinematics import forward_kinematics
from ..model.rotations import rotation_angle_unchecked
from ..model.skeleton import Skeleton
from .best_effort import GLOBAL_STARTS, SWITCH_MARGIN, TREE_GLOBAL_STARTS, BestEffort
from .reach import ReachBound, stretch_toward

MODES = ("position", "aim", "full")
#: Library starts the followers of a led target set descend from, besides their own (see
#: Solver._given_leaders): the library poses whose followers come nearest, the leaders' joints held.
FOLLOWER_STARTS = 4
#: Where leaders are on their targets, the followers lean (see Solver._leaned): the whole pose
#: descended with the leaders' error rows weighted LEAN_WEIGHTS[k] in round k (the first round from
#: the solver's global starts too), each round followed by the leaders and the followers brought back
#: to their own best. A large weight crawls (1000 from the start: a bench two-arm take's far hand
#: 630 mm from its target, the led optimum 516 mm); rising weights reach the led optimum.
LEAN_WEIGHTS = (10.0, 100.0, 1000.0)
#: A take's rounds (Solver.lean_check off): local, so that each frame leans from the basin it is in.
#: With LEAN_WEIGHTS and the global round, a take's frames chose their lean apart (8 pops on a bench
#: tree take against 0).
TAKE_LEAN_WEIGHTS = (10.0, 10.0)
_EYE3 = np.eye(3)
# The bounds np.allclose(RtR, I, atol=1e-9) applies (its default rtol is 1e-5), precomputed.
_ORTHONORMAL_TOL = 1e-9 + 1e-5 * _EYE3


@dataclass(frozen=True)
class IKResult:
    """What a solve returns, for every target of a batch.

    Attributes:
        q: (..., dof) best configuration found, always finite and inside every limit.
        converged: (...,) True where every effector met its tolerances.
        position_error: (...,) largest effector position error [m].
        rotation_error: (...,) largest effector rotation (or aim) error [rad]; 0 in
            position mode.
        iterations: (...,) iterations used.
        reason: (...,) object array of human-readable strings ("converged", "target out of
            reach ...", "iteration budget exhausted ...").
        limit_hits: (...,) number of variables resting on a limit.
    """

    q: np.ndarray
    converged: np.ndarray
    position_error: np.ndarray
    rotation_error: np.ndarray
    iterations: np.ndarray
    reason: np.ndarray
    limit_hits: np.ndarray

    @property
    def success_rate(self) -> float:
        """Fraction of targets that converged."""
        return float(np.mean(self.converged)) if self.converged.size else 1.0

    def __getitem__(self, index: object) -> IKResult:
        """The result for part of the batch (numpy indexing on the batch axes)."""
        return IKResult(
            self.q[index], self.converged[index], self.position_error[index],
            self.rotation_error[index], self.iterations[index], self.reason[index],
            self.limit_hits[index],
        )


@dataclass(frozen=True)
class Targets:
    """Validated targets for E effectors over a batch.

    Attributes:
        positions: (..., E, 3) target positions [m].
        rotations: (..., E, 3, 3) target orientations, or None when only positions were given.
    """

    positions: np.ndarray
    rotations: np.ndarray | None

    @property
    def batch_shape(self) -> tuple[int, ...]:
        """Leading batch shape (without the effector axis)."""
        return self.positions.shape[:-2]


def as_targets(targets: np.ndarray, n_effectors: int) -> Targets:
    """Validate targets given as positions or poses.

    Args:
        targets: (..., 3) positions or (..., 4, 4) poses for one effector; for several
            effectors (..., E, 3) or (..., E, 4, 4).
        n_effectors: E, the number of effectors the solver drives.

    Returns:
        The validated :class:`Targets`.

    Raises:
        InvalidInputError: Wrong shape, or NaN or infinite entries.
    """
    t = np.asarray(targets, dtype=float)
    if not np.isfinite(t).all():
        require_finite("targets", t)
    if t.ndim >= 2 and t.shape[-2:] == (4, 4):
        if n_effectors == 1:
            t = t[..., None, :, :]
        if t.ndim < 3 or t.shape[-3] != n_effectors:
            raise InvalidInputError(f"pose targets must have shape (..., {n_effectors}, 4, 4), got {t.shape}")
        R = t[..., :3, :3]
        # A scaled or sheared target has no single orientation to reach: orthonormalise it (the
        # SVD is skipped in the common case of targets that already are rotations).
        RtR = np.swapaxes(R, -1, -2) @ R
        if not (np.abs(RtR - _EYE3) <= _ORTHONORMAL_TOL).all() or (_det3(R) <= 0).any():
            U, _, Vt = np.linalg.svd(R)
            D = np.ones(R.shape[:-1])
            D[..., -1] = np.sign(np.linalg.det(U @ Vt))
            R = (U * D[..., None, :]) @ Vt
        return Targets(t[..., :3, 3].copy(), R.copy())
    if t.ndim >= 1 and t.shape[-1] == 3:
        if n_effectors == 1:
            t = t[..., None, :]
        if t.ndim < 2 or t.shape[-2] != n_effectors:
            raise InvalidInputError(f"position targets must have shape (..., {n_effectors}, 3), got {t.shape}")
        return Targets(t.copy(), None)
    expected = "(..., 3) positions or (..., 4, 4) poses" if n_effectors == 1 else (
        f"(..., {n_effectors}, 3) positions or (..., {n_effectors}, 4, 4) poses"
    )
    raise InvalidInputError(f"targets must have shape {expected}, got {t.shape}")


def _det3(R: np.ndarray) -> np.ndarray:
    """(...,) determinants of (..., 3, 3) matrices as triple products (the sign is all that is used)."""
    a, b, c = R[..., 0, :], R[..., 1, :], R[..., 2, :]
    return (
        a[..., 0] * (b[..., 1] * c[..., 2] - b[..., 2] * c[..., 1])
        - a[..., 1] * (b[..., 0] * c[..., 2] - b[..., 2] * c[..., 0])
        + a[..., 2] * (b[..., 0] * c[..., 1] - b[..., 1] * c[..., 0])
    )


def _batch_copy(values: object, batch: tuple[int, ...]) -> np.ndarray:
    """A writable int array of shape ``batch`` from a scalar or an array that broadcasts to it."""
    values = np.asarray(values, dtype=int)
    return values.copy() if values.shape == batch else np.broadcast_to(values, batch).copy()


def rotation_angle(Ra: np.ndarray, Rb: np.ndarray) -> np.ndarray:
    """(...,) geodesic angle [rad] between rotation batches, accurate below 1e-8 rad."""
    from ..model.rotations import rotation_error

    return rotation_error(Ra, Rb)


class Solver(abc.ABC):
    """Base of every IK solver: one interface, one result type.

    Subclasses implement :meth:`_solve` (the iterations) and may override
    :meth:`_unreached_reason`. :meth:`solve` validates input, broadcasts the warm start,
    projects the answer onto the joint limits, replaces any non-finite value by the warm
    start, measures errors by forward kinematics, and writes a reason per target. A target
    beyond :attr:`reach_bound` (see :meth:`reach_excess`) cannot converge: solvers give it a
    best-effort pose in bounded work, and its reason says how far out of reach it lies.

    Args:
        skeleton: The skeleton to pose.
        effectors: Effector name(s) (or indices) driven by the targets.
        mode: "position" (position only), "aim" (position plus pointing ``aim_axis`` of the
            effector along the target's same axis) or "full" (6-D pose).
        tolerance: Position tolerance [m].
        rotation_tolerance: Rotation tolerance [rad] ("aim" and "full" modes).
        max_iterations: Iteration budget per target.
        aim_axis: (3,) axis in the effector frame used by "aim" mode.

    Attributes:
        reach_bound: Per effector, its chain's root point and an upper bound on the effector's
            distance from it (computed once per solver).
    """

    name = "solver"
    #: Whether the solver matches rotations in "aim" and "full" modes; the best effort of a
    #: solver that only reports them (two-bone) minimises the position error alone.
    rotation_matched = True
    #: Per-call options :meth:`solve` accepts (for example ``("pole",)``).
    call_options: tuple[str, ...] = ()
    #: Whether the solver sets a redundant chain's self-motion by rule (a pole's plane, or the
    #: start's): it cannot whip from one frame to the next the way a searched self-motion can,
    #: so a take does not retry its large steps below the jump allowed (see
    #: :func:`~ik_core.take.tracking.solve_track`).
    ruled_self_motion = False
    #: Leave missed targets' best effort to a later :meth:`finish_missed` on a larger batch (a
    #: take's segments together): the best effort's descents cost per call more than per target.
    defer_best_effort = False

    def __init__(
        self,
        skeleton: Skeleton,
        effectors: str | int | Sequence[str | int] = 0,
        *,
        mode: str = "position",
        tolerance: float = 1e-4,
        rotation_tolerance: float = 1e-3,
        max_iterations: int = 100,
        aim_axis: Sequence[float] = (0.0, 0.0, 1.0),
    ) -> None:
        if mode not in MODES:
            raise InvalidInputError(f"unknown mode {mode!r}; valid modes: {', '.join(MODES)}")
        if not (tolerance > 0 and rotation_tolerance > 0):
            raise InvalidInputError("tolerance and rotation_tolerance must be > 0")
        if int(max_iterations) < 1:
            raise InvalidInputError(f"max_iterations must be >= 1, got {max_iterations}")
        if skeleton.dof == 0:
            raise InvalidInputError(f"skeleton {skeleton.name!r} has no moving joint to solve for")
        if fully_locked(skeleton):
            raise InvalidInputError(
                f"chain {skeleton.name!r}: every joint is locked (each range is a single value, each ball joint "
                "locked on all axes), so nothing can move toward a target; unlock an axis or widen a range"
            )
        single = isinstance(effectors, (str, int, np.integer))
        names = [effectors] if single else list(effectors)
        self.skeleton = skeleton
        self.effector_ids = tuple(skeleton.effector_index(n) for n in names)
        self.mode = mode
        self.tolerance = float(tolerance)
        self.rotation_tolerance = float(rotation_tolerance)
        self.max_iterations = int(max_iterations)
        aim = np.asarray(aim_axis, dtype=float)
        if aim.shape != (3,) or not np.linalg.norm(aim) > 0:
            raise InvalidInputError(f"aim_axis must be a non-zero 3-vector, got {aim_axis!r}")
        self.aim_axis = aim / np.linalg.norm(aim)
        self.reach_bound = ReachBound.of(skeleton, self.effector_ids)
        #: Missed targets get their best effort under the limits (see :meth:`improve_missed`);
        #: False leaves the solver's own answer (to study a solver's iterations alone).
        self.best_effort = True
        #: Global starts that check each missed target's best effort (0: a local descent only):
        #: more for a tree of several effectors (see TREE_GLOBAL_STARTS).
        self.global_starts = GLOBAL_STARTS if len(self.effector_ids) == 1 else TREE_GLOBAL_STARTS
        #: A tree's followers lean from global starts and through rising weights (LEAN_WEIGHTS);
        #: False: local rounds only (TAKE_LEAN_WEIGHTS), as a take's frames lean (see :meth:`_leaned`).
        self.lean_check = True
        self._best: BestEffort | None = None
        # Best-effort problems led by the effectors within reach, by pattern (see _led_problems).
        self._led: dict[tuple[bool, ...], tuple[BestEffort, BestEffort, np.ndarray]] = {}
        # The lean problems, by leader pattern and weight (see _lean_problem).
        self._lean: dict[tuple[tuple[bool, ...], float], BestEffort | None] = {}

    def reach_excess(self, targets: np.ndarray) -> np.ndarray:
        """How far [m] each target's position lies beyond the reach of its effector.

        A value above ``tolerance`` marks a target that no configuration reaches (the position
        part of a pose target decides): solvers spend no restarts on it, and a take needs no
        retry of it.

        Args:
            targets: Positions or poses, see :func:`as_targets`; leading axes are the batch.

        Returns:
            (...,) largest distance [m] of a target position beyond its effector's
            ``reach_bound`` over the effectors; <= 0 where every target lies inside its bound.

        Raises:
            InvalidInputError: Bad shapes, or NaN/infinite targets.
        """
        return self._beyond(as_targets(targets, len(self.effector_ids)))

    def _beyond(self, tg: Targets) -> np.ndarray:
        """(...,) largest excess [m] of the validated targets over their effectors' reach."""
        return self.reach_bound.excess(tg.positions).max(axis=-1)

    # --- the template ----------------------------------------------------------------------
    def solve(
        self,
        targets: np.ndarray,
        q0: np.ndarray | None = None,
        **options: object,
    ) -> IKResult:
        """Solve for a batch of targets.

        Args:
            targets: Positions or poses, see :func:`as_targets`; leading axes are the batch.
            q0: (..., dof) or (dof,) warm start; ``None`` starts from the preferred pose.
            **options: Solver-specific per-call options (for example ``pole``).

        Returns:
            An :class:`IKResult` with the batch shape of ``targets``.

        Raises:
            InvalidInputError: Bad shapes, or NaN/infinite targets or warm start.
        """
        tg = as_targets(targets, len(self.effector_ids))
        q0 = self._warm_start(tg, q0)
        with np.errstate(all="ignore"):
            q, iterations = self._solve(tg, q0.copy(), **options)
        return self._finish(tg, q, q0, iterations)

    def _warm_start(self, tg: Targets, q0: np.ndarray | None) -> np.ndarray:
        """The validated warm start, broadcast to the batch and projected onto the limits."""
        if self.mode != "position" and tg.rotations is None:
            raise InvalidInputError(f"mode {self.mode!r} needs (..., 4, 4) pose targets, got positions")
        batch = tg.batch_shape
        dof = self.skeleton.dof
        if q0 is None:
            q0 = self.skeleton.preferred_q
        q0 = np.asarray(q0, dtype=float)
        if not np.isfinite(q0).all():
            require_finite("q0", q0)
        if q0.shape[-1:] != (dof,):
            raise InvalidInputError(f"q0 must have shape (..., {dof}) or ({dof},), got {q0.shape}")
        if q0.shape != (*batch, dof):
            try:
                q0 = np.broadcast_to(q0, (*batch, dof))
            except ValueError:
                raise InvalidInputError(f"q0 shape {q0.shape} does not broadcast to batch {batch}") from None
        return project_configuration(self.skeleton, q0)

    def _finish(self, tg: Targets, q: np.ndarray, q0: np.ndarray, iterations: object) -> IKResult:
        """The result for the solver's answers q: limits, best effort for the missed, errors, reasons."""
        bad = ~np.isfinite(q).all(axis=-1)
        if bad.any():
            q = np.where(bad[..., None], q0, q)
        q = project_configuration(self.skeleton, q)
        pos_err, rot_err = self.errors(q, tg)
        converged = (pos_err <= self.tolerance) & (rot_err <= self.rotation_tolerance)
        missed = ~converged & ~bad
        if missed.any():
            missed &= ~self.at_reach_bound(tg, pos_err, rot_err)
        if self.best_effort and not self.defer_best_effort and missed.any():
            q = self.improve_missed(tg, q, q0, missed)
            pos_err, rot_err = self.errors(q, tg)
        return self._report(tg, q, pos_err, rot_err, bad, iterations)

    def _report(
        self, tg: Targets, q: np.ndarray, pos_err: np.ndarray, rot_err: np.ndarray, bad: np.ndarray,
        iterations: object,
    ) -> IKResult:
        """The result for final answers q and their errors: convergence, reasons, limit hits."""
        batch = tg.batch_shape
        converged = (pos_err <= self.tolerance) & (rot_err <= self.rotation_tolerance) & ~bad
        reason = np.empty(batch, dtype=object)
        reason[...] = "converged"
        if not converged.all():
            held = ~converged & ~bad
            on_limit: dict[tuple[int, ...], list[int]] = {}
            if self.best_effort and held.any():
                # The joints on a limit of every missed answer at once: a take misses hundreds of
                # frames, and one chart conversion each cost more than the rest of the report.
                rows = np.flatnonzero(held.reshape(-1))
                joints = self._best_effort().joints_on_limit_rows(q.reshape(-1, q.shape[-1])[rows])
                on_limit = {tuple(int(i) for i in row): j for row, j in zip(np.argwhere(held), joints)}
            for row in np.argwhere(~converged):  # also right for a 0-d batch
                idx = tuple(int(i) for i in row)
                if bad[idx]:
                    reason[idx] = "numerical failure; returned the warm start"
                else:
                    reason[idx] = self._unreached_reason(
                        tg, q, idx, pos_err[idx], rot_err[idx], held=on_limit.get(idx)
                    )
        at_limit = (np.abs(q - self.skeleton.lower) <= 1e-9) | (np.abs(q - self.skeleton.upper) <= 1e-9)
        return IKResult(
            q=q,
            converged=converged,
            position_error=pos_err,
            rotation_error=rot_err,
            iterations=_batch_copy(iterations, batch),
            reason=reason,
            limit_hits=np.count_nonzero(at_limit, axis=-1),
        )

    def deferring_best_effort(self) -> Solver:
        """This solver, or a copy of it that leaves missed targets' best effort to :meth:`finish_missed`.

        For callers that give the missed targets their best effort later, together (a take's
        segments), or never need it: a search that keeps only what converges, or whose answers
        are solved again.
        """
        if not self.best_effort:
            return self
        quick = copy.copy(self)
        quick.defer_best_effort = True
        return quick

    def finish_missed(self, targets: np.ndarray, q0: np.ndarray | None, result: IKResult) -> IKResult:
        """``result`` (from a solver's own fast path) with its missed targets given their best effort.

        Args:
            targets: The targets the result answers, as given to :meth:`solve`.
            q0: The warm start given to :meth:`solve`.
            result: The fast path's result.

        Returns:
            ``result`` itself when every target converged (or best effort is off), else the
            result the template gives for the same answers.
        """
        if not self.best_effort or np.all(result.converged):
            return result
        tg = as_targets(targets, len(self.effector_ids))
        return self._finish(tg, result.q, self._warm_start(tg, q0), result.iterations)

    def follow_missed(self, targets: np.ndarray, result: IKResult) -> IKResult:
        """A take's result with each missed frame kept in the basin of the frame before where that is as near.

        See :meth:`~.best_effort.BestEffort.follow`: frames solved in one batch each start
        from a guess; this pass gives a missed frame its predecessor's basin unless its own
        answer is nearer its target by more than the best effort's switch margin; a solver that
        sets the self-motion by rule (:attr:`ruled_self_motion`) keeps its frames at the reach
        bound as solved (provably their best effort, the rest of the pose set by its rule).
        Rotating joints are then moved by whole turns nearest the frame before on every frame
        (the same poses, without a spin in the keys).

        Args:
            targets: (N, ...) the take's targets, as given to :meth:`solve`, in frame order.
            result: The take's result, batch shape (N,).

        Returns:
            ``result`` itself when no frame after the first missed (or best effort is off),
            else the result for the followed answers.
        """
        missed = ~np.asarray(result.converged, dtype=bool)
        if not self.best_effort or len(missed) < 2:
            return result
        best = self._best_effort()
        tg = as_targets(targets, len(self.effector_ids)) if missed[1:].any() else None
        if tg is not None and self.ruled_self_motion:
            # A frame at its reach bound is provably its best effort, and a solver that sets the
            # self-motion by rule (a pole's plane) has set the rest of its pose: nothing to follow.
            missed &= ~self.at_reach_bound(tg, np.asarray(result.position_error), np.asarray(result.rotation_error))
        if not missed[1:].any():
            # Every frame reached: only whole turns of rotating joints to take out (a spin).
            return replace(result, q=best.unwrap(result.q))
        E = len(self.effector_ids)
        tp = tg.positions.reshape(-1, E, 3)
        tr = None
        if tg.rotations is not None and best.mode != "position":
            tr = tg.rotations.reshape(-1, E, 3, 3)
        q = np.asarray(result.q, dtype=float)
        lead = self.leading_effectors(tp)
        if not lead.any():
            q, jumps = best.follow(q, tp, tr, missed, self.tolerance)
        else:
            # Each frame follows its predecessor in its own problem (led by the effectors within
            # reach where others are beyond, see improve_missed).
            jumps = np.zeros(len(q))
            plain = missed & ~lead.any(axis=-1)
            for pattern in np.unique(lead[lead.any(axis=-1)], axis=0):
                frames = np.flatnonzero(missed & (lead == pattern).all(axis=-1))
                leaders, followers, _ = self._led_problems(tuple(bool(b) for b in pattern))
                # Frames whose leaders reach their targets were solved led (see improve_missed):
                # their followers follow the frame before with the leaders' joints held; the
                # other frames share the distance as the solver weighs it.
                frames_tr = None if tr is None else tr[frames]
                reached = self._leaders_reached(leaders, pattern, q[frames], tp[frames], frames_tr)
                plain[frames[~reached]] = True
                follow = np.zeros(len(q), dtype=bool)
                follow[frames[reached]] = True
                if follow[1:].any():
                    q, pattern_jumps = followers.follow(
                        q, tp[:, ~pattern], None if tr is None else tr[:, ~pattern], follow, self.tolerance
                    )
                    jumps = np.maximum(jumps, pattern_jumps)
            if plain[1:].any():
                q, plain_jumps = best.follow(q, tp, tr, plain, self.tolerance)
                jumps = np.maximum(jumps, plain_jumps)
        pos_err, rot_err = self.errors(q, tg)
        bad = np.zeros(len(q), dtype=bool)
        followed = self._report(tg, q, pos_err, rot_err, bad, result.iterations)
        for i in np.flatnonzero(jumps):
            if not followed.converged[i]:
                followed.reason[i] = f"{followed.reason[i]}; {best.jump_note(float(jumps[i]))}"
        return followed

    def at_reach_bound(self, tg: Targets, pos_err: np.ndarray, rot_err: np.ndarray) -> np.ndarray:
        """(...,) True where an answer is provably its best effort, with no search needed.

        That is a lone effector whose position error equals its target's distance beyond the
        chain's reach (no pose comes nearer), with no rotation to match.
        """
        if len(self.effector_ids) != 1 or (self.mode != "position" and self.rotation_matched):
            return np.zeros(pos_err.shape, dtype=bool)
        return pos_err <= self._beyond(tg) + 1e-9

    def best_effort_weights(self) -> np.ndarray | None:
        """(m,) square roots of the weights of the best-effort error rows, or None for plain rows."""
        return None

    def improve_missed(self, tg: Targets, q: np.ndarray, q0: np.ndarray, missed: np.ndarray) -> np.ndarray:
        """``q`` with each missed target's pose replaced by its best effort under the limits.

        The solver's answer is descended to a local minimum of the distance inside the limits
        and checked against a few global starts (see :class:`~.best_effort.BestEffort`); a
        reachable target the solver missed is reached where either finds it.

        Args:
            tg: The validated targets.
            q: (..., dof) the solver's answers, inside the limits.
            q0: (..., dof) the warm starts (ties go to the nearest).
            missed: (...,) the targets to improve.

        Returns:
            (..., dof) configurations inside the limits, none farther from its target than q.
        """
        best = self._best_effort()
        dof = self.skeleton.dof
        rows = np.nonzero(missed.reshape(-1))[0]
        E = len(self.effector_ids)
        tp = tg.positions.reshape(-1, E, 3)[rows]
        tr = None
        if tg.rotations is not None and best.mode != "position":
            tr = tg.rotations.reshape(-1, E, 3, 3)[rows]
        flat = q.reshape(-1, dof).copy()
        warm = np.broadcast_to(q0, q.shape).reshape(-1, dof)[rows]
        beyond = self.reach_bound.excess(tp).max(axis=-1) > self.tolerance
        lead = self.leading_effectors(tp)
        plain = ~lead.any(axis=-1)
        # Where some effectors' targets lie beyond reach and the others' within it, the others
        # lead: their own best effort first (the whole global check: the shared joints may pose
        # anywhere that reaches them), then the far effectors' best effort with every joint that
        # moves a leader held. Where the leaders cannot reach their targets either, nothing leads:
        # every effector shares the distance as the solver weighs it (a leader's last micrometre
        # would otherwise outweigh any distance of the others, and their poses jump on it).
        for pattern in np.unique(lead[~plain], axis=0):
            sel = np.flatnonzero((lead == pattern).all(axis=-1))
            leaders, followers, free = self._led_problems(tuple(bool(b) for b in pattern))
            tr_sel = None if tr is None else tr[sel]
            tr_l = None if tr_sel is None else tr_sel[:, pattern]
            first = leaders.improve(
                flat[rows[sel]], warm[sel], tp[sel][:, pattern], tr_l, self.tolerance, self.global_starts
            )
            reached = self._leaders_reached(leaders, pattern, first, tp[sel], tr_sel)
            plain[sel[~reached]] = True
            if reached.any():
                done = sel[reached]
                tr_done = None if tr is None else tr[done]
                given = self._given_leaders(
                    followers, free, ~pattern, first[reached], flat[rows[done]], tp[done], tr_done,
                )
                flat[rows[done]] = self._leaned(tuple(bool(b) for b in pattern), given, tp[done], tr_done)
        if plain.any():
            sel = np.flatnonzero(plain)
            flat[rows[sel]] = best.improve(
                flat[rows[sel]], warm[sel], tp[sel], None if tr is None else tr[sel], self.tolerance,
                self.global_starts, beyond[sel],
            )
        return flat.reshape(q.shape)

    def leading_effectors(self, tp: np.ndarray) -> np.ndarray:
        """(P, E) True for the effectors that lead each target set's best effort.

        Those are the effectors whose targets lie within their reach on a target set where
        other effectors' targets lie beyond theirs; none lead where all or none are beyond
        (every effector then weighs as the solver weighs it).

        Args:
            tp: (P, E, 3) target positions [m].
        """
        beyond = self.reach_bound.excess(tp) > self.tolerance
        if beyond.shape[-1] < 2:
            return np.zeros(beyond.shape, dtype=bool)
        mixed = beyond.any(axis=-1) & ~beyond.all(axis=-1)
        return ~beyond & mixed[..., None]

    def _best_effort(self) -> BestEffort:
        """The solver's best-effort problem (built on first use)."""
        if self._best is None:
            mode = self.mode if self.rotation_matched else "position"
            self._best = BestEffort(
                self.skeleton, self.effector_ids, mode, self.aim_axis, weights=self.best_effort_weights()
            )
        return self._best

    def _led_problems(self, lead: tuple[bool, ...]) -> tuple[BestEffort, BestEffort, np.ndarray]:
        """The best-effort problems of target sets led by the effectors flagged in ``lead`` (built on first use).

        The first has the leaders alone; the second the others, with every joint that moves a
        leader held (see :meth:`leading_effectors`); last, (dof,) True for the variables the
        second may move.
        """
        if lead not in self._led:
            mode = self.mode if self.rotation_matched else "position"
            E = len(self.effector_ids)
            base = self.best_effort_weights()
            w = None if base is None else np.reshape(base, (E, -1))
            flags = np.array(lead)
            skeleton = self.skeleton
            leader_joints = [skeleton.effectors[self.effector_ids[e]].joint for e in np.flatnonzero(flags)]
            held = sorted({j for joint in leader_joints for j in skeleton.ancestors(joint)})
            problems = [
                BestEffort(
                    skeleton, [self.effector_ids[e] for e in np.flatnonzero(group)], mode, self.aim_axis,
                    weights=None if w is None else w[group].reshape(-1), held_joints=() if group is flags else held,
                )
                for group in (flags, ~flags)
            ]
            owner = np.repeat(np.arange(len(skeleton.joints)), [j.dof for j in skeleton.joints])
            self._led[lead] = (problems[0], problems[1], ~np.isin(owner, held))
        return self._led[lead]

    def _lean_problem(self, lead: tuple[bool, ...], weight: float) -> BestEffort | None:
        """The whole pose's best-effort problem with the leaders' (``lead`` (E,)) error rows weighted ``weight``.

        None in aim mode (its rows per effector are not fixed); built on first use.
        """
        if (lead, weight) not in self._lean:
            mode = self.mode if self.rotation_matched else "position"
            problem = None
            if mode != "aim":
                rows = 3 if mode == "position" else 6
                base = self.best_effort_weights()
                w = np.ones(rows * len(lead)) if base is None else np.array(base, dtype=float)
                w *= np.repeat(np.where(lead, weight, 1.0), rows)
                problem = BestEffort(self.skeleton, self.effector_ids, mode, self.aim_axis, weights=w)
            self._lean[(lead, weight)] = problem
        return self._lean[(lead, weight)]

    def _leaned(self, lead: tuple[bool, ...], q: np.ndarray, tp: np.ndarray, tr: np.ndarray | None) -> np.ndarray:
        """Poses q (P, dof) whose leaders are on their targets, with the followers leaning nearer theirs where they can.

        :meth:`_given_leaders` holds every joint that moves a leader, but a leader on its target
        still leaves the shared joints some room (a spine that bends toward the far hand while the
        near arm bends back keeps the near hand where it is). The best pose is then the one whose
        followers come nearest among those that keep the leaders on their targets. Rounds of: the
        whole pose descended with the leaders' rows weighted LEAN_WEIGHTS[k] (the first round
        from global starts too; with :attr:`lean_check` off, TAKE_LEAN_WEIGHTS and local rounds
        only), then the leaders descended back onto their targets and the followers' own joints
        descended. A row keeps the
        result where its leaders are on their targets and its followers come nearer than in q by
        more than SWITCH_MARGIN; there the followers' own joints get :meth:`_given_leaders`'
        search again, with the leaned pose held.

        Args:
            lead: (E,) the leaders.
            q: (P, dof) poses with the leaders on their targets (:meth:`_given_leaders`).
            tp: (P, E, 3) target positions [m].
            tr: (P, E, 3, 3) target rotations, or None.
        """
        weights = LEAN_WEIGHTS if self.lean_check else TAKE_LEAN_WEIGHTS
        if not len(q) or self._lean_problem(lead, weights[0]) is None:
            return q
        flags = np.array(lead)
        leaders, followers, free = self._led_problems(lead)
        goal = self.tolerance if leaders.mode == "position" else min(self.tolerance, self.rotation_tolerance)
        rotations = tr is not None and leaders.mode != "position"
        tr_all = tr if rotations else None
        tr_l, tr_f = (tr[:, flags], tr[:, ~flags]) if rotations else (None, None)
        x = q
        for k, weight in enumerate(weights):
            lean = self._lean_problem(lead, weight)
            if k == 0 and self.lean_check:
                x = lean.improve(x, q, tp, tr_all, 0.0, self.global_starts)
            else:
                x, _ = lean.descend(x, tp, tr_all)
            x, _ = leaders.descend(x, tp[:, flags], tr_l, tolerance=goal)
            x, _ = followers.descend(x, tp[:, ~flags], tr_f)
        before = followers.distances(q, tp[:, ~flags], tr_f)
        rows = np.flatnonzero(
            (leaders.distances(x, tp[:, flags], tr_l) <= goal)
            & (followers.distances(x, tp[:, ~flags], tr_f) < before - SWITCH_MARGIN)
        )
        out = q.copy()
        if len(rows):
            out[rows] = self._given_leaders(
                followers, free, ~flags, x[rows], x[rows], tp[rows], None if tr is None else tr[rows]
            )
        return out

    def _leaders_reached(
        self, leaders: BestEffort, lead: np.ndarray, q: np.ndarray, tp: np.ndarray, tr: np.ndarray | None,
    ) -> np.ndarray:
        """(P,) whether poses q (P, dof) bring the leaders flagged in ``lead`` (E,) onto their targets.

        Position and rotation rows share one distance: within the tighter tolerance is within both.
        """
        goal = self.tolerance if leaders.mode == "position" else min(self.tolerance, self.rotation_tolerance)
        return leaders.distances(q, tp[:, lead], None if tr is None else tr[:, lead]) <= goal

    def _given_leaders(
        self, followers: BestEffort, free: np.ndarray, follow: np.ndarray, q: np.ndarray, q_before: np.ndarray,
        tp: np.ndarray, tr: np.ndarray | None,
    ) -> np.ndarray:
        """Poses q (P, dof) whose leaders are on their targets, with the other effectors' own joints at their best.

        The joints that move a leader are held. The others descend from q, from the answer
        before the leaders' best effort, ``q_before`` (P, dof) (the leaders' global check may
        have left them anywhere, while the solver had pulled them toward their targets), and, for
        a lone follower's position, from q with its own joints stretched toward its target (beyond
        reach, the best pose where the limits allow).

        Args:
            followers: The followers' problem (see :meth:`_led_problems`).
            free: (dof,) True for the variables it may move.
            follow: (E,) True for the followers.
            q: (P, dof) answers with the leaders on their targets.
            q_before: (P, dof) the solver's answers before the leaders' best effort.
            tp: (P, E, 3) target positions [m].
            tr: (P, E, 3, 3) target rotations, or None.
        """
        tp_f, tr_f = tp[:, follow], None if tr is None else tr[:, follow]
        starts = [q, q.copy()]
        starts[1][:, free] = q_before[:, free]
        if np.count_nonzero(follow) == 1 and tr_f is None:
            effector = self.effector_ids[int(np.flatnonzero(follow)[0])]
            starts.append(q.copy())
            starts[2][:, free] = stretch_toward(self.skeleton, q, effector, tp_f[:, 0])[:, free]
        starts.extend(self._follower_library_starts(followers, free, q, tp_f, tr_f))
        k, P = len(starts), len(q)
        x, d = followers.descend(
            np.concatenate(starts), np.tile(tp_f, (k, 1, 1)), None if tr_f is None else np.tile(tr_f, (k, 1, 1, 1))
        )
        best = np.argmin(d.reshape(k, P), axis=0)
        return x.reshape(k, P, -1)[best, np.arange(P)]

    @staticmethod
    def _follower_library_starts(
        followers: BestEffort, free: np.ndarray, q: np.ndarray, tp: np.ndarray, tr: np.ndarray | None,
    ) -> list[np.ndarray]:
        """FOLLOWER_STARTS lists of starts (P, dof): for each pose of q, the library poses of the variables ``free``.

        With the held variables of q, they are the library poses whose followers come nearest
        their targets, nearest first. Descents from q alone stay in the basin q and its stretched
        self lie in: on bench trees the far arm, held at the end of its spine, ended 49-90 mm
        farther than from the nearest library pose.
        """
        library = followers.library_poses()
        P, L = len(q), len(library)
        count = min(FOLLOWER_STARTS, L)
        candidates = np.repeat(q[:, None], L, axis=1)
        candidates[:, :, free] = library[None][:, :, free]
        flat = candidates.reshape(P * L, -1)
        d = followers.distances(
            flat, np.repeat(tp, L, axis=0), None if tr is None else np.repeat(tr, L, axis=0)
        ).reshape(P, L)
        nearest = np.argsort(d, axis=1, kind="stable")[:, :count]
        return [candidates[np.arange(P), nearest[:, k]] for k in range(count)]

    def errors(self, q: np.ndarray, tg: Targets) -> tuple[np.ndarray, np.ndarray]:
        """(...,) worst position error [m] and rotation error [rad] over the effectors."""
        skel = self.skeleton
        frames = forward_kinematics(skel, q)
        effs = [skel.effectors[e] for e in self.effector_ids]
        # effector_poses' product, gathered with one fancy index instead of a per-effector stack.
        poses = frames[..., [e.joint for e in effs], :, :] @ np.stack([e.offset for e in effs])
        d = poses[..., :3, 3] - tg.positions
        pos_err = np.sqrt(np.add.reduce(d * d, axis=-1)).max(axis=-1)
        if self.mode == "position" or tg.rotations is None:
            return pos_err, np.zeros_like(pos_err)
        if self.mode == "aim":
            a = poses[..., :3, :3] @ self.aim_axis
            b = tg.rotations @ self.aim_axis
            cross = np.linalg.norm(np.cross(a, b), axis=-1)
            rot_err = np.arctan2(cross, np.sum(a * b, axis=-1))
        else:
            rot_err = rotation_angle_unchecked(poses[..., :3, :3], tg.rotations)
        return pos_err, rot_err.max(axis=-1)

    def _unreached_reason(
        self, tg: Targets, q: np.ndarray, idx: tuple[int, ...], pos_err: float, rot_err: float,
        held: list[int] | None = None,
    ) -> str:
        """Human-readable reason for one unconverged target.

        ``held``: the joints on a limit of the answer q[idx] when the caller found them already
        (a report finds them for all its missed answers at once), else None.
        """
        far = self._out_of_reach_reason(tg, idx, pos_err)
        if far is not None:
            return far
        if self.best_effort:
            return self._held_reason(q, idx, pos_err, rot_err, held)
        what = []
        if pos_err > self.tolerance:
            what.append(f"position error {pos_err:.3g} m > tolerance {self.tolerance:g} m")
        if rot_err > self.rotation_tolerance:
            what.append(f"rotation error {rot_err:.3g} rad > tolerance {self.rotation_tolerance:g} rad")
        return "not converged: " + "; ".join(what)

    def _held_reason(
        self, q: np.ndarray, idx: tuple[int, ...], pos_err: float, rot_err: float, held: list[int] | None = None
    ) -> str:
        """The reason for a missed target inside the reach, after its best effort: what holds it."""
        errs = f"position error {pos_err:.3g} m"
        if self.mode != "position" and rot_err > self.rotation_tolerance:
            errs += f", {'aim' if self.mode == 'aim' else 'rotation'} error {rot_err:.3g} rad"
        if held is None:
            held = self._best_effort().joints_on_limit(q[idx])
        if not held:
            return f"no pose near the closest one found comes nearer ({errs}; no joint on a limit)"
        names = [self.skeleton.joints[i].name for i in held]
        listed = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        return (
            f"joint limits prevent reaching the target: the closest pose their ranges allow leaves {errs} "
            f"({listed} on a limit)"
        )

    def _out_of_reach_reason(self, tg: Targets, idx: tuple[int, ...], pos_err: float) -> str | None:
        """The reason for a target beyond its effector's reach, or None for a target inside it."""
        excess = self.reach_bound.excess(tg.positions[idx])
        k = int(np.argmax(excess))
        if not excess[k] > self.tolerance:
            return None
        length = float(self.reach_bound.lengths[k])
        name = self.skeleton.effectors[self.effector_ids[k]].name
        return (
            f"target out of reach: effector {name!r} target {excess[k] + length:.4g} m from the chain root, "
            f"{excess[k]:.3g} m beyond the chain's reach {length:.4g} m; best effort leaves "
            f"{pos_err:.3g} m of position error"
        )

    @abc.abstractmethod
    def _solve(self, targets: Targets, q0: np.ndarray, **options: object) -> tuple[np.ndarray, np.ndarray]:
        """Iterate from ``q0`` (..., dof); return (q (..., dof), iterations (...,) or scalar)."""


def solve_sequence(
    solver: Solver,
    targets: np.ndarray,
    q0: np.ndarray | None = None,
    progress: Callable[[int, int], None] | None = None,
    **options: object,
) -> IKResult:
    """Solve a time series of targets, each frame warm-started from the previous answer.

    Args:
        solver: Any solver.
        targets: (N, ...) per-frame targets, each as accepted by ``solver.solve``.
        q0: (dof,) start for the first frame; ``None`` uses the preferred pose.
        progress: Optional ``progress(done, total)`` callback, called after each frame.
        **options: Per-call solver options; array options with a leading N axis (for
            example ``pole`` of shape (N, 3)) are sliced per frame.

    Returns:
        An :class:`IKResult` with batch shape (N,).
    """
    targets = np.asarray(targets, dtype=float)
    n = len(targets)
    results = []
    q = q0
    for i in range(n):
        frame_options = {
            k: (v[i] if isinstance(v, np.ndarray) and v.ndim and len(v) == n else v) for k, v in options.items()
        }
        res = solver.solve(targets[i], q, **frame_options)
        q = res.q
        results.append(res)
        if progress is not None:
            progress(i + 1, n)
    if not results:
        empty = np.zeros((0,))
        return IKResult(
            np.zeros((0, solver.skeleton.dof)), empty.astype(bool), empty, empty,
            empty.astype(int), np.empty((0,), dtype=object), empty.astype(int),
        )
    return IKResult(*(np.stack([getattr(r, f) for r in results]) for f in IKResult.__dataclass_fields__))
