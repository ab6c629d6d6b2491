# SPDX-License-Identifier: GPL-3.0-or-later
"""The README and the pages in docs/ cannot rot silently.

The README stays short and leads to every page; every guide exists, is linked from the README's
Guides list, and shows its picture; every page links only to files (and headings) that exist;
every ``cli.py`` command line in a code block parses with cli.py's own parser, and every option
a page names exists; every label a guide or the reference writes in **bold** (a button, a field,
a panel, a menu path) is one the UI shows; the benchmark tables name scripts that exist. Every
shell command of every page is run as written (on shots, a robot, a tracker take and a Rigify
rig built the way the guides describe them, comparing what the guides quote) or run by a named
test, or listed with the reason it cannot run here (COMMANDS).
"""

import json
import os
import re
import shlex
import struct
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import bpy
import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
GUIDES = ("animator", "roboticist", "full_body", "pipeline")
# Pages for looking things up, linked from the README's Guides section below the guides.
LOOKUP = ("reference", "formats", "benchmarks")
PAGES = (*GUIDES, "install", *LOOKUP)
README_MAX_LINES = 150
MAX_PICTURE_BYTES = 300 * 1024
LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
BOLD = re.compile(r"\*\*(.+?)\*\*")
CODE_BLOCK = re.compile(r"^ *```[^\n]*\n(.*?)^ *```", re.S | re.M)
SHELL_OPERATORS = {"||", "&&", ";", "|", ">", "2>", "&"}
# Rigify's menu entries, which the guides name for adding a metarig. Rigify is not enabled in the
# test process (it crashes bpy 4.2 and hangs 4.5 at exit, see conftest.py); these are the labels
# of Rigify's "Rigify Meta-Rigs" menu, its "Basic" sub-menu and the metarig module basic_human.py.
RIGIFY_LABELS = {"Rigify Meta-Rigs", "Basic", "Basic Human"}
# The chain lists' add buttons are drawn as a "+" icon (ADD) without text.
ICON_BUTTONS = {"+"}
# Blender's own command-line options, which the pages name beside cli.py's.
BLENDER_OPTIONS = {"--python", "--python-exit-code", "--factory-startup"}
# The reference's list items begin with their topic in bold; these topics are not UI labels.
REFERENCE_TOPICS = {"Chains", "Aim chains", "The report is what playback shows", "Files",
                    "AWS Deadline Cloud and other Open Job Description farms", "Flamenco"}


def _page(name: str) -> Path:
    return DOCS / f"{name}.md"


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _without_code(text: str) -> str:
    """``text`` without fenced code blocks (links and bold there are not markdown)."""
    return CODE_BLOCK.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {slug(m) for m in re.findall(r"^#+ (.+)$", _without_code(_text(path)), re.M)}


def test_every_guide_exists_and_the_readme_lists_it_after_the_two_commands():
    """docs/<guide>.md exists for the four journeys; the README's Guides section links each, near the top."""
    readme = _text(REPO / "README.md")
    start, guides, layout = (readme.index(h) for h in ("## The two commands", "## Guides", "## Layout"))
    assert start < guides < layout, "the Guides list belongs right after 'The two commands'"
    section = readme[guides:layout]
    for name in GUIDES:
        assert _page(name).is_file(), name
        assert f"(docs/{name}.md)" in section, f"README's Guides list does not link docs/{name}.md"


def test_readme_is_short_and_leads_to_every_page():
    """The README a newcomer reads in two minutes: at most 150 lines, its sections in order, a picture,
    and a link to every page in docs/ (the reference and the benchmarks moved there)."""
    readme = _text(REPO / "README.md")
    assert len(readme.splitlines()) <= README_MAX_LINES
    sections = ("## The two commands", "## Install", "## Guides", "## Layout", "## Licence")
    at = [readme.index(s) for s in sections]
    assert at == sorted(at), "README sections out of order"
    assert "](docs/images/" in readme[:at[0]], "no picture before the two commands"
    section = readme[readme.index("## Guides"):readme.index("## Layout")]
    for name in PAGES:
        if name != "install":
            assert f"(docs/{name}.md)" in section, f"README's Guides section does not link docs/{name}.md"
    assert sorted(p.stem for p in DOCS.glob("*.md")) == sorted(PAGES), "a page in docs/ the README does not know"


