# SPDX-License-Identifier: GPL-3.0-or-later
"""Repairing a take around its jumps with a global search of its solutions.

The search is :mod:`.track_grid`'s over a one-redundant chain's self-motion, or
:mod:`.track_branches`'s over a non-redundant chain's IK branches. Each stretch around a jump
is searched from well before its first jump, and the rest of the take is kept (where the
searched path rejoins the old answer) or tracked on from where the path ends; a repair is
kept only when the take ends up with fewer and smaller jumps.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from ..solvers.base import IKResult
from .grid import track_grid
from .held import held_candidates
from .paths import max_step
from .steps import joint_steps, jump_score, take_steps

# Frames before a jump where the search starts (the self-motion must have room to move ahead
# of the trouble) and frames after it where the search ends and frame-by-frame tracking resumes.
_LEAD = 600
_AFTER = 400
# Stretches searched per take at most.
_ROUNDS = 6
# Width [frames] of the Gaussian that smooths a self-motion grid's path before the solver measures
# it. The path moves a held variable a whole grid value at a time, in steps of up to a grid cell
# where the self-motion drifts slowly: a staircase whose joint velocities spike every few frames
# (0.04 rad/frame^2 on the iiwa's bench take, a hundred times the motion's own). Smoothed, the
# staircase is gone (0.004 rad/frame^2 there); the solver then brings each frame back onto its
# target from the smoothed path, and its steps lie in the Jacobian's row space, so the smoothed
# self-motion stays.
_SMOOTH_FRAMES = 3.0
# Frames before the first and after the last jump that an earlier search of a stretch left where
# the next search of it looks first (a single held variable's fold: the pair only needs room to
# move the self-motion across it).
_NEAR_LEAD = 120
_NEAR_AFTER = 80


def search_repair(
    solver, targets: np.ndarray, fields: dict, start: np.ndarray | None, max_jump: float, track, search=None
) -> bool:
    """Remove the jumps of a take by a global search of its solutions around each.

    Round by round, the first frame past the last searched stretch that jumps from a reached
    frame to a reached frame is found; from ``_LEAD`` frames before it to ``_AFTER`` after,
    ``search`` finds the smoothest paths: by default :func:`track_grid` over a one-redundant
    chain's self-motion (holding the variable sets of :func:`held_candidates` in turn, until one
    leaves no jump). Once a search has left jumps in the stretch (a single held variable whose
    grid folds there), the next first searches from ``_NEAR_LEAD`` frames before them to
    ``_NEAR_AFTER`` after, from that search's answer (its grids of variables a search of the
    whole stretch held are that search's states over those frames, not tracked again), and only
    where that leaves jumps the whole stretch again. A path that ends back on the old answer
    keeps the old rest of the take; otherwise ``track`` tracks the rest on from the path's last
    frame. The new take replaces the old when it misses no more frames and its steps above
    ``max_jump`` up to the stretch's end are fewer with a smaller total excess (or the same, and
    so over the whole take): a rest the frame-by-frame tracker left worse is for the next rounds
    to repair.
    Should the take end up no better than it came, it is restored.

    Args:
        solver: A :class:`~ik_core.solvers.dls.solver.DLSSolver`.
        targets: (N, ...) the take's targets.
        fields: The take's :class:`IKResult` fields (N leading), updated in place.
        start: (dof,) configuration before the first frame, or None.
        max_jump: Largest accepted step between frames [rad or m].
        track: ``track(targets, q0)`` -> IKResult, the frame-by-frame tracker for the rest.
        search: ``search(solver, targets, before, max_jump, steps_of=, incumbent=,
            incumbent_ok=)`` -> candidate paths [(q, converged)], as :func:`track_grid` and
            :func:`~ik_core.take.branch_search.track_branches` are; None for the self-motion grids.

    Returns:
        Whether the take was replaced.
    """
    skeleton = solver.skeleton
    n = len(fields["q"])
    # Step between two configurations, as the take measures it: without ball joints that is the
    # largest change of any variable, which max_step gives without joint_steps' per-call set-up
    # (the searches' dynamic programmes call it twice a frame: a third of their time).
    pair = partial(joint_steps, skeleton) if skeleton.ball_q_starts else max_step

    replaced = False
    initial = (jump_score(skeleton, fields["q"], start, max_jump), {f: v.copy() for f, v in fields.items()})
    frm = 0
    for _ in range(_ROUNDS):
        q, ok = fields["q"], fields["converged"]
        steps = take_steps(skeleton, q, start)
        # Steps between two reached frames: a step into or out of a frame that cannot be
        # reached is its best effort moving, which no search of the solutions can smooth.
        reached_pair = ok & np.concatenate([[True], ok[:-1]])
        bad = np.flatnonzero(((steps > max_jump) & reached_pair)[frm:]) + frm
        if not len(bad):
            break
        i = int(bad[0])
        a, b = max(i - _LEAD, 0), min(i + _AFTER, n)
        frm = b  # each stretch is searched once; the next round looks past it
        best = None
        tracked = {}  # held variable -> its grid's (Q, ok) over frames a .. b - 1, from a whole-stretch search
        if search is None:
            searches = [partial(track_grid, held=held) for held in held_candidates(solver, q[a:b:10])]
        else:
            searches = [search]
        for find in searches:
            # After a search that left jumps (a single held variable folding), the next first
            # searches only around them, from that search's answer: where that clears them, the
            # whole stretch is not searched again.
            spans = [(a, b, fields)]
            if best is not None:
                near = _around_jumps(skeleton, best[1], start, max_jump, a, b)
                if near is not None:
                    spans.insert(0, (*near, best[1]))
            for lo, hi, base in spans:
                how = find
                if search is None:
                    # A near span's grids reuse what the whole stretch's searches tracked (the same
                    # values, the same frames); the whole stretch's searches keep theirs.
                    reuse = {h: (Qh[lo - a : hi - a], okh[lo - a : hi - a]) for h, (Qh, okh) in tracked.items()}
                    how = partial(find, keep=tracked) if (lo, hi) == (a, b) else partial(find, known=reuse)
                for cand in _candidates(solver, how, targets, base, lo, hi, start, max_jump, track, pair,
                                        smooth=search is None):
                    if np.count_nonzero(cand["converged"]) < np.count_nonzero(ok):
                        continue
                    score = _scores(skeleton, cand["q"], start, max_jump, b)
                    if best is None or score < best[0]:
                        best = (score, cand)
                if best is not None and best[0][0][0] == 0:
                    break
            if best is not None and best[0][0][0] == 0:
                break
        if best is None or not _better(best[0], _scores(skeleton, q, start, max_jump, b)):
            continue
        for f in fields:
            fields[f][:] = best[1][f]
        replaced = True
    if replaced and not _better(jump_score(skeleton, fields["q"], start, max_jump), initial[0]):
        # Later stretches could not repair what the earlier rounds' re-tracked rests broke.
        for f in fields:
            fields[f][:] = initial[1][f]
        replaced = False
    return replaced


def _candidates(
    solver, find, targets, base: dict, lo: int, hi: int, start, max_jump: float, track, steps_of, smooth: bool = False,
):
    """The takes ``find`` proposes: ``base`` with frames ``lo`` .. ``hi`` - 1 replaced by each path it finds.

    Each path is measured by the solver (and any frame it missed retried); the rest of the take
    after ``hi`` is ``base``'s where the path ends back on it, else tracked on from its last frame.
    With ``smooth`` (a self-motion grid's paths) the answer's self-motion is smoothed over frames
    where that stays on the path's branch and leaves no new jump (see :func:`smooth_take`).
    """
    n = len(base["q"])
    q = base["q"]
    before = q[lo - 1] if lo > 0 else (q[0] if start is None else start)
    out = []
    paths = find(solver, targets[lo:hi], before, max_jump, steps_of=steps_of, incumbent=q[lo:hi],
                 incumbent_ok=base["converged"][lo:hi])
    for qg, _ in paths:
        # The search's answer, measured (and any frame it missed retried) by the solver.
        part = solver.solve(targets[lo:hi], qg, radius=max_jump)
        if smooth and len(qg) > 2:
            part = smooth_take(solver, targets[lo:hi], part, before, max_jump)
        head = {f: np.concatenate([v[:lo], np.asarray(getattr(part, f))]) for f, v in base.items()}
        if hi < n:
            # The cheapest path goes on frame by frame; the one back on the incumbent keeps its rest.
            rest = None if np.array_equal(qg[-1], q[hi - 1]) else track(targets[hi:], part.q[-1])
            tail = {f: (v[hi:] if rest is None else np.asarray(getattr(rest, f))) for f, v in base.items()}
            out.append({f: np.concatenate([head[f], tail[f]]) for f in base})
        else:
            out.append(head)
    return out


def smooth_take(solver, targets: np.ndarray, part, before: np.ndarray, max_jump: float):
    """A take's answer ``part`` (an IKResult, N frames, from ``solver``) with its joint motion smoothed over frames.

    Made for a self-motion grid's path (a staircase, see ``_SMOOTH_FRAMES``) and for a whole
    robot take (each frame solved to within the tolerance from the frame before, so its joints
    wobble inside that band from frame to frame).

    The path smoothed (see ``_SMOOTH_FRAMES``) is measured by the solver; each frame takes that
    answer where it reaches its target next to the path's own answer (within half the jump
    allowed: the same branch), else keeps its own. Where a change of step then exceeds the
    path's largest (a seam between the two, or a smoothed answer that left the path near a
    fold), the frames around it keep their own. The smoothed take is kept only where it has no
    more jumps than the path's and no larger change of a step (``before``: the configuration
    before the first frame).
    """
    soft = solver.solve(targets, _smoothed(np.asarray(part.q), _SMOOTH_FRAMES), radius=max_jump)
    own_q, soft_q = np.asarray(part.q), np.asarray(soft.q)
    use = np.asarray(soft.converged) & (np.max(np.abs(soft_q - own_q), axis=-1) <= 0.5 * max_jump)
    limit = _acceleration(own_q)
    half = int(np.ceil(2.0 * _SMOOTH_FRAMES))
    for _ in range(3):
        q = np.where(use[:, None], soft_q, own_q)
        spikes = np.flatnonzero(np.abs(np.diff(q, 2, axis=0)).max(axis=1) > limit) + 1 if len(q) > 2 else []
        if not len(spikes) or not use.any():
            break
        for t in spikes:
            use[max(t - half, 0) : t + half + 1] = False
    if not use.any():
        return part
    fields = {}
    for f in IKResult.__dataclass_fields__:
        own, new = np.asarray(getattr(part, f)), np.asarray(getattr(soft, f))
        fields[f] = np.where(use.reshape((-1,) + (1,) * (own.ndim - 1)), new, own)
    merged = IKResult(**fields)
    jumps = [jump_score(solver.skeleton, r.q, before, max_jump)[0] for r in (merged, part)]
    if jumps[0] > jumps[1] or _acceleration(merged.q) > limit:
        return part
    return merged


def _acceleration(q: np.ndarray) -> float:
    """Largest change of any variable's step over a path q (N, dof) [rad or m per frame^2]."""
    return float(np.abs(np.diff(q, 2, axis=0)).max(initial=0.0)) if len(q) > 2 else 0.0


