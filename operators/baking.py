# SPDX-License-Identifier: GPL-3.0-or-later
"""Bake the chains of an armature: validate, sample the scene once, solve in the core, key in bulk."""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import bpy
import numpy as np

from ..ik_core import ArticulateError, IKResult, effector_poses, forward_kinematics, solve_track
from ..ik_core.errors import name_hint
from ..ik_core.limits import fully_locked
from ..ik_core.model import rotations as rot
from ..ik_core.solvers import AUTO, make_solver, resolve_solver, solver_class
from ..ik_core.solvers.two_bone.solver import limb_joints
from ..ik_core.take.influence import blend_goals
from ..ik_core.take.key_reduction import fewest_keys, interpolate_auto_clamped
from ..ik_core.take.stretch import stretch_take
from ..ik_core.take.tracking import to_base_frame, track_chain
from . import aiming, bridge, planting, playback
from .correction import Correction, correct_through_playback


class BakeFailed(Exception):
    """The bake cannot run; nothing was changed. The message says why."""


@dataclass
class PreparedChain:
    """A chain ready to solve: its settings, bones, skeleton, solver and where its samples come from."""

    settings: object  # ARTICULATE_PG_chain
    bones: list
    skeleton: object
    source: bridge.ChainSource
    solver: str = "dls"  # the solver it is solved with: its setting, or what "Auto" picked
    shares_with: tuple[str, ...] = ()  # chains it shares bones with (solved together as one tree)
    requested: str = ""  # the bake's solver for every chain ("" for the chain's own setting)


# The solver of chains sharing bones: one problem with an effector per chain.
TREE_SOLVER = "dls"


@dataclass
class SolveUnit:
    """One solve of a bake: a chain alone, or chains sharing bones solved together as one tree.

    Attributes:
        members: Indices of the prepared chains it covers.
        chain: The chain itself, or the tree: the members' bones (the root first, each bone
            after its parent), a skeleton with one effector per member, the first member's settings.
        effectors: Per member, its effector's name in ``chain.skeleton``.
    """

    members: list[int]
    chain: PreparedChain
    effectors: list[str]

    @property
    def is_tree(self) -> bool:
        return len(self.members) > 1


def frame_range(start: int, end: int, step: int = 1) -> range:
    """Frames from ``start`` to ``end`` inclusive.

    Raises:
        BakeFailed: An empty or reversed range, or a step below 1.
    """
    if step < 1:
        raise BakeFailed(f"frame step must be at least 1, got {step}")
    if end < start:
        raise BakeFailed(f"frame range {start}-{end} is empty: the end frame must not precede the start frame")
    return range(start, end + 1, step)


def chain_solver(chain, bones: int, robot: bool, override: str = "", limb: bool = True) -> str:
    """The solver a chain is solved with: ``override`` or its setting, "Auto" resolved.

    ``limb``: a chain of two bones can be the two-bone solver's limb (see :func:`prepare_chains`).

    Raises:
        BakeFailed: An unknown solver name (the message lists the valid ones).
    """
    try:
        return resolve_solver(override or chain.solver, bones, pole=chain.pole is not None,
                              full_pose=chain.use_rotation, robot=robot, limb=limb)
    except ArticulateError as err:
        raise BakeFailed(f"chain {chain.name!r}: {err}") from None


def check_target(arm: bpy.types.Object, chain, bone_names: set[str]) -> None:
    """Check a chain's target and pole exist (and their bones, for armatures).

    Raises:
        BakeFailed: A deleted or missing target, a target inside the chain, a missing bone.
    """
    label = f"chain {chain.name!r}"
    target = chain.target
    if target is None or target.name not in bpy.data.objects:
        raise BakeFailed(f"{label} has no target (it was deleted or never set); pick a target object")
    if target == arm and (not chain.target_bone or chain.target_bone in bone_names):
        raise BakeFailed(f"{label}: the target must be another object, or a bone outside the chain")
    for obj, bone, what in ((target, chain.target_bone, "target"), (chain.pole, chain.pole_bone, "pole")):
        if obj is not None and bone and obj.type != "ARMATURE":
            raise BakeFailed(f"{label}: {what} {obj.name!r} is a {obj.type.lower()}, not an armature: it has no "
                             f"bone {bone!r}; clear the {what} bone or pick an armature")
        if obj is not None and bone and obj.pose.bones.get(bone) is None:
            raise BakeFailed(f"{label}: {what} {obj.name!r} has no bone {bone!r}; "
                             + name_hint(bone, obj.pose.bones.keys(), "bone"))


def prepare_chains(
    arm: bpy.types.Object, chains: Sequence, solver: str = "", shared_bones: bool = True
) -> list[PreparedChain]:
    """Check every chain against the armature and build its skeleton; nothing is modified.

    Args:
        arm: The armature object.
        chains: ``ARTICULATE_PG_chain`` items.
        solver: Solver for every chain instead of each chain's own setting ("" keeps them).
        shared_bones: Chains may share bones (a bake solves them together, see
            :func:`solve_units`); False refuses them (live posing solves chain by chain).

    Raises:
        BakeFailed: Missing or renamed bones, missing or invalid targets, overlapping chains
            where not allowed, zero-length bones, limits that leave no room, an unknown solver.
    """
    try:
        bridge.check_armature(arm)
    except bridge.BridgeError as err:
        raise BakeFailed(str(err)) from None
    if not chains:
        raise BakeFailed(f"armature {arm.name!r} has no enabled chain; add one in the Articulate panel")
    prepared: list[PreparedChain] = []
    owner: dict[str, str] = {}
    robot = "articulate_robot" in arm
    for chain in chains:
        label = f"chain {chain.name!r}"
        aim = aiming.is_aim(chain)
        try:
            bones = bridge.chain_bones(arm, chain)
            name = aiming.SOLVER_NAME if aim else chain_solver(chain, len(bones), robot, solver)
            skeleton = bridge.chain_skeleton(arm, bones, use_tail=chain.use_tail, hinge_middle=name == "two_bone")
            if name == "two_bone" and limb_joints(skeleton) is None:
                if (solver or chain.solver) != AUTO:  # picked by hand: the solver's own refusal
                    make_solver(name, skeleton, "tip")
                # Auto's two-bone limb needs a free root bone: one that IK Lock leaves a hinge, or
                # holds still, is no ball joint, so the chain gets what Auto picks for other chains.
                name = chain_solver(chain, len(bones), robot, solver, limb=False)
                skeleton = bridge.chain_skeleton(arm, bones, use_tail=chain.use_tail)
            if fully_locked(skeleton):
                raise BakeFailed(
                    f"{label}: every bone of the chain is locked (IK Lock on every axis, or limits of a single value), "
                    "so nothing can move toward the target; unlock an axis of some bone or widen its limits"
                )
            if aim:
                aiming.axes(chain)
        except (bridge.BridgeError, ArticulateError) as err:
            raise BakeFailed(f"{label}: {err}") from None
        except aiming.AimSettingsError as err:
            raise BakeFailed(str(err)) from None
        for pb in bones:
            if pb.name in owner and not shared_bones:
                raise BakeFailed(
                    f"{label} and chain {owner[pb.name]!r} both move bone {pb.name!r}; live posing solves chains "
                    "one by one, so they must not overlap (a bake solves them together)"
                )
            owner.setdefault(pb.name, chain.name)
        check_target(arm, chain, {b.name for b in bones})
        try:
            foot = "" if aim else planting.foot_name(arm, chain, bones[-1])
        except planting.PlantingFailed as err:
            raise BakeFailed(str(err)) from None
        source = aiming.chain_source(arm, bones, chain) if aim else bridge.ChainSource(
            arm, bones[0], chain.target, chain.target_bone, chain.pole, chain.pole_bone,
            tip_bone=bones[-1].name, use_tail=chain.use_tail, influence=(chain, "influence"),
            foot_bone=foot, free_bones=tuple(b.name for b in bones))
        prepared.append(PreparedChain(chain, bones, skeleton, source, name, requested=solver))
    for p in prepared:
        if p.source.foot_bone in owner:  # another chain's bone: its keys are that chain's
            if p.settings.foot_bone:
                raise BakeFailed(f"chain {p.settings.name!r}: foot bone {p.source.foot_bone!r} is moved by chain "
                                 f"{owner[p.source.foot_bone]!r}; clear Foot Bone or pick a bone of no chain")
            p.source.foot_bone = ""
        mine = {b.name for b in p.bones}
        p.shares_with = tuple(o.settings.name for o in prepared
                              if o is not p and mine & {b.name for b in o.bones})
    return prepared


