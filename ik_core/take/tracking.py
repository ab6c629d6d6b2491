# SPDX-License-Identifier: GPL-3.0-or-later
"""Solving a chain over a take: world-space samples to the chain's base frame, frame by frame."""

from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np

from ..errors import InvalidInputError, require_finite
from ..limits import free_directions
from ..model.kinematics import effector_poses
from ..model.poles import chain_root, turn_poles
from ..solvers.base import IKResult, Solver
from ..solvers.best_effort import GLOBAL_STARTS
from ..solvers.dls.solver import DLSSolver
from .steps import joint_steps, take_steps


def to_base_frame(base: np.ndarray, world: np.ndarray) -> np.ndarray:
    """Express world transforms in per-frame base frames.

    Args:
        base: (N, 4, 4) world matrices of the base frame (may carry a uniform scale).
        world: (N, 4, 4) world transforms.

    Returns:
        (N, 4, 4) ``inv(base) @ world``.
    """
    return np.linalg.solve(base, world)


# A change of velocity between consecutive frames above this fraction of max_jump ends a segment.
_ACCELERATION = 0.25
# Task rows per effector of each solver mode (an aim leaves the spin about the axis free).
_MODE_ROWS = {"position": 3, "aim": 5, "full": 6}


def _task_rows(solver: Solver) -> int:
    """Task rows of a solver's effectors.

    A skeleton whose limits leave it more directions (:func:`~ik_core.limits.free_directions`) is
    redundant: a 7-joint arm with one joint locked has a 6-joint arm's branches, not a self-motion,
    and so does a 6-joint arm with a fully locked ball joint between two of its links.
    """
    return _MODE_ROWS.get(solver.mode, 6) * len(solver.effector_ids)


def _frame_options(options: dict, index: int | slice | np.ndarray) -> dict:
    return {k: v[index] for k, v in options.items()}


