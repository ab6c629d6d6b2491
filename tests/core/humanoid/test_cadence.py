# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of the step timing read from the head (heel strikes, which foot) and of the legs it drives."""

from __future__ import annotations

import numpy as np
import pytest
from test_fullbody import synthetic, trackers_for

from ik_core.errors import InvalidInputError
from ik_core.humanoid import GaitOptions, SolveOptions, calibrate, plan_steps, solve_body
from ik_core.humanoid.cadence import CadenceOptions, height_noise, step_schedule, steps_from_contacts
from ik_core.model.rotations import rotvec_to_matrix

HALF = 0.55  # time between heel strikes [s]
SPEED = 1.2  # walking speed [m/s]
WIDTH = 0.1  # each foot's distance from the walking line [m]


def walk(frame_time: float, seconds: float, heading: float, first: int, speed: float = SPEED):
    """A synthetic walk facing ``heading`` (0 faces +y): head and pelvis paths and the true feet.

    The head rides an inverted-pendulum arc over each stance (lowest, with a cusp, at each heel
    strike) and sways over the foot that carries it. Returns (head (N, 3), pelvis (N, 3),
    heading (N,), strikes (K,) frames, feet (K,) 0 left / 1 right, footholds (K, 2)).
    """
    n = int(round(seconds / frame_time))
    t = np.arange(n) * frame_time
    fwd = np.array([-np.sin(heading), np.cos(heading)])
    right = np.array([np.cos(heading), np.sin(heading)])
    strike_times = np.arange(HALF / 2, seconds, HALF)
    k = np.clip(np.searchsorted(strike_times, t, side="right") - 1, 0, None)
    phase = np.clip((t - strike_times[k]) / HALF, 0.0, 1.0)
    phase = np.where(t < strike_times[0], (t - strike_times[0]) / HALF + 1.0, phase)
    feet = (first + np.arange(len(strike_times))) % 2
    carrier = np.where(t < strike_times[0], 1 - feet[0], feet[k])
    side = np.where(carrier == 1, 1.0, -1.0)
    ground = speed * t[:, None] * fwd
    pelvis = np.zeros((n, 3))
    pelvis[:, :2] = ground + (0.03 * side * np.sin(np.pi * phase))[:, None] * right
    pelvis[:, 2] = 1.0 + 0.025 * np.sin(np.pi * phase)
    head = pelvis + [0.0, 0.0, 0.6]
    # A foot stands where the body passes over it: the pelvis's ground point in the middle of
    # its stance (from its strike to its toe-off, 0.1 s after the other foot's strike), beside
    # the walking line.
    mid = strike_times + (HALF + 0.1) / 2
    holds = speed * mid[:, None] * fwd + np.where(feet == 1, WIDTH, -WIDTH)[:, None] * right
    strikes = np.round(strike_times / frame_time).astype(int)
    return head, pelvis, np.full(n, heading), strikes, feet, holds


@pytest.mark.parametrize("frame_time", [1 / 120, 1 / 30])
@pytest.mark.parametrize("heading", [0.0, 2.2])
@pytest.mark.parametrize("first", [0, 1])
def test_strikes_and_feet_of_a_synthetic_walk(frame_time: float, heading: float, first: int) -> None:
    """Every heel strike of a walk is found near its frame, with the foot that lands, in any direction."""
    head, pelvis, hd, strikes, feet, _ = walk(frame_time, 6.0, heading, first)
    o = CadenceOptions()
    s = step_schedule(head, pelvis, hd, frame_time, o)
    tolerance = o.strike_lead * HALF / frame_time + 0.05 / frame_time + 1
    found = np.array([np.argmin(np.abs(strikes - land)) for land in s.land])
    assert len(s) >= len(strikes) - 2  # the edges of the take may lose a strike
    assert len(set(found.tolist())) == len(s)  # one step per strike
    assert np.all(np.abs(strikes[found] - s.land) <= tolerance)
    assert np.array_equal(s.foot, feet[found])
    assert np.all(s.lift < s.land) and np.all(s.stance_end > s.land)
    assert s.walking[s.lift[0] : s.land[-1] + 1].all()


