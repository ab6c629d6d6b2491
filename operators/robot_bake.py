# SPDX-License-Identifier: GPL-3.0-or-later
"""Bake a robot rig's chains on the kinematic model the rig stores, keying the joint values themselves."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import bpy
import numpy as np

from ..ik_core import ArticulateError, effector_poses, solve_track
from ..ik_core.model.rotations import matrix_to_rotvec
from ..ik_core.robots.model import RobotModel, wrap_into_limits
from ..ik_core.solvers import make_solver
from ..ik_core.trajectory.check import limit_slack
from . import bridge, playback
from .baking import BakeFailed, chain_solver, check_target, mark_missed_frames, progress_callback
from .bridge.robot import current_joint_values, robot_model, set_joint_values, write_joint_values

# Robot paths must not jump more than this between frames [rad or m]; short segments keep a
# take on one IK branch (see ik_core.take.tracking.solve_track).
MAX_JUMP = 0.1
SEGMENT = 32


@dataclass
class RobotGroup:
    """Chains solved together because they share joints (a torso under two arms), or one chain alone."""

    chains: list  # ARTICULATE_PG_chain items
    base_link: str
    skeleton: object  # ik_core Skeleton from base_link to every tool link of the group
    solver: str
    source: bridge.ChainSource  # samples the base link's frame (through the chain root's parent bone)
    targets: list  # one ChainSource per chain (targets only)


def is_model_rig(arm: bpy.types.Object, chains: Sequence) -> bool:
    """True for a robot rig with a stored model whose chains all name a tool link (this module bakes those)."""
    return "articulate_robot" in arm and robot_model(arm) is not None and all(c.tool_link for c in chains)


def _groups(model: RobotModel, arm: bpy.types.Object, chains: Sequence, solver: str) -> list[RobotGroup]:
    """Chains grouped by shared joints, each group with its skeleton; nothing is modified.

    Raises:
        BakeFailed: A tool link not below its base (the valid ones listed), a missing target.
    """
    joint_sets = []
    for chain in chains:
        try:
            sk = model.chain_skeleton(chain.tool_link, chain.base_link or None)
        except ArticulateError as err:
            raise BakeFailed(f"chain {chain.name!r}: {err}") from None
        check_target(arm, chain, set(sk.joint_names))
        joint_sets.append(set(sk.moving_joint_names))
    # Union of chains that move a common joint: Blender-free union-find over a handful of chains.
    group_of = list(range(len(chains)))

    def root(i: int) -> int:
        while group_of[i] != i:
            i = group_of[i]
        return i

    for a in range(len(chains)):
        for b in range(a):
            if joint_sets[a] & joint_sets[b]:
                group_of[root(a)] = root(b)
    members: dict[int, list[int]] = {}
    for i in range(len(chains)):
        members.setdefault(root(i), []).append(i)
    groups = []
    for idx in members.values():
        group_chains = [chains[i] for i in idx]
        base = _common_base(model, [c.base_link for c in group_chains])
        tools = [c.tool_link for c in group_chains]
        if len(set(tools)) < len(tools):
            raise BakeFailed(f"chains {', '.join(repr(c.name) for c in group_chains)} drive the same tool link; "
                             "give each tool link one chain")
        try:
            skeleton = model.chain_skeleton(tools, base or None)
        except ArticulateError as err:
            raise BakeFailed(str(err)) from None
        names = {chain_solver(c, skeleton.dof, robot=True, override=solver) for c in group_chains}
        if len(names) > 1:
            raise BakeFailed(f"chains {', '.join(repr(c.name) for c in group_chains)} share joints and are solved "
                             f"together, but ask for different solvers ({', '.join(sorted(names))}); pick one")
        first = next(n for n in skeleton.moving_joint_names if n in arm.pose.bones)
        base_source = bridge.ChainSource(arm, arm.pose.bones[first], group_chains[0].target)
        targets = [bridge.ChainSource(arm, arm.pose.bones[first], c.target, c.target_bone) for c in group_chains]
        groups.append(RobotGroup(group_chains, base, skeleton, names.pop(), base_source, targets))
    return groups


def _common_base(model: RobotModel, bases: Sequence[str]) -> str:
    """The base link of chains solved together: the one all others lie below, else the robot's root."""
    root = model.urdf.root_link
    named = [b or root for b in bases]
    for candidate in named:
        below = set(model.links_below(candidate)) | {candidate}
        if all(b in below for b in named):
            return "" if candidate == root else candidate
    return ""


