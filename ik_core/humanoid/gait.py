# SPDX-License-Identifier: GPL-3.0-or-later
"""Offline footstep planning: planted feet, steps triggered with look-ahead over the whole take."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidInputError
from .cadence import CadenceOptions, StepSchedule
from .geometry import gaussian_smooth

__all__ = ["FootPlan", "GaitOptions", "plan_steps"]


@dataclass(frozen=True)
class GaitOptions:
    """Stepping parameters.

    Attributes:
        step_distance: A foot steps when it is this far from where it would stand [m] ...
        stride_gain: ... plus this many seconds times the body's ground speed (longer strides
            when walking faster) [s].
        step_turn: ... or when the body has turned this much away from it [rad].
        anticipation: How far ahead the trigger looks, so steps start before the error [s].
        swing_time: Duration of one step's swing for a 0.5 m step [s]; shorter steps are quicker.
        lookahead: A step lands where the foot would stand this long after landing [s].
        step_height: Peak ankle lift of a 0.5 m step [m].
        min_width: Smallest lateral gap kept between the feet so they never cross [m].
        max_step: Longest step [m].
        settle_distance: A foot left farther than this from its place ...
        settle_time: ... for this long steps back to it while the body moves [s] (a body
            standing still keeps its stance, however uneven: a performer shifting the weight in
            place does not re-place the feet, and a walk's last step already aims at where the
            foot stands once the body stops, see ``still_horizon``); and no triggered step
            starts within this long before a scheduled one (a walk's first step moves the foot).
        still_speed: Below this ground speed of the body it counts as standing still [m/s].
        still_horizon: A step that lands at most this long before the body stands still goes
            straight to where the foot will stand then [s].
        push_off: Share of a scheduled swing over which the foot only rises (the heel lifts
            while the ball pushes off) before it moves forward, in [0, 0.8].
        swing_accel: Largest peak horizontal acceleration of a scheduled swing [m/s^2]; a
            longer step lifts earlier.
        cadence: Step timing read from the head's bob while walking (:func:`step_schedule`);
            None: every step is triggered by the body's drift.
    """

    step_distance: float = 0.16
    stride_gain: float = 0.15
    step_turn: float = np.radians(35.0)
    anticipation: float = 0.25
    swing_time: float = 0.28
    lookahead: float = 0.3
    step_height: float = 0.08
    min_width: float = 0.1
    max_step: float = 0.9
    settle_distance: float = 0.05
    settle_time: float = 0.4
    still_speed: float = 0.08
    still_horizon: float = 1.0
    push_off: float = 0.2
    swing_accel: float = 40.0
    cadence: CadenceOptions | None = field(default_factory=CadenceOptions)

    def __post_init__(self) -> None:
        if not 0.0 <= self.push_off <= 0.8:
            raise InvalidInputError(f"GaitOptions.push_off must be in [0, 0.8], got {self.push_off}")
        for name in ("step_distance", "step_turn", "swing_time", "max_step", "swing_accel"):
            if not getattr(self, name) > 0.0:
                raise InvalidInputError(f"GaitOptions.{name} must be > 0, got {getattr(self, name)}")
        for name in (
            "stride_gain",
            "anticipation",
            "lookahead",
            "step_height",
            "min_width",
            "settle_distance",
            "settle_time",
            "still_speed",
            "still_horizon",
        ):
            if not getattr(self, name) >= 0.0:
                raise InvalidInputError(f"GaitOptions.{name} must be >= 0, got {getattr(self, name)}")


@dataclass(frozen=True, eq=False)
class FootPlan:
    """Planned feet for N frames.

    Attributes:
        position: (N, 2, 2) horizontal ankle positions of the left and right foot [m].
        yaw: (N, 2) foot heading [rad].
        lift: (N, 2) ankle lift above its standing height [m].
        planted: (N, 2) True while the foot stands still on the floor.
        ball: (N, 2) True while the ball of the foot is on the floor: where ``planted``, and
            while the heel rises before a scheduled step moves forward (``push_off``).
    """

    position: np.ndarray
    yaw: np.ndarray
    lift: np.ndarray
    planted: np.ndarray
    ball: np.ndarray


def _wrap(a: np.ndarray) -> np.ndarray:
    return (a + np.pi) % (2.0 * np.pi) - np.pi


def plan_steps(
    neutral: np.ndarray,
    heading: np.ndarray,
    frame_time: float,
    options: GaitOptions,
    schedule: StepSchedule | None = None,
) -> FootPlan:
    """Plan footholds and swings for a whole take.

    A foot stays planted until, looking ``anticipation`` ahead, it is farther than
    ``step_distance`` from its neutral place (or turned more than ``step_turn``), or has been
    more than ``settle_distance`` away for ``settle_time`` while the body moves; it then swings to where it would
    stand ``lookahead`` after landing (or, if the body comes to rest within ``still_horizon``,
    where it will stand then), one foot at a time. The loop runs once per step, each
    iteration vectorised over a window of frames.

    Where a ``schedule`` times the steps of a walk (:func:`step_schedule`), its steps replace
    the triggers over the walk's frames: each foot lifts and lands on its scheduled frames and
    lands where it would stand on average over the stance that follows (the body passes over
    a planted foot), so it stays planted while the performer's does; such a step is as long
    as the walk makes it and may cross the other foot's line (``max_step`` and ``min_width``
    bound triggered steps only).

    Args:
        neutral: (N, 2, 2) where each foot would stand under the body [m] (left, right).
        heading: (N,) body heading [rad], unwrapped.
        frame_time: Seconds per frame.
        options: Stepping parameters.
        schedule: Timed steps of the take's walks; None: every step is triggered.

    Returns:
        The plan.
    """
    n = neutral.shape[0]
    o = options
    pos = np.empty((n, 2, 2))
    yaw = np.empty((n, 2))
    lift = np.zeros((n, 2))
    planted = np.ones((n, 2), dtype=bool)
    ball = np.ones((n, 2), dtype=bool)
    cur = neutral[0].copy()
    cur_yaw = np.array([heading[0], heading[0]])
    ahead = max(int(round(o.anticipation / frame_time)), 0)
    look = max(int(round(o.lookahead / frame_time)), 0)
    settle = max(int(round(o.settle_time / frame_time)), 0) if o.settle_distance > 0 else 0
    wait = max(int(round(o.settle_time / frame_time)), 0)
    center = gaussian_smooth(neutral.mean(axis=1), 0.1 / frame_time)
    speed = np.linalg.norm(np.gradient(center, axis=0), axis=-1) / frame_time if n > 1 else np.zeros(n)
    still = speed < o.still_speed
    horizon = int(round(o.still_horizon / frame_time))
    walking = np.zeros(n, dtype=bool) if schedule is None else schedule.walking
    steps = 0 if schedule is None else len(schedule)
    q = 0  # next scheduled step
    t = 0
    # Triggers are searched in windows so a long take costs O(frames), not O(frames x steps).
    window = max(int(round(10.0 / frame_time)), settle + 1)
    while t < n:
        while q < steps and schedule.land[q] <= t:
            q += 1  # a step whose landing a triggered step overran
        due = max(int(schedule.lift[q]), t) if q < steps else n  # a late step lifts at once
        stop = min(t + window, n, due)
        k = None
        if stop > t:
            idx = np.minimum(np.arange(t, stop) + ahead, n - 1)
            dist = np.linalg.norm(neutral[idx] - cur[None], axis=-1)
            turn = np.abs(_wrap(heading[idx, None] - cur_yaw[None]))
            reach = o.step_distance + o.stride_gain * speed[idx, None]
            score = np.maximum(dist / reach, turn / o.step_turn)
            trigger = np.any(score > 1.0, axis=1)
            if settle > 0:
                off = np.cumsum(np.concatenate([np.zeros((1, 2)), dist > o.settle_distance]), axis=0)
                lasting = np.zeros_like(trigger)
                lasting[settle - 1 :] = np.any(off[settle:] - off[:-settle] >= settle, axis=1)
                # A standing body keeps its stance: on the CMU takes a settle step while the
                # body stood was a step the performer never took (the feet stood uneven).
                trigger |= lasting & ~still[idx]
            trigger &= ~walking[t:stop]  # a walk's steps are the schedule's
            if q < steps:
                # A walk's first step is due within ``settle_time``: a foot off its place steps
                # then, as the performer's does (on the CMU takes a drifted or turned foot moved
                # just before it was a step too many, the performer's foot standing through it).
                trigger &= np.arange(t, stop) + wait < due
            over = np.flatnonzero(trigger)
            if over.size:
                k = int(over[0])
        if k is None and stop == due and q < steps:
            # The scheduled step: its own frames, landing where the foot stands on average
            # over its stance (the body passes over a planted foot).
            foot = int(schedule.foot[q])
            lift_at, land = due, int(schedule.land[q])
            stance = slice(land, max(int(schedule.stance_end[q]), land + 1))
            goal = neutral[stance, foot].mean(axis=0)
            goal_yaw = float(np.mean(heading[stance]))
            q += 1
        elif k is None:
            pos[t:stop], yaw[t:stop] = cur, cur_yaw
            if stop == n:
                break
            t = stop - settle if stop < due else stop  # re-scan the tail so a settle may span windows
            continue
        else:
            foot = int(np.argmax(score[k]))
            lift_at = t + k
            land_est = lift_at + int(round(o.swing_time / frame_time))
            aim = min(land_est + look, n - 1)
            ahead_still = np.flatnonzero(still[land_est : land_est + horizon])
            if ahead_still.size:
                aim = min(land_est + int(ahead_still[0]), n - 1)
            goal = neutral[aim, foot].copy()
            goal_yaw = float(heading[aim])
            land = -1
        scheduled = land >= 0
        if land < 0:  # triggered steps keep the feet apart; a scheduled one lands where the body passes
            goal = _keep_apart(goal, cur[1 - foot], goal_yaw, foot, o.min_width)
        stride = goal - cur[foot]
        length = float(np.linalg.norm(stride))
        if length > o.max_step and land < 0:  # a scheduled step is as long as the walk makes it
            goal = cur[foot] + stride * (o.max_step / length)
            length = o.max_step
        if land < 0:
            frames = max(int(round(o.swing_time * np.sqrt(max(length, 0.05) / 0.5) / frame_time)), 2)
        else:
            # A minimum-jerk swing of length L over T peaks at 5.77 L / T^2: a long step lifts
            # earlier (never before the last landing) rather than whipping the foot.
            need = int(np.ceil(np.sqrt(5.77 * length / o.swing_accel) / frame_time / (1.0 - o.push_off)))
            lift_at = min(lift_at, max(land - need, t))
            frames = max(land - lift_at, 1)
        pos[t : lift_at + 1], yaw[t : lift_at + 1] = cur, cur_yaw
        land = min(lift_at + frames, n - 1)
        s = np.arange(1, land - lift_at + 1) / frames
        # A walking foot's heel rises while its ball still pushes off: a scheduled step's foot
        # rises first and moves forward only over the rest of its swing.
        push = o.push_off if scheduled else 0.0
        h = np.clip((s - push) / (1.0 - push), 0.0, 1.0)
        ease = h**3 * (10.0 - 15.0 * h + 6.0 * h * h)  # minimum-jerk profile
        seg = slice(lift_at + 1, land + 1)
        pos[seg, 1 - foot] = cur[1 - foot]
        yaw[seg, 1 - foot] = cur_yaw[1 - foot]
        pos[seg, foot] = cur[foot] + ease[:, None] * (goal - cur[foot])
        yaw[seg, foot] = cur_yaw[foot] + ease * _wrap(goal_yaw - cur_yaw[foot])
        lift[seg, foot] = o.step_height * np.sqrt(min(length, 0.5) / 0.5) * 16.0 * (s * (1.0 - s)) ** 2
        planted[seg, foot] = s >= 1.0
        ball[seg, foot] = (s >= 1.0) | (s <= push)
        cur[foot], cur_yaw[foot] = goal, cur_yaw[foot] + _wrap(goal_yaw - cur_yaw[foot])
        t = land + 1 if land == lift_at + frames else n
        if t < n:
            pos[land], yaw[land] = cur, cur_yaw
    return FootPlan(pos, yaw, lift, planted, ball)


def _keep_apart(goal: np.ndarray, other: np.ndarray, heading: float, foot: int, width: float) -> np.ndarray:
    """Move ``goal`` sideways so the left foot (0) stays left of the right one by ``width``."""
    right = np.array([np.cos(heading), np.sin(heading)])  # heading 0 faces +y, so +x is right
    lateral = float(np.dot(goal - other, right))
    want = -width if foot == 0 else width
    if (foot == 0 and lateral > want) or (foot == 1 and lateral < want):
        goal = goal + (want - lateral) * right
    return goal
