# SPDX-License-Identifier: GPL-3.0-or-later
"""Feet that stay planted (issue 27): foot skate, ground penetration, pops and MPJPE on CMU motion capture.

Run from the repo root: ``.venvs/core/bin/python bench/bench_contacts.py [--json] [--quick]
[--takes cmu_131_01,...] [--variants base,mirrored,...]`` (numpy only).

Inputs: the CMU takes of data/mocap and their variants (mirrored, re-proportioned, turned, 30 fps,
tracker noise, a hand dropout), built by ``mocap_takes.py`` exactly as ``bench_fullbody.py`` reads
them. Each is calibrated on frame 0 (the performer stands, floor at z = 0) and solved by
``solve_body`` from the head and hand trackers. Rows per take and variant:

- ``capture``: the motion capture itself, the reference (its own skate and dips).
- ``before``: the three-tracker body with its feet as planned, no contact planting.
- ``drift``: planted as ``after``, but every step triggered by the body's drift from the feet
  (``GaitOptions(cadence=None)``: the solve before the step timing was read from the head);
  three-tracker variants only (tracked feet do not step by plan).
- ``after``: the same with contacts detected on the feet and planted (``SolveOptions.plant``),
  the walks' steps timed from the head (``GaitOptions.cadence``).
- ``hips``: planted as ``after``, with the hips moved toward held feet beyond the legs' reach
  (``SolveOptions.hip_reach`` = :data:`HIP_REACH`: the trunk swung about the head, which stays
  exact); three-tracker variants only (``after`` leaves it off, the default). Not a goal row.
- ``timed``: planted as ``after``, but with the capture's own step timing fed in
  (``solve_body(steps=steps_from_contacts(...))``: each foot lifts on the frame its last joint
  leaves the ground and lands on the first frame one touches it, see :func:`capture_steps`):
  what the planning and planting give when the timing is right, so ``after`` minus ``timed``
  is what reading the timing from the head costs. Three-tracker variants only; not a goal row.

With ``--why``, a second table sorts each ``after``, ``hips`` and ``timed`` row's sliding contact frames by
cause, from the solve's own planted flags of that foot over the capture's contact (the frames
from the capture's landing to its lift): ``held`` the solved foot is planted yet slides (a blend,
a release); ``early`` it lifted during the contact (planted earlier in it, not later); ``late``
it lands during the contact (planted later in it, not earlier); ``inside`` it steps in the middle
of the contact (planted before and after: a step the capture did not take, or the other foot's);
``off`` it never stands during the contact; and ``heel`` the share of those frames on the ball
of the foot after the captured heel rose (the toe joint's contact outlasting the ankle's).

And per take a chain-bake variant, ``retarget`` (see :func:`retarget_rows`): the capture copied
onto longer legs, feet sliding (``before``); its root's path warped to the legs, feet only kept
above the ground (``warped``); then each foot chain's target planted by ``plant_foot`` (``after``).

Foot joints: the ankle (``foot_*`` role) and the ball of the foot (``toe_*``) of each leg, four
joints; each joint's ground level ``g`` is the 5th percentile of its captured height over the
take (where it rests when planted), and ``h`` its height above that level.

- ``skate``: the common foot-skate measure, mean over the frames where ``h < H`` (H = 3.3 cm)
  of the joint's horizontal displacement since the frame before weighted by
  ``clip(2 - 2^(h/H), 0, 1)`` [mm/frame].
- ``skate%``: the skate ratio of the goal, the share of *contact frames* on which the joint
  *slides*. Contact frames are the frames where the capture says the joint is planted (its
  captured ``h < H`` and its captured horizontal speed under 20 cm/s: the measurement the issue
  started from); the joint slides on a frame when its horizontal speed over that frame (its
  displacement since the frame before over the frame time) exceeds 20 cm/s. Only a motion that
  steps when the performer steps can meet it; the capture is 0 by definition.
- ``near%``: the same sliding share over the motion's own near-ground frames (``h < H``, what the
  common measure calls contact on generated motion); the capture row shows what real feet do
  there (heel strikes and toe-offs pass through the band at speed), so it is a diagnostic, not a goal.
- ``pen``: ground penetration, the largest depth of a foot joint below its ground level [mm].
- ``pops``: frames on which a foot joint's velocity changes by more than 1.5 times the
  largest change of that joint in the capture (at the same frame rate).
- ``MPJPE`` / ``lower``: mean joint position error against the capture over the role joints /
  the pelvis and legs [cm].
- ``trk``: the largest head or hand distance to its calibrated tracker target over the frames
  where it is reachable [mm]; ``<=1mm``: share of those tracker-frames within 1 mm.
- ``fps``: frames solved per second (best of three runs of the whole take).

The goals of issue 27 (item 4; for ``retarget``, the chain-bake goals) are checked on the
``after`` rows and printed ok/MISS.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mocap_takes import PROPORTIONS, TAKES, VARIANTS, Take, load, make_take, reproportioned  # noqa: E402

from ik_core.contacts import (  # noqa: E402
    contact_intervals,
    foot_skate,
    keep_above_ground,
    lift_above_ground,
    plant_foot,
    planted_frames,
    root_drop_for_reach,
    warp_root_path,
)
from ik_core.contacts.measures import BAND as H  # noqa: E402  (near-ground band of the skate measure [m])
from ik_core.contacts.measures import SLIDE_SPEED  # noqa: E402  (a near-ground foot faster than this slides [m/s])
from ik_core.humanoid import TRACKERS, GaitOptions, SolveOptions, calibrate, solve_body  # noqa: E402

try:
    from ik_core.humanoid import steps_from_contacts
except ImportError:  # a checkout before known step timing: no timed rows
    steps_from_contacts = None

POP_FACTOR = 1.5  # a pop: a velocity change beyond this many times the capture's largest
STEP_MOVE = 0.05  # a gap between a captured foot's contacts is a step when the foot moved this far [m]
FOOT_ROLES = ("foot_l", "toe_l", "foot_r", "toe_r")
HIP_REACH = np.radians(20.0)  # the ``hips`` rows' largest swing of the trunk toward held feet [rad]
GOALS = {
    "mpjpe_cm": ("MPJPE <= 6 cm", lambda r: r["mpjpe_cm"] <= 6.0),
    "skate_ratio_pct": ("skate ratio <= 2 % of contact frames", lambda r: r["skate_ratio_pct"] <= 2.0),
    "penetration_mm": ("penetration <= 1 mm", lambda r: r["penetration_mm"] <= 1.0),
    "track_max_mm": ("head and hands within 1 mm where reachable", lambda r: r["track_max_mm"] <= 1.0),
    "fps": (">= 1,000 frames/s", lambda r: r["fps"] >= 1000.0),
}
# Goals of chain bakes of motion capture onto a rig with other proportions (issue 27, Benchmarks).
CHAIN_GOALS = {
    "skate_ratio_pct": ("chain bake: skate ratio <= 0.5 % of contact frames", lambda r: r["skate_ratio_pct"] <= 0.5),
    "penetration_mm": ("chain bake: penetration <= 1 mm", lambda r: r["penetration_mm"] <= 1.0),
}


def solve_options(planted: bool, cadence: bool = True, hips: bool = False) -> SolveOptions | None:
    """The body solve's options for the ``before``, ``drift``, ``after`` and ``hips`` rows (None: skip the row)."""
    if "plant" not in SolveOptions.__dataclass_fields__:
        return SolveOptions() if not planted else None
    if hips:
        if "hip_reach" not in SolveOptions.__dataclass_fields__:
            return None
        return SolveOptions(plant=planted, hip_reach=HIP_REACH)
    if not cadence:
        if "cadence" not in GaitOptions.__dataclass_fields__:
            return None
        return SolveOptions(plant=planted, gait=GaitOptions(cadence=None))
    return SolveOptions(plant=planted)


