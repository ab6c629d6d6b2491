# SPDX-License-Identifier: GPL-3.0-or-later
"""Step timing read from the head: heel strikes from its vertical impacts, which foot from its sway."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..contacts.detection import contact_intervals
from ..contacts.inputs import check_non_negative, check_positive
from ..errors import InvalidInputError
from .geometry import gaussian_smooth

__all__ = ["CadenceOptions", "StepSchedule", "height_noise", "step_schedule", "steps_from_contacts"]


@dataclass(frozen=True)
class CadenceOptions:
    """Thresholds of the step timing.

    Attributes:
        impact: Smallest fall of the head's vertical acceleration between two of its peaks for
            both to count as heel strikes [m/s^2].
        walk_speed: Smallest horizontal speed of the body at an impact for it to count as a
            heel strike [m/s]: a head that bobs in place (standing, bouncing, a hop on the
            spot) forces no steps.
        min_half_cycle: Shortest time between two heel strikes [s].
        max_half_cycle: Longest time between two heel strikes of one walk [s]; a longer gap
            ends the walk (the feet then step as the body needs, see :func:`plan_steps`).
        double_support: Smallest share of the time between two heel strikes that both feet
            are on the ground after each strike (a swing never takes more than the rest) [0, 0.6].
        swing_time: How long a foot swings between its toe-off and its heel strike [s].
        strike_lead: Share of the time between two strikes by which a heel strike precedes the
            head's impact peak (the load reaches the head as the weight comes onto the
            landed leg, after its heel touched) [0, 0.5].
        sway_time: Time before a strike over which the head's sideways sway says which foot
            carries the body, so that the other one lands [s] (at most half the time since the
            previous strike: the end of the single support).
        sway_smoothing: Gaussian sigma of the head's own smoothed path, from which its sideways
            sway is measured [s] (a slower drift of the path, a turn, is no sway).
        same_foot_cost: Evidence (in typical sways, at most 2 per strike) it takes to land the
            same foot twice in a row instead of alternating.
        smoothing: Gaussian sigma that removes jitter from the head height before its
            acceleration is taken [s].
        noise_margin: The fall between two peaks must also exceed this many standard deviations
            of the acceleration that the head signal's own noise leaves after the smoothing (the
            noise is estimated from the take, :func:`height_noise`), so tracker jitter on a
            gliding head makes no strikes; ``impact`` still holds for a clean signal.
    """

    impact: float = 0.5
    walk_speed: float = 0.15
    min_half_cycle: float = 0.25
    max_half_cycle: float = 1.0
    double_support: float = 0.2
    swing_time: float = 0.3
    strike_lead: float = 0.15
    sway_time: float = 0.15
    sway_smoothing: float = 0.25
    same_foot_cost: float = 1.5
    smoothing: float = 0.05
    noise_margin: float = 6.0

    def __post_init__(self) -> None:
        for name in ("impact", "min_half_cycle", "max_half_cycle", "sway_time", "sway_smoothing", "swing_time"):
            check_positive(f"CadenceOptions.{name}", getattr(self, name))
        for name in ("walk_speed", "smoothing", "same_foot_cost", "noise_margin"):
            check_non_negative(f"CadenceOptions.{name}", getattr(self, name))
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


def height_noise(height: np.ndarray) -> float:
    """Standard deviation of white noise on a smooth signal, estimated from the signal itself [its unit].

    The third difference of a smooth motion sampled fast enough is small, while that of white
    noise of deviation ``s`` has deviation ``sqrt(20) s``; its median absolute value (robust to the
    few frames where the motion itself jerks) gives ``s``. A clean signal gives about 0 (or the
    motion's own third difference where it is sampled coarsely: an over-estimate that only makes
    the strike threshold stricter, see :class:`CadenceOptions`).

    Args:
        height: (N,) samples.

    Returns:
        The estimated deviation (0 with fewer than 4 samples).
    """
    h = np.asarray(height, dtype=float)
    if h.size < 4:
        return 0.0
    return float(1.4826 * np.median(np.abs(np.diff(h, n=3))) / np.sqrt(20.0))


def _acceleration_noise(noise: float, sigma: float, frame_time: float) -> float:
    """Deviation [m/s^2] of the acceleration :func:`_impacts` takes from white noise of deviation ``noise`` [m].

    The acceleration is linear in the samples (a Gaussian of ``sigma`` frames, then two central
    differences), so white noise passes with the gain of its impulse response's norm.
    """
    n = 2 * int(np.ceil(3 * max(sigma, 0.0))) + 9
    impulse = np.zeros(n)
    impulse[n // 2] = 1.0
    response = np.gradient(np.gradient(gaussian_smooth(impulse, sigma)))
    return noise * float(np.linalg.norm(response)) / frame_time**2


def _impacts(height: np.ndarray, speed: np.ndarray, frame_time: float, o: CadenceOptions) -> list[int]:
    """Frames of the head's upward acceleration peaks that are heel strikes (strong, apart, moving)."""
    sigma = o.smoothing / frame_time
    z = gaussian_smooth(height, sigma)
    acc = np.gradient(np.gradient(z)) / frame_time**2
    # A fall between peaks must stand out of the noise the tracker leaves in the acceleration.
    impact = max(o.impact, o.noise_margin * _acceleration_noise(height_noise(height), sigma, frame_time))
    inner = np.flatnonzero((acc[1:-1] > acc[:-2]) & (acc[1:-1] >= acc[2:])) + 1
    gap = max(int(round(o.min_half_cycle / frame_time)), 1)
    kept: list[int] = []
    for c in inner:
        if kept:
            k = kept[-1]
            dip = min(acc[k], acc[c]) - float(acc[k : c + 1].min())
            if c - k < gap or dip < impact:
                if acc[c] > acc[k]:
                    kept[-1] = int(c)  # the stronger of two peaks that are one impact
                continue
        kept.append(int(c))
    return [k for k in kept if speed[k] >= o.walk_speed]


