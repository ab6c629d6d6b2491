# SPDX-License-Identifier: GPL-3.0-or-later
"""cli.py runs headless with the bpy module, writes its outputs and returns meaningful exit codes."""

import json
import os
import pty
import re
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
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


@pytest.mark.slow
def test_demo_is_quiet_and_draws_a_filmstrip(tmp_path):
    """By default only the demo's own lines reach the terminal (Blender's go to OUT/blender.log), and
    demo.png is four frames side by side, chosen through the take."""
    out = tmp_path / "out"
    proc = run_cli("demo", "--out", str(out), "--frames", "24", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    assert lines and all(line.startswith("articulate: ") for line in lines), lines
    assert "24/24 frames" in proc.stdout and str(out / "demo.png") in proc.stdout
    log = (out / "blender.log").read_text(errors="replace")
    assert "Reloading external rigs" in log and "Saved:" in log  # Rigify's reload, the renders
    with (out / "demo.png").open("rb") as fh:
        width, height = struct.unpack(">II", fh.read(24)[16:24])
    assert (width, height) == (4 * 360 + 3 * 4, 420)


@pytest.mark.slow
def test_demo_verbose_shows_blenders_output(tmp_path):
    """--verbose leaves Blender's messages on the terminal and writes no log."""
    out = tmp_path / "out"
    proc = run_cli("demo", "--out", str(out), "--frames", "12", "--no-picture", "--verbose", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Reloading external rigs" in proc.stdout and "12/12 frames" in proc.stdout
    assert not (out / "blender.log").exists()


def test_filmstrip_frames_and_captions(addon_module):
    """Four frames in the middles of the take's quarters; a caption names the frame and each chain's residual."""
    demo = addon_module("operators.demo")
    assert demo.filmstrip_frames(120) == [16, 46, 75, 105]
    assert demo.filmstrip_frames(24) == [4, 10, 15, 21]
    report = {"frames": [1, 2], "chains": [
        {"chain": "arm.L", "position_error_m": [1e-7, 2e-7], "converged": [True, True]},
        {"chain": "arm.R", "position_error_m": [0.0, 0.25], "converged": [True, False]},
        {"chain": "leg.L", "position_error_m": [0.0, 3e-8], "converged": [True, True]}]}
    assert demo.frame_caption(report, 2) == "frame 2\narm.L 0.2 \u00b5m   arm.R 250 mm MISSED\nleg.L 0.03 \u00b5m"


@pytest.fixture
def ik_rig_blend(tmp_path, empty_scene, addon_module):
    """A .blend whose arm is rigged for Blender's own IK constraint (no Articulate chains)."""
    addon_module("operators.demo").build_demo_scene(frames=20)
    import bpy

    arm = bpy.data.objects["Arm"]
    arm.articulate.chains.clear()
    con = arm.pose.bones["Wrist"].constraints.new("IK")
    con.target, con.chain_count = bpy.data.objects["Target"], 3
    path = tmp_path / "rig.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    return path


@pytest.mark.slow
def test_bake_from_constraints_headless(ik_rig_blend, tmp_path):
    """`cli.py bake --from-constraints` bakes a rig made for Blender's IK unchanged, exit 0."""
    out, report = tmp_path / "baked.blend", tmp_path / "report.json"
    proc = run_cli("bake", str(ik_rig_blend), "--armature", "Arm", "--frames", "1-20", "--from-constraints",
                   "--out", str(out), "--report", str(report), tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    data = json.loads(report.read_text())
    assert data["frames"] == list(range(1, 21)) and data["missed_frames"] == []
    assert data["chains"][0]["bones"] == ["Shoulder", "Elbow", "Wrist"]
    assert out.is_file() and "1 chain(s) from IK constraints" in proc.stdout
    assert data["chains"][0]["solver_setting"] == "auto"


# What a chain bake from the command line must not import: the robot model and the file readers
# under it, the trajectory files, the full-body core, the search for alternative poses.
NOT_FOR_A_CHAIN_BAKE = ("ik_core.robots", "ik_core.formats", "ik_core.humanoid", "ik_core.trajectory.check",
                        "ik_core.solvers.alternatives", "operators.robot_bake", "operators.bridge.robot",
                        "operators.bridge.meshes")
IMPORTS_OF_A_BAKE = """
import json, os, sys
sys.path.insert(0, {root!r})
import cli
code = cli.main(["cli.py", "bake", {blend!r}, "--armature", "Arm", "--frames", "1-5", "--from-constraints"])
addon = cli.ensure_addon()
again = cli.ensure_addon()
import bpy
print("RESULT " + json.dumps({{"code": code, "same": addon is again, "bake": hasattr(bpy.types, "ARTICULATE_OT_bake"),
                              "robot_add": hasattr(bpy.types, "ARTICULATE_OT_robot_add"),
                              "modules": sorted(m[len(addon.__name__) + 1:] for m in sys.modules
                                                if m.startswith(addon.__name__ + "."))}}))
sys.stdout.flush()
os._exit(0)
"""


@pytest.mark.slow
def test_a_chain_bake_imports_only_what_it_uses(ik_rig_blend, tmp_path):
    """`cli.py bake` on a character registers every operator (robot ones too) but imports neither the robot
    model, the URDF and trajectory readers, the full-body core nor the alternatives search; asking for the
    add-on again gives the same module, registered once."""
    script = IMPORTS_OF_A_BAKE.format(root=str(CLI.parent), blend=str(ik_rig_blend))
    env = {**os.environ, "BLENDER_USER_RESOURCES": str(tmp_path / "user")}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads(lines[-1][len("RESULT "):])
    assert result["code"] == 0 and result["same"] and result["bake"] and result["robot_add"]
    modules = result["modules"]
    assert "ik_core.take.tracking" in modules and "operators.robots" in modules  # the bake ran, robots registered
    loaded = [m for m in modules if m.startswith(NOT_FOR_A_CHAIN_BAKE)]
    assert loaded == [], f"a chain bake imported {loaded}"


@pytest.mark.slow
def test_bake_solver_overrides_every_chain(ik_rig_blend, tmp_path):
    """`--solver` replaces every chain's own solver; an unknown one is a usage error naming the valid ones."""
    report = tmp_path / "report.json"
    proc = run_cli("bake", str(ik_rig_blend), "--armature", "Arm", "--frames", "1-5", "--from-constraints",
                   "--solver", "ccd", "--report", str(report), tmp_path=tmp_path)
    assert proc.returncode in (0, 3), proc.stdout[-2000:] + proc.stderr[-2000:]
    assert [c["solver"] for c in json.loads(report.read_text())["chains"]] == ["ccd"]
    proc = run_cli("bake", str(ik_rig_blend), "--armature", "Arm", "--solver", "newton", tmp_path=tmp_path)
    assert proc.returncode == 2 and "auto" in proc.stderr and "two_bone" in proc.stderr


@pytest.mark.slow
def test_bake_exit_codes(ik_rig_blend, tmp_path):
    """Missing armature -> 2 naming the armatures; no chains -> 2 with the reason; missing file -> 2."""
    proc = run_cli("bake", str(ik_rig_blend), "--armature", "Nope", tmp_path=tmp_path)
    assert proc.returncode == 2 and "Arm" in proc.stderr
    proc = run_cli("bake", str(ik_rig_blend), "--armature", "Arm", "--frames", "1-5", tmp_path=tmp_path)
    assert proc.returncode == 2 and "no enabled chain" in proc.stderr
    proc = run_cli("bake", str(tmp_path / "missing.blend"), "--armature", "Arm", tmp_path=tmp_path)
    assert proc.returncode == 2 and "no such .blend" in proc.stderr
    proc = run_cli("bake", str(ik_rig_blend), "--armature", "Arm", "--frames", "9-3", tmp_path=tmp_path)
    assert proc.returncode == 2 and "reversed" in proc.stderr


@pytest.fixture
def leg_blend(tmp_path, empty_scene, addon_module):
    """A .blend with the walking leg of the contact tests (armature Leg, chain Foot, Contacts off)."""
    from contact_scenes import REST, build_leg_scene

    arm = build_leg_scene(addon_module, 60)
    chain = arm.articulate.chains[0]
    chain.rest_height_auto, chain.rest_height = False, REST
    path = tmp_path / "leg.blend"
    import bpy

    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    return path


@pytest.mark.slow
def test_bake_with_contacts_headless(leg_blend, tmp_path):
    """`--contacts --contact-chain Foot` detects, plants and reports skate before and after; a chain that does not
    exist, or none with Contacts on, is bad input naming the chains (exit 2, one line)."""
    report, out = tmp_path / "report.json", tmp_path / "baked.blend"
    proc = run_cli("bake", str(leg_blend), "--armature", "Leg", "--frames", "1-60", "--contacts", "--contact-chain",
                   "Foot", "--contact-speed", "0.3", "--ground-height", "0", "--report", str(report), "--out", str(out),
                   tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "articulate: chain 'Foot': 2 contact(s) detected on frames 1-60" in proc.stdout
    assert re.search(r"contacts planted: Foot: skate [0-9.]+ -> [0-9.]+ mm/frame, penetration 20 -> 0 mm",
                     proc.stdout), proc.stdout
    contacts = json.loads(report.read_text())["chains"][0]["contacts"]
    assert len(contacts["intervals"]) == 2 and contacts["after"]["penetration_m"] <= 1e-3
    assert contacts["after"]["skate_m_per_frame"] < contacts["before"]["skate_m_per_frame"]
    for args, said in ((["--contact-chain", "Fot"], "has no chain 'Fot'; chains: Foot"),
                       ([], "no chain of 'Leg' has Contacts on")):
        proc = run_cli("bake", str(leg_blend), "--armature", "Leg", "--contacts", *args, tmp_path=tmp_path)
        assert proc.returncode == 2 and said in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


@pytest.mark.slow
def test_robot_check_and_export_headless(tmp_path, empty_scene, core):
    """A saved robot rig with a too-fast step: `check` exits 3 with a report, `export` writes the CSV."""
    import bpy

    assert bpy.ops.articulate.robot_add(preset="ur5") == {"FINISHED"}
    arm = bpy.context.object
    names = [j["name"] for j in json.loads(arm["articulate_robot"])["joints"]]
    t = np.arange(24) / bpy.context.scene.render.fps
    q = np.zeros((24, 6)) + [0.0, -1.5, 1.5, -1.5, 1.5, 0.0]
    q[12:, 0] = 1.0
    src = tmp_path / "q.csv"
    core.trajectory.write_joint_csv(src, core.trajectory.JointTrajectory(tuple(names), t, q))
    assert bpy.ops.articulate.trajectory_import(filepath=str(src)) == {"FINISHED"}
    blend = tmp_path / "robot.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    report = tmp_path / "check.csv"
    proc = run_cli("check", str(blend), "--armature", arm.name, "--frames", "1-24", "--report", str(report),
                   tmp_path=tmp_path)
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert report.read_text().count("\n") >= 24
    # without --frames: the imported trajectory's own range, jump included; --frames names a range before it
    proc = run_cli("check", str(blend), "--armature", arm.name, "--report", str(report), tmp_path=tmp_path)
    assert proc.returncode == 3, proc.stderr[-2000:]
    proc = run_cli("check", str(blend), "--armature", arm.name, "--frames", "1-12", "--report", str(report),
                   tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    # `--frames scene`: the scene's range (here shortened before the jump), not the trajectory's
    bpy.context.scene.frame_end = 12
    short = tmp_path / "robot_short.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(short), copy=True)
    proc = run_cli("check", str(short), "--armature", arm.name, "--frames", "scene", "--report", str(report),
                   tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    proc = run_cli("check", str(short), "--armature", arm.name, "--report", str(report), tmp_path=tmp_path)
    assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr[-2000:]
    out = tmp_path / "out.csv"
    proc = run_cli("export", str(blend), "--armature", arm.name, "--frames", "1-24", "--out", str(out),
                   tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    back = core.trajectory.read_joint_csv(out, names)
    np.testing.assert_allclose(back.positions, q, atol=1e-6)
    proc = run_cli("check", str(blend), "--armature", "Nope", "--report", str(report), tmp_path=tmp_path)
    assert proc.returncode == 2 and arm.name in proc.stderr


@pytest.mark.slow
def test_export_without_an_extension_names_the_file_it_wrote(tmp_path, empty_scene):
    """`export --out joints` writes joints.csv (the exporter completes a name without extension) and its line names
    that file, the one a pipeline picks up, not the name given; `joints.` (an extension '.') is bad input."""
    import bpy

    assert bpy.ops.articulate.robot_add(preset="ur5") == {"FINISHED"}
    arm = bpy.context.object
    bpy.context.scene.frame_end = 5
    blend = tmp_path / "robot.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    proc = run_cli("export", str(blend), "--armature", arm.name, "--out", str(tmp_path / "joints"), tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert (tmp_path / "joints.csv").is_file() and not (tmp_path / "joints").exists()
    assert f"articulate: wrote {tmp_path / 'joints.csv'}" in proc.stdout.splitlines(), proc.stdout
    proc = run_cli("export", str(blend), "--armature", arm.name, "--out", str(tmp_path / "joints."), tmp_path=tmp_path)
    assert proc.returncode == 2 and "the extension '.' is not '.csv'" in proc.stderr, proc.stderr


@pytest.mark.slow
def test_ik_to_fk_and_back_headless(ik_rig_blend, tmp_path):
    """`cli.py ik-to-fk` then `fk-to-ik` on a plain IK rig: exit 0, limb bones within 1 mm, reports written;
    a rig with nothing to switch exits 2 naming what was looked for."""
    fk, back, report = tmp_path / "fk.blend", tmp_path / "back.blend", tmp_path / "switch.json"
    proc = run_cli("ik-to-fk", str(ik_rig_blend), "--armature", "Arm", "--frames", "1-20", "--out", str(fk),
                   "--report", str(report), tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    data = json.loads(report.read_text())
    assert data["direction"] == "ik_to_fk" and data["limbs"][0]["max_error_m"] < 1e-3
    proc = run_cli("fk-to-ik", str(fk), "--armature", "Arm", "--frames", "1-20", "--out", str(back),
                   "--report", str(report), tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert json.loads(report.read_text())["limbs"][0]["max_error_m"] < 1e-3 and back.is_file()
    proc = run_cli("ik-to-fk", str(ik_rig_blend), "--armature", "Target", tmp_path=tmp_path)
    assert proc.returncode == 2 and "Arm" in proc.stderr


def python_without_bpy() -> list[str]:
    """The interpreter this venv was made from, without site-packages: a Python with no bpy."""
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    return [str(base), "-S"]


@pytest.mark.parametrize("args", [["--help"], ["bake", "--help"], ["ik-to-fk", "--help"], ["check", "--help"]])
def test_help_works_on_a_python_without_blender(args, tmp_path):
    """--help of the tool and of each command prints the help and exits 0 where bpy cannot be imported."""
    proc = subprocess.run([*python_without_bpy(), str(CLI), *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: cli.py") and proc.stderr == ""


def test_a_command_on_a_python_without_blender_says_what_it_needs(tmp_path):
    """A bake where bpy is missing: one line saying how to run it, exit 1, no traceback."""
    proc = subprocess.run([*python_without_bpy(), str(CLI), "bake", "x.blend", "--armature", "Rig"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and "needs Blender" in proc.stderr and "pip install bpy" in proc.stderr


@pytest.mark.slow
def test_bad_files_are_bad_input_naming_the_file(ik_rig_blend, tmp_path):
    """Not a .blend, a truncated .blend, a folder: exit 2 and one line naming the file, never a traceback."""
    text = tmp_path / "notes.blend"
    text.write_text("hello\n")
    truncated = tmp_path / "truncated.blend"
    truncated.write_bytes(ik_rig_blend.read_bytes()[:4000])
    for bad, what in ((text, "is not a .blend file"), (truncated, "corrupt or truncated"),
                      (tmp_path, "is a folder")):
        proc = run_cli("bake", str(bad), "--armature", "Arm", tmp_path=tmp_path)
        assert proc.returncode == 2, (bad, proc.stderr)
        errors = [line for line in proc.stderr.splitlines() if line.startswith("articulate: error:")]
        assert len(errors) == 1 and str(bad) in errors[0] and what in errors[0]
        assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_unwritable_output_is_refused_before_the_bake(ik_rig_blend, tmp_path):
    """Saving into a folder that cannot be written is bad input found before the bake: exit 2, one line."""
    proc = run_cli("bake", str(ik_rig_blend), "--armature", "Arm", "--frames", "1-3", "--from-constraints",
                   "--out", "/proc/articulate/baked.blend", tmp_path=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "/proc/articulate" in proc.stderr and "not writable" in proc.stderr
    assert "chain(s) from IK constraints" not in proc.stdout  # refused before the file was opened


@pytest.mark.slow
def test_progress_is_plain_lines_in_a_log_and_one_updating_line_on_a_terminal(ik_rig_blend, tmp_path):
    """Piped output (a farm log) has no carriage returns; a terminal gets one line rewritten in place."""
    args = ("bake", str(ik_rig_blend), "--armature", "Arm", "--frames", "1-20", "--from-constraints")
    proc = run_cli(*args, tmp_path=tmp_path)
    assert proc.returncode == 0 and "\r" not in proc.stdout
    assert re.search(r"^Articulate Arm:Wrist IK: 20/20 frames$", proc.stdout, re.MULTILINE)
    primary, secondary = pty.openpty()
    env = {**os.environ, "BLENDER_USER_RESOURCES": str(tmp_path / "user")}
    child = subprocess.Popen([sys.executable, str(CLI), *args], stdout=secondary, stderr=subprocess.DEVNULL, env=env)
    os.close(secondary)
    seen = b""
    while True:
        try:
            chunk = os.read(primary, 4096)
        except OSError:  # the terminal closed: the child is gone
            break
        if not chunk:
            break
        seen += chunk
    os.close(primary)
    assert child.wait(timeout=300) == 0
    assert re.search(rb"\rArticulate Arm:Wrist IK: 20/20 frames", seen)
