# SPDX-License-Identifier: GPL-3.0-or-later
"""cli.py checks every argument before any work: bad ones exit 2 with one line, and nothing is written.

Most tests call the parser and ``check_args`` in this process (no Blender needed for those); the
property tests over ``main`` replace each command by a stub, so an argument wrongly accepted shows
as a run instead of baking. A handful of real subprocess runs close the loop.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cli

CLI = Path(cli.__file__).resolve()
ARGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
COMMANDS = ("demo", "bake", "check", "export", "body", "ik-to-fk", "fk-to-ik")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A folder holding a file that starts like a .blend (enough for the argument checks)."""
    (tmp_path / "shot.blend").write_bytes(b"BLENDER-v500" + bytes(64))
    return tmp_path


@pytest.fixture
def stubbed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every command replaced by a stub recording that it ran: main() never reaches Blender."""
    ran: list[str] = []
    for name in ("cmd_demo", "cmd_bake", "cmd_check", "cmd_export", "cmd_body", "cmd_switch"):
        monkeypatch.setattr(cli, name, lambda args, name=name: ran.append(name) or cli.EXIT_OK)
    return ran


def base_args(command: str, folder: Path) -> list[str]:
    """Valid arguments of ``command`` (outputs inside ``folder``), to which one bad option is added."""
    blend = str(folder / "shot.blend")
    return {
        "demo": ["demo", "--out", str(folder / "demo_out")],
        "bake": ["bake", blend, "--armature", "Rig"],
        "check": ["check", blend, "--armature", "Robot", "--report", str(folder / "check.json")],
        "export": ["export", blend, "--armature", "Robot", "--out", str(folder / "joints.csv")],
        "body": ["body", blend, "--armature", "Rig"],
        "ik-to-fk": ["ik-to-fk", blend, "--armature", "Rig"],
        "fk-to-ik": ["fk-to-ik", blend, "--armature", "Rig"],
    }[command]


def listing(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli.main(["cli.py", *argv])
    return code, capsys.readouterr().err


def with_option(command: str, folder: Path, option: str, value: str) -> list[str]:
    """``base_args(command, folder)`` with ``option`` set to ``value`` (replaced where the base gives it)."""
    argv = base_args(command, folder)
    if option in argv:
        argv[argv.index(option) + 1] = value
    else:
        argv += [option, value]
    return argv


def assert_refused(argv: list[str], folder: Path, capsys: pytest.CaptureFixture[str], ran: list[str]) -> str:
    """main(argv) exits 2 with exactly one 'articulate: error:' line, runs nothing and writes nothing."""
    before, runs = listing(folder), len(ran)
    code, err = run_main(argv, capsys)
    assert code == cli.EXIT_USAGE, (argv, code, err)
    assert err.count("\n") == 1 and err.startswith("articulate: error: "), err
    assert "Traceback" not in err and len(ran) == runs, "a refused command ran"
    assert listing(folder) == before, "a refused run wrote something"
    return err


# --- numbers ------------------------------------------------------------------------------------

NON_FINITE = st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1e400"])
NOT_A_NUMBER = st.text(min_size=1, max_size=8).filter(lambda t: not _is_number(t) and t != "--" and "\x00" not in t)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# (command, option, low, high, whole number?) for every numeric option of the CLI.
NUMERIC = [
    ("demo", "--frames", 1, cli.MAX_FRAME, True),
    ("demo", "--samples", 0, cli.MAX_SAMPLES, True),
    ("body", "--reference-frame", -cli.MAX_FRAME, cli.MAX_FRAME, True),
    ("bake", "--reduce-keys", 0.0, 1e6, False),
    ("bake", "--contact-height", 1e-6, 10.0, False),
    ("bake", "--contact-speed", 1e-6, 100.0, False),
    ("bake", "--contact-min-duration", 0.0, 3600.0, False),
    ("check", "--singularity", 0.0, 1e6, False),
    ("check", "--jump", 1e-6, 1e6, False),
    ("export", "--rate", 0.0, cli.MAX_RATE, False),
]


@st.composite
def bad_number(draw: st.DrawFn, low: float, high: float, whole: bool) -> str:
    """Text that is not a number in [low, high]: out of range, non-finite, fractional for a count, or not numeric."""
    kinds = [NON_FINITE, NOT_A_NUMBER,
             st.floats(max_value=low, exclude_max=True, allow_nan=False, allow_infinity=False).map(repr),
             st.floats(min_value=high, exclude_min=True, allow_nan=False, allow_infinity=False).map(repr)]
    if whole:
        kinds += [st.integers(max_value=int(low) - 1).map(str), st.integers(min_value=int(high) + 1).map(str),
                  st.floats(low, high).filter(lambda v: not float(v).is_integer()).map(repr)]
    return draw(st.one_of(kinds))


@pytest.mark.parametrize(("command", "option", "low", "high", "whole"), NUMERIC)
@ARGS
@given(data=st.data())
def test_bad_numbers_exit_2_with_one_line(folder, capsys, stubbed, command, option, low, high, whole, data) -> None:
    """Every numeric option refuses NaN, infinity, out-of-range and non-numeric values: exit 2, one line."""
    value = data.draw(bad_number(low, high, whole))
    err = assert_refused([*base_args(command, folder), f"{option}={value}"], folder, capsys, stubbed)
    assert f"argument {option}" in err


@pytest.mark.parametrize(("command", "option", "low", "high", "whole"), NUMERIC)
@ARGS
@given(data=st.data())
def test_good_numbers_are_accepted(folder, command, option, low, high, whole, data) -> None:
    """Values inside each option's range parse to themselves (the checks refuse only what they should)."""
    value = data.draw(st.integers(int(math.ceil(low)), int(high)) if whole else st.floats(low, high))
    args = cli.build_parser().parse_args([*base_args(command, folder), option, repr(value)])
    assert getattr(args, option[2:].replace("-", "_")) == value


