# SPDX-License-Identifier: GPL-3.0-or-later
"""Robots in Blender (issue 12): Cartesian CSV -> bake -> export, judged by the URDF's forward kinematics.

Run from the repo root with a bpy venv:
``.venvs/5.0.1/bin/python bench/bench_robot_bake.py [--frames 500] [--robots ur5,panda,iiwa,rail,dual,locked]
[--json] [--quick] [--repeat N]`` (also ``.venvs/4.5.15`` and ``.venvs/4.2.23``; ``--quick`` is 100 frames).

Protocol. Per robot, a fresh file: the rig built by the add-on's own operators (``robot_add`` for
the UR5, Panda and KUKA iiwa 14 presets; ``robot_import_urdf`` for three URDFs the tests write,
``tests/robot_cases.py``: a 6R arm on a 1.6 m prismatic rail with a continuous joint and a joint
limited to +-7 rad, tilted axes and rotated origins; a two-arm tree whose torso joint both
arms share; and that 6R arm on a base joint locked at one value, as a URDF locks a joint). A
smooth joint path of N frames inside the limits (fixed seed; on the rail arm the rail slides
1.2 m, the continuous joint turns 7 rad and the wide joint passes pi + 0.5) gives the
tool poses by the URDF's forward kinematics, written as a pose CSV (time, x, y, z, qw, qx, qy, qz)
and imported with ``cartesian_import`` onto each chain's target; the rig starts at the path's
first pose.

- Articulate: ``articulate.bake`` over 1..N with default settings (solver Auto: DLS on the stored
  model; chains sharing joints solved together), timed.
- Blender: the same rig and keyed targets; an IK constraint on each tool bone (use_tail, so its
  tail goes to an empty parented to the target at the tool bone's length along its Y axis, and
  use_rotation on; chain_count down to the robot's root; Blender's default 500 iterations), the
  bones' IK settings as the rig has them (single-axis hinges, IK limits where a joint's range is
  under 2 pi; a prismatic joint is locked, as Blender's IK cannot slide), then
  ``nla.bake(visual_keying=True, use_current_action=True)`` of the chain bones, timed; then the IK
  constraints muted so the keys are what plays.

Both are exported with ``articulate.trajectory_export`` (CSV, URDF joint order) and judged by the
same code: forward kinematics of the URDF model (not of the rig) against the tool poses.
Columns: share of frames within 1e-4 m and 1e-3 rad on every chain (goal >= 99.9 %), the largest
position and rotation error, the largest change of any joint between frames (goal <= 0.1 rad),
the largest change of that change (``max acc`` [rad/frame^2 or m/frame^2]: a joint's velocity
spiking, which a robot's acceleration limits would refuse; the paths' own are at most 0.005),
exported values outside the URDF limits (goal 0), and milliseconds per frame of the bake call,
wall clock and the process's CPU time (issue 23's goals: <= 3 for 7-joint arms, <= 5 for the
15-joint tree). On a shared machine, ``--repeat N`` bakes each robot and route N times and keeps
the least times.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="articulate-bench-"))
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import bpy  # noqa: E402
import numpy as np  # noqa: E402
from blender_output import stdout_to_stderr  # noqa: E402
from robot_cases import dual_arm_urdf, locked_arm_urdf, rail_arm_urdf, smooth_joint_path  # noqa: E402

import cli  # noqa: E402

POS_TOL, ROT_TOL = 1e-4, 1e-3  # [m], [rad]
STEP_GOAL = 0.1  # [rad or m] largest joint change between frames
QUICK_FRAMES = 100


@dataclass(frozen=True)
class Case:
    """A robot of the benchmark: how its rig is made and how its path moves."""

    name: str
    preset: str = ""  # robot_add preset, or
    urdf: str = ""  # URDF text for robot_import_urdf
    seed: int = 0
    amplitude: float = 0.4  # share of each joint's range (capped at 2 pi) the path sweeps


CASES = {
    "ur5": Case("ur5", preset="ur5", seed=11),
    "panda": Case("panda", preset="panda", seed=12),
    "iiwa": Case("iiwa", preset="lbr_iiwa_14_r820", seed=13),
    "rail": Case("rail", urdf=rail_arm_urdf(), seed=14, amplitude=0.15),
    "dual": Case("dual", urdf=dual_arm_urdf(), seed=15, amplitude=0.15),
    "locked": Case("locked", urdf=locked_arm_urdf(), seed=16, amplitude=0.3),
}



class Bench:
    """The add-on's modules, imported once it is enabled."""

    def __init__(self) -> None:
        import importlib

        addon = cli.ensure_addon()

        def mod(name: str):
            return importlib.import_module(f"{addon.__name__}.{name}")

        self.core = mod("ik_core")
        self.rotations = mod("ik_core.model.rotations")
        self.model_mod = mod("ik_core.robots.model")
        self.robot = mod("operators.bridge.robot")

    def build(self, case: Case, tmp: Path) -> bpy.types.Object:
        """A fresh file holding the case's rig; returns it (active)."""
        bpy.ops.wm.read_homefile(use_empty=True)
        if case.preset:
            result = bpy.ops.articulate.robot_add(preset=case.preset)
        else:
            path = tmp / f"{case.name}.urdf"
            path.write_text(case.urdf)
            result = bpy.ops.articulate.robot_import_urdf(filepath=str(path))
        if "FINISHED" not in result:
            raise RuntimeError(f"{case.name}: building the rig returned {result}")
        return bpy.context.object

    def path(self, case: Case, model, frames: int) -> tuple[np.ndarray, object]:
        """(N, dof) joint path on the whole tree's skeleton, and that skeleton."""
        sk = model.skeleton
        rng = np.random.default_rng(case.seed)
        lo, hi = np.maximum(sk.lower, -2.0), np.minimum(sk.upper, 2.0)
        start = rng.uniform(lo + 0.3 * (hi - lo), hi - 0.3 * (hi - lo))
        q = smooth_joint_path(sk.lower, sk.upper, frames, seed=case.seed, start=start, amplitude=case.amplitude)
        names = list(sk.moving_joint_names)
        if case.name == "rail":  # every joint kind pushed past what a bone-derived rig allows
            q[:, names.index("rail")] = np.linspace(-0.6, 0.6, frames)
            q[:, names.index("turn")] = np.linspace(0.4, 7.4, frames)
            q[:, names.index("shoulder")] = np.linspace(0.8, 4.6, frames)
        return q, sk

    def write_csv(self, path: Path, poses: np.ndarray, fps: float) -> None:
        quats = self.rotations.matrix_to_quat(poses[:, :3, :3])
        rows = ["time,x,y,z,qw,qx,qy,qz"]
        for k, (T, q) in enumerate(zip(poses, quats)):
            rows.append(",".join(repr(float(v)) for v in (k / fps, *T[:3, 3], *q)))
        path.write_text("\n".join(rows) + "\n")

    def prepare(self, case: Case, frames: int, tmp: Path) -> tuple[bpy.types.Object, object, dict]:
        """The rig with every chain's target keyed along the path's tool poses, posed at its first frame."""
        arm = self.build(case, tmp)
        model = self.model_mod.RobotModel.from_json(arm["articulate_robot_model"])
        q, sk = self.path(case, model, frames)
        goals = {c.tool_link: self.core.effector_poses(sk, q, c.tool_link) for c in arm.articulate.chains}
        self.robot.set_joint_values(arm, sk, q[0])
        scene = bpy.context.scene
        scene.frame_start, scene.frame_end = 1, frames
        fps = scene.render.fps / scene.render.fps_base
        for chain in arm.articulate.chains:
            csv = tmp / f"{case.name}-{chain.tool_link}.csv"
            self.write_csv(csv, goals[chain.tool_link], fps)
            result = bpy.ops.articulate.cartesian_import(filepath=str(csv), chain=chain.name, start_frame=1,
                                                         bake=False)
            if "FINISHED" not in result:
                raise RuntimeError(f"{case.name}: cartesian_import returned {result}")
        return arm, model, goals

    def exported(self, arm: bpy.types.Object, frames: int, tmp: Path) -> tuple[list[str], np.ndarray]:
        """The rig's exported joint trajectory: URDF joint names and (N, J) values."""
        out = tmp / f"{arm.name}-export.csv"
        bpy.context.view_layer.objects.active = arm
        if "FINISHED" not in bpy.ops.articulate.trajectory_export(filepath=str(out)):
            raise RuntimeError("trajectory_export failed")
        with open(out) as f:
            header = f.readline().strip().split(",")[1:]
        return header, np.loadtxt(out, delimiter=",", skiprows=1, ndmin=2)[:, 1:]

    def judge(self, model, names: list[str], values: np.ndarray, goals: dict) -> dict:
        """Errors by forward kinematics of the URDF model, steps and limits of the exported values."""
        sk = model.skeleton
        q = np.zeros((len(values), sk.dof))
        column = {n: k for k, n in enumerate(names)}
        for i, n in enumerate(sk.moving_joint_names):
            if n in column:
                q[:, i] = values[:, column[n]]
        within = np.ones(len(values), dtype=bool)
        pos_max = rot_max = 0.0
        for tool, goal in goals.items():
            got = self.core.effector_poses(sk, q, tool)
            pos = np.linalg.norm(got[:, :3, 3] - goal[:, :3, 3], axis=-1)
            rel = np.swapaxes(got[:, :3, :3], -1, -2) @ goal[:, :3, :3]
            rot = np.arccos(np.clip((np.trace(rel, axis1=-2, axis2=-1) - 1.0) / 2.0, -1.0, 1.0))
            within &= (pos <= POS_TOL) & (rot <= ROT_TOL)
            pos_max, rot_max = max(pos_max, float(pos.max())), max(rot_max, float(rot.max()))
        lower, upper = model.limits()
        order = [list(model.joint_order).index(n) for n in names]
        lower, upper = np.asarray(lower)[order], np.asarray(upper)[order]
        outside = (values < lower - 1e-9) | (values > upper + 1e-9)
        return {"within_share": float(within.mean()), "max_pos_mm": pos_max * 1000.0, "max_rot_mrad": rot_max * 1000.0,
                "max_step": float(np.abs(np.diff(values, axis=0)).max()) if len(values) > 1 else 0.0,
                "max_accel": float(np.abs(np.diff(values, 2, axis=0)).max()) if len(values) > 2 else 0.0,
                "outside_limits": int(outside.sum())}

    def run_ours(self, case: Case, frames: int, tmp: Path) -> dict:
        arm, model, goals = self.prepare(case, frames, tmp)
        report = tmp / f"{case.name}-report.json"
        t0, c0 = time.perf_counter(), time.process_time()
        result = bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=frames,
                                         report_path=str(report))
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        if "FINISHED" not in result:
            raise RuntimeError(f"{case.name}: articulate.bake returned {result}")
        data = json.loads(report.read_text())
        names, values = self.exported(arm, frames, tmp)
        row = {"route": "articulate", "seconds": seconds, "cpu_seconds": cpu,
               "missed_reported": len(data["missed_frames"]), "solvers": sorted({c["solver"] for c in data["chains"]}),
               "split_seconds": data.get("seconds")}
        return {**row, **self.judge(model, names, values, goals), "dof": len(names)}

    def run_blender(self, case: Case, frames: int, tmp: Path) -> dict:
        arm, model, goals = self.prepare(case, frames, tmp)
        bones: set[str] = set()
        constraints = []
        for chain in arm.articulate.chains:
            chain.enabled = False
            tool = arm.pose.bones[chain.tip_bone]
            reach = bpy.data.objects.new(f"{chain.target.name}.tail", None)
            bpy.context.scene.collection.objects.link(reach)
            reach.parent = chain.target
            reach.location = (0.0, tool.bone.length, 0.0)
            con = tool.constraints.new("IK")
            con.target, con.use_tail, con.use_rotation = reach, True, True
            count, bone = 0, tool
            while bone is not None:
                bones.add(bone.name)
                count, bone = count + 1, bone.parent
            con.chain_count = count
            constraints.append(con)
        scene = bpy.context.scene
        scene.frame_set(1)
        bpy.context.view_layer.objects.active = arm
        bpy.ops.object.mode_set(mode="POSE")
        on_pose_bone = "select" in bpy.types.PoseBone.bl_rna.properties  # 5.0 moved selection off Bone
        for pb in arm.pose.bones:
            (pb if on_pose_bone else pb.bone).select = pb.name in bones
        t0, c0 = time.perf_counter(), time.process_time()
        result = bpy.ops.nla.bake(frame_start=1, frame_end=frames, only_selected=True, visual_keying=True,
                                  clear_constraints=False, bake_types={"POSE"}, use_current_action=True)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        bpy.ops.object.mode_set(mode="OBJECT")
        if "FINISHED" not in result:
            raise RuntimeError(f"{case.name}: nla.bake returned {result}")
        for con in constraints:
            con.mute = True
        names, values = self.exported(arm, frames, tmp)
        row = {"route": "blender", "seconds": seconds, "cpu_seconds": cpu, "missed_reported": None,
               "solvers": ["legacy IK"], "split_seconds": None}
        return {**row, **self.judge(model, names, values, goals), "dof": len(names)}


