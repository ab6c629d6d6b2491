# SPDX-License-Identifier: GPL-3.0-or-later
"""Key reduction with an error bound: the fewest frames to key so that a take still plays within a tolerance.

A baked take keys every frame. Between two kept keys a curve interpolates its channel values;
a frame may go when the pose interpolated there moves no effector farther than the tolerance
from where the full take has it. The error is measured where it matters (effector positions,
through the caller's ``deviation``), not on the channels themselves: a shoulder's small turn
can move a hand a long way, a wrist's large one barely.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..errors import InvalidInputError


def interpolate_kept(values: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """Channel values (N, C) with every frame between two kept frames replaced by their linear blend.

    Args:
        values: (N, C) channel values per frame.
        kept: (K,) increasing frame indices, the first and last frame among them.

    Returns:
        (N, C) values: the kept frames as they are, the others interpolated linearly.
    """
    values = np.asarray(values, dtype=float)
    frames = np.arange(len(values))
    after = np.clip(np.searchsorted(kept, frames, side="left"), 1, len(kept) - 1)
    a, b = kept[after - 1], kept[after]
    w = ((frames - a) / np.maximum(b - a, 1))[:, None]
    out = (1.0 - w) * values[a] + w * values[b]
    out[kept] = values[kept]
    return out


# Blender's automatic F-curve handles without smoothing reach this share of the interval to the
# neighbouring key (2 / (2 x 2.5614)), and a handle at most 5 times the other's interval.
AUTO_HANDLE = 2.0 / (2.0 * 2.5614)
_HANDLE_RATIO = 5.0
_NEWTON_STEPS = 4


def auto_clamped_slopes(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Handle slopes and lengths Blender gives keys (x, y) with auto-clamped handles and no smoothing.

    Each handle points along the mean slope of the chords to the neighbouring keys; it is flat at
    a key that is a local extreme and at the first and last keys (the curve extends constant);
    a handle that would pass the neighbouring key's value is cut to it, and the key's other
    handle turned to the same slope.

    Args:
        x: (K,) increasing key frames.
        y: (K, C) key values per channel.

    Returns:
        slope: (K, C) slope of each key's handles [value per frame]; left: (K,) and right: (K,)
        the x-lengths of its left and right handles [frames].
    """
    k = len(x)
    dx = np.diff(x)
    left = np.zeros(k)
    right = np.zeros(k)
    before = np.concatenate([[dx[0]], dx])  # the first key mirrors its next interval
    after = np.concatenate([dx, [dx[-1]]])
    left[:] = AUTO_HANDLE * np.minimum(before, _HANDLE_RATIO * after)
    right[:] = AUTO_HANDLE * np.minimum(after, _HANDLE_RATIO * before)
    slope = np.zeros(y.shape)
    if k < 3:
        return slope, left, right
    chord = np.diff(y, axis=0) / dx[:, None]
    yp, yc, yn = y[:-2], y[1:-1], y[2:]
    s = 0.5 * (chord[:-1] + chord[1:])
    hl, hr = left[1:-1, None], right[1:-1, None]
    left_y, right_y = yc - s * hl, yc + s * hr
    left_cut = (yp - yc) * (left_y - yp) > 0.0
    right_cut = (yn - yc) * (right_y - yn) > 0.0
    s = np.where(left_cut, (yc - yp) / hl, np.where(right_cut, (yn - yc) / hr, s))
    extreme = (yp - yc) * (yn - yc) >= 0.0
    slope[1:-1] = np.where(extreme, 0.0, s)
    return slope, left, right


