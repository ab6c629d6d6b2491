# SPDX-License-Identifier: GPL-3.0-or-later
"""Arms of the body solve: clavicle share and reach assist, elbow direction, two-bone reach."""

from __future__ import annotations

import numpy as np

from .calibration import Body
from .geometry import exp_so3, gaussian_smooth, mv, normalize
from .limbs import solve_limb
from .options import SolveOptions

__all__ = ["solve_arms"]

_UP = np.array([0.0, 0.0, 1.0])


def solve_arms(
    body: Body,
    target: dict[str, np.ndarray],
    D: np.ndarray,
    P: np.ndarray,
    flex: np.ndarray,
    reach: dict[str, np.ndarray],
    o: SolveOptions,
    frame_time: float,
) -> None:
    """Pose clavicles, arms and hands in place in ``D`` and ``P`` (the trunk must be solved).

    Args:
        body: Calibrated body.
        target: Tracker name -> (N, 4, 4) world pose of the tracked bone.
        D: (N, J, 3, 3) world rotation deltas, written for the arm roles.
        P: (N, J, 3) world joint positions [m], written for the arm roles.
        flex: (N, 4) flexions; columns 0 and 1 (elbows) are written [rad].
        reach: Receives 'hand_l' and 'hand_r' (N,) reachability flags.
        o: Options.
        frame_time: Seconds per frame.
    """
    chest = body.trunk_path()[len(body.roles.spine)]
    for k, side in enumerate("lr"):
        limb = body.arms[k]
        hand = target[f"hand_{side}"]
        D_hand = hand[:, :3, :3] @ body.ref[limb.end, :3, :3].T
        clav = f"clavicle_{side}"
        base = chest
        if clav in body.names:
            c = body.index(clav)
            P[:, c] = P[:, chest] + mv(D[:, chest], body.offsets[c])
            ref_to_hand = body.positions[limb.end] - body.positions[c]
            D[:, c] = _clavicle(D[:, chest], P[:, c], ref_to_hand, hand[:, :3, 3], o)
            if o.clavicle_reach > 0:
                D[:, c] = _reach_assist(
                    D[:, c],
                    P[:, c],
                    body.offsets[limb.root],
                    hand[:, :3, 3],
                    limb.max_reach,
                    o.clavicle_reach,
                )
            base = c
        P[:, limb.root] = P[:, base] + mv(D[:, base], body.offsets[limb.root])
        lateral = np.cross(_UP, body.forward) * (-1.0 if side == "l" else 1.0)
        ox, oy, oz = o.elbow_pole
        pole_ref = ox * lateral + oy * body.forward + oz * _UP
        d_hat = normalize(hand[:, :3, 3] - P[:, limb.root])
        # Each cue counts as much as it is perpendicular to the arm (a parallel cue says nothing).
        pole = (1.0 - o.elbow_from_hand) * _perp(mv(D[:, chest], normalize(pole_ref)), d_hat)
        if o.elbow_from_hand > 0:
            guess = hand[:, :3, 3] + mv(D_hand, -limb.lower) - P[:, limb.root]
            pole += o.elbow_from_hand * _perp(guess, d_hat) / np.linalg.norm(limb.lower)
        if o.pole_smoothing > 0:
            pole = gaussian_smooth(pole, o.pole_smoothing / frame_time)
        sol = solve_limb(
            limb, P[:, limb.root], hand[:, :3, 3], pole, mv(D[:, base], limb.hinge), D_hand, o.forearm_twist
        )
        D[:, limb.root], D[:, limb.mid], D[:, limb.end] = sol.upper, sol.lower, D_hand
        P[:, limb.mid], P[:, limb.end] = sol.mid, sol.end
        flex[:, k] = sol.flex
        reach[f"hand_{side}"] = sol.reachable


def _perp(v: np.ndarray, axis: np.ndarray) -> np.ndarray:
    return v - np.sum(v * axis, axis=-1, keepdims=True) * axis


def _clavicle(
    D_chest: np.ndarray, p_clav: np.ndarray, ref_to_hand: np.ndarray, hand: np.ndarray, o: SolveOptions
) -> np.ndarray:
    """Clavicle delta: a share of the hand's swing about the clavicle joint since the reference.

    The swing is measured in the chest frame, so the reference pose leaves the clavicle alone.
    """
    before = mv(D_chest, ref_to_hand)
    after = hand - p_clav
    axis = np.cross(before, after)
    angle = np.arctan2(np.linalg.norm(axis, axis=-1), np.sum(before * after, axis=-1))
    angle = np.minimum(o.clavicle_share * angle, o.clavicle_max)
    return exp_so3(normalize(axis) * angle[:, None]) @ D_chest


def _reach_assist(
    D_clav: np.ndarray,
    p_clav: np.ndarray,
    shoulder_offset: np.ndarray,
    hand: np.ndarray,
    reach: float,
    limit: float,
) -> np.ndarray:
    """Swing the clavicle further, by at most ``limit`` [rad], where the hand is out of the arm's reach.

    The shoulder moves on a circle about the clavicle joint; the law of cosines gives the
    smallest extra swing that brings it within ``reach`` of the hand.
    """
    bone = mv(D_clav, shoulder_offset)
    to_hand = hand - p_clav
    c = np.linalg.norm(bone, axis=-1)
    d = np.linalg.norm(to_hand, axis=-1)
    axis = np.cross(bone, to_hand)
    phi = np.arctan2(np.linalg.norm(axis, axis=-1), np.sum(bone * to_hand, axis=-1))
    with np.errstate(divide="ignore", invalid="ignore"):
        k = (d**2 + c**2 - reach**2) / (2.0 * c * d)
    gap = np.where(np.isfinite(k), phi - np.arccos(np.clip(k, -1.0, 1.0)), 0.0)
    extra = np.clip(gap, 0.0, limit)
    return exp_so3(normalize(axis) * extra[:, None]) @ D_clav
