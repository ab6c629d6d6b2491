# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of the full-body solve: tracker accuracy, NaN holding, limits, planted feet, calibration."""

from __future__ import annotations

import numpy as np
import pytest
from data_files import data_file
from hypothesis import given, settings
from hypothesis import strategies as st

from ik_core.contacts import plant_weights
from ik_core.errors import InvalidInputError
from ik_core.formats.bvh import read_bvh
from ik_core.humanoid import (
    GaitOptions,
    RoleMap,
    SolveOptions,
    StepSchedule,
    calibrate,
    detect_roles,
    plan_steps,
    solve_body,
)
from ik_core.model.rotations import rotvec_to_matrix

FT = 1 / 60
SETTINGS = settings(max_examples=25, deadline=None)

# A Blender-style humanoid (facing -y, left at +x, z up), joint positions in metres.
JOINTS = {
    "pelvis": (0, 0, 1.0),
    "spine_1": (0, 0.01, 1.1),
    "spine_2": (0, 0.01, 1.25),
    "spine_3": (0, 0, 1.4),
    "neck": (0, 0, 1.5),
    "head": (0, -0.01, 1.6),
    "clavicle_l": (0.02, -0.02, 1.45),
    "upper_arm_l": (0.18, 0.0, 1.45),
    "forearm_l": (0.2, 0.03, 1.17),
    "hand_l": (0.21, -0.02, 0.92),
    "clavicle_r": (-0.02, -0.02, 1.45),
    "upper_arm_r": (-0.18, 0.0, 1.45),
    "forearm_r": (-0.2, 0.03, 1.17),
    "hand_r": (-0.21, -0.02, 0.92),
    "thigh_l": (0.1, 0, 0.95),
    "shin_l": (0.1, -0.02, 0.52),
    "foot_l": (0.1, 0.02, 0.08),
    "toe_l": (0.1, -0.12, 0.02),
    "thigh_r": (-0.1, 0, 0.95),
    "shin_r": (-0.1, -0.02, 0.52),
    "foot_r": (-0.1, 0.02, 0.08),
    "toe_r": (-0.1, -0.12, 0.02),
}


def pose(R: np.ndarray, p) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = p
    return T


def synthetic(drop: tuple[str, ...] = ()):
    """Role map, reference bone poses (random bone frames) and head/hand tracker offsets."""
    rng = np.random.default_rng(7)
    roles = RoleMap({r: f"bone_{r}" for r in JOINTS if r not in drop})
    ref = {roles[r]: pose(rotvec_to_matrix(rng.normal(size=3)), JOINTS[r]) for r in roles}
    offs = [pose(rotvec_to_matrix(rng.normal(size=3)), rng.normal(scale=0.08, size=3)) for _ in range(6)]
    return roles, ref, offs


def trackers_for(ref: dict, roles: RoleMap, offs, names=("head", "hand_l", "hand_r")) -> np.ndarray:
    """(T, 4, 4) tracker poses that see the given bone poses."""
    return np.stack([ref[roles[n]] @ np.linalg.inv(offs[i]) for i, n in enumerate(names)])


@pytest.fixture(scope="module")
def body():
    roles, ref, offs = synthetic()
    return calibrate(roles, ref, trackers_for(ref, roles, offs)), roles, ref, offs


@pytest.fixture(scope="module")
def cmu():
    bvh = read_bvh(data_file("mocap", "cmu_131_02.bvh"))
    roles = detect_roles(bvh.bones())
    world = bvh.world_transforms(frames=slice(0, 600, 2), z_up=True)
    gt = world[:, [bvh.index(roles[r]) for r in roles.roles]]
    rng = np.random.default_rng(3)
    offs = [pose(rotvec_to_matrix(rng.normal(size=3)), rng.normal(scale=0.08, size=3)) for _ in range(3)]
    trk = np.stack(
        [gt[:, roles.roles.index(n)] @ np.linalg.inv(o) for n, o in zip(("head", "hand_l", "hand_r"), offs)],
        1,
    )
    return calibrate(roles, gt[0], trk[0]), gt, trk


def hinge_ok(res, body) -> None:
    """Elbow and knee flexion inside their ranges; each lower bone stays in its hinge plane."""
    for k, limb in enumerate((*body.arms, *body.legs)):
        lo, hi = limb.flex_range
        assert np.all(res.flex[:, k] >= max(lo, 0.0) - 1e-9) and np.all(res.flex[:, k] <= hi + 1e-9)
        Ru = res.world[:, limb.root, :3, :3] @ body.ref[limb.root, :3, :3].T
        hinge = Ru @ limb.hinge
        lower = res.positions[:, limb.end] - res.positions[:, limb.mid]
        # In plane up to the reference's own out-of-plane share of the lower bone.
        slack = abs(np.dot(limb.lower, limb.hinge)) + 1e-9
        assert np.all(np.abs(np.sum(hinge * lower, axis=-1)) <= slack)


