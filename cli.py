# SPDX-License-Identifier: GPL-3.0-or-later
"""Headless entry point: bake with Articulate from a terminal or a render farm.

Works both inside Blender and with the ``bpy`` module::

    blender -b --python-exit-code 1 --python cli.py -- demo --out out/demo
    python cli.py demo --out out/demo

Exit codes: 0 every frame converged; 3 some frames missed their target (``body``: the bake
warned); 2 bad arguments or input; 1 any other error. Errors are one line on stderr (``ARTICULATE_TRACEBACK=1`` adds the
traceback); ``--help`` works on any Python, with or without Blender.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import importlib
import importlib.util
import json
import math
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import NoReturn

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_MISSED = 0, 1, 2, 3
# ik_core.solvers.SOLVER_CHOICES, spelled out: this file must parse arguments before the add-on
# (and numpy) can be imported, and inside Blender its folder is not on sys.path.
SOLVERS = ("auto", "fabrik", "ccd", "dls", "two_bone")
# `--solver chain` and `--frames scene` spell out the defaults, so a farm job template (whose
# arguments cannot vanish) can always pass both options.
KEEP_SOLVER, SCENE_FRAMES, TRAJECTORY_FRAMES = "chain", "scene", "trajectory"
ADDON_ID = "articulate"
# The package name this folder is imported under when it is not installed (see ensure_addon).
CLI_PACKAGE = "articulate_cli"
HERE = Path(__file__).resolve().parent
# What a .blend file starts with: Blender's header, or the gzip or Zstandard frame of a
# compressed one (Blender writes Zstandard since 3.0 and still reads gzip).
BLEND_MAGICS = (b"BLENDER", b"\x1f\x8b", b"\x28\xb5\x2f\xfd")
# Where the demo keeps what Blender itself prints (OBJ import timings, EGL messages on machines
# without a display, Rigify reloading, render lines) unless --verbose shows it.
DEMO_LOG = "blender.log"
# Blender's frame limits (MAXFRAME): a scene's start and end lie in [0, MAX_FRAME], a frame in
# [-MAX_FRAME, MAX_FRAME]; numbers beyond them make Blender raise instead of refusing cleanly.
MAX_FRAME = 1_048_574
# A frame range as --frames takes it: start, optional end, optional step, digits only (no sign,
# no spaces, no underscores, which int() would accept).
FRAME_RANGE = re.compile(r"([0-9]+)(?:-([0-9]+))?(?::([0-9]+))?")
# ik_core.trajectory.MAX_FRAME_RATE: the highest sample rate the trajectory files are read at.
MAX_RATE = 32_767
# Cycles' own limit on samples per pixel.
MAX_SAMPLES = 16_777_216
# A xacro argument as `--xacro-arg` takes it, name:=value (ik_core.formats.xacro_files reads the same form).
XACRO_ARG = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):=(.*)", re.S)
ROBOT_SUFFIXES = (".urdf", ".xml", ".xacro")
TRAJECTORY_SUFFIXES = (".csv", ".json", ".mcap")
# operators.transaction.UNEXPECTED, spelled out like SOLVERS: what an operator's error says when it caught an
# exception no check foresaw, a bug to report (exit 1), not bad input (exit 2).
UNEXPECTED = "unexpected error"
# The options of `bake --contacts`, refused without it.
CONTACT_OPTIONS = ("contact_chain", "contact_height", "contact_speed", "contact_min_duration", "ground_height")


def _script_args(argv: list[str]) -> list[str]:
    """Arguments meant for this script: after ``--`` inside Blender, all of them otherwise."""
    return argv[argv.index("--") + 1 :] if "--" in argv else argv[1:]


def ensure_addon():
    """The registered add-on module: the installed extension when Blender has this folder, else this folder itself.

    When it is not installed, this folder is imported as a package (:data:`CLI_PACKAGE`) and
    registered, as enabling it would: the same operators, properties and handlers. No throwaway
    extension repository is made for it: adding one makes Blender's extension system read the new
    repository and import its package tools, a cost on every run that a command does not use.
    """
    import addon_utils

    for mod in addon_utils.modules():
        if mod.__name__.endswith(f".{ADDON_ID}") and Path(mod.__file__).resolve().parent == HERE:
            # Enabling an enabled add-on unregisters and registers it again (handlers, menus): only once.
            if not addon_utils.check(mod.__name__)[1]:
                addon_utils.enable(mod.__name__, default_set=True, handle_error=_raise)
            return importlib.import_module(mod.__name__)
    module = sys.modules.get(CLI_PACKAGE)
    if module is None:
        spec = importlib.util.spec_from_file_location(CLI_PACKAGE, HERE / "__init__.py",
                                                      submodule_search_locations=[str(HERE)])
        module = importlib.util.module_from_spec(spec)
        sys.modules[CLI_PACKAGE] = module  # before it runs: its modules import each other through it
        try:
            spec.loader.exec_module(module)
            module.register()
        except BaseException:
            del sys.modules[CLI_PACKAGE]
            raise
        # Unregistered before Blender's own teardown, as Blender disables its enabled add-ons on exit:
        # left registered, the bpy module of Blender 4.5 hangs while it exits.
        atexit.register(module.unregister)
    return module


def _raise(exc: BaseException) -> None:
    raise exc


@contextlib.contextmanager
def blender_output(log: Path | None, append: bool = False):
    """Send everything printed meanwhile, by Python and by Blender's C code alike, to ``log``; None: leave it be.

    The process's own stdout and stderr (file descriptors 1 and 2) point at the log until the
    block ends, also when it raises, so Blender's messages land there while this script's lines
    printed after the block reach the terminal.
    """
    if log is None:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log, "ab" if append else "wb") as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def cmd_demo(args: argparse.Namespace) -> int:
    """Build the bundled example scene, bake it, save the .blend, the report and a filmstrip of the motion."""
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    log = out / DEMO_LOG
    with blender_output(None if args.verbose else log):
        report, written = _demo(args, out)
    missed = report["missed_frames"]
    print(f"articulate: baked {len(report['frames']) - len(missed)}/{len(report['frames'])} frames "
          f"of {report['armature']} converged in {report['wall_seconds']:.2f} s")
    print(f"articulate: wrote {', '.join(str(p) for p in written)}")
    if not args.verbose:
        print(f"articulate: Blender's own messages are in {log} (--verbose shows them)")
    return EXIT_MISSED if missed else EXIT_OK


def _demo(args: argparse.Namespace, out: Path) -> tuple[dict, list[Path]]:
    """The demo's work: the scene, its bake and its files; returns the report and the files written."""
    import bpy

    addon = ensure_addon()
    demo = importlib.import_module(f"{addon.__name__}.operators.demo")
    examples = importlib.import_module(f"{addon.__name__}.operators.examples")
    t0 = time.perf_counter()
    if args.scene == "metarig":
        examples.build_metarig_scene(frames=args.frames, solver=args.solver or "two_bone")
    else:
        scene_info = demo.build_demo_scene(frames=args.frames)
        bpy.data.objects[scene_info["armature"]].articulate.chains[0].solver = args.solver or "dls"
    report_path = out / "report.json"
    result = bpy.ops.articulate.bake(
        use_scene_settings=False, frame_start=1, frame_end=args.frames, report_path=str(report_path)
    )
    if "FINISHED" not in result:
        raise RuntimeError("the demo's bake failed")
    report = json.loads(report_path.read_text())
    report["wall_seconds"] = time.perf_counter() - t0
    importlib.import_module(f"{addon.__name__}.operators.files").write_report(str(report_path), report)
    blend = out / "demo.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend), compress=True)
    written = [blend, report_path]
    if not args.no_picture:
        picture = out / "demo.png"
        frames = demo.filmstrip_frames(args.frames)
        bpy.context.scene.camera.data.lens = 36.0  # frames taller than wide: the whole figure in each
        demo.render_filmstrip(str(picture), frames, [demo.frame_caption(report, f) for f in frames],
                              samples=args.samples)
        written.append(picture)
    return report, written


