# SPDX-License-Identifier: GPL-3.0-or-later
"""What a bake leaves, read back for comparison: every F-curve's keys in a saved .blend, and a
report without its timings. Needs the bpy module (imported when called)."""

import json
from pathlib import Path

import numpy as np

# Keyframe properties compared bytewise: position, both handles.
KEY_PROPERTIES = ("co", "handle_left", "handle_right")


def _action_fcurves(action) -> list:
    """An action's F-curves: in its layers' channelbags (Blender 4.4+), else ``action.fcurves``."""
    if hasattr(action, "layers"):
        return [fc for layer in action.layers for strip in layer.strips for bag in strip.channelbags
                for fc in bag.fcurves]
    return list(action.fcurves)


def fcurve_keys(blend: Path) -> dict[tuple[str, str, int], bytes]:
    """Open ``blend`` (replacing the current file); per (action, data path, index) its keys' raw bytes.

    The bytes are Blender's own float32 values of every key's position and handles, so equal
    bytes mean identical curves.
    """
    import bpy

    bpy.ops.wm.open_mainfile(filepath=str(blend))
    keys = {}
    for action in bpy.data.actions:
        for fc in _action_fcurves(action):
            points = fc.keyframe_points
            buf = np.empty(2 * len(points), dtype=np.float32)
            raw = b""
            for prop in KEY_PROPERTIES:
                points.foreach_get(prop, buf)
                raw += buf.tobytes()
            keys[(action.name, fc.data_path, fc.array_index)] = raw
    return keys


def report_without_timings(path: Path) -> dict:
    """A bake report as read from JSON, without its ``seconds`` (timings differ on every run)."""
    report = json.loads(Path(path).read_text())
    report.pop("seconds", None)
    return report