def test_reference_frame_is_reproduced(body) -> None:
    """Solving the calibration frame gives back the reference pose within 2 cm everywhere."""
    b, roles, ref, offs = body
    res = solve_body(b, trackers_for(ref, roles, offs)[None], FT)
    ref_pos = np.array([ref[roles[r]][:3, 3] for r in b.names])
    assert np.max(np.linalg.norm(res.positions[0] - ref_pos, axis=-1)) < 0.02
    assert np.max(res.tracker_error) < 1e-9 and np.max(res.tracker_angle) < 1e-6


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_reachable_trackers_met_within_1mm(body, seed: int) -> None:
    """Random head moves and hand targets: head always, hands whenever reachable, within 1 mm."""
    b, roles, ref, offs = body
    rng = np.random.default_rng(seed)
    n = 40
    base = trackers_for(ref, roles, offs)
    trk = np.repeat(base[None], n, axis=0)
    trk[:, 0, :3, :3] = rotvec_to_matrix(rng.normal(scale=0.4, size=(n, 3))) @ trk[:, 0, :3, :3]
    trk[:, 0, :3, 3] += rng.normal(scale=[0.05, 0.05, 0.1], size=(n, 3))
    for k, side in enumerate("lr"):
        # Hand bones anywhere within 90 % of the arm's reach from the reference shoulder.
        shoulder = np.array(JOINTS[f"upper_arm_{side}"])
        direction = rng.normal(size=(n, 3))
        direction /= np.linalg.norm(direction, axis=-1, keepdims=True)
        hand = np.repeat(np.eye(4)[None], n, axis=0)
        hand[:, :3, :3] = rotvec_to_matrix(rng.normal(size=(n, 3)))
        hand[:, :3, 3] = shoulder + direction * rng.uniform(0.1, 0.9, size=(n, 1)) * b.arms[k].length
        trk[:, 1 + k] = hand @ np.linalg.inv(offs[1 + k])
    res = solve_body(b, trk, FT)
    assert np.all(np.isfinite(res.world))
    assert np.all(res.tracker_error[:, 0] < 1e-3) and np.all(res.tracker_angle < 1e-6)
    ok = res.reachable[:, 1:]
    assert ok.mean() > 0.5
    assert np.all(res.tracker_error[:, 1:][ok] < 1e-3)
    assert np.all(res.tracker_error[:, 1:][~ok] > 0.0)
    hinge_ok(res, b)


def test_real_motion_trackers_and_limits(cmu) -> None:
    """On CMU motion the head and every reachable hand frame are within 1 mm; limits hold."""
    b, gt, trk = cmu
    res = solve_body(b, trk, 2 / 120)
    assert res.reachable[:, 1:].mean() > 0.95
    assert np.max(res.tracker_error[res.reachable]) < 1e-3
    hinge_ok(res, b)
    assert np.mean(np.linalg.norm(res.positions - gt[..., :3, 3], axis=-1)) < 0.12


def test_nan_frames_are_held_and_counted(body) -> None:
    """NaN tracker frames (leading, inside, trailing) are held, counted, and give no NaN."""
    b, roles, ref, offs = body
    n = 30
    base = trackers_for(ref, roles, offs)
    trk = np.repeat(base[None], n, axis=0)
    trk[:, 1, :3, 3] += np.linspace(0, 0.2, n)[:, None] * [0, -1, 1]
    trk[[0, 1], 0] = np.nan
    trk[10:15, 1, :3, 3] = np.nan
    trk[29, 2] = np.inf
    res = solve_body(b, trk, FT)
    assert np.all(np.isfinite(res.world))
    assert res.held_counts == {"head": 2, "hand_l": 5, "hand_r": 1}
    assert res.held[10:15, 1].all() and not res.held[15, 1]
    hand = b.index("hand_l")
    np.testing.assert_allclose(res.world[10:15, hand], np.repeat(res.world[9:10, hand], 5, axis=0), atol=1e-9)
    bad = trk.copy()
    bad[:, 2] = np.nan
    with pytest.raises(InvalidInputError, match="hand_r"):
        solve_body(b, bad, FT)


def test_jumps_are_reported(body) -> None:
    """A 1 m tracker jump in one frame is reported at that frame, and only there."""
    b, roles, ref, offs = body
    trk = np.repeat(trackers_for(ref, roles, offs)[None], 20, axis=0)
    trk[12:, 2, 0, 3] += 1.0
    res = solve_body(b, trk, FT)
    assert res.jumps == {"head": (), "hand_l": (), "hand_r": (12,)}


def test_feet_stay_planted_while_standing(body) -> None:
    """Looking around and waving the hands without moving the body leaves the feet exactly still."""
    b, roles, ref, offs = body
    n = 240
    t = np.arange(n) * FT
    trk = np.repeat(trackers_for(ref, roles, offs)[None], n, axis=0)
    yaw = np.radians(20) * np.sin(2 * np.pi * 0.5 * t)
    pitch = np.radians(15) * np.sin(2 * np.pi * 0.3 * t)
    head = np.repeat(ref[roles["head"]][None], n, axis=0)  # turn the head about its joint
    head[:, :3, :3] = rotvec_to_matrix(np.stack([pitch, 0 * t, yaw], 1)) @ head[:, :3, :3]
    trk[:, 0] = head @ np.linalg.inv(offs[0])
    trk[:, 1:, :3, 3] += 0.25 * np.sin(2 * np.pi * t)[:, None, None] * [0, -1, 0.5]
    res = solve_body(b, trk, FT)
    for side in "lr":
        foot = res.positions[:, b.index(f"foot_{side}")]
        assert np.max(np.abs(foot[:, :2] - foot[0, :2])) < 1e-12
        # This rig stands with nearly straight legs: the heel may rise a little as the pelvis bobs.
        assert np.max(np.abs(foot[:, 2] - foot[0, 2])) < 0.005
    assert res.contacts.all()


