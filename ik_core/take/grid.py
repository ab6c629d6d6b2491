# SPDX-License-Identifier: GPL-3.0-or-later
"""Global redundancy resolution of a take: the self-motion sampled on grids, the smoothest path by dynamic programming.

A 7-joint arm tracking 6-D poses has a one-parameter family of solutions per frame (its
self-motion). Tracking frame by frame picks one member per frame from the last, so the
choice drifts and may later sit on a joint limit or on the wrong side of a singularity when
the path forces a jump. Knowing the whole take, the family can be searched instead: one
variable (or two, each on its own grid) is held at each value of a fine grid, every grid
value is tracked over the take as a non-redundant problem, and dynamic programming finds
the path through (frame, grid value) states with the fewest and smallest jumps, which may
also follow the frame-by-frame answer wherever that one is smooth. With two held variables
each also has a second grid, seeded wherever the other variable's grid folds, so a path can
change grids exactly there.

:func:`~ik_core.take.repair.search_repair` applies this to the stretches of a frame-by-frame
answer around its jumps.
"""

from __future__ import annotations

import numpy as np

from .held import HeldSolver, moving_variables, null_vectors
from .paths import MISS_PENALTY, candidate_paths, free_turns, max_step, step_cost, turn_aware
from .smoothing import solver_targets

# Grid spacing of the held joint [rad or m]: neighbouring grid values must lie well inside the
# largest accepted step, so the path may move along the self-motion without a jump.
_CELL = 0.04
# Widest stretch of a held variable's range a grid covers [rad or m]: two turns, so a revolute
# joint of +-2 pi (UR arms) keeps its whole range.
_MAX_SPAN = 4.0 * np.pi
# Grid values a path may move per frame (either way); near a fold the self-motion moves fast
# along the grid (measured on the iiwa: 4 left 16 -> 4 jumps where 2 left 16).
_REACH = 4
# Gauss-Newton iterations per frame while tracking, and when a grid value is (re)seeded.
_TRACK_ITERATIONS = 3
_SEED_ITERATIONS = 12
# ... and when a grid value just past the reached ones is restarted from its neighbour's solution:
# those that reach their target do so within three iterations but for 2-4 % (rail-arm takes; they
# are restarted again at the next frame), while every iteration is one more batched call, whose
# fixed cost dominates these small batches.
# (States short of their target after tracking keep _SEED_ITERATIONS: near a singularity they
# converge slowly, and cutting theirs leaves a jump on the hard iiwa take.)
_RESTART_ITERATIONS = 4
# Frames tracked together in one batch, each from the last solved frame moved on at its velocity:
# short segments keep grid values on their own solution near folds (iiwa: 4 beat 2, 8 and 16) at
# some cost per frame, so one held variable (a take without such folds) tracks 16 at a time.
_SEGMENT = 4
_SEGMENT_ONE_GRID = 16
# Entries of the dynamic programme's table of sources computed in one batch (bounds its memory).
_SOURCE_BATCH = 4_000_000


def _nearest_true(mask: np.ndarray) -> np.ndarray:
    """(F, K) index of the nearest True entry along each row of ``mask`` (rows with none: 0)."""
    F, K = mask.shape
    idx = np.broadcast_to(np.arange(K), (F, K))
    left = np.maximum.accumulate(np.where(mask, idx, -1), axis=1)
    right = np.minimum.accumulate(np.where(mask, idx, K)[:, ::-1], axis=1)[:, ::-1]
    use_left = (left >= 0) & ((right >= K) | (idx - left <= right - idx))
    return np.where(use_left, left, np.where(right < K, right, 0))