def _parse_frames(text: str) -> tuple[int, int, int] | None:
    """'1-250' or '1-250:2' -> (start, end, step); 'scene' -> None (the scene's range).

    Frames are whole numbers from 0 to Blender's last frame, written in digits only.
    """
    if text == SCENE_FRAMES:
        return None
    match = FRAME_RANGE.fullmatch(text)
    if match is None:
        raise argparse.ArgumentTypeError(
            f"frames must look like 1-250 or 1-250:2 (or '{SCENE_FRAMES}'), got {text!r}")
    start, end, step = match.groups()
    start_i, end_i, step_i = int(start), int(end or start), int(step or 1)
    if end_i < start_i or step_i < 1:
        raise argparse.ArgumentTypeError(f"frame range {text!r} is empty or reversed; the end must be >= the start")
    if end_i > MAX_FRAME or step_i > MAX_FRAME:
        raise argparse.ArgumentTypeError(f"frame range {text!r} goes beyond Blender's last frame, {MAX_FRAME}")
    return start_i, end_i, step_i


def _parse_every_frame(text: str) -> tuple[int, int, int] | None:
    """Like :func:`_parse_frames`, for commands that use every frame of the range: a step is refused, not ignored."""
    frames = _parse_frames(text)
    if frames is not None and frames[2] != 1:
        raise argparse.ArgumentTypeError(
            f"{text!r}: this command uses every frame of the range; a step (:N) is for bake and body only, "
            f"give 1-250 or '{SCENE_FRAMES}'")
    return frames


def _parse_robot_frames(text: str) -> tuple[int, int, int] | str:
    """Robot check and export: 'trajectory' (the imported trajectory's own frames), 'scene', or a range."""
    if text in (TRAJECTORY_FRAMES, SCENE_FRAMES):
        return text
    return _parse_every_frame(text)


def _number(text: str, kind: type, what: str) -> int | float:
    """``text`` as an int or a finite float, or an ArgumentTypeError saying what was expected."""
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if kind is float and not math.isfinite(value):  # float() reads 'nan' and 'inf' without complaint
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r} (NaN and infinity are not numbers here)")
    return value