@pytest.mark.parametrize("name", [*PAGES, "README"])
def test_links_point_to_files_and_headings_that_exist(name):
    """Every relative link of a page names an existing file, and an existing heading when it has an anchor."""
    page = REPO / "README.md" if name == "README" else _page(name)
    links = LINK.findall(_without_code(_text(page)))
    assert links or name in LOOKUP, f"{name}.md links nothing"
    for _bang, _label, target in links:
        if re.match(r"[a-z]+:", target):
            continue  # web addresses are not checked offline
        file, _, anchor = target.partition("#")
        resolved = (page.parent / file).resolve() if file else page
        assert resolved.exists(), f"{name}.md links {target!r}: no {resolved}"
        if anchor:
            assert resolved.suffix == ".md", f"{name}.md links {target!r}: an anchor into a non-markdown file"
            assert anchor in _anchors(resolved), f"{name}.md links {target!r}: no such heading in {file or name}"


def _manifest() -> dict:
    return tomllib.loads(_text(REPO / "blender_manifest.toml"))


def test_install_page_is_linked_from_the_readme_first_screen():
    """The README links docs/install.md before its Guides list, where a newcomer reads first."""
    readme = _text(REPO / "README.md")
    assert "(docs/install.md)" in readme[:readme.index("## Guides")]


def test_install_page_names_the_real_tab_zip_and_blender_version(addon):
    """The sidebar tab the install page names is the panels' bl_category; the zip it names is the one
    the manifest's id and version give; the oldest Blender it names is the manifest's minimum."""
    text = _text(DOCS / "install.md")
    panels = __import__(f"{addon.__name__}.ui.panels", fromlist=["ARTICULATE_PT_main"])
    assert f"tab **{panels.ARTICULATE_PT_main.bl_category}**" in text
    manifest = _manifest()
    for page in (text, _text(REPO / "README.md")):
        zips = set(re.findall(r"dist/([\w.-]+\.zip)", page))
        assert zips == {f"{manifest['id']}-{manifest['version']}.zip"}, zips
    major, minor, _patch = manifest["blender_version_min"].split(".")
    assert f"Blender {major}.{minor} LTS or newer" in text
    make_targets = re.findall(r"^([a-z-]+):", _text(REPO / "Makefile"), re.M)
    for target in re.findall(r"^make ([a-z-]+)", "\n".join(CODE_BLOCK.findall(text)), re.M):
        assert target in make_targets, f"install.md runs make {target}: no such target"


@pytest.mark.slow
def test_make_builds_the_zip_the_install_page_installs(tmp_path):
    """dev/build.sh (make build) builds with Blender's builder the zip the page names, holding the add-on."""
    manifest = _manifest()
    proc = subprocess.run(["bash", str(REPO / "dev" / "build.sh"), str(tmp_path)], capture_output=True, text=True,
                          timeout=300, env={**os.environ})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (built,) = tmp_path.glob("*.zip")
    assert built.name == f"{manifest['id']}-{manifest['version']}.zip"
    assert f"dist/{built.name}" in _text(DOCS / "install.md")
    names = zipfile.ZipFile(built).namelist()
    assert {"blender_manifest.toml", "__init__.py", "ui/panels.py"} <= set(names)
    assert not [n for n in names if n.startswith(("tests/", "data/", "dev/", "bench/"))]


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path.name} is not a PNG"
    return struct.unpack(">II", head[16:24])


@pytest.mark.parametrize("name", GUIDES)
def test_each_guide_shows_its_picture(name):
    """Each guide embeds docs/images/<guide>.png, a 960x540 PNG under 300 KB (dev/doc_pictures.py renders it)."""
    images = [t for bang, _alt, t in LINK.findall(_without_code(_text(_page(name)))) if bang]
    assert f"images/{name}.png" in images, f"{name}.md does not show images/{name}.png"
    picture = DOCS / "images" / f"{name}.png"
    assert picture.stat().st_size < MAX_PICTURE_BYTES, f"{picture.name}: {picture.stat().st_size} bytes"
    assert _png_size(picture) == (960, 540)


def _cli_parser():
    sys.path.insert(0, str(REPO))
    try:
        import cli
    finally:
        sys.path.remove(str(REPO))
    return cli.build_parser()


def cli_command_lines(text: str) -> list[list[str]]:
    """The argument lists given to cli.py by the command lines in ``text``'s code blocks.

    Continued lines (trailing backslash) are joined; comments and what follows a shell operator
    (``||``, ``>``, ...) are dropped; inside Blender the arguments follow ``--``.
    """
    commands = []
    for block in CODE_BLOCK.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            if "cli.py" not in line:
                continue  # tables and other text: not shell
            tokens = shlex.split(line, comments=True)
            at = next((i for i, t in enumerate(tokens) if t == "cli.py" or t.endswith("/cli.py")), None)
            if at is None:
                continue
            args = tokens[at + 1:]
            if args[:1] == ["--"]:
                args = args[1:]
            cut = next((i for i, t in enumerate(args) if t in SHELL_OPERATORS), len(args))
            commands.append(args[:cut])
    return commands


