# SPDX-License-Identifier: GPL-3.0-or-later
"""The trajectory a robot rig was last given from a file: its frames and the file's own samples, kept on the rig."""

from __future__ import annotations

import json
from dataclasses import dataclass

import bpy
import numpy as np

from ...ik_core import ArticulateError
from ...ik_core.trajectory import JointTrajectory, sample_frames
from .errors import BridgeError

# A JSON string custom property, as the robot description is: saved in the .blend, read back as is.
TRAJECTORY_KEY = "articulate_trajectory"
KINDS = ("joints", "poses")


@dataclass(frozen=True)
class StoredTrajectory:
    """What an import left on the rig.

    Attributes:
        source: File name the trajectory came from.
        kind: ``"joints"`` (keyed joint values) or ``"poses"`` (a target path, baked into joints).
        frame_start: First keyed frame.
        frame_end: Last keyed frame (inclusive).
        fps: Frames per second the samples were placed at [Hz].
        samples: The file's own joint samples (its times [s], values [rad or m]) for ``"joints"``;
            ``None`` for poses.
    """

    source: str
    kind: str
    frame_start: int
    frame_end: int
    fps: float
    samples: JointTrajectory | None = None

    def sample_frames(self) -> np.ndarray:
        """(N,) fractional frame of each stored sample (empty without samples)."""
        if self.samples is None:
            return np.empty(0)
        return sample_frames(self.samples.times, self.fps, self.frame_start)


def store_trajectory(arm: bpy.types.Object, stored: StoredTrajectory) -> None:
    """Keep ``stored`` on the rig, replacing what an earlier import left."""
    data = {
        "source": stored.source, "kind": stored.kind, "frame_start": int(stored.frame_start),
        "frame_end": int(stored.frame_end), "fps": float(stored.fps),
    }
    if stored.samples is not None:
        data["joint_names"] = list(stored.samples.joint_names)
        data["times"] = stored.samples.times.tolist()
        data["positions"] = stored.samples.positions.tolist()
    arm[TRAJECTORY_KEY] = json.dumps(data)


def stored_trajectory(arm: bpy.types.Object) -> StoredTrajectory | None:
    """What the last trajectory import left on the rig, or ``None`` when nothing was imported.

    Raises:
        BridgeError: The stored record is damaged (edited by hand); the message says how to clear it.
    """
    text = arm.get(TRAJECTORY_KEY)
    if not text:
        return None
    try:
        data = json.loads(text)
        samples = None
        if "times" in data:
            samples = JointTrajectory(tuple(data["joint_names"]), data["times"], data["positions"])
        stored = StoredTrajectory(str(data["source"]), str(data["kind"]), int(data["frame_start"]),
                                  int(data["frame_end"]), float(data["fps"]), samples)
    except (ArticulateError, ValueError, TypeError, KeyError) as err:
        raise BridgeError(f"{arm.name!r}: the stored trajectory ({TRAJECTORY_KEY!r} custom property) is damaged "
                          f"({err}); delete the property or import the trajectory again") from None
    if stored.kind not in KINDS or stored.frame_end < stored.frame_start or not stored.fps > 0:
        raise BridgeError(f"{arm.name!r}: the stored trajectory ({TRAJECTORY_KEY!r} custom property) is damaged "
                          f"(kind {stored.kind!r}, frames {stored.frame_start}..{stored.frame_end}, fps {stored.fps}); "
                          "delete the property or import the trajectory again")
    return stored