def _landing_feet(
    strikes: np.ndarray, head: np.ndarray, heading: np.ndarray, frame_time: float, o: CadenceOptions
) -> np.ndarray:
    """Which foot (0 left, 1 right) lands at each strike of a walk: the head's sway, feet mostly alternating.

    Through the end of a swing the body stands on the other foot alone, and the head sways over
    it (balance demands it, whatever the walk's style); after the strike both feet carry it and
    the sway crosses over, late and by little in a narrow walk. So the head's sideways offset
    from its own smoothed path over the ``sway_time`` before each strike votes for the foot that
    does *not* land (measured on the CMU walks, the sway after the strike, over the stance that
    follows, votes at chance where the walk is narrow or the steps irregular). A Viterbi pass
    over the whole sequence of strikes weighs the votes (each scaled by the walk's typical sway)
    against the feet alternating, so a weak vote follows the rhythm and a strike the detector
    added or missed costs one step, not the rest of the walk. Arm swing is not used: it is
    against the legs in an ordinary walk but with them in many styled ones (in the CMU 131
    walks the hands' fore-aft offset follows the carrying leg on 62-79 % of single-support
    frames of two takes and opposes it on 68 % of the third).
    """
    right = np.stack([np.cos(heading), np.sin(heading)], axis=-1)  # heading 0 faces +y
    path = gaussian_smooth(head[:, :2], o.sway_smoothing / frame_time)
    sway = np.sum((head[:, :2] - path) * right, axis=-1)
    # The smoothed path cuts the inside of a turn: the sway's slow part (over a stride) is that
    # bias, not a side; the sway alternates sides each half cycle.
    sway = sway - gaussian_smooth(sway, 2.0 * o.sway_smoothing / frame_time)
    csum = np.concatenate([[0.0], np.cumsum(sway)])
    since = np.diff(np.r_[0, strikes])
    span = np.minimum(max(int(round(o.sway_time / frame_time)), 1), np.maximum(since // 2, 1))
    start = np.maximum(strikes - span, 0)
    # The body over the left foot (sway < 0) before the strike: the right lands (+).
    vote = -(csum[strikes] - csum[start]) / np.maximum(strikes - start, 1)
    scale = float(np.median(np.abs(vote)))
    evidence = np.clip(vote / scale, -2.0, 2.0) if scale > 1e-9 else np.zeros(len(vote))
    # Scores of "the right foot landed" (+evidence) and "the left" (-evidence), best paths.
    score = np.array([-evidence[0], evidence[0]])
    back = np.zeros((len(strikes), 2), dtype=int)
    for i in range(1, len(strikes)):
        stay = score - o.same_foot_cost  # the same foot again (a re-plant), or a strike too many
        keep = np.array([max(stay[0], score[1]), max(stay[1], score[0])])
        back[i] = [0 if stay[0] >= score[1] else 1, 1 if stay[1] >= score[0] else 0]
        score = keep + np.array([-evidence[i], evidence[i]])
    feet = np.empty(len(strikes), dtype=int)
    feet[-1] = int(np.argmax(score))
    for i in range(len(strikes) - 1, 0, -1):
        feet[i - 1] = back[i, feet[i]]
    return feet


def step_schedule(
    head: np.ndarray,
    pelvis: np.ndarray,
    heading: np.ndarray,
    frame_time: float,
    options: CadenceOptions | None = None,
) -> StepSchedule:
    """Time the steps of a take from its head tracker.

    A walking head rides an arc over each stance leg and is turned upward sharply as the next
    leg takes the weight: its vertical acceleration peaks once per step, just after each heel
    strike (more sharply than its lowest point, which a slow walk's long double support
    blurs). Those peaks, on frames where the body moves, are the heel strikes (``strike_lead``
    of the half cycle earlier); strikes closer than ``max_half_cycle`` form one walk (three
    strikes at least: fewer are no rhythm, and the body's drift decides those steps). Which
    foot lands at each strike comes from the head's sway just before it (over the other foot,
    which carries the body), the feet mostly alternating (:func:`_landing_feet`). Each foot
    swings for ``swing_time`` before its strike (less in a quick walk, so both feet share
    ``double_support`` of each half cycle).

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
    strikes = _impacts(head[:, 2], speed, frame_time, o)
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
        feet = _landing_feet(s, head, heading, frame_time, o)
        # A foot lands once per swing: of two strikes read for the same foot in a row, the first
        # is a bob of the head in the middle of a long stance (a slow walk's uneven rhythm), not
        # a step; re-planting the foot there would step it while it stands.
        again = np.r_[feet[:-1] == feet[1:], False]
        s, feet = s[~again], feet[~again]
        if len(s) < 2:
            continue
        half = np.diff(s)
        s = s - np.round(o.strike_lead * np.r_[half[0], half]).astype(int)
        # A swing takes about the same time at any pace (a slower walk stands longer), and at
        # most the half cycle less the double support.
        swing = np.minimum(o.swing_time, (1.0 - o.double_support) * np.r_[half[0], half] * frame_time)
        lifts = np.maximum(s - np.round(swing / frame_time).astype(int), 0)
        lifts[1:] = np.maximum(lifts[1:], s[:-1] + 1)
        # A foot lifts again at its own next step; the last landings of a walk stand a stride.
        ends = np.full(len(s), min(int(s[-1] + 2 * half[-1]), n - 1))
        for f in (0, 1):
            mine = np.flatnonzero(feet == f)
            ends[mine[:-1]] = lifts[mine[1:]]
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


def steps_from_contacts(contact: np.ndarray) -> StepSchedule:
    """Timed steps from known foot contacts (an annotation, a foot pedal, the contacts of a reference motion).

    Each gap between two contacts of a foot is one step: the foot lifts on the first frame off
    the ground (the toe-off: a contact lasts while any part of the foot rests, so give the ball's
    contact frames too) and lands on the first frame of its next contact (a foot in the air at the
    take's start lands on its first contact, one in the air at its end swings on until the last
    frame); a foot that lifts before
    the other has landed lifts as it lands (the planner swings one foot at a time). The whole take
    counts as walking (:attr:`StepSchedule.walking`): the contacts, not the body's drift, say when each
    foot moves.

    Args:
        contact: (N, 2) booleans, True while the left (column 0) / right foot rests.

    Returns:
        The steps, in landing order.

    Raises:
        InvalidInputError: On a shape other than (N, 2).
    """
    c = np.asarray(contact)
    if c.ndim != 2 or c.shape[1] != 2:
        raise InvalidInputError(
            f"contact must have shape (N, 2), a flag per frame and foot (left, right), got {c.shape}"
        )
    c = c.astype(bool)
    n = c.shape[0]
    steps = []
    for f in (0, 1):
        runs = contact_intervals(c[:, f])
        if not len(runs):
            continue  # never resting: nothing says when it steps
        # A foot in the air when the take starts lands on its first contact; one in the air when
        # it ends swings to where it would stand on the last frame.
        edges = [0, *runs.ravel().tolist(), n - 1]
        for stop, start in zip(edges[::2], edges[1::2]):
            if start > stop:
                steps.append((int(start), int(stop), f))
    steps.sort()
    land = np.array([s[0] for s in steps], dtype=int)
    lift = np.array([s[1] for s in steps], dtype=int)
    foot = np.array([s[2] for s in steps], dtype=int)
    # The planner swings one foot at a time: a foot that leaves before the other lands (a flight
    # phase, a hop) lifts as the other lands; a swing left with no frame is no step.
    if len(steps) > 1:
        lift[1:] = np.maximum(lift[1:], land[:-1] + 1)
    keep = lift < land
    land, lift, foot = land[keep], lift[keep], foot[keep]
    ends = np.full(len(land), max(n - 1, 0), dtype=int)
    for f in (0, 1):
        mine = np.flatnonzero(foot == f)
        ends[mine[:-1]] = lift[mine[1:]]
    return StepSchedule(lift, land, foot, np.maximum(ends, land + 1), np.ones(n, dtype=bool))