def captured_contacts(take: Take) -> tuple[np.ndarray, np.ndarray]:
    """The capture's foot joints (N, F, 3) [m] and their contact frames (N, F) (see the module docstring)."""
    names = take.roles.roles
    cols = [names.index(r) for r in FOOT_ROLES if r in names]
    cap = take.gt[:, cols][..., :3, 3]  # (N, F, 3)
    # Where each joint rests: its 5th percentile height, or lower where the performer stood
    # lower at the calibration frame (the solve's floor is where the feet stood then).
    ground = np.minimum(np.percentile(cap[..., 2], 5, axis=0), cap[0, :, 2])  # (F,)
    return cap, planted_frames(cap, take.frame_time, ground, H, SLIDE_SPEED)


def capture_steps(take: Take):
    """The capture's step timing as :func:`steps_from_contacts` takes it, or None without it.

    A foot rests while its ankle or its ball is in contact (the ball's contact outlasts the
    ankle's as the heel rises); a gap between two rests is a step where the ankle moved more
    than ``STEP_MOVE`` across it (shorter gaps, a heel lifting and settling, are closed).
    """
    if steps_from_contacts is None:
        return None
    cap, planted = captured_contacts(take)
    rest = np.stack([planted[:, 0] | planted[:, 1], planted[:, 2] | planted[:, 3]], axis=1)
    for f in (0, 1):
        runs = contact_intervals(rest[:, f])
        for (_, stop), (start, _) in zip(runs[:-1], runs[1:]):
            if np.linalg.norm(cap[start, 2 * f] - cap[stop - 1, 2 * f]) < STEP_MOVE:
                rest[stop:start, f] = True
    return steps_from_contacts(rest)


