# SPDX-License-Identifier: GPL-3.0-or-later
"""Stretching a chain toward targets beyond its reach, as Blender's IK constraint with Stretch does.

With Stretch on, Blender lengthens the bones whose IK Stretch is above 0 (a uniform scale of
each bone, its children following) so the chain's end reaches a target it cannot reach at its
own length. Here a chain first solves at its own length; on the frames it misses, its stretchy
bones lengthen in proportion to their stretch weights and the frame is solved again on the
longer chain, until it reaches or the bones hit :data:`MAX_STRETCH`. Frames the chain reaches
at its own length keep the bones' lengths (Blender's solver may shorten them there too; the
end lands on the target either way).

Stretch weights follow Blender's solver, which gives a bone's stretch the freedom
``ik_stretch ** 2``; the share each bone takes is close to, not the same as, Blender's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..errors import InvalidInputError
from ..model.skeleton import Effector, Skeleton
from ..solvers.base import IKResult

MAX_STRETCH = 10.0  # a bone lengthens to at most this many times its own length
ROUNDS = 4  # solves per missed frame on ever longer chains
# Lengthen by the miss times OVERSHOOT plus SLACK of the chain's length, so the target falls inside
# reach with the chain still bent a little: a solver converges slowly at full extension.
OVERSHOOT = 1.02
SLACK = 0.01


def stretch_weights(ik_stretch: ArrayLike) -> np.ndarray:
    """(J,) how much each joint's bone stretches, from Blender's per-bone IK Stretch (J,) in [0, 1]."""
    s = np.clip(np.asarray(ik_stretch, dtype=float), 0.0, 1.0)
    return s * s


def stretched_skeleton(skeleton: Skeleton, factors: ArrayLike) -> Skeleton:
    """The skeleton with each joint's bone scaled by ``factors`` (J,): what its children hang from moves out.

    A bone scaled by ``f`` carries its children's origins and its effectors' offsets ``f`` times
    as far (Blender's inherited scale); rotations and limits are unchanged.
    """
    f = np.asarray(factors, dtype=float)
    if f.shape != (len(skeleton.joints),) or not np.all(np.isfinite(f)) or np.any(f <= 0):
        raise InvalidInputError(f"factors must be {len(skeleton.joints)} finite values > 0, got {factors!r}")
    joints = []
    for joint in skeleton.joints:
        origin = joint.origin.copy()
        if joint.parent >= 0:
            origin[:3, 3] *= f[joint.parent]
        joints.append(dataclasses.replace(joint, origin=origin))
    effectors = []
    for eff in skeleton.effectors:
        offset = eff.offset.copy()
        offset[:3, 3] *= f[eff.joint]
        effectors.append(Effector(eff.name, eff.joint, offset))
    return Skeleton(joints, effectors, name=skeleton.name, preferred_q=skeleton.preferred_q)


def stretch_factors(weights: np.ndarray, lengths: np.ndarray, extra: float) -> np.ndarray:
    """(J,) scale factors that add ``extra`` length [m] to the chain, shared by ``weights`` (J,).

    Bone ``j`` of length ``lengths[j]`` [m] lengthens by ``extra * weights[j] / sum(weights)``.
    """
    share = weights / weights.sum()
    return 1.0 + extra * share / np.maximum(lengths, 1e-12)


@dataclass
class StretchedTake:
    """A take after stretching.

    Attributes:
        result: The take's result, stretched frames replaced by their solve on the longer chain.
        factors: (N, J) scale of each joint's bone per frame (1 where nothing stretched).
        stretched: (N,) frames where some bone lengthened.
    """

    result: IKResult
    factors: np.ndarray
    stretched: np.ndarray


def stretch_take(
    result: IKResult,
    skeleton: Skeleton,
    ik_stretch: ArrayLike,
    lengths: ArrayLike,
    solve_frame: Callable[[Skeleton, int, np.ndarray], IKResult],
    scale: float = 1.0,
) -> StretchedTake:
    """Stretch a solved take toward its targets on the frames it missed.

    Args:
        result: The take solved at the chain's own length, batch shape (N,); errors in world
            units (the skeleton's units times ``scale``).
        skeleton: The chain's skeleton.
        ik_stretch: (J,) Blender's IK Stretch per joint's bone, in [0, 1].
        lengths: (J,) each joint's bone length [m], in the skeleton's units.
        solve_frame: ``solve_frame(skeleton, frame, q0)`` solves frame ``frame`` (an index into
            the take) on ``skeleton`` from ``q0`` (dof,), returning a result of batch shape (1,)
            with errors in world units.
        scale: World units per skeleton unit (the armature's scale).

    Returns:
        A :class:`StretchedTake`. A frame that still misses at :data:`MAX_STRETCH` keeps its
        best (longest) attempt, converged False, its reason saying how far it stretched.
    """
    weights = stretch_weights(ik_stretch)
    lengths = np.asarray(lengths, dtype=float)
    n = len(result.converged)
    factors = np.ones((n, len(skeleton.joints)))
    stretched = np.zeros(n, dtype=bool)
    if weights.shape != lengths.shape or weights.shape != (len(skeleton.joints),):
        raise InvalidInputError(f"ik_stretch and lengths must have {len(skeleton.joints)} values each")
    if not np.any(weights > 0) or result.converged.all():
        return StretchedTake(result, factors, stretched)
    out = dataclasses.replace(result, q=result.q.copy(), converged=result.converged.copy(),
                              position_error=result.position_error.copy(),
                              rotation_error=result.rotation_error.copy(), iterations=result.iterations.copy(),
                              reason=result.reason.copy(), limit_hits=result.limit_hits.copy())
    # The most a bone may add before it passes MAX_STRETCH: the tightest bone bounds the chain.
    stretchy = weights > 0
    share = weights / weights.sum()
    max_extra = float(np.min((MAX_STRETCH - 1.0) * lengths[stretchy] / share[stretchy]))
    slack = SLACK * float(lengths.sum())
    for f in np.flatnonzero(~result.converged):
        extra, q0 = 0.0, result.q[f]
        for _ in range(ROUNDS):
            extra = min(extra + OVERSHOOT * float(out.position_error[f]) / scale + slack, max_extra)
            grow = stretch_factors(weights, lengths, extra)
            attempt = solve_frame(stretched_skeleton(skeleton, grow), int(f), q0)
            out.q[f], q0 = attempt.q[0], attempt.q[0]
            out.converged[f], out.position_error[f] = attempt.converged[0], attempt.position_error[0]
            out.rotation_error[f] = attempt.rotation_error[0]
            out.iterations[f] += attempt.iterations[0]
            out.limit_hits[f] = attempt.limit_hits[0]
            factors[f], stretched[f] = grow, True
            if attempt.converged[0] or extra >= max_extra:
                break
        grown = float(np.max(factors[f]))
        if not out.converged[f]:
            out.reason[f] = (f"stretched bones up to {grown:.3g}x their length and still "
                             f"{out.position_error[f]:.3g} m short: {attempt.reason[0]}")
        else:
            out.reason[f] = "converged"
    return StretchedTake(out, factors, stretched)
