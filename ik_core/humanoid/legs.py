# SPDX-License-Identifier: GPL-3.0-or-later
"""Legs of the body solve: planned or tracked feet planted over their contacts, heel raise, knee direction."""

from __future__ import annotations

import numpy as np

from ..contacts import aim_tip, contact_intervals, detect_contacts, keep_above_ground, pitch_above_ground, plant_targets
from .cadence import StepSchedule, step_schedule
from .calibration import Body, Limb
from .gait import plan_steps
from .geometry import gaussian_smooth, mv, normalize, orthonormalize_rotations, rot_z
from .hips import trunk_swing_for_reach
from .limbs import solve_limb
from .options import SolveOptions
from .trunk import heading_of, swing_trunk

__all__ = ["solve_legs"]

_UP = np.array([0.0, 0.0, 1.0])
# A tracked foot pitched toe-down by more than this where its ankle comes to rest stands on its ball:
# a 20 cm foot so pitched has its heel 3.5 cm up, past the contact band (ContactOptions.height).
_BALL_TILT = np.radians(10.0)


def _heel_raise(leg: Limb, hip: np.ndarray, ankle: np.ndarray, soft: float) -> np.ndarray:
    """Raise planned ankles that would stretch the leg into its last ``soft`` metres of reach.

    A nearly straight knee snaps as its target nears full extension; approaching the reach
    asymptotically (soft IK) removes that, and taking the slack up vertically (the heel rises,
    as at toe-off) keeps a planted foot from sliding.
    """
    full = float(np.linalg.norm(leg.upper) + np.linalg.norm(leg.lower))
    # The band never reaches into the standing pose, so the calibration frame is reproduced.
    band = min(soft, full - float(np.linalg.norm(leg.upper + leg.lower)))
    if band <= 0:
        return ankle
    v = ankle - hip
    dist = np.linalg.norm(v, axis=-1)
    start = full - band
    want = np.where(dist > start, start + band * (1.0 - np.exp(-np.maximum(dist - start, 0.0) / band)), dist)
    flat = np.sum(v[:, :2] ** 2, axis=-1)
    height = np.sqrt(np.maximum(want**2 - flat, 0.0))
    out = ankle.copy()
    # Where even the horizontal distance is out of reach, raising the heel cannot help.
    fix = (dist > start) & (want**2 > flat)
    out[:, 2] = np.where(fix, np.maximum(ankle[:, 2], hip[:, 2] - height), ankle[:, 2])
    return out


def _flat_landings(contact: np.ndarray, toe_rise: np.ndarray) -> np.ndarray:
    """Contacts (N,) of a tracked ankle without those that begin on the ball of the foot.

    A foot whose heel is up when its ankle comes to rest within the contact band (a lunge, a
    stance on tiptoe) stands on its ball: holding it flat would swing the toe through the
    flattening turn (a pop, and a slide of the ball), so those contacts are left to the ball's
    own contacts, about which the foot pivots. ``toe_rise`` is the sine of the foot's pitch
    (N,), positive toe up.
    """
    out = contact.copy()
    for start, stop in contact_intervals(contact):
        if toe_rise[start] < -np.sin(_BALL_TILT):
            out[start:stop] = False
    return out


def _hips_to_planted_feet(
    body: Body,
    o: SolveOptions,
    frame_time: float,
    D: np.ndarray,
    P: np.ndarray,
    ankles: list[np.ndarray],
    planted: np.ndarray,
) -> None:
    """Swing the trunk about the head (in place in ``D`` and ``P``) so planted ankles are within reach.

    A held foot the leg cannot reach from where the head put the hips rises off the floor (the
    heel raise) or, beyond it, hangs from the hip; with ``o.hip_reach`` the hips move toward it
    (:func:`ik_core.humanoid.hips.trunk_swing_for_reach`), the spine taking up the move so the
    head stays on its tracker. The reach is the straight leg's: within it the heel raise
    (``o.leg_soft``) keeps the knee from snapping straight.
    """
    path = body.trunk_path()
    spine = [j for j in path if body.names[j].startswith("spine_")]
    if not spine or not planted.any():
        return
    reach = [float(np.linalg.norm(leg.upper) + np.linalg.norm(leg.lower)) for leg in body.legs]
    hips = np.stack([P[:, 0] + mv(D[:, 0], body.offsets[leg.root]) for leg in body.legs], axis=1)
    swing = trunk_swing_for_reach(
        P[:, path[-1]],
        P[:, spine[0]],
        hips,
        np.stack(ankles, axis=1),
        np.array(reach),
        planted,
        frame_time,
        o.hip_reach_time,
        o.hip_reach,
    )
    swing_trunk(body, D, P, swing)