def interpolate_auto_clamped(values: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """Channel values (N, C) as Blender plays keys on the frames ``kept`` with auto-clamped handles, no smoothing.

    Between two keys a channel is the cubic Bezier through the keys and their handles
    (:func:`auto_clamped_slopes`), read at the parameter whose x is the frame.

    Args:
        values: (N, C) channel values per frame.
        kept: (K,) increasing frame indices, the first and last frame among them.

    Returns:
        (N, C) values: the kept frames as they are, the others as the curves play them.
    """
    values = np.asarray(values, dtype=float)
    kept = np.asarray(kept)
    if len(kept) < 2:
        return values.copy()
    x = kept.astype(float)
    y = values[kept]
    slope, left, right = auto_clamped_slopes(x, y)
    frames = np.arange(len(values), dtype=float)
    seg = np.clip(np.searchsorted(kept, frames, side="right") - 1, 0, len(kept) - 2)
    length = x[seg + 1] - x[seg]
    a1 = right[seg] / length  # the handles' x as shares of the interval
    a2 = 1.0 - left[seg + 1] / length
    u = (frames - x[seg]) / length
    t = u.copy()
    for _ in range(_NEWTON_STEPS):  # x(t) is monotonic: Newton from t = u
        p, q = 1.0 - t, t
        xt = 3.0 * p * p * q * a1 + 3.0 * p * q * q * a2 + q**3
        dxt = 3.0 * p * p * a1 + 6.0 * p * q * (a2 - a1) + 3.0 * q * q * (1.0 - a2)
        t = np.clip(t - (xt - u) / np.maximum(dxt, 1e-12), 0.0, 1.0)
    p, q = (1.0 - t)[:, None], t[:, None]
    y0, y1 = y[seg], y[seg + 1]
    c1 = y0 + slope[seg] * right[seg][:, None]
    c2 = y1 - slope[seg + 1] * left[seg + 1][:, None]
    out = p**3 * y0 + 3.0 * p * p * q * c1 + 3.0 * p * q * q * c2 + q**3 * y1
    out[kept] = values[kept]
    return out


def keep_frames(
    values: np.ndarray,
    deviation: Callable[[np.ndarray, np.ndarray], np.ndarray],
    tolerance: float,
    must_keep: np.ndarray | None = None,
    interpolate: Callable[[np.ndarray, np.ndarray], np.ndarray] = interpolate_kept,
) -> np.ndarray:
    """The frames to key so that interpolating the others deviates by at most ``tolerance``.

    Split-at-the-worst (Ramer-Douglas-Peucker) over the take: a span between two kept frames
    whose interpolated frames all deviate within ``tolerance`` is done; otherwise its worst
    frame is kept and both halves are checked. Every span is judged by the caller's measure, in
    one call per round for all the spans still open.

    Args:
        values: (N, C) channel values per frame (N >= 1).
        deviation: ``deviation(frames, interpolated)``: (k,) how far the frames ``frames`` (k,)
            move when posed with the channel values ``interpolated`` (k, C) instead of their own
            [the caller's unit, e.g. metres of effector position].
        tolerance: Largest deviation allowed (>= 0; 0 keeps every frame that differs at all).
        must_keep: Optional (N,) bool, frames kept whatever (for example frames where a
            constraint switches).
        interpolate: How the curves play the frames between kept keys:
            :func:`interpolate_kept` (linear, the default) or :func:`interpolate_auto_clamped`
            (Blender's default Bezier keys).

    Returns:
        (K,) increasing indices of the frames to key; always the first and the last.

    Raises:
        InvalidInputError: Empty or non-finite values, a negative or non-finite tolerance.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim != 2 or len(values) == 0:
        raise InvalidInputError(f"values must be (N, C) with N >= 1 frames, got shape {values.shape}")
    if not np.isfinite(values).all():
        raise InvalidInputError("values contain NaN or infinite entries")
    if not (np.isfinite(tolerance) and tolerance >= 0):
        raise InvalidInputError(f"tolerance must be a finite number >= 0, got {tolerance!r}")
    n = len(values)
    kept = np.zeros(n, dtype=bool)
    kept[[0, n - 1]] = True
    if must_keep is not None:
        kept |= np.asarray(must_keep, dtype=bool)
    while True:
        idx = np.flatnonzero(kept)
        inner = np.setdiff1d(np.arange(n), idx)
        if not len(inner):
            break
        interpolated = interpolate(values, idx)
        off = np.asarray(deviation(inner, interpolated[inner]), dtype=float)
        bad = ~(off <= tolerance)  # NaN counts as too far
        if not bad.any():
            break
        # The worst frame of each span between kept frames that has one over the tolerance.
        span = np.searchsorted(idx, inner[bad])
        worst = {}
        for s, f, d in zip(span, inner[bad], np.where(np.isnan(off[bad]), np.inf, off[bad])):
            if s not in worst or d > worst[s][1]:
                worst[s] = (f, d)
        kept[[f for f, _ in worst.values()]] = True
    return np.flatnonzero(kept)


# Key spacings [frames] tried as starting grids by :func:`fewest_keys`.
GRID_STEPS = (2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 30)


def fewest_keys(
    values: np.ndarray,
    deviation: Callable[[np.ndarray, np.ndarray], np.ndarray],
    tolerance: float,
    must_keep: np.ndarray | None = None,
    interpolate: Callable[[np.ndarray, np.ndarray], np.ndarray] = interpolate_kept,
    steps: tuple[int, ...] = GRID_STEPS,
) -> np.ndarray:
    """The fewest frames :func:`keep_frames` then :func:`prune_keys` find from no grid and from even grids of keys.

    Splitting at the worst frame is greedy: on smooth motion a curve through evenly spaced keys
    often needs fewer, since a Bezier key also shapes its neighbours' handles. Each grid (every
    ``step`` frames, plus the frames that must stay) is refined by :func:`keep_frames` until the
    tolerance holds, then pruned; the smallest answer wins. Arguments as :func:`keep_frames`.

    Returns:
        (K,) increasing indices of the frames to key.
    """
    n = len(np.asarray(values))
    must = np.zeros(n, dtype=bool) if must_keep is None else np.asarray(must_keep, dtype=bool)
    best = prune_keys(values, keep_frames(values, deviation, tolerance, must, interpolate), deviation, tolerance,
                      must, interpolate)
    for step in steps:
        if step >= n - 1 or n // step + 1 >= len(best):
            continue
        for offset in range(0, step, max(step // 3, 1)):  # shifted grids: a kink need not fall between keys
            grid = must.copy()
            grid[offset::step] = True
            found = prune_keys(values, keep_frames(values, deviation, tolerance, grid, interpolate), deviation,
                               tolerance, must, interpolate)
            if len(found) < len(best):
                best = found
    return best


def prune_keys(
    values: np.ndarray,
    kept: np.ndarray,
    deviation: Callable[[np.ndarray, np.ndarray], np.ndarray],
    tolerance: float,
    must_keep: np.ndarray,
    interpolate: Callable[[np.ndarray, np.ndarray], np.ndarray] = interpolate_kept,
) -> np.ndarray:
    """``kept`` with every key dropped whose removal keeps the frames around it within ``tolerance``.

    Splitting only ever adds keys, and an early split can make a later one needless. Sweeps
    left to right and right to left in turn until one drops nothing; a key's removal changes the curve between the keys
    two away on each side (auto handles look at their neighbours), so only those frames are
    measured.

    Returns:
        (K',) increasing indices, a subset of ``kept``.
    """
    values = np.asarray(values, dtype=float)
    keys = list(np.asarray(kept))
    before, backward = len(keys) + 1, False
    while len(keys) < before:  # sweeps until one drops nothing (each removal can free a neighbour)
        before = len(keys)
        keys = _sweep(values, keys, deviation, tolerance, must_keep, interpolate, backward)
        backward = not backward
    return np.array(keys)


def _sweep(values, keys: list, deviation, tolerance: float, must_keep, interpolate, backward: bool) -> list:
    """One pass of :func:`prune_keys` over ``keys``, left to right or right to left."""
    if backward:
        # Walk the mirrored take: the same rules, keys met from the end.
        n = len(values) - 1
        mirrored = _sweep(values[::-1], [n - k for k in reversed(keys)], lambda f, v: deviation(n - f, v),
                          tolerance, must_keep[::-1], interpolate, False)
        return [n - k for k in reversed(mirrored)]
    i = 1
    while i < len(keys) - 1:
        if must_keep[keys[i]]:
            i += 1
            continue
        trial = keys[:i] + keys[i + 1 :]
        lo, hi = keys[max(i - 2, 0)], keys[min(i + 2, len(keys) - 1)]
        # The curve on [lo, hi] depends on the keys three away on each side at most: interpolate
        # only the stretch from the keys four away (whose own, cut-off handles lie outside it).
        first, last = keys[max(i - 4, 0)], keys[min(i + 4, len(keys) - 1)]
        local = np.array([k for k in trial if first <= k <= last]) - first
        window = np.arange(lo, hi + 1)
        inner = window[~np.isin(window, trial)]
        if len(inner):
            played = interpolate(values[first : last + 1], local)
            off = np.asarray(deviation(inner, played[inner - first]), dtype=float)
        else:
            off = np.zeros(0)
        if np.all(off <= tolerance):
            keys = trial
        else:
            i += 1
    return keys