def test_command_line_reader_finds_both_forms():
    """The reader itself: the bpy-module form, Blender's form after '--', continuations and shell operators."""
    text = ("```sh\npython cli.py bake a.blend --armature Rig \\\n    --frames 1-9  # note\n"
            "blender -b a.blend --python cli.py -- check --armature R --report r.json || echo failed\n```\n")
    assert cli_command_lines(text) == [["bake", "a.blend", "--armature", "Rig", "--frames", "1-9"],
                                       ["check", "--armature", "R", "--report", "r.json"]]


@pytest.mark.parametrize("path", [*(f"docs/{g}.md" for g in PAGES), "README.md"])
def test_cli_command_lines_parse_with_cli_parser(path):
    """Every cli.py command in a code block names a real subcommand and real options with valid values."""
    parser = _cli_parser()
    subs = _subparsers(parser)
    for args in cli_command_lines(_text(REPO / path)):
        try:
            parser.parse_args(args)
        except SystemExit as exc:
            assert exc.code == 0 and {"-h", "--help"} & set(args), f"{path}: cli.py {' '.join(args)}"
        if args and args[0] in subs:  # spelt out in full: argparse would also take an abbreviation
            options = {o for a in subs[args[0]]._actions for o in a.option_strings}
            spelt = {t.split("=")[0] for t in args[1:] if t.startswith("--")}
            assert spelt <= options, f"{path}: cli.py {' '.join(args)}: {sorted(spelt - options)}"


def _subparsers(parser) -> dict:
    return next(a for a in parser._actions if a.dest == "command").choices


def test_pipeline_guide_shows_every_subcommand_and_names_only_real_options():
    """docs/pipeline.md runs every subcommand in a code block, and each --option a page names in prose exists."""
    text = _text(_page("pipeline"))
    subs = _subparsers(_cli_parser())
    shown = {args[0] for args in cli_command_lines(text) if args}
    assert set(subs) <= shown, f"subcommands without an example: {sorted(set(subs) - shown)}"
    options = {o for sub in subs.values() for a in sub._actions for o in a.option_strings}
    for name in (*GUIDES, "reference"):
        prose = _without_code(_text(_page(name)))
        named = {o for span in re.findall(r"`([^`\n]+)`", prose) for o in re.findall(r"(?<![\w-])--[a-z][a-z-]*", span)}
        assert named - BLENDER_OPTIONS <= options, f"{name}.md: {named - options}"
        for sub in re.findall(r"`cli\.py ([a-z-]+)", prose):
            assert sub in subs, f"{name}.md names cli.py {sub!r}; subcommands: {sorted(subs)}"


def _rna_labels(rna) -> set[str]:
    """A struct's property names and its static enum items' names."""
    labels = set()
    for prop in rna.properties:
        labels.add(prop.name)
        if prop.type == "ENUM":
            labels.update(item.name for item in prop.enum_items)
    return labels


def _dynamic_enum_labels(cls) -> set[str]:
    """Names of the items of a class's enums whose items a function gives (robot presets, tool links).

    Blender keeps no items for those on the type; the annotations (strings under ``from __future__
    import annotations``) are evaluated in the class's module, and each items function is called as
    Blender calls it, with no operator and the current context.
    """
    module = sys.modules[cls.__module__]
    labels = set()
    for annotation in getattr(cls, "__annotations__", {}).values():
        deferred = eval(annotation, vars(module)) if isinstance(annotation, str) else annotation
        items = getattr(deferred, "keywords", {}).get("items")
        if callable(items):
            labels.update(item[1] for item in items(None, bpy.context))
    return labels


