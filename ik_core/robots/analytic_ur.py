# SPDX-License-Identifier: GPL-3.0-or-later
"""Closed-form inverse kinematics of Universal Robots arms: all eight branches, batched over targets.

UR arms share one standard-DH structure: ``alpha = (pi/2, 0, 0, pi/2, -pi/2, 0)``,
``a = (0, a2, a3, 0, 0, 0)``, ``d = (d1, 0, 0, d4, d5, d6)``, no angle offsets. Joints 2-4 are
parallel, which decouples the problem (Hawkins, "Analytic Inverse Kinematics for the Universal
Robots UR-5/UR-10 Arms", 2013): the wrist-2 centre fixes joint 1, the tool orientation joints 5
and 6, and joints 2-4 form a planar 2R arm plus a sum; two roots each. Branch labels are
geometric, for an upright base (DH base Z up):

* shoulder ``"left"`` / ``"right"``: looking down and facing horizontally from the base axis
  toward the wrist-2 centre (joint 5), that centre sits left / right of the vertical plane in
  which the upper arm and forearm swing (the sideways offset is ``d4``).
* elbow ``"up"`` / ``"down"``: the elbow lies above / below the line from the shoulder
  (joint 2) to the wrist-1 centre (joint 4) in that plane.
* wrist ``"no_flip"`` / ``"flip"``: joint 5 in ``[0, pi]`` / ``(-pi, 0)``.

:class:`URParams` carries ``base`` (world to DH base) and ``tool`` (DH frame 6 to tool). In UR's
ROS descriptions, hence the presets, ``base_link`` is the DH base turned 180 degrees about Z and
``tool0`` is DH frame 6 (checked against the official UR5 URDF to 3e-10 m, its pi/2 rounding).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidInputError, require_finite
from ..model.euler import transform_inverse

TWO_PI = 2.0 * np.pi
# (shoulder, elbow, wrist) of solution index 4 * shoulder + 2 * elbow + wrist.
BRANCHES: tuple[tuple[str, str, str], ...] = tuple(
    (s, e, w) for s in ("left", "right") for e in ("up", "down") for w in ("no_flip", "flip")
)
# |sin q5| below this is a wrist singularity: joints 4 and 6 turn about one axis.
_WRIST_SINGULAR = 1e-12
_LIMIT_TOL = 1e-9


@dataclass(frozen=True, eq=False)
class URParams:
    """Kinematic parameters of one UR-family arm.

    Attributes:
        d1: Base to shoulder height [m].
        a2: Upper-arm length [m] (negative in UR's tables).
        a3: Forearm length [m] (negative in UR's tables).
        d4: Sideways offset of the wrist-1 axis [m].
        d5: Wrist-1 to wrist-2 offset [m].
        d6: Wrist-2 to flange offset [m].
        lower: (6,) lower joint limits [rad].
        upper: (6,) upper joint limits [rad].
        base: (4, 4) world (for presets: ``base_link``) to DH base frame.
        tool: (4, 4) DH frame 6 to the tool frame that targets refer to.
        name: Robot name for messages.

    Raises:
        InvalidInputError: Non-finite values, ``a2``, ``a3`` or ``d6`` equal to zero, bad shapes
            or ``lower > upper``.
    """

    d1: float
    a2: float
    a3: float
    d4: float
    d5: float
    d6: float
    lower: np.ndarray = field(default_factory=lambda: np.full(6, -TWO_PI))
    upper: np.ndarray = field(default_factory=lambda: np.full(6, TWO_PI))
    base: np.ndarray = field(default_factory=lambda: np.eye(4))
    tool: np.ndarray = field(default_factory=lambda: np.eye(4))
    name: str = "ur"

    def __post_init__(self) -> None:
        for key in ("d1", "a2", "a3", "d4", "d5", "d6"):
            value = float(getattr(self, key))
            if not np.isfinite(value) or (key in ("a2", "a3", "d6") and value == 0.0):
                raise InvalidInputError(f"URParams.{key} must be finite (and a2, a3, d6 non-zero), got {value}")
            object.__setattr__(self, key, value)
        for key, shape in (("lower", (6,)), ("upper", (6,)), ("base", (4, 4)), ("tool", (4, 4))):
            arr = np.array(getattr(self, key), dtype=float)
            frame = key in ("base", "tool")
            if arr.shape != shape or np.isnan(arr).any() or (frame and not np.isfinite(arr).all()):
                raise InvalidInputError(f"URParams.{key} must be {shape} numbers (finite for frames), got {arr}")
            arr.setflags(write=False)
            object.__setattr__(self, key, arr)
        if np.any(self.lower > self.upper):
            raise InvalidInputError(f"URParams limits need lower <= upper, got {self.lower} and {self.upper}")


def ur_forward(q: np.ndarray, params: URParams) -> np.ndarray:
    """Tool poses of UR configurations from the DH model.

    Args:
        q: (..., 6) joint angles [rad].
        params: The arm.

    Returns:
        (..., 4, 4) tool poses in the world frame, ``base @ A1 ... A6 @ tool``.

    Raises:
        InvalidInputError: If the last axis of ``q`` is not 6 or ``q`` is not finite.
    """
    q = np.asarray(q, dtype=float)
    if q.ndim == 0 or q.shape[-1] != 6:
        raise InvalidInputError(f"q must have shape (..., 6), got {q.shape}")
    require_finite("q", q)
    p = params
    rows = ((p.d1, 0.0, 1.0), (0.0, p.a2, 0.0), (0.0, p.a3, 0.0), (p.d4, 0.0, 1.0), (p.d5, 0.0, -1.0), (p.d6, 0.0, 0.0))
    T = p.base
    for i, (d, a, sa) in enumerate(rows):  # A_i = Rz(q_i) Tz(d) Tx(a) Rx(alpha), alpha in {0, +-pi/2}
        c, s, ca = np.cos(q[..., i]), np.sin(q[..., i]), 1.0 - abs(sa)
        A = np.zeros((*q.shape[:-1], 4, 4))
        A[..., 0, :] = np.stack([c, -s * ca, s * sa, a * c], axis=-1)
        A[..., 1, :] = np.stack([s, c * ca, -c * sa, a * s], axis=-1)
        A[..., 2, 1], A[..., 2, 2], A[..., 2, 3], A[..., 3, 3] = sa, ca, d, 1.0
        T = T @ A
    return T @ p.tool


def _raw_solutions(T06: np.ndarray, p: URParams, q6_ref: np.ndarray, margins: tuple[float, float]) -> tuple:
    """Unwrapped angles (8, 6, N), plus (8, N) flags: reachable, and clamped (to be verified).

    Branch axes come first and the batch last, so every operation runs over contiguous rows.
    """
    r = [[np.ascontiguousarray(T06[:, i, j]) for j in range(4)] for i in range(3)]
    (x0, y0, z0, px), (x1, y1, z1, py), (x2, y2, z2, pz) = r  # columns x6, y6, z6 and position
    # Joint 1: the wrist-2 centre sits d4 off the arm plane, which contains the base axis.
    wx, wy = px - p.d6 * z0, py - p.d6 * z1
    reach2 = wx * wx + wy * wy - p.d4 * p.d4
    reach = np.sqrt(np.maximum(reach2, 0.0))
    phi = np.arctan2(wy, wx) + np.pi / 2
    q1 = np.stack([phi + np.arctan2(reach, p.d4), phi + np.arctan2(-reach, p.d4)])  # left, right
    c1, s1 = np.cos(q1), np.sin(q1)
    # Joints 5 and 6: frame 1's z axis seen from frame 6 is (s5 c6, -s5 s6, c5).
    X, Y, c5 = s1 * x0 - c1 * x1, c1 * y1 - s1 * y0, s1 * z0 - c1 * z1
    s5a = np.hypot(X, Y)
    s5 = np.stack([s5a, -s5a], axis=1)  # (2 shoulder, 2 wrist: no_flip, flip, N)
    c5 = np.broadcast_to(c5[:, None], s5.shape)
    q5a = np.arctan2(s5a, c5[:, 0])
    q5 = np.stack([q5a, -q5a], axis=1)
    q6a = np.arctan2(Y, X)
    # The flipped wrist turns joint 6 by half a turn; wrapping later brings it back into range.
    q6 = np.stack([q6a, q6a + np.pi], axis=1)
    q6 = np.where(s5a[:, None] < _WRIST_SINGULAR, q6_ref, q6)
    c6, s6 = np.cos(q6), np.sin(q6)
    # Wrist-1 centre and frame 4's x axis, from the tool pose and joints 5, 6.
    p4x = px - p.d6 * z0 + p.d5 * (s6 * x0 + c6 * y0)
    p4y = py - p.d6 * z1 + p.d5 * (s6 * x1 + c6 * y1)
    p4z = pz - p.d6 * z2 + p.d5 * (s6 * x2 + c6 * y2)
    c5c6, c5s6 = c5 * c6, c5 * s6
    ux = c5c6 * x0 - c5s6 * y0 - s5 * z0
    uy = c5c6 * x1 - c5s6 * y1 - s5 * z1
    uz = c5c6 * x2 - c5s6 * y2 - s5 * z2
    c1b, s1b = c1[:, None], s1[:, None]
    ax = c1b * p4x + s1b * p4y  # wrist-1 centre in frame 1: x horizontal, y up
    ay = p4z - p.d1
    # Joints 2 and 3: planar two-link arm to the wrist-1 centre.
    c3 = (ax * ax + ay * ay - p.a2 * p.a2 - p.a3 * p.a3) / (2.0 * p.a2 * p.a3)
    s3a = np.sqrt(np.maximum(1.0 - c3 * c3, 0.0))
    # Elbow "up" when -a2 a3 sin(q3) ax > 0: the elbow is above the shoulder-to-wrist line.
    s3u = np.where(-p.a2 * p.a3 * ax >= 0.0, s3a, -s3a)
    s3 = np.stack([s3u, -s3u], axis=1)  # (2 shoulder, 2 elbow, 2 wrist, N)
    c3c = np.clip(c3, -1.0, 1.0)
    q3u = np.arctan2(s3u, c3c)
    q3 = np.stack([q3u, -q3u], axis=1)
    # q2 = atan2(ay, ax) - atan2(a3 s3, a2 + a3 c3), as one arctan2 of the difference angle.
    x2, y2 = p.a2 + p.a3 * c3c[:, None], p.a3 * s3
    axb, ayb = ax[:, None], ay[:, None]
    q2 = np.arctan2(ayb * x2 - axb * y2, axb * x2 + ayb * y2)
    q4 = np.arctan2(uz, c1b * ux + s1b * uy)[:, None] - q2 - q3
    q = np.empty((2, 2, 2, 6, len(px)))
    q[:, :, :, 0], q[:, :, :, 1], q[:, :, :, 2] = q1[:, None, None], q2, q3
    q[:, :, :, 3], q[:, :, :, 4], q[:, :, :, 5] = q4, q5[:, None], q6[:, None]
    # Slightly outside the workspace may be rounding at its edge: clamp, then verify by FK.
    margin1, margin3 = margins
    excess3 = np.abs(c3) - 1.0
    shape = (2, 2, 2, len(px))
    reachable = np.broadcast_to(((reach2 >= -margin1)[None, None] & (excess3 <= margin3))[:, None], shape)
    clamped = np.broadcast_to(((reach2 < 0.0)[None, None] | (excess3 > 0.0))[:, None], shape)
    return q.reshape(8, 6, -1), reachable.reshape(8, -1), clamped.reshape(8, -1)


def _wrap(raw: np.ndarray, lower: np.ndarray, upper: np.ndarray, q_ref: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pick per angle the 2 pi representative nearest ``q_ref`` that lies inside the limits.

    Shapes: raw (8, 6, N), lower and upper (6, 1), q_ref (6, N) [rad]. Returns the angles
    (8, 6, N) and an (8, N) flag, True where every angle of a solution fits its limits.
    """
    q = raw - TWO_PI * np.round((raw - q_ref) * (1.0 / TWO_PI))
    inside = (q >= lower) & (q <= upper)
    if inside.all():
        return q, np.ones((raw.shape[0], raw.shape[2]), dtype=bool)
    # Some angles are outside. All other representatives lie beyond the violated limit or
    # farther from q_ref, except one turn back toward the other limit: try that one.
    lo, hi = lower - _LIMIT_TOL, upper + _LIMIT_TOL
    q = np.where(q > hi, q - TWO_PI, np.where(q < lo, q + TWO_PI, q))
    found = (q >= lo) & (q <= hi)
    # Rounding may leave a value a hair outside a limit; a returned solution never is.
    q = np.where(found, np.clip(q, lower, upper), q)
    return q, found.all(axis=1)


def reference_configurations(q_ref: np.ndarray | None, batch: tuple[int, ...]) -> np.ndarray:
    """(*batch, 6) reference joint values [rad] to pick solutions near: ``q_ref`` broadcast, zeros for None."""
    if q_ref is None:
        return np.zeros((*batch, 6))
    ref = np.asarray(q_ref, dtype=float)
    require_finite("q_ref", ref)
    if ref.ndim == 0 or ref.shape[-1] != 6:
        raise InvalidInputError(f"q_ref must have shape (6,) or (..., 6), got {ref.shape}")
    try:
        return np.broadcast_to(ref, (*np.broadcast_shapes(batch, ref.shape[:-1]), 6))
    except ValueError:
        raise InvalidInputError(f"q_ref shape {ref.shape} does not broadcast with targets {batch}") from None


def ur_ik(
    targets: np.ndarray,
    params: URParams,
    q_ref: np.ndarray | None = None,
    *,
    tolerance: float = 1e-9,
) -> tuple[np.ndarray, np.ndarray]:
    """All closed-form IK solutions of a UR arm for a batch of tool poses.

    Args:
        targets: (..., 4, 4) tool poses in the world frame [m].
        params: The arm (see :func:`ur_params_from_preset`).
        q_ref: (6,) or (..., 6) reference configuration [rad], 0 by default. Each angle is
            the 2 pi representative nearest its reference that lies inside the limits, and at
            a wrist singularity (sin q5 = 0) joint 6 takes its reference value.
        tolerance: Targets at the edge of the workspace need a clamped square root or cosine;
            those solutions stay valid only if no entry of their pose differs from the target's
            by more than this (m for the position, about rad for the rotation); raise it to
            accept near misses just outside the workspace. Elsewhere solutions are exact.

    Returns:
        ``(q, valid)``: q (..., 8, 6) joint angles [rad] ordered as :data:`BRANCHES`, always
        finite; valid (..., 8) True where the branch exists, reaches the target and respects
        every limit. Invalid rows hold the nearest unreachable or out-of-limit attempt.

    Raises:
        InvalidInputError: Bad shapes or non-finite targets or references.
    """
    T = np.asarray(targets, dtype=float)
    if T.ndim < 2 or T.shape[-2:] != (4, 4):
        raise InvalidInputError(f"targets must have shape (..., 4, 4), got {T.shape}")
    require_finite("targets", T)
    if not (np.isfinite(tolerance) and tolerance >= 0):
        raise InvalidInputError(f"tolerance must be a finite number >= 0, got {tolerance!r}")
    ref = reference_configurations(q_ref, T.shape[:-2])
    batch = ref.shape[:-1]
    T = np.broadcast_to(T, (*batch, 4, 4)).reshape(-1, 4, 4)
    ref = np.ascontiguousarray(ref.reshape(-1, 6).T)  # (6, N)
    p = params
    T06 = T
    if not np.array_equal(p.base, np.eye(4)):
        T06 = transform_inverse(p.base) @ T06
    if not np.array_equal(p.tool, np.eye(4)):
        T06 = T06 @ transform_inverse(p.tool)
    # Clamping beyond these margins would move the tool by more than ~tolerance: invalid outright.
    margin1 = 4.0 * (abs(p.d4) + tolerance) * tolerance
    margin3 = 4.0 * (abs(p.a2) + abs(p.a3) + tolerance) * tolerance / abs(p.a2 * p.a3)
    raw, reachable, clamped = _raw_solutions(T06, p, ref[5], (margin1, margin3))
    q, inside = _wrap(raw, p.lower[:, None], p.upper[:, None], ref)
    valid = reachable & inside
    check = np.nonzero(clamped & valid)
    if check[0].size:
        # Rare: solutions at the workspace edge are verified by forward kinematics.
        miss = np.abs(ur_forward(q[check[0], :, check[1]], p) - T[check[1]]).max(axis=(-2, -1))
        valid[check] = miss <= tolerance
    q = np.ascontiguousarray(np.moveaxis(q, 2, 0)).reshape(*batch, 8, 6)
    return q, np.ascontiguousarray(valid.T).reshape(*batch, 8)


def select_branch(
    solutions: np.ndarray,
    valid: np.ndarray,
    *,
    branch: int | np.ndarray | None = None,
    q_prev: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pick one solution per target: a fixed branch, or the valid one nearest a previous pose.

    Args:
        solutions: (..., 8, 6) from :func:`ur_ik`.
        valid: (..., 8) from :func:`ur_ik`.
        branch: Branch index 0-7 (see :data:`BRANCHES`), scalar or (...,).
        q_prev: (6,) or (..., 6) previous configuration [rad]; the valid solution nearest it
            (Euclidean joint distance) wins. Pass the same array as ``q_ref`` to :func:`ur_ik`
            so the angles are already unwrapped next to it.

    Returns:
        ``(q, found, index)``: q (..., 6), found (...,) bool, index (...,) int. Where nothing
        valid is found, ``index`` is -1 and ``q`` is ``q_prev`` (nearest mode) or the
        requested branch's invalid attempt (branch mode).

    Raises:
        InvalidInputError: Neither or both of ``branch`` and ``q_prev`` given, a branch outside
            0-7, or bad shapes.
    """
    sol = np.asarray(solutions, dtype=float)
    ok = np.asarray(valid, dtype=bool)
    if sol.ndim < 2 or sol.shape[-2:] != (8, 6) or ok.shape != sol.shape[:-1]:
        raise InvalidInputError(f"need solutions (..., 8, 6) and valid (..., 8), got {sol.shape}, {ok.shape}")
    if (branch is None) == (q_prev is None):
        raise InvalidInputError("give exactly one of branch (an index 0-7) or q_prev (a configuration)")
    if branch is not None:
        b = np.broadcast_to(np.asarray(branch), sol.shape[:-2])
        if not np.issubdtype(b.dtype, np.integer) or np.any((b < 0) | (b > 7)):
            raise InvalidInputError(f"branch must be an integer index 0-7 (see BRANCHES), got {branch!r}")
        q = np.take_along_axis(sol, b[..., None, None], axis=-2)[..., 0, :]
        found = np.take_along_axis(ok, b[..., None], axis=-1)[..., 0]
        return q, found, np.where(found, b, -1)
    prev = np.asarray(q_prev, dtype=float)
    require_finite("q_prev", prev)
    if prev.ndim == 0 or prev.shape[-1] != 6:
        raise InvalidInputError(f"q_prev must have shape (6,) or (..., 6), got {prev.shape}")
    dist = np.where(ok, np.sum((sol - prev[..., None, :]) ** 2, axis=-1), np.inf)
    index = np.argmin(dist, axis=-1)
    found = np.any(ok, axis=-1)
    q = np.take_along_axis(sol, index[..., None, None], axis=-2)[..., 0, :]
    q = np.where(found[..., None], q, np.broadcast_to(prev, q.shape))
    return q, found, np.where(found, index, -1)


def ur_params_from_preset(name: str, folder: object = None) -> URParams:
    """The closed-form parameters of a UR robot preset, targets being poses of its ``"tool"``.

    Args:
        name: Preset name (see :func:`ik_core.robots.presets.list_presets`).
        folder: Optional preset folder (see :mod:`ik_core.robots.presets`).

    Returns:
        The preset's DH lengths, joint limits, base frame and tool frame (the preset's tool
        offset included).

    Raises:
        UnknownNameError: No preset has that name.
        InvalidInputError: The preset carries no UR-family ``"dh"`` block; the message lists
            the presets that do.
    """
    from .presets import list_presets, origin_matrix, preset_info

    info = preset_info(name, folder)
    dh = info.get("dh")
    if not isinstance(dh, dict) or dh.get("family") != "ur" or info["dof"] != 6:
        usable = [n for n in list_presets(folder) if (preset_info(n, folder).get("dh") or {}).get("family") == "ur"]
        raise InvalidInputError(
            f"robot preset {name!r} has no UR-family 'dh' block; presets with one: {', '.join(usable) or 'none'}"
        )

    def frame(entry: dict) -> np.ndarray:
        return origin_matrix(tuple(entry.get("xyz", (0, 0, 0))), tuple(entry.get("rpy", (0, 0, 0))))

    lower = np.array([-np.inf if v is None else v for v in info["lower"]])
    upper = np.array([np.inf if v is None else v for v in info["upper"]])
    tool = frame(dh.get("tool", {})) @ frame(info["tool"])
    dims = [dh[k] for k in ("d1", "a2", "a3", "d4", "d5", "d6")]
    return URParams(*dims, lower=lower, upper=upper, base=frame(dh.get("base", {})), tool=tool, name=info["name"])