@pytest.mark.parametrize("option", [["--contact-chain", "Foot"], ["--contact-height", "0.05"],
                                    ["--contact-speed", "0.3"], ["--contact-min-duration", "0.2"],
                                    ["--ground-height", "0.1"]])
def test_contact_options_need_contacts(folder, capsys, stubbed, option) -> None:
    """A contact option without --contacts would do nothing: refused before any work, naming what it needs."""
    err = assert_refused([*base_args("bake", folder), *option], folder, capsys, stubbed)
    assert f"{option[0]} needs --contacts" in err
    code, _err = run_main([*base_args("bake", folder), "--contacts", *option], capsys)
    assert code == cli.EXIT_OK and stubbed == ["cmd_bake"]


@pytest.mark.parametrize("text", ["nan", "inf", "-1e400", "low", "2e6"])
def test_ground_height_must_be_a_finite_height(folder, capsys, stubbed, text) -> None:
    """`--ground-height` takes any finite height up to a thousand kilometres either way (below zero too)."""
    err = assert_refused([*base_args("bake", folder), "--contacts", f"--ground-height={text}"], folder, capsys,
                         stubbed)
    assert "argument --ground-height" in err
    args = cli.build_parser().parse_args([*base_args("bake", folder), "--contacts", "--ground-height=-0.25"])
    assert args.ground_height == -0.25


@pytest.mark.parametrize("text", ["nan", "inf"])
def test_reduce_keys_nan_and_inf_are_refused(folder, capsys, stubbed, text) -> None:
    """The issue's cases: `--reduce-keys nan` was silently 0, `inf` accepted; both now name the value."""
    err = assert_refused([*base_args("bake", folder), "--reduce-keys", text], folder, capsys, stubbed)
    assert f"got {text!r}" in err and "NaN and infinity" in err


@pytest.mark.parametrize("frames", ["0", "-5"])
def test_demo_frame_count_must_be_positive(folder, capsys, stubbed, frames) -> None:
    """The issue's case: `demo --frames 0` and `-5` exited 1 with a Python error; now exit 2 naming the range."""
    err = assert_refused([*base_args("demo", folder), f"--frames={frames}"], folder, capsys, stubbed)
    assert f"expected a frame count from 1 to {cli.MAX_FRAME}, got {frames!r}" in err


# --- frame ranges -------------------------------------------------------------------------------

BAD_RANGES = st.one_of(
    st.sampled_from(["", "-", "1-", ":", "1:", "a-b", "1-2-3", "1.5-3", "nan-3", "5-1", "1-5:0", "1-5:-2", "1-5:x",
                     f"1-{cli.MAX_FRAME + 1}", f"1-5:{cli.MAX_FRAME + 1}", "-5-10", "-1", "+1-5", " 1-5",
                     "1_0-20", "1-99999999999999999999", "\u0661-5"]),
    st.tuples(st.integers(-10**6, 10**6), st.integers(-10**6, 10**6)).filter(lambda t: t[1] < t[0]).map(
        lambda t: f"{t[0]}-{t[1]}"),
    NOT_A_NUMBER.filter(lambda t: t not in ("scene", "trajectory") and not t.startswith("-")),
)