def ui_labels(addon) -> set[str]:
    """Every label Articulate's UI shows (panels, operators and their options, settings, menu entries,
    texts drawn by the panels), and the labels of Blender's own menus the guides name."""
    ui = __import__(f"{addon.__name__}.ui", fromlist=["classes", "menus", "properties"])
    labels = set(ICON_BUTTONS) | RIGIFY_LABELS
    for cls in ui.classes:
        labels.add(getattr(cls, "bl_label", ""))
    for cls in ui.properties.classes:
        labels |= _rna_labels(cls.bl_rna)
    for name in dir(bpy.ops.articulate):
        rna = getattr(bpy.ops.articulate, name).get_rna_type()
        labels.add(rna.name)
        labels |= _rna_labels(rna)
    operators = __import__(f"{addon.__name__}.operators", fromlist=["classes"])
    for cls in operators.classes:
        labels |= _dynamic_enum_labels(cls)
    labels.update(text for _op, text, _icon in (*ui.menus.IMPORTERS, *ui.menus.EXPORTERS))
    for module in Path(ui.__file__).parent.glob("*.py"):
        labels.update(re.findall(r'text="([^"{}]+)"', module.read_text(encoding="utf-8")))
    labels.update(getattr(bpy.types, menu).bl_label for menu in (
        "TOPBAR_MT_file", "TOPBAR_MT_file_import", "TOPBAR_MT_file_export", "VIEW3D_MT_view", "VIEW3D_MT_add",
        "VIEW3D_MT_armature_add"))
    labels.add(bpy.types.SpaceView3D.bl_rna.properties["show_region_ui"].name)
    return labels - {""}


def test_ui_labels_include_blender_menus_and_exclude_inventions(addon):
    """The label set itself: File, Import, Sidebar and Articulate's buttons are in it; an invented label is not."""
    labels = ui_labels(addon)
    assert {"File", "Import", "Sidebar", "Bake Chains", "Robot Cartesian Poses (.csv)", "Poses In", "Auto",
            "Automatic", "Universal Robots UR5 (CB3)"} <= labels
    assert "Bake All Chains" not in labels and "Import Robot" not in labels


@pytest.mark.parametrize("name", [*GUIDES, "reference"])
def test_bold_labels_are_labels_the_ui_shows(addon, name):
    """Each **bold** phrase of a guide or the reference is a label of the UI, or a menu path (A > B > C)
    of such labels."""
    labels = ui_labels(addon)
    bold = BOLD.findall(_without_code(_text(_page(name))))
    assert bold, f"{name}.md names no UI label in bold"
    if name == "reference":
        labels |= REFERENCE_TOPICS
    unknown = [b for b in bold if not all(part in labels for part in b.split(" > "))]
    assert not unknown, f"{name}.md: bold text the UI does not show: {unknown}"


def test_benchmark_tables_name_scripts_that_exist():
    """Each table of docs/benchmarks.md is headed by the bench/ script that prints it, and that script exists."""
    text = _text(_page("benchmarks"))
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert len(headings) >= 10
    for heading in headings:
        scripts = re.findall(r"`(bench/[\w/]+\.py)`", heading)
        assert scripts, f"benchmarks.md: {heading!r} names no script"
        for script in scripts:
            assert (REPO / script).is_file(), f"benchmarks.md names {script}: no such file"