def test_walking_steps_alternate_without_skating(body) -> None:
    """Walking 2 m: feet alternate, never slide while planted, and end beside the body."""
    b, roles, ref, offs = body
    n = 300
    trk = np.repeat(trackers_for(ref, roles, offs)[None], n, axis=0)
    walk = np.clip((np.arange(n) - 30) * FT * 1.0, 0.0, 2.0)  # 1 m/s along -y (forward), then stop
    trk[:, :, 1, 3] -= walk[:, None]
    res = solve_body(b, trk, FT)
    feet = np.stack([res.positions[:, b.index(f"foot_{s}")] for s in "lr"], 1)
    moved = np.linalg.norm(np.diff(feet[..., :2], axis=0), axis=-1)
    planted = res.contacts[1:] & res.contacts[:-1]
    assert np.max(moved[planted]) < 1e-12
    assert not np.any(~res.contacts[:, 0] & ~res.contacts[:, 1])  # one foot always down
    lifts = [np.count_nonzero(np.diff(res.contacts[:, k].astype(int)) == -1) for k in range(2)]
    assert min(lifts) >= 2 and abs(lifts[0] - lifts[1]) <= 1
    end = feet[-1, :, 1].mean() - res.positions[-1, 0, 1]
    assert abs(end) < 0.1
    hinge_ok(res, b)


def test_crouch_lowers_pelvis_and_bends_knees(body) -> None:
    """A head 40 cm lower puts the pelvis lower and behind the head, bends both knees, keeps the
    feet on the floor."""
    b, roles, ref, offs = body
    trk = np.repeat(trackers_for(ref, roles, offs)[None], 2, axis=0)
    trk[1, :, 2, 3] -= 0.4
    res = solve_body(b, trk, FT)
    assert res.positions[1, 0, 2] < res.positions[0, 0, 2] - 0.25
    behind = np.dot(res.positions[1, 0] - res.positions[1, b.index("head")], b.forward)
    assert behind < np.dot(res.positions[0, 0] - res.positions[0, b.index("head")], b.forward) - 0.05
    assert np.all(res.flex[1, 2:] > res.flex[0, 2:] + np.radians(30))
    for side in "lr":
        j = b.index(f"foot_{side}")
        assert res.positions[1, j, 2] == pytest.approx(res.positions[0, j, 2], abs=1e-9)
    assert res.tracker_error[1, 0] < 1e-9


def test_optional_trackers_pelvis_and_feet(cmu) -> None:
    """With pelvis and feet trackers the pelvis is exact and the feet follow them (1 mm) when not planted."""
    b, gt, trk = cmu
    names = b.names
    extra = np.stack([gt[:, names.index(r)] for r in ("pelvis", "foot_l", "foot_r")], 1)
    six = np.concatenate([trk, extra], axis=1)
    b6 = calibrate(b.roles, gt[0], six[0])
    res = solve_body(b6, six, 2 / 120, SolveOptions(plant=False))
    assert res.trackers[3:] == ("pelvis", "foot_l", "foot_r")
    assert np.max(res.tracker_error[:, 3]) < 1e-9
    assert np.max(res.tracker_error[:, 4:][res.reachable[:, 4:]]) < 1e-3
    assert np.mean(np.linalg.norm(res.positions - gt[..., :3, 3], axis=-1)) < 0.03
    with pytest.raises(InvalidInputError, match="not calibrated"):
        solve_body(b, six, 2 / 120)
    feet_only = six.copy()
    feet_only[:, 3] = np.nan  # no pelvis tracker: that column is absent
    b5 = calibrate(
        b.roles, gt[0], dict(zip(("head", "hand_l", "hand_r", "foot_l", "foot_r"), six[0, [0, 1, 2, 4, 5]]))
    )
    res = solve_body(b5, feet_only, 2 / 120)
    assert res.trackers == ("head", "hand_l", "hand_r", "foot_l", "foot_r")
    assert np.all(np.isfinite(res.world)) and np.max(res.tracker_error[:, 0]) < 1e-9