def solve_units(arm: bpy.types.Object, prepared: Sequence[PreparedChain]) -> list[SolveUnit]:
    """Group chains that share bones, directly or through others, into trees; the rest stay alone.

    Blender's IK solves constraints whose chains share bones as one tree (both arms through a
    shared spine); so does a bake: one DLS problem on the union of their bones with an
    effector per chain, so a shared bone gets one rotation per frame.

    Raises:
        BakeFailed: A tree the skeleton cannot be built for (the message names the chains).
    """
    group = list(range(len(prepared)))

    def find(k: int) -> int:
        while group[k] != k:
            group[k] = group[group[k]]
            k = group[k]
        return k

    first: dict[str, int] = {}
    for k, p in enumerate(prepared):
        for b in p.bones:
            if b.name in first:
                group[find(k)] = find(first[b.name])
            else:
                first[b.name] = k
    members: dict[int, list[int]] = {}
    for k in range(len(prepared)):
        members.setdefault(find(k), []).append(k)
    units = []
    for ks in members.values():
        if len(ks) == 1:
            units.append(SolveUnit(ks, prepared[ks[0]], ["tip"]))
            continue
        chains = [prepared[k] for k in ks]
        if any(p.solver == aiming.SOLVER_NAME for p in chains):
            raise BakeFailed(f"chains {', '.join(repr(p.settings.name) for p in chains)} share bones, and aim chains "
                             "cannot share bones with other chains yet: give the aim chain bones of its own")
        union = {b.name: b for p in chains for b in p.bones}

        def depth(pb) -> int:
            n = 0
            while pb.parent is not None:
                n, pb = n + 1, pb.parent
            return n

        bones = sorted(union.values(), key=depth)  # the root (shallowest) first, parents before children
        effectors = [f"tip:{p.settings.name}" for p in chains]
        tips = [(e, p.bones[-1], p.settings.use_tail) for e, p in zip(effectors, chains)]
        names = ", ".join(repr(p.settings.name) for p in chains)
        try:
            skeleton = bridge.tree_skeleton(arm, bones, tips)
        except (bridge.BridgeError, ArticulateError) as err:
            raise BakeFailed(f"chains {names} share bones and are solved as one tree, but: {err}") from None
        lead = chains[0]
        source = bridge.ChainSource(arm, bones[0], lead.settings.target, lead.settings.target_bone)
        units.append(SolveUnit(ks, PreparedChain(lead.settings, bones, skeleton, source, TREE_SOLVER), effectors))
    return units


def _unit_sources(unit: SolveUnit, prepared: Sequence[PreparedChain]) -> list[bridge.ChainSource]:
    """Per member, where its samples come from: its own chain, or its target over the tree's base."""
    if not unit.is_tree:
        return [unit.chain.source]
    root = unit.chain.bones[0]
    # A member at partial influence samples the whole tree's pose without IK: the tree starts there.
    tree_bones = tuple(b.name for b in unit.chain.bones)
    return [dataclasses.replace(prepared[k].source, root=root, free_bones=tree_bones) for k in unit.members]


def _sample_units(scene, frames, units: Sequence[SolveUnit], prepared,
                  plans: dict[str, planting.ContactPlan] | None = None) -> list[list]:
    """Per unit, per member, its :class:`bridge.ChainSamples` (one pass of the frames for all).

    With ``plans`` (a bake over a take), the target of a chain with Contacts is planted during
    its contacts and kept above the ground (:func:`planting.plant`); what was done goes into
    ``plans`` by chain name. A chain at partial influence on some frames gets, as its target,
    the goal Blender's IK constraint would solve for (:func:`blend_goals`: moved from the end's
    pose without IK toward the (planted) target); that target is kept as ``full_target``.

    Raises:
        BakeFailed: A chain's contacts or ground cannot be planted.
    """
    sources = [_unit_sources(u, prepared) for u in units]
    flat = iter(bridge.sample_chains(scene, list(frames), [s for group in sources for s in group]))
    out = [[next(flat) for _ in group] for group in sources]
    if plans is not None:
        depsgraph = bpy.context.evaluated_depsgraph_get()
        for u, group in zip(units, out):
            for k, s in zip(u.members, group):
                try:
                    plan = planting.plant(scene, prepared[k].settings, s, frames, depsgraph,
                                          prepared[k].source.foot_bone)
                except planting.PlantingFailed as err:
                    raise BakeFailed(str(err)) from None
                if plan is not None:
                    plans[plan.chain] = plan
    for group in out:
        for s in group:
            if (s.influence is not None and np.any(s.influence < 1.0) and s.free_tip is not None  # aim: no free tip
                    and np.all(np.isfinite(s.free_tip))):
                s.full_target = s.target
                s.target = blend_goals(s.free_tip, s.target, np.nan_to_num(s.influence, nan=1.0))
    return out


def _member_samples(units: Sequence[SolveUnit], samples: Sequence[list], k: int):
    """The :class:`bridge.ChainSamples` of prepared chain ``k`` (in its unit's samples)."""
    for u, unit_samples in zip(units, samples):
        if k in u.members:
            return unit_samples[u.members.index(k)]
    raise KeyError(k)


def _tree_options(unit: SolveUnit, prepared: Sequence[PreparedChain], scale: float) -> dict:
    """DLS options of a tree unit: full poses if every member matches rotation, the tightest tolerance,
    and each member's position and rotation weights on its effector (the IK constraints' weights:
    where chains compete for shared bones, the heavier pulls harder)."""
    chains = [prepared[k].settings for k in unit.members]
    return {
        "mode": "full" if all(c.use_rotation for c in chains) else "position",
        "tolerance": min(c.tolerance for c in chains) / scale,
        "max_iterations": max(c.iterations for c in chains),
        "weights": [(c.weight_position,) * 3 + (c.weight_rotation,) * 3 for c in chains],
    }


def tree_solver(unit: SolveUnit, prepared: Sequence[PreparedChain], scale: float):
    """The DLS solver of a tree unit, an effector per member."""
    return make_solver(TREE_SOLVER, unit.chain.skeleton, unit.effectors, **_tree_options(unit, prepared, scale))


def _tail_start(unit: SolveUnit, prepared: Sequence[PreparedChain], k: int) -> int:
    """Where the bones of member ``k`` that no other member moves begin, hanging from a shared bone.

    Returns an index into its bones; ``len(bones)`` when its last bone is shared, and also when
    its own bones start above the shared ones (the tree poses them).
    """
    p = prepared[k]
    others = {b.name for m in unit.members if m != k for b in prepared[m].bones}
    j = len(p.bones)
    while j > 0 and p.bones[j - 1].name not in others:
        j -= 1
    return j if j > 0 else len(p.bones)