def _shown(value: float) -> str:
    """A bound as people write it: 1000000, 0.5, 1e-06."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def int_in(low: int, high: int, what: str):
    """An argparse type: a whole number in [low, high]."""
    def parse(text: str) -> int:
        value = _number(text, int, f"{what} (a whole number from {low} to {high})")
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected {what} from {low} to {high}, got {text!r}")
        return value
    return parse


def float_in(low: float, high: float, what: str, low_open: bool = False):
    """An argparse type: a finite number in [low, high] (or (low, high] when ``low_open``)."""
    span = f"{'above' if low_open else 'at least'} {_shown(low)} and at most {_shown(high)}"

    def parse(text: str) -> float:
        value = _number(text, float, f"{what} (a number {span})")
        if not (low < value if low_open else low <= value) or value > high:
            raise argparse.ArgumentTypeError(f"expected {what} {span}, got {text!r}")
        return value
    return parse


def name_arg(what: str):
    """An argparse type: a non-empty name (an empty one cannot name anything in a .blend)."""
    def parse(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"expected the name of {what}, got an empty name")
        return text
    return parse


def cmd_bake(args: argparse.Namespace) -> int:
    """Bake an armature's chains in a .blend and save the result."""
    import bpy

    arm = _open_armature(args)
    chains_ops = importlib.import_module(f"{ensure_addon().__name__}.operators.chains")
    start, end, step = _frames_or_scene(args)
    if args.from_constraints:
        made, notes = chains_ops.convert_constraints(arm, frame=start)
        for note in notes:
            print(f"articulate: note: {note}")
        print(f"articulate: {made} chain(s) from IK constraints")
    if args.from_tracks:
        aim_ops = importlib.import_module(f"{ensure_addon().__name__}.operators.aim_chains")
        made, notes = aim_ops.convert_tracks(arm)
        for note in notes:
            print(f"articulate: note: {note}")
        print(f"articulate: {made} aim chain(s) from Damped Track and Track To constraints")
    stem = Path(args.blend or bpy.data.filepath or "untitled").stem
    out = _output_path(args.out, args.out_dir, stem, ".blend")
    report_path = _output_path(args.report, args.report_dir, stem, ".json")
    if args.contacts:
        _detect_contacts(arm, args, start, end)
    report = _run_with_report(
        bpy.ops.articulate.bake, report_path, use_scene_settings=False, frame_start=start, frame_end=end,
        frame_step=step, mute_constraints=not args.keep_constraints, mark_missed=True,
        solver="" if args.solver in (None, KEEP_SOLVER) else args.solver,
        key_tolerance=max(args.reduce_keys, 0.0) / 1000.0,
    )
    _save(out)
    print(f"articulate: {bpy.context.scene.articulate.last_summary}")
    reduced = report.get("key_reduction")
    if reduced:
        print(f"articulate: keys reduced {reduced['keys_before']} -> {reduced['keys_after']}, every tip within "
              f"{reduced['max_deviation_m'] * 1000:.3g} mm of the full bake")
    planted = importlib.import_module(f"{ensure_addon().__name__}.operators.planting").summary(report)
    if planted:
        print(f"articulate: contacts planted: {planted}")
    if report_path:
        print(f"articulate: wrote {report_path}")
    return EXIT_MISSED if report["missed_frames"] else EXIT_OK


def _detect_contacts(arm, args: argparse.Namespace, start: int, end: int) -> None:
    """``--contacts``: set the thresholds and ground given on the chains named (or those with Contacts on),
    then Detect Contacts on each over the bake's frames.

    Raises:
        UsageError: No chain named or with Contacts on, a chain that does not exist, or the
            detection refused (the message says why).
    """
    import bpy

    chains = arm.articulate.chains
    names = list(dict.fromkeys(args.contact_chain or [c.name for c in chains if c.use_contacts]))
    if not names:
        raise UsageError(f"--contacts: no chain of {arm.name!r} has Contacts on; name the chains with "
                         f"--contact-chain (chains: {', '.join(c.name for c in chains) or 'none'})")
    missing = [n for n in names if chains.get(n) is None]
    if missing:
        raise UsageError(f"--contact-chain: {arm.name!r} has no chain {missing[0]!r}; chains: "
                         f"{', '.join(c.name for c in chains) or 'none'}")
    for name in names:
        chain = chains[name]
        for option, prop in (("contact_height", "contact_height"), ("contact_speed", "contact_speed"),
                             ("contact_min_duration", "contact_min_duration")):
            if getattr(args, option) is not None:
                setattr(chain, prop, getattr(args, option))
        if args.ground_height is not None:
            chain.ground, chain.ground_height = "PLANE", args.ground_height
        _run_operator(bpy.ops.articulate.contacts_detect, armature=arm.name, chain=name, use_scene_settings=False,
                      frame_start=start, frame_end=end, add_markers=True)
        found = list(chain.contacts)
        print(f"articulate: chain {name!r}: {len(found)} contact(s) detected on frames {start}-{end}")


def _output_path(path: str | None, folder: str | None, stem: str, suffix: str) -> Path | None:
    """``path`` itself, or ``folder/<stem><suffix>`` (one output per input file on a farm), or None."""
    if folder:
        return (Path(folder) / f"{stem}{suffix}").resolve()
    return Path(path).resolve() if path else None


def check_blend_file(path: str) -> Path:
    """``path`` resolved, once it is a readable file that starts like a .blend.

    Raises:
        UsageError: No such file, a folder, unreadable, or not a .blend (the message names it).
    """
    file = Path(path)
    if file.is_dir():
        raise UsageError(f"{path} is a folder, not a .blend file")
    if not file.is_file():
        raise UsageError(f"no such .blend file: {path}")
    try:
        with file.open("rb") as fh:
            head = fh.read(len(BLEND_MAGICS[0]))
    except OSError as err:
        raise UsageError(f"cannot read {path}: {err.strerror}") from None
    if not head.startswith(BLEND_MAGICS):
        raise UsageError(f"{path} is not a .blend file (it does not start with Blender's header)")
    return file.resolve()


def _open_blend(path: str) -> None:
    """Open a .blend, turning Blender's refusal (a corrupt or truncated file) into bad input."""
    import bpy

    file = check_blend_file(path)
    try:
        bpy.ops.wm.open_mainfile(filepath=str(file))
    except RuntimeError as err:
        reason = str(err).removeprefix("Error: ").strip().splitlines()[0]
        raise UsageError(f"cannot open {path} as a .blend (corrupt or truncated?): {reason}") from None


def _open_armature(args: argparse.Namespace, robot: bool = False):
    """Open the .blend (if given), enable the add-on, and make the named armature (or robot rig) active.

    Raises:
        UsageError: A missing file, or no such armature (the message lists the candidates).
    """
    import bpy

    if args.blend:
        _open_blend(args.blend)
    ensure_addon()

    def fits(obj) -> bool:
        return "articulate_robot" in obj if robot else obj.type == "ARMATURE"

    what = "robot rig" if robot else "armature"
    arm = bpy.data.objects.get(args.armature)
    if arm is None or not fits(arm):
        names = ", ".join(o.name for o in bpy.data.objects if fits(o)) or "none"
        raise UsageError(f"no {what} {args.armature!r}; {what}s in the file: {names}")
    bpy.context.view_layer.objects.active = arm
    return arm