def solve_legs(
    body: Body,
    o: SolveOptions,
    heading: np.ndarray,
    frame_time: float,
    target: dict[str, np.ndarray],
    D: np.ndarray,
    P: np.ndarray,
    flex: np.ndarray,
    reach: dict[str, np.ndarray],
    breaks: tuple[int, ...] = (),
    steps: StepSchedule | None = None,
) -> np.ndarray:
    """Plan the feet and solve legs, feet and toes in place in ``D`` and ``P``.

    Args:
        body: Calibrated body.
        o: Options.
        heading: (N,) body heading [rad].
        frame_time: Seconds per frame.
        target: Tracker name -> (N, 4, 4) world pose of the tracked bone; 'foot_l' and
            'foot_r', when present, replace the planned feet.
        D: (N, J, 3, 3) world rotation deltas; the pelvis must be solved.
        P: (N, J, 3) world joint positions [m]; the pelvis must be solved.
        flex: (N, 4) flexions; columns 2 and 3 (knees) are written [rad].
        reach: Receives 'foot_l' and 'foot_r' (N,) reachability flags.
        breaks: Frames where the head tracker jumped (the hips' path is smoothed between them).
        steps: Known step timing of the planned feet; None: read from the head
            (``o.gait.cadence``), or every step triggered by the body's drift.

    Returns:
        (N, 2) True while the left / right foot is planted.
    """
    ref_yaw = float(heading_of(body.forward))
    Q = rot_z(heading - ref_yaw)
    pelvis_ref = body.positions[0]
    neutral = np.stack(
        [P[:, 0, :2] + mv(Q, body.positions[leg.end] - pelvis_ref)[:, :2] for leg in body.legs], axis=1
    )
    schedule = steps
    if schedule is None and o.gait.cadence is not None:
        schedule = step_schedule(target["head"][:, :3, 3], P[:, 0], heading, frame_time, o.gait.cadence)
    plan = plan_steps(neutral, heading, frame_time, o.gait, schedule)
    contacts = plan.planted.copy()
    pelvis_fwd = mv(D[:, 0], body.forward)
    pelvis_fwd[:, 2] = 0.0
    feet = []
    for k, side in enumerate("lr"):
        leg = body.legs[k]
        tracker = target.get(f"foot_{side}")
        if tracker is not None:
            ankle = tracker[:, :3, 3]
            if o.plant:
                # A tracker's jitter alone moves a foot faster than it slides (2 mm at 120 Hz
                # is 0.3 m/s): a planted solve low-passes its path (feet need not meet their
                # trackers exactly, as head and hands do), and its turn, whose jitter the foot's
                # length carries to the toe (0.5 degree at 15 cm pops the toe outside contacts).
                ankle = gaussian_smooth(ankle, o.foot_smoothing / frame_time)
                R_foot = orthonormalize_rotations(gaussian_smooth(tracker[:, :3, :3], o.foot_smoothing / frame_time))
            else:
                R_foot = tracker[:, :3, :3]
            D_foot = R_foot @ body.ref[leg.end, :3, :3].T
            contacts[:, k] = ankle[:, 2] < body.floor + body.ankle_height[k] + 0.03
        else:
            ankle = np.concatenate(
                [plan.position[:, k], (body.floor + body.ankle_height[k] + plan.lift[:, k])[:, None]], axis=1
            )
            D_foot = rot_z(plan.yaw[:, k] - ref_yaw)
        if o.plant:
            # The same contact machinery as chain bakes: the foot held flat where it landed over
            # its contacts, never below the floor. A planned foot's contacts are the plan's own
            # (exact); a tracked foot's are found on its trajectory.
            if tracker is None:
                contact = plan.planted[:, k]
            else:
                contact = detect_contacts(ankle, frame_time, body.floor, float(body.ankle_height[k]), o.contacts)
                contact = _flat_landings(contact, mv(D_foot, body.forward)[:, 2])
            planted = plant_targets(ankle, contact, frame_time, D_foot, o.plant_blend, flat_up=_UP)
            ankle = keep_above_ground(planted.positions, body.floor, float(body.ankle_height[k]))
            D_foot = planted.rotations
            contacts[:, k] = contact
        feet.append((ankle, D_foot, tracker))
    if o.plant and o.hip_reach > 0.0 and "pelvis" not in target:
        _hips_to_planted_feet(body, o, frame_time, D, P, [f[0] for f in feet], contacts)
    for k, side in enumerate("lr"):
        leg = body.legs[k]
        ankle, D_foot, tracker = feet[k]
        P[:, leg.root] = P[:, 0] + mv(D[:, 0], body.offsets[leg.root])
        if tracker is None or o.plant:
            # A planned foot, or a planted tracked one (beyond a leg's reach a stretched knee
            # would snap each time the target comes within it, popping the foot).
            # The raise reads the hip's smoothed path: the pelvis keeps the head tracker's tremor
            # along the spine (see solve_trunk), which a raised heel would pass on to its foot.
            hip = gaussian_smooth(P[:, leg.root], o.hip_smoothing / frame_time, breaks)
            ankle = _heel_raise(leg, hip, ankle, o.leg_soft)
        foot_fwd = mv(D_foot, body.forward)
        foot_fwd[:, 2] = 0.0
        pole = normalize(foot_fwd) + normalize(pelvis_fwd)
        if o.pole_smoothing > 0:
            pole = gaussian_smooth(pole, o.pole_smoothing / frame_time)
        sol = solve_limb(leg, P[:, leg.root], ankle, pole, mv(D[:, 0], leg.hinge))
        toe = f"toe_{side}"
        if toe in body.names and o.plant:
            j = body.index(toe)
            clearance = max(float(body.positions[j, 2]) - body.floor, 0.0)
            # The ball of the foot stays planted while its heel rises, and the foot pivots
            # about the ankle to keep it: over a tracked foot's own ball contacts, or a planned
            # foot's push-off, outside the ankle's contacts (while the ankle is held the foot
            # is flat).
            ball = sol.end + mv(D_foot, body.offsets[j])
            if tracker is not None:
                ball_contact = detect_contacts(ball, frame_time, body.floor, clearance, o.contacts)
            else:
                ball_contact = plan.ball[:, k].copy()
            ball_contact &= ~contacts[:, k]
            if ball_contact.any():
                held = plant_targets(ball, ball_contact, frame_time, blend_time=o.plant_blend)
                D_foot = aim_tip(sol.end, D_foot, body.offsets[j], held.positions)
            # A tracked foot tipped toe-down (or a tracker's jitter) must not push the toe
            # through the floor: the foot pitches up about the ankle instead.
            D_foot = pitch_above_ground(sol.end, D_foot, body.offsets[j], body.floor, clearance)
        D[:, leg.root], D[:, leg.mid], D[:, leg.end] = sol.upper, sol.lower, D_foot
        P[:, leg.mid], P[:, leg.end] = sol.mid, sol.end
        flex[:, 2 + k] = sol.flex
        reach[f"foot_{side}"] = sol.reachable
        if toe in body.names:
            j = body.index(toe)
            D[:, j] = D_foot
            P[:, j] = P[:, leg.end] + mv(D_foot, body.offsets[j])
    return contacts