def _track_tree(arm, unit: SolveUnit, prepared, samples, q0, scale: float, robot: bool, **track):
    """Solve a tree unit over the take: returns per member its result, and the bones and rotations to key.

    1. The tree (one DLS problem, an effector per member) poses every bone. On a frame where some
       members' targets lie beyond their reach, the others lead (the core's led best effort):
       they stay on their targets, and the shared bones lean toward the far targets only as far
       as the leaders can follow, so an unreachable target never drags a reachable one off.
    2. A member with a pole, or with frames beyond reach, has its own bones below the shared
       ones (an arm below a shared spine) solved again from the tree's pose of the bone they hang
       from (FABRIK with the pole, else DLS): on its target where it can be, bent toward its
       pole, else stretched toward the target.

    Errors are each member's own, against its target, in world units.
    """
    skeleton = unit.chain.skeleton
    base = samples[0].base
    local = np.stack([to_base_frame(base, s.target) for s in samples], axis=1)  # (N, E, 4, 4)
    options = _tree_options(unit, prepared, scale)
    full = options["mode"] == "full"
    targets = local if full else local[..., :3, 3]
    whole = tree_solver(unit, prepared, scale)
    beyond = whole.reach_bound.excess(local[..., :3, 3]) > whole.tolerance  # (N, E)
    n = len(local)
    # At partial influence Blender's IK starts each frame from the pose without IK (see the chain
    # route in _bake_prepared): so does the tree, and each member's own bones below it.
    free = next((s.free_rotations for s in samples if s.full_target is not None and s.free_rotations is not None), None)
    free_of = {} if free is None else {b.name: free[:, i] for i, b in enumerate(unit.chain.bones)}
    starts = None if free is None else initial_q(unit.chain, rot.matrix_to_rotvec(free))
    q = solve_track(whole, targets, q0, starts=starts, **track).q
    bones, R = chain_rotations(unit.chain, q)
    rotation_of = {b.name: R[:, i] for i, b in enumerate(bones)}
    frames_tree = forward_kinematics(skeleton, q)  # (N, J, 4, 4) in the tree's base frame
    tree_index = {b.name: i for i, b in enumerate(unit.chain.bones)}
    results = []
    for e, k in enumerate(unit.members):
        p = prepared[k]
        chain = p.settings
        j = _tail_start(unit, prepared, k)
        has_pole = samples[e].pole is not None
        if j < len(p.bones) and (has_pole or beyond[:, e].any()):
            tail = p.bones[j:]
            # The tail keeps the tree's joint model (balls, not the two-bone hinge), so it reaches
            # what the tree reached; FABRIK where a pole must be honoured, else DLS, unless the
            # chain asks for another iterative solver.
            name = p.requested or chain.solver
            if name in ("auto", "two_bone"):
                name = "fabrik" if has_pole else "dls"
            try:
                tail_skeleton = bridge.chain_skeleton(arm, tail, use_tail=chain.use_tail)
            except bridge.BridgeError as err:
                raise BakeFailed(f"chain {chain.name!r}: {err}") from None
            sub = PreparedChain(chain, tail, tail_skeleton, p.source, name)
            hang = p.bones[j - 1]
            tail_base = base @ frames_tree[:, tree_index[hang.name]] @ np.linalg.inv(
                bridge.matrix_to_array(hang.bone.matrix_local))
            # A bone the tree leaves still (every axis locked) has no rotation here; its joint is not in q.
            rotvecs = rot.matrix_to_rotvec(np.stack([rotation_of[b.name][0] if b.name in rotation_of else np.eye(3)
                                                     for b in tail]))
            tail_starts = None if free is None else initial_q(
                sub, rot.matrix_to_rotvec(np.stack([free_of[b.name] for b in tail], axis=1)))
            res = track_chain(solver_for(sub, scale), tail_base, samples[e].target, initial_q(sub, rotvecs),
                              pole=samples[e].pole, use_rotation=chain.use_rotation, scale=scale,
                              pole_angle=chain.pole_angle, look_ahead=robot, segment=track["segment"],
                              max_jump=track["max_jump"], starts=tail_starts)
            moved, R_tail = chain_rotations(sub, res.q)
            for i, b in enumerate(moved):
                rotation_of[b.name] = R_tail[:, i]
            results.append(res)
            continue
        got = effector_poses(skeleton, q, unit.effectors[e])
        pos = np.linalg.norm(got[:, :3, 3] - local[:, e, :3, 3], axis=-1) * scale
        ok = pos <= chain.tolerance
        rot_err = np.zeros(n)
        if chain.use_rotation and full:
            unit_axes = got[:, :3, :3] / np.linalg.norm(got[:, :3, :3], axis=-2, keepdims=True)
            goal_axes = local[:, e, :3, :3] / np.linalg.norm(local[:, e, :3, :3], axis=-2, keepdims=True)
            rot_err = rot.rotation_error(unit_axes, goal_axes)
            ok &= rot_err <= whole.rotation_tolerance
        reason = np.empty(n, dtype=object)
        for f in range(n):
            reason[f] = "converged" if ok[f] else (
                f"target beyond the reach of the tree: best effort leaves {pos[f]:.3g} m" if beyond[f, e] else
                f"solved together with the chains sharing its bones: the tree leaves {pos[f]:.3g} m")
        results.append(IKResult(q, ok, pos, rot_err, np.ones(n, dtype=int), reason, np.zeros(n, dtype=int)))
    keyed = list(rotation_of)
    return results, [unit.chain.bones[tree_index[b]] for b in keyed], np.stack([rotation_of[b] for b in keyed], axis=1)


def solver_for(p: PreparedChain, scale: float):
    """The prepared chain's solver for its skeleton, tolerance converted to base-frame units."""
    chain = p.settings
    options = {
        "mode": "full" if chain.use_rotation else "position",
        "tolerance": chain.tolerance / scale,
        "max_iterations": chain.iterations,
    }
    if p.solver == "dls":
        wp, wr = chain.weight_position, chain.weight_rotation
        options["weights"] = (wp, wp, wp, wr, wr, wr)
    return make_solver(p.solver, p.skeleton, "tip", **options)


def stretchy(p: PreparedChain) -> bool:
    """The chain stretches toward targets beyond reach: Stretch on, and some bone with IK Stretch above 0."""
    return bool(p.settings.use_stretch) and any(b.ik_stretch > 0 for b in p.bones)


def stretch_chain(p: PreparedChain, result: IKResult, scale: float,
                  solve_frame: Callable[[object, int, np.ndarray], IKResult], world_errors: bool = True):
    """Lengthen the chain's stretchy bones on the frames ``result`` missed (:func:`stretch_take`).

    Args:
        p: A stretching chain (:func:`stretchy`).
        result: Its take solved at its own length, batch shape (N,).
        scale: The armature's uniform world scale: the longer chain's solver gets its tolerance
            in base-frame units from it (as :func:`solver_for`).
        solve_frame: ``solve_frame(solver, f, q0)`` solves frame ``f`` of the take with ``solver``
            (built for the longer chain) from ``q0`` (dof,); a result of batch shape (1,).
        world_errors: The results' errors are in world units (a tracked take), else in base-frame
            units (a bare ``solve``).

    Returns:
        The :class:`~ik_core.take.stretch.StretchedTake`.
    """

    def solve_longer(longer, f: int, q0: np.ndarray) -> IKResult:
        return solve_frame(solver_for(dataclasses.replace(p, skeleton=longer), scale), f, q0)

    return stretch_take(result, p.skeleton, [b.ik_stretch for b in p.bones], [b.bone.length for b in p.bones],
                        solve_longer, scale if world_errors else 1.0)


def stretch_scales(p: PreparedChain, factors: np.ndarray) -> tuple[list, np.ndarray]:
    """A stretching chain's bones from its first stretchy one down, and their (N, B) local uniform scales.

    ``factors`` (N, J) are the take's stretch factors per joint (1 where unstretched).
    """
    first = next(i for i, b in enumerate(p.bones) if b.ik_stretch > 0)
    return p.bones[first:], bridge.local_scales(p.bones, factors)[:, first:]


def _stretch(p: PreparedChain, smp: bridge.ChainSamples, res: IKResult, scale: float):
    """Lengthen the chain's stretchy bones on the frames its tracked take missed."""
    chain = p.settings

    def solve_frame(solver, f: int, q0: np.ndarray) -> IKResult:
        pole = smp.pole[f:f + 1] if smp.pole is not None else None
        return track_chain(solver, smp.base[f:f + 1], smp.target[f:f + 1], q0, pole=pole,
                           use_rotation=chain.use_rotation, scale=scale, pole_angle=chain.pole_angle)

    return stretch_chain(p, res, scale, solve_frame)