def solve_track(
    solver: Solver,
    targets: np.ndarray,
    q0: np.ndarray | None = None,
    max_jump: float = 0.1,
    progress=None,
    segment: int = 32,
    look_ahead: bool = False,
    starts: np.ndarray | None = None,
    **options: np.ndarray,
) -> IKResult:
    """Solve a take in batched segments, each warm-started from the previous one, then repair.

    Frames are solved ``segment`` at a time in one batch, frame k of a segment starting from
    the last solved frame of the segment before (the first from ``q0``) moved on k frames at
    that frame's velocity. Batches make a bake fast (numpy's cost is per call, not per frame),
    and short segments keep each frame close to its start so the answer stays on the same IK
    branch over a long path. Solvers that take a ``radius`` option (:class:`DLSSolver`) solve
    frame k inside a box of k times ``max_jump`` around its start first, without restarts,
    which keeps it on the start's branch. The frames the segments miss get their best effort
    under the limits together after the last segment
    (:meth:`~ik_core.solvers.base.Solver.finish_missed`, each from its segment's start): one
    global check for the take, not one per segment. On non-redundant chains a converged frame
    whose velocity changes by more than a quarter of ``max_jump`` from the frame before (a likely
    switch between branches that meet at a singularity) ends its segment, and the next
    segment starts from the frame before it. Frames that did not converge, or whose
    configuration jumps by more than ``max_jump`` from the previous frame, are solved again in
    order, warm-started from the previous frame (box ``max_jump``), and the better answer is
    kept; a missed frame without restarts (the batch spent them), and in a run of misses only
    a few retries in a row (see ``_retry_frames``). A sudden jump between reached frames
    that the retries leave (the family of poses followed, an IK branch or a self-motion, ends
    at a limit while another reaches the frames around it) is carried back: the frames before
    it solved backward from the frame after, replacing them from where that family joins the
    take with no larger step (see ``_carry_back``). On a redundant chain with a
    :class:`DLSSolver`, a take left with jumps or misses is solved again from a little before
    the first of them by a receding horizon
    (:func:`~ik_core.take.horizon.horizon_pass`: windows optimised for smooth joint motion
    and a limit barrier before their first frames are kept, so the self-motion moves ahead of
    near-singularities and limits instead of whipping or jumping there), kept when it has
    fewer jumps and misses no more frames. With a :class:`DLSSolver`, jumps left then are
    repaired with look-ahead (:func:`~ik_core.take.smoothing.spread_jumps`): a window around each is re-posed from the
    joint-space blend of its neighbours by Gauss-Newton on joint smoothness plus a growing
    task weight, and kept only if it has fewer jumps and misses no more frames. Frames that
    cannot be reached are reported (``converged`` False with a reason), not raised. Last, each
    missed frame is kept in the basin of the frame before where that is as near
    (:meth:`~ik_core.solvers.base.Solver.follow_missed`), and the reached frame after a run
    that pass moved is retried from the run's last frame (see ``_follow``).

    Frames whose target lies beyond the chain's reach (:meth:`~ik_core.solvers.base.Solver.reach_excess`
    above the tolerance) cost bounded work: the frame-by-frame passes skip them (segments keep
    their frame numbers, predictions span the frames skipped), the look-ahead repairs see them
    at the joint-space blend of the frames around them, and then they get the solver's best
    effort (a chain stretched toward the target) in one batch, each from that blend. No retry,
    restart or repair spends work on them.

    Args:
        solver: Any solver.
        targets: (N, ...) per-frame targets as accepted by ``solver.solve``.
        q0: (dof,) start pose; ``None`` uses the solver's preferred pose.
        max_jump: Largest change of any variable between consecutive frames [rad or m] that is
            accepted without a warm-started retry (> 0).
        progress: Optional ``progress(done, total)`` callback.
        segment: Frames per batch (>= 1).
        look_ahead: Run the look-ahead repairs (DLS only) on a take the frame-by-frame passes
            left with jumps: several times slower on such takes, for offline bakes that
            want every jump gone that can be.
        starts: (N, dof) a start for every frame instead of the frame before, or None. A chain
            at partial influence starts each frame from its pose without IK, as Blender's IK
            solver does: at influence 0 that pose is the answer, and it moves as its keys move.
            Each frame is solved within one ``max_jump`` of its start first, and a reached frame
            keeps the answer its start leads to (no retry for a jump); only missed frames are
            retried, from the frame before.
        **options: Per-frame solver options with a leading N axis (for example ``pole``).

    Returns:
        An :class:`IKResult` of batch shape (N,).

    Raises:
        InvalidInputError: ``segment`` < 1 or ``max_jump`` not > 0, or what ``solver.solve``
            raises for bad targets.
    """
    if segment < 1:
        raise InvalidInputError(f"segment must be >= 1, got {segment}")
    if not (np.isfinite(max_jump) and max_jump > 0):
        raise InvalidInputError(f"max_jump must be a finite number > 0 [rad or m], got {max_jump!r}")
    n = len(targets)
    solver = _for_takes(solver)
    if starts is not None:
        starts = np.asarray(starts, dtype=float)
        if starts.shape != (n, solver.skeleton.dof):
            raise InvalidInputError(f"starts must be (N, dof) = ({n}, {solver.skeleton.dof}), got {starts.shape}")
        require_finite("starts", starts)
    beyond = solver.reach_excess(targets) > solver.tolerance if n else np.zeros(0, dtype=bool)
    if not beyond.any() or beyond.all():
        result = _track(solver, targets, q0, max_jump, progress, segment, look_ahead, options, starts=starts)
        # Missed frames of a batch each started from a guess: give them their predecessor's basin.
        return _follow(solver, targets, result, max_jump, options, starts is not None)
    # No retry or restart brings a target beyond reach nearer: track the other frames, then
    # give those their best effort together.
    inside, outside = np.flatnonzero(~beyond), np.flatnonzero(beyond)
    inner_progress = None if progress is None else (lambda done, _total: progress(int(inside[done - 1]) + 1, n))
    inner = _track(
        solver, targets[inside], q0, max_jump, inner_progress, segment, False, _frame_options(options, inside),
        frames=inside, starts=None if starts is None else starts[inside],
    )
    fields = {}
    for f in IKResult.__dataclass_fields__:
        value = np.asarray(getattr(inner, f))
        fields[f] = np.zeros((n, *value.shape[1:]), dtype=value.dtype)
        fields[f][inside] = value
    # Meanwhile the frames beyond reach hold the joint-space blend of the frames around them,
    # reaching their own pose there: the take's motion, with no jump into or out of them and
    # no miss, so that the repairs look at the take's own jumps only.
    fields["q"] = interpolate_gaps(fields["q"], beyond)
    fields["converged"][outside] = True
    fields["reason"][outside] = "converged"
    held = np.array(targets, dtype=float)
    poses = effector_poses(solver.skeleton, fields["q"][outside], list(solver.effector_ids))
    held[outside] = (poses if held.shape[-2:] == (4, 4) else poses[..., :3, 3]).reshape(held[outside].shape)
    if look_ahead and isinstance(solver, DLSSolver) and "radius" in solver.call_options and n > 2:
        fields = _repair_jumps(solver, held, fields, q0, max_jump, segment, options)
    far_starts = fields["q"][outside] if starts is None else starts[outside]
    far = solver.solve(targets[outside], far_starts, **_frame_options(options, outside))
    for f in fields:
        fields[f][outside] = np.asarray(getattr(far, f))
    if progress is not None:
        progress(n, n)
    # On a redundant chain the reached frame after a run beyond reach was tracked from the run's
    # blend, not from the stretched answer the run has now, and its self-motion may continue
    # that answer: it is checked against it (see _follow). A chain without self-motion keeps the
    # branch its reached frames track (a stretched pose may lie on any).
    after_far = None
    if free_directions(solver.skeleton) > _task_rows(solver):
        after_far = np.zeros(n, dtype=bool)
        after_far[1:] = beyond[:-1] & ~beyond[1:]
    return _follow(solver, targets, IKResult(**fields), max_jump, options, starts is not None, after_far)


def _follow(solver: Solver, targets: np.ndarray, result: IKResult, max_jump: float, options: dict,
            own_starts: bool, reposed: np.ndarray | None = None) -> IKResult:
    """The take's missed frames followed, then each reached frame after a run the follow pass moved retried from it.

    The follow pass is :meth:`~ik_core.solvers.base.Solver.follow_missed`; a reached frame is
    retried where it now jumps, whips or, on a redundant chain, steps more than ``_POP_STEP``
    (see ``_retry_frames``). The retries ran before the follow pass, against the missed frames'
    batch answers: a reached frame after a run the follow pass carried into another basin would
    step from it as far as the two basins lie apart, where a solve from it steps as little as
    the target moves. ``reposed`` (N,) flags more such frames: those after a run posed after
    them (the frames beyond reach), or None. A retry that hands a missed run a new predecessor
    has that run followed again and the reached frame after it checked again, up to
    ``_FOLLOW_ROUNDS`` rounds.
    """
    followed = solver.follow_missed(targets, result)
    n = len(result.q)
    if own_starts or n < 2:
        return followed
    before = result
    for _ in range(_FOLLOW_ROUNDS):
        moved = np.any(followed.q != before.q, axis=-1)
        check = np.zeros(n, dtype=bool)
        check[1:] = moved[:-1] & ~moved[1:] & followed.converged[1:]
        if reposed is not None:
            check |= reposed & followed.converged
            reposed = None
        if not check.any():
            return followed
        fields = {f: np.array(getattr(followed, f)) for f in IKResult.__dataclass_fields__}
        _retry_frames(solver, targets, fields, max_jump, _boxed(solver, options), options, check=check)
        retried = IKResult(**fields)
        # A retried run that ends where another missed run begins hands it a new predecessor;
        # the reached frame after that run is then checked again, in the next round.
        changed = np.any(retried.q != followed.q, axis=-1)
        if not np.any(changed[:-1] & ~retried.converged[1:]):
            return retried
        before, followed = retried, solver.follow_missed(targets, retried)
    return followed