def test_no_steps_without_travel() -> None:
    """A head that bobs and sways in place (bouncing, a hop on the spot) forces no steps."""
    ft = 1 / 120
    head, pelvis, hd, *_ = walk(ft, 4.0, 0.3, 0, speed=0.0)
    assert len(step_schedule(head, pelvis, hd, ft)) == 0
    hop = head.copy()
    hop[:, 2] += 0.1 * np.abs(np.sin(np.pi * np.arange(len(hop)) * ft / 0.4))  # hard landings
    s = step_schedule(hop, pelvis, hd, ft)
    assert len(s) == 0 and not s.walking.any()


def test_schedule_input_errors() -> None:
    """Wrong shapes and bad options are refused with the expected shapes named."""
    head, pelvis, hd, *_ = walk(1 / 60, 2.0, 0.0, 0)
    with pytest.raises(InvalidInputError, match="head \\(N, 3\\)"):
        step_schedule(head[:, :2], pelvis, hd, 1 / 60)
    with pytest.raises(InvalidInputError, match="frame_time"):
        step_schedule(head, pelvis, hd, 0.0)
    with pytest.raises(InvalidInputError, match="double_support"):
        CadenceOptions(double_support=0.9)
    with pytest.raises(InvalidInputError, match="max_half_cycle"):
        CadenceOptions(min_half_cycle=1.0, max_half_cycle=0.5)


def _solve_walk(options: SolveOptions, heading: float):
    """The synthetic rig walking (head and hands carried along the walk), solved; with the true feet."""
    ft = 1 / 120
    roles, ref, offs = synthetic()
    body = calibrate(roles, ref, trackers_for(ref, roles, offs))
    # The rig faces -y; the walk's heading 0 faces +y, so the rig turns by heading + pi.
    head, pelvis, hd, strikes, feet, holds = walk(ft, 5.0, heading, 0)
    base = trackers_for(ref, roles, offs)
    W = np.broadcast_to(np.eye(4), (len(head), 4, 4)).copy()
    W[:, :3, :3] = rotvec_to_matrix(np.array([0.0, 0.0, heading + np.pi]))
    start = ref[roles["pelvis"]][:3, 3]
    W[:, :3, 3] = pelvis - W[0, :3, :3] @ start
    trk = W[:, None] @ base[None]
    res = solve_body(body, trk, ft, options)
    return body, res, strikes, feet, holds, ft


@pytest.mark.parametrize("heading", [0.0, -1.0])
def test_walk_feet_land_on_the_footholds_and_stay(heading: float) -> None:
    """With the cadence the stance feet stand near the true footholds and never slide; without it they miss.

    The stance of each foot is the true one (from its strike to the other foot's next strike,
    less the blend at its ends); the footholds are where the body passes over the foot.
    """
    errors = {}
    for label, gait in (("cadence", GaitOptions()), ("drift", GaitOptions(cadence=None))):
        body, res, strikes, feet, holds, ft = _solve_walk(SolveOptions(gait=gait), heading)
        err, slid, frames = [], 0, 0
        for i in range(1, len(strikes) - 2):
            a, b = strikes[i] + 6, strikes[i + 1] - 6
            ankle = res.positions[a:b, body.index(f"foot_{'lr'[feet[i]]}"), :2]
            err.append(np.linalg.norm(ankle - ankle.mean(axis=0), axis=-1).max())
            err.append(float(np.linalg.norm(ankle.mean(axis=0) - holds[i])))
            speed = np.linalg.norm(np.diff(ankle, axis=0), axis=-1) / ft
            slid += int(np.count_nonzero(speed > 0.2))
            frames += len(speed)
        errors[label] = (max(err), slid / frames)
        if label == "cadence":
            assert np.max(res.tracker_error) < 1e-3
    placement, sliding = errors["cadence"]
    assert sliding == 0.0, errors
    assert placement < 0.08, errors
    # The drift-triggered steps of the old solver land elsewhere and at other times.
    assert errors["drift"][0] > 0.15 or errors["drift"][1] > 0.1, errors