def _write_scales(arm, p: PreparedChain, factors: np.ndarray, frames, write_keys: bool) -> None:
    """Key (or pose) a stretching chain's bone scales, from its first stretchy bone down (1 where unstretched)."""
    bones, local = stretch_scales(p, factors)
    if write_keys:
        bridge.write_bone_scales(arm, bones, np.asarray(frames, dtype=float), local, replace=(frames[0], frames[-1]))
    else:
        bridge.set_pose_scales(bones, local[-1])


def progress_callback(label: str, total: int, wm: bpy.types.WindowManager | None):
    """Window-manager progress in the UI; in background, progress on the terminal.

    On a terminal one line updates in place (twice a second at most); when the output goes to a
    file or a farm's log, plain lines every few seconds and one at the end, so logs stay readable.
    """
    in_place = sys.stdout.isatty()
    last = [0.0 if in_place else time.perf_counter()]
    interval = 0.5 if in_place else 5.0
    if wm is not None:
        wm.progress_begin(0, total)

    def update(done: int, _n: int) -> None:
        if wm is not None:
            wm.progress_update(done)
        now = time.perf_counter()
        if not bpy.app.background or not (done == total or now - last[0] > interval):
            return
        last[0] = now
        if in_place:
            sys.stdout.write(f"\r{label}: {done}/{total} frames" + ("\n" if done == total else ""))
        else:
            sys.stdout.write(f"{label}: {done}/{total} frames\n")
        sys.stdout.flush()

    return update


def bake_chains(
    context: bpy.types.Context,
    arm: bpy.types.Object,
    chains: Sequence,
    frames: range,
    *,
    write_keys: bool = True,
    mute_constraints: bool = False,
    mark_missed: bool = False,
    solver: str = "",
    key_tolerance: float = 0.0,
) -> dict:
    """Solve every chain on every frame and key the bones' rotations (or pose the current frame).

    Args:
        context: Blender context (scene, window manager).
        arm: The armature object.
        chains: ``ARTICULATE_PG_chain`` items to bake.
        frames: Frames to solve.
        write_keys: Key the range (replacing only it); False poses the bones (one frame).
        mute_constraints: Mute the IK constraints the chains were created from (also when only posing).
        mark_missed: Add a timeline marker on every frame a chain missed.
        solver: Solver for every chain instead of each chain's setting ("" keeps them).
        key_tolerance: Key only the frames needed for every chain tip to play within this
            distance [m] of the full bake (measured by playback); 0 keys every frame.

    Returns:
        The report: per chain and frame residuals, iterations, convergence, limit hits, reasons.

    Raises:
        BakeFailed: Any invalid input, detected before the scene is changed.
    """
    prepared = prepare_chains(arm, chains, solver)
    scale = bridge.check_armature(arm)
    scene = context.scene
    # Sample what the bake will leave: the converted IK constraints muted (all of them, so one
    # chain's IK does not move another's base), restored if the bake fails. Posing one frame
    # (Solve Current Frame) mutes them too, so the pose shown is the one the bake will play.
    muted = _mute_converted(arm, prepared) if mute_constraints else []
    try:
        report = _bake_prepared(context, arm, prepared, frames, scale, write_keys, key_tolerance)
    except BaseException:
        for owner, attr, was in reversed(muted):
            setattr(owner, attr, was)
        raise
    driven = [owner.data_path for owner, attr, _was in muted if attr == "mute" and hasattr(owner, "data_path")]
    if driven:
        report.setdefault("notes", []).append(
            f"muted {len(driven)} driver(s) that would unmute the converted IK constraints on playback "
            f"(e.g. Rigify's switches): {', '.join(driven[:4])}" + (" ..." if len(driven) > 4 else ""))
    if mark_missed and write_keys:
        mark_missed_frames(scene, report)
    return report


def _mute_converted(arm: bpy.types.Object, prepared: Sequence[PreparedChain]) -> list:
    """Mute the IK constraints the chains were converted from, and the drivers that would unmute them.

    A driver on a constraint's ``mute`` or ``influence`` (Rigify's IK switches) would turn the IK
    back on at the next frame change: playback would then show Blender's IK on top of the keys.

    Returns:
        (owner, attribute, old value) triples, in the order they were set, to undo a failed bake.
    """
    out = []
    drivers = list(arm.animation_data.drivers) if arm.animation_data is not None else []
    for p in prepared:
        owner, con = p.bones[-1], None
        if p.settings.constraint and p.settings.constraint_bone:
            owner = arm.pose.bones.get(p.settings.constraint_bone)
            con = None if owner is None else owner.constraints.get(p.settings.constraint)
        elif p.settings.constraint:  # converted before the constraint's bone was kept
            con = owner.constraints.get(p.settings.constraint)
            for child in p.bones[-1].children:  # use_tail off: the constraint sits on the bone below
                if con is None and child.constraints.get(p.settings.constraint) is not None:
                    owner, con = child, child.constraints[p.settings.constraint]
        if con is None or con.type not in ("IK", "DAMPED_TRACK", "TRACK_TO"):  # aim chains: their track constraints
            continue
        prefix = f'pose.bones["{owner.name}"].constraints["{con.name}"].'
        for fc in drivers:
            if fc.data_path.startswith(prefix) and fc.data_path[len(prefix):] in ("mute", "enabled", "influence"):
                out.append((fc, "mute", fc.mute))
                fc.mute = True
        out.append((con, "mute", con.mute))
        con.mute = True
    return out


def check_samples(name: str, s: bridge.ChainSamples, frames: Sequence[int], oriented: bool = True) -> None:
    """Refuse a chain's samples with NaN, infinite or zero-scale matrices, naming the frames (as the timeline does).

    ``oriented``: the solve reads the target's frame (every chain but aim chains, which aim at
    its position), so a zero-scale target is refused too.

    Raises:
        BakeFailed: Which of target, base or pole is bad, and on which frames.
    """
    def where(bad: np.ndarray) -> str:
        return frame_runs([int(frames[i]) for i in np.flatnonzero(bad)])

    checks = [("its target has NaN or infinite values", ~np.isfinite(s.target).all(axis=(1, 2))),
              ("its base (the parent of its root bone) has NaN or infinite values",
               ~np.isfinite(s.base).all(axis=(1, 2)))]
    if s.pole is not None:
        pole_ok = np.isfinite(s.pole).reshape(len(frames), -1).all(axis=1)
        checks.append(("its pole has NaN or infinite values", ~pole_ok))
    for what, bad in checks:
        if bad.any():
            raise BakeFailed(f"chain {name!r}: {what} on frame(s) {where(bad)}")
    flat = np.abs(np.linalg.det(s.target[:, :3, :3])) < 1e-12
    if oriented and flat.any():
        raise BakeFailed(f"chain {name!r}: the target has zero scale on frame(s) {where(flat)}; give it a scale "
                         "above zero on every axis")


