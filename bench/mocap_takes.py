# SPDX-License-Identifier: GPL-3.0-or-later
"""The CMU takes of data/mocap as benchmark inputs: ground-truth role bones, three trackers, and variants.

Shared by ``bench_fullbody.py`` and ``bench_contacts.py`` (bench scripts import it from their own
folder). A take is read with ``ik_core.formats.bvh`` (y-up BVH converted to z-up, metres); its
role bones (``detect_roles``) are the ground truth, and three trackers are made from them: a
headset 10 cm in front of and 8 cm above the head joint, and a controller in each palm, each with
a fixed rotation away from the bone frame.

Variants (:data:`VARIANTS`), each a new ground truth with its own trackers:

- ``base``: the take as captured (120 Hz).
- ``mirrored``: reflected through the body's sagittal plane (x -> -x), left and right swapped.
- ``proportions``: the skeleton re-proportioned before forward kinematics: legs x1.10 (the root
  translation too), arms x0.90 (upper arm, forearm, hand), spine, neck and head x0.95.
- ``turned``: the whole take turned 90 degrees about the vertical and moved (0.5, -1.0) m.
- ``30fps``: every fourth frame (30 Hz).
- ``noise``: tracker positions with white noise of 2 mm and rotations of 0.5 degree (standard
  deviation per axis, seeded per take); the ground truth is the clean capture.
- ``dropout``: the left hand tracker lost (NaN) for 0.5 s from 40 % of the take.
- ``feet``: five trackers, a tracker strapped on each ankle besides the three (pelvis absent,
  its column NaN), all with the noise of ``noise``: the case where the feet follow trackers
  and planting must hold them still.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ik_core.formats.bvh import Y_UP_TO_Z_UP, read_bvh  # noqa: E402
from ik_core.humanoid import RoleMap, detect_roles  # noqa: E402
from ik_core.humanoid.geometry import exp_so3, rot_z  # noqa: E402

MOCAP = ROOT / "data" / "mocap"
TAKES = ("cmu_131_01", "cmu_131_02", "cmu_131_03")
VARIANTS = ("base", "mirrored", "proportions", "turned", "30fps", "noise", "dropout", "feet")


def offset(rotvec: tuple[float, float, float], shift: tuple[float, float, float]) -> np.ndarray:
    """A (4, 4) rigid offset: rotation vector [deg], then translation [m]."""
    T = np.eye(4)
    T[:3, :3] = exp_so3(np.radians(np.array(rotvec, dtype=float)))
    T[:3, 3] = shift
    return T


# bone -> tracker transforms in the BVH bone frames (y along the bone, z forward for the head).
HEADSET = offset((-90.0, 0.0, 0.0), (0.0, 0.08, 0.10))
CONTROLLER_L = offset((20.0, 0.0, 70.0), (0.0, -0.07, 0.03))
CONTROLLER_R = offset((20.0, 0.0, -70.0), (0.0, -0.07, 0.03))
ANKLE_STRAP = offset((0.0, 15.0, 0.0), (0.0, 0.03, 0.05))

# BVH joint name parts of each re-proportioned group, and the scale of its bone offsets.
PROPORTIONS = (
    (("Hip", "Knee", "Ankle", "Toe"), 1.10),
    (("Elbow", "Wrist", "hand", "Finger", "Thumb"), 0.90),
    (("lowerback", "Chest", "Neck", "lowerneck", "Head"), 0.95),
)


@dataclass(frozen=True, eq=False)
class Take:
    """One benchmark input.

    Attributes:
        name: Take name (``cmu_131_01``).
        variant: One of :data:`VARIANTS`.
        roles: Role map of the CMU skeleton.
        gt: (N, J, 4, 4) ground-truth world transforms of the role bones, ``roles.roles`` order [m].
        trackers: (N, T, 4, 4) tracker poses [m] in ``ik_core.humanoid.TRACKERS`` order (NaN where
            lost): head, left hand and right hand (T = 3), and for ``feet`` an absent pelvis and
            both feet (T = 6).
        frame_time: Seconds per frame.
    """

    name: str
    variant: str
    roles: RoleMap
    gt: np.ndarray
    trackers: np.ndarray
    frame_time: float

    @property
    def frames(self) -> int:
        """Number of frames."""
        return self.gt.shape[0]


def trackers_from(gt: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
    """(N, 3, 4, 4) headset and controllers worn on the ground-truth bones ``gt`` (N, J, 4, 4)."""
    return np.stack(
        [
            gt[:, names.index("head")] @ HEADSET,
            gt[:, names.index("hand_l")] @ CONTROLLER_L,
            gt[:, names.index("hand_r")] @ CONTROLLER_R,
        ],
        axis=1,
    )


def load(take: str):
    """The base take: ``(bvh, roles, gt, trackers)`` (see :class:`Take` for the arrays)."""
    bvh = read_bvh(MOCAP / f"{take}.bvh")
    roles = detect_roles(bvh.bones())
    world = bvh.world_transforms(z_up=True)
    cols = [bvh.index(roles[r]) for r in roles.roles]
    gt = world[:, cols]
    return bvh, roles, gt, trackers_from(gt, roles.roles)


def reproportioned(bvh, stride_scaled: bool = True) -> np.ndarray:
    """(N, J_bvh, 4, 4) z-up world transforms of the BVH with :data:`PROPORTIONS` applied.

    With ``stride_scaled`` the root's whole translation grows with the legs (the motion a
    longer-legged performer makes); without it only its height does, as a retarget that copies
    joint rotations and the root's ground path onto longer legs does: its feet slide.
    """
    local = bvh.local_transforms()
    root = [i for i, j in enumerate(bvh.joints) if j.parent < 0]
    for parts, scale in PROPORTIONS:
        for i, name in enumerate(bvh.names):
            # The root's translation is the hips' place, not a bone ("Hip" names it too, "Hips"):
            # it is scaled once, below.
            if i not in root and any(p in name for p in parts):
                local[:, i, :3, 3] *= scale
    legs = PROPORTIONS[0][1]
    if stride_scaled:
        local[:, root, :3, 3] *= legs  # the hips ride higher on longer legs
    else:
        local[:, root, 1, 3] *= legs  # BVH y is up: the height only
    world = np.empty_like(local)
    for i, joint in enumerate(bvh.joints):
        world[:, i] = local[:, i] if joint.parent < 0 else world[:, joint.parent] @ local[:, i]
    return Y_UP_TO_Z_UP @ world


def _mirror_columns(names: tuple[str, ...]) -> list[int]:
    """For each role, the column of its other-side twin (itself for the trunk)."""
    swap = {"_l": "_r", "_r": "_l"}
    return [names.index(n[:-2] + swap[n[-2:]]) if n[-2:] in swap else i for i, n in enumerate(names)]


def make_take(name: str, variant: str = "base") -> Take:
    """Build one take and variant (see the module docstring).

    Args:
        name: One of :data:`TAKES`.
        variant: One of :data:`VARIANTS`.

    Returns:
        The take.
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; valid: {', '.join(VARIANTS)}")
    bvh, roles, gt, trackers = load(name)
    ft = bvh.frame_time
    names = roles.roles
    if variant == "mirrored":
        M = np.diag([-1.0, 1.0, 1.0, 1.0])
        gt = (M @ gt @ M)[:, _mirror_columns(names)]
    elif variant == "proportions":
        world = reproportioned(bvh)
        gt = world[:, [bvh.index(roles[r]) for r in names]]
    elif variant == "turned":
        T = np.eye(4)
        T[:3, :3] = rot_z(np.radians(90.0))
        T[:3, 3] = (0.5, -1.0, 0.0)
        gt = T @ gt
    elif variant == "30fps":
        gt, ft = gt[::4], ft * 4
    if variant in ("mirrored", "proportions", "turned", "30fps"):
        trackers = trackers_from(gt, names)
    trackers = trackers.copy()
    if variant == "feet":
        feet = np.stack([gt[:, names.index(f"foot_{s}")] @ ANKLE_STRAP for s in "lr"], axis=1)
        trackers = np.concatenate([trackers, np.full_like(trackers[:, :1], np.nan), feet], axis=1)
    if variant in ("noise", "feet"):
        rng = np.random.default_rng(int(name[-2:]))
        n, T = trackers.shape[:2]
        trackers[..., :3, 3] += rng.normal(0.0, 0.002, (n, T, 3))
        trackers[..., :3, :3] = exp_so3(rng.normal(0.0, np.radians(0.5), (n, T, 3))) @ trackers[..., :3, :3]
    elif variant == "dropout":
        n = trackers.shape[0]
        start = int(0.4 * n)
        trackers[start : start + int(round(0.5 / ft)), 1] = np.nan
    return Take(name, variant, roles, np.ascontiguousarray(gt), trackers, float(ft))
