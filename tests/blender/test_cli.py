# SPDX-License-Identifier: GPL-3.0-or-later
"""cli.py runs headless with the bpy module, writes its outputs and returns meaningful exit codes."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CLI = Path(__file__).resolve().parents[2] / "cli.py"


def run_cli(*args, tmp_path):
    env = {**os.environ, "BLENDER_USER_RESOURCES": str(tmp_path / "user")}
    return subprocess.run([sys.executable, str(CLI), *args], capture_output=True, text=True, env=env, timeout=300)


def test_help_lists_commands_and_exit_codes(tmp_path):
    """--help explains the commands and the exit codes, and exits 0."""
    proc = run_cli("--help", tmp_path=tmp_path)
    assert proc.returncode == 0
    assert "demo" in proc.stdout and "Exit codes" in proc.stdout


def test_bad_arguments_exit_2(tmp_path):
    """An unknown command is a usage error (exit 2) with a message."""
    proc = run_cli("fly", tmp_path=tmp_path)
    assert proc.returncode == 2
    assert "invalid choice" in proc.stderr


@pytest.mark.slow
def test_demo_writes_blend_and_report(tmp_path):
    """The demo bake enables the add-on from its folder, saves the .blend and a per-frame report."""
    out = tmp_path / "out"
    proc = run_cli("demo", "--out", str(out), "--frames", "24", "--no-picture", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    report = json.loads((out / "report.json").read_text())
    assert len(report["frames"]) == 24 and report["missed_frames"] == []
    assert max(report["chains"][0]["position_error_m"]) <= 1e-4
    assert (out / "demo.blend").stat().st_size > 10_000
    assert "24/24 frames" in proc.stdout
