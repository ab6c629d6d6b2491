# SPDX-License-Identifier: GPL-3.0-or-later
"""What operators share about files: the file browser, and writing reports."""

from __future__ import annotations

import json
import os

import bpy


class FileBrowserMixin:
    """Opens the file browser when invoked from the UI; ``execute`` reads ``self.filepath``."""

    def invoke(self, context: bpy.types.Context, event) -> set[str]:
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}


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
    """
    if isinstance(data, float):
        return round(data, decimals) + 0.0  # + 0.0 turns -0.0 into 0.0
    if isinstance(data, dict):
        return {key: stable_numbers(value, decimals) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [stable_numbers(value, decimals) for value in data]
    return data


def write_report(path: str, data: dict | str) -> str:
    """Write a report (a dict as JSON, or ready text such as CSV) to a Blender path; returns the path."""
    path = bpy.path.abspath(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(data if isinstance(data, str) else report_json(data))
    return path