@pytest.mark.parametrize("command", ["bake", "body", "ik-to-fk", "fk-to-ik", "check", "export"])
@ARGS
@given(frames=BAD_RANGES)
def test_bad_frame_ranges_exit_2(folder, capsys, stubbed, command, frames) -> None:
    """Empty, reversed, out-of-Blender's-range or malformed ranges are refused by every command taking one."""
    assert_refused([*base_args(command, folder), f"--frames={frames}"], folder, capsys, stubbed)


@pytest.mark.parametrize(("command", "frames", "message"), [
    ("ik-to-fk", "1-10:2", "uses every frame of the range"),
    ("check", "1-10:2", "uses every frame of the range"),
    ("export", "-5-10", "frames must look like 1-250"),
    ("bake", "1-", "frames must look like 1-250"),
    ("body", "5-1", "empty or reversed"),
    ("fk-to-ik", f"1-{cli.MAX_FRAME + 1}", "beyond Blender's last frame"),
])
def test_ranges_each_command_cannot_use(folder, capsys, stubbed, command, frames, message) -> None:
    """A step where every frame is used, a sign, a missing end, a reversed or too long range: refused, saying why."""
    err = assert_refused([*base_args(command, folder), f"--frames={frames}"], folder, capsys, stubbed)
    assert message in err


@pytest.mark.parametrize(("command", "frames", "expected"), [
    ("bake", "1-250:2", (1, 250, 2)), ("bake", "0-20", (0, 20, 1)), ("body", "scene", None),
    ("check", "trajectory", "trajectory"), ("export", "0-10", (0, 10, 1)), ("ik-to-fk", "7", (7, 7, 1)),
])
def test_good_frame_ranges_parse(folder, command, frames, expected) -> None:
    """Valid ranges, the scene's and the trajectory's, parse as before."""
    assert cli.build_parser().parse_args([*base_args(command, folder), f"--frames={frames}"]).frames == expected


# --- names and paths ----------------------------------------------------------------------------

@pytest.mark.parametrize("command", COMMANDS[1:])
def test_empty_armature_name_is_refused(folder, capsys, stubbed, command) -> None:
    """`--armature ''` names nothing: refused before the .blend is opened."""
    argv = base_args(command, folder)
    argv[argv.index("--armature") + 1] = " "
    assert "empty name" in assert_refused(argv, folder, capsys, stubbed)


def bad_outputs(folder: Path) -> list[tuple[str, str]]:
    """(path, what the message says) for outputs that cannot be written."""
    a_file = folder / "shot.blend"
    read_only = folder / "read_only"
    read_only.mkdir(exist_ok=True)
    read_only.chmod(0o555)
    pipe = folder / "pipe.json"
    if not pipe.exists():
        os.mkfifo(pipe)
    return [
        (str(folder), "is a folder"),
        ("/dev/null", "/dev/null is not a regular file but a device, pipe or socket"),
        (str(pipe), "is not a regular file"),
        (str(a_file / "out.json"), "is a file, not a folder"),
        (str(a_file / "deeper" / "out.json"), "is a file, not a folder"),
        ("/proc/articulate/out.json", "/proc is not writable"),
        ("/proc/out.json", "/proc is not writable"),
        ("", "path is empty"),
    ] + ([] if os.geteuid() == 0 else [(str(read_only / "out.json"), "is not writable")])


# (command, option) for every option naming a file the CLI writes.
FILE_OUTPUTS = [("bake", "--out"), ("bake", "--report"), ("check", "--report"), ("export", "--out"),
                ("body", "--out"), ("body", "--report"), ("ik-to-fk", "--out"), ("ik-to-fk", "--report"),
                ("fk-to-ik", "--out"), ("fk-to-ik", "--report")]


@pytest.mark.parametrize(("command", "option"), FILE_OUTPUTS)
def test_unwritable_output_files_exit_2_before_any_work(folder, capsys, stubbed, command, option) -> None:
    """Each output file is checked before the command runs: a folder, /dev/null or a pipe (a report is read back,
    and a save renames its file over the path: as root over /dev/null itself), a path under a file, /proc, empty."""
    for path, message in bad_outputs(folder):
        err = assert_refused(with_option(command, folder, option, path), folder, capsys, stubbed)
        assert message in err, (path, err)