def test_plan_follows_the_schedule() -> None:
    """Scheduled steps lift and land on their frames, stand still between, and the ball stays down at push-off."""
    ft = 1 / 120
    head, pelvis, hd, *_ = walk(ft, 5.0, 0.7, 1)
    s = step_schedule(head, pelvis, hd, ft)
    right = np.array([np.cos(0.7), np.sin(0.7)])
    neutral = pelvis[:, None, :2] + np.array([-WIDTH, WIDTH])[None, :, None] * right
    plan = plan_steps(neutral, hd, ft, GaitOptions(), s)
    assert np.all(np.isfinite(plan.position)) and np.all(np.isfinite(plan.lift))
    last_land = 0
    for lift, land, foot in zip(s.lift, s.land, s.foot):
        assert plan.planted[land, foot] and not plan.planted[land - 1, foot]
        # The swing ends on the strike and starts no later than scheduled (a long step
        # lifts earlier, so as not to whip the foot), never before the last landing.
        start = land - np.flatnonzero(plan.planted[: land, foot][::-1])[0]
        assert last_land <= start - 1 <= lift
        assert not plan.planted[start:land, foot].any()
        assert plan.planted[start - 1 : land + 1, 1 - foot].all()  # one foot at a time
        assert plan.ball[start, foot] and not plan.ball[land - 1, foot]
        last_land = land
    moved = np.linalg.norm(np.diff(plan.position, axis=0), axis=-1)
    held = plan.planted[1:] & plan.planted[:-1]
    assert np.max(moved[held]) < 1e-12
    # Pushing off, the foot rises but stays put horizontally.
    pushing = plan.ball & ~plan.planted
    assert np.all(plan.lift[pushing] > 0.0)
    assert np.max(moved[pushing[1:] & pushing[:-1]]) < 1e-12


@pytest.mark.parametrize("noise", [0.002, 0.005, 0.01])
def test_tracker_noise_makes_no_strikes(noise: float) -> None:
    """A head gliding at walking speed with white tracker noise (a glide, a ride) forces no steps."""
    ft = 1 / 120
    head, pelvis, hd, *_ = walk(ft, 6.0, 0.4, 0)
    head[:, 2] = 1.6  # no bob: the body glides
    noisy = head + np.random.default_rng(0).normal(0.0, noise, head.shape)
    s = step_schedule(noisy, pelvis, hd, ft)
    assert len(s) == 0 and not s.walking.any()
    # Without the threshold set from the noise, the same jitter makes strikes.
    assert len(step_schedule(noisy, pelvis, hd, ft, CadenceOptions(noise_margin=0.0))) > 0


@pytest.mark.parametrize("frame_time", [1 / 120, 1 / 30])
def test_noisy_walk_keeps_its_strikes(frame_time: float) -> None:
    """2 mm of tracker noise on a walking head leaves every strike found, with its foot."""
    head, pelvis, hd, strikes, feet, _ = walk(frame_time, 6.0, 1.0, 0)
    noisy = head + np.random.default_rng(3).normal(0.0, 0.002, head.shape)
    s = step_schedule(noisy, pelvis, hd, frame_time)
    o = CadenceOptions()
    tolerance = o.strike_lead * HALF / frame_time + 0.05 / frame_time + 1
    found = np.array([np.argmin(np.abs(strikes - land)) for land in s.land])
    assert len(s) >= len(strikes) - 2
    assert len(set(found.tolist())) == len(s)
    assert np.all(np.abs(strikes[found] - s.land) <= tolerance)
    assert np.array_equal(s.foot, feet[found])


def test_height_noise_estimate() -> None:
    """The noise estimate recovers white noise on a moving signal and is near 0 on a clean one."""
    ft = 1 / 120
    head, *_ = walk(ft, 6.0, 0.0, 0)
    rng = np.random.default_rng(1)
    assert height_noise(head[:, 2]) < 1e-4
    for sd in (0.001, 0.002, 0.005):
        assert abs(height_noise(head[:, 2] + rng.normal(0.0, sd, len(head))) - sd) < 0.15 * sd
    assert height_noise(np.zeros(3)) == 0.0


