# SPDX-License-Identifier: GPL-3.0-or-later
"""What operators share about files: the file browser, a timed file's clock, and writing reports."""

from __future__ import annotations

import json
import os
import re
from typing import NamedTuple

import bpy
import numpy as np
from bpy_extras.io_utils import ExportHelper, ImportHelper

# Options of a path property that accepts Blender's "//" (relative to the .blend) prefix. Every
# path the add-on reads or writes goes through bpy.path.abspath, so all of them do; Blender 4.5+
# warns "does not support blend relative" on a property that does not say so, 4.2 has no such option.
BLEND_RELATIVE: frozenset[str] = frozenset(
    {"PATH_SUPPORTS_BLEND_RELATIVE"}
    if "is_path_supports_blend_relative" in bpy.types.Property.bl_rna.properties else ()
)


class ImportFile(ImportHelper):
    """Opens the file browser from a menu or button; ``execute`` reads ``self.filepath``.

    A file given up front (dropped on the viewport through a file handler, or passed by a
    script invoking the operator) skips the browser: a dialog shows the options instead.
    """

    # SKIP_SAVE: a remembered path would make the next menu click look like a dropped file.
    filepath: bpy.props.StringProperty(
        name="File Path", description="File to import", maxlen=1024, subtype="FILE_PATH",
        options={"SKIP_SAVE", "HIDDEN", *BLEND_RELATIVE},
    )

    def invoke(self, context: bpy.types.Context, event) -> set[str]:
        if self.filepath:
            return context.window_manager.invoke_props_dialog(
                self, title=os.path.basename(self.filepath), confirm_text=self.bl_label)
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}


class ExportFile(ExportHelper):
    """Opens the file browser on ``default_name(context) + filename_ext`` beside the saved .blend."""

    # ExportHelper's own, taking "//" paths as every path here does (the export resolves them).
    filepath: bpy.props.StringProperty(
        name="File Path", description="Filepath used for exporting the file", maxlen=1024, subtype="FILE_PATH",
        options=set(BLEND_RELATIVE),
    )

    def default_name(self, context: bpy.types.Context) -> str:
        """File name without extension that the browser proposes; subclasses name what they export."""
        return "untitled"

    def invoke(self, context: bpy.types.Context, event) -> set[str]:
        if not self.filepath:
            self.filepath = default_export_path(context, self.default_name(context), self.filename_ext)
            self.check(context)  # a format chosen last time puts its own extension on the name
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}


def ensure_extension(op: bpy.types.Operator, ext: str) -> bool:
    """Put ``ext`` on ``op.filepath`` in place of its extension; True when the path changed (what ``check`` returns)."""
    path = op.filepath
    if not os.path.basename(path):
        return False
    op.filepath = bpy.path.ensure_ext(os.path.splitext(path)[0], ext)
    return op.filepath != path


def default_export_path(context: bpy.types.Context, name: str, ext: str) -> str:
    """``<folder of the saved .blend>/<name><ext>``, ``name`` made safe for file systems ("UR5 (CB3)": "UR5_CB3").

    An unsaved file gives a bare name, which the file browser puts in its current folder.
    """
    blend = context.blend_data.filepath
    filename = re.sub("_+", "_", bpy.path.clean_name(name)).strip("_") + ext
    return os.path.join(os.path.dirname(blend), filename) if blend else filename


class KeyRate(NamedTuple):
    """The frame rate samples are keyed at (``fps / fps_base``), whether it is the file's, and why not."""

    fps: int
    fps_base: float
    from_file: bool
    warning: str

    @property
    def rate(self) -> float:
        """Frames per second [Hz]."""
        return self.fps / self.fps_base