@dataclass
class _Bake:
    """One bake's state, filled in by :func:`_bake_prepared`'s steps in turn.

    Per unit (a chain alone or chains solved as one tree, see :func:`solve_units`): its samples,
    the bones it keys and their rotations (``poses``), its key reduction and its stretch. Per
    prepared chain: its result, solver and, for an aim chain, the aim solver's own result.
    """

    scene: bpy.types.Scene
    arm: bpy.types.Object
    prepared: Sequence[PreparedChain]
    frames: Sequence[int]
    scale: float
    write_keys: bool
    key_tolerance: float
    wm: bpy.types.WindowManager | None
    moved_by: dict  # per chain, the constraints and drivers that move its bones' keys in playback
    units: list[SolveUnit]
    q_start: list[np.ndarray]  # per unit, its bones' rotations on the first frame as rotation vectors
    plans: dict[str, planting.ContactPlan] | None  # contacts plant a take's targets (None: no planting)
    samples: list = dataclasses.field(default_factory=list)
    hips_notes: list[str] = dataclasses.field(default_factory=list)
    results: list = dataclasses.field(default_factory=list)
    solvers: list = dataclasses.field(default_factory=list)
    aimed: list = dataclasses.field(default_factory=list)
    poses: list = dataclasses.field(default_factory=list)
    reductions: list = dataclasses.field(default_factory=list)
    stretches: list = dataclasses.field(default_factory=list)  # (N, B) scale factors, frames stretched
    corrections: dict[str, Correction] = dataclasses.field(default_factory=dict)  # chains keyed again
    clock: dict[str, float] = dataclasses.field(default_factory=dict)  # step end times [s]

    def member_samples(self, k: int) -> bridge.ChainSamples:
        return _member_samples(self.units, self.samples, k)


def _bake_prepared(context, arm, prepared, frames, scale: float, write_keys: bool, key_tolerance: float = 0.0) -> dict:
    """Sample, solve, key, and measure the keyed range by playback."""
    t_start = time.perf_counter()
    bake = _begin(context, arm, prepared, frames, scale, write_keys, key_tolerance)
    _sample(bake)
    _solve_and_key(bake)
    report = _chain_report(bake)
    _verify(bake, report)
    _add_notes(bake, report)
    t_end = time.perf_counter()
    clock = bake.clock
    # Solving and writing interleave when chains hang from chains; the re-sampling counts as sampling.
    report["seconds"] = {"sample": clock["sampled"] - t_start + clock["resample"],
                         "solve": clock["solved"] - clock["sampled"] - clock["resample"],
                         "write": clock["written"] - clock["solved"], "verify": t_end - clock["written"],
                         "total": t_end - t_start}
    return report


def _begin(context, arm, prepared, frames, scale: float, write_keys: bool, key_tolerance: float) -> _Bake:
    """The bake's units, the bones' pose on the first frame, and what moves their keys in playback."""
    scene = context.scene
    moved_by = {p.settings.name: playback.overriding(arm, [b.name for b in p.bones]) for p in prepared}
    units = solve_units(arm, prepared)
    current = scene.frame_current
    scene.frame_set(frames[0])
    q_start = [rot.matrix_to_rotvec(bridge.pose_rotations(u.chain.bones)) for u in units]
    scene.frame_set(current)
    # Contacts plant the targets of a take: not on a single posed frame (Solve Current Frame).
    plans: dict[str, planting.ContactPlan] | None = {} if write_keys and len(frames) > 1 else None
    return _Bake(scene, arm, prepared, frames, scale, write_keys, key_tolerance,
                 context.window_manager if write_keys else None, moved_by, units, q_start, plans)


def _sample(bake: _Bake) -> None:
    """Every unit's targets, poles and bases over the range (the hips lowered first where planted feet ask)."""
    scene, arm, units, prepared, frames = bake.scene, bake.arm, bake.units, bake.prepared, bake.frames
    bake.samples = _sample_units(scene, frames, units, prepared, bake.plans)
    if bake.plans:
        bake.hips_notes = _lower_hips(scene, arm, units, prepared, bake.samples, bake.plans, frames, bake.scale)
    if bake.hips_notes:  # the legs' bases moved down with the hips
        bake.samples = _sample_units(scene, frames, units, prepared, bake.plans)
    bake.clock["sampled"] = time.perf_counter()
    for u, unit_samples in zip(units, bake.samples):
        for k, s in zip(u.members, unit_samples):
            check_samples(prepared[k].settings.name, s, frames, oriented=prepared[k].solver != aiming.SOLVER_NAME)


def _solve_and_key(bake: _Bake) -> None:
    """Solve and key the units level by level: chains hanging from chains are sampled after those are keyed."""
    n_chains, n_units = len(bake.prepared), len(bake.units)
    bake.results, bake.solvers, bake.aimed = [None] * n_chains, [None] * n_chains, [None] * n_chains
    bake.poses, bake.reductions, bake.stretches = [None] * n_units, [None] * n_units, [None] * n_units
    levels = _levels([u.chain for u in bake.units])
    bake.clock["resample"] = 0.0
    try:
        for level in sorted(set(levels)):
            batch = [k for k, lv in enumerate(levels) if lv == level]
            if level > 0:  # bases hang from chains solved and keyed at the levels above
                t0 = time.perf_counter()
                fresh = _sample_units(bake.scene, bake.frames, [bake.units[k] for k in batch], bake.prepared,
                                      bake.plans)
                for k, unit_samples in zip(batch, fresh):
                    bake.samples[k] = unit_samples
                bake.clock["resample"] += time.perf_counter() - t0
            for k in batch:
                _solve_unit(bake, k)
            _key_level(bake, batch)
        if bake.plans:
            _write_feet(bake.scene, bake.arm, bake.plans, bake.frames)
    except ArticulateError as err:
        raise BakeFailed(str(err)) from None
    finally:
        if bake.wm is not None:
            bake.wm.progress_end()
    bake.clock["solved"] = time.perf_counter()


def _solve_unit(bake: _Bake, k: int) -> None:
    """Solve unit k over the take: its members' results and solvers, and the rotations to key."""
    u, p, prepared = bake.units[k], bake.units[k].chain, bake.prepared
    # Robot paths must not jump more than 0.1 rad between frames and want short segments to stay
    # on one branch; characters at 24 fps move more, and longer batches make their bakes cheaper.
    robot = "articulate_robot" in bake.arm
    max_jump, segment = (0.1, 32) if robot else (0.5, 32)
    label = f"Articulate {bake.arm.name}:{'+'.join(prepared[m].settings.name for m in u.members)}"
    progress = progress_callback(label, len(bake.frames), bake.wm)
    q0 = initial_q(p, bake.q_start[k])
    if u.is_tree:
        member_results, bones, R = _track_tree(bake.arm, u, prepared, bake.samples[k], q0, bake.scale, robot,
                                               max_jump=max_jump, segment=segment, look_ahead=robot,
                                               progress=progress)
        solver = tree_solver(u, prepared, bake.scale)
        for m, res in zip(u.members, member_results):
            bake.results[m], bake.solvers[m] = res, solver
        bake.poses[k] = (bones, R)
        return
    smp, m = bake.samples[k][0], u.members[0]
    if p.solver == aiming.SOLVER_NAME:
        bake.solvers[m] = solver = aiming.solver_for(p, bake.scale)
        bake.results[m], bake.aimed[m] = aiming.track(solver, p, smp, aiming.REST, progress)
        bake.poses[k] = chain_rotations(p, bake.results[m].q)
        return
    bake.solvers[m] = solver = solver_for(p, bake.scale)
    # A closed-form solver needs no segments: its start only picks the bend side.
    chain_segment = len(bake.frames) if p.solver == "two_bone" else segment
    # At partial influence Blender's IK starts each frame from the pose without IK,
    # which is the answer at influence 0: so does ours, rather than drift from frame to frame.
    starts = None
    if smp.full_target is not None and smp.free_rotations is not None:
        starts = initial_q(p, rot.matrix_to_rotvec(smp.free_rotations))
    bake.results[m] = res = track_chain(
        solver, smp.base, smp.target, q0, pole=smp.pole,
        use_rotation=p.settings.use_rotation, scale=bake.scale, progress=progress,
        max_jump=max_jump, segment=chain_segment, pole_angle=p.settings.pole_angle, look_ahead=robot,
        starts=starts,
    )
    if stretchy(p):
        take = _stretch(p, smp, res, bake.scale)
        bake.results[m] = res = take.result
        bake.stretches[k] = (take.factors, int(take.stretched.sum()))
    bake.poses[k] = chain_rotations(p, res.q)