# Rounds of follow and retry a take's missed runs and the reached frames after them get: a retry
# hands the missed run after it a new predecessor, whose follow moves the reached frame after it.
_FOLLOW_ROUNDS = 3


def _boxed(solver: Solver, options: dict) -> bool:
    """Whether the take's solves keep each frame inside a box around its start (a ``radius`` the caller left free)."""
    return "radius" in solver.call_options and "radius" not in options


def interpolate_gaps(values: np.ndarray, gap: np.ndarray) -> np.ndarray:
    """A copy of per-frame values with the frames ``gap`` interpolated linearly between the frames around them.

    A gap at the start or the end of the take holds the nearest frame outside it.

    Args:
        values: (N, ...) per-frame values (configurations, positions).
        gap: (N,) True for the frames to replace; at least one frame must be False.

    Returns:
        The values, of the same shape, with the gap frames replaced.
    """
    out = np.array(values, dtype=float)
    frames = np.arange(len(out))
    kept, fill = frames[~gap], frames[gap]
    after = np.minimum(np.searchsorted(kept, fill), len(kept) - 1)
    before = np.maximum(after - (kept[after] > fill), 0)
    a, b = kept[before], kept[after]
    w = np.where(b > a, (fill - a) / np.maximum(b - a, 1), 0.0).reshape(-1, *([1] * (out.ndim - 1)))
    out[fill] = (1.0 - w) * out[a] + w * out[b]
    return out