def test_tracked_feet_are_planted_over_their_contacts(cmu) -> None:
    """Tracked feet are held still on detected contacts (flat, above the floor) and follow the trackers elsewhere."""
    b, gt, trk = cmu
    names = b.names
    feet = np.stack([gt[:, names.index(r)] for r in ("foot_l", "foot_r")], 1)
    noise = np.random.default_rng(4).normal(0.0, 0.002, feet[..., :3, 3].shape)
    feet[..., :3, 3] += noise  # tracker jitter: what planting must hold still
    five = np.concatenate([trk, np.full_like(trk[:, :1], np.nan), feet], axis=1)
    # Calibrated where the performer stands flat-footed (frame 0 of the take has the left toe
    # up, and a foot pitched toe-down from its calibrated stance lands on its ball, not flat).
    ref = 50
    worn = dict(zip(("head", "hand_l", "hand_r", "foot_l", "foot_r"), five[ref, [0, 1, 2, 4, 5]]))
    b5 = calibrate(b.roles, gt[ref], worn)
    ft = 2 / 120
    loose = solve_body(b5, five, ft, SolveOptions(plant=False))
    # (the trackers' paths as given, so off contacts the two solves can be compared exactly)
    res = solve_body(b5, five, ft, SolveOptions(foot_smoothing=0.0))
    assert res.contacts.any(axis=0).all() and not res.contacts.all()
    turned_as_tracked = 0
    for k, side in enumerate("lr"):
        j = names.index(f"foot_{side}")
        w = plant_weights(res.contacts[:, k], ft, SolveOptions().plant_blend)
        # Each contact holds the foot from its landing until the release (which starts early
        # where the tracker drifted far, the real ankle rolling over the foot: slowly then).
        # (short of the leg's soft-reach band, where the heel rises instead of the knee snapping
        # straight; the raise reads the smoothed hips, hence the margin)
        leg = b5.legs[k]
        band = min(SolveOptions().leg_soft, leg.length - np.linalg.norm(leg.upper + leg.lower))
        hip = res.positions[:, names.index(f"thigh_{side}")]
        short = np.linalg.norm(res.positions[:, j] - hip, axis=-1) < leg.length - band - 0.005
        inside = res.contacts[1:, k] & res.contacts[:-1, k] & res.reachable[1:, 3 + k] & short[1:] & short[:-1]
        moved = np.linalg.norm(np.diff(res.positions[:, j], axis=0), axis=-1)
        assert inside.sum() > 20 and np.sum(moved[inside] < 1e-9) > 20
        # Off contacts the foot is where it was unplanted, where the leg reaches (a stretched leg's
        # end depends on the knee's direction, smoothed over time across the contacts) and the
        # tracker is above the floor (below it, the foot is raised onto the floor), and turned
        # as unplanted where its toe stays above the floor (elsewhere it pitches up)
        floor = b5.floor + b5.ankle_height[k]
        free = ~res.contacts[:, k] & res.reachable[:, 3 + k] & loose.reachable[:, 3 + k]
        free &= loose.positions[:, j, 2] >= floor
        # (and short of the soft-reach band)
        free &= np.linalg.norm(loose.positions[:, j] - hip, axis=-1) < leg.length - band - 0.005
        assert free.sum() > 15
        assert np.allclose(res.positions[free, j], loose.positions[free, j], rtol=0.0, atol=1e-9)
        toe = names.index(f"toe_{side}")
        # (and where its ball is clear of the floor: a planted ball pivots the foot)
        up = free & (loose.positions[:, toe, 2] >= b5.positions[toe, 2] + 1.5 * 0.033 + 0.01)
        assert np.allclose(res.world[up, j], loose.world[up, j], rtol=0.0, atol=1e-9)
        assert res.positions[:, toe, 2].min() >= b5.positions[toe, 2] - 1e-9 > loose.positions[:, toe, 2].min()
        turned_as_tracked += int(up.sum())
        assert res.positions[:, j, 2].min() >= floor - 1e-12 > loose.positions[:, j, 2].min()
        # flat while held: weight 1 and not yet released (the position still at the landing's)
        unreleased = np.zeros(len(w), dtype=bool)
        unreleased[1:] = inside & (moved < 1e-9)
        flat = res.world[(w == 1.0) & unreleased, j, :3, :3] @ b5.ref[j, :3, :3].T @ np.array([0, 0, 1.0])
        assert len(flat) > 10
        assert np.allclose(flat, [0, 0, 1.0], atol=1e-9)
    assert turned_as_tracked > 10
    assert np.max(res.tracker_error[:, :3][res.reachable[:, :3]]) < 1e-9


def _feet_tracked(cmu):
    """The CMU body calibrated with foot trackers on its frame-0 feet, and those (2, 4, 4) tracker poses."""
    b, gt, trk = cmu
    standing = np.stack([gt[0, b.names.index(r)] for r in ("foot_l", "foot_r")])
    worn = dict(zip(("head", "hand_l", "hand_r", "foot_l", "foot_r"), [*trk[0], *standing]))
    return calibrate(b.roles, gt[0], worn), standing


def _five(head_hands: np.ndarray, feet: np.ndarray) -> np.ndarray:
    """(N, 6, 4, 4) trackers: head and hands, an absent pelvis (NaN), and the two feet."""
    return np.concatenate([head_hands, np.full_like(head_hands[:, :1], np.nan), feet], axis=1)