def skate_causes(take: Take, positions: np.ndarray, contacts: np.ndarray) -> dict[str, int]:
    """The sliding contact frames of ``positions`` (N, J, 3) sorted by cause (``--why``), from ``contacts`` (N, 2)."""
    cap, planted = captured_contacts(take)
    names = take.roles.roles
    own = positions[:, [names.index(r) for r in FOOT_ROLES if r in names]]
    speed = np.zeros(own.shape[:2])
    speed[1:] = np.linalg.norm(np.diff(own[..., :2], axis=0), axis=-1) / take.frame_time
    out = dict.fromkeys(("held", "early", "late", "inside", "off", "heel"), 0)
    for j, role in enumerate(r for r in FOOT_ROLES if r in names):
        k = 0 if role.endswith("_l") else 1
        mine = contacts[:, k]
        for a, b in contact_intervals(planted[:, j]):
            for t in np.flatnonzero(speed[a:b, j] > SLIDE_SPEED) + a:
                before, after = mine[a:t].any(), mine[t + 1 : b].any()
                if mine[t]:
                    out["held"] += 1
                elif before and after:
                    out["inside"] += 1
                elif before:
                    out["early"] += 1
                elif after:
                    out["late"] += 1
                else:
                    out["off"] += 1
                if role.startswith("toe") and not planted[t, j - 1]:
                    out["heel"] += 1
    return out


def foot_metrics(take: Take, positions: np.ndarray) -> dict[str, float]:
    """Skate, skate ratios, penetration and pops of the foot joints of ``positions`` (N, J, 3) [m]."""
    names = take.roles.roles
    ft = take.frame_time
    cols = [names.index(r) for r in FOOT_ROLES if r in names]
    cap, planted = captured_contacts(take)
    own = positions[:, cols]
    ground = np.minimum(np.percentile(cap[..., 2], 5, axis=0), cap[0, :, 2])  # (F,)
    m = foot_skate(own, ft, ground, planted, H, SLIDE_SPEED)
    dv_cap = np.linalg.norm(np.diff(cap, n=2, axis=0), axis=-1) / ft
    dv_own = np.linalg.norm(np.diff(own, n=2, axis=0), axis=-1) / ft
    pops = np.any(dv_own > POP_FACTOR * dv_cap.max(axis=0), axis=1)
    return {
        "skate_mm": 1000.0 * m.skate,
        "skate_ratio_pct": 100.0 * m.skate_ratio,
        "near_ratio_pct": 100.0 * m.near_ratio,
        "contact_frames": m.contact_frames,
        "penetration_mm": 1000.0 * m.penetration,
        "pops": int(pops.sum()),
    }


def joint_errors(take: Take, positions: np.ndarray) -> dict[str, float]:
    """MPJPE over all role joints and over the pelvis and legs [cm]."""
    names = take.roles.roles
    lower = np.array([r == "pelvis" or r.startswith(("thigh", "shin", "foot", "toe")) for r in names])
    err = np.linalg.norm(positions - take.gt[..., :3, 3], axis=-1)
    return {"mpjpe_cm": 100.0 * float(err.mean()), "lower_cm": 100.0 * float(err[:, lower].mean())}