def _solver(group: RobotGroup, scale: float):
    chains = group.chains
    full = all(c.use_rotation for c in chains)
    options = {
        "mode": "full" if full else "position",
        "tolerance": min(c.tolerance for c in chains) / scale,
        "max_iterations": max(c.iterations for c in chains),
    }
    if group.solver == "dls" and len(chains) == 1:
        wp, wr = chains[0].weight_position, chains[0].weight_rotation
        options["weights"] = (wp, wp, wp, wr, wr, wr) if full else (wp, wp, wp)
    return make_solver(group.solver, group.skeleton, [c.tool_link for c in chains], **options)


def key_values(model: RobotModel, names: Sequence[str], q: np.ndarray, q_before: np.ndarray) -> np.ndarray:
    """(N, J) keys for solved joint values: each a joint value, inside its limits where it has them.

    Revolute joints are moved by whole turns into [lower, upper] (a solver may answer with a
    2 pi equivalent); continuous joints are unwrapped over time, starting at the turn nearest
    the pose before the bake, so they stay continuous; prismatic values are kept as solved.
    F-curves store single precision: a value inside its limits whose float32 would lie just
    outside (a joint resting on its limit) becomes the nearest float32 inside.
    """
    by_name = {j.name: j for j in model.urdf.joints}
    kinds = np.array([by_name[n].type for n in names])
    lower = np.array([by_name[n].lower for n in names], dtype=float)
    upper = np.array([by_name[n].upper for n in names], dtype=float)
    out = wrap_into_limits(q, lower, upper, kinds == "revolute")
    continuous = kinds == "continuous"
    if continuous.any() and len(out):
        unwrapped = np.unwrap(out[:, continuous], axis=0)
        turns = np.round((q_before[continuous] - unwrapped[0]) / (2 * np.pi))
        out[:, continuous] = unwrapped + 2 * np.pi * turns
    return inside_as_float32(out, lower, upper)