def test_steps_from_contacts() -> None:
    """Each gap between a foot's contacts is a step (lifting on its first free frame, landing on the next
    contact); a foot that leaves before the other lands lifts as it lands; the whole take walks."""
    n = 100
    c = np.ones((n, 2), dtype=bool)
    c[10:20, 0] = False  # left: 10 -> 20
    c[30:45, 1] = False  # right: 30 -> 45
    c[40:55, 0] = False  # left leaves at 40, before the right lands: lifts at 46
    s = steps_from_contacts(c)
    assert s.lift.tolist() == [10, 30, 46] and s.land.tolist() == [20, 45, 55] and s.foot.tolist() == [0, 1, 0]
    assert s.stance_end.tolist() == [46, 99, 99]
    assert s.walking.all()
    # In the air at the start it lands on its first contact; at the end it swings to the last frame.
    c[:5, 1] = c[90:, 0] = False
    s = steps_from_contacts(c)
    assert s.lift.tolist() == [0, 10, 30, 46, 90] and s.land.tolist() == [5, 20, 45, 55, 99]
    assert s.foot.tolist() == [1, 0, 1, 0, 0]
    assert len(steps_from_contacts(np.ones((n, 2), dtype=bool))) == 0
    assert len(steps_from_contacts(np.zeros((n, 2), dtype=bool))) == 0
    with pytest.raises(InvalidInputError, match="\\(N, 2\\)"):
        steps_from_contacts(np.ones(n, dtype=bool))


def test_known_steps_keep_the_feet_planted() -> None:
    """Fed the true contacts of a walk (``solve_body(steps=...)``), the feet stand still on them; head and
    hands stay exact; a step timing for another frame count is refused."""
    ft = 1 / 120
    roles, ref, offs = synthetic()
    body = calibrate(roles, ref, trackers_for(ref, roles, offs))
    head, pelvis, hd, strikes, feet, _ = walk(ft, 5.0, 0.5, 0)
    base = trackers_for(ref, roles, offs)
    W = np.broadcast_to(np.eye(4), (len(head), 4, 4)).copy()
    W[:, :3, :3] = rotvec_to_matrix(np.array([0.0, 0.0, 0.5 + np.pi]))
    W[:, :3, 3] = pelvis - W[0, :3, :3] @ ref[roles["pelvis"]][:3, 3]
    trk = W[:, None] @ base[None]
    # A foot rests from its strike until its toe-off, 0.1 s after the other foot's next strike.
    contact = np.ones((len(head), 2), dtype=bool)
    swing = 2 * HALF - (HALF + 0.1)
    contact[max(strikes[0] - int(round(swing / ft)), 0) : strikes[0], feet[0]] = False
    for i in range(1, len(strikes)):
        contact[strikes[i - 1] + int(round(0.1 / ft)) : strikes[i], feet[i]] = False
    drift = SolveOptions(gait=GaitOptions(cadence=None))  # the steps alone time the feet

    def sliding(res) -> int:
        count = 0
        for k, side in enumerate("lr"):
            ankle = res.positions[:, body.index(f"foot_{side}"), :2]
            speed = np.linalg.norm(np.diff(ankle, axis=0), axis=-1) / ft
            count += int(np.count_nonzero(speed[contact[1:, k] & contact[:-1, k]] > 0.2))
        return count

    res = solve_body(body, trk, ft, drift, steps=steps_from_contacts(contact))
    assert np.max(res.tracker_error[:, :3]) < 1e-9
    assert sliding(res) <= 0.01 * contact.sum() < sliding(solve_body(body, trk, ft, drift))
    with pytest.raises(InvalidInputError, match="steps cover"):
        solve_body(body, trk[:-1], ft, steps=steps_from_contacts(contact))