def print_table(rows: list[dict], frames: int, wall: float) -> None:
    print(f"Blender {bpy.app.version_string}: robots, Cartesian CSV -> bake -> export over {frames} frames, judged by "
          f"the URDF's FK; {wall:.0f} s in all (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    print(f"{'robot':6s} {'route':10s} {'dof':>3s} {'ms/frame':>8s} {'cpu ms/f':>8s} {'within %':>8s} {'max mm':>9s} "
          f"{'max mrad':>9s} {'max step':>8s} {'max acc':>8s} {'outside':>7s} {'missed':>6s}")
    for r in rows:
        missed = "-" if r["missed_reported"] is None else str(r["missed_reported"])
        print(f"{r['robot']:6s} {r['route']:10s} {r['dof']:3d} {r['ms_per_frame']:8.2f} {r['cpu_ms_per_frame']:8.2f} "
              f"{100 * r['within_share']:8.2f} "
              f"{r['max_pos_mm']:9.4f} {r['max_rot_mrad']:9.4f} {r['max_step']:8.4f} {r['max_accel']:8.4f} "
              f"{r['outside_limits']:7d} "
              f"{missed:>6s}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=500)
    parser.add_argument("--robots", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--routes", default="articulate,blender")
    parser.add_argument("--json", action="store_true", help="print one JSON object per row")
    parser.add_argument("--quick", action="store_true", help=f"short development run: {QUICK_FRAMES} frames")
    parser.add_argument("--repeat", type=int, default=1,
                        help="bake each robot and route this many times, keep the least time (a shared machine)")
    args = parser.parse_args()
    if args.quick:
        args.frames = min(args.frames, QUICK_FRAMES)
    names = [n for n in args.robots.split(",") if n]
    unknown = [n for n in names if n not in CASES]
    if unknown or args.frames < 2:
        parser.error(f"unknown robot(s) {', '.join(unknown)}; valid: {', '.join(CASES)}" if unknown
                     else "--frames must be >= 2")
    routes = [r for r in args.routes.split(",") if r]
    t0 = time.perf_counter()
    rows = []
    with stdout_to_stderr():
        bench = Bench()
        tmp = Path(tempfile.mkdtemp(prefix="articulate-bench-"))
        for name in names:
            for route in routes:
                run = bench.run_ours if route == "articulate" else bench.run_blender
                runs = [run(CASES[name], args.frames, tmp) for _ in range(max(args.repeat, 1))]
                row = dict(runs[-1], seconds=min(r["seconds"] for r in runs),
                           cpu_seconds=min(r["cpu_seconds"] for r in runs))
                row.update(robot=name, frames=args.frames, ms_per_frame=row["seconds"] * 1000.0 / args.frames,
                           cpu_ms_per_frame=row["cpu_seconds"] * 1000.0 / args.frames,
                           blender=bpy.app.version_string)
                rows.append(row)
    print_table(rows, args.frames, time.perf_counter() - t0)
    if args.json:
        for r in rows:
            print(json.dumps(r))
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