def pose_trackers(take: Take) -> tuple[str, ...]:
    """Names of the trackers a take wears (those with a finite pose on frame 0)."""
    return tuple(n for n, T in zip(TRACKERS, take.trackers[0]) if np.all(np.isfinite(T)))


def run_variant(take: Take) -> list[dict]:
    """The capture, before and after rows of one take variant."""
    worn = {n: T for n, T in zip(TRACKERS, take.trackers[0]) if np.all(np.isfinite(T))}
    body = calibrate(take.roles, take.gt[0], worn, floor=0.0)
    head = {"take": take.name, "variant": take.variant, "frames": take.frames}
    rows = [
        {
            **head,
            "method": "capture",
            **joint_errors(take, take.gt[..., :3, 3]),
            **foot_metrics(take, take.gt[..., :3, 3]),
            "track_max_mm": float("nan"),
            "within_1mm_pct": float("nan"),
            "fps": float("nan"),
        }
    ]
    tracked_feet = "foot_l" in pose_trackers(take)
    methods = [
        ("before", False, True),
        ("drift", True, False),
        ("after", True, True),
        ("hips", True, True),
        ("timed", True, True),
    ]
    for method, planted, cadence in methods:
        options = solve_options(planted, cadence, method == "hips")
        if options is None or (method in ("drift", "timed") and tracked_feet):
            continue
        steps = capture_steps(take) if method == "timed" else None
        if method == "timed" and steps is None:
            continue
        best, pose = np.inf, None
        for _ in range(3):
            t0 = time.perf_counter()
            if steps is None:
                pose = solve_body(body, take.trackers, take.frame_time, options)
            else:
                pose = solve_body(body, take.trackers, take.frame_time, options, steps=steps)
            best = min(best, time.perf_counter() - t0)
        reach = pose.reachable[:, :3]
        err = pose.tracker_error[:, :3][reach]
        rows.append(
            {
                **head,
                "method": method,
                **joint_errors(take, pose.positions),
                **foot_metrics(take, pose.positions),
                "track_max_mm": 1000.0 * float(err.max()) if err.size else 0.0,
                "within_1mm_pct": 100.0 * float(np.mean(err <= 1e-3)) if err.size else 100.0,
                "fps": take.frames / best,
                "causes": skate_causes(take, pose.positions, pose.contacts),
            }
        )
    return rows