@pytest.mark.parametrize(("command", "option"), [("demo", "--out"), ("bake", "--out-dir"), ("bake", "--report-dir")])
def test_unwritable_output_folders_exit_2(folder, capsys, stubbed, command, option) -> None:
    """Output folders must be folders (or creatable) and writable."""
    for path, message in [(str(folder / "shot.blend"), "is a file, not a folder"),
                          (str(folder / "shot.blend" / "sub"), "is a file, not a folder"),
                          ("/proc/articulate", "/proc is not writable"), ("", "path is empty")]:
        argv = [a for a in base_args(command, folder) if a != str(folder / "demo_out")]
        argv = [a for a in argv if a != "--out"] if command == "demo" else argv
        err = assert_refused([*argv, option, path], folder, capsys, stubbed)
        assert message in err, (path, err)


def test_export_extension_is_checked_first(folder, capsys, stubbed) -> None:
    """`export --out` must end in .csv, .json or .mcap (or have no extension, which the exporter completes)."""
    argv = base_args("export", folder)
    argv[argv.index("--out") + 1] = str(folder / "joints.txt")
    assert "valid: '.csv', '.json', '.mcap', none" in assert_refused(argv, folder, capsys, stubbed)


@pytest.mark.parametrize(("file", "extra", "message"), [
    ("none.mcap", [], "no such trajectory file"),
    ("joints.txt", [], "is not a joint trajectory file; valid: .csv, .json, .mcap"),
    ("joints.csv", ["--topic", "/joint_states"], "--topic is for .mcap files (ROS 2 bags)"),
    ("joints.csv", ["--topic", ""], "expected the name of a ROS topic, got an empty name"),
])
def test_trajectory_input_is_checked_before_any_work(folder, capsys, stubbed, file, extra, message) -> None:
    """`trajectory --file` must exist and be CSV, JSON or MCAP; --topic is for MCAP only."""
    for name in ("joints.txt", "joints.csv"):
        (folder / name).write_text("time,a\n0,0\n")
    argv = ["trajectory", str(folder / "shot.blend"), "--armature", "Robot", "--file", str(folder / file), *extra,
            "--out", str(folder / "keyed.blend")]
    assert message in assert_refused(argv, folder, capsys, stubbed)


def test_two_outputs_on_one_file_are_refused(folder, capsys, stubbed) -> None:
    """The baked file and the report cannot be the same file (the save would overwrite the report)."""
    same = str(folder / "both.blend")
    err = assert_refused([*base_args("bake", folder), "--out", same, "--report", same], folder, capsys, stubbed)
    assert "would both be written to" in err


@pytest.mark.parametrize(("command", "option"), [("bake", "--report"), ("check", "--report"), ("body", "--report"),
                                               ("ik-to-fk", "--report"), ("fk-to-ik", "--report")])
def test_a_report_over_the_input_blend_is_refused(folder, capsys, stubbed, command, option) -> None:
    """A report written over the input .blend would replace the scene with JSON: refused before any work, also when
    the two are spelled differently; saving the baked .blend in place stays allowed."""
    os.chdir(folder)
    for spelled in (str(folder / "shot.blend"), "shot.blend", f"{folder}/./shot.blend"):
        err = assert_refused(with_option(command, folder, option, spelled), folder, capsys, stubbed)
        assert f"the report would overwrite the input .blend {folder / 'shot.blend'}" in err
    code, err = run_main([*base_args("bake", folder), "--out", "shot.blend"], capsys)
    assert code == cli.EXIT_OK and err == "" and stubbed == ["cmd_bake"]


def test_an_export_over_the_input_blend_is_refused(folder, capsys, stubbed) -> None:
    """An export named like the input (a .blend saved as scene.json) would replace it: refused."""
    (folder / "scene.json").write_bytes((folder / "shot.blend").read_bytes())
    argv = ["export", str(folder / "scene.json"), "--armature", "Robot", "--out", str(folder / "scene.json")]
    assert "the export would overwrite the input .blend" in assert_refused(argv, folder, capsys, stubbed)


def test_an_operators_unexpected_error_is_exit_1_not_bad_input(folder, capsys, monkeypatch) -> None:
    """An operator's "unexpected error" (an exception it caught, operators/transaction.py) is a bug, not bad input:
    exit 1 with its one line naming where it happened; an operator refusing the input stays exit 2."""
    def unexpected(**_kwargs):
        raise RuntimeError("Error: Export Joint Trajectory: unexpected error (TypeError at robots.py:700: boom); "
                           "nothing was changed. Please report it with the file\n")

    def refusing(**_kwargs):
        raise RuntimeError("Error: no joint trajectory on the rig\n")

    for op, expected, said in ((unexpected, cli.EXIT_ERROR, "unexpected error (TypeError at robots.py:700: boom)"),
                               (refusing, cli.EXIT_USAGE, "no joint trajectory on the rig")):
        monkeypatch.setattr(cli, "cmd_export", lambda args, op=op: cli._run_operator(op))
        code, err = run_main(base_args("export", folder), capsys)
        assert code == expected, err
        assert err.count("\n") == 1 and err.startswith("articulate: error: ") and said in err, err