def test_tracked_feet_jitter_is_smoothed(cmu) -> None:
    """A planted solve low-passes foot trackers: a lifted foot's 2 mm jitter no longer moves it like a slide,
    nor its turn's jitter its toe."""
    b, _, trk = cmu
    names = b.names
    n = 240
    b5, standing = _feet_tracked(cmu)
    feet = np.repeat(standing[None], n, axis=0)
    feet[:, 0, 2, 3] += 0.2  # the left foot held up: no contact, so no hold either
    rng = np.random.default_rng(5)
    feet[..., :3, 3] += rng.normal(0.0, 0.002, feet[..., :3, 3].shape)
    # and 0.5 degree of turn jitter, which the foot's length carries to its toe
    feet[..., :3, :3] = rotvec_to_matrix(rng.normal(0.0, np.radians(0.5), (n, 2, 3))) @ feet[..., :3, :3]
    head_hands = np.repeat(trk[:1], n, axis=0)
    five = _five(head_hands, feet)
    ft = 1 / 120
    j, toe = names.index("foot_l"), names.index("toe_l")
    speeds, toe_speeds = {}, {}
    for sigma in (0.0, SolveOptions().foot_smoothing):
        res = solve_body(b5, five, ft, SolveOptions(foot_smoothing=sigma))
        assert not res.contacts[:, 0].any()
        speeds[sigma] = np.linalg.norm(np.diff(res.positions[:, j], axis=0), axis=-1) / ft
        toe_speeds[sigma] = np.linalg.norm(np.diff(res.positions[:, toe] - res.positions[:, j], axis=0), axis=-1) / ft
        assert np.max(np.abs(res.positions[:, j] - feet[:, 0, :3, 3].mean(axis=0))) < 0.01
    assert np.mean(speeds[0.0] > 0.2) > 0.5  # jitter alone reads as sliding
    assert np.mean(speeds[SolveOptions().foot_smoothing] > 0.2) < 0.05
    # The foot's turn is low-passed as its path is: the toe no longer shakes about the ankle.
    assert np.mean(toe_speeds[SolveOptions().foot_smoothing]) < 0.4 * np.mean(toe_speeds[0.0])


def test_tracked_foot_resting_on_its_ball_is_not_flattened(cmu) -> None:
    """A foot tracker that comes to rest heel up (toe down 14 degrees about the ball, the ankle still
    within the contact band) stands on its ball: no flat hold of the ankle (whose flattening turn
    would swing the toe), the ball held still; the same tracker resting flat is held flat."""
    b, _, trk = cmu
    names = b.names
    n = 120
    b5, standing = _feet_tracked(cmu)
    j, toe = names.index("foot_l"), names.index("toe_l")
    ball = b5.positions[toe]  # the foot pitches about the ball of its calibrated stance
    lateral = np.cross([0.0, 0.0, 1.0], b5.forward)
    tip = rotvec_to_matrix(lateral / np.linalg.norm(lateral) * np.radians(14.0))
    if (tip @ (b5.positions[j] - ball))[2] < 0:
        tip = tip.T  # the heel goes up, not down
    heel_up = standing.copy()
    heel_up[0, :3, :3] = tip @ standing[0, :3, :3]
    heel_up[0, :3, 3] = ball + tip @ (standing[0, :3, 3] - ball)
    head_hands = np.repeat(trk[:1], n, axis=0)
    ft = 1 / 120
    for pose_, on_ball in ((heel_up, True), (standing, False)):
        feet = np.repeat(pose_[None], n, axis=0)
        feet[..., :3, 3] += np.random.default_rng(9).normal(0.0, 0.002, feet[..., :3, 3].shape)
        five = _five(head_hands, feet)
        res = solve_body(b5, five, ft)
        if on_ball:
            assert not res.contacts[:, 0].any()
            # the ball stays where it rests (the ankle follows its smoothed tracker, the foot pivoting)
            assert np.max(np.linalg.norm(res.positions[:, toe] - res.positions[0, toe], axis=-1)) < 0.005
            pitch = res.world[:, j, :3, :3] @ b5.ref[j, :3, :3].T @ b5.forward
            assert np.all(pitch[:, 2] < -np.sin(np.radians(12.0)))
        else:
            assert res.contacts[:, 0].all()
            assert np.max(np.linalg.norm(np.diff(res.positions[:, toe], axis=0), axis=-1)) < 1e-9


def test_planted_tracked_foot_beyond_reach_does_not_shake(cmu) -> None:
    """The body rises on its toes (head 5 cm up, 2 mm head and foot tracker jitter) over feet trackers
    that stay on the floor: the held feet, out of the legs' reach, rise smoothly with their heels
    (the soft-reach band reads the smoothed hips) instead of hanging from the jittery hips."""
    b, _, trk = cmu
    names = b.names
    n = 240
    b5, standing = _feet_tracked(cmu)
    rng = np.random.default_rng(8)
    feet = np.repeat(standing[None], n, axis=0)
    feet[..., :3, 3] += rng.normal(0.0, 0.002, feet[..., :3, 3].shape)
    head_hands = np.repeat(trk[:1], n, axis=0)
    head_hands[..., 2, 3] += 0.05 * np.sin(np.linspace(0.0, np.pi, n))[:, None]
    head_hands[:, 0, :3, 3] += rng.normal(0.0, 0.002, (n, 3))
    five = _five(head_hands, feet)
    ft = 1 / 120
    j = [names.index("foot_l"), names.index("foot_r")]
    shake = {}
    for soft in (0.0, SolveOptions().leg_soft):
        res = solve_body(b5, five, ft, SolveOptions(leg_soft=soft))
        assert res.contacts.all()  # the trackers never leave the floor: held throughout
        assert np.max(res.tracker_error[:, :3][res.reachable[:, :3]]) < 1e-9
        shake[soft] = np.mean(np.linalg.norm(np.diff(res.positions[:, j], n=2, axis=0), axis=-1))
    assert shake[SolveOptions().leg_soft] < 0.3 * shake[0.0]


