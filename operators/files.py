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


def write_report(path: str, data: dict | str) -> str:
    """Write a report (a dict as JSON, or ready text such as CSV) to a Blender path; returns the path."""
    path = bpy.path.abspath(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        if isinstance(data, str):
            fh.write(data)
        else:
            json.dump(data, fh, indent=1)
    return path
