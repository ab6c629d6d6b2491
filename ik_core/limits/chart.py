# SPDX-License-Identifier: GPL-3.0-or-later
"""A skeleton in box coordinates: every limit a range, except swing cones, which are ellipses.

A ball joint's limit is not a box in its rotation vector, so a descent that steps and then
projects onto it can stop where the projection, not the objective, ends the step: a corner of
the rotation-vector picture that is no corner of the problem. Re-expressed in the coordinates
its limit is written in (the Euler angles of an :class:`~.euler.EulerLimit`; swing and twist
of a :class:`~.swing_twist.SwingTwistLimit` or :class:`~.cone_twist.ConeTwistLimit`), each
limited ball joint becomes a short chain of ordinary joints, and the feasible set becomes a
product of intervals and convex swing ellipses whose projection is exact. Box-constrained
descents (projected gradients, active sets) are then sound, and stationarity in these
coordinates is a true local minimum inside the limits.

:class:`BoxChart` builds that skeleton and maps configurations both ways.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..model.euler import matrix_to_euler_unchecked
from ..model.rotation_kernels import matrix_to_rotvec_unchecked, rotvec_to_matrix_unchecked
from ..model.skeleton import Effector, Joint, JointKind, Skeleton
from .ball import BoxCoordinates, circular_clamp, quadrant_ellipse_project, quadrant_semi_axes
from .cone_twist import swing_twist_in_basis
from .projection import project_configuration

_UNIT = np.eye(3)
# Swings end this far short of half a turn [rad]: at exactly pi the twist of a rotation cannot be
# read back from it, and the pose would leave the limit it was projected into.
_SWING_CAP = np.pi - 1e-6


# A middle Euler angle whose cosine is below this is at gimbal lock: the outer angles turn about
# one axis, and only their combination is the pose (matrix_to_euler's own test is tighter).
_LOCK_COS = 1e-12


def _split_at_lock(e: np.ndarray, m: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Chain angles (L, 3) at gimbal lock with the outer pair moved along its pose-keeping line into its ranges.

    Moving (x0, x2) to (x0 + m t, x2 + t) keeps the rotation at lock. The t chosen puts both in
    their ranges [lo, hi] (modulo 2 pi) where some t does, the nearest such t to 0; elsewhere
    the angles are left for the clamp.

    Args:
        e: (L, 3) chain angles [rad] whose middle angle is at lock.
        m: (L,) +1 or -1: how the outer angle moves with the inner one along the line.
        lo: (3,) lower ends [rad].
        hi: (3,) upper ends [rad] (a whole turn above lo for a free angle).
    """
    e = e.copy()
    # t that put each outer angle in its range: intervals (modulo 2 pi) [a, b] and [c, d].
    a = np.where(m > 0, lo[0] - e[:, 0], e[:, 0] - hi[0])
    b = a + (hi[0] - lo[0])
    c, d = lo[2] - e[:, 2], hi[2] - e[:, 2]
    best = np.full(len(e), np.nan)
    for shift in (-1.0, 0.0, 1.0):
        # The outer interval moved by whole turns next to the inner one, then both intersected.
        k = np.round((0.5 * (c + d) - 0.5 * (a + b)) / (2.0 * np.pi)) + shift
        start, end = np.maximum(a + 2.0 * np.pi * k, c), np.minimum(b + 2.0 * np.pi * k, d)
        for turn in (-1.0, 0.0, 1.0):
            s, f = start + 2.0 * np.pi * turn, end + 2.0 * np.pi * turn
            t = np.where(start <= end, np.clip(0.0, s, f), np.nan)
            better = np.isfinite(t) & ~(np.abs(best) <= np.abs(t))
            best = np.where(better, t, best)
    fits = np.isfinite(best)
    e[fits, 0] += m[fits] * best[fits]
    e[fits, 2] += best[fits]
    return e


def _homogeneous(R: np.ndarray) -> np.ndarray:
    M = np.eye(4)
    M[:3, :3] = R
    return M