def test_hips_swing_toward_a_held_foot_beyond_reach(cmu) -> None:
    """The right foot tracker steps 20 cm back and stands there, the head and hands still: beyond the leg's
    reach from where the head puts the hips, the held foot rises off the floor (the heel raise); with
    ``hip_reach`` the trunk swings about the head (the head and hands exact) and the hips move toward it, so
    it rises far less, eased in (no jerk in the pelvis, the feet as smooth), the frames long before
    unchanged. A head above standing height over both feet (no swing can lower the hips) moves them little."""
    b, _, trk = cmu
    names = b.names
    n = 360
    ft = 1 / 120
    b5, standing = _feet_tracked(cmu)
    u = np.clip((np.arange(n) - 60) / 60, 0.0, 1.0)
    feet = np.repeat(standing[None], n, axis=0)
    feet[:, 1, :3, 3] -= (0.2 * u**3 * (10 - 15 * u + 6 * u * u))[:, None] * b5.forward
    feet[:, 1, 2, 3] += 0.1 * np.sin(np.pi * u)
    head_hands = np.repeat(trk[:1], n, axis=0)
    five = _five(head_hands, feet)
    j = [names.index("foot_l"), names.index("foot_r")]
    off, on = (solve_body(b5, five, ft, SolveOptions(hip_reach=a)) for a in (0.0, np.radians(20.0)))
    stand = np.arange(n) >= 130  # the right foot stands behind (its contact starts as it slows)
    assert on.contacts[stand, 1].all()
    rise = [r.positions[stand, j[1], 2] - standing[1, 2, 3] for r in (off, on)]
    assert rise[0].max() > 0.02 and rise[1].max() < 0.7 * rise[0].max()
    assert np.max(on.tracker_error[:, :3][on.reachable[:, :3]]) < 1e-9
    assert np.array_equal(on.world[:30], off.world[:30])
    pelvis_acc = np.linalg.norm(np.diff(on.positions[:, 0], n=2, axis=0), axis=-1) / ft**2
    assert pelvis_acc.max() < 5.0  # m/s^2: a 20 degree swing eased over 0.25 s
    # no foot jerkier than the stepping foot is without the swing
    acc = [np.linalg.norm(np.diff(r.positions[:, j], n=2, axis=0), axis=-1).max(axis=0) for r in (off, on)]
    assert acc[1].max() <= acc[0].max() * 1.01

    high = np.repeat(trk[:1], 240, axis=0)
    high[..., 2, 3] += 0.05 * np.sin(np.linspace(0.0, np.pi, 240))[:, None]
    five = _five(high, np.repeat(standing[None], 240, axis=0))
    off, on = (solve_body(b5, five, ft, SolveOptions(hip_reach=a)) for a in (0.0, np.radians(20.0)))
    assert np.max(np.linalg.norm(on.positions[:, 0] - off.positions[:, 0], axis=-1)) < 0.01
    assert np.max(on.tracker_error[:, :3][on.reachable[:, :3]]) < 1e-9


def test_head_tracker_noise_does_not_pop_the_feet() -> None:
    """2 mm / 0.5 degree tracker noise on a 120 Hz walk: no foot joint's velocity changes by more
    than 1.5 times the capture's largest change (bench_contacts' pops), the head and hands stay
    exact; a pelvis hanging rigidly from the noisy head (``hip_smoothing=0``) pops."""
    bvh = read_bvh(data_file("mocap", "cmu_131_02.bvh"))
    roles = detect_roles(bvh.bones())
    gt = bvh.world_transforms(frames=slice(0, 600), z_up=True)[:, [bvh.index(roles[r]) for r in roles.roles]]
    rng = np.random.default_rng(3)
    offs = [pose(rotvec_to_matrix(rng.normal(size=3)), rng.normal(scale=0.08, size=3)) for _ in range(3)]
    names = ("head", "hand_l", "hand_r")
    trk = np.stack([gt[:, roles.roles.index(n)] @ np.linalg.inv(o) for n, o in zip(names, offs)], 1)
    b = calibrate(roles, gt[0], trk[0])
    noise = np.random.default_rng(11)
    trk[..., :3, 3] += noise.normal(0.0, 0.002, trk[..., :3, 3].shape)
    trk[..., :3, :3] = rotvec_to_matrix(noise.normal(0.0, np.radians(0.5), trk.shape[:2] + (3,))) @ trk[..., :3, :3]
    ft = 1 / 120
    feet = [roles.roles.index(r) for r in ("foot_l", "toe_l", "foot_r", "toe_r")]
    limit = 1.5 * np.linalg.norm(np.diff(gt[:, feet][..., :3, 3], n=2, axis=0), axis=-1).max(axis=0) / ft

    def pops(res) -> int:
        change = np.linalg.norm(np.diff(res.positions[:, feet], n=2, axis=0), axis=-1) / ft
        return int(np.any(change > limit, axis=1).sum())

    res = solve_body(b, trk, ft)
    rigid = solve_body(b, trk, ft, SolveOptions(hip_smoothing=0.0))
    assert pops(res) == 0 < pops(rigid)
    for r in (res, rigid):
        assert np.max(r.tracker_error[:, :3][r.reachable[:, :3]]) < 1e-9
    # The pelvis itself is calmer: its acceleration is what the noise drove.
    shake = [np.mean(np.linalg.norm(np.diff(r.positions[:, 0], n=2, axis=0), axis=-1)) for r in (res, rigid)]
    assert shake[0] < 0.7 * shake[1]