def _open_robot(args: argparse.Namespace):
    """Open the file and make the named robot rig active; apply ``--frames`` to the scene."""
    import bpy

    arm = _open_armature(args, robot=True)
    if isinstance(args.frames, tuple):
        bpy.context.scene.frame_start, bpy.context.scene.frame_end = args.frames[:2]
    return arm


def cmd_robot(args: argparse.Namespace) -> int:
    """Import a URDF or xacro robot description as a rig (into a .blend, or an empty scene) and save it."""
    import shlex

    import bpy

    if args.into:
        _open_blend(args.into)
    else:
        bpy.ops.wm.read_homefile(use_empty=True)
    ensure_addon()
    _run_operator(bpy.ops.articulate.robot_import_urdf, filepath=str(Path(args.description).resolve()),
                  xacro_args=shlex.join(args.xacro_arg or []), tip_link=",".join(args.tool_link or []),
                  package_dir=str(Path(args.package_dir).resolve()) if args.package_dir else "")
    arm = bpy.context.object
    chains = ", ".join(c.tool_link for c in arm.articulate.chains) or "none"
    print(f"articulate: imported {arm.name}, chains to {chains}")
    _save(args.out)
    return EXIT_OK


def check_robot_args(args: argparse.Namespace) -> None:
    """The robot command's input: a readable description file, xacro arguments only for xacro, each once.

    Raises:
        UsageError: A missing file, an unknown extension, xacro arguments for a URDF, an argument
            given twice, or a Package Folder that is not a folder.
    """
    file = Path(args.description)
    if not file.is_file():
        raise UsageError(f"no such robot description: {args.description}")
    name = file.name.lower()
    if not name.endswith(ROBOT_SUFFIXES):
        raise UsageError(f"{args.description} is not a robot description; valid: {', '.join(ROBOT_SUFFIXES)}")
    names = [XACRO_ARG.fullmatch(a).group(1) for a in args.xacro_arg or []]
    if names and not name.endswith(".xacro"):
        raise UsageError(f"--xacro-arg is for .xacro files; {args.description} is a URDF")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"--xacro-arg {twice[0]} is given more than once")
    if args.package_dir is not None and not Path(args.package_dir).is_dir():
        raise UsageError(f"the package folder {args.package_dir} is not a folder")
    if args.into is not None:
        check_blend_file(args.into)


def xacro_arg(text: str) -> str:
    """An argparse type: one xacro argument, ``name:=value``."""
    if XACRO_ARG.fullmatch(text) is None:
        raise argparse.ArgumentTypeError(f"expected a xacro argument name:=value (such as prefix:=left_), got "
                                         f"{text!r}")
    return text


class UsageError(Exception):
    """Bad arguments or input: exit code 2."""


def _writable_folder(folder: Path, what: str, original: str) -> None:
    """Refuse ``folder`` unless it is, or can be made, a folder this process can write into.

    Tried for real (a scratch file or folder made and removed at once) rather than with
    ``os.access``, which says yes to root even where writing fails (``/proc``, read-only mounts).
    """
    existing = folder
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise UsageError(f"cannot write the {what} {original}: {existing} is a file, not a folder")
    try:
        if existing == folder:
            with tempfile.TemporaryFile(dir=folder, prefix=".articulate-check-"):
                pass
        else:  # the folders the output needs will be made: one can be made where the first is missing
            os.rmdir(tempfile.mkdtemp(dir=existing, prefix=".articulate-check-"))
    except OSError as err:
        raise UsageError(f"cannot write the {what} {original}: {existing} is not writable "
                          f"({err.strerror or err})") from None


def check_output_file(path: str, what: str, suffixes: tuple[str, ...] = ()) -> Path:
    """``path`` resolved, once a file can be written there (its folder existing or creatable).

    Args:
        path: The output file as given.
        what: What it is, for messages ("report").
        suffixes: Extensions allowed ("" for none), or every one when empty.

    Raises:
        UsageError: An empty path, a folder, a device, pipe or socket, a file that cannot be replaced,
            an extension not listed, or a folder that cannot be written or made (the message names the path).
    """
    if not path.strip():
        raise UsageError(f"the {what} path is empty")
    file = Path(path).resolve()
    if suffixes and file.suffix.lower() not in suffixes:
        listed = ", ".join(repr(s) if s else "none" for s in suffixes)
        raise UsageError(f"the {what} {path} has the extension {file.suffix or 'none'!r}; valid: {listed}")
    if file.is_dir():
        raise UsageError(f"the {what} {path} is a folder; give a file name in it")
    if file.exists() and not file.is_file():
        # /dev/null, a pipe, a socket: the reports are read back once written, and a save renames its file over
        # the path, which as root replaces the device itself
        raise UsageError(f"the {what} {path} is not a regular file but a device, pipe or socket; give a file name")
    if file.exists() and not os.access(file, os.W_OK):
        raise UsageError(f"cannot write the {what} {path}: the file exists and is read-only")
    _writable_folder(file.parent, what, path)
    return file


def check_output_folder(path: str, what: str) -> Path:
    """``path`` resolved, once it is a folder that exists or can be made, and can be written.

    Raises:
        UsageError: An empty path, a file, or a folder that cannot be written or made.
    """
    if not path.strip():
        raise UsageError(f"the {what} path is empty")
    folder = Path(path).resolve()
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"the {what} {path} is a file, not a folder")
    _writable_folder(folder, what, path)
    return folder