def _key_level(bake: _Bake, batch: Sequence[int]) -> None:
    """Key (or pose) the units of one level: stretch scales, then rotations, reduced or corrected through playback."""
    for k in batch:
        if bake.stretches[k] is not None:
            _write_scales(bake.arm, bake.units[k].chain, bake.stretches[k][0], bake.frames, bake.write_keys)
    if bake.write_keys and bake.key_tolerance > 0 and len(bake.frames) > 2:
        for k in batch:
            bake.reductions[k] = _write_reduced(bake.scene, bake.arm, bake.units[k], bake.prepared, bake.samples[k],
                                                bake.poses[k], bake.frames, bake.key_tolerance, bake.scale)
        return
    _write(bake.arm, [bake.poses[k] for k in batch], bake.frames, bake.write_keys)
    if bake.write_keys:
        bake.corrections |= _correct_overrides(
            bake.scene, bake.arm, [bake.units[k] for k in batch], bake.prepared, [bake.samples[k] for k in batch],
            bake.results, bake.frames, bake.moved_by, [bake.stretches[k] is None for k in batch])


def _chain_report(bake: _Bake) -> dict:
    """The report of the solved chains: per chain and frame, what the solver reached (see :func:`_report`)."""
    report = _report(bake.arm, bake.prepared, bake.results, bake.frames)
    for p, entry, res in zip(bake.prepared, report["chains"], bake.aimed):
        if res is not None:
            entry.update(aiming.report_entry(p.settings, res))
    for k, entry in enumerate(report["chains"]):
        smp = bake.member_samples(k)
        if smp.full_target is not None:
            entry["influence"] = smp.influence.tolist()
            report.setdefault("notes", []).append(
                f"chain {entry['chain']!r}: influence below 1 on {int(np.sum(smp.influence < 1.0))} frame(s); there "
                "the chain reaches for a goal moved from its pose without IK toward the target by the influence, "
                "as Blender's IK constraint does, and residuals are measured against that goal")
    # Reduced keys may leave a tip up to key_tolerance from where the full bake put it: a frame
    # counts as reached in playback within the chain's tolerance plus that, and the report says so.
    for entry in report["chains"]:
        entry["tolerance_m"] += _key_slack(bake)
    bake.clock["written"] = time.perf_counter()
    return report


def _key_slack(bake: _Bake) -> float:
    """How far [m] reduced keys may leave a tip from the full bake's (0 where every frame is keyed)."""
    return bake.key_tolerance if any(r is not None for r in bake.reductions) else 0.0


def _verify(bake: _Bake, report: dict) -> None:
    """The contacts' skate and penetration, and every keyed frame measured by playback into the report."""
    if bake.plans:
        _report_contacts(bake.scene, bake.arm, bake.prepared, bake.plans, bake.frames, report)
    if not bake.write_keys:
        return
    slack = _key_slack(bake)
    # A chain at partial influence, or planted, is measured against the goal it was solved for.
    planted = set(bake.plans or ())
    playback.verify(bake.scene, list(bake.frames), [
        playback.aim_chain(p.settings, bake.arm, [b.name for b in p.bones], s.tolerance + 2.0 * slack / (
            p.bones[-1].bone.length * bake.scale)) if p.solver == aiming.SOLVER_NAME else
        playback.PlaybackChain(p.settings.name, bake.arm, [b.name for b in p.bones], p.bones[-1].name,
                               p.settings.use_tail, p.settings.target, p.settings.target_bone,
                               p.settings.use_rotation, p.settings.tolerance + slack, s.rotation_tolerance)
        for p, s in zip(bake.prepared, bake.solvers)
    ], report, goals=[bake.member_samples(k).target
                      if bake.member_samples(k).full_target is not None
                      or bake.prepared[k].settings.name in planted else None
                      for k in range(len(bake.prepared))])


def _add_notes(bake: _Bake, report: dict) -> None:
    """The report's warnings and notes: lowered hips, overridden keys and their corrections, reduced keys,
    stretched bones and chains solved as one tree."""
    prepared, plans, moved_by, corrections = bake.prepared, bake.plans, bake.moved_by, bake.corrections
    if bake.hips_notes:
        report.setdefault("notes", []).extend(bake.hips_notes)
    # A chain whose keys were corrected around what moves them, with no frame left overridden,
    # needs no warning that its keys will not show.
    by_name = {e["chain"]: e for e in report["chains"]}
    shown = {name for name in corrections if not by_name[name].get("overridden_frames")}
    report["warnings"] = pole_warnings(prepared) + planting.empty_list_warnings(
        [p.settings for p in prepared] if plans is not None else []) + [
        w for name, sources in moved_by.items() if name not in shown
        for w in playback.override_warnings(f"chain {name!r}", sources)] + [
        w for p in prepared if plans and p.settings.name in plans and plans[p.settings.name].foot is not None
        for w in playback.override_warnings(f"chain {p.settings.name!r}'s foot",
                                            playback.overriding(bake.arm, [p.source.foot_bone]))] + (
        playback.unsteady_ik_warnings(bake.arm, [b.name for p in prepared for b in p.bones]))
    for name, fixed in corrections.items():
        still = np.isin(bake.frames, by_name[name]["overridden_frames"])
        report.setdefault("notes", []).append(
            f"chain {name!r}: constraints after its keys turn its bones in playback "
            f"({playback.describe(moved_by[name])}); on {int(fixed.tried.sum())} frame(s) the keys were corrected "
            f"toward playback giving the solved pose ({fixed.rounds} round(s), largest bone miss "
            f"{np.degrees(fixed.miss_before):.3g} deg before, {np.degrees(fixed.miss_after):.3g} deg after): "
            f"{int((fixed.tried & ~still).sum())} now on target")
    done = [r for r in bake.reductions if r is not None]
    if done:
        report["key_reduction"] = {
            "tolerance_m": bake.key_tolerance,
            "keys_before": sum(r["keys_before"] for r in done),
            "keys_after": sum(r["keys_after"] for r in done),
            "max_deviation_m": max(r["max_deviation_m"] for r in done),
            "measured_by": "playback",
            "chains": done,
        }
    for k, u in enumerate(bake.units):
        if bake.stretches[k] is not None and bake.stretches[k][1]:
            entry = report["chains"][u.members[0]]
            factors = bake.stretches[k][0]
            entry["stretch"] = [float(x) for x in factors.max(axis=1)]
            report.setdefault("notes", []).append(
                f"chain {entry['chain']!r}: stretched its bones toward the target on {bake.stretches[k][1]} frame(s) "
                f"(up to {factors.max():.3g}x their length), keyed as scale")
        elif u.is_tree and any(stretchy(prepared[m]) for m in u.members):
            report.setdefault("notes", []).append(
                f"chains {', '.join(repr(prepared[m].settings.name) for m in u.members)} share bones: Stretch is not "
                "applied to chains solved together as a tree; their bones keep their lengths")
    trees = [u for u in bake.units if u.is_tree]
    if trees:
        notes = report.setdefault("notes", [])
        notes.extend(
            f"chains {', '.join(repr(prepared[m].settings.name) for m in u.members)} share bones and were solved "
            f"together as one tree ({TREE_SOLVER} with an effector each), as Blender's IK solves them"
            for u in trees)
        notes.extend(
            f"chain {prepared[m].settings.name!r}: its pole bends its own bones below the ones it shares (Blender's "
            "IK drops the poles of chains it solves as one tree, so its bend there follows the solver)"
            for u in trees for m in u.members
            if prepared[m].source.pole is not None and _tail_start(u, prepared, m) < len(prepared[m].bones))


