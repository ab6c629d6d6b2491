# SPDX-License-Identifier: GPL-3.0-or-later
"""Step timing read from the head: heel strikes at its bob minima, which foot from its sway."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError
from .geometry import gaussian_smooth

__all__ = ["CadenceOptions", "StepSchedule", "step_schedule"]


@dataclass(frozen=True)
class CadenceOptions:
    """Thresholds of the step timing.

    Attributes:
        bob_depth: Smallest rise of the head between two of its minima for both to count as
            heel strikes [m] (a walking head bobs 2-5 cm; tracker jitter is well below 1 cm).
        walk_speed: Smallest horizontal speed of the body at a minimum for it to count as a
            heel strike [m/s]: a head that bobs in place (standing, bouncing, a hop on the
            spot) forces no steps.
        min_half_cycle: Shortest time between two heel strikes [s].
        max_half_cycle: Longest time between two heel strikes of one walk [s]; a longer gap
            ends the walk (the feet then step as the body needs, see :func:`plan_steps`).
        double_support: Share of the time between two heel strikes that both feet are on the
            ground after each strike (the trailing foot's toe-off) [0, 0.6].
        strike_lead: Share of the time between two strikes by which a heel strike precedes the
            head's minimum (the head is lowest in the middle of double support, later in a
            slow walk's longer double support) [0, 0.5].
        smoothing: Gaussian sigma that removes jitter from the head height [s].
        window: Gaussian sigma of the head height's slow part (crouching, slopes), removed
            before the minima are sought [s].
    """

    bob_depth: float = 0.006
    walk_speed: float = 0.15
    min_half_cycle: float = 0.25
    max_half_cycle: float = 1.0
    double_support: float = 0.2
    strike_lead: float = 0.1
    smoothing: float = 0.03
    window: float = 0.4

    def __post_init__(self) -> None:
        for name in ("bob_depth", "min_half_cycle", "max_half_cycle", "window"):
            if not getattr(self, name) > 0.0:
                raise InvalidInputError(f"CadenceOptions.{name} must be > 0, got {getattr(self, name)}")
        for name in ("walk_speed", "smoothing"):
            if not getattr(self, name) >= 0.0:
                raise InvalidInputError(f"CadenceOptions.{name} must be >= 0, got {getattr(self, name)}")
        if not 0.0 <= self.double_support <= 0.6:
            raise InvalidInputError(f"CadenceOptions.double_support must be in [0, 0.6], got {self.double_support}")
        if not 0.0 <= self.strike_lead <= 0.5:
            raise InvalidInputError(f"CadenceOptions.strike_lead must be in [0, 0.5], got {self.strike_lead}")
        if not self.max_half_cycle > self.min_half_cycle:
            raise InvalidInputError(
                f"CadenceOptions.max_half_cycle ({self.max_half_cycle}) must exceed min_half_cycle "
                f"({self.min_half_cycle})"
            )


@dataclass(frozen=True, eq=False)
class StepSchedule:
    """Timed steps of the walks found in a take, in time order.

    Attributes:
        lift: (K,) frame on which each step's foot leaves the ground.
        land: (K,) frame on which it lands (a heel strike), > ``lift``.
        foot: (K,) 0 for the left foot, 1 for the right.
        stance_end: (K,) frame on which the landed foot lifts again (its next step's ``lift``;
            for the last step of a walk, one stride after landing, capped at the take's end).
        walking: (N,) True on the frames of a walk (from its first lift to its last landing),
            where the schedule, not the body's drift, decides when feet step.
    """

    lift: np.ndarray
    land: np.ndarray
    foot: np.ndarray
    stance_end: np.ndarray
    walking: np.ndarray

    def __len__(self) -> int:
        """Number of steps."""
        return int(self.lift.size)


def _bob_minima(height: np.ndarray, speed: np.ndarray, frame_time: float, o: CadenceOptions) -> list[int]:
    """Frames of the head's bob minima that are heel strikes (deep enough, apart enough, moving)."""
    z = gaussian_smooth(height, o.smoothing / frame_time)
    bob = z - gaussian_smooth(height, o.window / frame_time)
    inner = np.flatnonzero((bob[1:-1] < bob[:-2]) & (bob[1:-1] <= bob[2:])) + 1
    gap = max(int(round(o.min_half_cycle / frame_time)), 1)
    kept: list[int] = []
    for c in inner:
        if kept:
            k = kept[-1]
            rise = float(bob[k : c + 1].max()) - max(bob[k], bob[c])
            if c - k < gap or rise < o.bob_depth:
                if bob[c] < bob[k]:
                    kept[-1] = int(c)  # the deeper of two minima that are one dip
                continue
        kept.append(int(c))
    return [k for k in kept if speed[k] >= o.walk_speed]


def _first_foot(strikes: np.ndarray, head: np.ndarray, heading: np.ndarray, frame_time: float) -> int:
    """Which foot (0 left, 1 right) lands at the first strike of a walk, by the head's sway.

    Between two strikes the foot that landed at the first carries the body, and the head
    sways over it (balance demands it, whatever the walk's style). The head's sideways offset
    from its own smoothed path is averaged over each half cycle and summed with alternating
    signs (the feet alternate), so a slow drift to one side cancels out. Arm swing is not
    used: it is against the legs in an ordinary walk but with them in many styled ones (the
    CMU 131 walks swing each arm with its own leg).
    """
    right = np.stack([np.cos(heading), np.sin(heading)], axis=-1)  # heading 0 faces +y
    path = gaussian_smooth(head[:, :2], 0.5 / frame_time)
    sway = np.sum((head[:, :2] - path) * right, axis=-1)
    a, b = strikes[:-1], strikes[1:]
    csum = np.concatenate([[0.0], np.cumsum(sway)])
    mean = (csum[b] - csum[a]) / np.maximum(b - a, 1)
    alternate = np.where(np.arange(len(a)) % 2 == 0, 1.0, -1.0)  # +1 where the first foot carries
    # A head to the right of its path while the first foot carries: that foot is the right one.
    return 1 if float(np.sum(mean * alternate)) > 0.0 else 0


def step_schedule(
    head: np.ndarray,
    pelvis: np.ndarray,
    heading: np.ndarray,
    frame_time: float,
    options: CadenceOptions | None = None,
) -> StepSchedule:
    """Time the steps of a take from its head tracker.

    A walking head bobs twice per stride: it is lowest in double support, just as a heel
    strikes, and highest over the stance leg. The bob's minima on frames where the body moves
    are taken as heel strikes; strikes closer than ``max_half_cycle`` form one walk, whose feet
    alternate (which foot first from the head's sideways sway). The foot
    landing at strike i lifted ``double_support`` of the half cycle after strike i-1 (the
    trailing foot's toe-off); the first strike of a walk is the landing of a step that took one
    half cycle less that share.

    Args:
        head: (N, 3) world head positions [m], z up.
        pelvis: (N, 3) world pelvis positions [m] (its ground speed says whether the body walks).
        heading: (N,) body heading [rad], heading 0 facing +y.
        frame_time: Seconds per frame (> 0).
        options: Thresholds; defaults when None.

    Returns:
        The steps (none when the body never walks).

    Raises:
        InvalidInputError: On wrong shapes or a non-positive frame time.
    """
    o = options or CadenceOptions()
    n = int(np.shape(head)[0]) if np.ndim(head) == 2 else -1
    if (
        np.shape(head) != (n, 3)
        or np.shape(pelvis) != (n, 3)
        or np.shape(heading) != (n,)
    ):
        raise InvalidInputError(
            "step_schedule needs head (N, 3), pelvis (N, 3) and heading (N,); got "
            f"{np.shape(head)}, {np.shape(pelvis)}, {np.shape(heading)}"
        )
    if not frame_time > 0:
        raise InvalidInputError(f"frame_time must be > 0 seconds, got {frame_time}")
    empty = np.zeros(0, dtype=int)
    walking = np.zeros(max(n, 0), dtype=bool)
    if n < 3:
        return StepSchedule(empty, empty, empty, empty, walking)
    path = gaussian_smooth(pelvis[:, :2], 0.1 / frame_time)
    speed = np.linalg.norm(np.gradient(path, axis=0), axis=-1) / frame_time
    strikes = _bob_minima(head[:, 2], speed, frame_time, o)
    longest = int(round(o.max_half_cycle / frame_time))
    walks: list[list[int]] = []
    for s in strikes:
        if walks and s - walks[-1][-1] <= longest:
            walks[-1].append(s)
        else:
            walks.append([s])
    lift, land, foot, stance_end = [], [], [], []
    for w in walks:
        if len(w) < 3:
            continue  # one or two dips are no rhythm: the body's drift decides
        s = np.asarray(w)
        first = _first_foot(s, head, heading, frame_time)
        half = np.diff(s)
        s = s - np.round(o.strike_lead * np.r_[half[0], half]).astype(int)
        lifts = np.empty(len(s), dtype=int)
        lifts[1:] = s[:-1] + np.round(o.double_support * half).astype(int)
        lifts[0] = max(s[0] - int(round((1.0 - o.double_support) * half[0])), 0)
        feet = (first + np.arange(len(s))) % 2
        # A foot lifts again two steps later; the last two landings of a walk stand a stride.
        ends = np.full(len(s), min(int(s[-1] + 2 * half[-1]), n - 1))
        ends[:-2] = lifts[2:]
        ok = lifts < s
        lift.append(lifts[ok])
        land.append(s[ok])
        foot.append(feet[ok])
        stance_end.append(np.maximum(ends[ok], s[ok] + 1))
        walking[lifts[0] : s[-1] + 1] = True
    if not lift:
        return StepSchedule(empty, empty, empty, empty, walking)
    return StepSchedule(
        np.concatenate(lift), np.concatenate(land), np.concatenate(foot), np.concatenate(stance_end), walking
    )