# Every shell command of every page, and how the tests cover it. A command that cannot run here
# says why; the test below fails on a command that is in no list (nothing is skipped silently).
SH_BLOCK = re.compile(r"^ *```sh\n(.*?)^ *```", re.S | re.M)
RUN_HERE = "run as written by test_guide_commands_run_as_written"
NOT_HEADLESS = "not headless"
COMMANDS = {
    "make demo": "run by test_cli.py's demo tests (cli.py demo, the same command make demo runs via dev/demo.sh)",
    "make test": "CI's own command (.ci/run runs it in an empty folder); running it from a test would recurse",
    "make build": "run by test_make_builds_the_zip_the_install_page_installs",
    "blender --command extension build --source-dir . --output-dir dist":
        f"{NOT_HEADLESS}: needs the blender binary (make build runs the same builder through the bpy module)",
    "blender --command extension install-file --repo user_default --enable dist/articulate-0.1.0.zip":
        f"{NOT_HEADLESS}: needs the blender binary and installs into the user's Blender (test_packaging.py "
        "installs the zip with the same operator through the bpy module)",
    'ln -s "$PWD" ~/.config/blender/5.0/extensions/user_default/articulate':
        f"{NOT_HEADLESS}: changes the user's own Blender set-up",
    'mklink /D "%APPDATA%\\Blender Foundation\\Blender\\5.0\\extensions\\user_default\\articulate" "%CD%"':
        f"{NOT_HEADLESS}: Windows only, changes the user's own Blender set-up",
    ".venvs/5.0.1/bin/python cli.py bake shots/sh010.blend --armature Rig --frames 1-250 --out baked/sh010.blend "
    "--report reports/sh010.json": RUN_HERE,
    "blender -b shots/sh010.blend --python-exit-code 1 --python cli.py -- bake --armature Rig --frames 1-250 "
    "--out baked/sh010.blend --report reports/sh010.json": f"{NOT_HEADLESS}: needs the blender binary (the bpy "
                                                            "module form beside it is run)",
    ".venvs/5.0.1/bin/python cli.py demo --out out/demo": RUN_HERE,
    ".venvs/5.0.1/bin/python cli.py bake shots/sh010.blend --armature Rig --from-constraints --frames 1-250 "
    "--out baked/sh010.blend --report reports/sh010.json": RUN_HERE,
    ".venvs/5.0.1/bin/python cli.py bake shots/sh010.blend --armature Rig --from-constraints --frames 1-250:2 "
    "--solver fabrik --reduce-keys 1 --out baked/sh010.blend --report reports/sh010.json": RUN_HERE,
    'for f in shots/*.blend; do .venvs/5.0.1/bin/python cli.py bake "$f" --armature Rig --from-constraints '
    '--frames scene --solver chain --out-dir baked --report-dir reports || echo "$f: exit $?"; done': RUN_HERE,
    ".venvs/5.0.1/bin/python cli.py check robot.blend --armature Universal_Robots_UR5_CB3 --report check.json":
        RUN_HERE,
    ".venvs/5.0.1/bin/python cli.py check robot.blend --armature Universal_Robots_UR5_CB3 --frames 1-500 "
    "--singularity 0.02 --jump 0.3 --report check.csv": RUN_HERE,
    ".venvs/5.0.1/bin/python cli.py export robot.blend --armature Universal_Robots_UR5_CB3 --rate 125 "
    "--out ur5_trajectory.csv": RUN_HERE,
    ".venvs/5.0.1/bin/python cli.py export robot.blend --armature Universal_Robots_UR5_CB3 --out ur5_trajectory.mcap":
        RUN_HERE,
    ".venvs/5.0.1/bin/python cli.py trajectory robot.blend --armature Universal_Robots_UR5_CB3 --file "
    "ur5_trajectory.mcap --out robot_from_bag.blend": RUN_HERE,
    ".venvs/5.0.1/bin/python cli.py body take.blend --armature Metarig --head tracker.head --hand-l tracker.hand_l "
    "--hand-r tracker.hand_r --reference-frame 1 --out body.blend --report body.json": RUN_HERE,
    ".venvs/5.0.1/bin/python cli.py ik-to-fk shot.blend --armature rig --frames 1-120 --out fk.blend "
    "--report switch.json": RUN_HERE,
    ".venvs/5.0.1/bin/python cli.py fk-to-ik shot.blend --armature rig --frames 1-120 --out ik.blend": RUN_HERE,
    ".venvs/5.0.1/bin/python cli.py robot src/duo_description/urdf/duo.urdf.xacro --xacro-arg prefix:=duo_ "
    "--xacro-arg gripper:=false --out duo.blend":
        "run as written by test_xacro_import.py's test_cli_robot_runs_the_pipeline_guide_command (in the ROS "
        "workspace tests/xacro_cases.py writes)",
    ".venvs/5.0.1/bin/python cli.py bake scene.blend --armature Rig --frames 1-250 --from-constraints "
    "--out baked.blend --report report.json": RUN_HERE,
    "blender -b scene.blend --python-exit-code 1 --python cli.py -- bake --armature Rig --frames 1-250 "
    "--out baked.blend --report report.json": f"{NOT_HEADLESS}: needs the blender binary",
    ".venvs/openjd/bin/openjd check farm/openjd/bake.yaml": "run by tests/farm (test_template_passes_openjd_check)",
    ".venvs/openjd/bin/openjd run farm/openjd/bake.yaml -p ArticulateDir=$PWD -p Armature=Rig "
    "-p '{\"BlendFiles\": [\"/shots/sh010.blend\", \"/shots/sh020.blend\"]}' -p OutputDir=/shots/baked "
    "-p ReportDir=/shots/reports -p Python=$PWD/.venvs/5.0.1/bin/python":
        "run by tests/farm on generated shots (the command's /shots paths are the reader's)",
}


def shell_commands(text: str) -> list[str]:
    """The commands of a page's ``sh`` blocks, one string each: continuations joined, spaces squeezed,
    comments dropped, a ``for ... done`` loop one command with ``;`` between its lines."""
    commands = []
    for block in SH_BLOCK.findall(text):
        loop = []
        for line in block.replace("\\\n", " ").splitlines():
            command = " ".join(re.sub(r"(^|\s)#.*$", "", line).split())
            if not command:
                continue
            if loop or command.startswith("for "):
                loop.append(command)
                if command == "done":
                    commands.append(" ".join(part if part.endswith(("; do", "done")) else part + ";"
                                             for part in loop))
                    loop = []
                continue
            commands.append(command)
    return commands