def check_args(args: argparse.Namespace) -> list[Path]:
    """Check what the parser cannot, before any work: the input .blend and every output path.

    Args:
        args: Parsed arguments of any command.

    Returns:
        The folders the outputs go into (to be made before the command runs).

    Raises:
        UsageError: A missing or non-.blend input, an output that cannot be written, two
            outputs on one file, a report or export over the input .blend.
    """
    blend = getattr(args, "blend", None)
    if blend is not None:
        if not blend.strip():
            raise UsageError("the .blend path is empty; omit it to bake the file Blender has open")
        check_blend_file(blend)
    outputs: list[tuple[Path, str]] = []  # (file, what)
    folders: list[Path] = []
    if args.command == "demo":
        folders.append(check_output_folder(args.out, "output folder"))
    elif args.command == "bake":
        given = [f"--{name.replace('_', '-')}" for name in CONTACT_OPTIONS if getattr(args, name) not in (None, [])]
        if given and not args.contacts:
            raise UsageError(f"{given[0]} needs --contacts (contacts are detected and planted only with it)")
        stem = Path(args.blend).stem if args.blend else "untitled"
        for file, folder, what, suffix in ((args.out, args.out_dir, "baked file", ".blend"),
                                           (args.report, args.report_dir, "report", ".json")):
            if folder is not None:
                folders.append(check_output_folder(folder, f"{what}'s folder"))
                outputs.append((folders[-1] / f"{stem}{suffix}", what))
            elif file is not None:
                outputs.append((check_output_file(file, what), what))
    elif args.command == "export":
        outputs.append((check_output_file(args.out, "export", (*TRAJECTORY_SUFFIXES, "")), "export"))
    elif args.command == "trajectory":
        check_trajectory_args(args)
        outputs.append((check_output_file(args.out, "output file", (".blend",)), "output file"))
    elif args.command == "robot":
        check_robot_args(args)
        outputs.append((check_output_file(args.out, "robot file", (".blend",)), "robot file"))
    else:  # check, body, ik-to-fk, fk-to-ik
        for name, what in (("out", "output file"), ("report", "report")):
            if getattr(args, name, None) is not None:
                outputs.append((check_output_file(getattr(args, name), what), what))
    # A report or an export over the input .blend would replace the scene with text (the baked .blend saved in
    # place is fine); the robot command's --into is an input too.
    sources = {Path(path).resolve() for path in (blend, getattr(args, "into", None)) if path}
    for file, what in outputs:
        if what in ("report", "export") and file in sources:
            raise UsageError(f"the {what} would overwrite the input .blend {file}")
    seen: dict[Path, str] = {}
    for file, what in outputs:
        if file in seen:
            raise UsageError(f"the {seen[file]} and the {what} would both be written to {file}")
        seen[file] = what
    return folders + [file.parent for file, _what in outputs]


def _run_operator(op, **kwargs) -> set[str]:
    """Run ``op``; its error report is bad input (UsageError), unless it is an exception it caught (RuntimeError).

    Raises:
        UsageError: The operator refused the input (its message says why).
        RuntimeError: The operator failed with an unexpected error (its message says where).
    """
    try:
        return op(**kwargs)
    except RuntimeError as err:  # the operator reported an error
        message = str(err).removeprefix("Error: ").strip()
        if UNEXPECTED in message:
            raise RuntimeError(message) from None
        raise UsageError(message) from None


def _run_with_report(op, report: Path | None, **kwargs) -> dict:
    """Run ``op`` writing its JSON report to ``report`` (a scratch file when None) and return the report.

    The exit code comes from the report, so it is written even when the user asked for none.

    Raises:
        UsageError: The operator refused (bad input), or it was cancelled.
    """
    with tempfile.TemporaryDirectory(prefix="articulate-report-") as scratch:
        path = report or Path(scratch) / "report.json"
        if "FINISHED" not in _run_operator(op, report_path=str(path), **kwargs):
            raise RuntimeError(f"{op.idname_py()} was cancelled")
        return json.loads(path.read_text())


def _save(out: Path | str | None) -> None:
    """Save the open file as ``out`` (compressed), when an output is asked for."""
    import bpy

    if out:
        out = Path(out).resolve()
        out.parent.mkdir(parents=True, exist_ok=True)
        bpy.ops.wm.save_as_mainfile(filepath=str(out), compress=True)
        print(f"articulate: wrote {out}")


def _frames_or_scene(args: argparse.Namespace) -> tuple[int, int, int]:
    """``--frames`` as (start, end, step), or the scene's range."""
    import bpy

    return args.frames or (bpy.context.scene.frame_start, bpy.context.scene.frame_end, 1)


def cmd_check(args: argparse.Namespace) -> int:
    """Check a robot rig's keyed trajectory; exit 3 when frames are flagged."""
    import bpy

    _open_robot(args)
    # --frames names the range (a range or the scene's); by default the imported trajectory's own (the scene's
    # when none was imported)
    _run_operator(bpy.ops.articulate.trajectory_check, report_path=str(Path(args.report).resolve()),
                  singularity_threshold=args.singularity, jump_threshold=args.jump,
                  frame_range="TRAJECTORY" if args.frames == TRAJECTORY_FRAMES else "SCENE")
    summary = bpy.context.scene.articulate.last_summary
    print(f"articulate: {summary}; wrote {args.report}")
    return EXIT_OK if summary.startswith("0 of") else EXIT_MISSED


def cmd_export(args: argparse.Namespace) -> int:
    """Export a robot rig's keyed joint trajectory."""
    import bpy

    _open_robot(args)
    robots = importlib.import_module(f"{ensure_addon().__name__}.operators.robots")
    given = str(Path(args.out).resolve())
    try:  # the file the exporter writes: a name without extension gets the format's (joints -> joints.csv)
        out = robots.export_path(given, "CSV")
    except robots.bridge.BridgeError as err:  # an extension it does not take, such as the '.' of 'joints.'
        raise UsageError(str(err)) from None
    _run_operator(bpy.ops.articulate.trajectory_export, filepath=out, rate=args.rate,
                  frame_range="TRAJECTORY" if args.frames == TRAJECTORY_FRAMES else "SCENE", topic=args.topic)
    print(f"articulate: wrote {args.out}{out[len(given):]}")  # as given, with the extension the exporter added
    return EXIT_OK


