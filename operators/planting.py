# SPDX-License-Identifier: GPL-3.0-or-later
"""Planting a chain's target in a bake: held during its contacts, above the ground, measured before and after.

A bake of a chain with **Contacts** on plants its sampled target during each contact interval
of its list (``ik_core.contacts.plant_targets``: held where it landed, eased out), keeps it above
the ground (a plane, or a collection's meshes measured by ray casts through the bridge) on every
frame, and reports foot skate and ground penetration before and after
(``ik_core.contacts.foot_skate``, the measure of ``bench/bench_contacts.py``). A leg chain with a
foot bone below its tip (**Plant Foot**) is planted by ``ik_core.contacts.plant_foot`` instead:
the ankle as above, and the ball of the foot (the foot bone's tail) held through the heel rise
by the foot's rotation, which the bake keys; the report measures the ball as well.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import bpy
import numpy as np

from ..ik_core import ArticulateError
from ..ik_core.contacts import (
    ContactOptions,
    contact_intervals,
    foot_skate,
    keep_above_ground,
    plant_foot,
    plant_targets,
    root_drop_for_reach,
)
from . import bridge


class PlantingFailed(Exception):
    """Contacts cannot be detected or planted (a bad interval, ground or setting); nothing was changed."""


def frame_time(scene: bpy.types.Scene, step: int = 1) -> float:
    """Seconds between samples ``step`` frames apart at the scene's frame rate."""
    return step * scene.render.fps_base / scene.render.fps


def options(chain) -> ContactOptions:
    """The chain's detection thresholds (the core's defaults for the rest).

    Raises:
        PlantingFailed: A threshold the core refuses (the message names it).
    """
    try:
        return ContactOptions(height=chain.contact_height, speed=chain.contact_speed,
                              min_duration=chain.contact_min_duration)
    except ArticulateError as err:
        raise PlantingFailed(f"chain {chain.name!r}: {err}") from None


def ground_levels(chain, positions: np.ndarray, depsgraph: bpy.types.Depsgraph) -> np.ndarray:
    """(N,) world height of the ground under each of a chain's target positions (N, 3) [m].

    A plane: its height on every frame. A collection: the first surface below each position (ray
    casts); frames with nothing below take the nearest frame's height.

    Raises:
        PlantingFailed: No ground collection, one without meshes, or no surface under any frame.
    """
    n = len(positions)
    if chain.ground != "COLLECTION":
        return np.full(n, float(chain.ground_height))
    try:
        heights = bridge.GroundMeshes(chain.ground_collection, depsgraph).heights(positions)
    except bridge.BridgeError as err:
        raise PlantingFailed(f"chain {chain.name!r}: {err}") from None
    found = np.isfinite(heights)
    if not found.any():
        raise PlantingFailed(f"chain {chain.name!r}: ground collection {chain.ground_collection.name!r} has no surface "
                         "under the target on any frame; move the meshes under its path, or use a ground plane")
    k = np.arange(n)
    return np.interp(k, k[found], heights[found])


def rest_height(chain, positions: np.ndarray, ground: np.ndarray) -> float:
    """The target's height above the ground when the effector rests on it [m]: set, or its 5th percentile."""
    if not chain.rest_height_auto:
        return float(chain.rest_height)
    return max(0.0, float(np.percentile(positions[:, 2] - ground, 5)))


def stored_mask(chain, frames: Sequence[int]) -> np.ndarray:
    """(N,) True on the frames that lie in one of the chain's contact intervals.

    Raises:
        PlantingFailed: An interval whose end precedes its start (the message names it).
    """
    f = np.asarray(frames)
    mask = np.zeros(len(f), dtype=bool)
    for item in chain.contacts:
        if item.frame_end < item.frame_start:
            raise PlantingFailed(f"chain {chain.name!r}: contact {item.name!r} ends (frame {item.frame_end}) before it "
                             f"starts (frame {item.frame_start}); swap them or remove the contact")
        mask |= (f >= item.frame_start) & (f <= item.frame_end)
    return mask


def foot_name(arm: bpy.types.Object, chain, tip: bpy.types.PoseBone) -> str:
    """The chain's foot bone, planted with its target ("" for none: Contacts or Plant Foot off, no foot found).

    Raises:
        PlantingFailed: A Foot Bone that is missing or no child of the tip (the message names it).
    """
    if not (chain.use_contacts and chain.use_foot and chain.use_tail):
        return ""
    try:
        pb = bridge.foot_bone(arm, tip, chain.foot_bone)
    except bridge.BridgeError as err:
        raise PlantingFailed(f"chain {chain.name!r}: {err}") from None
    return pb.name if pb is not None else ""