def _all_commands() -> dict[str, str]:
    return {c: page for page in ("README.md", *(f"docs/{p}.md" for p in PAGES))
            for c in shell_commands(_text(REPO / page))}


def test_every_shell_command_is_run_or_listed_with_a_reason():
    """Each command of a page's sh blocks is run by a test (here or one named) or listed as not runnable
    here with the reason; the list names no command that left the pages."""
    found = _all_commands()
    unlisted = [f"{page}: {c}" for c, page in found.items() if c not in COMMANDS]
    assert not unlisted, "commands no test runs or lists:\n" + "\n".join(unlisted)
    assert not set(COMMANDS) - set(found), f"listed but on no page: {sorted(set(COMMANDS) - set(found))}"


SHOT_SCRIPT = """
import importlib, os, sys
here = os.getcwd()  # before bpy: Blender 4.2 and 4.5 change the working folder on import
sys.path.insert(0, {repo!r})
import bpy
import cli
demo = importlib.import_module(f"{{cli.ensure_addon().__name__}}.operators.demo")
for name, kind in (("sh010", "ik"), ("sh020", "chains")):
    demo.build_demo_scene(frames=250)
    arm = bpy.data.objects["Arm"]
    arm.name = "Rig"
    if kind == "ik":
        arm.articulate.chains.clear()
        ik = arm.pose.bones["Wrist"].constraints.new("IK")
        ik.target, ik.chain_count = bpy.data.objects["Target"], 3
    bpy.ops.wm.save_as_mainfile(filepath=os.path.join(here, "shots", f"{{name}}.blend"))
# The reference's example: the chain-rigged shot.
bpy.ops.wm.save_as_mainfile(filepath=os.path.join(here, "scene.blend"))
"""


# The files step 4 of the pipeline guide names, built as it says: robot.blend, the UR5 (Add Robot) with the
# bundled joint trajectory imported (the roboticist's guide); take.blend, Rigify's basic human metarig named
# Metarig with the bundled tracker take imported, roles detected, aligned and its arms posed to the trackers
# at the reference frame by a chain per arm and Solve Current Frame, the chains removed (the full-body guide's
# steps 1-3); shot.blend, the rig Rigify generates from the basic human metarig, its IK hands moving over
# frames 1-120. Run under the guide's Python (5.0.1): Rigify leaves state that hangs or crashes older bpy
# modules at exit, so the script leaves through os._exit.
GUIDE_FILES_SCRIPT = """
import os, sys
sys.path.insert(0, {repo!r})
import bpy
import addon_utils
import cli
cli.ensure_addon()
bpy.ops.wm.read_homefile(use_empty=True)
assert bpy.ops.articulate.robot_add(preset="ur5") == {{"FINISHED"}}
assert bpy.context.object.name == "Universal_Robots_UR5_CB3", bpy.context.object.name
path = {repo!r} + "/presets/examples/ur5_joint_trajectory.csv"
assert bpy.ops.articulate.trajectory_import(filepath=path) == {{"FINISHED"}}
bpy.ops.wm.save_as_mainfile(filepath="robot.blend")

addon_utils.enable("rigify", default_set=True)
bpy.ops.wm.read_homefile(use_empty=True)
bpy.ops.object.armature_basic_human_metarig_add()
rig = bpy.context.object
rig.name = "Metarig"
assert bpy.ops.articulate.body_detect_roles() == {{"FINISHED"}}
path = {repo!r} + "/data/mocap/cmu_131_01_trackers.csv"
assert bpy.ops.articulate.trackers_import(filepath=path) == {{"FINISHED"}}
scene, body = bpy.context.scene, rig.articulate.body
timing = (round(scene.render.fps / scene.render.fps_base, 2), scene.frame_start, scene.frame_end, body.reference_frame)
assert timing == (30, 1, 75, 1), timing
assert (body.head.name, body.hand_l.name, body.hand_r.name) == ("tracker.head", "tracker.hand_l", "tracker.hand_r")
assert bpy.ops.articulate.body_align() == {{"FINISHED"}}
scene.frame_set(body.reference_frame)
for side, tracker in (("L", body.hand_l), ("R", body.hand_r)):
    bpy.ops.object.mode_set(mode="POSE")
    rig.data.bones.active = rig.data.bones["hand." + side]
    bpy.ops.object.mode_set(mode="OBJECT")
    assert bpy.ops.articulate.chain_add() == {{"FINISHED"}}
    chain = rig.articulate.chains[-1]
    chain.chain_length, chain.target = 3, tracker
assert bpy.ops.articulate.solve_frame() == {{"FINISHED"}}
while rig.articulate.chains:
    assert bpy.ops.articulate.chain_remove() == {{"FINISHED"}}
bpy.ops.wm.save_as_mainfile(filepath="take.blend")

bpy.ops.wm.read_homefile(use_empty=True)
bpy.ops.object.armature_basic_human_metarig_add()
assert bpy.ops.pose.rigify_generate() == {{"FINISHED"}} and bpy.context.object.name == "rig"
rig = bpy.context.object
for name, move in (("hand_ik.L", (0.1, -0.2, 0.25)), ("hand_ik.R", (-0.05, -0.25, 0.3))):
    bone = rig.pose.bones[name]
    for frame, share in ((1, 0.0), (60, 1.0), (120, 0.3)):
        bone.location = [share * m for m in move]
        bone.keyframe_insert("location", frame=frame)
bpy.ops.wm.save_as_mainfile(filepath="shot.blend")
sys.stdout.flush()
os._exit(0)
"""