class _Grids:
    """The states of one or more grids side by side: grid g holds variable ``held[g]``.

    The grid of a variable that turns without limits (``turns``) is a circle: one turn of values,
    its last next to its first, so a path winding the joint on moves round it.
    """

    def __init__(self, lower: np.ndarray, upper: np.ndarray, held, turns: np.ndarray | None = None) -> None:
        self.held = [int(h) for h in held]
        self.values, self.first, self.cell = [], [], []
        self.circular = [turns is not None and bool(turns[h]) for h in self.held]
        offset = 0
        for h, circular in zip(self.held, self.circular):
            if circular:
                k = int(np.ceil(2.0 * np.pi / _CELL))
                self.values.append(-np.pi + (2.0 * np.pi / k) * np.arange(k))
                self.first.append(offset)
                self.cell.append(2.0 * np.pi / k)
                offset += k
                continue
            lo, hi = float(lower[h]), float(upper[h])
            if not (np.isfinite(lo) and np.isfinite(hi)):
                lo, hi = -np.pi, np.pi
            if hi - lo > _MAX_SPAN:
                # A range far wider than a turn (a revolute joint of +-1000 rad, a 1 km rail) would
                # make a grid of millions of values: a window about 0 (the rest pose) is searched.
                mid = min(max(0.0, lo + _MAX_SPAN / 2), hi - _MAX_SPAN / 2)
                lo, hi = mid - _MAX_SPAN / 2, mid + _MAX_SPAN / 2
            k = max(int(np.ceil((hi - lo) / _CELL)) + 1, 2)
            self.values.append(np.linspace(lo, hi, k))
            self.first.append(offset)
            # (A locked variable's grid holds its one value twice: any cell finds it, none divides by 0.)
            self.cell.append((hi - lo) / (k - 1) if hi > lo else _CELL)
            offset += k
        self.size = offset
        self.state_held = np.concatenate([np.full(len(v), h) for h, v in zip(self.held, self.values)])
        self.state_value = np.concatenate(self.values)
        self.block = np.concatenate([np.full(len(v), g) for g, v in enumerate(self.values)])
        states = np.arange(offset)
        sizes = np.array([len(v) for v in self.values])
        # Per state: its grid's first state, size, and whether that grid is a circle.
        self._state_first, self._state_size = np.asarray(self.first)[self.block], sizes[self.block]
        self._state_circular = np.asarray(self.circular)[self.block]
        state_first, state_size, state_circular = self._state_first, self._state_size, self._state_circular
        # Moves along a state's own grid (rows): the state ``shift`` values below it, -1 for none.
        moves = []
        for shift in range(-_REACH, _REACH + 1):
            src = states - shift
            valid = (src >= 0) & (src < offset)
            valid[valid] &= self.block[src[valid]] == self.block[valid]
            around = state_first + np.remainder(states - state_first - shift, state_size)
            moves.append(np.where(state_circular, around, np.where(valid, src, -1)))
        self.moves = np.array(moves)
        # Crossings: for each state, the other grids (rows) with their variables, first states,
        # sizes, first values and cells.
        n = len(self.held)
        others = np.array([[g for g in range(n) if g != self.block[k]] for k in states], dtype=int)
        others = others.T.reshape(n - 1, offset)
        self.crossings = (
            np.asarray(self.held)[others], np.asarray(self.first)[others], sizes[others],
            np.array([v[0] for v in self.values])[others], np.asarray(self.cell)[others],
            np.asarray(self.circular)[others],
        )

    def nearest_true(self, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The nearest True state of the same grid, per frame and state, and how far along it each state lies.

        Args:
            mask: (F, S) per frame and state.

        Returns:
            (F, S) state indices, and (F, S) the values each state lies past that one along its
            grid (negative: before it; round a circle the shorter way). Rows of a grid with no
            True state: index of its first state.
        """
        near = np.empty(mask.shape, dtype=int)
        offset = np.empty(mask.shape, dtype=int)
        for g, v in enumerate(self.values):
            a, k = self.first[g], len(v)
            block = mask[:, a : a + k]
            if self.circular[g]:
                # Three turns side by side: the middle one's nearest lies at most half a turn away.
                found = _nearest_true(np.concatenate([block, block, block], axis=1))[:, k : 2 * k] - k
            else:
                found = _nearest_true(block)
            near[:, a : a + k] = a + np.remainder(found, k)
            offset[:, a : a + k] = np.arange(k) - found
        return near, offset

    def along(self, state: np.ndarray, shift: np.ndarray) -> np.ndarray:
        """The states ``shift`` values past ``state`` (same shapes) along their grids, round a circle."""
        first, size = self._state_first[state], self._state_size[state]
        return np.where(self._state_circular[state], first + np.remainder(state - first + shift, size), state + shift)

    def nearest_on(self, g: int, value: np.ndarray) -> np.ndarray:
        """State index on grid g whose value is nearest to ``value`` (...,)."""
        k = np.rint((value - self.values[g][0]) / self.cell[g]).astype(int)
        size = len(self.values[g])
        return self.first[g] + (np.remainder(k, size) if self.circular[g] else np.clip(k, 0, size - 1))


def track_grid(
    solver, targets: np.ndarray, start: np.ndarray, max_jump: float, held, steps_of=None,
    incumbent: np.ndarray | None = None, incumbent_ok: np.ndarray | None = None,
    known: dict | None = None, keep: dict | None = None,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The smoothest joint paths over a take among the self-motions of a one-redundant chain.

    Every value of each held variable's grid is tracked over the take (segments of frames
    in one batch, each from the last solved frame moved on at its velocity; a value that
    loses its target restarts from the nearest value of its grid that has it), then dynamic
    programming finds the state sequence with the fewest and smallest steps above
    ``max_jump`` and the least squared joint motion, moving at most ``_REACH`` values per
    frame along a grid or across to the other grid's nearest values.

    Args:
        solver: A :class:`~ik_core.solvers.dls.solver.DLSSolver` whose chain has one more variable
            than task rows.
        targets: (N, ...) the take's targets as ``solver.solve`` takes them.
        start: (dof,) configuration before the first frame (the path starts next to it).
        max_jump: Largest accepted step between frames [rad or m].
        held: Variables to hold, one grid each (see :func:`held_candidates`).
        steps_of: ``steps_of(qa, qb)`` -> (...,) joint step measure; default max |qb - qa|.
        incumbent: (N, dof) an answer to improve on, one more state per frame that the path
            may follow and leave and join again, or None.
        incumbent_ok: (N,) which frames of ``incumbent`` reach their targets.
        known: {variable: (Q (N, K, dof), ok (N, K))} the states of a first-layer grid of that
            variable an earlier search of these frames tracked (``keep`` of a search of a
            stretch holding them, sliced to these frames): taken as they are, neither tracked
            nor restarted again; None for none.
        keep: A dict that receives this search's first-layer grids in that form, or None.

    Returns:
        Candidate paths, each q (N, dof) and converged (N,): the cheapest, then (with an
        incumbent, when that one leaves it) the cheapest that ends on the incumbent.
    """
    # A continuous joint's states may lie a whole turn from the take's (see turn_aware).
    turns = free_turns(solver.skeleton)
    steps_of = turn_aware(max_step if steps_of is None else steps_of, turns)
    tp, tr = solver_targets(solver, targets)
    n = len(tp)
    start = np.asarray(start, dtype=float)
    held = tuple(int(h) for h in held)
    # Two held variables: each gets a second grid for the other side of its self-motion circle.
    layers = 2 if len(held) > 1 else 1
    grids = _Grids(solver._lo, solver._hi, held * layers, turns)
    first_layer_size = grids.first[len(held)] if layers > 1 else grids.size
    # First-layer grids an earlier search of these frames already tracked (a search around a
    # jump after the whole stretch's): their states are taken as they are, not tracked again.
    given = np.zeros(grids.size, dtype=bool)
    given_states = {}  # first state of the grid -> (Q, ok) over the take
    for g, h in enumerate(held):
        if known is not None and h in known:
            a = grids.first[g]
            given[a : a + len(grids.values[g])] = True
            given_states[a] = known[h]
    gs = HeldSolver(solver)
    S, dof = grids.size, len(start)
    hv, vv = grids.state_held, grids.state_value
    Q = np.empty((n, S, dof))
    ok = np.zeros((n, S), dtype=bool)
    first = np.repeat(start[None], S, axis=0)
    first[np.arange(S), hv] = vv
    trk = None if tr is None else tr[:, None]
    last = None
    velocity = np.zeros((S, dof))
    lo = 0
    while lo < n:
        hi = min(lo + (_SEGMENT_ONE_GRID if len(held) == 1 else _SEGMENT), n)
        m = hi - lo
        if last is None:
            guess = np.repeat(first[None], m, axis=0)
        else:
            guess = last[None] + np.arange(1, m + 1)[:, None, None] * velocity[None]
            guess[:, np.arange(S), hv] = vv
        tps = np.broadcast_to(tp[lo:hi, None], (m, S, *tp.shape[1:])).reshape(m * S, *tp.shape[1:])
        trs = None if tr is None else np.broadcast_to(trk[lo:hi], (m, S, *tr.shape[1:])).reshape(m * S, *tr.shape[1:])
        q = guess.reshape(m * S, dof).copy()
        conv = np.zeros(m * S, dtype=bool)
        held_rows = np.tile(hv, m)
        # Only states that had their target at the last frame are tracked on (if none had,
        # every state starts again from where it got to).
        live = np.ones(S, dtype=bool) if last is None or not ok[lo - 1].any() else ok[lo - 1].copy()
        if last is None:
            live[first_layer_size:] = False  # second layers wait for crossings to seed them
        live &= ~given
        rows = np.flatnonzero(np.tile(live, m))
        iters = _SEED_ITERATIONS if last is None else _TRACK_ITERATIONS
        # Near a singularity Gauss-Newton converges slowly: states short of their target after
        # tracking get more iterations before they are given up.
        q[rows], conv[rows] = gs.run(q[rows], held_rows[rows], tps[rows], None if trs is None else trs[rows], iters,
                                     retry=_SEED_ITERATIONS if iters < _SEED_ITERATIONS else 0)
        q, conv = q.reshape(m, S, dof), conv.reshape(m, S)
        for a, (q_given, ok_given) in given_states.items():
            k = q_given.shape[1]
            q[:, a : a + k], conv[:, a : a + k] = q_given[lo:hi], ok_given[lo:hi]
        _restart_lost(gs, grids, q, conv, tps.reshape(m, S, *tp.shape[1:]),
                      None if trs is None else trs.reshape(m, S, *tr.shape[1:]), given)
        if layers > 1:
            _seed_crossings(gs, grids, q, conv, tps.reshape(m, S, *tp.shape[1:]),
                            None if trs is None else trs.reshape(m, S, *tr.shape[1:]), max_jump)
        Q[lo:hi], ok[lo:hi] = q, conv
        prev = Q[hi - 2] if m > 1 else (last if last is not None else first)
        both = ok[hi - 1] & (ok[hi - 2] if m > 1 else True)
        step = Q[hi - 1] - prev
        # A state (re)seeded at the last frame moved there from elsewhere: it has no velocity yet.
        both &= np.max(np.abs(step), axis=-1) <= max_jump
        velocity = np.where(both[:, None], step, 0.0)
        last = Q[hi - 1]
        lo = hi
    if keep is not None:
        for g, h in enumerate(held):
            a = grids.first[g]
            keep[h] = (Q[:, a : a + len(grids.values[g])], ok[:, a : a + len(grids.values[g])])
    if incumbent is not None:
        # The answer so far is one more state per frame: the search keeps it where it is
        # smooth and leaves it only where a grid path does better.
        Q = np.concatenate([Q, np.asarray(incumbent, dtype=float)[:, None]], axis=1)
        ok = np.concatenate([ok, np.asarray(incumbent_ok, dtype=bool)[:, None]], axis=1)
    D, back = _shortest_paths(Q, ok, grids, start, max_jump, steps_of)
    return candidate_paths(Q, ok, D, back, incumbent is not None, start=start, turns=turns)


def _restart_lost(gs, grids: _Grids, q: np.ndarray, conv: np.ndarray, tp: np.ndarray, tr: np.ndarray | None,
                  given: np.ndarray | None = None) -> None:
    """Restart the grid values just past the reached part of their grid, in place.

    The reachable part of a grid grows by a few values per frame at most: only values up to
    ``_REACH + 1`` from the nearest value that has its target are worth a restart, each from
    that one's configuration moved to its own value. The reached values of a grid form
    intervals, and a value further out is almost never reached where the next value past the
    interval is not, so the next value is restarted first, and the values beyond it only
    where it was reached: where an interval does not grow, one restart per end and frame,
    not ``_REACH + 1``.

    Args:
        gs: The held-variable Gauss-Newton solver.
        grids: The grids.
        q: (m, S, dof) the segment's states, updated in place.
        conv: (m, S) which of them reach their targets, updated in place.
        tp: (m, S, ...) their position targets.
        tr: (m, S, ...) their rotation targets, or None without rotations.
        given: (S,) states an earlier search tracked and restarted already (not restarted), or None.
    """
    m = conv.shape[0]
    near, offset = grids.nearest_true(conv)
    gap = np.abs(offset)
    lost = ~conv & conv[np.arange(m)[:, None], near] & (gap <= _REACH + 1)
    if given is not None:
        lost &= ~given
    f, k = np.nonzero(lost)
    gap, source = gap[f, k], near[f, k]
    # The next value past the reached one on the same side.
    next_out = grids.along(source, np.sign(offset[f, k]))
    for first in (True, False):
        pick = gap == 1 if first else (gap > 1) & conv[f, next_out]
        if not pick.any():
            return
        fp, kp = f[pick], k[pick]
        seed = q[fp, source[pick]]  # fancy indexing: a copy
        seed[np.arange(len(kp)), grids.state_held[kp]] = grids.state_value[kp]
        q2, conv2 = gs.run(seed, grids.state_held[kp], tp[fp, kp], None if tr is None else tr[fp, kp],
                           _RESTART_ITERATIONS)
        q[fp[conv2], kp[conv2]] = q2[conv2]
        conv[fp[conv2], kp[conv2]] = True


def _seed_crossings(gs, grids, q, conv, tp, tr, max_jump: float) -> None:
    """Give each variable's second grid the states where another variable's grid folds, in place.

    A held value meets the self-motion at several points (both sides of each closed curve,
    on each branch); a grid tracks one of them. Near its fold (|n_i| small) a grid's path must
    cross to another variable's grid, which is only possible if that grid holds the same
    point. So for every state whose own variable is worse conditioned than variable h there
    (|n_own| < |n_h|) and that no grid of h holds, a second-layer state of h at the nearest
    value is seeded from it and solved with the value held. Only the segment's last frame is
    seeded; the new states are tracked on from there.

    Args:
        gs: The held-variable Gauss-Newton solver.
        grids: The grids, second layers after the first (same variables, same order).
        q: (m, S, dof) the segment's states, updated in place.
        conv: (m, S) which of them reach their targets, updated in place.
        tp: (m, S, ...) their position targets.
        tr: (m, S, ...) their rotation targets, or None without rotations.
        max_jump: Largest accepted step [rad or m]: states closer than half of it are the same.
    """
    f = q.shape[0] - 1
    live = np.flatnonzero(conv[f])
    if not len(live):
        return
    n_held = len(grids.held) // 2
    own = grids.state_held[live]
    # States of another variable that no grid of h holds yet (either layer, nearest value):
    # the candidates, found before any null vector is computed, as only theirs are compared.
    candidates = {}
    for g in range(n_held, len(grids.held)):
        h, a = grids.held[g], grids.first[g]
        src = np.flatnonzero(own != h)
        k = grids.nearest_on(g, q[f, live[src], h]) - a
        held_by = np.zeros(len(src), dtype=bool)
        for layer in (g - n_held, g):
            state = grids.first[layer] + k
            near = np.max(np.abs(q[f, state] - q[f, live[src]]), axis=-1) < 0.5 * max_jump
            held_by |= conv[f, state] & near
        if not held_by.all():
            candidates[g] = (src[~held_by], k[~held_by])
    if not candidates:
        return
    need = np.unique(np.concatenate([src for src, _ in candidates.values()]))
    _, J = gs.solver.model.poses_and_jacobians(q[f, live[need]])
    null = null_vectors(J.reshape(len(need), -1, J.shape[-1]), moving_variables(gs.solver.skeleton))  # a row per state
    rows, seeds = [], []
    for g, (src, k) in candidates.items():
        h, a, vals = grids.held[g], grids.first[g], grids.values[g]
        at = np.searchsorted(need, src)
        worse = null[at, own[src]] < null[at, h]
        src, k, at = src[worse], k[worse], at[worse]
        if not len(src):
            continue
        # Per value, the state whose own variable is the worst conditioned: the surest crossing.
        ratio = null[at, own[src]] / null[at, h]
        order = np.lexsort((ratio, k))
        src, k = src[order], k[order]
        first = np.r_[True, k[1:] != k[:-1]]
        seed = q[f, live[src[first]]]  # fancy indexing: a copy
        seed[:, h] = vals[k[first]]
        rows.append(a + k[first])
        seeds.append(seed)
    if not seeds:
        return
    rows = np.concatenate(rows)
    seeds = np.concatenate(seeds)
    q2, ok2 = gs.run(seeds, grids.state_held[rows], tp[f, rows], None if tr is None else tr[f, rows],
                     _SEED_ITERATIONS)
    # Only a solution next to its source is the crossing it was seeded for.
    take = ok2 & (np.max(np.abs(q2 - seeds), axis=-1) < max_jump)
    q[f, rows[take]] = q2[take]
    conv[f, rows[take]] = True


def _shortest_paths(Q, ok, grids: _Grids, start, max_jump: float, steps_of) -> tuple[np.ndarray, np.ndarray]:
    """Cheapest paths through the states of every frame, by dynamic programming.

    A grid state is reached from the states up to ``_REACH`` values away on its own grid,
    from the three states of every other grid nearest its value of that grid's variable, and
    from the incumbent (the last state, when there is one), which is reached from every state.

    Only moves that can lie on one of the two paths :func:`candidate_paths` returns are costed.
    With an incumbent, following it all the way is a path, so its cost ``bound`` is at least
    the cheapest path's and the cheapest ending on the incumbent's; costs only grow along a
    path, so a state whose cost exceeds ``bound`` (a frame the state misses, or a path that
    took too many jumps) lies on neither, and no move out of it is costed. Every state whose
    cost is at most ``bound`` gets exactly the cost and predecessor the full table gives it
    (the moves it is cheapest reached by all start at such states), so the returned paths are
    the same; states above ``bound`` are left at a larger cost, or infinity.

    Returns:
        (S,) cost of the cheapest path to each state of the last frame (exact up to
        ``bound``, larger above it), and (N, S) the state of the frame before that each
        state is best reached from (for the states of cost up to ``bound``).
    """
    n, S = ok.shape
    G = grids.size
    states = np.arange(G)
    incumbent = S > G
    miss = np.where(ok, 0.0, MISS_PENALTY)
    D = step_cost(steps_of(start[None], Q[0]), max_jump) + miss[0]
    bound = _incumbent_cost(Q[:, -1], miss[:, -1], start, max_jump, steps_of) if incumbent else np.inf
    back = np.zeros((n, S), dtype=np.int32)
    best = np.empty(S)
    # States variable-major (N, dof, S): the configurations of the moves costed are gathered
    # (np.take) as (dof, moves), so each move's step reduces over the variables along the outer,
    # not the inner axis of memory: two to three times faster for a few variables.
    QT = np.ascontiguousarray(Q.transpose(0, 2, 1))
    # Which states each state may be reached from depends on the states alone: a batch of
    # frames at a time, (frames, moves, G) (bounded memory).
    chunk = max(1, _SOURCE_BATCH // (grids.moves.shape[0] + 3 * len(grids.crossings[0]) + 1) // G)
    for t0 in range(1, n, chunk):
        t1 = min(t0 + chunk, n)
        sources, valid = _sources(Q, grids, t0, t1, incumbent)
        for i, t in enumerate(range(t0, t1)):
            alive = D <= bound
            src = sources[i]
            # Moves out of states that may still lie on a returned path, into such states.
            use = valid[i] & alive[src] & (miss[t, :G] <= bound)
            c = np.full(src.shape, np.inf)
            r, k = np.nonzero(use)
            if len(r):
                s_used = src[r, k]
                before, after = np.take(QT[t - 1], s_used, axis=1).T, np.take(QT[t], k, axis=1).T
                c[r, k] = D[s_used] + step_cost(steps_of(before, after), max_jump)
            pick = np.argmin(c, axis=0)
            best[:G] = c[pick, states]
            back[t, :G] = src[pick, states]
            if incumbent:
                # The incumbent from every state, itself included.
                live = np.flatnonzero(alive)
                best[S - 1] = np.inf
                if len(live):
                    before = np.take(QT[t - 1], live, axis=1).T
                    ci = D[live] + step_cost(steps_of(before, QT[t][:, S - 1 :].T), max_jump)
                    j = int(np.argmin(ci))
                    back[t, S - 1] = live[j]
                    best[S - 1] = ci[j]
            D = best + miss[t]
    return D, back


def _sources(Q, grids: _Grids, t0: int, t1: int, incumbent: bool) -> tuple[np.ndarray, np.ndarray]:
    """The states of frame t - 1 each grid state of frame t may be reached from, for frames t0 .. t1 - 1.

    Returns:
        (T, R, G) state indices (0 where there is none) and (T, R, G) which of them exist:
        along the state's own grid, then for d = -1, 0, 1 the state d values from the nearest
        value of every other grid, then (with an incumbent) the incumbent.
    """
    G = grids.size
    moves, held, first, size, v0, cell, circular = grids.moves, *grids.crossings
    T = t1 - t0
    # Into a state from the states of another grid holding about the same value of that
    # grid's variable as this state's configuration does (round a circular grid).
    value = Q[np.arange(t0, t1)[:, None, None], np.arange(G)[None, None, :], held[None]]  # (T, grids - 1, G)
    index = np.rint((value - v0) / cell).astype(int)
    centre = np.where(circular, index, np.clip(index, 0, size - 1))
    parts = [np.broadcast_to(moves, (T, *moves.shape))]
    parts += [first + np.where(circular, np.remainder(centre + d, size), np.clip(centre + d, 0, size - 1))
              for d in (-1, 0, 1)]
    if incumbent:
        parts.append(np.full((T, 1, G), Q.shape[1] - 1))
    src = np.concatenate(parts, axis=1)
    valid = src >= 0
    return np.where(valid, src, 0), valid


def _incumbent_cost(inc: np.ndarray, miss: np.ndarray, start: np.ndarray, max_jump: float, steps_of) -> float:
    """Cost of the path that follows the incumbent ``inc`` (N, dof) throughout, summed as the programme sums.

    Rounding is monotonic, so summing in the same order as :func:`_shortest_paths` gives an
    upper bound on the cost it finds for the incumbent's last state, not just an estimate.
    """
    steps = step_cost(steps_of(np.concatenate([start[None], inc[:-1]]), inc), max_jump)
    total = steps[0] + miss[0]
    for step, m in zip(steps[1:], miss[1:]):
        total = (total + step) + m
    return float(total)
