# SPDX-License-Identifier: GPL-3.0-or-later
"""Full body from three trackers on real motion capture (CMU 131_01..03), against a naive baseline.

Run from the repo root: ``.venvs/bench/bin/python bench/bench_fullbody.py [--json] [--plot PATH]``
(any venv with numpy works; with matplotlib the plot is a line chart, without it a heat map).

For each take the ground-truth skeleton and motion, and the three trackers made from them (a
headset 10 cm in front of and 8 cm above the head joint, a controller in each palm), come from
``mocap_takes.py`` beside this script. The body is calibrated on frame 0 (the subject stands)
and the whole take is solved.

Metrics, over the 20 role joints (bone heads) the mapping finds:
  MPJPE     mean joint position error [cm], all / upper (spine, neck, head, arms) / lower
            (pelvis, legs); MPJRE mean bone rotation error [deg] (world frames, both relative
            to the same reference bone frames).
  jitter    mean norm of the third difference of joint positions [m/s^3] (ground truth in
            brackets: real motion has jerk too).
  skate     mean horizontal ankle motion per frame while the ankle is within 2 cm of its
            standing height [cm/frame] (ground truth in brackets).
  track     head and hand distance to their tracker targets [mm]: mean and max over frames
            where the target is reachable, and the share of reachable hand frames.
  fps       solved frames per second (best of three runs of the whole take).
The baseline puts the pelvis straight under the head at standing pelvis height, the trunk
rigid, the legs straight down and each arm straight from the shoulder toward its hand target.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mocap_takes import TAKES, load  # noqa: E402

from ik_core.humanoid import calibrate, solve_body  # noqa: E402
from ik_core.humanoid.geometry import exp_so3, mv, normalize, rot_z  # noqa: E402
from ik_core.humanoid.trunk import head_heading, heading_of  # noqa: E402


def naive(body, trackers: np.ndarray, frame_time: float) -> np.ndarray:
    """Baseline poses (N, J, 4, 4): see the module docstring."""
    n, J = trackers.shape[0], len(body.names)
    target = {k: trackers[:, t] @ body.tracker_offsets[k] for t, k in enumerate(("head", "hand_l", "hand_r"))}
    heading = head_heading(body, target["head"][:, :3, :3], 0.0)
    Q = rot_z(heading - float(heading_of(body.forward)))
    D = np.repeat(Q[:, None], J, axis=1)
    P = np.zeros((n, J, 3))
    P[:, 0] = target["head"][:, :3, 3]
    P[:, 0, 2] = body.floor + body.pelvis_height
    head = body.index("head")
    D[:, head] = target["head"][:, :3, :3] @ body.ref[head, :3, :3].T
    for j in range(1, J):
        P[:, j] = P[:, body.parents[j]] + mv(D[:, body.parents[j]], body.offsets[j])
    for k, side in enumerate("lr"):
        limb = body.arms[k]
        goal = target[f"hand_{side}"]
        rest = normalize(mv(Q, limb.upper + limb.lower))
        want = normalize(goal[:, :3, 3] - P[:, limb.root])
        axis = np.cross(rest, want)
        angle = np.arctan2(np.linalg.norm(axis, axis=-1), np.sum(rest * want, axis=-1))
        S = exp_so3(normalize(axis) * angle[:, None]) @ Q
        D[:, limb.root] = D[:, limb.mid] = S
        D[:, limb.end] = goal[:, :3, :3] @ body.ref[limb.end, :3, :3].T
        P[:, limb.mid] = P[:, limb.root] + mv(S, limb.upper)
        P[:, limb.end] = P[:, limb.mid] + mv(S, limb.lower)
    world = np.broadcast_to(np.eye(4), (n, J, 4, 4)).copy()
    world[..., :3, :3] = D @ body.ref[:, :3, :3]
    world[..., :3, 3] = P
    return world


def metrics(
    body,
    world: np.ndarray,
    gt: np.ndarray,
    targets: dict,
    frame_time: float,
    reachable: np.ndarray | None = None,
) -> dict[str, float]:
    names = body.names
    lower = np.array([r == "pelvis" or r.startswith(("thigh", "shin", "foot", "toe")) for r in names])
    err = np.linalg.norm(world[..., :3, 3] - gt[..., :3, 3], axis=-1)
    rel = np.swapaxes(world[..., :3, :3], -1, -2) @ gt[..., :3, :3]
    rot = np.degrees(np.arccos(np.clip((np.trace(rel, axis1=-2, axis2=-1) - 1.0) / 2.0, -1.0, 1.0)))
    out = {
        "mpjpe_cm": 100 * err.mean(),
        "upper_cm": 100 * err[:, ~lower].mean(),
        "lower_cm": 100 * err[:, lower].mean(),
        "mpjre_deg": rot.mean(),
        "jitter": jerk(world[..., :3, 3], frame_time),
        "jitter_gt": jerk(gt[..., :3, 3], frame_time),
        "skate_cm": skate(body, world, frame_time),
        "skate_gt_cm": skate(body, gt, frame_time),
    }
    track = np.stack(
        [
            np.linalg.norm(world[:, body.index(k), :3, 3] - targets[k][:, :3, 3], axis=-1)
            for k in ("head", "hand_l", "hand_r")
        ],
        axis=1,
    )
    ok = np.ones_like(track, dtype=bool) if reachable is None else reachable
    out["track_mean_mm"] = 1000 * track[ok].mean()
    out["track_max_mm"] = 1000 * track[ok].max()
    out["within_1mm_pct"] = 100 * np.mean(track[ok] <= 1e-3)
    out["hands_reachable_pct"] = 100 * ok[:, 1:].mean()
    out["per_joint"] = err
    return out


def jerk(p: np.ndarray, frame_time: float) -> float:
    return float(np.linalg.norm(np.diff(p, n=3, axis=0), axis=-1).mean() / frame_time**3)


def skate(body, world: np.ndarray, frame_time: float) -> float:
    moves = []
    for k, side in enumerate("lr"):
        a = world[:, body.index(f"foot_{side}"), :3, 3]
        low = a[:, 2] < body.floor + body.ankle_height[k] + 0.02
        both = low[1:] & low[:-1]
        moves.append(np.linalg.norm(np.diff(a[:, :2], axis=0), axis=-1)[both])
    m = np.concatenate(moves)
    return float(100 * m.mean()) if m.size else 0.0


def run_take(take: str) -> tuple[list[dict], np.ndarray, tuple[str, ...]]:
    bvh, roles, gt, trackers = load(take)
    body = calibrate(roles, gt[0], trackers[0], floor=0.0)
    ft = bvh.frame_time
    best, pose = np.inf, None
    for _ in range(3):
        t0 = time.perf_counter()
        pose = solve_body(body, trackers, ft)
        best = min(best, time.perf_counter() - t0)
    targets = {
        k: trackers[:, t] @ body.tracker_offsets[k] for t, k in enumerate(("head", "hand_l", "hand_r"))
    }
    t0 = time.perf_counter()
    base = naive(body, trackers, ft)
    base_time = time.perf_counter() - t0
    rows = []
    for method, world, secs, ok in (
        ("articulate", pose.world, best, pose.reachable[:, :3]),
        ("naive", base, base_time, None),
    ):
        m = metrics(body, world, gt, targets, ft, ok)
        m.pop("per_joint")
        rows.append({"take": take, "method": method, "frames": len(gt), **m, "fps": len(gt) / secs})
    return rows, metrics(body, pose.world, gt, targets, ft)["per_joint"], body.names


COLUMNS = (
    ("take", "take", "{:<10}"),
    ("method", "method", "{:<10}"),
    ("frames", "frames", "{:>6}"),
    ("MPJPE", "mpjpe_cm", "{:>6.2f}"),
    ("upper", "upper_cm", "{:>6.2f}"),
    ("lower", "lower_cm", "{:>6.2f}"),
    ("MPJRE", "mpjre_deg", "{:>6.1f}"),
    ("jitter", "jitter", "{:>6.0f}"),
    ("[gt]", "jitter_gt", "{:>5.0f}"),
    ("skate", "skate_cm", "{:>6.3f}"),
    ("[gt]", "skate_gt_cm", "{:>5.3f}"),
    ("trk mean", "track_mean_mm", "{:>9.4f}"),
    ("trk max", "track_max_mm", "{:>9.4f}"),
    ("<=1mm%", "within_1mm_pct", "{:>6.1f}"),
    ("reach%", "hands_reachable_pct", "{:>6.1f}"),
    ("fps", "fps", "{:>7.0f}"),
)


def print_table(rows: list[dict]) -> None:
    widths = [len(fmt.format(rows[0][key])) for _, key, fmt in COLUMNS]
    print(
        " ".join(
            f"{title:>{w}}" if i > 1 else f"{title:<{w}}"
            for i, ((title, _, _), w) in enumerate(zip(COLUMNS, widths))
        )
    )
    for r in rows:
        print(" ".join(fmt.format(r[key]) for _, key, fmt in COLUMNS))
    print(
        "units: MPJPE/upper/lower cm, MPJRE deg, jitter m/s^3, skate cm/frame, trk (tracker error over "
        "reachable frames) mm; <=1mm% = reachable tracker-frames within 1 mm"
    )


def save_plot(path: Path, series: list[tuple[str, np.ndarray, tuple[str, ...]]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        write_heatmap(path, np.concatenate([e for _, e, _ in series], axis=0).T)
        return
    groups = {
        "trunk": ("pelvis", "spine", "neck", "head"),
        "arms": ("clavicle", "upper_arm", "forearm", "hand"),
        "legs": ("thigh", "shin"),
        "feet": ("foot", "toe"),
    }
    fig, axes = plt.subplots(
        2 * len(series),
        1,
        figsize=(12, 6.4 * len(series)),
        squeeze=False,
        gridspec_kw={"height_ratios": [1, 1.4] * len(series)},
    )
    for k, (take, err, names) in enumerate(series):
        line, heat = axes[2 * k, 0], axes[2 * k + 1, 0]
        t = np.arange(err.shape[0]) / 120.0
        for label, prefixes in groups.items():
            cols = [i for i, r in enumerate(names) if r.startswith(prefixes)]
            line.plot(t, 100 * err[:, cols].mean(axis=1), label=label, lw=1)
        line.plot(t, 100 * err.mean(axis=1), label="all", color="k", lw=1.5)
        line.set_title(f"{take}: joint position error, group means")
        line.set_ylabel("cm")
        line.set_xlim(t[0], t[-1])
        line.grid(alpha=0.3)
        line.legend(loc="upper right", ncol=5, fontsize=8)
        image = heat.imshow(
            100 * err.T,
            aspect="auto",
            cmap="magma",
            vmin=0,
            vmax=40,
            interpolation="nearest",
            extent=(t[0], t[-1], len(names) - 0.5, -0.5),
        )
        heat.set_yticks(range(len(names)), names, fontsize=7)
        heat.set_title(f"{take}: per-joint position error [cm]")
        fig.colorbar(image, ax=heat, pad=0.01)
    axes[-1, 0].set_xlabel("s")
    fig.tight_layout()
    fig.savefig(path, dpi=70)


def write_heatmap(path: Path, err: np.ndarray) -> None:
    """Joints x frames error heat map (0..30 cm, dark to bright) as a grey PNG, numpy + zlib only."""
    img = (np.clip(err / 0.3, 0, 1) * 255).astype(np.uint8)
    img = np.repeat(img, 8, axis=0)
    raw = b"".join(b"\x00" + row.tobytes() for row in img)

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return len(data).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")

    ihdr = img.shape[1].to_bytes(4, "big") + img.shape[0].to_bytes(4, "big") + b"\x08\x00\x00\x00\x00"
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object per row")
    parser.add_argument("--plot", type=Path, default=ROOT / "out" / "bench_fullbody.png")
    args = parser.parse_args()
    rows, series = [], []
    for take in TAKES:
        take_rows, err, names = run_take(take)
        rows += take_rows
        series.append((take, err, names))
    if args.json:
        for r in rows:
            print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()}))
    else:
        print_table(rows)
    save_plot(args.plot, series)
    sys.stdout.flush()
    print(f"plot: {args.plot}", file=sys.stderr)


if __name__ == "__main__":
    main()