class TimedImport(ImportFile):
    """An import of time-stamped samples: where they start, and whether the scene takes the file's clock."""

    start_frame: bpy.props.IntProperty(name="Start Frame", default=1, description="Frame of the file's first sample")
    use_file_timing: bpy.props.BoolProperty(
        name="Scene Timing from File", default=True,
        description="Set the scene's frame rate to the file's sample rate and its frame range to the file's "
                    "samples from Start Frame. Off: keep the scene's rate (samples go where their times fall; joint "
                    "and pose files are resampled onto its frames) "
                    "and only extend its range to cover them",
    )

    def key_rate(self, scene: bpy.types.Scene, times: np.ndarray) -> KeyRate:
        """The rate to key the samples at: the file's when the option is on and the file has one.

        A file has its own rate when its time steps are even (see ``sample_rate``); uneven
        waypoints, a single sample or a rate beyond what a scene can hold keep the scene's,
        with a warning.
        """
        from ..ik_core.trajectory import TrajectoryError, frame_rate_parts, sample_rate  # imports of files only

        render = scene.render
        kept = f"kept the scene's {render.fps / render.fps_base:.4g} fps"
        if not self.use_file_timing:
            return KeyRate(render.fps, render.fps_base, False, "")
        rate = sample_rate(times)
        if rate is None:
            return KeyRate(render.fps, render.fps_base, False,
                           f"the file's {len(times)} samples are not evenly spaced in time: {kept}")
        try:
            return KeyRate(*frame_rate_parts(rate), True, "")
        except TrajectoryError as err:
            return KeyRate(render.fps, render.fps_base, False, f"{err}: {kept}")

    def apply_timing(self, scene: bpy.types.Scene, rate: KeyRate, last_frame: int) -> None:
        """Give the scene the file's rate and frame range, or only stretch its range to ``last_frame``."""
        if self.use_file_timing:
            scene.render.fps, scene.render.fps_base = rate.fps, rate.fps_base
            scene.frame_start, scene.frame_end = self.start_frame, max(self.start_frame, last_frame)
        else:
            scene.frame_end = max(scene.frame_end, last_frame)


def report_json(data: dict) -> str:
    """``data`` as JSON text: a line per top-level key, and per item of a top-level list of objects.

    Each line is written by ``json``'s C encoder (an indented dump takes its pure-Python
    encoder, about 5x slower: 70 ms for a 1,000-frame bake of four chains, a fifth of the bake).
    """
    lines = []
    for key, value in data.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            items = ",\n  ".join(json.dumps(v) for v in value)
            lines.append(f"{json.dumps(key)}: [\n  {items}\n ]")
        else:
            lines.append(f"{json.dumps(key)}: {json.dumps(value)}")
    return "{\n " + ",\n ".join(lines) + "\n}\n"


# Reported values are rounded to this many decimals (1e-12 m, 1e-12 rad): far below any tolerance,
# far above the last-bit noise of float64 maths, which differs between CPUs (numpy and OpenBLAS
# pick SIMD kernels by CPU), so the same bake reports the same numbers on every machine.
REPORT_DECIMALS = 12


def stable_numbers(data, decimals: int = REPORT_DECIMALS):
    """``data`` (dicts, lists, numbers, strings) with every float rounded to ``decimals`` places.

    Negative zero becomes zero (rounding noise around 0 gives both signs); ints, bools and
    strings are kept. The ``seconds`` timings are rounded too but still differ from run to run.
    Rounding is numpy's (scale, round half to even, unscale: the same operations on every CPU), on a
    whole list of floats at once: a report holds a few per-frame series of thousands of numbers.
    """
    if isinstance(data, float):
        return float(np.round(data, decimals)) + 0.0  # + 0.0 turns -0.0 into 0.0
    if isinstance(data, dict):
        return {key: stable_numbers(value, decimals) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        kinds = {type(value) for value in data}
        if kinds == {float}:
            return (np.round(np.array(data, dtype=float), decimals) + 0.0).tolist()
        if not any(issubclass(kind, (float, dict, list, tuple)) for kind in kinds):  # ints, bools, strings
            return list(data)
        return [stable_numbers(value, decimals) for value in data]
    return data


def chosen_report_path(op_path: str, context: bpy.types.Context, use_panel: bool) -> str:
    """The report file of a run: the operator's own, else the panel's **Report File** when it runs with the
    panel's settings ("" for none)."""
    return op_path or (context.scene.articulate.report_path if use_panel else "")


def report_path_problem(path: str) -> str:
    """Why a report cannot be written at ``path`` ("" when it can, or when no report is asked for).

    Operators check this before they change anything, so a bad path fails the run cleanly instead
    of after the bake, with the keys written and the report lost.
    """
    if not path:
        return ""
    full = os.path.abspath(bpy.path.abspath(path))
    if os.path.isdir(full):
        return f"the report path {path!r} is a folder; give a file name in it, such as 'report.json'"
    folder = os.path.dirname(full)
    while not os.path.exists(folder):  # write_report creates the missing folders
        folder = os.path.dirname(folder)
    if not os.path.isdir(folder):
        return f"cannot write the report {path!r}: {folder!r} is a file, not a folder"
    if not os.access(folder if not os.path.exists(full) else full, os.W_OK):
        return f"cannot write the report {path!r}: no permission to write there"
    return ""


def write_report(path: str, data: dict | str) -> str:
    """Write a report (a dict as JSON, or ready text such as CSV) to a Blender path; returns the path.

    A dict's numbers go through :func:`stable_numbers`, so every report is the same from run to run
    and machine to machine apart from its timings.
    """
    path = bpy.path.abspath(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(data if isinstance(data, str) else report_json(stable_numbers(data)))
    return path
