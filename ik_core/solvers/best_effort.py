# SPDX-License-Identifier: GPL-3.0-or-later
"""Best effort under limits: the pose inside the limits whose effectors come closest to their targets.

Every solver ends here for the targets it did not reach. The problem is

    minimise 0.5 |e(q)|^2  over q inside every limit,

with ``e`` the error rows of the solver's mode (position [m]; plus the rotation log [rad] in
"full" mode, or the aim error [rad] in "aim" mode) over all its effectors. :class:`BestEffort`
descends it from a pose (a projected Levenberg-Marquardt with an active set on the box limits)
until no step gains more than :data:`STALL_GAIN` of distance, which certifies a local minimum
inside the limits to that gain, and checks the pose against descents from a few in-limit
starts whose effectors lie nearest the target and a few spread over the space the limits allow
(the global check): a start's answer replaces the pose only if it is closer by more than
:data:`SWITCH_MARGIN`, so a take keeps its basin while the two answers tie and moves on when the
best pose really lies elsewhere.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..limits import project_configuration
from ..limits.ball import quadrant_semi_axes
from ..limits.chart import BoxChart
from ..model.skeleton import JointKind, Skeleton
from .dls.kinematics import EffectorModel, aim_residual, rotation_log
from .reach import ReachBound, stretch_toward

#: A descent stops when _STALL_WINDOW iterations together gain less than this much distance
#: [m or rad], or when no step gains at all: the certificate's gain.
STALL_GAIN = 1e-6
_STALL_WINDOW = 6
#: Iterations a descent gets at most: a cap on work that progresses (a descent that stalls
#: stops long before it).
MAX_DESCENT = 100
#: A global start's answer replaces the local one only if its distance is shorter by more than
#: this [m]: between near-ties the pose that continues the warm start wins.
SWITCH_MARGIN = 2e-4
#: Starts of the global check: in-limit configurations whose effector lies nearest the target,
#: drawn from a seeded library of LIBRARY_SIZE configurations built once per solver.
GLOBAL_STARTS = 8
#: A tree's (a solver of several effectors): its library poses are ranked by the summed
#: distances of its effectors from their targets, which points to the closest pose's basin less
#: often than one effector's distance does. On 84 out-of-limit target pairs of 48 random two-arm
#: trees (bench_best_effort.py's, seeds 0-3) Auto's answers within 1 mm of the optimum were
#: 0.917 of them with 8 starts, 0.964 with 32 and 0.976 with 48, for 14 % more time; a take
#: keeps GLOBAL_STARTS (see :func:`~ik_core.take.tracking.solve_track`).
TREE_GLOBAL_STARTS = 48
LIBRARY_SIZE = 512
#: Beside them, for targets within reach, this many library configurations spread evenly over the
#: library (the same for every target). A pose whose effector lies near the target can be held
#: there by a limit, in a basin other than the closest pose's: on a limb with a cone-twist shoulder
#: all eight nearest led 19.7 mm short, while over half of the library descends to the closest
#: pose. On 190 out-of-limit targets of the bench's random chains (seeds 1-4) Auto's answers within
#: 1 mm of the optimum went from 0.979 to 1.000 with them; beyond reach a stretched pose is the
#: answer and the nearest starts already find it.
SPREAD_STARTS = 8
#: Iterations that screen each global start, and how many of the best screened go on to a full descent.
SCREEN_DESCENT = 12
# A tree's screen goes on for more rounds of SCREEN_DESCENT iterations, each with this many of every
# target's best screened starts (see BestEffort._screen).
_TREE_SCREEN_ROUNDS = (16, 8)
#: For a target beyond reach the global check runs only where some start's effector lies within
#: this multiple of the local answer's distance from the target.
GLOBAL_RANGE = 1.5
FINISHED_STARTS = 3
#: Targets within this fraction of the chain's reach of one another (and, with rotations, within
#: SHARE_TURN in Frobenius norm, about that many radians) share one screening of global starts:
#: the starts promising for one are promising for its neighbours. Not too far, though: where two
#: basins' distances cross, the basin that is about to become the closest can rank below the best
#: three screened for a target 5 % of the reach away (a take's frames then stayed 3-17 mm short of
#: what a solve of the frame alone finds).
SHARE_RADIUS = 0.02
#: Beyond reach, targets within this fraction of the reach of one another share one ranking of
#: stretched library poses (see BestEffort._stretched_gaps).
STRETCH_SHARE_RADIUS = 0.05
SHARE_TURN = 0.1
#: Beyond reach, along a row of targets next to one another (a take's frames), the global check runs
#: on probes this fraction of the reach apart along the targets' path (and at both ends of each
#: row); the targets between descend from the answers of the probes on either side. There the
#: global check had changed 57 of 1,184 answers (16 takes): the closest pose moves with the target
#: and rarely changes basin, so the probes' basins are the ones between them. Measured: on 48 takes
#: the answers were as near at 0.1 to 0.5 (0.2: 11-27 % faster); on rows of 240 targets around
#: random chains, 0.2 left 3 of 2,880 targets up to 1.1 mm short of a check of their own (a basin
#: closest over a few targets only), 0.1 none. Within reach the global check changes a third of
#: the missed frames' answers; probing them there lost 9 frames of the 16 takes.
FAR_PROBE_SPACING = 0.1
#: ... and every this many targets (a target that wanders about one place, or stands still).
FAR_PROBE_ROWS = 16
#: Iterations a take's follow pass gives each frame's descent from the frame before: it starts
#: next to its answer, and only decides which basin the frame keeps.
FOLLOW_DESCENT = 24
# Iterations that carry a jump's new basin back a frame (see BestEffort._back_to_tie): the frame
# before starts next to its answer there. Most jumps cannot move (the basins tied more than a
# frame earlier only where the follow lags), and an attempt that fails spends them all: on the
# bench's 16 takes 8 moved the same jumps as 24 but one, at a third of the cost.
_TIE_DESCENT = 8
# Damping shrinks by _DAMP_DOWN after a Gauss-Newton step that gains, and grows after one that
# gains nothing: by _DAMP_UP, and by twice the last factor after each further failure in a row
# (Nielsen's rule), up to _DAMP_FACTOR_MAX. From a start where the undamped step overshoots by
# radians (many variables frozen on their limits, the free ones ill-conditioned: a two-arm tree's
# swing rims), a fixed factor took longer to damp the step to size than the stall window gives the
# gradient trials' crawl: the descent stopped 0.034 mm short of its local minimum (a bench tree);
# with the growing factor the step is usable within the window.
_DAMP_UP, _DAMP_DOWN = 6.0, 3.0
_DAMP_FACTOR_MAX = 1e6
# Lengths of the projected gradient trials, as multiples of the linear model's line minimum:
# along a curved limit the projection shortens long steps, so they are tried too.
_GRADIENT_STEPS = np.array([30.0, 3.0, 0.3, 0.03])
# The global check's screening descents leave out the shortest: it gains only where a descent
# has nearly converged against a curved limit (it won 24 of about 16,000 screening steps on the
# bench's takes and the parity scenes), and a screen ranks starts, it certifies nothing. Two
# trials fewer out of ten, and the same answers on those takes.
_SCREEN_STEPS = _GRADIENT_STEPS[:-1]
# Beside them a pattern move: the step the descent made over its last _PATTERN_LAG iterations,
# taken _PATTERN_STRETCH times again. Along a curved valley (a chain bending against several
# limits at once) the slope and the Gauss-Newton model see only the next few tenths of a
# millimetre, while the path of the last iterations points down the valley (Hooke and Jeeves'
# pattern move).
_PATTERN_LAG = 4
_PATTERN_STRETCH = 2.0
# Screened answers this close in distance [m] and in the chart [rad or m] are one basin's.
_SAME_BASIN = 1e-5
_SAME_BASIN_STEP = 1e-2
# A round in which no trial gained shrinks the gradient trials' scale by this factor.
_REACH_SHRINK = _GRADIENT_STEPS[-1] ** 2
# A row whose trials all failed with gradient steps below this fraction of the line minimum (and
# heavy damping) is stationary: no feasible descent is left.
_REACH_MIN = 1e-7
# A global start stops when this many times its last gain, in every iteration left, would still
# leave it short of the local answer: descents gain less and less as they converge.
_CATCH_UP = 4.0
# A variable this close to a bound counts as resting on it [rad or m].
_ON_BOUND = 1e-9
# A swing ellipse with a semi-axis below this [rad] is a segment: its rim has no angle to follow.
_THIN_SWING = 1e-9
# A swing's quarter ellipse with a semi-axis at most this [rad] is flat (the projection's own zero).
_FLAT_SWING = 1e-12
_TURN = 2.0 * np.pi
# Batched sweeps of a take's follow pass before it goes run by run.
_FOLLOW_SWEEPS = 3
# Frames of a run of missed frames followed together from the frame before the run's front.
_FOLLOW_RUN = 24
# A frame the follow pass moved by more than this [rad or m, over all variables] has its successor
# followed again; smaller moves cannot carry a successor into another basin.
_FOLLOW_MOVE = 1e-2
#: A missed frame is followed only where some chart variable steps by more than this from the
#: frame before [rad or m]: a frame that continues its predecessor is already in its basin, and
#: where the closest poses form a family (a straight limb's twist), its own member, steered
#: smoothly by the pole, must not be traded for the predecessor's one frame after another.
FOLLOW_GAP = 0.1
#: Where the frame's own answer and the one carried on from the frame before are equally near
#: (two members of a family of closest poses), the own answer is kept unless it steps more than
#: this from the frame before [rad or m]: continuity is bought only where it avoids a pop, and a
#: lag it leaves behind is not carried down the rest of a run.
FOLLOW_TIE_STEP = 0.2


class BestEffort:
    """Local descent and global check of the best-effort problem for one solver's effectors.

    Args:
        skeleton: The skeleton.
        effector_ids: Effector indices, in the solver's order.
        mode: "position", "aim" or "full" (see :class:`~ik_core.solvers.base.Solver`).
        aim_axis: (3,) unit aim axis in the effector frame ("aim" mode).
        weights: (m,) square roots of the error rows' weights (a DLS solver's), or None.
        seed: Seed of the global check's start library (identical calls give identical results).
        held_joints: Joints whose variables the problem holds where each start has them (an arm's
            best effort given the spine that other effectors' targets set, see
            :meth:`~ik_core.solvers.base.Solver.leading_effectors`).
    """

    def __init__(
        self, skeleton: Skeleton, effector_ids: Sequence[int], mode: str, aim_axis: np.ndarray,
        weights: np.ndarray | None = None, seed: int = 0, held_joints: Sequence[int] = (),
    ) -> None:
        self.skeleton = skeleton
        self.mode = mode
        self.aim_axis = np.asarray(aim_axis, dtype=float)
        # The descent runs in box coordinates, where every limit is a range or a swing ellipse
        # and the projection is exact: its stationary points are the problem's, not artefacts of
        # projecting rotation vectors.
        self.chart = BoxChart(skeleton)
        self.model = EffectorModel(self.chart.skeleton, effector_ids)
        self._effector_ids = tuple(effector_ids)
        self._reach = ReachBound.of(skeleton, effector_ids)
        self._source_model = self.model if self.chart.identity else EffectorModel(skeleton, effector_ids)
        self._sqrt_w = None if weights is None or np.all(weights == 1.0) else np.asarray(weights, dtype=float)
        self._lo, self._hi = self.chart.lower.copy(), self.chart.upper.copy()
        if not self.chart.identity and len(self.chart.swing_starts):
            # A swing whose range on one side is nothing (a limit from 0 to some angle, common in
            # rigs) has a straight edge there, not an arc: the half-ellipse's flat side lies on
            # that variable's zero. As a bound of the box it is held by the active set and the
            # swing slides along the edge; as part of the rim the descent can only follow the
            # arc, whose angle barely moves the swing near the edge's ends (a crawl).
            S = np.array(self.chart.swing_starts, dtype=int)
            flat = np.asarray(self.chart.swing_axes, dtype=float) <= _FLAT_SWING
            self._lo[S[flat[:, 1]]] = 0.0
            self._hi[S[flat[:, 0]]] = 0.0
            self._lo[S[flat[:, 3]] + 1] = 0.0
            self._hi[S[flat[:, 2]] + 1] = 0.0
        # A range that is a single value is a locked axis: it never moves; nor does a held joint.
        held = np.isin(self.chart.variable_joint, np.asarray(held_joints, dtype=int))
        self._held = held if held.any() else None
        self._locked = (self._lo == self._hi) | held
        # First variable of each ball joint whose feasible set is not a box: the chart's swings,
        # or, where a limit has no box coordinates, the limited ball joints themselves.
        self._balls = list(self.chart.swing_starts) if not self.chart.identity else [
            int(skeleton.q_index[i]) for i, j in enumerate(skeleton.joints)
            if j.kind is JointKind.BALL and j.limit is not None and j.dof
        ]
        self._seed = seed
        # Swing pairs (chart variables s, s + 1) and the semi-axes of their quarter ellipses: a
        # swing that the descent presses onto its ellipse steps along the rim by its angle there.
        swings = not self.chart.identity and len(self.chart.swing_starts) > 0
        self._rim_starts = np.array(self.chart.swing_starts, dtype=int) if swings else None
        self._rim_axes = np.asarray(self.chart.swing_axes, dtype=float) if swings else None
        self._rims_wide = swings and bool(np.all(self._rim_axes > _THIN_SWING))
        self._library: tuple[np.ndarray, np.ndarray] | None = None
        # The library as the skeleton's configurations (built on first use beyond reach).
        self._library_poses: np.ndarray | None = None
        # Variables of rotating 1-DoF joints whose value a whole turn away is the same pose (not
        # sources of mimics, which would turn by their multiplier): a take keeps them on one turn.
        sources = {int(skeleton.mimic_source[i]) for i, j in enumerate(skeleton.joints) if j.mimic is not None}
        self._turning = np.array([
            int(skeleton.q_index[i]) for i, j in enumerate(skeleton.joints)
            if j.kind in (JointKind.REVOLUTE, JointKind.CONTINUOUS) and j.dof and i not in sources
        ], dtype=int)

    # --- the objective -------------------------------------------------------------------
    def residual(
        self, q: np.ndarray, tp: np.ndarray, tr: np.ndarray | None, jacobian: bool = True,
        model: EffectorModel | None = None,
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Error rows and their Jacobian.

        Args:
            q: (P, dof') chart configurations (see :attr:`chart`), or the skeleton's with ``model``.
            tp: (P, E, 3) target positions [m].
            tr: (P, E, 3, 3) target rotations, or None in position mode.
            jacobian: Also return the Jacobian.
            model: The effector model q belongs to (default: the chart's).

        Returns:
            e (P, m) errors (target minus effector) [m, rad] and de/dq's negative (P, m, dof)
            (the effector's Jacobian), or None.
        """
        model = self.model if model is None else model
        if jacobian:
            poses, J = model.poses_and_jacobians(q)
        else:
            poses, J = model.poses(q), None
        return self._errors(poses, tp, tr, J)

    def _errors(
        self, poses: np.ndarray, tp: np.ndarray, tr: np.ndarray | None, J: np.ndarray | None,
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Weighted error rows (P, m) and Jacobian (P, m, dof) or None of poses (P, E, 3, 4) and Jacobians (or None)."""
        P = len(poses)
        dp = tp - poses[..., 3]
        if self.mode == "position" or tr is None:
            e, Jr = dp, None if J is None else J[:, :, :3]
        elif self.mode == "full":
            w, _ = rotation_log(tr @ poses[..., :3].swapaxes(-1, -2))
            e, Jr = np.concatenate([dp, w.reshape(dp.shape)], axis=-1), J
        else:
            e, Jr, _ = aim_residual(poses, dp, tr @ self.aim_axis, J, self.aim_axis)
        # Rows counted, not inferred (-1): an empty batch has no size to infer them from.
        rows = math.prod(e.shape[1:])
        return self._weighted(e.reshape(P, rows), None if Jr is None else Jr.reshape(P, rows, Jr.shape[-1]))

    def _weighted(self, e: np.ndarray, J: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
        """Error rows and Jacobian scaled by the square roots of the row weights."""
        if self._sqrt_w is None:
            return e, J
        return e * self._sqrt_w, None if J is None else J * self._sqrt_w[:, None]

    def distances(self, q: np.ndarray, tp: np.ndarray, tr: np.ndarray | None) -> np.ndarray:
        """(P,) weighted distances [m, rad] of the skeleton's configurations q (P, dof) from their targets."""
        e = self.residual(q, tp, tr, jacobian=False, model=self._source_model)[0]
        return np.sqrt(np.add.reduce(e * e, -1))

    # --- local descent -------------------------------------------------------------------
    def descend(
        self, q: np.ndarray, tp: np.ndarray, tr: np.ndarray | None, tolerance: float = 0.0,
        max_iterations: int = MAX_DESCENT,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Descend from q to a local minimum of the distance inside the limits.

        Args:
            q: (P, dof) in-limit starts.
            tp: (P, E, 3) target positions [m].
            tr: (P, E, 3, 3) target rotations, or None.
            tolerance: A row whose distance falls to this stops at once [m].
            max_iterations: Cap on iterations (a row stops earlier when it stalls).

        Returns:
            (P, dof) configurations inside the limits, none farther than q, and (P,) their distances.
        """
        q = project_configuration(self.skeleton, np.array(q, dtype=float))
        x, d = self._descend(self.chart.to_chart(q), tp, tr, tolerance, max_iterations)
        return self._to_source(q, x, d, tp, tr)

    def _to_source(
        self, q: np.ndarray, x: np.ndarray, d: np.ndarray, tp: np.ndarray, tr: np.ndarray | None,
        slack: float = 0.0,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The skeleton's configurations of chart answers x, unless the starts q are nearer by more than ``slack``.

        A start the chart had to move (an Euler limit met only next to gimbal lock) keeps its
        own pose unless the descent found a nearer one.
        """
        if self.chart.identity:
            return x, d
        out = project_configuration(self.skeleton, self.chart.from_chart(x))
        d_out, d_q = self.distances(out, tp, tr), self.distances(q, tp, tr)
        keep = d_q < d_out - slack if slack > 0.0 else d_q <= d_out
        return np.where(keep[:, None], q, out), np.where(keep, d_q, d_out)

    def _descend(
        self, x: np.ndarray, tp: np.ndarray, tr: np.ndarray | None, tolerance: float = 0.0,
        max_iterations: int = MAX_DESCENT, beat: np.ndarray | None = None,
        gradient_steps: np.ndarray = _GRADIENT_STEPS, capped: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Descend from chart configurations x to a local minimum of the distance inside the limits.

        Each iteration freezes the variables resting on a bound that the descent direction
        pushes outward (and the locked ones), tries a damped Gauss-Newton step on the others,
        gradient steps of a few lengths and a pattern move (the last few iterations' step, taken
        again twice over), each projected onto the limits, and keeps the best if it shortens the
        distance.

        Args:
            x: (P, dof') in-limit chart configurations.
            tp: (P, E, 3) target positions [m].
            tr: (P, E, 3, 3) target rotations, or None.
            tolerance: A row whose distance falls to this stops at once [m].
            max_iterations: Cap on iterations (a row stops earlier when it stalls).
            beat: (P,) distances the rows are descended to get below [m] (a global start must
                beat the local answer to matter), or None. A row that stays above its mark
                by more than its recent gains could bring back in the iterations left stops.
            gradient_steps: Lengths of the projected gradient trials, as multiples of the
                linear model's line minimum.
            capped: (P,) set in place to True for the rows still descending when
                ``max_iterations`` ran out (not yet at a local minimum), or None.

        Returns:
            (P, dof') chart configurations inside the limits and (P,) their distances.
        """
        q = np.array(x, dtype=float)
        P, dof = q.shape
        e, J = self.residual(q, tp, tr)
        d = np.sqrt(np.add.reduce(e * e, -1))
        lam = np.full(P, 1e-3)
        damp_up = np.full(P, _DAMP_UP)  # each row's next growth factor (see _DAMP_FACTOR_MAX)
        d_mark = d.copy()
        idle = np.zeros(P, dtype=int)
        active = d > tolerance
        # What the last projection took off each row's step: the outward normal of the ball
        # limits the row is pressing on (where no chart gives them a rim to follow).
        slide = self._rim_axes is None and bool(self._balls)
        push = np.zeros((P, dof)) if slide else None
        # Scale of the gradient trials, shrunk after a round in which no trial gained.
        reach = np.ones(P)
        # An iteration runs on a few to a few hundred rows, where numpy's per-call overhead is
        # much of its cost: the bounds' margins are computed once, each row's state is gathered
        # once and scattered once, and the trials are written into one buffer.
        lo_margin, hi_margin = self._lo + _ON_BOUND, self._hi - _ON_BOUND
        diagonal = slice(None, None, dof + 1)
        sizes = len(gradient_steps)
        reps = 2 + 2 * sizes
        # Each row's configuration at the last _PATTERN_LAG iterations (slot k % _PATTERN_LAG: iteration k's).
        history = np.repeat(q[None], _PATTERN_LAG, axis=0)
        for iteration in range(max_iterations):
            rows = np.nonzero(active)[0]
            R = len(rows)
            if not R:
                break
            everyone = R == P
            # Read-only gathers: every row's state is read before any is written back.
            qr, er, Jr = (q, e, J) if everyone else (q[rows], e[rows], J[rows])
            d_before, lam_r, reach_r = d[rows], lam[rows], reach[rows]
            g = np.einsum("pmi,pm->pi", Jr, er)  # descent direction J^T e
            frozen = self._locked | ((qr <= lo_margin) & (g < 0)) | ((qr >= hi_margin) & (g > 0))
            free = ~frozen
            Jf = Jr * free[:, None, :]
            # A swing pressed onto its ellipse moves along the rim, by its angle there: a step in
            # the swing's own coordinates projected back onto the curved rim loses to the
            # curvature what the linear model promised, and the damping then grows without end.
            rim = None
            if self._rim_axes is not None:
                rim = self._pressed_rims(qr, g)
                if rim is not None:
                    self._along_rims(Jf, frozen, rim)
            elif slide:
                Jf = self._slide_on_ball_limits(push[rows], g, Jf)
            gf = np.einsum("pmi,pm->pi", Jf, er)
            A = np.einsum("pmi,pmj->pij", Jf, Jf)
            scale = np.maximum(np.einsum("pii->p", A) / dof, 1e-12)
            # A + lam scale I + frozen I, in place: adding 0.0 turns -0.0 into +0.0 off the
            # diagonal as adding the zeros of those identities did, so the solve sees the same bits.
            np.add(A, 0.0, out=A)
            A_diagonal = A.reshape(R, dof * dof)[:, diagonal]
            A_diagonal += (lam_r * scale)[:, None]
            A_diagonal += frozen
            dq = np.linalg.solve(A, gf[..., None])[..., 0]
            # Beside the damped Gauss-Newton step, projected gradient steps at a few lengths (the
            # linear model's line minimum and shorter): where the projection bends the Gauss-Newton
            # step off course, along a curved limit, a short gradient step still gains.
            Jg = np.einsum("pmi,pi->pm", Jf, gf)
            t0 = np.add.reduce(gf * gf, -1) / np.maximum(np.add.reduce(Jg * Jg, -1), 1e-300) * reach_r
            # The plain gradient too (box-frozen only): the projection alone decides how it slides.
            gp = g * free
            Jp = np.einsum("pmi,pi->pm", Jr, gp)
            tp0 = np.add.reduce(gp * gp, -1) / np.maximum(np.add.reduce(Jp * Jp, -1), 1e-300) * reach_r
            steps = np.empty((reps, R, dof))
            steps[0] = dq
            np.multiply(t0[None, :, None] * gradient_steps[:, None, None], gf[None], out=steps[1 : 1 + sizes])
            np.multiply(tp0[None, :, None] * gradient_steps[:, None, None], gp[None], out=steps[1 + sizes : -1])
            slot = history[iteration % _PATTERN_LAG]
            np.multiply(qr - (slot if everyone else slot[rows]), _PATTERN_STRETCH, out=steps[-1])
            slot[rows] = qr
            stepped = np.add(qr[None], steps)
            np.maximum(stepped, self._lo, out=stepped)
            np.minimum(stepped, self._hi, out=stepped)
            if rim is not None:
                # The Gauss-Newton step and the gradient steps of the rim model: their angle steps.
                self._step_along_rims(stepped[: 1 + sizes], steps[: 1 + sizes], rim)
            if self._held is not None:
                # Held variables stay put (a held swing pressed on its rim is otherwise re-set
                # from its angle there, and a held ball limit's slide is not frozen).
                stepped[:, :, self._held] = qr[:, self._held]
            stepped = stepped.reshape(-1, dof)
            trial = self.chart.project(stepped) if self._balls else stepped
            tpr = np.tile(tp[rows], (reps, 1, 1))
            trr = None if tr is None else np.tile(tr[rows], (reps, 1, 1, 1))
            # Poses of every trial, Jacobians only of the trials kept (one row in reps).
            poses_try, frames_try = self.model.poses_and_frames(trial)
            e_try = self._errors(poses_try, tpr, trr, None)[0]
            d_try = np.sqrt(np.add.reduce(e_try * e_try, -1)).reshape(reps, R)
            pick = np.argmin(d_try, axis=0)
            order = np.arange(R)
            flat = pick * R + order
            if slide:
                push[rows] = (stepped - trial)[flat]
            best = d_try[pick, order]
            # A step must gain beyond rounding: an optimum stays bit for bit what it was.
            gain_floor = d_before - 1e-12 * (1.0 + d_before)
            ok = best < gain_floor
            # The damping follows the Gauss-Newton trial's own success, whichever trial is kept: a
            # gradient trial that gains more says nothing of the Gauss-Newton model, and growing
            # the damping for it shrinks the Gauss-Newton steps to nothing (a crawl).
            newton = d_try[0] < gain_floor
            acc, kept = rows[ok], flat[ok]
            if len(kept):
                J_kept = self.model.jacobians_at(frames_try, kept)
                J[acc] = self._errors(poses_try[kept], tpr[kept], None if trr is None else trr[kept], J_kept)[1]
            d_r = np.where(ok, best, d_before)
            q[acc], e[acc], d[acc] = trial[kept], e_try[kept], d_r[ok]
            up_r = damp_up[rows]
            lam_r = np.where(newton, np.maximum(lam_r / _DAMP_DOWN, 1e-12), np.minimum(lam_r * up_r, 1e12))
            damp_up[rows] = np.where(newton, _DAMP_UP, np.minimum(2.0 * up_r, _DAMP_FACTOR_MAX))
            reach_r = np.where(ok, np.minimum(reach_r * 4.0, 1.0), reach_r * _REACH_SHRINK)
            lam[rows], reach[rows] = lam_r, reach_r
            # Progress is judged over a window: a descent that crawls along a curved limit gains
            # little per step but much in all, and must not be stopped for it.
            mark_r = d_mark[rows]
            progressed = mark_r - d_r >= STALL_GAIN
            d_mark[rows] = np.where(progressed, d_r, mark_r)
            idle_r = np.where(progressed, 0, idle[rows] + 1)
            idle[rows] = idle_r
            stationary = ~ok & (reach_r < _REACH_MIN) & (lam_r > 1.0)
            still = (d_r > tolerance) & (idle_r < _STALL_WINDOW) & ~stationary
            if beat is not None and iteration >= _STALL_WINDOW:
                # Hopeless: even gaining _CATCH_UP times this iteration's gain in every
                # iteration left would not bring the row below its mark.
                gained = d_before - d_r
                left = max_iterations - 1 - iteration
                still &= d_r - _CATCH_UP * gained * left <= beat[rows]
            active[rows] = still
        if capped is not None:
            capped[:] = active
        return q, d

    def _pressed_rims(
        self, x: np.ndarray, g: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The swings resting on their ellipse that the descent direction presses outward.

        Args:
            x: (R, dof') chart configurations.
            g: (R, dof') descent directions J^T e.

        Returns:
            (rows, pairs, angles), each (K,): the row, the swing pair and its angle on the
            ellipse [rad] (the swing is (a cos, b sin) of it) of each pressed swing; None when
            no swing is pressed. Thin ellipses (a semi-axis near 0) are left to the projection.
        """
        S, U = self._rim_starts, self._rim_starts + 1
        w, u = x[:, S], x[:, U]
        a, b = quadrant_semi_axes(w, u, self._rim_axes)
        if self._rims_wide:
            sa, sb = a, b  # no thin ellipse: the masks below would keep every swing
        else:
            wide = (a > _THIN_SWING) & (b > _THIN_SWING)
            sa, sb = np.where(wide, a, 1.0), np.where(wide, b, 1.0)
        on_rim = (w / sa) ** 2 + (u / sb) ** 2 >= 1.0 - 1e-9
        # The descent points outward where it has a positive part along the rim's normal.
        pressing = w / (sa * sa) * g[:, S] + u / (sb * sb) * g[:, U] > 0.0
        rows, pairs = np.nonzero(on_rim & pressing if self._rims_wide else wide & on_rim & pressing)
        if not len(rows):
            return None
        angles = np.arctan2(u[rows, pairs] / sb[rows, pairs], w[rows, pairs] / sa[rows, pairs])
        return rows, pairs, angles

    def _along_rims(self, J: np.ndarray, frozen: np.ndarray, rim: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
        """Turn each pressed swing's pair of J (R, m, dof') and frozen (R, dof') into its rim angle, in place.

        The pair's first column becomes the derivative along the angle, (-a sin, b cos) of
        the two columns; the second is frozen. ``rim`` from :meth:`_pressed_rims`.
        """
        rows, pairs, angles = rim
        S = self._rim_starts[pairs]
        cos, sin = np.cos(angles), np.sin(angles)
        a, b = quadrant_semi_axes(cos, sin, self._rim_axes[pairs])
        J[rows, :, S] = J[rows, :, S] * (-a * sin)[:, None] + J[rows, :, S + 1] * (b * cos)[:, None]
        J[rows, :, S + 1] = 0.0
        frozen[rows, S + 1] = True

    def _step_along_rims(
        self, stepped: np.ndarray, steps: np.ndarray, rim: tuple[np.ndarray, np.ndarray, np.ndarray],
    ) -> None:
        """Trials (T, R, dof') with each pressed swing moved along its rim by the angle step in its first variable."""
        rows, pairs, angles = rim
        S = self._rim_starts[pairs]
        turned = angles[None] + steps[:, rows, S]
        cos, sin = np.cos(turned), np.sin(turned)
        a, b = quadrant_semi_axes(cos, sin, self._rim_axes[pairs])
        stepped[:, rows, S], stepped[:, rows, S + 1] = a * cos, b * sin

    def _slide_on_ball_limits(self, push: np.ndarray, g: np.ndarray, J: np.ndarray) -> np.ndarray:
        """J with each ball joint's columns confined to its limit's tangent plane where the descent leaves it.

        A ball joint pressing on its limit (the last step's projection took ``push`` off it)
        whose descent direction ``g`` still points outward may only slide along the boundary:
        its three columns lose the component along the push. Without this the projected step
        fights the limit and the descent crawls.

        Args:
            push: (P, dof) what the last projection removed from each row's step.
            g: (P, dof) descent directions J^T e.
            J: (P, m, dof) Jacobians (a copy is returned when changed).

        Returns:
            (P, m, dof) Jacobians.
        """
        for s in self._balls:
            n = push[:, s : s + 3]
            depth = np.sqrt(np.add.reduce(n * n, -1))
            blocked = (depth > 1e-12) & (np.add.reduce(n * g[:, s : s + 3], -1) > 0)
            if not blocked.any():
                continue
            J = J.copy()
            rows = np.nonzero(blocked)[0]
            n = n[rows] / depth[rows, None]
            Jb = J[rows][:, :, s : s + 3]
            J[rows, :, s : s + 3] = Jb - (Jb @ n[:, :, None]) * n[:, None, :]
        return J

    # --- the global check ----------------------------------------------------------------
    def library(self) -> tuple[np.ndarray, np.ndarray]:
        """(L, dof') seeded in-limit chart configurations and (L, E, 3) their effector positions [m].

        Uniform in the chart's box (the limits' own coordinates), so the samples fill the
        feasible set instead of piling up where a projection puts them.
        """
        if self._library is None:
            rng = np.random.default_rng(self._seed)
            lo = np.where(np.isfinite(self._lo), self._lo, -np.pi)
            hi = np.where(np.isfinite(self._hi), self._hi, np.pi)
            u = lo + (hi - lo) * rng.random((LIBRARY_SIZE, len(lo)))
            # Unlimited ball joints: rotation vectors uniform in direction, angle up to pi.
            chart = self.chart.skeleton
            for i, joint in enumerate(chart.joints):
                s = chart.q_index[i]
                if joint.kind is JointKind.BALL and joint.dof and s not in self.chart.swing_starts:
                    v = rng.normal(size=(LIBRARY_SIZE, 3))
                    v *= (np.pi * rng.random(LIBRARY_SIZE) ** (1 / 3) / np.linalg.norm(v, axis=1))[:, None]
                    u[:, s : s + 3] = v
            configs = self.chart.project(u)
            self._library = (configs, self.model.poses(configs)[..., 3])
        return self._library

    def library_poses(self) -> np.ndarray:
        """(L, dof) the library (see :meth:`library`) as the skeleton's configurations, inside the limits."""
        if self._library_poses is None:
            configs, _ = self.library()
            self._library_poses = project_configuration(self.skeleton, self.chart.from_chart(configs))
        return self._library_poses

    def improve(
        self, q: np.ndarray, q_warm: np.ndarray, tp: np.ndarray, tr: np.ndarray | None, tolerance: float,
        starts: int = GLOBAL_STARTS, beyond: np.ndarray | None = None,
    ) -> np.ndarray:
        """The best effort for each target: q descended, then checked against global starts.

        Targets beyond reach that lie next to one another in order (a take's frames) are checked
        on probes (see :meth:`_far_probes`); each target between two probes keeps the nearest of its
        own descent and descents from the two probes' answers.

        Args:
            q: (P, dof) a solver's answers (inside the limits).
            q_warm: (P, dof) the warm starts (ties among global answers go to the nearest).
            tp: (P, E, 3) target positions [m].
            tr: (P, E, 3, 3) target rotations, or None.
            tolerance: Distance at which a target counts as reached [m].
            starts: Global starts per target (0: local descent only).
            beyond: (P,) targets beyond their effector's reach (see the global check's range),
                or None.

        Returns:
            (P, dof) configurations inside the limits, never farther from the targets than q.
        """
        if starts <= 0 or beyond is None or np.count_nonzero(beyond) < 3:
            return self._checked(q, q_warm, tp, tr, tolerance, starts, beyond)
        q = np.asarray(q, dtype=float)
        q_warm = np.broadcast_to(np.asarray(q_warm, dtype=float), q.shape)
        far = np.flatnonzero(beyond)
        probe, before, after = self._far_probes(tp[far], None if tr is None else tr[far])
        checked = np.ones(len(q), dtype=bool)
        checked[far[~probe]] = False
        out = np.empty_like(q)
        rows = np.flatnonzero(checked)
        out[rows] = self._checked(q[rows], q_warm[rows], tp[rows], None if tr is None else tr[rows], tolerance,
                                  starts, beyond[rows])
        # Probes next to one another share their screening (see _checked): where the best basin
        # changes between two probes, the one past the change can keep its leader's basin while the
        # probe after it finds the new one (a limited 5-bone chain: 1.6 mm farther than its own check).
        # Each probe also descends from the answers of the probes either side.
        ends = far[probe]
        if len(ends) > 1:
            side = None if tr is None else tr[ends]
            out[ends] = self._from_probes(out[ends], q_warm[ends], tp[ends], side, tolerance,
                                          out[np.r_[ends[0], ends[:-1]]], out[np.r_[ends[1:], ends[-1]]])
        between = ~probe
        if between.any():
            rows = far[between]
            out[rows] = self._from_probes(
                q[rows], q_warm[rows], tp[rows], None if tr is None else tr[rows], tolerance,
                out[far[before[between]]], out[far[after[between]]],
            )
        return out

    def _far_probes(self, tp: np.ndarray, tr: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The probes among targets beyond reach, in order, and each target's probes before and after it.

        The probes are the leaders of :meth:`_leaders` at ``FAR_PROBE_SPACING`` (a target further
        than that from the last one), the first and last target of each row (a row breaks where a
        target is not within that of the one before, every effector, and its rotations within
        SHARE_TURN where the mode has them), and every ``FAR_PROBE_ROWS``-th target.

        Args:
            tp: (F, E, 3) target positions [m], in order.
            tr: (F, E, 3, 3) target rotations, or None.

        Returns:
            (F,) which targets are probes; (F,) for each target, the index of the probe at or
            before it and of the probe at or after it, in the same row.
        """
        n = len(tp)
        index = np.arange(n)
        probe = (self._leaders(tp, tr, FAR_PROBE_SPACING) == index) | (index % FAR_PROBE_ROWS == 0)
        spacing = FAR_PROBE_SPACING * float(self._reach.lengths.max(initial=0.0))
        breaks = np.any(np.linalg.norm(tp[1:] - tp[:-1], axis=-1) > spacing, axis=-1)
        if tr is not None:
            breaks |= np.any(np.linalg.norm(tr[1:] - tr[:-1], axis=(-2, -1)) > SHARE_TURN, axis=-1)
        probe[:-1] |= breaks  # each row's last target
        probe[1:] |= breaks  # and first
        probe[-1] = True
        before = np.maximum.accumulate(np.where(probe, index, 0))
        after = np.minimum.accumulate(np.where(probe, index, n - 1)[::-1])[::-1]
        return probe, before, after

    def _from_probes(
        self, q: np.ndarray, q_warm: np.ndarray, tp: np.ndarray, tr: np.ndarray | None, tolerance: float,
        before: np.ndarray, after: np.ndarray,
    ) -> np.ndarray:
        """Targets between two probes: the nearest of q descended and the probes' answers descended.

        Args:
            q: (P, dof) the solver's answers (inside the limits).
            q_warm: (P, dof) the warm starts.
            tp: (P, E, 3) target positions [m].
            tr: (P, E, 3, 3) target rotations, or None.
            tolerance: Distance at which a target counts as reached [m].
            before: (P, dof) the answers of the probes before the targets.
            after: (P, dof) the answers of the probes after them.

        Returns:
            (P, dof) configurations inside the limits, each a local minimum no farther from its
            target than q; a probe's basin only where it is nearer by more than SWITCH_MARGIN.
        """
        q = project_configuration(self.skeleton, np.array(q, dtype=float))
        x, d = self._descend(self.chart.to_chart(q), tp, tr, tolerance)
        P = len(q)
        # Both probes' answers descended in one batch; a descent that cannot beat the target's own
        # answer by SWITCH_MARGIN stops early.
        starts = self.chart.to_chart(project_configuration(self.skeleton, np.concatenate([before, after])))
        xp, dp = self._descend(starts, np.concatenate([tp, tp]), None if tr is None else np.concatenate([tr, tr]),
                               tolerance, beat=np.tile(d - SWITCH_MARGIN, 2))
        for part in (slice(0, P), slice(P, 2 * P)):
            better = dp[part] < d - SWITCH_MARGIN
            x[better], d[better] = xp[part][better], dp[part][better]
        return self._finish(q, x, d, tp, tr, q_warm)

    def _checked(
        self, q: np.ndarray, q_warm: np.ndarray, tp: np.ndarray, tr: np.ndarray | None, tolerance: float,
        starts: int, beyond: np.ndarray | None,
    ) -> np.ndarray:
        """:meth:`improve` with every open target checked against its own global starts."""
        q = project_configuration(self.skeleton, np.array(q, dtype=float))
        # Rows whose answer's descent ran out of iterations still descending: a long valley's
        # floor, which one more descent reaches (see _finish_capped).
        capped = np.zeros(len(q), dtype=bool)
        q_local, d_local = self._descend(self.chart.to_chart(q), tp, tr, tolerance, capped=capped)
        if starts <= 0:
            return self._finish_capped(q, q_local, d_local, capped, tp, tr, tolerance, q_warm)
        open_rows = np.nonzero(d_local > tolerance)[0]
        if not len(open_rows):
            return self._finish_capped(q, q_local, d_local, capped, tp, tr, tolerance, q_warm)
        configs, positions = self.library()
        k = min(starts, len(configs))
        # Nearest library effectors (summed over effectors) to each open target.
        gap = np.add.reduce(np.add.reduce((positions[None] - tp[open_rows][:, None]) ** 2, -1), -1)
        if beyond is not None and beyond[open_rows].any():
            far = np.flatnonzero(beyond[open_rows])
            if len(self._effector_ids) == 1 and tr is None:
                # Targets next to one another share one row of stretched gaps: beyond reach many
                # library poses stretch to within rounding of the same distance, so which of
                # them rank first is arbitrary, and a neighbour's best are as near as its own
                # (measured on takes' neighbouring frames: equal but on a few frames of one take,
                # up to 0.36 mm there).
                lead = self._leaders(tp[open_rows[far]], None, STRETCH_SHARE_RADIUS)
                heads = np.unique(lead)
                gap[far] = self._stretched_gaps(tp[open_rows[far[heads]]])[np.searchsorted(heads, lead)]
            else:
                gap[far] = self._radial_gaps(positions, tp[open_rows[far]])
        pick = np.argpartition(gap, k - 1, axis=1)[:, :k]
        if beyond is not None:
            # A target beyond reach keeps its local answer unless some start's effector, moved
            # out to the target's distance, lies within GLOBAL_RANGE of its distance: no library
            # pose points its way, and descents from those would rarely end nearer.
            nearest = np.sqrt(np.take_along_axis(gap, pick, axis=1).min(axis=1))
            worth = ~beyond[open_rows] | (nearest < GLOBAL_RANGE * d_local[open_rows])
            open_rows, pick, gap = open_rows[worth], pick[worth], gap[worth]
            if not len(open_rows):
                return self._finish_capped(q, q_local, d_local, capped, tp, tr, tolerance, q_warm)
        # Targets next to one another (a take's neighbouring frames) share one screening: each
        # row finishes from the most promising starts screened for its leader's target.
        leader = self._leaders(tp[open_rows], None if tr is None else tr[open_rows])
        inside = np.ones(len(open_rows), dtype=bool) if beyond is None else ~beyond[open_rows]
        leaders = np.unique(leader)
        screened = self._screen(
            configs[pick[leaders]], tp[open_rows[leaders]], None if tr is None else tr[open_rows[leaders]],
            inside[leaders], tolerance,
        )
        keep = min(FINISHED_STARTS, screened.shape[1])
        Xq = screened[np.searchsorted(leaders, leader), :keep]
        # A leader finishes from its `keep` best screened basins; a follower from its leader's best
        # one and from its own nearest library pose (a basin its leader's screening passed over may
        # be its best). Slots per row: the leader's `keep`, then the follower's own.
        n = len(open_rows)
        follower = np.flatnonzero(leader != np.arange(n))
        nearest = np.argmin(np.take_along_axis(gap, pick, axis=1), axis=1)
        used = np.zeros((n, keep + 1), dtype=bool)
        used[:, :keep] = True
        used[follower, 1:keep] = False
        used[follower, keep] = True
        candidates = np.empty((n, keep + 1, Xq.shape[-1]))
        candidates[:, :keep] = Xq
        candidates[follower, keep] = configs[pick[follower, nearest[follower]]]
        slot_row, slot = np.nonzero(used)
        rep = open_rows[slot_row]
        # A finishing start that cannot come nearer than the local answer by SWITCH_MARGIN stops early.
        mark = d_local[rep] - SWITCH_MARGIN
        done_capped = np.zeros(len(rep), dtype=bool)
        done_q, done_d = self._descend(
            candidates[slot_row, slot], tp[rep], None if tr is None else tr[rep], tolerance, beat=mark,
            capped=done_capped,
        )
        Xq, Xd = np.zeros((n, keep + 1, done_q.shape[-1])), np.full((n, keep + 1), np.inf)
        Xq[slot_row, slot], Xd[slot_row, slot] = done_q, done_d
        Xc = np.zeros((n, keep + 1), dtype=bool)
        Xc[slot_row, slot] = done_capped
        best_d = Xd.min(axis=1)
        # Among near-ties of the best, the one nearest the warm start.
        near = Xd <= best_d[:, None] + STALL_GAIN
        # Only the rows checked need the warm starts in chart coordinates.
        warm = np.asarray(q_warm, dtype=float)[open_rows]
        warm_x = self.chart.to_chart(project_configuration(self.skeleton, warm))
        step = np.where(near, np.linalg.norm(Xq - warm_x[:, None], axis=-1), np.inf)
        choice = np.argmin(step, axis=1)
        d_open = d_local[open_rows]
        better = (best_d < d_open - SWITCH_MARGIN) | ((best_d <= tolerance) & (d_open > tolerance))
        rows = open_rows[better]
        q_local[rows] = Xq[better, choice[better]]
        d_local[rows] = best_d[better]
        capped[rows] = Xc[better, choice[better]]
        return self._finish_capped(q, q_local, d_local, capped, tp, tr, tolerance, q_warm)

    def _finish_capped(
        self, q: np.ndarray, x: np.ndarray, d: np.ndarray, capped: np.ndarray, tp: np.ndarray,
        tr: np.ndarray | None, tolerance: float, q_warm: np.ndarray,
    ) -> np.ndarray:
        """:meth:`_finish` after one more descent of the answers whose descent was ``capped`` (P,) still descending.

        MAX_DESCENT caps work that progresses: a closest pose at the end of a long valley (a large
        residual, where each iteration gains a few percent of what is left) can take more. On a
        bench tree the answer its global check found still had 0.027 mm to gain, against the
        certificate's 0.01 mm; a second descent from it gets there and stalls.
        """
        again = np.flatnonzero(capped & (d > tolerance))
        if len(again):
            x_more, d_more = self._descend(x[again], tp[again], None if tr is None else tr[again], tolerance)
            nearer = d_more < d[again]
            x[again[nearer]], d[again[nearer]] = x_more[nearer], d_more[nearer]
        return self._finish(q, x, d, tp, tr, q_warm)

    def _screen(
        self, starts: np.ndarray, tp: np.ndarray, tr: np.ndarray | None, inside: np.ndarray, tolerance: float
    ) -> np.ndarray:
        """Short descents from each target's starts, and from starts spread over the library for targets within reach.

        A tree's most promising starts are descended on for ``_TREE_SCREEN_ROUNDS`` more rounds.

        Args:
            starts: (P, k, dof') chart configurations per target (its nearest library poses).
            tp: (P, E, 3) target positions [m].
            tr: (P, E, 3, 3) target rotations, or None.
            inside: (P,) targets within reach (they get the SPREAD_STARTS too).
            tolerance: Distance at which a target counts as reached [m].

        Returns:
            (P, S, dof') screened chart configurations, per row one per basin first (see
            :meth:`_distinct_order`), nearest first; slots not screened last.
        """
        configs, _ = self.library()
        P, k = starts.shape[:2]
        use = np.ones((P, k), dtype=bool)
        if SPREAD_STARTS and len(configs) >= SPREAD_STARTS:
            spread = configs[np.arange(SPREAD_STARTS) * (len(configs) // SPREAD_STARTS)]
            starts = np.concatenate([starts, np.broadcast_to(spread, (P, *spread.shape))], axis=1)
            use = np.concatenate([use, np.broadcast_to(inside[:, None], (P, SPREAD_STARTS))], axis=1)
        row, slot = np.nonzero(use)
        sq, sd = self._descend(starts[row, slot], tp[row], None if tr is None else tr[row], tolerance, SCREEN_DESCENT,
                               gradient_steps=_SCREEN_STEPS)
        Xq, Xd = np.zeros((*use.shape, sq.shape[-1])), np.full(use.shape, np.inf)
        Xq[row, slot], Xd[row, slot] = sq, sd
        if len(self._effector_ids) > 1:
            # A tree's closest pose can lie at the end of a long valley: the starts that lead there
            # are still far behind the quick basins' after one screen and overtake them only after
            # three (a bench tree's: its five starts among 56 ranked 12th-49th after 12 iterations,
            # 1st and 2nd after 36). The most promising go on, fewer each round, ranked by where
            # each would be after one more round at its last round's gain: a start still descending
            # fast beats one that has settled a little nearer. On 102 out-of-limit target pairs of
            # 56 bench trees (seeds 0-6) the answers within 1 mm of the optimum went from 100 to
            # 102, for 29 % more time on those targets; 32 starts instead of 48 missed one again.
            outlook = Xd.copy()
            for survivors in _TREE_SCREEN_ROUNDS:
                if Xd.shape[1] <= survivors:
                    break
                best = np.argsort(outlook, axis=1, kind="stable")[:, :survivors]
                row, slot = np.nonzero(np.isfinite(np.take_along_axis(outlook, best, axis=1)))
                slot = best[row, slot]
                sq, sd = self._descend(Xq[row, slot], tp[row], None if tr is None else tr[row], tolerance,
                                       SCREEN_DESCENT, gradient_steps=_SCREEN_STEPS)
                outlook[:] = np.inf
                outlook[row, slot] = 2.0 * sd - Xd[row, slot]
                Xq[row, slot], Xd[row, slot] = sq, sd
        return np.take_along_axis(Xq, self._distinct_order(Xq, Xd)[..., None], axis=1)

    @staticmethod
    def _distinct_order(x: np.ndarray, d: np.ndarray) -> np.ndarray:
        """(L, S) per row, the slots ordered one per basin first, nearest first.

        Screened starts often settle together: on a take's frame the best three of sixteen were
        one pose. An answer within _SAME_BASIN of a nearer one, in distance and in the chart,
        counts as that one again and ranks after every distinct one.

        Args:
            x: (L, S, dof') screened chart configurations.
            d: (L, S) their distances [m, or m and rad together] (inf: a slot not screened).
        """
        order = np.argsort(d, axis=1, kind="stable")
        xs = np.take_along_axis(x, order[..., None], axis=1)
        ds = np.take_along_axis(d, order, axis=1)
        finite = np.isfinite(ds)
        level = np.where(finite, ds, 0.0)
        close = (np.abs(level[:, :, None] - level[:, None, :]) <= _SAME_BASIN) & finite[:, :, None] & finite[:, None, :]
        close &= np.sqrt(np.add.reduce((xs[:, :, None] - xs[:, None, :]) ** 2, -1)) <= _SAME_BASIN_STEP
        again = np.tril(close, -1).any(axis=2) | ~finite  # a nearer slot holds the same answer
        return np.take_along_axis(order, np.argsort(again, axis=1, kind="stable"), axis=1)

    def _stretched_gaps(self, tp: np.ndarray) -> np.ndarray:
        """(F, L) squared distances of a lone effector's far targets to the library poses stretched toward them.

        Beyond reach the closest pose is a stretched one; a library pose whose chain, turned
        link by link to point at the target (:func:`~.reach.stretch_toward`, within the
        limits), comes nearest is a start in the best pose's basin more often than one whose
        effector merely points the target's way (a bent pose's effector direction says little
        of where its stretched chain points).

        Args:
            tp: (F, 1, 3) target positions [m].
        """
        q = self.library_poses()
        F, L = len(tp), len(q)
        targets = np.broadcast_to(tp[:, None, 0], (F, L, 3)).reshape(F * L, 3)
        turned = stretch_toward(
            self.skeleton, np.broadcast_to(q[None], (F, L, q.shape[1])).reshape(F * L, -1), self._effector_ids[0],
            targets,
        )
        reached = self._source_model.poses(turned)[:, 0, :, 3]
        return np.add.reduce((reached - targets) ** 2, -1).reshape(F, L)

    def _radial_gaps(self, positions: np.ndarray, tp: np.ndarray) -> np.ndarray:
        """(F, L) squared gaps (summed over effectors) of targets beyond reach to library poses pointing their way.

        Beyond reach the closest pose is a stretched one, so the promising starts are the
        library poses whose effectors point where the target lies from the effector's base
        point, not those nearest it (all of them far short of it): each library effector is
        moved out along its ray from the base to the target's distance before measuring.

        Args:
            positions: (L, E, 3) library effector positions [m].
            tp: (F, E, 3) target positions [m].
        """
        rel_t = tp - self._reach.bases
        rel_p = positions - self._reach.bases
        radius = np.sqrt(np.add.reduce(rel_t * rel_t, -1))  # (F, E)
        length = np.maximum(np.sqrt(np.add.reduce(rel_p * rel_p, -1)), 1e-12)  # (L, E)
        moved = rel_p[None] * (radius[:, None] / length[None])[..., None]  # (F, L, E, 3)
        return np.add.reduce(np.add.reduce((moved - rel_t[:, None]) ** 2, -1), -1)

    def _leaders(self, tp: np.ndarray, tr: np.ndarray | None, share: float = SHARE_RADIUS) -> np.ndarray:
        """(P,) for each target, the index of the earlier target whose global screening it shares.

        In order, a target within ``share`` of the chain's reach (every effector, and its
        rotation within SHARE_TURN where the mode has one) of the current leader's follows it;
        another leads.

        Args:
            tp: (P, E, 3) target positions [m].
            tr: (P, E, 3, 3) target rotations, or None.
            share: Fraction of the chain's reach.
        """
        radius = share * float(self._reach.lengths.max(initial=0.0))
        leader = np.arange(len(tp))
        current = 0
        for i in range(1, len(tp)):
            close = np.all(np.linalg.norm(tp[i] - tp[current], axis=-1) <= radius)
            if close and tr is not None:
                close = np.all(np.linalg.norm(tr[i] - tr[current], axis=(-2, -1)) <= SHARE_TURN)
            if close:
                leader[i] = current
            else:
                current = i
        return leader

    def jump_note(self, loss: float) -> str:
        """What a missed frame's reason adds where the closest pose jumps; ``loss`` from :meth:`follow`."""
        unit = "m" if self.mode == "position" else "(m and rad together)"
        return (
            f"the closest pose jumps here: the frame before's pose carried on ends {loss:.3g} {unit} "
            "farther from the target"
        )

    def joints_on_limit(self, q: np.ndarray) -> list[int]:
        """Indices of the skeleton's joints whose limits a pose (dof,) rests on, in joint order."""
        return self.joints_on_limit_rows(np.asarray(q, dtype=float)[None])[0]

    def joints_on_limit_rows(self, q: np.ndarray) -> list[list[int]]:
        """For each pose of q (P, dof), the indices of the joints whose limits it rests on, in joint order."""
        x = self.chart.to_chart(project_configuration(self.skeleton, np.asarray(q, dtype=float)))
        on = self.chart.on_limit(x)
        joints = self.chart.variable_joint
        return [sorted({int(j) for j in joints[row]}) for row in on]

    def follow(
        self, q: np.ndarray, tp: np.ndarray, tr: np.ndarray | None, missed: np.ndarray, tolerance: float,
    ) -> tuple[np.ndarray, np.ndarray]:
        """A take's missed frames, in order, each descended from the answer of the frame before.

        Frames solved together (a batch of a take) each start from a guess, not from the frame
        before, and where the closest poses form a family or two basins tie, neighbours land
        apart: a pop the target never asked for. Each missed frame that steps more than
        FOLLOW_GAP away from its predecessor is descended from the predecessor's final answer,
        which replaces its answer unless that answer is nearer the target by more than
        SWITCH_MARGIN: a frame whose best pose really lies elsewhere keeps it. Frames that
        continue their predecessor are left as they are, so a family of closest poses steered
        smoothly (a straight limb's twist following its pole) keeps its own members. Last, every
        missed frame is descended on to a local minimum where that keeps it next to its
        neighbours (:meth:`_to_local_minima`).

        Args:
            q: (N, dof) the take's answers, inside the limits, in frame order.
            tp: (N, E, 3) target positions [m].
            tr: (N, E, 3, 3) target rotations, or None.
            missed: (N,) frames to follow (the first frame has no predecessor and is kept).
            tolerance: Distance at which a target counts as reached [m].

        Returns:
            (N, dof) configurations inside the limits, none farther than SWITCH_MARGIN beyond q's,
            and (N,) how much farther [m, rad] the frame before carried on ends than the frame's
            own answer, on the frames where the closest pose jumps (a frame that still steps more
            than FOLLOW_GAP because carrying its predecessor on loses more than SWITCH_MARGIN,
            that jump then moved back to where its new basin first comes nearer, see
            :meth:`_back_to_tie`); 0 elsewhere.
        """
        q = project_configuration(self.skeleton, np.array(q, dtype=float))
        x = self.chart.to_chart(q)
        rows = np.flatnonzero(missed)
        rows = rows[rows > 0]
        # Distances only for the frames that may be followed (the others are never changed).
        d = np.zeros(len(q))
        if len(rows):
            e = self.residual(x[rows], tp[rows], None if tr is None else tr[rows], jacobian=False)[0]
            d[rows] = np.sqrt(np.add.reduce(e * e, -1))
        # What carrying each followed frame's predecessor on costs, from its latest follow.
        loss = np.zeros(len(q))
        follows = np.zeros(len(q) + 1, dtype=bool)
        follows[rows] = True
        # Batched sweeps first (each frame from its predecessor as the sweep found it), then run
        # by run where a change still has to travel down a run of missed frames (see
        # _follow_run). Only frames that step away from their predecessor are followed.
        pending = self._gapped(rows, x)
        for _ in range(_FOLLOW_SWEEPS):
            if not len(pending):
                break
            changed = self._follow_rows(pending, x, d, tp, tr, tolerance, loss)
            pending = self._gapped(changed[follows[changed + 1]] + 1, x)
        work = sorted(int(i) for i in pending)
        while work:
            i = work.pop(0)
            for j in self._follow_run(i, x, d, tp, tr, tolerance, loss, follows):
                if j in work:
                    work.remove(j)
                work.append(j)
        jumps = np.zeros(len(q))
        jumped = self._gapped(rows[loss[rows] > SWITCH_MARGIN], x)
        jumps[jumped] = loss[jumped]
        for i in jumped:
            self._back_to_tie(int(i), x, d, tp, tr, tolerance, jumps, follows)
        self._to_local_minima(rows, x, d, tp, tr, tolerance)
        out = q.copy()
        if len(rows):
            out[rows] = self._to_source(
                q[rows], x[rows], d[rows], tp[rows], None if tr is None else tr[rows], slack=SWITCH_MARGIN
            )[0]
        return self.unwrap(out), jumps

    def _to_local_minima(
        self, rows: np.ndarray, x: np.ndarray, d: np.ndarray, tp: np.ndarray, tr: np.ndarray | None,
        tolerance: float,
    ) -> None:
        """Frames ``rows``' answers descended on to local minima where they stay next to their neighbours, in place.

        A carried answer's descent stops after FOLLOW_DESCENT iterations once it is within
        SWITCH_MARGIN of the frame's own answer, and a frame the follow left alone may come from
        a pass whose descent was cut too: on the bench's 48 takes 42 of 7,289 missed frames were
        not local minima (a descent from them still gained up to 0.52 mm), against the
        certificate every answer carries. All of them within reach are descended on in one batch;
        a frame takes its descent where it comes nearer and steps from neither neighbour (in
        order, the frame before as already settled) further than it did, or than FOLLOW_GAP: a
        descent that slides down a family of near-tied poses does not become a pop.

        Args:
            rows: (R,) frames to descend, in increasing order.
            x: (N, dof') the take's chart configurations (updated in place).
            d: (N,) their distances [m, rad] (updated in place).
            tp: (N, E, 3) target positions [m].
            tr: (N, E, 3, 3) target rotations, or None.
            tolerance: Distance at which a target counts as reached [m].
        """
        # Targets beyond reach keep their bounded polish (a frame beyond reach costs no more than one
        # in reach): a stretched pose moved on would have the reached frame after it retried from
        # there, on a robot's take onto another IK branch.
        if len(rows):
            rows = rows[self._reach.excess(tp[rows]).max(axis=-1) <= tolerance]
        if not len(rows):
            return
        x_fin, d_fin = self._descend(x[rows], tp[rows], None if tr is None else tr[rows], tolerance)
        nearer = np.flatnonzero(d_fin < d[rows])
        for k in nearer:
            i = int(rows[k])
            stays = True
            for j in (i - 1, i + 1):
                if 0 <= j < len(x):
                    was = np.abs(x[i] - x[j]).max()
                    stays &= np.abs(x_fin[k] - x[j]).max() <= max(was, FOLLOW_GAP)
            if stays:
                x[i], d[i] = x_fin[k], d_fin[k]

    def _back_to_tie(
        self, i: int, x: np.ndarray, d: np.ndarray, tp: np.ndarray, tr: np.ndarray | None, tolerance: float,
        jumps: np.ndarray, follows: np.ndarray,
    ) -> None:
        """Move the jump into frame i back to the frame where its new basin first comes nearer, in place.

        The follow keeps the frame before's basin until the new one is nearer by SWITCH_MARGIN,
        so the jump lands a frame or two after the two basins tie, where the closest pose itself
        no longer jumps. Carried backward, frame by frame, the new basin replaces each missed
        frame it brings nearer its target (by more than STALL_GAIN) while it stays within
        FOLLOW_GAP of the frame after: the jump then falls where the closest pose jumps, and
        every frame it passes comes nearer. Updates x, d and jumps (the jump's loss moves with it).

        Args:
            i: A frame the follow left jumping from its predecessor.
            x: (N, dof') the take's chart configurations.
            d: (N,) their distances [m, rad].
            tp: (N, E, 3) target positions [m].
            tr: (N, E, 3, 3) target rotations, or None.
            tolerance: Distance at which a target counts as reached [m].
            jumps: (N,) the losses of the frames where the closest pose jumps.
            follows: (N + 1,) frames that may be followed.
        """
        j = i
        while j > 1 and follows[j - 1]:
            here = np.array([j - 1])
            x_new, d_new = self._carried(here, self._own_held(x[j : j + 1], x[here]), tp, tr, d, tolerance, slack=0.0,
                                         iterations=_TIE_DESCENT)
            if np.abs(x_new[0] - x[j]).max() > FOLLOW_GAP:
                break
            if not d_new[0] < d[j - 1] - STALL_GAIN:
                if d_new[0] > d[j - 1] + SWITCH_MARGIN:
                    break
                # Short of the frame's own answer but within the margin: a carry its few iterations
                # cut short may still come nearer (a tree's hand left 1.6 mm off a target the new
                # basin reaches, the sum 0.012 mm farther). Finished before it is given up.
                x_new, d_new = self._descend(x_new, tp[here], None if tr is None else tr[here], tolerance)
                if not (d_new[0] < d[j - 1] - STALL_GAIN and np.abs(x_new[0] - x[j]).max() <= FOLLOW_GAP):
                    break
            # The probe wins: descended on to a local minimum (the certificate every answer
            # carries), unless that slides it away from the frame after.
            x_fin, d_fin = self._descend(x_new, tp[here], None if tr is None else tr[here], tolerance)
            if d_fin[0] <= d_new[0] and np.abs(x_fin[0] - x[j]).max() <= FOLLOW_GAP:
                x_new, d_new = x_fin, d_fin
            # Frame j - 1 joins the new basin: the jump is now into it, and carrying the old
            # basin on there loses what the move gained.
            jumps[j - 1], jumps[j] = d[j - 1] - d_new[0], 0.0
            x[j - 1], d[j - 1] = x_new[0], d_new[0]
            j -= 1

    def _follow_rows(
        self, rows: np.ndarray, x: np.ndarray, d: np.ndarray, tp: np.ndarray, tr: np.ndarray | None,
        tolerance: float, loss: np.ndarray,
    ) -> np.ndarray:
        """Frames ``rows`` descended from their predecessors' x in one batch; updates x, d and loss, returns the moved.

        ``loss`` gets, per frame, how much farther the descent from the predecessor ends than
        the frame's own answer (0 where it is as near).
        """
        x_new, d_new = self._carried(rows, self._own_held(x[rows - 1], x[rows]), tp, tr, d, tolerance)
        return rows[self._settle(rows, x_new, d_new, x, d, loss)]

    def _follow_run(
        self, i: int, x: np.ndarray, d: np.ndarray, tp: np.ndarray, tr: np.ndarray | None, tolerance: float,
        loss: np.ndarray, follows: np.ndarray,
    ) -> list[int]:
        """Frame i and the missed frames after it followed from frame i - 1 in one batch; returns those left to follow.

        Following a run of missed frames one frame at a time costs one descent call per frame.
        The run's next _FOLLOW_RUN frames are instead all descended from the answer of the frame
        before i in one batch, and settled in order as a frame-by-frame follow would: each
        frame's answer stands while it continues its (settled) predecessor within FOLLOW_GAP,
        and the run goes on only where the frame moved. The first frame whose carried answer
        steps away, or the frame after the batch, is returned to be followed from its settled
        predecessor.

        Args:
            i: The first frame (its predecessor is settled).
            x: (N, dof') the take's chart configurations (updated in place).
            d: (N,) their distances [m, rad] (updated in place).
            tp: (N, E, 3) target positions [m].
            tr: (N, E, 3, 3) target rotations, or None.
            tolerance: Distance at which a target counts as reached [m].
            loss: (N,) see :meth:`_follow_rows` (updated in place).
            follows: (N + 1,) frames that may be followed.

        Returns:
            The frames to follow next: [] when the run ends.
        """
        run = [i]
        while len(run) < _FOLLOW_RUN and follows[run[-1] + 1]:
            run.append(run[-1] + 1)
        rows = np.array(run)
        starts = self._own_held(np.repeat(x[i - 1 : i], len(rows), axis=0), x[rows])
        x_new, d_new = self._carried(rows, starts, tp, tr, d, tolerance)
        for k, j in enumerate(run):
            here = rows[k : k + 1]
            steps_away = k and np.abs(x_new[k] - x[j - 1]).max() > FOLLOW_GAP
            if k and (steps_away or not self._wins(here, x_new[k], d_new[k], x, d)[0]):
                # Carried from too far back (it steps away, or its descent from there ends short of
                # the frame's own answer): follow the frame from its own predecessor instead.
                return [j]
            moved = self._settle(here, x_new[k : k + 1], d_new[k : k + 1], x, d, loss)
            if not moved[0] or not follows[j + 1] or not len(self._gapped(np.array([j + 1]), x)):
                return []
        return [run[-1] + 1]

    def _own_held(self, starts: np.ndarray, own: np.ndarray) -> np.ndarray:
        """Chart starts (R, dof') carried from other frames, with the held variables of the frames' own x (R, dof')."""
        if self._held is None:
            return starts
        starts = starts.copy()
        starts[:, self._held] = own[:, self._held]
        return starts

    def _carried(
        self, rows: np.ndarray, starts: np.ndarray, tp: np.ndarray, tr: np.ndarray | None, d: np.ndarray,
        tolerance: float, slack: float = SWITCH_MARGIN, iterations: int = FOLLOW_DESCENT,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Frames ``rows``' answers carried on from chart configurations ``starts`` (R, dof'), and their distances.

        A lone position effector also starts from ``starts`` stretched toward the target by the
        smallest turns: beyond reach the best pose is the straight chain, and the twists about
        it (which move nothing) stay where the start had them. Of the near-best answers (within
        STALL_GAIN) the one nearest its start is kept. ``iterations`` bounds each descent; one
        that cannot come within ``slack`` of the frame's own distance ``d`` stops early.
        """
        R = len(rows)
        all_starts, reps = starts, rows
        if len(self._effector_ids) == 1 and tr is None:
            far = np.flatnonzero(self._reach.excess(tp[rows]).max(axis=-1) > tolerance)
            if len(far):
                prev = self.chart.from_chart(starts[far])
                turned = stretch_toward(self.skeleton, prev, self._effector_ids[0], tp[rows[far], 0])
                # Stretching turns the whole path: the held joints go back where the start had them.
                all_starts = np.concatenate([starts, self._own_held(self.chart.to_chart(turned), starts[far])])
                reps = np.concatenate([rows, rows[far]])
        # A carried pose that cannot come within ``slack`` (SWITCH_MARGIN: what continuity may
        # cost) of the frame's own answer is not taken: its descent stops once it cannot get
        # there (its loss is then where it stopped).
        xs_all, ds_all = self._descend(
            all_starts, tp[reps], None if tr is None else tr[reps], tolerance, iterations,
            beat=d[reps] + slack,
        )
        # (2, R) candidates per frame; a frame with no stretched start repeats its first.
        xs = np.stack([xs_all[:R], xs_all[:R]])
        ds = np.stack([ds_all[:R], ds_all[:R]])
        if len(reps) > R:
            xs[1, far], ds[1, far] = xs_all[R:], ds_all[R:]
        near = ds <= ds.min(axis=0) + STALL_GAIN
        gap = np.linalg.norm(xs - starts[None], axis=-1)
        pick = np.argmin(np.where(near, gap, np.inf), axis=0)
        return xs[pick, np.arange(R)], ds[pick, np.arange(R)]

    def _settle(
        self, rows: np.ndarray, x_new: np.ndarray, d_new: np.ndarray, x: np.ndarray, d: np.ndarray,
        loss: np.ndarray,
    ) -> np.ndarray:
        """Carried answers (R, dof') and distances (R,) of frames ``rows`` taken where they win; (R,) which moved.

        Continuity wins unless the frame's own answer is nearer by more than SWITCH_MARGIN, the
        same balance of closeness and continuity as the global check's. Updates x, d and loss.
        """
        take = self._wins(rows, x_new, d_new, x, d)
        loss[rows] = np.maximum(d_new - d[rows], 0.0)
        moved = take & (np.linalg.norm(x_new - x[rows], axis=-1) > _FOLLOW_MOVE)
        x[rows[take]], d[rows[take]] = x_new[take], d_new[take]
        return moved

    @staticmethod
    def _wins(rows: np.ndarray, x_new: np.ndarray, d_new: np.ndarray, x: np.ndarray, d: np.ndarray) -> np.ndarray:
        """(R,) where carried answers x_new (R, dof') at distances d_new (R,) replace frames ``rows``' own.

        See :meth:`_settle`.
        """
        own_step = np.abs(x[rows] - x[rows - 1]).max(axis=1)
        tie = np.abs(d_new - d[rows]) <= STALL_GAIN
        return (d_new <= d[rows] + SWITCH_MARGIN) & ~(tie & (own_step <= FOLLOW_TIE_STEP))

    @staticmethod
    def _gapped(rows: np.ndarray, x: np.ndarray) -> np.ndarray:
        """The frames of ``rows`` whose chart configuration steps by more than FOLLOW_GAP from the frame before."""
        if not len(rows):
            return rows
        return rows[np.abs(x[rows] - x[rows - 1]).max(axis=1) > FOLLOW_GAP]

    def unwrap(self, q: np.ndarray) -> np.ndarray:
        """A take's configurations (N, dof), rotating joints moved by whole turns nearest the frame before."""
        out = np.array(q, dtype=float)
        if len(out) < 2:
            return out
        lo, hi = self.skeleton.lower, self.skeleton.upper
        for c in self._turning:
            if hi[c] - lo[c] < _TURN - 2.0 * _ON_BOUND:
                continue  # no other turn of any angle fits the range
            value = out[:, c]
            # Turns nearest the frame before, as a running sum of each step's nearest turns.
            turns = np.concatenate([[0.0], np.cumsum(np.round((value[:-1] - value[1:]) / _TURN))])
            moved = value + turns * _TURN
            if np.all((moved >= lo[c] - _ON_BOUND) & (moved <= hi[c] + _ON_BOUND)):
                out[:, c] = np.clip(moved, lo[c], hi[c])
                continue
            # A range of a turn or a few: a frame whose nearest turn leaves it stays nearer inside.
            column = out[:, c : c + 1]
            for i in range(1, len(out)):
                column[i] = self._nearest_turns_of(column[i], column[i - 1], lo[c : c + 1], hi[c : c + 1])
        return out

    def _finish(
        self, q: np.ndarray, x: np.ndarray, d: np.ndarray, tp: np.ndarray, tr: np.ndarray | None,
        q_warm: np.ndarray,
    ) -> np.ndarray:
        """The answers x as the skeleton's configurations, each rotating joint on the turn nearest its warm start."""
        out = self._to_source(q, x, d, tp, tr)[0]
        return self._nearest_turns(out, np.broadcast_to(np.asarray(q_warm, dtype=float), out.shape))

    def _nearest_turns(self, out: np.ndarray, warm_q: np.ndarray) -> np.ndarray:
        """``out`` (P, dof) with each rotating joint moved by whole turns nearest ``warm_q`` (P, dof), in its range."""
        if not len(self._turning):
            return out
        cols = self._turning
        out[:, cols] = self._nearest_turns_of(
            out[:, cols], warm_q[:, cols], self.skeleton.lower[cols], self.skeleton.upper[cols]
        )
        return out

    @staticmethod
    def _nearest_turns_of(value: np.ndarray, warm: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Angles ``value`` moved by whole turns nearest ``warm`` where the range [lo, hi] holds them (broadcast)."""
        k = np.round((warm - value) / _TURN)
        best = value
        gap = np.abs(value - warm)
        # The same angle a whole turn up or down, where the range holds it, if nearer the warm start.
        for shift in (k - 1.0, k, k + 1.0):
            moved = value + shift * _TURN
            fits = (moved >= lo - _ON_BOUND) & (moved <= hi + _ON_BOUND)
            nearer = fits & (np.abs(moved - warm) < gap)
            best = np.where(nearer, moved, best)
            gap = np.where(nearer, np.abs(moved - warm), gap)
        return np.clip(best, lo, hi)