def inside_as_float32(values: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """(N, J) values, those inside [lower, upper] whose float32 rounding lies outside moved one float32 step in.

    A key is stored as float32, so a joint held on its limit (-2.8973 rad) would otherwise
    play back, and export, 5e-9 rad outside it. Values already outside are left for the limit
    check to report; every other value is returned unchanged, and so is a value in a range no
    float32 lies in (its key is the float32 nearest it, within the check's :func:`limit_slack`).
    """
    single = values.astype(np.float32)
    below = (values >= lower) & (single.astype(float) < lower)
    above = (values <= upper) & (single.astype(float) > upper)
    up = np.nextafter(single, np.float32(np.inf)).astype(float)
    down = np.nextafter(single, np.float32(-np.inf)).astype(float)
    # A range narrower than a float32 step (a single value) holds no float32: keep the nearest one.
    below &= up <= upper
    above &= down >= lower
    return np.where(below, up, np.where(above, down, values))


def bake_robot(
    context: bpy.types.Context,
    arm: bpy.types.Object,
    chains: Sequence,
    frames: range,
    *,
    write_keys: bool = True,
    mark_missed: bool = False,
    solver: str = "",
) -> dict:
    """Solve a robot rig's chains on its stored model and key the joint values (or pose one frame).

    Chains sharing joints are solved together as one several-effector problem, so a shared
    joint has one value; others alone. Errors are measured by forward kinematics of the model.

    Returns:
        The report (as :func:`.baking.bake_chains` writes it), per chain, plus
        ``"model": "stored"`` and per chain its tool link and joints.

    Raises:
        BakeFailed: Any invalid input, detected before the scene is changed.
    """
    model = robot_model(arm)
    scale = bridge.check_armature(arm)
    groups = _groups(model, arm, chains, solver)
    scene = context.scene
    t_start = time.perf_counter()
    current = scene.frame_current
    scene.frame_set(frames[0])
    q_start = [current_joint_values(arm, g.skeleton) for g in groups]
    scene.frame_set(current)
    sources = [s for g in groups for s in (g.source, *g.targets)]
    samples = iter(bridge.sample_chains(scene, list(frames), sources))
    locals_, bases = [], []
    for g in groups:
        base = next(samples).base @ model.link_rest_frame(g.base_link or model.urdf.root_link)
        world = [next(samples).target for _ in g.targets]
        for c, w in zip(g.chains, world):
            if not np.all(np.isfinite(w)):
                raise BakeFailed(f"chain {c.name!r}: its target has NaN or infinite values on some frames")
        inv = np.linalg.inv(base)
        locals_.append(np.stack([inv @ w for w in world], axis=1))  # (N, E, 4, 4) in the base link frame
        bases.append(base)
    t_sampled = time.perf_counter()
    wm = context.window_manager if write_keys else None
    results, solvers = [], []
    try:
        for g, local, q0 in zip(groups, locals_, q_start):
            s = _solver(g, scale)
            solvers.append(s)
            targets = local if s.mode == "full" else local[..., :3, 3]
            if len(g.chains) == 1:
                targets = targets[:, 0]
            label = f"Articulate {arm.name}:{'+'.join(c.name for c in g.chains)}"
            # With the look-ahead repairs a redundant tree's self-motion cannot drift into a jump
            # (a two-arm tree's wrist turned 3.9 rad in one frame without them, after 300 frames
            # of drift); they cost ~16 ms a frame there, and only on takes that had jumps.
            results.append(solve_track(s, targets, q0, max_jump=MAX_JUMP, segment=SEGMENT, look_ahead=True,
                                       progress=progress_callback(label, len(frames), wm)))
    except ArticulateError as err:
        raise BakeFailed(str(err)) from None
    finally:
        if wm is not None:
            wm.progress_end()
    t_solved = time.perf_counter()
    report_chains = []
    for g, local, q0, res, s in zip(groups, locals_, q_start, results, solvers):
        names = list(g.skeleton.moving_joint_names)
        keys = key_values(model, names, res.q, q0)
        if write_keys:
            write_joint_values(arm, np.asarray(frames, dtype=float), keys, names, replace=(frames[0], frames[-1]))
        else:
            set_joint_values(arm, g.skeleton, keys[-1])
        report_chains += _chain_reports(g, local, keys, res, frames, scale, s.rotation_tolerance)
    report = {"armature": arm.name, "frames": [int(f) for f in frames], "chains": report_chains,
              "missed_frames": sorted({f for c in report_chains for f in c["missed_frames"]}),
              "model": "stored", "warnings": _mode_warnings(groups)}
    t_written = time.perf_counter()
    if write_keys:
        playback.verify(scene, list(frames), [
            playback.PlaybackChain(c.name, arm, list(g.skeleton.moving_joint_names), c.tip_bone, False, c.target,
                                   c.target_bone, c.use_rotation, c.tolerance, s.rotation_tolerance)
            for g, s in zip(groups, solvers) for c in g.chains
        ], report)
    if mark_missed and write_keys:
        mark_missed_frames(scene, report)
    t_end = time.perf_counter()
    report["seconds"] = {"sample": t_sampled - t_start, "solve": t_solved - t_sampled,
                         "write": t_written - t_solved, "verify": t_end - t_written, "total": t_end - t_start}
    return report


def _mode_warnings(groups: Sequence[RobotGroup]) -> list[str]:
    """Chains that asked for their target's rotation but share joints with a position-only chain."""
    return [
        f"chain {c.name!r} shares joints with a position-only chain and is solved for position only; "
        "turn Rotation on or off for all of them"
        for g in groups if len({c.use_rotation for c in g.chains}) > 1 for c in g.chains if c.use_rotation
    ]


def _chain_reports(
    group: RobotGroup, local: np.ndarray, keys: np.ndarray, res, frames, scale: float, rotation_tolerance: float
) -> list[dict]:
    """Per chain of a group: errors by forward kinematics of the keyed values, convergence, limits."""
    sk = group.skeleton
    lower, upper = sk.lower, sk.upper
    slack = limit_slack(lower, upper)
    outside = np.sum((keys < lower - slack) | (keys > upper + slack), axis=1)
    out = []
    for e, chain in enumerate(group.chains):
        pose = effector_poses(sk, keys, chain.tool_link)
        pos = np.linalg.norm(pose[:, :3, 3] - local[:, e, :3, 3], axis=-1) * scale
        rot = np.linalg.norm(matrix_to_rotvec(np.swapaxes(pose[:, :3, :3], -1, -2) @ local[:, e, :3, :3]), axis=-1)
        ok = pos <= chain.tolerance * (1 + 1e-6)
        if chain.use_rotation:
            ok &= rot <= rotation_tolerance * (1 + 1e-6)
        reasons = [str(r) if not k else "" for r, k in zip(res.reason, ok)]
        reasons = [r or ("missed the target" if not k else "") for r, k in zip(reasons, ok)]
        out.append({
            "chain": chain.name,
            "tool_link": chain.tool_link,
            "joints": list(sk.moving_joint_names),
            "bones": [n for n in sk.moving_joint_names],  # a robot rig's bones are named after its joints
            "solver": group.solver,
            "solver_setting": chain.solver,
            "tolerance_m": chain.tolerance,
            "converged": ok.tolist(),
            "position_error_m": pos.tolist(),
            "rotation_error_rad": (rot if chain.use_rotation else np.zeros_like(rot)).tolist(),
            "iterations": res.iterations.tolist(),
            "limit_hits": res.limit_hits.tolist(),
            "limit_violations": int(np.count_nonzero(outside)),
            "reasons": reasons,
            "missed_frames": [int(f) for f, k in zip(frames, ok) if not k],
        })
    return out