def _lower_hips(scene, arm, units, prepared, samples, plans: dict[str, planting.ContactPlan], frames,
                scale: float) -> list[str]:
    """Lower each chain's Lower Hips where a planted target is out of its reach (Grounder); returns notes.

    Chains naming the same hips (object, bone) are lowered together, by the largest drop any of
    them needs. Every hips is checked before any is keyed.

    Raises:
        BakeFailed: Hips that cannot be lowered (a connected or locked bone, ...), named.
    """
    groups: dict[tuple[str, str], list] = {}
    for k, p in enumerate(prepared):
        chain = p.settings
        if chain.name not in plans or chain.hips is None:
            continue
        s = _member_samples(units, samples, k)
        # The chain's reach as its solver bounds it: the base point no joint moves, and the length.
        bound = solver_for(p, scale).reach_bound
        hip = (s.base @ np.append(bound.bases[0], 1.0))[:, :3]
        groups.setdefault((chain.hips.name, chain.hips_bone), []).append((chain, hip, scale * float(bound.lengths[0])))
    for (name, bone), members in groups.items():
        try:
            bridge.check_lowerable(bpy.data.objects[name], bone)
        except bridge.BridgeError as err:
            raise BakeFailed(f"chain {members[0][0].name!r}: Lower Hips: {err}") from None
    notes = []
    for (name, bone), members in groups.items():
        try:
            drop = planting.hips_drop([plans[c.name] for c, _h, _r in members], [h for _c, h, _r in members],
                                      [r for _c, _h, r in members])
        except planting.PlantingFailed as err:
            raise BakeFailed(str(err)) from None
        if not np.any(drop > 0.0):
            continue
        bridge.lower_location(scene, list(frames), bpy.data.objects[name], bone, drop)
        what = f"{name}:{bone}" if bone else name
        notes.append(f"hips {what!r} lowered on {int(np.count_nonzero(drop > 0))} frame(s), at most "
                     f"{drop.max() * 1000:.3g} mm, so the planted targets of "
                     f"{', '.join(repr(c.name) for c, _h, _r in members)} stay within reach (keyed on its location)")
    return notes


def _write_feet(scene, arm, plans: dict[str, planting.ContactPlan], frames) -> None:
    """Key each planted foot's rotation: its planned world rotation under its leg as solved and keyed."""
    feet = [plan.foot for plan in plans.values() if plan.foot is not None]
    if not feet:
        return
    names = [f.bone for f in feet]
    local = bridge.sample_local_rotations(scene, list(frames), arm, names,
                                          world=np.stack([f.rotations for f in feet], axis=1))
    bridge.write_bone_rotations(arm, [arm.pose.bones[n] for n in names], np.asarray(frames, dtype=float), local,
                                replace=(frames[0], frames[-1]))


def _report_contacts(scene, arm, prepared, plans: dict[str, planting.ContactPlan], frames, report: dict) -> None:
    """Per chain with Contacts, skate and penetration of its target (and ball of the foot) before and of its tip
    (and ball) in playback after."""
    chains = [p for p in prepared if p.settings.name in plans]
    feet = [p for p in chains if plans[p.settings.name].foot is not None]
    sources = [bridge.TipSource(arm, p.bones[-1].name, p.settings.use_tail, p.settings.target, p.settings.target_bone)
               for p in chains] + [bridge.TipSource(arm, plans[p.settings.name].foot.bone, True, p.settings.target,
                                                    p.settings.target_bone) for p in feet]
    tips = bridge.sample_tips(scene, list(frames), sources)
    balls = {p.settings.name: ball[:, :3, 3] for p, (ball, _target) in zip(feet, tips[len(chains):])}
    by_name = {e["chain"]: e for e in report["chains"]}
    for p, (tip, _target) in zip(chains, tips):
        by_name[p.settings.name]["contacts"] = plans[p.settings.name].report(tip[:, :3, 3], frames,
                                                                             balls.get(p.settings.name))


def _levels(prepared: Sequence[PreparedChain]) -> list[int]:
    """Per chain, how many other chains its base hangs from (0: its base moves with none of them).

    A chain whose root sits below another chain's bones is solved after that chain is keyed,
    with its base sampled again, as Blender's IK evaluates the upper chain first.
    """
    owner = {b.name: k for k, p in enumerate(prepared) for b in p.bones}

    def parents(k: int) -> set[int]:
        found, bone = set(), prepared[k].bones[0].parent
        while bone is not None:
            if bone.name in owner:
                found.add(owner[bone.name])
            bone = bone.parent
        return found

    above = [parents(k) for k in range(len(prepared))]
    levels = [0] * len(prepared)
    for _ in range(len(prepared)):  # longest path in a forest of at most len(prepared) chains
        levels = [max((levels[j] + 1 for j in above[k]), default=0) for k in range(len(prepared))]
    return levels


def pole_warnings(prepared: Sequence[PreparedChain]) -> list[str]:
    """One line per chain whose pole its solver cannot use (the bake then ignores the pole)."""
    out = []
    by_name = {p.settings.name: p for p in prepared}
    for p in prepared:
        if p.source.pole is None or p.solver == aiming.SOLVER_NAME:  # an aim chain's "pole" is its up target
            continue
        others = {b.name for name in p.shares_with for b in by_name[name].bones}
        if p.bones[-1].name in others:
            out.append(f"chain {p.settings.name!r} shares all its bones down to its tip with "
                       f"{', '.join(map(repr, p.shares_with))}: they are solved together as one tree "
                       f"({TREE_SOLVER}), which ignores poles; the bend toward {p.source.pole.name!r} is not kept")
        elif "pole" not in solver_class(p.solver).call_options:
            out.append(f"chain {p.settings.name!r}: the {p.solver} solver ignores poles; "
                       f"pick Auto, two_bone or fabrik for the chain to bend toward {p.source.pole.name!r}")
    return out


def initial_q(p: PreparedChain, rotvecs: np.ndarray) -> np.ndarray:
    """The chain's pose as a configuration of its skeleton (moving joints only).

    Args:
        p: The prepared chain.
        rotvecs: (..., B, 3) rotation vectors of the chain bones' pose rotations [rad].

    Returns:
        (..., dof) configurations.
    """
    from ..ik_core import JointKind

    rotvecs = np.asarray(rotvecs, dtype=float)
    parts = []
    for pb_index, joint in enumerate(p.skeleton.joints):
        v = rotvecs[..., pb_index, :]
        if joint.kind is JointKind.BALL:
            parts.append(v)
        elif joint.dof == 1:
            # The angle about the hinge axis of the bone's rotation (its twist; swing discarded):
            # 2 atan2(sin(t/2) n . axis, cos(t/2)) for the rotation vector t n.
            t = np.sqrt(np.sum(v * v, axis=-1))
            half = np.where(t > 1e-12, np.sin(t / 2) / np.maximum(t, 1e-12), 0.5)
            parts.append((2.0 * np.arctan2((v @ joint.axis) * half, np.cos(t / 2)))[..., None])
    return np.concatenate(parts, axis=-1) if parts else np.zeros((*rotvecs.shape[:-2], 0))


def chain_rotations(p: PreparedChain, q: np.ndarray) -> tuple[list, np.ndarray]:
    """Bones that move and their (N, B, 3, 3) local rotations for configurations ``q`` (N, dof)."""
    from ..ik_core.model.kinematics import joint_motion

    bones, mats = [], []
    for i, joint in enumerate(p.skeleton.joints):
        if joint.dof:
            bones.append(p.bones[i])
            mats.append(joint_motion(p.skeleton, q, i)[..., :3, :3])
    return bones, np.stack(mats, axis=1) if mats else np.zeros((len(q), 0, 3, 3))


