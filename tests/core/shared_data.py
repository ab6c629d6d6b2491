# SPDX-License-Identifier: GPL-3.0-or-later
"""Paths into ../shared (robots, mocap): a test skips when the shared data is not beside the checkout."""

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[3] / "shared"


def shared_file(*parts: str) -> Path:
    """The shared file ``parts`` (e.g. ``"mocap", "cmu_131_01.bvh"``), or skip the calling test."""
    path = SHARED.joinpath(*parts)
    if not path.is_file():
        pytest.skip(f"shared file {path} not present")
    return path