def retarget_rows(name: str) -> list[dict]:
    """Chain-bake rows: the take copied onto longer legs with the root's ground path unscaled, then planted.

    The rig is the ``proportions`` variant's (legs x1.10, arms x0.90, spine x0.95). Copying the
    capture's joint rotations onto it with the root's ground path as captured (its height
    scaled) is the plain retarget whose feet slide: the longer legs step farther than the root
    moves (``before``). For ``warped`` and ``after`` the root's ground path is first warped to
    the legs (``warp_root_path``, ratio 1.10) and the whole body carried with it; ``warped``
    then only keeps the feet above the ground (``keep_above_ground``, ``lift_above_ground``),
    a diagnostic of the warp alone. For ``after`` each foot chain's target (the ankle, with the
    foot's rotation) then goes through ``plant_foot`` with the default thresholds: the ankle
    held over the contacts detected on its path (resting height: its 5th percentile), the ball
    of the foot over its own (its resting height: its 5th percentile), the foot turned about the
    ankle to keep it, and lifted where the ball would be below the ground; then
    ``root_drop_for_reach`` (99.9 % of the leg's length) lowers the whole body where a planted
    ankle is out of reach. The reference (contact frames, MPJPE) is the ``proportions``
    variant, the motion such legs make; the knees are not re-solved here (the rows measure the
    feet, whose targets a two-bone chain reaches exactly wherever they are within reach).
    """
    bvh, roles, _, _ = load(name)
    names = roles.roles
    true = make_take(name, "proportions")
    ft = true.frame_time
    slid = reproportioned(bvh, stride_scaled=False)[:, [bvh.index(roles[r]) for r in names]]
    head = {"take": name, "variant": "retarget", "frames": true.frames}
    before = slid[..., :3, 3]
    t0 = time.perf_counter()
    # Stride warping: the root's ground path scaled by the legs' ratio (about the capture's origin, where the
    # capture's own coordinates put it), every joint carried along with it.
    root = slid[:, names.index("pelvis"), :3, 3]
    shift = warp_root_path(root, PROPORTIONS[0][1], anchor=np.zeros(3)) - root
    slid = slid.copy()
    slid[..., :3, 3] += shift[:, None]
    after = slid[..., :3, 3].copy()
    warped = after.copy()  # the warp and the ground alone, no planting (a diagnostic row)
    feet, hips, ankles, planted, reach = [], [], [], [], []
    for side in "lr":
        a, t, h, k = (names.index(f"{r}_{side}") for r in ("foot", "toe", "thigh", "shin"))
        ankle, R, ball = slid[:, a, :3, 3], slid[:, a, :3, :3], slid[:, t, :3, 3]
        rest = float(np.percentile(ankle[:, 2], 5))
        toe_in_foot = R[0].T @ (ball[0] - ankle[0])  # the foot is rigid
        toe_rest = float(np.percentile(ball[:, 2], 5))
        plant = plant_foot(ankle, R, toe_in_foot, ft, 0.0, rest, toe_rest)
        target, contact = plant.ankle, plant.contact
        after[:, a] = target
        after[:, t] = target + np.einsum("nij,j->ni", plant.rotations, toe_in_foot)
        grounded = lift_above_ground(keep_above_ground(ankle, 0.0, rest), R, toe_in_foot, 0.0, toe_rest)
        warped[:, a] = grounded
        warped[:, t] = grounded + np.einsum("nij,j->ni", R, toe_in_foot)
        feet += [a, t]
        hips.append(slid[:, h, :3, 3])
        ankles.append(target)
        planted.append(contact)
        bones = slid[0, [h, k, a], :3, 3]
        reach.append(0.999 * float(np.sum(np.linalg.norm(np.diff(bones, axis=0), axis=-1))))
    hips_, ankles_, planted_ = np.stack(hips, 1), np.stack(ankles, 1), np.stack(planted, 1)
    drop = root_drop_for_reach(hips_, ankles_, np.array(reach), planted_, ft)
    body = [j for j in range(len(names)) if j not in feet]
    after[:, body, 2] -= drop[:, None]
    seconds = time.perf_counter() - t0
    lowered = hips_ - drop[:, None, None] * np.array([0.0, 0.0, 1.0])
    out_of_reach = (np.linalg.norm(ankles_ - lowered, axis=-1) > np.array(reach) + 1e-9) & planted_
    nan = {"track_max_mm": float("nan"), "within_1mm_pct": float("nan")}
    return [
        {**head, "method": "before", **joint_errors(true, before), **foot_metrics(true, before), **nan,
         "fps": float("nan")},
        {**head, "method": "warped", **joint_errors(true, warped), **foot_metrics(true, warped), **nan,
         "fps": float("nan")},
        {**head, "method": "after", **joint_errors(true, after), **foot_metrics(true, after), **nan,
         "fps": true.frames / seconds, "hips_lowered_frames": int(np.count_nonzero(drop > 0)),
         "max_drop_mm": 1000.0 * float(drop.max()), "planted_out_of_reach": int(out_of_reach.sum())},
    ]


COLUMNS = (
    ("take", "take", "{:<10}"),
    ("variant", "variant", "{:<11}"),
    ("method", "method", "{:<7}"),
    ("frames", "frames", "{:>6}"),
    ("MPJPE", "mpjpe_cm", "{:>6.2f}"),
    ("lower", "lower_cm", "{:>6.2f}"),
    ("skate", "skate_mm", "{:>6.2f}"),
    ("skate%", "skate_ratio_pct", "{:>6.2f}"),
    ("near%", "near_ratio_pct", "{:>6.2f}"),
    ("pen", "penetration_mm", "{:>6.2f}"),
    ("pops", "pops", "{:>5}"),
    ("trk", "track_max_mm", "{:>8.4f}"),
    ("<=1mm", "within_1mm_pct", "{:>6.1f}"),
    ("fps", "fps", "{:>7.0f}"),
)