def swaying_walk(
    frame_time: float,
    seconds: float,
    rng: np.random.Generator,
    speed: float,
    half: float,
    sway: float,
    lag: float,
    turn: float,
    first: int,
    irregular: float = 0.0,
    bobs: int = 1,
):
    """A walk whose head sways over the carrying foot and crosses over ``lag`` [s] after each strike.

    The lateral sway is a half sine per stance (amplitude ``sway`` [m]) that crosses the walking
    line during the double support after each strike, so the body is still over the foot that
    carried it when the other lands (as a real centre of mass is); the head rides an arc over
    each stance with a cusp at each strike (``bobs`` equal arcs per stance: 2 adds a cusp in its
    middle, as a slow walk's uneven rhythm does); the heading turns at ``turn`` [rad/s]; each
    half cycle varies by up to ``irregular`` of itself. Returns (head (N, 3), pelvis (N, 3), heading
    (N,), strikes (K,) frames, feet (K,) 0 left / 1 right).
    """
    n = int(round(seconds / frame_time))
    t = np.arange(n) * frame_time
    gaps = half * (1.0 + rng.uniform(-irregular, irregular, int(seconds / half) + 2))
    times = 0.3 + np.cumsum(np.r_[0.0, gaps])
    times = times[times < seconds]
    feet = (first + np.arange(len(times))) % 2
    heading = 0.4 + turn * t
    fwd = np.stack([-np.sin(heading), np.cos(heading)], axis=-1)
    right = np.stack([np.cos(heading), np.sin(heading)], axis=-1)
    ground = np.cumsum(speed * frame_time * fwd, axis=0)
    # Lateral: over the foot that landed at the last crossing (a strike + lag), a half sine per
    # stance; before the first, over the other foot (as if it had landed a half cycle earlier).
    cross = np.r_[times[0] - half, times] + lag
    carriers = np.r_[1 - feet[0], feet]
    k = np.clip(np.searchsorted(cross, t, side="right") - 1, 0, None)
    span = np.diff(np.r_[cross, cross[-1] + half])
    phase = np.clip((t - cross[k]) / span[k], 0.0, 1.0)
    lateral = sway * np.where(carriers[k] == 1, 1.0, -1.0) * np.sin(np.pi * phase)
    # Vertical: an arc over each stance, lowest (a cusp) at each strike.
    j = np.clip(np.searchsorted(times, t, side="right") - 1, 0, None)
    gap = np.diff(np.r_[times, times[-1] + half])
    up = np.clip((t - times[j]) / gap[j], 0.0, 1.0)
    pelvis = np.zeros((n, 3))
    pelvis[:, :2] = ground + lateral[:, None] * right
    pelvis[:, 2] = 1.0 + 0.02 * np.abs(np.sin(np.pi * bobs * up))
    head = pelvis + [0.0, 0.0, 0.6]
    return head, pelvis, heading, np.round(times / frame_time).astype(int), feet


def _assigned(schedule, strikes: np.ndarray, feet: np.ndarray, frame_time: float) -> tuple[int, int, int]:
    """(steps matched to a strike with the right foot, matched with the wrong foot, strikes left unmatched)."""
    tolerance = (CadenceOptions().strike_lead * 0.8 + 0.05) / frame_time  # the lead of a half cycle <= 0.8 s
    right = wrong = 0
    for land, foot in zip(schedule.land, schedule.foot):
        i = int(np.argmin(np.abs(strikes - land)))
        if abs(strikes[i] - land) <= tolerance:
            right += int(foot == feet[i])
            wrong += int(foot != feet[i])
    return right, wrong, len(strikes) - right - wrong


WALKERS = {
    # name: speed [m/s], half cycle [s], sway [m], lag [s], turn [rad/s], irregular
    "brisk": (1.5, 0.5, 0.03, 0.05, 0.0, 0.0),
    "slow": (0.6, 0.7, 0.04, 0.12, 0.0, 0.1),
    "narrow": (1.1, 0.55, 0.008, 0.08, 0.0, 0.05),
    "turning": (1.0, 0.55, 0.025, 0.06, 0.5, 0.05),
    # The weight shifted late, half-way into the stance (a styled or careful walk): the sway after
    # a strike is half on each side, before it on the carrying foot.
    "late": (0.8, 0.6, 0.03, 0.3, 0.0, 0.05),
}