def _correct_overrides(scene, arm, units, prepared, samples, results, frames, moved_by: dict[str, dict],
                       plain: Sequence[bool]) -> dict[str, Correction]:
    """Key single chains again where constraints after their keys turn their bones in playback.

    Only chains whose keys constraints alone move (``moved_by``, per chain: not drivers, which
    set the channels outright), at full influence, without Stretch (``plain``), whose bones
    inherit their parents' rotation; see :mod:`.correction`. Frames the solver reached are
    candidates. Returns per chain corrected what the correction did.
    """
    out = {}
    for u, unit_samples, ok in zip(units, samples, plain):
        m = u.members[0]
        p, smp, res = prepared[m], unit_samples[0], results[m]
        if u.is_tree or not ok or p.solver == aiming.SOLVER_NAME or smp.full_target is not None:
            continue
        if not all(b.bone.use_inherit_rotation for b in p.bones):  # the local rotations read back assume it
            continue
        if not playback.keyable_around(moved_by[p.settings.name]) or not np.any(res.converged):
            continue
        bones, R = chain_rotations(p, res.q)
        fixed = correct_through_playback(scene, frames, arm, [b.name for b in bones], R,
                                         np.asarray(res.converged, dtype=bool),
                                         lambda keys, bones=bones: _write(arm, [(bones, keys)], frames, True))
        if fixed.tried.any():
            out[p.settings.name] = fixed
    return out


def _write(arm, poses: Sequence[tuple[list, np.ndarray]], frames, write_keys: bool) -> None:
    """Key (or pose) solved rotations: per unit, its bones and their (N, B, 3, 3) rotations."""
    bones, mats = [], []
    for b, R in poses:
        bones += b
        mats.append(R)
    R = np.concatenate(mats, axis=1)
    if write_keys:
        bridge.write_bone_rotations(arm, bones, np.asarray(frames, dtype=float), R, replace=(frames[0], frames[-1]))
    else:
        bridge.set_pose_rotations(bones, R[-1])


def configurations(p: PreparedChain, R: np.ndarray) -> np.ndarray:
    """(N, dof) configurations of the chain's (or tree's) skeleton for its moving bones' rotations (N, B, 3, 3).

    The inverse of :func:`chain_rotations`: a ball joint's rotation vector, a hinge's angle
    about its axis (of the rotation's twist about it).
    """
    parts = []
    k = 0
    for joint in p.skeleton.joints:
        if not joint.dof:
            continue
        v = rot.matrix_to_rotvec(R[:, k])
        k += 1
        if joint.dof == 3:
            parts.append(v)
            continue
        t = np.linalg.norm(v, axis=-1)
        along = (v @ np.asarray(joint.axis, dtype=float)) * np.where(t > 1e-12, np.sin(t / 2) / np.maximum(t, 1e-300),
                                                                     0.5)
        parts.append((2.0 * np.arctan2(along, np.cos(t / 2)))[:, None])
    return np.concatenate(parts, axis=1) if parts else np.zeros((len(R), 0))


# Rounds of keys added where playback (Bezier curves) strays from the bound the linear model kept.
_REDUCE_ROUNDS = 4


def _write_reduced(
    scene, arm, unit: SolveUnit, prepared, samples, pose, frames, tolerance: float, scale: float
) -> dict:
    """Key a unit's rotations on the fewest frames keeping each chain tip within ``tolerance`` [m] of the full bake.

    Frames are chosen on the channel values (:func:`~ik_core.take.key_reduction.fewest_keys`,
    tips by forward kinematics, curves as Blender plays auto-clamped keys without handle
    smoothing, which the written F-curves are set to), keyed, then played back: frames
    where a tip strays past the tolerance get keys too, and the range is keyed again, until
    playback keeps the bound (or every frame is keyed).

    Returns:
        Per unit: its chains, keys before and after, the largest deviation playback showed [m].
    """
    bones, R = pose
    p = unit.chain
    skeleton = p.skeleton
    values = bridge.rotation_channel_values(bones, R)
    effectors = [e for e in unit.effectors]
    full = effector_poses(skeleton, configurations(p, R), effectors)  # (N, E, 4, 4) in the base frame
    full = full[:, None] if full.ndim == 3 else full

    def deviation(fidx: np.ndarray, interpolated: np.ndarray) -> np.ndarray:
        q = configurations(p, bridge.channel_rotations(bones, interpolated))
        got = effector_poses(skeleton, q, effectors)
        got = got[:, None] if got.ndim == 3 else got
        return np.linalg.norm(got[..., :3, 3] - full[fidx][..., :3, 3], axis=-1).max(axis=-1) * scale

    frame_numbers = np.asarray(frames, dtype=float)
    base = samples[0].base
    expected = (base[:, None] @ full)[..., :3, 3]  # (N, E, 3) world tips of the full bake
    members = [prepared[k] for k in unit.members]
    sources = [bridge.TipSource(arm, m.bones[-1].name, m.settings.use_tail, m.settings.target, m.settings.target_bone)
               for m in members]
    must = np.zeros(len(frames), dtype=bool)
    for _ in range(_REDUCE_ROUNDS):
        kept = fewest_keys(values, deviation, tolerance, must_keep=must, interpolate=interpolate_auto_clamped)
        # Handles without smoothing: each depends on its neighbours only, as the model has them.
        bridge.write_bone_rotations(arm, bones, frame_numbers[kept], R[kept], replace=(frames[0], frames[-1]),
                                    smoothing="NONE")
        tips = np.stack([tip[:, :3, 3] for tip, _ in bridge.sample_tips(scene, list(frames), sources)], axis=1)
        off = np.linalg.norm(tips - expected, axis=-1).max(axis=-1)
        stray = off > tolerance
        if not stray.any() or must.all():
            break
        must |= stray
    return {"chains": [m.settings.name for m in members], "keys_before": int(values.size),
            "keys_after": int(len(kept) * values.shape[1]), "frames_kept": int(len(kept)),
            "max_deviation_m": float(off.max())}


def _report(arm, prepared, results, frames) -> dict:
    chains = []
    for p, res in zip(prepared, results):
        chains.append({
            "chain": p.settings.name,
            "bones": [b.name for b in p.bones],
            "solver": p.solver,
            "solver_setting": p.settings.solver,
            "tolerance_m": p.settings.tolerance,
            "converged": res.converged.tolist(),
            "position_error_m": res.position_error.tolist(),
            "rotation_error_rad": res.rotation_error.tolist(),
            "iterations": res.iterations.tolist(),
            "limit_hits": res.limit_hits.tolist(),
            "reasons": [str(r) for r in res.reason],
            "missed_frames": [int(f) for f, ok in zip(frames, res.converged) if not ok],
        })
    missed = sorted({f for c in chains for f in c["missed_frames"]})
    return {"armature": arm.name, "frames": [int(f) for f in frames], "chains": chains, "missed_frames": missed}


MARKER_PREFIX = "IK miss"


def clear_miss_markers(scene: bpy.types.Scene, armature: str, start: int, end: int) -> int:
    """Remove the armature's miss markers on frames ``start``..``end``; returns how many there were."""
    name = f"{MARKER_PREFIX}: {armature}"
    markers = [m for m in scene.timeline_markers if m.name == name and start <= m.frame <= end]
    for m in markers:
        scene.timeline_markers.remove(m)
    return len(markers)


def mark_missed_frames(scene: bpy.types.Scene, report: dict) -> None:
    """Replace this armature's miss markers in the range by one per missed frame."""
    frames = report["frames"]
    clear_miss_markers(scene, report["armature"], frames[0], frames[-1])
    for f in report["missed_frames"]:
        scene.timeline_markers.new(f"{MARKER_PREFIX}: {report['armature']}", frame=f)


def summary_line(report: dict) -> str:
    """One line for the panel: frames converged and the worst residual."""
    n = len(report["frames"])
    worst = max((max(c["position_error_m"], default=0.0) for c in report["chains"]), default=0.0)
    return f"{n - len(report['missed_frames'])}/{n} frames converged, worst error {worst * 1000:.3g} mm"


def frame_runs(frames: Sequence[int]) -> str:
    """'3-7, 12' style text for sorted frames (at most 10 runs shown)."""
    runs: list[list[int]] = []
    for f in frames:
        if runs and f == runs[-1][1] + 1:
            runs[-1][1] = f
        else:
            runs.append([f, f])
    text = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs[:10])
    return text + (f", ... ({len(runs)} runs)" if len(runs) > 10 else "")