def test_rigs_without_optional_roles(body) -> None:
    """A rig with no neck, clavicles or toes still solves with exact head and hands."""
    roles, ref, offs = synthetic(drop=("neck", "clavicle_l", "clavicle_r", "toe_l", "toe_r"))
    b = calibrate(roles, ref, trackers_for(ref, roles, offs))
    trk = np.repeat(trackers_for(ref, roles, offs)[None], 5, axis=0)
    trk[:, 1, :3, 3] += np.linspace(0, 0.3, 5)[:, None] * [1, -1, 1]
    res = solve_body(b, trk, FT)
    assert len(res.names) == len(JOINTS) - 5
    assert np.max(res.tracker_error[res.reachable]) < 1e-3


def test_local_transforms_compose_to_world(body) -> None:
    """Parent world @ local gives back each bone's world transform."""
    b, roles, ref, offs = body
    trk = np.repeat(trackers_for(ref, roles, offs)[None], 3, axis=0)
    trk[:, 0, 0, 3] += [0.0, 0.05, 0.1]
    res = solve_body(b, trk, FT)
    local = res.local()
    for j, p in enumerate(res.parents):
        want = res.world[:, j] if p < 0 else res.world[:, p] @ local[:, j]
        np.testing.assert_allclose(want, res.world[:, j], atol=1e-12)


def test_calibration_dimensions_and_errors(body) -> None:
    """Calibration measures lengths and heights; bad inputs raise errors naming the problem."""
    b, roles, ref, offs = body
    upper = np.linalg.norm(np.subtract(JOINTS["forearm_l"], JOINTS["upper_arm_l"]))
    assert np.linalg.norm(b.arms[0].upper) == pytest.approx(upper)
    assert b.head_height == pytest.approx(1.6) and b.pelvis_height == pytest.approx(1.0)
    np.testing.assert_allclose(b.forward, [0, -1, 0], atol=1e-9)
    np.testing.assert_allclose(b.ankle_height, [0.08, 0.08])
    trk = trackers_for(ref, roles, offs)
    with pytest.raises(InvalidInputError, match="'hand_r' tracker is required"):
        calibrate(roles, ref, {"head": trk[0], "hand_l": trk[1]})
    upside_down = {k: v.copy() for k, v in ref.items()}
    upside_down[roles["head"]][2, 3] = 0.5
    with pytest.raises(InvalidInputError, match="standing"):
        calibrate(roles, upside_down, trk)
    with pytest.raises(InvalidInputError, match=r"\(N, T, 4, 4\)"):
        solve_body(b, trk, FT)


def test_plan_steps_stands_still_without_motion() -> None:
    """The planner keeps both feet planted when the body stays put, however long the take."""
    neutral = np.repeat(np.array([[[0.1, 0.0], [-0.1, 0.0]]]), 500, axis=0)
    plan = plan_steps(neutral, np.zeros(500), FT, GaitOptions())
    assert plan.planted.all() and np.all(plan.lift == 0.0)
    np.testing.assert_array_equal(plan.position, neutral)


def _shifted_body(sway: float, seconds: float = 3.0) -> np.ndarray:
    """Neutral feet (N, 2, 2) of a body shifting 8 cm to its right over 0.2-0.5 s, swaying ``sway`` m at 1 Hz.

    The shift leaves both feet farther than ``settle_distance`` from their places but nearer
    than ``step_distance`` (heading 0: facing +y, the right foot at +x).
    """
    o = GaitOptions()
    assert o.settle_distance < 0.08 < o.step_distance
    t = np.arange(int(round(seconds / FT))) * FT
    center = np.stack([np.clip((t - 0.2) / 0.3, 0.0, 1.0) * 0.08, sway * np.sin(2.0 * np.pi * t)], axis=1)
    return np.stack([center - [0.1, 0.0], center + [0.1, 0.0]], axis=1)


def test_plan_steps_standing_body_keeps_an_uneven_stance() -> None:
    """A body that shifts its weight and stands keeps its feet where they stood; one that sways on settles them.

    Standing on uneven feet is what performers do: a settle step there would be a step never
    taken (the feet sliding against the capture's).
    """
    o = GaitOptions(cadence=None)
    neutral = _shifted_body(0.0)
    plan = plan_steps(neutral, np.zeros(len(neutral)), FT, o)
    assert plan.planted.all() and np.all(plan.lift == 0.0)
    np.testing.assert_array_equal(plan.position, np.broadcast_to(neutral[0], plan.position.shape))
    # Swaying by 3 cm (above ``still_speed``) the body keeps moving: both feet settle under it.
    moving = plan_steps(_shifted_body(0.03), np.zeros(len(neutral)), FT, o)
    assert not moving.planted[:, 0].all() and not moving.planted[:, 1].all()