def cmd_trajectory(args: argparse.Namespace) -> int:
    """Key a joint trajectory file (CSV, ROS JSON or a ROS 2 bag) on a robot rig and save the file."""
    import bpy

    arm = _open_armature(args, robot=True)
    _run_operator(bpy.ops.articulate.trajectory_import, filepath=str(Path(args.file).resolve()),
                  topic=args.topic or "", start_frame=args.start_frame)
    scene = bpy.context.scene
    print(f"articulate: keyed {Path(args.file).name} on {arm.name}, frames {scene.frame_start}-{scene.frame_end} at "
          f"{scene.render.fps / scene.render.fps_base:.4g} fps")
    _save(args.out)
    return EXIT_OK


def check_trajectory_args(args: argparse.Namespace) -> None:
    """The trajectory command's input: an existing CSV, JSON or MCAP file; a topic only for MCAP.

    Raises:
        UsageError: A missing file, another extension, or --topic for a file that is not MCAP.
    """
    file = Path(args.file)
    if not file.is_file():
        raise UsageError(f"no such trajectory file: {args.file}")
    if file.suffix.lower() not in TRAJECTORY_SUFFIXES:
        raise UsageError(f"{args.file} is not a joint trajectory file; valid: {', '.join(TRAJECTORY_SUFFIXES)}")
    if args.topic is not None and file.suffix.lower() != ".mcap":
        raise UsageError(f"--topic is for .mcap files (ROS 2 bags); {args.file} is not one")


def cmd_body(args: argparse.Namespace) -> int:
    """Bake a humanoid's whole body from head and hand trackers."""
    import bpy

    arm = _open_armature(args)
    body = arm.articulate.body
    for name in ("head", "hand_l", "hand_r", "pelvis", "foot_l", "foot_r"):
        obj_name = getattr(args, name)
        if obj_name:
            if obj_name not in bpy.data.objects:
                raise UsageError(f"no object {obj_name!r} for the {name} tracker")
            setattr(body, name, bpy.data.objects[obj_name])
    if args.reference_frame is not None:
        body.reference_frame = args.reference_frame
    fullbody = importlib.import_module(f"{ensure_addon().__name__}.operators.fullbody")
    start, end, step = _frames_or_scene(args)
    if args.steps:
        try:
            if args.steps == "animation":
                contacts = fullbody.detect_steps(bpy.context.scene, arm, range(start, end + 1, step))
            else:
                contacts = fullbody.read_contacts_csv(str(Path(args.steps).resolve()))
            fullbody.store_contacts(body, contacts)
        except fullbody.BodyFailed as err:
            raise UsageError(str(err)) from None
    report = _run_with_report(bpy.ops.articulate.body_bake, Path(args.report).resolve() if args.report else None,
                              use_scene_settings=False, frame_start=start, frame_end=end, frame_step=step)
    _save(args.out)
    print(f"articulate: {body.last_summary}")
    problems = fullbody.body_problems(report)
    for problem in problems:
        print(f"articulate: warning: {problem}", file=sys.stderr)
    return EXIT_MISSED if problems else EXIT_OK