@dataclass
class FootPlan:
    """What planting did to the ball of a chain's foot.

    Attributes:
        bone: The foot bone.
        contact: (N,) the ball's contact frames (detected on its path with the chain's thresholds).
        rest: The ball's height above the ground when resting [m].
        before: (N, 3) the ball as animated: on the animated target, the foot as it played [m].
        after: (N, 3) the ball on the planted target with the planted foot [m].
        rotations: (N, 3, 3) planted world rotations of the foot bone (keyed by the bake).
    """

    bone: str
    contact: np.ndarray
    rest: float
    before: np.ndarray
    after: np.ndarray
    rotations: np.ndarray


@dataclass
class ContactPlan:
    """What planting did to one chain's target over a bake.

    Attributes:
        chain: The chain's name.
        contact: (N,) contact frames (its intervals).
        ground: (N,) ground height under the target [m].
        rest: The target's height above the ground when resting [m].
        before: (N, 3) the target's positions as animated [m].
        after: (N, 3) the planted targets, above the ground [m].
        frame_time: Seconds between samples.
        foot: The ball of the foot's planting, or None (no foot bone).
    """

    chain: str
    contact: np.ndarray
    ground: np.ndarray
    rest: float
    before: np.ndarray
    after: np.ndarray
    frame_time: float
    foot: FootPlan | None = None

    def _measures(self, contact: np.ndarray, rest: float, before: np.ndarray, after: np.ndarray,
                  played: np.ndarray | None, frames: Sequence[int]) -> dict:
        """Intervals, and skate and penetration of one joint before, as planned and (``played``) in playback."""
        level = self.ground + rest

        def measure(p: np.ndarray) -> dict:
            m = foot_skate(p, self.frame_time, level, contact)
            return {"skate_m_per_frame": m.skate, "skate_ratio": m.skate_ratio, "near_ratio": m.near_ratio,
                    "contact_frames": m.contact_frames, "penetration_m": m.penetration}

        entry = {
            "intervals": [[int(frames[a]), int(frames[b - 1])] for a, b in contact_intervals(contact)],
            "rest_height_m": rest,
            "before": measure(before),
            "planted_target": measure(after),
        }
        if played is not None:
            entry["after"] = {**measure(played), "measured_by": "playback"}
        return entry

    def report(self, tips: np.ndarray | None, frames: Sequence[int], balls: np.ndarray | None = None) -> dict:
        """The report's ``contacts`` entry: intervals, and skate and penetration before and after.

        ``tips``: (N, 3) the chain's tip in playback after the bake, or None (not keyed).
        ``balls``: (N, 3) the ball of the foot in playback after the bake, or None. With a foot,
        ``ball`` holds the same measures of the ball over its own contacts.
        """
        entry = self._measures(self.contact, self.rest, self.before, self.after, tips, frames)
        entry["ground_m"] = [float(self.ground.min()), float(self.ground.max())]
        if self.foot is not None:
            f = self.foot
            entry["ball"] = {"bone": f.bone, **self._measures(f.contact, f.rest, f.before, f.after, balls, frames)}
        return entry


def plant(scene: bpy.types.Scene, chain, samples: bridge.ChainSamples, frames: range,
          depsgraph: bpy.types.Depsgraph, foot_bone: str = "") -> ContactPlan | None:
    """Plant a chain's sampled target during its contacts and keep it above the ground (in place).

    With ``foot_bone`` (sampled into ``samples.foot`` and ``samples.ball``), the ball of the foot
    is planted too (:func:`ik_core.contacts.plant_foot`); the plan's ``foot`` holds the foot's
    rotations to key.

    Returns:
        What was done, or None for a chain without Contacts (its samples untouched).

    Raises:
        PlantingFailed: A bad interval, ground or setting (nothing is changed then).
    """
    if not chain.use_contacts:
        return None
    ft = frame_time(scene, frames.step)
    M = samples.target
    p = M[:, :3, 3].copy()
    contact = stored_mask(chain, frames)
    ground = ground_levels(chain, p, depsgraph)
    rest = rest_height(chain, p, ground)
    scale = np.linalg.norm(M[:, :3, :3], axis=-2, keepdims=True)
    R = M[:, :3, :3] / scale if chain.use_rotation else None
    foot = None
    try:
        planted = plant_targets(p, contact, ft, rotations=R, blend_time=chain.contact_blend)
        # Above the ground under each frame: the clamp runs on heights above it, then they are put back.
        lift = np.column_stack([np.zeros((len(p), 2)), ground])
        after = keep_above_ground(planted.positions - lift, 0.0, rest) + lift
        if foot_bone and samples.foot is not None:
            after, foot = _plant_ball(chain, foot_bone, samples, p, lift, contact, ft, rest)
    except ArticulateError as err:
        raise PlantingFailed(f"chain {chain.name!r}: {err}") from None
    out = M.copy()
    out[:, :3, 3] = after
    if planted.rotations is not None:
        out[:, :3, :3] = planted.rotations * scale
    samples.target = out
    return ContactPlan(chain.name, contact, ground, rest, p, after, ft, foot)


