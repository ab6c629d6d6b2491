# SPDX-License-Identifier: GPL-3.0-or-later
"""Robot-arm and humanoid presets stored as data, readable by ``ik_core`` without Blender."""

from pathlib import Path

PRESETS_DIR = Path(__file__).resolve().parent


def preset_files(kind: str) -> list[Path]:
    """Sorted preset files of one kind (a sub-folder such as ``robots`` or ``humanoids``)."""
    folder = PRESETS_DIR / kind
    return sorted(p for p in folder.glob("*.json")) if folder.is_dir() else []