def _elemental(axis: int, angle: np.ndarray) -> np.ndarray:
    """(..., 3, 3) rotations about coordinate axis ``axis`` by ``angle`` (...,) [rad]."""
    c, s = np.cos(angle), np.sin(angle)
    R = np.zeros(np.shape(angle) + (3, 3))
    i, j = (axis + 1) % 3, (axis + 2) % 3
    R[..., axis, axis] = 1.0
    R[..., i, i], R[..., j, j] = c, c
    R[..., j, i], R[..., i, j] = s, -s
    return R


class BoxChart:
    """A skeleton whose limited ball joints are re-expressed in their limits' own coordinates.

    Each ball joint with an Euler limit becomes three revolute joints (outermost axis first)
    with the limit's ranges; each with a swing-twist or cone-twist limit becomes an unlimited
    ball joint whose rotation vector is the swing in the limit's basis (its third component
    locked at 0, the first two confined by :meth:`project` to the swing ellipse), followed by a
    revolute twist with the twist range. Other joints are copied. The chart's effectors are the
    skeleton's, in the same order, at the same places.

    Args:
        skeleton: The skeleton.

    Attributes:
        skeleton: The chart's skeleton (the given one when no ball joint is limited).
        lower: (dof',) lower bounds of the chart's variables [rad or m] (a swing pair's are
            infinite: its ellipse bounds it).
        upper: (dof',) upper bounds.
        swing_starts: First chart variable of each swing, whose pair is an ellipse, not a box.
        swing_axes: (K, 4) semi-axes (w+, w-, u+, u-) [rad] of each swing's quarter ellipses,
            in the order of ``swing_starts`` (see :func:`~.ball.quadrant_ellipse_project`).
        variable_joint: (dof',) index of the skeleton's joint that owns each chart variable.
    """

    def __init__(self, skeleton: Skeleton) -> None:
        self.source = skeleton
        # (source start, chart start, coordinates) of each re-expressed ball joint.
        self._balls: list[tuple[int, int, BoxCoordinates]] = []
        limited = [
            j.limit.box_coordinates() if j.kind is JointKind.BALL and j.limit is not None and j.dof else None
            for j in skeleton.joints
        ]
        # The skeleton's joint that owns each chart variable.
        owner = np.repeat(np.arange(len(skeleton.joints)), [j.dof for j in skeleton.joints])
        if not any(c is not None for c in limited):
            self.variable_joint = owner
            self.skeleton = skeleton
            self.lower, self.upper = np.array(skeleton.lower), np.array(skeleton.upper)
            self.swing_starts: list[int] = []
            self.swing_axes = np.zeros((0, 4))
            self._copy_source = self._copy_chart = np.arange(skeleton.dof)
            return
        joints: list[Joint] = []
        last: list[int] = []  # chart index of the joint whose frame is each source joint's
        after: list[np.ndarray] = []  # transform from that chart frame to the source frame
        names = [f"{n}:{j.name}" for n, j in enumerate(skeleton.joints)]

        def add(joint: Joint) -> int:
            joints.append(joint)
            return len(joints) - 1

        for i, joint in enumerate(skeleton.joints):
            parent = last[joint.parent] if joint.parent >= 0 else -1
            origin = (after[joint.parent] if joint.parent >= 0 else np.eye(4)) @ joint.origin
            coords = limited[i]
            if coords is None:
                mimic = joint.mimic
                if mimic is not None:
                    mimic = dataclasses.replace(mimic, joint=names[skeleton.joint_index(mimic.joint)])
                last.append(add(dataclasses.replace(joint, name=names[i], parent=parent, origin=origin, mimic=mimic)))
                after.append(np.eye(4))
                continue
            if coords.kind == "euler":
                for n, axis in enumerate(coords.axes):
                    free = not np.isfinite(coords.lower[n])
                    parent = add(Joint(
                        f"{names[i]}.{'XYZ'[axis]}", JointKind.CONTINUOUS if free else JointKind.REVOLUTE,
                        parent, origin if n == 0 else np.eye(4), _UNIT[axis],
                        -np.inf if free else coords.lower[n], np.inf if free else coords.upper[n],
                    ))
                last.append(parent)
                after.append(np.eye(4))
            else:
                B = _homogeneous(coords.basis)
                swing = add(Joint(f"{names[i]}.swing", JointKind.BALL, parent, origin @ B.T))
                free = not np.isfinite(coords.lower[2])
                last.append(add(Joint(
                    f"{names[i]}.twist", JointKind.CONTINUOUS if free else JointKind.REVOLUTE, swing,
                    np.eye(4), _UNIT[2], -np.inf if free else coords.lower[2], np.inf if free else coords.upper[2],
                )))
                after.append(B)
            self._balls.append((int(skeleton.q_index[i]), len(joints), coords))
        effectors = [
            Effector(e.name, last[e.joint], after[e.joint] @ e.offset) for e in skeleton.effectors
        ]
        self.skeleton = Skeleton(joints, effectors, name=skeleton.name)
        chart_index = self.skeleton.q_index
        # The chart start of each ball: the q_index of the first joint added for it.
        self._balls = [(s, int(chart_index[first - (3 if c.kind == "euler" else 2)]), c) for s, first, c in self._balls]
        lower, upper = np.array(self.skeleton.lower), np.array(self.skeleton.upper)
        self.swing_starts = []
        axes = []
        for _, c0, coords in self._balls:
            if coords.kind != "euler":
                # The swing pair is bounded by its ellipse alone (clamping it to the ellipse's
                # bounding box first would make the projection inexact); its third variable is 0.
                lower[c0 : c0 + 3] = (-np.inf, -np.inf, 0.0)
                upper[c0 : c0 + 3] = (np.inf, np.inf, 0.0)
                self.swing_starts.append(c0)
                axes.append(np.minimum(coords.swing, _SWING_CAP))
        self.lower, self.upper = lower, upper
        self.swing_axes = np.array(axes, dtype=float).reshape(-1, 4)
        # Chart columns of each swing pair's two variables.
        self._swing_columns = (np.array(self.swing_starts, dtype=int), np.array(self.swing_starts, dtype=int) + 1)
        # 1-DoF and unlimited ball variables are copied column for column.
        balls = {s for s, _, _ in self._balls}
        src, dst = [], []
        for i, joint in enumerate(skeleton.joints):
            s = int(skeleton.q_index[i])
            if s >= 0 and s not in balls:
                c = int(chart_index[last[i]])
                src.extend(range(s, s + joint.dof))
                dst.extend(range(c, c + joint.dof))
        self._copy_source, self._copy_chart = np.array(src, dtype=int), np.array(dst, dtype=int)
        self.variable_joint = np.zeros(self.skeleton.dof, dtype=int)
        self.variable_joint[self._copy_chart] = owner[self._copy_source]
        for s, c, coords in self._balls:
            self.variable_joint[c : c + (3 if coords.kind == "euler" else 4)] = owner[s]

    def on_limit(self, x: np.ndarray, tol: float = 1e-7) -> np.ndarray:
        """(P, dof') True where a chart variable rests on its range's end or its swing on its ellipse.

        Args:
            x: (P, dof') chart configurations inside the limits.
            tol: Distance from a bound that counts as resting on it [rad or m].
        """
        on = (np.abs(x - self.lower) <= tol) | (np.abs(x - self.upper) <= tol)
        on &= self.lower < self.upper  # a locked variable holds nothing back
        if self.swing_starts:
            s = np.array(self.swing_starts)
            a, b = quadrant_semi_axes(x[:, s], x[:, s + 1], self.swing_axes)
            with np.errstate(divide="ignore", invalid="ignore"):
                level = np.sqrt((x[:, s] / a) ** 2 + (x[:, s + 1] / b) ** 2)
            rim = ~(level < 1.0 - tol) | (a <= tol) | (b <= tol)
            on[:, s], on[:, s + 1] = rim, rim
        return on

    @property
    def identity(self) -> bool:
        """True when the chart is the skeleton itself (no limited ball joint)."""
        return self.skeleton is self.source

    def project(self, x: np.ndarray) -> np.ndarray:
        """The nearest point of the feasible set in chart coordinates (exact: boxes and ellipses).

        Args:
            x: (P, dof') chart configurations.

        Returns:
            (P, dof') inside every range and swing ellipse.
        """
        x = np.minimum(np.maximum(x, self.lower), self.upper)
        if self.identity:
            return project_configuration(self.skeleton, x)
        if self.swing_starts:
            s, u = self._swing_columns
            x[:, s], x[:, u] = quadrant_ellipse_project(x[:, s], x[:, u], self.swing_axes)
        return x

    def to_chart(self, q: np.ndarray) -> np.ndarray:
        """Chart coordinates of configurations, projected onto the limits on the way.

        Args:
            q: (P, dof) configurations of the skeleton.

        Returns:
            (P, dof') chart configurations inside the limits. A feasible pose maps to the same
            pose; at gimbal lock an Euler limit's outer angles are shared out (only their
            combination is the pose) so that both fit their ranges where some split does.
        """
        q = np.asarray(q, dtype=float)
        if self.identity:
            return project_configuration(self.skeleton, q)
        x = np.zeros((q.shape[0], self.skeleton.dof))
        x[:, self._copy_chart] = q[:, self._copy_source]
        for s, c, coords in self._balls:
            R = rotvec_to_matrix_unchecked(q[:, s : s + 3])
            if coords.kind == "euler":
                x[:, c : c + 3] = self._euler_angles(R, coords)
            else:
                B = coords.basis
                su, sw, tw = swing_twist_in_basis(B @ R @ B.T)
                x[:, c], x[:, c + 1] = sw, su
                if np.isfinite(coords.lower[2]):
                    tw = circular_clamp(tw, coords.lower[2], coords.upper[2])[0]
                x[:, c + 3] = tw
        return self.project(x)

    @staticmethod
    def _euler_angles(R: np.ndarray, coords: BoxCoordinates) -> np.ndarray:
        """(P, 3) chain angles of R: of its two Euler decompositions the one nearer the ranges, clamped."""
        a0, a1, a2 = coords.axes
        order = "XYZ"[a2] + "XYZ"[a1] + "XYZ"[a0]
        e0 = matrix_to_euler_unchecked(R, order)[:, list(coords.axes)]
        # The other Tait-Bryan decomposition of the same rotation (outer and inner angles + pi).
        e1 = np.stack([e0[:, 0] + np.pi, np.pi - e0[:, 1], e0[:, 2] + np.pi], axis=1)
        finite = np.isfinite(coords.lower)
        lo, hi = np.where(finite, coords.lower, -np.pi), np.where(finite, coords.upper, np.pi)
        hi = np.where(finite, hi, lo + 2.0 * np.pi)
        # At gimbal lock only a combination of the outer angles is the pose: share it out so
        # that both fit their ranges where some split does (the tidy split may not).
        lock = np.abs(np.cos(e0[:, 1])) < _LOCK_COS
        if lock.any():
            i, j = a2, a1
            p = 1.0 if (j - i) % 3 == 1 else -1.0
            for e in (e0, e1):
                e[lock] = _split_at_lock(e[lock], p * np.where(np.sin(e[lock, 1]) < 0.0, -1.0, 1.0), lo, hi)
        c0, d0 = circular_clamp(e0, lo, hi)
        c1, d1 = circular_clamp(e1, lo, hi)
        return np.where((d1.max(axis=1) < d0.max(axis=1))[:, None], c1, c0)

    def from_chart(self, x: np.ndarray) -> np.ndarray:
        """Skeleton configurations of chart configurations.

        Args:
            x: (P, dof') chart configurations.

        Returns:
            (P, dof) the same poses as configurations of the skeleton.
        """
        x = np.asarray(x, dtype=float)
        if self.identity:
            return x.copy()
        q = np.zeros((x.shape[0], self.source.dof))
        q[:, self._copy_source] = x[:, self._copy_chart]
        for s, c, coords in self._balls:
            if coords.kind == "euler":
                a0, a1, a2 = coords.axes
                R = _elemental(a0, x[:, c]) @ _elemental(a1, x[:, c + 1]) @ _elemental(a2, x[:, c + 2])
            else:
                B = coords.basis
                swing = rotvec_to_matrix_unchecked(x[:, c : c + 3])
                R = B.T @ swing @ _elemental(2, x[:, c + 3]) @ B
            q[:, s : s + 3] = matrix_to_rotvec_unchecked(R)
        return q


__all__ = ["BoxChart"]