def test_the_unexpected_error_mark_is_the_add_ons(addon_module) -> None:
    """cli.py spells out the mark of an operator's unexpected error (it cannot import the add-on before parsing)."""
    assert cli.UNEXPECTED == addon_module("operators.transaction").UNEXPECTED


@pytest.mark.parametrize("blend", ["missing.blend", "notes.txt", "."])
def test_input_blend_is_checked_before_any_work(folder, capsys, stubbed, blend) -> None:
    """A missing, non-.blend or folder input: exit 2 naming it, before the command runs."""
    (folder / "notes.txt").write_text("hello")
    argv = base_args("bake", folder)
    argv[1] = str(folder / blend)
    assert str(folder / blend) in assert_refused(argv, folder, capsys, stubbed)


@pytest.mark.parametrize("command", COMMANDS[1:])
def test_empty_blend_path_is_refused(folder, capsys, stubbed, command) -> None:
    """An empty .blend argument (a farm template's unset variable) is refused, not taken as 'no file'."""
    argv = base_args(command, folder)
    argv[1] = ""
    assert "the .blend path is empty" in assert_refused(argv, folder, capsys, stubbed)


def test_good_arguments_run_and_make_the_output_folders(folder, capsys, stubbed) -> None:
    """With every argument good, the command runs once, after the missing output folders were made."""
    report = folder / "new" / "deeper" / "report.json"
    code, err = run_main([*base_args("bake", folder), "--report", str(report), "--reduce-keys", "0.5"], capsys)
    assert code == cli.EXIT_OK and err == "" and stubbed == ["cmd_bake"]
    assert report.parent.is_dir() and not report.exists()
    assert not any(p.name.startswith(".articulate-check-") for p in folder.rglob("*"))


@ARGS
@given(argv=st.lists(st.sampled_from(["demo", "bake", "--frames", "--out", "--armature", "x", "1-2", "nan",
                                      "--reduce-keys", "-5", "--rate", "--jump", "check", "", "--report",
                                      "--solver", "fly", "--samples", "1e999"]), max_size=7))
def test_random_argument_lists_never_trace_back(folder, capsys, stubbed, argv) -> None:
    """Any jumble of options: exit 0 (a stub ran) or 2 with one error line; never a traceback or exit 1."""
    os.chdir(folder)  # relative outputs ("x", "--out nan") land in the scratch folder
    code, err = run_main(argv, capsys)
    if code == cli.EXIT_OK:
        assert len(stubbed) == 1
    else:
        assert code == cli.EXIT_USAGE and err.count("\n") == 1 and err.startswith("articulate: error: "), err
    stubbed.clear()


# --- real processes -----------------------------------------------------------------------------

def run_cli(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "BLENDER_USER_RESOURCES": str(tmp_path / "user")}
    return subprocess.run([sys.executable, str(CLI), *args], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("args", [
    ["demo", "--frames", "0"],
    ["demo", "--frames", "-5"],
    ["bake", "{blend}", "--armature", "Rig", "--reduce-keys", "nan"],
    ["bake", "{blend}", "--armature", "Rig", "--reduce-keys", "inf"],
    ["bake", "{blend}", "--armature", "Rig", "--out", "/proc/articulate/baked.blend"],
    ["export", "{blend}", "--armature", "Robot", "--out", "{blend}/joints.csv"],
    ["check", "{blend}", "--armature", "Robot", "--report", "r.json", "--jump", "inf"],
    ["ik-to-fk", "{blend}", "--armature", "Rig", "--frames", "1-9:3"],
])
def test_real_runs_exit_2_with_one_line(folder, args) -> None:
    """Run as a farm runs it: exit 2, one stderr line, no traceback, no Blender started, nothing written."""
    argv = [a.replace("{blend}", str(folder / "shot.blend")) for a in args]
    before = listing(folder)
    proc = run_cli(*argv, tmp_path=folder)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("articulate: error: "), proc.stderr
    assert proc.stdout == "" and listing(folder) - before <= {"user"}