@pytest.mark.parametrize("walker", sorted(WALKERS))
@pytest.mark.parametrize("frame_time", [1 / 120, 1 / 30])
@pytest.mark.parametrize("noise", [0.0, 0.002])
def test_feet_of_walks_whose_sway_crosses_after_the_strike(walker: str, frame_time: float, noise: float) -> None:
    """Every walker, speed, turn and frame rate, with or without tracker noise: each strike gets its foot.

    The head is still over the carrying foot as the other lands and crosses over during the
    double support after it: the foot read from the sway before each strike, the feet
    alternating, is the one that lands, even where the sway is under a centimetre (a narrow
    walk) against 2 mm of noise.
    """
    speed, half, sway, lag, turn, irregular = WALKERS[walker]
    rng = np.random.default_rng(11)
    wrong_total = 0
    for first in (0, 1):
        head, pelvis, hd, strikes, feet = swaying_walk(
            frame_time, 8.0, rng, speed, half, sway, lag, turn, first, irregular
        )
        head = head + rng.normal(0.0, noise, head.shape)
        s = step_schedule(head, pelvis, hd, frame_time)
        right, wrong, missed = _assigned(s, strikes, feet, frame_time)
        assert missed <= 2, (walker, right, wrong, missed)  # the take's edges may lose a strike
        wrong_total += wrong
    assert wrong_total == 0



@pytest.mark.parametrize("frame_time", [1 / 120, 1 / 30])
def test_solved_walk_swings_the_landing_foot_through_a_hand_dropout(frame_time: float) -> None:
    """End to end, with 2 mm of noise on every tracker and the left hand lost for a second: before each
    strike the foot that lands swings and the other stands; head and hands stay exact where tracked."""
    roles, ref, offs = synthetic()
    body = calibrate(roles, ref, trackers_for(ref, roles, offs))
    rng = np.random.default_rng(2)
    head, pelvis, hd, strikes, feet = swaying_walk(frame_time, 6.0, rng, 1.1, 0.55, 0.02, 0.08, 0.2, 1, 0.05)
    base = trackers_for(ref, roles, offs)
    W = np.broadcast_to(np.eye(4), (len(head), 4, 4)).copy()
    W[:, :3, :3] = rotvec_to_matrix(np.stack([np.zeros_like(hd), np.zeros_like(hd), hd + np.pi], axis=-1))
    start = ref[roles["pelvis"]][:3, 3]
    W[:, :3, 3] = pelvis - np.einsum("nij,j->ni", W[:, :3, :3], start)
    trk = W[:, None] @ base[None]
    trk[..., :3, 3] += rng.normal(0.0, 0.002, trk[..., :3, 3].shape)
    lost = slice(int(2.0 / frame_time), int(3.0 / frame_time))
    trk[lost, 1] = np.nan
    res = solve_body(body, trk, frame_time)
    ahead = int(round((CadenceOptions().strike_lead * 0.55 + 0.05) / frame_time))
    for strike, foot in zip(strikes[1:-1], feet[1:-1]):
        t = strike - ahead
        assert not res.contacts[t, foot] and res.contacts[t, 1 - foot], (strike, foot)
    tracked = np.ones(trk.shape[:2], dtype=bool)
    tracked[lost, 1] = False
    assert np.max(res.tracker_error[:, :3][tracked & res.reachable[:, :3]]) < 1e-3


@pytest.mark.parametrize("frame_time", [1 / 120, 1 / 30])
def test_a_bob_in_the_middle_of_a_stance_is_no_step(frame_time: float) -> None:
    """A slow walk whose head bobs twice per stance, as hard in its middle as at the strike: one step per
    strike, each with its foot, and none lands on a mid-stance bob (the foot would step while it stands)."""
    rng = np.random.default_rng(4)
    for first in (0, 1):
        head, pelvis, hd, strikes, feet = swaying_walk(
            frame_time, 9.0, rng, 0.5, 0.8, 0.02, 0.1, 0.0, first, 0.05, bobs=2
        )
        s = step_schedule(head, pelvis, hd, frame_time)
        right, wrong, missed = _assigned(s, strikes, feet, frame_time)
        # The last bob has no strike after it to tell it from one: the take's end may keep it.
        assert wrong == 0 and missed <= 2 and len(s) <= right + 1, (right, wrong, missed, len(s))