@pytest.mark.parametrize("cause", ["settle", "turn"])
def test_plan_steps_no_triggered_step_just_before_a_scheduled_one(cause: str) -> None:
    """A foot that a walk's first step moves soon waits for it instead of stepping first.

    ``settle``: the swaying body of the test above, whose feet settle 0.6-1.1 s in; ``turn``: a
    body turning 50 degrees in place over 0.2-0.5 s (beyond ``step_turn``). A schedule lifting
    the foot that steps first 0.2 s after that step makes the scheduled step its first, and the
    other foot's first too (it steps after the walk).
    """
    o = GaitOptions(cadence=None)
    if cause == "settle":
        neutral = _shifted_body(0.03)
        heading = np.zeros(len(neutral))
    else:
        neutral = _shifted_body(0.0) - [0.08, 0.0]  # standing where it stands
        heading = np.radians(50.0) * np.clip((np.arange(len(neutral)) * FT - 0.2) / 0.3, 0.0, 1.0)
    n = len(neutral)
    free = plan_steps(neutral, heading, FT, o)
    first = np.argmax(~free.planted, axis=0)  # (2,) each foot's first frame in the air
    foot = int(np.argmin(np.where(free.planted.all(axis=0), n, first)))
    assert not free.planted[:, foot].all()
    lift, land = int(first[foot]) - 1 + int(round(0.2 / FT)), int(first[foot]) + int(round(0.5 / FT))
    walking = np.zeros(n, dtype=bool)
    walking[lift : land + 1] = True
    schedule = StepSchedule(np.array([lift]), np.array([land]), np.array([foot]), np.array([n - 1]), walking)
    plan = plan_steps(neutral, heading, FT, o, schedule)
    assert np.flatnonzero(~plan.planted[:, foot])[0] == lift + 1
    assert plan.planted[: land + 1, 1 - foot].all()
    assert plan.planted[land:, foot].all()
    assert not plan.planted[land:, 1 - foot].all()  # the other foot still steps once the walk is over


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_plan_steps_properties(seed: int) -> None:
    """Random wandering: one foot swings at a time, planted feet never slide, feet never cross."""
    rng = np.random.default_rng(seed)
    n = 400
    vel = np.cumsum(rng.normal(scale=0.05, size=(n, 2)), axis=0)
    vel = np.clip(vel, -1.5, 1.5)
    center = np.cumsum(vel, axis=0) * FT
    heading = np.cumsum(rng.normal(scale=0.01, size=n))
    right = np.stack([np.cos(heading), np.sin(heading)], 1)
    neutral = np.stack([center - 0.1 * right, center + 0.1 * right], 1)
    plan = plan_steps(neutral, heading, FT, GaitOptions())
    assert np.all(plan.planted[:, 0] | plan.planted[:, 1])
    still = plan.planted[1:] & plan.planted[:-1]
    slide = np.linalg.norm(np.diff(plan.position, axis=0), axis=-1)
    assert np.max(slide[still], initial=0.0) < 1e-12
    assert np.all(plan.lift >= 0.0) and np.all(plan.lift[plan.planted] == 0.0)
    gap = np.sum((plan.position[:, 1] - plan.position[:, 0]) * right, axis=-1)
    landed = plan.planted.all(axis=1)
    assert np.all(gap[landed][1:] > 0.0)  # the left foot stays left of the right one


def test_spine_stiffness_moves_bend_to_softer_joints(body) -> None:
    """A stiff lower spine joint bends less than the others when the head pitches down."""
    b, roles, ref, offs = body
    trk = trackers_for(ref, roles, offs)[None]
    head = ref[roles["head"]].copy()
    head[:3, :3] = rotvec_to_matrix([-0.8, 0.0, 0.0]) @ head[:3, :3]
    trk[0, 0] = head @ np.linalg.inv(offs[0])

    def bends(options: SolveOptions) -> np.ndarray:
        res = solve_body(b, trk, FT, options)
        D = res.world[0, :, :3, :3] @ np.swapaxes(b.ref[:, :3, :3], -1, -2)
        spine = [b.index(f"spine_{i}") for i in (1, 2, 3)]
        rel = [D[b.parents[j]].T @ D[j] for j in spine]
        return np.array([np.arccos(np.clip((np.trace(r) - 1) / 2, -1, 1)) for r in rel])

    even = bends(SolveOptions(spine_bend=0.6))
    stiff = bends(SolveOptions(spine_bend=0.6, spine_stiffness=(0.9,)))
    np.testing.assert_allclose(even, even[0], rtol=1e-6)
    assert stiff[0] < 0.2 * stiff[1] and stiff[1] > even[1]


def test_options_are_validated() -> None:
    """Out-of-range options raise InvalidInputError naming the option."""
    with pytest.raises(InvalidInputError, match="spine_bend"):
        SolveOptions(spine_bend=1.5)
    with pytest.raises(InvalidInputError, match="elbow_pole"):
        SolveOptions(elbow_pole=(0.0, 0.0, 0.0))
    with pytest.raises(InvalidInputError, match="spine_stiffness"):
        SolveOptions(spine_stiffness=(1.0,))
    with pytest.raises(InvalidInputError, match="hip_smoothing"):
        SolveOptions(hip_smoothing=-0.1)
    with pytest.raises(InvalidInputError, match="swing_time"):
        GaitOptions(swing_time=0.0)