# The environments dev/envs.sh made: ARTICULATE_VENVS where CI points it (a clone tested in a temporary
# folder uses the checkout's), else this checkout's .venvs.
VENVS = Path(os.environ.get("ARTICULATE_VENVS") or REPO / ".venvs")


@pytest.fixture(scope="module")
def guide_folder(tmp_path_factory) -> Path:
    """A folder laid out as the pipeline guide's reader has it: cli.py and .venvs of this checkout, and
    shots/sh010.blend (the three-bone arm rigged with an IK constraint, armature Rig, 250 frames) and
    shots/sh020.blend (the same arm with an Articulate chain); robot.blend, take.blend and shot.blend as
    GUIDE_FILES_SCRIPT builds them."""
    folder = tmp_path_factory.mktemp("guide")
    (folder / "cli.py").symlink_to(REPO / "cli.py")
    (folder / ".venvs").symlink_to(VENVS)
    (folder / "shots").mkdir()
    env = {**os.environ, "BLENDER_USER_RESOURCES": str(folder / "user")}
    done = subprocess.run([sys.executable, "-c", SHOT_SCRIPT.format(repo=str(REPO))], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    python = VENVS / "5.0.1" / "bin" / "python"
    if not python.is_file():
        pytest.fail(f"{python} is missing: run dev/envs.sh 5.0.1")
    done = subprocess.run([str(python), "-c", GUIDE_FILES_SCRIPT.format(repo=str(REPO))], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return folder


# What each command run here must print (numbers the guides quote), beside exiting 0.
QUOTED = {
    ".venvs/5.0.1/bin/python cli.py demo --out out/demo": ["articulate: baked 120/120 frames of Metarig converged in"],
    ".venvs/5.0.1/bin/python cli.py bake shots/sh010.blend --armature Rig --from-constraints --frames 1-250 "
    "--out baked/sh010.blend --report reports/sh010.json": ["articulate: 1 chain(s) from IK constraints"],
    ".venvs/5.0.1/bin/python cli.py check robot.blend --armature Universal_Robots_UR5_CB3 --report check.json":
        ["articulate: 0 of 5 frames flagged (1..5, the trajectory from ur5_joint_trajectory.csv)"],
    ".venvs/5.0.1/bin/python cli.py check robot.blend --armature Universal_Robots_UR5_CB3 --frames 1-500 "
    "--singularity 0.02 --jump 0.3 --report check.csv":
        ["articulate: 0 of 500 frames flagged (1..500, the scene's range)"],
    ".venvs/5.0.1/bin/python cli.py export robot.blend --armature Universal_Robots_UR5_CB3 --rate 125 "
    "--out ur5_trajectory.csv": ["Wrote 51 samples of 6 joints", "articulate: wrote ur5_trajectory.csv"],
    ".venvs/5.0.1/bin/python cli.py export robot.blend --armature Universal_Robots_UR5_CB3 --out ur5_trajectory.mcap":
        ["Wrote 5 samples of 6 joints", "articulate: wrote ur5_trajectory.mcap"],
    ".venvs/5.0.1/bin/python cli.py trajectory robot.blend --armature Universal_Robots_UR5_CB3 --file "
    "ur5_trajectory.mcap --out robot_from_bag.blend":
        ["articulate: keyed ur5_trajectory.mcap on Universal_Robots_UR5_CB3, frames 1-5 at 10 fps",
         "(/joint_states, JointState, timed by header stamps)"],
    # the full-body guide's panel line for its picture, to the digit, and no warning but the jumps
    ".venvs/5.0.1/bin/python cli.py body take.blend --armature Metarig --head tracker.head --hand-l tracker.hand_l "
    "--hand-r tracker.hand_r --reference-frame 1 --out body.blend --report body.json":
        ["articulate: 75 frames, head and hands within 0.0001 mm of their goals where reachable; 89.1 mm from the "
         "trackers in playback, calibration offsets (up to 89.1 mm) included, 3 tracker jumps",
         "articulate: warning: 3 tracker jump(s)"],
    ".venvs/5.0.1/bin/python cli.py ik-to-fk shot.blend --armature rig --frames 1-120 --out fk.blend "
    "--report switch.json": ["articulate: ik-to-fk on 4 limb(s), frames 1-120: limb bones within 0.000246 mm of "
                             "the pose they had"],
    ".venvs/5.0.1/bin/python cli.py fk-to-ik shot.blend --armature rig --frames 1-120 --out ik.blend":
        ["articulate: fk-to-ik on 4 limb(s), frames 1-120: limb bones within 0.00226 mm of the pose they had"],
}
# Commands that exit other than 0 as the guides say: body on the bundled take warns of its 3 tracker jumps.
EXIT_CODES = {".venvs/5.0.1/bin/python cli.py body take.blend --armature Metarig --head tracker.head "
              "--hand-l tracker.hand_l --hand-r tracker.hand_r --reference-frame 1 --out body.blend "
              "--report body.json": 3}


@pytest.mark.slow
def test_guide_commands_run_as_written(guide_folder):
    """The commands marked as run here, exactly as the pages print them (with this checkout's .venvs/5.0.1
    standing for the reader's Python), in a folder holding the shots they name: each exits 0, writes
    what it names, and prints what the pages quote. The first bake (no --from-constraints) is run on
    the chain-rigged shot: on the IK-constraint shot it exits 2, as the guide says."""
    python = VENVS / "5.0.1" / "bin" / "python"
    if not python.is_file():
        pytest.fail(f"{python} is missing: run dev/envs.sh 5.0.1")
    env = {**os.environ, "BLENDER_USER_RESOURCES": str(guide_folder / "user")}
    runs = [c for c, how in COMMANDS.items() if how == RUN_HERE]
    assert len(runs) >= 12
    for command in runs:
        shell = command
        if "--from-constraints" not in command and "shots/sh010.blend" in command:
            plain = subprocess.run(["bash", "-c", command], cwd=guide_folder, env=env, capture_output=True,
                                   text=True, timeout=600)
            assert plain.returncode == 2, plain.stdout[-2000:] + plain.stderr[-2000:]
            shell = command.replace("shots/sh010.blend", "shots/sh020.blend")
        proc = subprocess.run(["bash", "-c", shell], cwd=guide_folder, env=env, capture_output=True, text=True,
                              timeout=600)
        output = proc.stdout + proc.stderr
        failed = proc.returncode != EXIT_CODES.get(command, 0) or ": exit " in proc.stdout  # the loop echoes
        assert not failed, f"{command}: exit {proc.returncode}\n{output[-3000:]}"  # a file's failure
        for quoted in QUOTED.get(command, []):
            assert quoted in output, f"{command}: does not print {quoted!r}\n{output[-2000:]}"
        for token in re.findall(r"--(?:out|report) (\S+)", shell):
            assert (guide_folder / token).exists(), f"{command}: wrote no {token}"
    for name in ("sh010", "sh020"):
        assert (guide_folder / "baked" / f"{name}.blend").is_file(), name
        assert (guide_folder / "reports" / f"{name}.json").is_file(), name
    _check_robot_and_body_outputs(guide_folder)


def _check_robot_and_body_outputs(folder: Path) -> None:
    """What step 4 of the pipeline guide and the full-body guide say its commands write."""
    rows = (folder / "check.csv").read_text().splitlines()
    assert len(rows) == 1 + 500, len(rows)
    samples = (folder / "ur5_trajectory.csv").read_text().splitlines()
    assert len(samples) == 1 + 51 and samples[0].startswith("time,shoulder_pan_joint")
    body = json.loads((folder / "body.json").read_text())
    assert body["warnings"] == [] and body["frames"] == list(range(1, 76))
    assert max(body["calibration_offsets_m"].values()) < 0.1  # no offset warning: the arms were posed
    assert {k: v for k, v in body["jumps"].items() if v} == {"hand_r": [60, 61, 66]}
    switch = json.loads((folder / "switch.json").read_text())
    assert switch["direction"] == "ik_to_fk" and len(switch["limbs"]) == 4
    assert max(limb["max_error_m"] for limb in switch["limbs"]) < 1e-3
