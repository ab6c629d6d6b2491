# SPDX-License-Identifier: GPL-3.0-or-later
"""The farm jobs: the OpenJD template passes `openjd check` and `openjd run` bakes every file for
real; the Flamenco job type parses under Node and authors the same command lines.

The OpenJD job's Python is a recording shim around this test's own interpreter (a Python with
the bpy module): it notes the arguments OpenJD ran, then execs the interpreter with them
unchanged, so the Flamenco job type's commands are compared with what OpenJD really ran.
"""

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from baked_keys import fcurve_keys, report_without_timings

REPO_ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = REPO_ROOT / "farm" / "openjd" / "bake.yaml"
JOB_TYPE = REPO_ROOT / "farm" / "flamenco" / "articulate_bake.js"
COMPILE = Path(__file__).with_name("compile_flamenco.js")

SHOTS = {"shot1": 20, "shot2": 30, "shot3": 40, "rigged": 25}  # file -> frames of its scene
RIGGED = "rigged"  # rigged with an IK constraint, no chain: the jobs' --from-constraints converts it
BONES = ["Shoulder", "Elbow", "Wrist"]


def recording_python(folder: Path) -> tuple[Path, Path]:
    """A shim that records its arguments (one NUL-separated file per run) and execs this Python."""
    runs = folder / "argv"
    runs.mkdir()
    shim = folder / "python"
    shim.write_text(f'#!/bin/sh\nprintf "%s\\0" "$@" > "$(mktemp "{runs}/run.XXXXXX")"\n'
                    f'exec "{sys.executable}" "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    return shim, runs


def recorded_runs(runs: Path) -> list[list[str]]:
    """Every recorded argument list (each argument ends with a NUL)."""
    return [[a.decode() for a in p.read_bytes().split(b"\0")[:-1]] for p in sorted(runs.iterdir())]


def openjd_run(openjd: Path, user_folder: Path, params: dict, *extra: str) -> subprocess.CompletedProcess:
    """``openjd run`` of the template with ``params`` (as one JSON document)."""
    env = {**os.environ, "BLENDER_USER_RESOURCES": str(user_folder)}
    return subprocess.run([str(openjd), "run", str(TEMPLATE), "--job-param", json.dumps(params), *extra],
                          env=env, capture_output=True, text=True, timeout=600)


def job_params(blends: list[Path], out: Path, python: Path, **overrides) -> dict:
    params = {"BlendFiles": [str(b) for b in blends], "Armature": "Arm", "OutputDir": str(out / "baked"),
              "ReportDir": str(out / "reports"), "ArticulateDir": str(REPO_ROOT), "Python": str(python)}
    return {**params, **overrides}


@pytest.fixture(scope="module")
def job(openjd, scenes, user_folder, tmp_path_factory):
    """One `openjd run` of three scenes with the defaults (each file's frame range, each chain's solver)."""
    out = tmp_path_factory.mktemp("job")
    python, runs = recording_python(out)
    params = job_params([scenes / f"{name}.blend" for name in SHOTS], out, python)
    proc = openjd_run(openjd, user_folder, params)
    return {"proc": proc, "out": out, "params": params, "argv": recorded_runs(runs)}


def test_template_passes_openjd_check(openjd):
    """`openjd check` validates the template against the 2023-09 schema and its extensions."""
    proc = subprocess.run([str(openjd), "check", str(TEMPLATE)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "passes validation" in proc.stdout


def test_job_runs_one_task_per_file(job):
    """The job succeeds and ran cli.py bake once per file, on that file."""
    proc = job["proc"]
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "All actions completed successfully" in proc.stdout
    baked = sorted(argv[argv.index("bake") + 1] for argv in job["argv"])
    assert baked == sorted(job["params"]["BlendFiles"])
    assert all(argv[0] == str(REPO_ROOT / "cli.py") for argv in job["argv"])
    assert all("--from-constraints" in argv for argv in job["argv"])


def test_a_shot_rigged_with_ik_constraints_bakes_on_the_farm(job):
    """The shot rigged with an IK constraint (no chain) bakes: its task converted the constraint into a chain
    (a plain `cli.py bake` of that file exits 2, see below)."""
    report = json.loads((job["out"] / "reports" / f"{RIGGED}.json").read_text())
    assert [c["chain"] for c in report["chains"]] == ["Wrist IK"] and report["missed_frames"] == []
    assert "1 chain(s) from IK constraints" in job["proc"].stdout


def test_without_from_constraints_a_rigged_shot_exits_2(scenes, user_folder, tmp_path):
    """Why the jobs pass --from-constraints: without it the IK-constraint shot has no chain to bake (exit 2)."""
    env = {**os.environ, "BLENDER_USER_RESOURCES": str(user_folder)}
    proc = subprocess.run([sys.executable, str(REPO_ROOT / "cli.py"), "bake", str(scenes / f"{RIGGED}.blend"),
                           "--armature", "Arm", "--out", str(tmp_path / "out.blend")],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert not (tmp_path / "out.blend").exists()


@pytest.mark.parametrize("name", SHOTS)
def test_every_task_writes_its_blend_and_report(job, name):
    """Each file's task wrote <name>.blend with keys on every frame of its own range, and <name>.json."""
    out = job["out"]
    report = json.loads((out / "reports" / f"{name}.json").read_text())
    frames = list(range(1, SHOTS[name] + 1))
    assert report["frames"] == frames and report["missed_frames"] == []
    assert report["chains"][0]["bones"] == BONES and report["measured_by"] == "playback"
    keys = fcurve_keys(out / "baked" / f"{name}.blend")
    for bone in BONES:
        for index in range(4):
            raw = keys[next(k for k in keys if k[1] == f'pose.bones["{bone}"].rotation_quaternion' and k[2] == index)]
            co = np.frombuffer(raw, dtype=np.float32)[: 2 * len(frames)].reshape(-1, 2)  # "co" comes first
            assert co[:, 0].tolist() == [float(f) for f in frames]


@pytest.mark.parametrize(("name", "options"), [("shot2", []), (RIGGED, ["--from-constraints"])])
def test_farm_bake_equals_a_local_bake(job, scenes, user_folder, tmp_path, name, options):
    """A task's outputs are the ones `cli.py bake` gives on this machine: same keys, same report (on a shot
    with chains, --from-constraints changes nothing; on the rigged shot it is the pipeline guide's command)."""
    local_blend, local_report = tmp_path / f"{name}.blend", tmp_path / f"{name}.json"
    env = {**os.environ, "BLENDER_USER_RESOURCES": str(user_folder)}
    proc = subprocess.run([sys.executable, str(REPO_ROOT / "cli.py"), "bake", str(scenes / f"{name}.blend"),
                           "--armature", "Arm", *options, "--out", str(local_blend), "--report", str(local_report)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = job["out"]
    assert report_without_timings(out / "reports" / f"{name}.json") == report_without_timings(local_report)
    assert fcurve_keys(out / "baked" / f"{name}.blend") == fcurve_keys(local_blend)


def test_missed_frames_fail_the_task_with_exit_3(openjd, scenes, user_folder, tmp_path):
    """A scene whose target is out of reach: the task fails (exit 3), its .blend and report are written."""
    far = str(scenes / "far.blend")
    params = job_params([scenes / "far.blend"], tmp_path, Path(sys.executable), Frames="1-5", Solver="dls")
    proc = openjd_run(openjd, user_folder, params, "--task-param", f"BlendFile={far}")
    assert proc.returncode != 0
    assert "exited with code: 3" in proc.stdout, proc.stdout[-4000:]
    report = json.loads((tmp_path / "reports" / "far.json").read_text())
    assert report["frames"] == [1, 2, 3, 4, 5] and report["missed_frames"] == [1, 2, 3, 4, 5]
    assert report["chains"][0]["solver"] == "dls"
    assert (tmp_path / "baked" / "far.blend").is_file()


def test_a_file_that_is_not_a_blend_fails_with_exit_2(openjd, user_folder, tmp_path):
    """Bad input: the task fails with exit 2 and one line naming the file, no traceback."""
    junk = tmp_path / "notes.blend"
    junk.write_text("not a blend file\n")
    params = job_params([junk], tmp_path, Path(sys.executable))
    proc = openjd_run(openjd, user_folder, params, "--task-param", f"BlendFile={junk}")
    assert proc.returncode != 0
    assert "exited with code: 2" in proc.stdout, proc.stdout[-4000:]
    assert f"articulate: error: {junk} is not a .blend file" in proc.stdout
    assert "Traceback" not in proc.stdout
    assert not (tmp_path / "baked").exists()


def compile_flamenco(node: str, settings: dict) -> subprocess.CompletedProcess:
    """The Flamenco job type's compileJob() run by Node on a job with ``settings``."""
    return subprocess.run([node, str(COMPILE), str(JOB_TYPE), json.dumps({"settings": settings})],
                          capture_output=True, text=True, timeout=60)


def flamenco_settings(params: dict, **overrides) -> dict:
    """Flamenco settings equal to an OpenJD job's parameters (defaults where the job used them)."""
    settings = {"blendfile": params["BlendFiles"][0], "blendfiles": "\n".join(params["BlendFiles"][1:]),
                "armature": params["Armature"], "frames": "scene", "solver": "chain",
                "output_dir": params["OutputDir"], "report_dir": params["ReportDir"],
                "articulate_dir": params["ArticulateDir"], "exe": params["Python"], "exe_args": ""}
    return {**settings, **overrides}


def test_node_parses_the_flamenco_job_type(node):
    """`node --check` accepts the job type's JavaScript."""
    proc = subprocess.run([node, "--check", str(JOB_TYPE)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_flamenco_commands_equal_the_openjd_ones(node, job):
    """With the same settings, Flamenco's tasks run exactly the commands OpenJD ran, one task per file."""
    proc = compile_flamenco(node, flamenco_settings(job["params"]))
    assert proc.returncode == 0, proc.stderr
    compiled = json.loads(proc.stdout)
    assert [s["key"] for s in compiled["job_type"]["settings"]][:2] == ["blendfile", "blendfiles"]
    tasks = compiled["tasks"]
    assert [t["type"] for t in tasks] == ["blender"] * len(SHOTS)
    flamenco = sorted([c["parameters"]["exe"], *c["parameters"]["args"]] for t in tasks for c in t["commands"])
    openjd_ran = sorted([job["params"]["Python"], *argv] for argv in job["argv"])
    assert flamenco == openjd_ran


def test_flamenco_runs_cli_under_blender_by_default(node, job):
    """Defaults run Blender: `{blender} -b --factory-startup --python-exit-code 1 --python cli.py -- bake ...`."""
    settings = flamenco_settings(job["params"])
    declared = {s["key"]: s for s in json.loads(compile_flamenco(node, settings).stdout)["job_type"]["settings"]}
    settings.update(exe=declared["exe"]["default"], exe_args=declared["exe_args"]["default"])
    command = json.loads(compile_flamenco(node, settings).stdout)["tasks"][0]["commands"][0]["parameters"]
    assert command["exe"] == "{blender}"
    assert command["args"][:7] == ["-b", "--factory-startup", "--python-exit-code", "1", "--python",
                                   f"{REPO_ROOT}/cli.py", "--"]


@pytest.mark.parametrize(("blendfile", "blendfiles", "error"), [
    ("/a/shot.blend", "/b/shot.blend", "two files are named shot.blend"),
    ("", " ; \n", "no .blend file to bake"),
])
def test_flamenco_job_type_refuses_bad_file_lists(node, job, blendfile, blendfiles, error):
    """Two files with one name (their outputs would collide) or no file at all: the job does not compile."""
    proc = compile_flamenco(node, flamenco_settings(job["params"], blendfile=blendfile, blendfiles=blendfiles))
    assert proc.returncode != 0 and error in proc.stderr


def test_job_solver_choices_are_the_clis():
    """Both job types offer exactly cli.py's --solver choices (a solver added to the CLI must reach the farm)."""
    import re

    sys.path.insert(0, str(REPO_ROOT))
    import cli

    expected = [cli.KEEP_SOLVER, *cli.SOLVERS]
    openjd = re.search(r"allowedValues: \[([^\]]*)\]", TEMPLATE.read_text()).group(1)
    flamenco = re.search(r"const SOLVERS = \[([^\]]*)\]", JOB_TYPE.read_text()).group(1)
    assert [v.strip() for v in openjd.split(",")] == expected
    assert [v.strip().strip('"') for v in flamenco.split(",")] == expected