def _smoothed(q: np.ndarray, sigma: float) -> np.ndarray:
    """(N, dof) joint paths q (N, dof) low-passed over frames by a Gaussian of ``sigma`` frames.

    Beyond its ends the path is continued point-symmetrically about its first and last frames, so
    a path moving at constant speed keeps its ends (held ends would bend it there).
    """
    half = min(int(np.ceil(3.0 * sigma)), len(q) - 1)
    kernel = np.exp(-0.5 * (np.arange(-half, half + 1) / sigma) ** 2)
    kernel /= kernel.sum()
    head, tail = 2.0 * q[0] - q[half:0:-1], 2.0 * q[-1] - q[-2 : -half - 2 : -1]
    padded = np.concatenate([head, q, tail])
    # Each frame the kernel-weighted sum of its neighbours: a sum of shifted copies, one per tap.
    out = np.zeros_like(q)
    for k, weight in enumerate(kernel):
        out += weight * padded[k : k + len(q)]
    return out


def _around_jumps(skeleton, fields: dict, start, max_jump: float, a: int, b: int) -> tuple[int, int] | None:
    """Frames ``_NEAR_LEAD`` before the first to ``_NEAR_AFTER`` after the last jump of a take within a .. b - 1.

    None when it has none there, or when that span is most of the stretch (no cheaper search).
    """
    q, ok = fields["q"], fields["converged"]
    steps = take_steps(skeleton, q, start)
    reached_pair = ok & np.concatenate([[True], ok[:-1]])
    jumps = np.flatnonzero((steps[a:b] > max_jump) & reached_pair[a:b]) + a
    if not len(jumps):
        return None
    lo, hi = max(int(jumps[0]) - _NEAR_LEAD, a), min(int(jumps[-1]) + _NEAR_AFTER, b)
    return (lo, hi) if hi - lo < 0.75 * (b - a) else None


def _scores(skeleton, q: np.ndarray, start, max_jump: float, end: int) -> tuple[tuple[int, float], tuple[int, float]]:
    """Jump scores of a take up to frame ``end`` (the stretches searched so far), then of all of it."""
    return jump_score(skeleton, q[:end], start, max_jump), jump_score(skeleton, q, start, max_jump)


def _better(new, old) -> bool:
    """Whether a jump score (count, excess), or a pair of them compared in order, is an improvement.

    A score improves with fewer jumps and a smaller total excess; a pair improves on its first
    score, or keeps the first the same and improves on the second.
    """
    if isinstance(new[0], tuple):
        return _better(new[0], old[0]) or (new[0] == old[0] and _better(new[1], old[1]))
    return new[0] < old[0] and new[1] < old[1]