def cmd_switch(args: argparse.Namespace) -> int:
    """IK to FK (or FK to IK) over a range; exit 3 when a limb bone plays more than 1 mm off."""
    import bpy

    _open_armature(args)
    start, end, _step = _frames_or_scene(args)
    op = bpy.ops.articulate.ik_to_fk if args.command == "ik-to-fk" else bpy.ops.articulate.fk_to_ik
    report = _run_with_report(op, Path(args.report).resolve() if args.report else None,
                              use_scene_settings=False, frame_start=start, frame_end=end)
    _save(args.out)
    worst = max(m["max_error_m"] for m in report["limbs"])
    off = sorted({f for m in report["limbs"] for f in m["frames_over_tolerance"]})
    print(f"articulate: {args.command} on {len(report['limbs'])} limb(s), frames {start}-{end}: limb bones within "
          f"{worst * 1000:.3g} mm of the pose they had" + (f"; {len(off)} frame(s) over 1 mm" if off else ""))
    return EXIT_MISSED if off else EXIT_OK


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error: the farm's log shows the problem, not a usage screen."""

    def error(self, message: str) -> NoReturn:
        text = " ".join(message.split())
        self.exit(EXIT_USAGE, f"articulate: error: {self.prog}: {text} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    parser = _Parser(
        prog="cli.py",
        description="Articulate headless baking. Inside Blender put the arguments after '--'.",
        epilog="Exit codes: 0 all frames converged, 3 some frames missed, 2 bad input, 1 other errors.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="bake the bundled example and write .blend, JSON report and a filmstrip PNG")
    demo.add_argument("--out", default="out/demo", help="output folder (default: out/demo)")
    demo.add_argument("--scene", default="metarig", choices=["metarig", "arm"],
                      help="metarig: Rigify's human metarig, four limb chains (default); arm: a 3-bone arm")
    demo.add_argument("--frames", type=int_in(1, MAX_FRAME, "a frame count"), default=120,
                      help="frames to bake (default: 120)")
    demo.add_argument("--solver", choices=SOLVERS,
                      help="IK solver of every chain (default: two_bone for the metarig's limbs, dls for the arm)")
    demo.add_argument("--samples", type=int_in(0, MAX_SAMPLES, "a sample count"), default=0,
                      help="Cycles samples per frame of the picture; 0 (the default) renders with Workbench, "
                           "about a second a frame")
    demo.add_argument("--no-picture", action="store_true", help="skip rendering the PNG")
    demo.add_argument("--verbose", action="store_true",
                      help=f"show Blender's own output instead of writing it to OUT/{DEMO_LOG}")
    demo.set_defaults(func=cmd_demo)
    bake = sub.add_parser("bake", help="bake an armature's chains in a .blend")
    bake.add_argument("blend", nargs="?", help=".blend to open (omit inside 'blender -b file.blend')")
    bake.add_argument("--armature", required=True, type=name_arg("an armature"), help="name of the armature object")
    bake.add_argument("--frames", type=_parse_frames,
                      help=f"range like 1-250 or 1-250:2, or '{SCENE_FRAMES}' for the scene's (the default)")
    bake.add_argument("--from-constraints", action="store_true",
                      help="first turn the armature's IK constraints into chains")
    bake.add_argument("--from-tracks", action="store_true",
                      help="first turn the armature's Damped Track and Track To constraints into aim chains")
    bake.add_argument("--keep-constraints", action="store_true",
                      help="do not mute the converted IK (and track) constraints")
    bake.add_argument("--solver", choices=(*SOLVERS, KEEP_SOLVER),
                      help=f"solver for every chain; '{KEEP_SOLVER}' (the default) keeps each chain's own "
                           "('auto' for new and converted chains)")
    bake.add_argument("--reduce-keys", type=float_in(0.0, 1e6, "a tolerance in millimetres"), default=0.0,
                      metavar="MM",
                      help="key only the frames needed for every chain tip to stay within MM millimetres of the "
                           "full bake (default 0: every frame)")
    bake.add_argument("--contacts", action="store_true",
                      help="first detect the contacts of the chains named by --contact-chain (default: those with "
                           "Contacts on) with the ground, then plant their targets during them in the bake")
    bake.add_argument("--contact-chain", action="append", metavar="NAME", type=name_arg("a chain"),
                      help="a chain to detect contacts on (repeat for several); with --contacts")
    bake.add_argument("--contact-height", type=float_in(1e-6, 10.0, "a height in metres"),
                      metavar="M", help="largest height above its resting height at which a contact starts "
                                        "(default: the chain's, 0.033 m for new chains)")
    bake.add_argument("--contact-speed", type=float_in(1e-6, 100.0, "a speed in metres per second"),
                      metavar="M/S", help="largest speed at which a contact starts "
                                          "(default: the chain's, 0.1 m/s for new chains)")
    bake.add_argument("--contact-min-duration", type=float_in(0.0, 3600.0, "a duration in seconds"),
                      metavar="S", help="shortest contact kept (default: the chain's, 0.1 s)")
    bake.add_argument("--ground-height", type=float_in(-1e6, 1e6, "a height in metres"), metavar="M",
                      help="height of the ground plane the contacts stand on (default: the chain's ground)")
    outputs = bake.add_mutually_exclusive_group()
    outputs.add_argument("--out", help="save the baked file here (default: do not save)")
    outputs.add_argument("--out-dir", metavar="DIR", help="save the baked file as DIR/<name of the .blend>.blend")
    reports = bake.add_mutually_exclusive_group()
    reports.add_argument("--report", help="write the JSON report (per frame and chain) here")
    reports.add_argument("--report-dir", metavar="DIR", help="write the JSON report as DIR/<name of the .blend>.json")
    bake.set_defaults(func=cmd_bake)
    check = sub.add_parser("check", help="check a robot rig's trajectory: limits, velocity, singularities, jumps")
    check.add_argument("blend", nargs="?", help=".blend to open (omit inside 'blender -b file.blend')")
    check.add_argument("--armature", required=True, type=name_arg("an armature"), help="name of the robot rig")
    check.add_argument("--frames", type=_parse_robot_frames, default=TRAJECTORY_FRAMES,
                       help="range like 1-250 (set as the scene's), 'scene', or 'trajectory' (default: the imported "
                            "trajectory's own frames, else the scene's)")
    check.add_argument("--report", required=True, help="per-frame report, .json or .csv")
    check.add_argument("--singularity", type=float_in(0.0, 1e6, "a singular value"), default=1e-2,
                       help="smallest Jacobian singular value allowed")
    check.add_argument("--jump", type=float_in(1e-6, 1e6, "a joint change [rad or m]"), default=0.5,
                       help="largest joint change between frames [rad or m]")
    check.set_defaults(func=cmd_check)
    export = sub.add_parser("export", help="export a robot rig's joint trajectory to CSV or JSON")
    export.add_argument("blend", nargs="?", help=".blend to open (omit inside 'blender -b file.blend')")
    export.add_argument("--armature", required=True, type=name_arg("an armature"), help="name of the robot rig")
    export.add_argument("--frames", type=_parse_robot_frames, default=TRAJECTORY_FRAMES,
                        help="range like 1-250 (set as the scene's), 'scene', or 'trajectory' (default: the imported "
                             "trajectory's own frames, else the scene's)")
    export.add_argument("--out", required=True,
                        help="output file, .csv, .json (ROS JointTrajectory) or .mcap (ROS 2 bag of JointState)")
    export.add_argument("--rate", type=float_in(0.0, MAX_RATE, "a sample rate [Hz]"), default=0.0,
                        help="samples per second (default: the frame rate)")
    export.add_argument("--topic", type=name_arg("a ROS topic"), default="/joint_states",
                        help="the topic of an .mcap file's JointState messages (default: /joint_states)")
    export.set_defaults(func=cmd_export)
    trajectory = sub.add_parser("trajectory", help="key a joint trajectory file (CSV, ROS JSON or a ROS 2 bag, "
                                                   "MCAP) on a robot rig and save the .blend")
    trajectory.add_argument("blend", nargs="?", help=".blend to open (omit inside 'blender -b file.blend')")
    trajectory.add_argument("--armature", required=True, type=name_arg("an armature"), help="name of the robot rig")
    trajectory.add_argument("--file", required=True, help="the trajectory: .csv, .json or .mcap")
    trajectory.add_argument("--topic", type=name_arg("a ROS topic"),
                            help="the .mcap topic of JointState or JointTrajectory messages (needed only when the "
                                 "file has several)")
    trajectory.add_argument("--start-frame", type=int_in(-MAX_FRAME, MAX_FRAME, "a frame"), default=1,
                            help="frame of the first sample (default: 1)")
    trajectory.add_argument("--out", required=True, help="save the keyed .blend here")
    trajectory.set_defaults(func=cmd_trajectory)
    robot = sub.add_parser("robot", help="import a URDF or xacro robot description as a rig and save the .blend")
    robot.add_argument("description", help="the robot's .urdf, or its .xacro / .urdf.xacro (expanded by xacro)")
    robot.add_argument("--out", required=True, help="save the .blend with the robot rig here")
    robot.add_argument("--into", metavar="BLEND", help="import into this .blend (default: an empty scene)")
    robot.add_argument("--xacro-arg", action="append", type=xacro_arg, metavar="NAME:=VALUE",
                       help="a xacro argument, as xacro's command line takes it (repeat for several)")
    robot.add_argument("--package-dir", metavar="DIR",
                       help="folder package:// and $(find pkg) resolve against (default: ROS_PACKAGE_PATH and the "
                            "folders around the file)")
    robot.add_argument("--tool-link", action="append", metavar="LINK",
                       help="a link a chain ends on (repeat for several; default: the end of a single arm, else one "
                            "chain per branch end)")
    robot.set_defaults(func=cmd_robot)
    body = sub.add_parser("body", help="bake a humanoid's full body from head and hand trackers")
    body.add_argument("blend", nargs="?", help=".blend to open (omit inside 'blender -b file.blend')")
    body.add_argument("--armature", required=True, type=name_arg("an armature"), help="name of the humanoid armature")
    for name, what in (("head", "head"), ("hand_l", "left hand"), ("hand_r", "right hand"),
                       ("pelvis", "optional pelvis"), ("foot_l", "optional left foot"),
                       ("foot_r", "optional right foot")):
        body.add_argument(f"--{name.replace('_', '-')}", dest=name, type=name_arg(f"the {what} tracker"),
                          help=f"object tracking the {what}")
    body.add_argument("--reference-frame", type=int_in(-MAX_FRAME, MAX_FRAME, "a frame"),
                      help="standing calibration frame (default: as saved)")
    body.add_argument("--frames", type=_parse_frames, help="range like 1-250 or 1-250:2 (default: the scene's)")
    body.add_argument("--steps", metavar="CSV",
                      help="known step timing: a CSV of foot contacts (header foot,frame_start,frame_end; foot l or "
                           "r, frames included), or 'animation' to detect them from the armature's own foot motion "
                           "(a capture) over the frames; stored as the panel's Known Steps and used instead of the "
                           "head's")
    body.add_argument("--out", help="save the baked file here")
    body.add_argument("--report", help="write the JSON report here")
    body.set_defaults(func=cmd_body)
    for name, what in (("ik-to-fk", "key the FK controls to the pose the IK gives, switches to FK"),
                       ("fk-to-ik", "key the IK controls where the FK pose puts the limbs, switches to IK")):
        switch = sub.add_parser(name, help=f"{what} (Rigify limbs or IK constraints)")
        switch.add_argument("blend", nargs="?", help=".blend to open (omit inside 'blender -b file.blend')")
        switch.add_argument("--armature", required=True, type=name_arg("an armature"),
                            help="name of the armature object")
        switch.add_argument("--frames", type=_parse_every_frame, help="range like 1-250 (default: the scene's)")
        switch.add_argument("--out", help="save the file here")
        switch.add_argument("--report", help="write the JSON report here")
        switch.set_defaults(func=cmd_switch)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse arguments and run the command; returns the process exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(_script_args(sys.argv if argv is None else argv))
    except SystemExit as exc:  # argparse exits 2 on bad usage and 0 for --help
        return int(exc.code or 0)
    if "bpy" not in sys.modules and importlib.util.find_spec("bpy") is None:
        print(f"articulate: error: '{args.command}' needs Blender: run 'blender -b --python cli.py -- "
              f"{args.command} ...', or use a Python with the bpy module (pip install bpy)", file=sys.stderr)
        return EXIT_ERROR
    try:
        folders = check_args(args)
        for folder in folders:  # only once every argument is known good
            folder.mkdir(parents=True, exist_ok=True)
        return args.func(args)
    except UsageError as exc:
        print(f"articulate: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # the farm needs a code and one readable line, not a hang or a traceback
        if os.environ.get("ARTICULATE_TRACEBACK"):
            import traceback

            traceback.print_exc()
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else "(no message)"
        print(f"articulate: error: {type(exc).__name__}: {message} (ARTICULATE_TRACEBACK=1 shows where)",
              file=sys.stderr)
        return EXIT_ERROR


def _exit(code: int) -> None:
    """End the process with ``code``.

    Inside Blender, ``sys.exit`` from a ``--python`` script ends Blender with that code. Under the
    ``bpy`` module of Blender 4.2, interpreter teardown segfaults once Rigify has been enabled
    (a Blender bug, also without Articulate), which would turn a success into exit 139: every
    output is written by now, so the process ends without the teardown. A run that never
    imported bpy (``--help``, bad arguments, a Python without Blender) ends normally.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    bpy = sys.modules.get("bpy")
    if bpy is not None and not bpy.app.binary_path and bpy.app.version < (4, 3, 0):
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    _exit(main())