def _track(
    solver: Solver, targets: np.ndarray, q0: np.ndarray | None, max_jump: float, progress, segment: int,
    look_ahead: bool, options: dict, frames: np.ndarray | None = None, starts: np.ndarray | None = None,
) -> IKResult:
    """:func:`solve_track`'s passes over a take (arguments validated).

    ``frames`` (N,) are the increasing frame numbers of the targets in the whole take when
    some frames were taken out (None: 0 .. N-1): segments then span the same frame numbers,
    and predictions the same times, as they would in the whole take, so the frames kept are
    solved from the starts they would have had. ``starts`` (N, dof): each frame's own start
    (see :func:`solve_track`), or None.
    """
    n = len(targets)
    frames = np.arange(n) if frames is None else np.asarray(frames)
    start = solver.skeleton.preferred_q if q0 is None else np.asarray(q0, dtype=float)
    # Solvers with a local mode keep each frame inside a box around its start: frame k of a
    # segment may move k times max_jump, so no frame drifts far onto another IK branch.
    local = _boxed(solver, options)
    # On redundant chains the self-motion changes speed on its own: only cut the others.
    rows = _task_rows(solver)
    redundant = free_directions(solver.skeleton) > rows
    cut_at = np.inf if redundant else _ACCELERATION * max_jump
    parts: list[IKResult] = []
    # The segments' missed frames get their best effort together after the last segment (one
    # global check for the take instead of one per segment), each from its segment's start.
    quick = solver.deferring_best_effort()
    warm: list[np.ndarray] = []
    velocity = np.zeros_like(start)
    prev_ok = True
    start_frame = -1  # frame number of ``start`` (the warm start comes before the first frame)
    window = 0  # first frame number of the next segment
    lo = 0
    while lo < n:
        # Windows stay aligned on ``segment`` frames across a stretch with no frame in them.
        window += segment * max((int(frames[lo]) - window) // segment, 0)
        hi = lo + int(np.searchsorted(frames[lo:], window + segment))
        steps = frames[lo:hi] - start_frame
        # Frames with their own start stay within one frame's jump of it.
        extra = {"radius": max_jump * (steps if starts is None else np.ones_like(steps))} if local else {}
        # Each frame starts from the last frame moved on at its velocity: where two branches
        # meet at a singularity, the prediction lies on the branch the motion continues on (the
        # last frame alone is as near to both), and nearer starts need fewer iterations.
        # Extrapolating is for solvers that then search a box around the guess (DLS's radius);
        # a closed-form or geometric solver only uses its start to pick between solutions. A
        # redundant chain's velocity is zero (see _velocity).
        if starts is not None:
            guess = starts[lo:hi]
        else:
            guess = start + steps[:, None] * velocity if local else start
        part = quick.solve(targets[lo:hi], guess, **_frame_options(options, slice(lo, hi)), **extra)
        # A frame whose velocity changes abruptly has likely switched branch where two meet
        # (two elbow or wrist branches near a singularity lie within max_jump of each other):
        # keep the frames before it and start the next segment there, from its predecessor.
        gaps = np.diff(frames[lo:hi], prepend=start_frame)[:, None]
        dq = np.diff(np.concatenate([start[None], part.q]), axis=0) / gaps
        accel = np.max(np.abs(np.diff(np.concatenate([velocity[None], dq]), axis=0)), axis=-1)
        ok = part.converged & np.concatenate([[prev_ok], part.converged[:-1]])
        cut = np.flatnonzero(ok[1:] & (accel[1:] > cut_at))
        if len(cut):
            keep = int(cut[0]) + 1
            part = IKResult(**{f: getattr(part, f)[:keep] for f in IKResult.__dataclass_fields__})
            hi = lo + keep
            window = int(frames[hi - 1]) + 1
        else:
            window += segment
        parts.append(part)
        warm.append(guess[: len(part.q)] if np.ndim(guess) == 2 else np.broadcast_to(guess, part.q.shape))
        prev_q, prev_frame = (part.q[-2], int(frames[hi - 2])) if len(part.q) > 1 else (start, start_frame)
        last_pair_ok = bool(part.converged[-1]) and (bool(part.converged[-2]) if len(part.q) > 1 else prev_ok)
        start, prev_ok, start_frame = part.q[-1], bool(part.converged[-1]), int(frames[hi - 1])
        velocity = _velocity(start, prev_q, last_pair_ok and not redundant, max_jump, start_frame - prev_frame)
        lo = hi
        if progress is not None:
            progress(hi, n)
    if not parts:
        return solver.solve(targets, q0, **options)
    result = IKResult(**{f: np.concatenate([getattr(p, f) for p in parts]) for f in IKResult.__dataclass_fields__})
    if quick is not solver:
        result = solver.finish_missed(targets, np.concatenate(warm), result)
    fields = {f: np.array(getattr(result, f)) for f in IKResult.__dataclass_fields__}
    _retry_frames(solver, targets, fields, max_jump, local, options, frames=frames, own_starts=starts is not None)
    # (The look-ahead repairs own the jumps where they run: a robot's take searches them anyway.)
    if local and starts is None and not look_ahead and not solver.ruled_self_motion and n > 2:
        _carry_back(solver, targets, fields, max_jump, options, frames)
    if look_ahead and isinstance(solver, DLSSolver) and local and n > 2:
        fields = _repair_jumps(solver, targets, fields, q0, max_jump, segment, options)
    return IKResult(**fields)


def _repair_jumps(
    solver: DLSSolver, targets: np.ndarray, fields: dict, q0: np.ndarray | None, max_jump: float, segment: int,
    options: dict,
) -> dict:
    """:func:`solve_track`'s look-ahead repairs of the jumps the frame-by-frame passes left; returns the fields.

    ``fields`` (IKResult fields over the take) may be updated in place or replaced.
    """
    rows = _task_rows(solver)
    skeleton = solver.skeleton

    def steps_of(qs: np.ndarray) -> np.ndarray:
        return np.concatenate([[0.0], joint_steps(skeleton, qs[:-1], qs[1:])])

    # Jumps the frame-by-frame passes left (a redundant arm's self-motion whipped past a
    # near-singularity, or a branch kept past the singularity where the path crossed over):
    # the take is known in advance, so the motion is spread over a window around each.
    from ..model.skeleton import JointKind
    from .smoothing import spread_jumps

    known = None if q0 is None else np.asarray(q0, dtype=float)
    searched = None
    # (Grids hold single variables: chains of 1-DoF joints, as robot arms are. A locked axis is
    # no variable to search: an arm with one locked joint has the branches, or the self-motion,
    # of the arm of one joint fewer.)
    one_dof = all(j.kind is not JointKind.BALL for j in skeleton.joints)
    free = free_directions(solver.skeleton)
    if free in (rows, rows + 1) and one_dof and not options:
        # Search the solutions around each jump (a global choice, where the frame-by-frame
        # passes only ever see the frame before): with one redundant variable its
        # self-motion, without one the IK branches. A take it leaves smooth is done;
        # otherwise the passes below start from the frame-by-frame answer, and the search
        # comes back to what they leave.
        from .branch_search import track_branches
        from .repair import search_repair
        from .steps import jump_score

        search = track_branches if free == rows else None

        def track_rest(rest: np.ndarray, q_start: np.ndarray) -> IKResult:
            return solve_track(solver, rest, q_start, max_jump=max_jump, segment=segment)

        searched = {f: v.copy() for f, v in fields.items()}
        search_repair(solver, targets, searched, known, max_jump, track_rest, search)
        searched_score = jump_score(skeleton, searched["q"], known, max_jump)
        if searched_score[0] == 0:
            return _smooth_fields(solver, targets, searched, known, max_jump)
    spread_jumps(solver, targets, fields, known, max_jump, steps_of, options)
    # What spreading could not fix on a redundant chain (a self-motion that drifted onto a
    # limit long before the jump): solve the take again from before it, looking ahead.
    if free > rows:
        _look_ahead(solver, targets, fields, known, max_jump, options, steps_of)
    if searched is not None and jump_score(skeleton, fields["q"], known, max_jump)[0]:
        search_repair(solver, targets, fields, known, max_jump, track_rest, search)
        if searched_score < jump_score(skeleton, fields["q"], known, max_jump):
            fields = searched
        # A small step the searches left where the path passes a branch point: spread it.
        if jump_score(skeleton, fields["q"], known, max_jump)[0]:
            spread_jumps(solver, targets, fields, known, max_jump, steps_of, options)
    return fields if options else _smooth_fields(solver, targets, fields, known, max_jump)


def _smooth_fields(solver: DLSSolver, targets: np.ndarray, fields: dict, known: np.ndarray | None,
                   max_jump: float) -> dict:
    """A look-ahead take's fields with its joint motion smoothed over frames (see :func:`.repair.smooth_take`).

    Each frame was solved to within the tolerance from the frame before, so a robot's joints
    wobble inside that band from frame to frame (a change of step of 0.007 rad/frame^2 on the
    99th-worst frame of a UR5 bench take, 0.012 on a Panda's, where the tool's own path changes
    its steps by 0.0004-0.005): smoothed, the wobble is gone, every frame still on its target.
    """
    from .repair import smooth_take

    if len(fields["q"]) < 3:
        return fields
    before = fields["q"][0] if known is None else known
    result = smooth_take(solver, targets, IKResult(**fields), before, max_jump)
    return {f: np.array(getattr(result, f)) for f in IKResult.__dataclass_fields__}


# Frames before a redundant chain's first jump or miss where the look-ahead pass takes over: its
# self-motion drifts toward the trouble for a while before it arrives.
_LEAD = 200
# A missed frame whose errors are within this many tolerances is as good a start for the next
# frame as a converged one (see _retry_frames).
_NEAR_MISS = 10.0
# Retries in a row that may leave their missed frames missed before a run keeps its batch answers.
_RUN_RETRIES = 4
# On a redundant chain a reached frame whose joints turn more than this [rad or m] from the frame
# before is retried from it even below max_jump: the self-motion whipped where carrying the frame
# before on reaches the target too (a pop the take never asked for).
_POP_STEP = 0.2
# ... and only where that step is more than this many times the calmer of the two steps before it.
_WHIP_RATIO = 2.0
# ... and the successor of a replaced frame where its step grew past _WHIP_RATIO times what it was
# and past this fraction of that step.
_SHIFT_FLOOR = 0.25


def _sudden(steps: np.ndarray, i: int, pop: float) -> bool:
    """Whether the step into frame i (of ``steps`` (N,) [rad or m]) whips: above ``pop`` and the calmer before it.

    A whip is above ``_WHIP_RATIO`` times the calmer of the two steps before it. Steady fast
    motion of a tail or a spine steps as far every frame and is left alone; the second frame of
    a two-frame whip is one too.
    """
    calm_step = float(steps[i - 1] if i < 3 else min(steps[i - 1], steps[i - 2]))
    return bool(steps[i] > pop and steps[i] > _WHIP_RATIO * calm_step)


def _retry_frames(
    solver: Solver, targets: np.ndarray, fields: dict, max_jump: float, local: bool, options: dict,
    finish_first: bool = False, frames: np.ndarray | None = None, own_starts: bool = False,
    check: np.ndarray | None = None,
) -> None:
    """Re-solve, in order, the frames that missed or jumped, warm-started from the frame before; keep the better.

    A frame that jumped (by more than max_jump, or on a redundant chain by more than
    ``_POP_STEP`` and ``_WHIP_RATIO`` times the calmer of the two steps before it: its self-motion whipped, which
    a solver that sets the self-motion by rule cannot do, see ``Solver.ruled_self_motion``) is
    solved again by ``solver``, and the retry kept if it reaches the target with a smaller jump.
    Where a replaced frame's successor then steps away from it (a redundant chain's self-motion
    switched there, so the whole run after it would be retried frame by frame), the reached run
    ahead is solved in one batch from the replaced frame, and each of its answers kept where it
    steps no further than a frame that needs no retry (see :func:`_solve_ahead`).
    A missed frame already had the batch pass's restarts: it is solved again without restarts
    (bounded work), first from where it is when ``finish_first`` (a look-ahead answer is smooth
    and next to its target: a near-singular frame the polish left short), then from the frame
    before. In a run of
    misses a frame is retried only while the frame before it is converged or a near miss
    (errors within ``_NEAR_MISS`` tolerances: a slow solver's budget, not a limit, held it),
    and after ``_RUN_RETRIES`` retries in a row that leave their frames missed the rest of the
    run keeps its batch answers: frames that limits hold off their targets cost a few retries,
    not one each. ``frames`` (N,) are the frame numbers when frames were taken out of the take
    (see :func:`_track`): predictions and the step allowed then span the frames between.
    With ``own_starts`` (each frame was solved from its own start, see :func:`solve_track`) only
    missed frames are retried: a reached frame's answer is the one its start leads to. With
    ``check`` (N,) only the frames it flags are retried, and the reached frames after a replaced one;
    a flagged frame's predecessor was posed after it, so on a redundant chain a flagged reached
    frame that steps more than ``_POP_STEP`` from it is retried too.
    """
    q, ok = fields["q"], fields["converged"]
    n = len(q)
    skeleton = solver.skeleton
    calm = _without_restarts(solver)
    redundant = free_directions(solver.skeleton) > _task_rows(solver)
    pop_step = min(_POP_STEP, max_jump) if redundant else max_jump
    near = ok | (
        (fields["position_error"] <= _NEAR_MISS * solver.tolerance)
        & (fields["rotation_error"] <= _NEAR_MISS * solver.rotation_tolerance)
    )
    steps = np.concatenate([[0.0], joint_steps(skeleton, q[:-1], q[1:])]) if n > 1 else np.zeros(n)
    batch_steps = steps.copy()
    replaced = np.zeros(n, dtype=bool)
    # Answers solved ahead for the frames after a replaced one (see _solve_ahead), by frame.
    ahead: dict[int, IKResult] = {}
    failed = 0  # retries in a row that left their missed frames missed
    # Frames since the frame before (more than one where frames were taken out of the take).
    gaps = np.ones(n, dtype=int) if frames is None else np.diff(frames, prepend=frames[0] - 1)
    for i in range(1, n):
        if check is not None and not (check[i] or (replaced[i - 1] and ok[i])):
            continue
        # Steps were measured once for the whole take; a repaired predecessor needs a new one, and
        # the next frame's whip test compares with it (not with the step the batch had given).
        if replaced[i - 1]:
            steps[i] = joint_steps(skeleton, q[i - 1], q[i])
        jump = float(steps[i])
        allowed = max_jump * int(gaps[i])
        missed = not ok[i]
        if not missed:
            failed = 0
            if own_starts:
                continue
            sudden = _sudden(steps, i, pop_step * int(gaps[i]))
            # A repair must not move the jump it removed on to the next frame: a frame that steps
            # away from its replaced predecessor much further than it stepped from the one replaced
            # is retried from it too (a still target then holds still).
            shifted = (
                bool(replaced[i - 1]) and jump > _SHIFT_FLOOR * pop_step * int(gaps[i])
                and jump > _WHIP_RATIO * float(batch_steps[i])
            )
            # A frame whose predecessor was posed after it (``check``) was solved from another
            # pose than the one before it now: a redundant chain's step above the pop step is
            # retried from it, as the self-motion may continue that pose.
            reposed = check is not None and bool(check[i]) and jump > pop_step * int(gaps[i])
            whip = (sudden or shifted or reposed) and not solver.ruled_self_motion
            if jump <= allowed and not whip:
                continue
        elif not near[i - 1] or failed >= _RUN_RETRIES:
            continue  # an unreachable stretch: the batch answer is the best effort
        extra = {"radius": allowed} if local else {}
        guess = q[i - 1]
        if i > 1 and not redundant:
            velocity = _velocity(q[i - 1], q[i - 2], ok[i - 1] and ok[i - 2], max_jump, int(gaps[i - 1]))
            guess = guess + int(gaps[i]) * velocity
        frame_options = _frame_options(options, i)
        if not missed:
            if replaced[i - 1] and i not in ahead:
                # The frame before was replaced and this one now steps away from it: the batch
                # answers after it continue the pose it replaced, and retried one at a time the
                # whole run after it would be (a redundant chain's self-motion switched at the
                # replaced frame). Solve the converged run ahead at once from the frame before,
                # as a segment would: frame k of it inside k steps of the jump allowed.
                ahead = _solve_ahead(solver, targets, q, ok, i, max_jump, gaps, local, options)
            # An answer solved ahead is kept only where it steps no further than a frame that
            # needs no retry; otherwise the frame is retried alone from the frame before.
            retry = ahead.pop(i, None)
            if retry is None or not _improves(skeleton, q[i - 1], retry, min(jump, pop_step * int(gaps[i]))):
                retry = solver.solve(targets[i], guess, **frame_options, **extra)
        else:
            retry = calm.solve(targets[i], q[i], radius=max_jump, **frame_options) if finish_first else None
            if retry is None or not retry.converged:
                again = calm.solve(targets[i], guess, **frame_options, **extra)
                if retry is None or again.converged or again.position_error < retry.position_error:
                    retry = again
        retry_jump = float(joint_steps(skeleton, q[i - 1], retry.q))
        better = (bool(retry.converged) and (missed or retry_jump < jump)) or (
            missed and retry.position_error < fields["position_error"][i]
        )
        if better:
            replaced[i] = True
            steps[i] = retry_jump
            for f in fields:
                value = np.asarray(getattr(retry, f))
                # [()] unwraps 0-d fields: an object array would otherwise store the array itself.
                fields[f][i] = value[()] if value.ndim == 0 else value
            near[i] = bool(retry.converged) or (
                retry.position_error <= _NEAR_MISS * solver.tolerance
                and retry.rotation_error <= _NEAR_MISS * solver.rotation_tolerance
            )
        if missed:
            failed = 0 if retry.converged else failed + 1


# Frames a run solved ahead after a replaced frame spans at most (a segment's length).
_AHEAD = 32


def _improves(skeleton, before: np.ndarray, retry: IKResult, jump: float) -> bool:
    """Whether a retry reaches its target with a step from ``before`` smaller than ``jump`` [rad or m]."""
    return bool(retry.converged) and float(joint_steps(skeleton, before, retry.q)) < jump


def _solve_ahead(
    solver: Solver, targets: np.ndarray, q: np.ndarray, ok: np.ndarray, i: int, max_jump: float,
    gaps: np.ndarray, local: bool, options: dict,
) -> dict[int, IKResult]:
    """Retry answers for the reached frames from ``i`` on, solved in one batch from frame ``i - 1``; by frame.

    The run ends at the first missed frame or after ``_AHEAD`` frames. Frame i + k starts from
    q[i - 1] inside the jump allowed over the frames since it (a segment's box), so the run
    continues the pose of frame i - 1 instead of the one the batch answers continued.
    """
    run = np.asarray(ok[i : i + _AHEAD], dtype=bool)
    end = i + (int(np.argmin(run)) if not run.all() else len(run))
    if end - i < 2:
        return {}
    frames = np.arange(i, end)
    extra = {"radius": max_jump * np.cumsum(gaps[frames])} if local else {}
    batch = solver.solve(
        targets[frames], np.repeat(q[i - 1][None], len(frames), axis=0), **_frame_options(options, frames), **extra
    )
    fields = IKResult.__dataclass_fields__
    return {int(f): IKResult(**{name: getattr(batch, name)[k] for name in fields}) for k, f in enumerate(frames)}


# At most this many frames before a jump the retries left are solved again backward (see _carry_back),
# as far as the look-ahead pass reaches back (_LEAD).
_CARRY_BACK = 200
# Frames of the first backward batch: most families that end at a jump cannot be carried back a frame.
_CARRY_PROBE = 4


def _carry_back(solver: Solver, targets: np.ndarray, fields: dict, max_jump: float, options: dict,
                frames: np.ndarray) -> None:
    """Move each sudden jump between reached frames that the retries left back to where it costs no step, in place.

    Such a jump is where the family of poses the take followed ends (a redundant chain's
    self-motion, or an IK branch, runs into the limits) while another family reaches every
    frame around it. The frames before the jump are solved again backward from the frame
    after it, in batches (frame k of a batch inside k jumps allowed of its start, as a
    segment), for as long as they reach their targets without a step above the pop step;
    where that backward family meets the one followed (a step from the frame before no larger
    than the pop step) or reaches the take's first frame, it replaces the frames after the
    meeting point. Otherwise nothing changes. Work: a few batches per jump left, none where
    none is.
    """
    q, ok = fields["q"], fields["converged"]
    n = len(q)
    skeleton = solver.skeleton
    pop_step = min(_POP_STEP, max_jump)
    gaps = np.diff(frames, prepend=frames[0] - 1)
    steps = take_steps(skeleton, q, None)
    for i in range(1, n):
        if not (ok[i] and ok[i - 1]):
            continue
        if not _sudden(steps, i, pop_step * gaps[i]):
            continue
        found = _family_back(solver, targets, q, ok, i, max_jump, pop_step, gaps, options)
        if found is None:
            continue
        lo, result = found
        for f in fields:
            fields[f][lo:i] = np.asarray(getattr(result, f))
        steps[max(lo, 1) : i + 1] = joint_steps(skeleton, q[max(lo, 1) - 1 : i], q[max(lo, 1) : i + 1])


def _family_back(
    solver: Solver, targets: np.ndarray, q: np.ndarray, ok: np.ndarray, i: int, max_jump: float, pop_step: float,
    gaps: np.ndarray, options: dict,
) -> tuple[int, IKResult] | None:
    """The frames lo .. i - 1 solved backward from frame i, where that family meets the frames before lo; or None."""
    skeleton = solver.skeleton
    names = IKResult.__dataclass_fields__
    # Only reached frames carry a family back: a missed one ends it, its best effort unneeded.
    quick = solver.deferring_best_effort()
    start, j = q[i], i
    blocks: list[IKResult] = []
    while j > 0 and i - j < _CARRY_BACK:
        lo = max(j - (_CARRY_PROBE if j == i else _AHEAD), 0)
        back = np.arange(j - 1, lo - 1, -1)
        # Frame k of the batch lies k frames' jumps (over the frames between) from its start.
        radius = max_jump * np.cumsum(gaps[back + 1])
        batch = quick.solve(targets[back], np.repeat(start[None], len(back), axis=0),
                            **_frame_options(options, back), radius=radius)
        inner = take_steps(skeleton, batch.q, start)
        good = np.asarray(batch.converged, dtype=bool) & (inner <= pop_step * gaps[back + 1])
        run = len(back) if good.all() else int(np.argmin(good))
        # Where the family meets the take: a step from the frame before no larger than the pop step.
        m = back[:run]
        before = np.maximum(m - 1, 0)
        meets = (m == 0) | (ok[before] & (joint_steps(skeleton, q[before], batch.q[:run]) <= pop_step * gaps[m]))
        if meets.any():
            k = int(np.argmax(meets))
            blocks.append(IKResult(**{f: getattr(batch, f)[: k + 1] for f in names}))
            return int(m[k]), IKResult(**{f: np.concatenate([getattr(b, f) for b in blocks])[::-1] for f in names})
        if run < len(back):
            return None
        blocks.append(batch)
        start, j = batch.q[-1], lo
    return None


def _for_takes(solver: Solver) -> Solver:
    """``solver``, or a copy of it whose best effort is a take's: at most GLOBAL_STARTS global starts, a local lean.

    A tree's single targets get more (TREE_GLOBAL_STARTS). A take's missed frames share their
    screening with their neighbours and carry their basins on from frame to frame: there the
    tree's extra starts doubled a tree take's cost (13 -> 28 ms a frame on four random two-arm
    takes) for the same answers. A tree's followers lean from the basin each frame is in
    (:attr:`~ik_core.solvers.base.Solver.lean_check` off): leaning from global starts, a take's
    frames chose their lean apart and popped.
    """
    if solver.global_starts <= GLOBAL_STARTS and (len(solver.effector_ids) < 2 or not solver.lean_check):
        return solver
    take = copy.copy(solver)
    take.global_starts = min(solver.global_starts, GLOBAL_STARTS)
    take.lean_check = False
    return take


def _without_restarts(solver: Solver) -> Solver:
    """``solver``, or a copy of it that spends no restarts and no global starts of its best effort.

    The batch pass spent both on the frame already; a retry from the frame before asks only
    whether carrying that frame on does better.
    """
    policy = getattr(solver, "policy", None)
    restarts = policy is not None and policy.restarts > 0
    if not restarts and not solver.global_starts:
        return solver
    calm = copy.copy(solver)
    if restarts:
        calm.policy = replace(policy, restarts=0)
    calm.global_starts = 0
    return calm


def _look_ahead(
    solver: DLSSolver, targets: np.ndarray, fields: dict, start: np.ndarray | None, max_jump: float,
    options: dict, steps_of,
) -> bool:
    """Re-solve a redundant chain's take from before its first jump or miss with the receding horizon.

    The frame-by-frame answer is kept where it is clean (most takes: no extra cost); from
    ``_LEAD`` frames before its first jump or miss to ``_LEAD`` frames after its last (or the
    end), the take is solved again by :func:`~ik_core.take.horizon.horizon_pass`, joined to
    the frame after, its misses retried and its leftover jumps spread; that take replaces the
    answer when it has fewer steps above ``max_jump``, a smaller total excess over it and no
    more misses.
    Returns whether it did.
    """
    from .horizon import horizon_pass

    q, ok = fields["q"], fields["converged"]
    n = len(q)
    full = steps_of(q if start is None else np.concatenate([start[None], q]))
    steps = full if start is None else full[1:]
    bad = np.flatnonzero((steps > max_jump) | ~ok)
    if not len(bad):
        return False
    a = max(int(bad[0]) - _LEAD, 0)
    # The re-solved stretch ends _LEAD frames after the last trouble, joined to the frame there.
    b = min(int(bad[-1]) + _LEAD, n)
    before = q[a - 1] if a > 0 else start
    if before is None:
        before = q[0]
    if b - a < 3:
        return False
    span_options = {k: v[a:b] for k, v in options.items()}
    cand = horizon_pass(solver, targets[a:b], before, max_jump, span_options, after=q[b] if b < n else None)
    span = {f: np.array(getattr(cand, f)) for f in fields}
    _retry_frames(solver, targets[a:b], span, max_jump, True, span_options, finish_first=True)
    # Judged after spreading its own leftover jumps, as the frame-by-frame answer was.
    from .smoothing import spread_jumps

    cand_fields = {f: v.copy() for f, v in fields.items()}
    for f in fields:
        cand_fields[f][a:b] = span[f]
    spread_jumps(solver, targets, cand_fields, start, max_jump, steps_of, options)
    new_steps = steps_of(cand_fields["q"] if start is None else np.concatenate([start[None], cand_fields["q"]]))
    new_steps = new_steps if start is None else new_steps[1:]
    # Fewer jumps must not be bought with bigger ones: the total excess over max_jump shrinks too.
    fewer = np.count_nonzero(new_steps > max_jump) < np.count_nonzero(steps > max_jump) and np.sum(
        np.maximum(new_steps - max_jump, 0.0)
    ) < np.sum(np.maximum(steps - max_jump, 0.0))
    if np.count_nonzero(cand_fields["converged"]) >= np.count_nonzero(ok) and fewer:
        for f in fields:
            fields[f][:] = cand_fields[f]
        return True
    return False


def _velocity(q: np.ndarray, prev: np.ndarray, valid: bool, max_jump: float, frames: int = 1) -> np.ndarray:
    """(dof,) per-frame velocity ``(q - prev) / frames`` for predicting the next frame, capped at max_jump.

    ``frames`` is the number of frames from ``prev`` to ``q``. Zero when either frame missed
    its target (a best-effort answer says nothing of the motion), and callers pass ``valid``
    False on redundant chains: there the velocity carries the self-motion, which the task does
    not ask for, and extrapolating it keeps the null space drifting frame after frame (a 7-bone
    chain turned 0.2-0.3 rad a frame where the closest pose that continues the frame before
    turns 0.03); from the frame before itself, DLS's least-norm steps move the self-motion
    only as far as the target needs.
    """
    if not valid:
        return np.zeros_like(q)
    return np.clip((q - prev) / frames, -max_jump, max_jump)


def track_chain(
    solver: Solver,
    base: np.ndarray,
    target: np.ndarray,
    q0: np.ndarray | None = None,
    pole: np.ndarray | None = None,
    use_rotation: bool = False,
    scale: float = 1.0,
    progress=None,
    max_jump: float = 0.1,
    segment: int = 32,
    pole_angle: float = 0.0,
    look_ahead: bool = False,
    starts: np.ndarray | None = None,
) -> IKResult:
    """Solve one chain on every frame of a take, each frame warm-started from the previous one.

    Args:
        solver: A solver built for the chain's skeleton (expressed in its base frame), with
            its tolerance already in base-frame units (world tolerance / ``scale``).
        base: (N, 4, 4) world matrix of the chain's base frame per frame.
        target: (N, 4, 4) world matrix of the target per frame.
        q0: (dof,) configuration to start the first frame from.
        pole: (N, 3) world position of the pole per frame, or None.
        use_rotation: Pass full poses (the solver's mode decides what is used) instead of
            positions only.
        scale: Uniform world scale of the base frames; errors are returned in world units.
        progress: Optional ``progress(done, total)`` callback.
        max_jump: Change between frames [rad or m] above which a frame is re-solved from the
            previous one (see :func:`solve_track`); robot paths want 0.1, character motion
            at 24 fps legitimately moves more.
        segment: Frames per batch (see :func:`solve_track`).
        look_ahead: Look-ahead repairs of jumps (see :func:`solve_track`).
        pole_angle: Turn of the bend direction from the pole about the root-to-target axis
            [rad] (see :func:`~ik_core.model.poles.turn_poles`); 0 bends the chain toward the pole.
        starts: (N, dof) each frame's own start (see :func:`solve_track`), or None.

    Returns:
        An :class:`IKResult` of batch shape (N,), errors in world units [m, rad].

    Raises:
        InvalidInputError: Shapes that do not match, non-finite samples, or a degenerate
            (zero-scale) target or base matrix.
    """
    base = np.asarray(base, dtype=float)
    target = np.asarray(target, dtype=float)
    if base.shape != target.shape or base.ndim != 3 or base.shape[1:] != (4, 4):
        raise InvalidInputError(f"base and target must both be (N, 4, 4), got {base.shape} and {target.shape}")
    require_finite("target matrices", target)
    require_finite("base matrices", base)
    if np.any(np.abs(np.linalg.det(target[:, :3, :3])) < 1e-12):
        bad = np.flatnonzero(np.abs(np.linalg.det(target[:, :3, :3])) < 1e-12)
        raise InvalidInputError(f"the target has zero scale on {len(bad)} frame(s) (first: sample {bad[0]})")
    if np.any(np.abs(np.linalg.det(base[:, :3, :3])) < 1e-12):
        raise InvalidInputError("the chain's base frame has zero scale on some frames")
    local = to_base_frame(base, target)
    targets = local if use_rotation else local[:, :3, 3]
    options = {}
    if pole is not None and "pole" in solver.call_options:
        pole_h = np.concatenate([np.asarray(pole, dtype=float), np.ones((len(pole), 1))], axis=1)
        local_pole = np.einsum("nij,nj->ni", np.linalg.inv(base), pole_h)[:, :3]
        options["pole"] = turn_poles(local_pole, chain_root(solver.skeleton), local[:, :3, 3], pole_angle)
    result = solve_track(
        solver, targets, q0, max_jump=max_jump, progress=progress, segment=segment, look_ahead=look_ahead,
        starts=starts, **options,
    )
    if scale != 1.0:
        result = replace(result, position_error=result.position_error * scale)
    return result