def print_table(rows: list[dict]) -> None:
    """The rows as a fixed-width table, with the units below."""
    widths = [max(len(title), len(fmt.format(rows[0][key]))) for title, key, fmt in COLUMNS]
    print(" ".join(f"{t:<{w}}" if i < 3 else f"{t:>{w}}" for i, ((t, _, _), w) in enumerate(zip(COLUMNS, widths))))
    for r in rows:
        cells = []
        for i, ((_, key, fmt), w) in enumerate(zip(COLUMNS, widths)):
            value = r[key]
            text = "-" if isinstance(value, float) and np.isnan(value) else fmt.format(value)
            cells.append(f"{text:<{w}}" if i < 3 else f"{text:>{w}}")
        print(" ".join(cells))
    print(
        "units: MPJPE/lower cm; skate mm/frame (weighted, near-ground frames); skate%: capture-planted frames "
        "sliding > 20 cm/s; near%: own near-ground frames sliding > 20 cm/s; pen mm; trk mm (reachable)"
    )


def print_causes(rows: list[dict]) -> None:
    """The ``--why`` table: each after, hips and timed row's sliding contact frames by cause."""
    keys = ("held", "early", "late", "inside", "off", "heel")
    print(f"{'take':<10} {'variant':<11} {'method':<7} {'slide':>6} " + " ".join(f"{k:>6}" for k in keys))
    for r in rows:
        if r["method"] in ("after", "hips", "timed") and "causes" in r:
            c = r["causes"]
            total = sum(c[k] for k in keys[:-1])
            cells = " ".join(f"{c[k]:>6}" for k in keys)
            print(f"{r['take']:<10} {r['variant']:<11} {r['method']:<7} {total:>6} {cells}")
    print(
        "sliding contact frames: held = the solved foot planted; early = lifted during the captured contact; "
        "late = landed during it; inside = stepped in its middle; off = never stood in it; heel = of those, "
        "toe frames after the captured heel rose"
    )


def goal_lines(rows: list[dict]) -> list[dict]:
    """Each goal of issue 27 on the ``after`` rows: item 4's for the body solve, the chain bakes' for ``retarget``."""
    out = []
    for goals, chain in ((GOALS, False), (CHAIN_GOALS, True)):
        judged = [r for r in rows if r["method"] == "after" and (r["variant"] == "retarget") == chain]
        if not judged:
            continue
        for key, (text, test) in goals.items():
            misses = [r for r in judged if not test(r)]
            worst = max(r[key] for r in judged) if key != "fps" else min(r[key] for r in judged)
            out.append(
                {
                    "goal": text,
                    "met": len(judged) - len(misses),
                    "rows": len(judged),
                    "worst": worst,
                    "ok": not misses,
                    "misses": [f"{r['take']}/{r['variant']}" for r in misses],
                }
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object per row")
    parser.add_argument("--quick", action="store_true", help="one take, base and 30fps variants")
    parser.add_argument("--takes", default=",".join(TAKES), help="comma-separated take names")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated variants")
    parser.add_argument("--no-retarget", action="store_true", help="leave out the chain-bake retarget rows")
    parser.add_argument("--why", action="store_true", help="also sort each row's sliding contact frames by cause")
    args = parser.parse_args()
    takes = args.takes.split(",")
    variants = args.variants.split(",")
    if args.quick:
        takes, variants = takes[:1], ["base", "30fps"]
    rows = []
    for name in takes:
        for variant in variants:
            rows += run_variant(make_take(name, variant))
        if not args.no_retarget:
            rows += retarget_rows(name)
    goals = goal_lines(rows)
    if args.json:
        for table, items in (("rows", rows), ("goals", goals)):
            for r in items:
                # NaN (not measured: the capture's own tracker error, say) is null in JSON
                rounded = {
                    k: (None if np.isnan(v) else round(v, 4)) if isinstance(v, float) else v for k, v in r.items()
                }
                print(json.dumps({"table": table, **rounded}))
        return
    print_table(rows)
    print()
    if args.why:
        print_causes(rows)
        print()
    for g in goals:
        state = "ok  " if g["ok"] else "MISS"
        missed = f"; missed: {', '.join(g['misses'])}" if g["misses"] else ""
        print(f"{state} {g['goal']}: {g['met']}/{g['rows']} rows, worst {g['worst']:.4g}{missed}")
    for r in rows:
        if "planted_out_of_reach" in r:
            print(
                f"{r['take']} retarget: hips lowered on {r['hips_lowered_frames']} frames (at most "
                f"{r['max_drop_mm']:.1f} mm), planted ankles out of reach after it: {r['planted_out_of_reach']}"
            )


if __name__ == "__main__":
    main()