def _plant_ball(chain, foot_bone: str, samples: bridge.ChainSamples, p: np.ndarray, lift: np.ndarray,
                contact: np.ndarray, ft: float, rest: float) -> tuple[np.ndarray, FootPlan]:
    """The ankle targets (N, 3) and the foot of :func:`ik_core.contacts.plant_foot` for a chain with a foot bone.

    The foot's animated rotation is its world rotation as the frame played before the bake; the
    ball's offset is its tail from the chain's end then, in the foot's frame; the ground under
    the ankle is taken for the ball's too.
    """
    Rf = samples.foot
    b = np.mean(np.einsum("nji,nj->ni", Rf, samples.ball - samples.free_tip[:, :3, 3]), axis=0)
    before = p + Rf @ b
    ball_rest = max(0.0, float(np.percentile(before[:, 2] - lift[:, 2], 5)))
    planted = plant_foot(p - lift, Rf, b, ft, 0.0, rest, ball_rest, options(chain), chain.contact_blend,
                         contact=contact)
    after = planted.ankle + lift
    return after, FootPlan(foot_bone, planted.ball_contact, ball_rest, before,
                           after + planted.rotations @ b, planted.rotations)


# Share of a leg's length a planted target may be from its hip: a knee never snaps fully straight.
REACH_MARGIN = 0.999


def hips_drop(plans: Sequence[ContactPlan], hips: Sequence[np.ndarray], reach: Sequence[float]) -> np.ndarray:
    """(N,) how far to lower the hips [m] so every planted target of ``plans`` is within its chain's reach.

    Args:
        plans: The planted chains hanging from one hips (legs).
        hips: Per chain, (N, 3) world position of its root joint (the hip) before any drop [m].
        reach: Per chain, its length from root joint to tip [m].

    Raises:
        PlantingFailed: The core refuses the input (the message names the chains).
    """
    try:
        return root_drop_for_reach(np.stack(hips, axis=1), np.stack([p.after for p in plans], axis=1),
                                   REACH_MARGIN * np.asarray(reach, dtype=float),
                                   np.stack([p.contact for p in plans], axis=1), plans[0].frame_time)
    except ArticulateError as err:
        raise PlantingFailed(f"chains {', '.join(repr(p.chain) for p in plans)}: {err}") from None


def empty_list_warnings(chains: Sequence) -> list[str]:
    """One line per chain with Contacts on and no interval (only the ground is kept for it)."""
    return [f"chain {c.name!r}: Contacts is on but its contact list is empty: only the ground is kept; press Detect "
            "Contacts (or add intervals) to plant it" for c in chains if c.use_contacts and not len(c.contacts)]


def summary(report: dict) -> str:
    """One line over a bake report's planted chains: skate and penetration before and after ("" when none)."""
    parts = []
    for entry in report["chains"]:
        contacts = entry.get("contacts")
        if contacts is None:
            continue
        joints = [("", contacts)] + ([("ball: ", contacts["ball"])] if "ball" in contacts else [])
        parts.append(f"{entry['chain']}: " + ", ".join(
            f"{label}skate {m['before']['skate_m_per_frame'] * 1000:.3g} -> "
            f"{m.get('after', m['planted_target'])['skate_m_per_frame'] * 1000:.3g} mm/frame, penetration "
            f"{m['before']['penetration_m'] * 1000:.3g} -> "
            f"{m.get('after', m['planted_target'])['penetration_m'] * 1000:.3g} mm" for label, m in joints))
    return "; ".join(parts)


