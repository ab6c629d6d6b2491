# SPDX-License-Identifier: GPL-3.0-or-later
"""Reach: how far each effector gets from its chain's root, and the pose stretched toward a target beyond."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError
from ..model.kinematics import joint_motion, rest_transforms
from ..model.rotations import matrix_to_rotvec, rotvec_to_matrix
from ..model.skeleton import JointKind, Skeleton
from .fabrik.primitives import EPS, shortest_rotation


@dataclass(frozen=True)
class ReachBound:
    """Per effector, a point no variable moves and an upper bound on the effector's distance from it.

    A target farther than ``length`` from ``base`` is certainly out of reach, whatever the
    joint limits: no configuration puts the effector there. The converse does not hold (limits,
    or links that cannot line up, keep some nearer targets out of reach too).

    Attributes:
        bases: (E, 3) base points [m], in the skeleton's root frame.
        lengths: (E,) upper bounds [m] on the effector's distance from its base point, >= 0.

    Raises:
        InvalidInputError: Shapes that do not match, or lengths that are negative or NaN.
    """

    bases: np.ndarray
    lengths: np.ndarray

    def __post_init__(self) -> None:
        bases = np.asarray(self.bases, dtype=float)
        lengths = np.asarray(self.lengths, dtype=float)
        if bases.ndim != 2 or bases.shape[1] != 3 or lengths.shape != bases.shape[:1]:
            raise InvalidInputError(
                f"a reach bound needs (E, 3) bases and (E,) lengths, got {bases.shape} and {lengths.shape}"
            )
        if not (np.isfinite(bases).all() and np.all(lengths >= 0)):
            raise InvalidInputError(f"reach bases must be finite and lengths >= 0 m, got lengths {lengths}")
        object.__setattr__(self, "bases", bases)
        object.__setattr__(self, "lengths", lengths)

    @classmethod
    def of(cls, skeleton: Skeleton, effector_ids: Sequence[int]) -> ReachBound:
        """The bound of the effectors ``effector_ids`` (indices into ``skeleton.effectors``).

        The base point is the first moving joint's origin on the path to the effector, which no
        variable moves. The length sums the rest distances between successive moving joint
        origins and from the last one to the effector: a revolute or ball joint turns about its
        origin, so the distance from it to the next pivot never changes, and a prismatic joint
        adds its largest stroke. An effector that nothing moves has length 0 at its own position.
        """
        rest = rest_transforms(skeleton)
        bases, lengths = [], []
        for e in effector_ids:
            eff = skeleton.effectors[e]
            tip = (rest[eff.joint] @ eff.offset)[:3, 3]
            moving = [i for i in skeleton.ancestors(eff.joint) if skeleton.joints[i].kind is not JointKind.FIXED]
            if not moving:
                bases.append(tip)
                lengths.append(0.0)
                continue
            points = [rest[i][:3, 3] for i in moving] + [tip]
            length = float(sum(np.linalg.norm(b - a) for a, b in zip(points[:-1], points[1:])))
            for i in moving:
                joint = skeleton.joints[i]
                if joint.kind is JointKind.PRISMATIC:
                    length += max(abs(joint.lower), abs(joint.upper))
            bases.append(points[0])
            lengths.append(length)
        return cls(np.array(bases).reshape(-1, 3), np.array(lengths))

    def excess(self, positions: np.ndarray) -> np.ndarray:
        """How far [m] each effector's target lies beyond its reach (negative: inside the bound).

        Args:
            positions: (..., E, 3) target positions [m] in the skeleton's root frame.

        Returns:
            (..., E) distance from the base point minus the length [m].
        """
        d = np.asarray(positions, dtype=float) - self.bases
        return np.sqrt(np.add.reduce(d * d, axis=-1)) - self.lengths


def stretch_toward(
    skeleton: Skeleton, q: np.ndarray, effector: int, targets: np.ndarray, max_step: float = np.inf,
    use_stiffness: bool = False,
) -> np.ndarray:
    """Each link of an effector's chain turned, root to tip, to point at its target.

    A good start for a target beyond reach, whose best pose is (where limits allow) the chain
    stretched straight toward it: iterative solvers straighten a bent chain toward such a
    target ever more slowly. A joint's link runs from its origin to the next moving joint's
    origin (to the effector after the last); a ball joint turns it by the smallest rotation, a
    hinge as far as its axis lets it, each then projected onto its limits; prismatic joints
    keep their values.

    Args:
        skeleton: The skeleton.
        q: (n, dof) starts inside the limits.
        effector: Index of the effector in ``skeleton.effectors``.
        targets: (n, 3) target positions [m].
        max_step: Largest turn [rad] of any joint (a solver's cap on one pass).
        use_stiffness: Turn each joint (1 - stiffness) times as far (a solver's pass does).

    Returns:
        (n, dof) configurations inside the limits.
    """
    q = np.array(q, dtype=float)
    eff = skeleton.effectors[effector]
    chain = skeleton.ancestors(eff.joint)
    turning = [i for i in chain if skeleton.joints[i].dof and skeleton.joints[i].kind is not JointKind.PRISMATIC]
    rest = rest_transforms(skeleton)
    # From each turning joint's frame to the point its link ends at (the next moving joint's
    # origin, or the effector): rigid, as only fixed joints lie in between.
    moving = [i for i in chain if skeleton.joints[i].kind is not JointKind.FIXED]
    ends = {}
    for i in turning:
        later = [k for k in moving if k > i]
        end = rest[later[0]] if later else rest[eff.joint] @ eff.offset
        ends[i] = (np.linalg.inv(rest[i]) @ end)[:, 3]
    W = np.broadcast_to(np.eye(4), (len(q), 4, 4))
    for i in chain:
        joint = skeleton.joints[i]
        before = W @ joint.origin  # the joint's frame before its own motion
        if i in ends:
            s = skeleton.q_index[i]
            keep = 1.0 - joint.stiffness if use_stiffness else 1.0
            R = before[:, :3, :3]
            origin = before[:, :3, 3]
            a = (before @ joint_motion(skeleton, q, i) @ ends[i])[:, :3] - origin
            b = targets - origin
            if joint.kind is JointKind.BALL:
                na, nb = np.linalg.norm(a, axis=-1), np.linalg.norm(b, axis=-1)
                ok = (na > EPS) & (nb > EPS)
                D = shortest_rotation(a / np.where(ok, na, 1.0)[:, None], b / np.where(ok, nb, 1.0)[:, None])
                if keep != 1.0 or np.isfinite(max_step):
                    d = keep * matrix_to_rotvec(D)
                    angle = np.linalg.norm(d, axis=-1, keepdims=True)
                    D = rotvec_to_matrix(d * np.minimum(1.0, max_step / np.where(angle > 0, angle, 1.0)))
                # D acts in world axes: in the joint's parent-side frame it is R^T D R.
                turned = np.swapaxes(R, -1, -2) @ D @ R @ rotvec_to_matrix(q[:, s : s + 3])
                value = np.where(ok[:, None], matrix_to_rotvec(turned), q[:, s : s + 3])
                q[:, s : s + 3] = value if joint.limit is None else joint.limit.project(value)
            else:
                z = R @ joint.axis
                # Only the components across the axis turn: z.(a x b) and a_perp.b_perp.
                num = np.einsum("ni,ni->n", np.cross(a, b), z)
                den = np.einsum("ni,ni->n", a, b) - np.einsum("ni,ni->n", a, z) * np.einsum("ni,ni->n", b, z)
                turn = np.clip(keep * np.arctan2(num, den), -max_step, max_step)
                q[:, s] = np.clip(q[:, s] + turn, joint.lower, joint.upper)
        W = before @ joint_motion(skeleton, q, i)
    return q
