# SPDX-License-Identifier: GPL-3.0-or-later
"""FABRIK (Aristidou & Lasenby 2011): forward and backward reaching with joint limits, on trees."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...errors import InvalidInputError
from ...model.kinematics import forward_kinematics
from ...model.rotations import matrix_to_rotvec
from ...model.skeleton import Skeleton
from ..base import Solver, Targets
from .hints import apply_pole, kick
from .limb import find_limbs, solve_limb
from .primitives import (
    apply,
    axis_rotation,
    best_axis_angle,
    chordal_mean,
    hinge_fit,
    project_into_limit,
    shortest_rotation,
    signed_angle,
    transpose,
    twist_fit,
    unit,
    weighted_hinge_angle,
)
from .tree import Body, build_tree, orientation_points

# Effector poses moving less than this per iteration [m, or matrix entries] mean FABRIK sits
# at a fixed point: more passes would change nothing.
_STUCK = 1e-12
# Sideways nudges allowed per target when stuck away from it (see fabrik_hints.kick).
_KICKS = 2
# A target whose position error has not fallen by _STALL_GAIN [m] in _STALL_PASSES passes has
# stalled: more passes would burn the budget (10,000 iterations cost 28 s on one frame).
_STALL_GAIN = 1e-7
_STALL_PASSES = 10


class FabrikSolver(Solver):
    """Forward And Backward Reaching Inverse Kinematics on joint positions, with joint limits.

    Each iteration runs a backward pass (effectors to root: bones are dragged onto the
    targets) and a forward pass (root to effectors: the root is put back and each joint's
    value is recovered from the wanted bone direction in its parent's actual frame, then
    projected onto its limit). A ball joint takes the smallest rotation from its rest bone to
    that direction (no introduced twist); a hinge turns about its axis, fitting the positions
    its subtree took in the backward pass (weights halving per joint, so mostly the next
    joint), and is clamped into its range. The forward pass builds ``q`` itself, so its joint
    positions are exactly the forward kinematics of the returned configuration.

    Constraints act at every joint on both passes. On the way back each joint between two
    moving bodies is projected from its parent's side, against the child body placed just
    before (a hinge axis is fixed in both bodies, so the parent turns about it and the angle
    is clamped; cone, twist and Euler limits go through the :mod:`ik_core.limits` object);
    a limited ball joint is also projected against its parent's current frame, which saves
    about 40 % of the iterations on cone-limited chains.

    Trees follow the paper: a sub-base (a joint with several effector paths below it) aims
    at the centroid of the positions its branches ask for and turns about that direction to
    fit them. A ball joint carrying a hinge also turns about its bone towards its
    backward-pass frame, since the hinge axis goes where that twist puts it. In "full" mode
    the effector's orientation is a virtual last bone fixing the last joint's frame; in "aim"
    mode the last joint turns the aim axis onto the target's after reaching (both only where
    that joint carries the effector alone); hinge fits also see the orientation as points
    along the effector's axes. A target beyond the chain's length gets the chain stretched
    straight towards it. Joint stiffness and the preferred pose are not used.

    Per-call option of :meth:`solve`: ``pole`` (..., 3) world points (or (..., E, 3), one per
    effector) towards which each chain's bend plane is turned before iterating.

    Raises:
        InvalidInputError: Prismatic or mimic joints on an effector path, or zero-length bones.
    """

    name = "fabrik"
    # Bakes and live posing pass a chain's pole only to solvers that declare it.
    call_options = ("pole",)

    def __init__(
        self, skeleton: Skeleton, effectors: str | int | Sequence[str | int] = 0, **options: object
    ) -> None:
        # mode, tolerances, max_iterations and aim_axis are the base solver's, same defaults.
        super().__init__(skeleton, effectors, **options)  # type: ignore[arg-type]
        self.tree = build_tree(skeleton, self.effector_ids)
        # A body carrying one effector and nothing else can take that effector's orientation.
        self._leaf = [b.effectors[0] if len(b.effectors) == 1 and not b.children else -1 for b in self.tree.bodies]
        self._aim_local = self.tree.eff_rot @ self.aim_axis
        self._virtual, self._below, self._below_weight = orientation_points(
            self.tree, self._leaf, self.mode, self.aim_axis
        )
        self._carries_hinge = [
            not b.hinge and any(self.tree.bodies[c].hinge for c in b.children) for b in self.tree.bodies
        ]
        self._hinge_parent = [
            len(b.points) == 1 and len(b.children) == 1 and self.tree.bodies[b.children[0]].hinge
            and (b.hinge or b.limit is None)
            for b in self.tree.bodies
        ]
        # Ball + hinge limb tips placed in closed form on each forward pass (position targets).
        self._limbs = find_limbs(self.tree) if self.mode == "position" else {}
        self._pure_limb = len(self.tree.bodies) == 2 and 0 in self._limbs and self.tree.bodies[0].parent < 0

    def reach(self) -> np.ndarray:
        """(E,) chain length [m] from each effector's root joint to the effector."""
        return self.tree.length.copy()

    # --- the iterations --------------------------------------------------------------------
    def _solve(self, targets: Targets, q0: np.ndarray, **options: object) -> tuple[np.ndarray, np.ndarray]:
        pole = options.pop("pole", None)
        if options:
            raise InvalidInputError(f"unknown FABRIK option(s) {sorted(options)}; valid options: pole")
        tree, bodies = self.tree, self.tree.bodies
        batch = targets.batch_shape
        n_all = int(np.prod(batch, dtype=int))
        E = len(self.effector_ids)
        tp = targets.positions.reshape(n_all, E, 3)
        tr = None if self.mode == "position" else targets.rotations.reshape(n_all, E, 3, 3)
        q = q0.reshape(n_all, self.skeleton.dof).copy()

        frames = forward_kinematics(self.skeleton, q)
        W = np.stack([frames[:, b.joint, :3, :3] for b in bodies])
        p = np.stack([frames[:, b.joint, :3, 3] for b in bodies])
        theta = np.stack([q[:, b.q_index] if b.hinge else np.zeros(n_all) for b in bodies])
        # Joint rotations relative to their pre-motion frames, read off the frames (no conversions).
        rel = np.stack(
            [transpose(W[b.parent] @ b.rot if b.parent >= 0 else b.rot) @ W[k] for k, b in enumerate(bodies)]
        )
        iterations = np.zeros(n_all, dtype=int)
        pe, Re = self._effector_poses(W, p)
        done = self._converged(pe, Re, tp, tr)
        if pole is not None:
            apply_pole(tree, pole, batch, tp, p, W)
            # The turn lives in the positions only: even a start already on its target (a warm
            # start on a static target) needs a pass to carry the pole's bend plane into q.
            done[:] = False
        if E == 1:
            far = ~done & (np.linalg.norm(tp[:, 0] - tree.base[0], axis=-1) > tree.length[0])
            if np.any(far):
                # Out of reach: one pass pointing every bone at the target straightens the chain.
                f = np.nonzero(far)[0]
                Wf, pf, relf, thf = W[:, f], p[:, f], rel[:, f], theta[:, f]
                self._forward(Wf, pf, relf, thf, None, None, tp[f], None if tr is None else tr[f])
                W[:, f], p[:, f], rel[:, f], theta[:, f] = Wf, pf, relf, thf
                iterations[f] = 1
                done |= far

        act = np.nonzero(~done)[0]
        Wa, pa, rela, tha = W[:, act], p[:, act], rel[:, act], theta[:, act]
        tpa, tra = tp[act], None if tr is None else tr[act]
        pe_a, Re_a = pe[act], Re[act]
        kicks = np.zeros(act.size, dtype=int)
        # Stall detection: the best position error so far and the iteration it was set. On a target
        # the limits keep away the projected passes circle without settling (so "stuck", which
        # looks at how far a pass moves the effector, never fires); the best effort finishes it.
        best = np.full(act.size, np.inf)
        best_at = np.zeros(act.size, dtype=int)
        for it in range(1, self.max_iterations + 1):
            if act.size == 0:
                break
            if self._pure_limb and it == 1:
                # The limb step only reads where the knee is wanted: its current side of the
                # root-target line, which a backward pass would not change (only its distance).
                # Later passes (only where the ball's limit allowed no swivel) are plain FABRIK.
                pb, Wb = pa.copy(), Wa.copy()
            else:
                pb, Wb = self._backward(Wa, pa, tha, tpa, tra)
            self._forward(Wa, pa, rela, tha, pb, Wb, tpa, tra)
            pe_new, Re_new = self._effector_poses(Wa, pa)
            moved = np.maximum(np.abs(pe_new - pe_a).max(axis=(-2, -1)), np.abs(Re_new - Re_a).max(axis=(-3, -2, -1)))
            pe_a, Re_a = pe_new, Re_new
            conv = self._converged(pe_a, Re_a, tpa, tra)
            stuck = ~conv & (moved < _STUCK)
            err = np.linalg.norm(pe_a - tpa, axis=-1).max(axis=-1)
            gained = err < best - _STALL_GAIN
            best = np.minimum(best, err)
            best_at = np.where(gained, it, best_at)
            stuck |= ~conv & (it - best_at >= _STALL_PASSES)
            # A limb placed in closed form sits at its best answer: a kick would only turn its plane.
            nudge = stuck & (kicks < _KICKS) & (not self._pure_limb)
            if np.any(nudge):
                kick(tree, pa, tpa, nudge, kicks)
                kicks = kicks + nudge
                best_at = np.where(nudge, it, best_at)  # a kicked chain gets its passes again
                stuck &= ~nudge
            fin = conv | stuck | (it == self.max_iterations)
            if np.any(fin):
                idx = act[fin]
                W[:, idx], p[:, idx], rel[:, idx], theta[:, idx] = Wa[:, fin], pa[:, fin], rela[:, fin], tha[:, fin]
                iterations[idx] = it
                keep = ~fin
                act = act[keep]
                Wa, pa, rela, tha = Wa[:, keep], pa[:, keep], rela[:, keep], tha[:, keep]
                tpa, pe_a, Re_a, kicks = tpa[keep], pe_a[keep], Re_a[keep], kicks[keep]
                best, best_at = best[keep], best_at[keep]
                tra = None if tra is None else tra[keep]

        balls = [k for k, b in enumerate(bodies) if not b.hinge]
        rotvecs = matrix_to_rotvec(rel[balls]) if balls else None
        for k, b in enumerate(bodies):
            if b.hinge:
                q[:, b.q_index] = theta[k]
            else:
                q[:, b.q_index : b.q_index + 3] = rotvecs[balls.index(k)]
        return q.reshape(*batch, self.skeleton.dof), iterations.reshape(batch)

    def _goal(self, body: Body, pb: np.ndarray, tp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Wanted positions (n, m, 3) of a body's points (children, then effectors) and their mean."""
        if len(body.points) == 1:
            pts = pb[body.children[0]] if body.children else tp[:, body.effectors[0]]
            return pts[:, None], pts
        pts = np.stack([pb[c] for c in body.children] + [tp[:, e] for e in body.effectors], axis=1)
        return pts, pts.mean(axis=1)

    def _backward(
        self, W: np.ndarray, p: np.ndarray, theta: np.ndarray, tp: np.ndarray, tr: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Drag every body onto the wanted positions, tips first; return positions and rotations."""
        bodies = self.tree.bodies
        pb = np.empty_like(p)
        Wb = np.empty_like(W)
        for k in range(len(bodies) - 1, -1, -1):
            body = bodies[k]
            pts, goal = self._goal(body, pb, tp)
            cur = apply(W[k], body.bone)
            d, _ = unit(goal - p[k], cur)
            e = self._leaf[k]
            # A body hanging on one hinge child gets its frame from that child: only d matters.
            Wd = None if self._hinge_parent[k] and (e < 0 or tr is None) else shortest_rotation(cur, d) @ W[k]
            if Wd is None:
                pass
            elif e >= 0 and tr is not None:
                if self.mode == "full":
                    Wd = tr[:, e] @ self.tree.eff_rot[e].T
                else:
                    aim_now, _ = unit(apply(Wd, self._aim_local[e]), d)
                    Wd = shortest_rotation(aim_now, apply(tr[:, e], self.aim_axis)) @ Wd
            elif pts.shape[1] > 1:
                Wd = self._fit_branches(Wd, d, body, pts, goal)
            # A limited ball joint against its parent's current frame (a hinge's own constraint
            # is enforced from its parent's side below: projecting it here too slowed chains)...
            if body.limit is not None and not body.hinge:
                P_old = W[body.parent] @ body.rot if body.parent >= 0 else body.rot
                Wd = P_old @ project_into_limit(body, transpose(P_old) @ Wd)
            # ...then each child joint against the child's frame placed earlier in this pass.
            cands = []
            for ci, c in enumerate(body.children):
                child = bodies[c]
                if child.hinge:
                    u = np.einsum("nji,nj->ni", Wb[c], d if Wd is None else apply(Wd, body.bone))
                    th, ok = signed_angle(child.axis, u, body.child_bone[ci])
                    th = hinge_fit(np.where(ok, th, theta[c]), theta[c], child.lower, child.upper)
                    cands.append(Wb[c] @ axis_rotation(child.axis, -th) @ child.rot.T)
                elif child.limit is not None:
                    Rc = project_into_limit(child, child.rot.T @ transpose(Wd) @ Wb[c])
                    cands.append(Wb[c] @ transpose(Rc) @ child.rot.T)
            if len(cands) == 1 and len(body.children) == 1:
                Wd = cands[0]
            elif cands:
                Wd = chordal_mean(cands + [Wd] * (len(body.children) - len(cands)))
            Wb[k] = Wd
            pb[k] = goal - apply(Wd, body.center)
        return pb, Wb

    def _fit_branches(self, R: np.ndarray, d: np.ndarray, body: Body, pts: np.ndarray, goal: np.ndarray) -> np.ndarray:
        """Turn a sub-base's rotation (n, 3, 3) about its bone direction ``d`` to fit its branch points."""
        current = np.einsum("nij,mj->nmi", R, body.points - body.center)
        return twist_fit(d, current, pts - goal[:, None, :]) @ R

    def _forward(
        self,
        W: np.ndarray,
        p: np.ndarray,
        rel: np.ndarray,
        theta: np.ndarray,
        pb: np.ndarray | None,
        Wb: np.ndarray | None,
        tp: np.ndarray,
        tr: np.ndarray | None,
    ) -> None:
        """Root to tips: each joint's value from the wanted directions, within limits (in place).

        With ``pb`` None every bone aims at the first target: the straight reach.
        """
        tree = self.tree
        n = p.shape[1]
        below = None
        if pb is not None:
            # Orientation targets enter the hinge fits as points rigid with the effector's body.
            virtual = [pb[b] + apply(Wb[b], off) for b, off in self._virtual] if tr is not None else []
            below = np.concatenate([pb, np.swapaxes(tp, 0, 1), *(v[None] for v in virtual)])
        exact: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for k, body in enumerate(tree.bodies):
            if body.parent < 0:
                P = np.broadcast_to(body.rot, (n, 3, 3))
                p[k] = body.pos
            else:
                P = W[body.parent] @ body.rot
                p[k] = p[body.parent] + apply(W[body.parent], body.pos)
            if pb is None:
                pts, goal = tp[:, :1], tp[:, 0]
            else:
                pts, goal = self._goal(body, pb, tp)
            PT = transpose(P)
            d_local = apply(PT, goal - p[k])
            e = self._leaf[k]
            full = e >= 0 and tr is not None and self.mode == "full"
            aim = e >= 0 and tr is not None and self.mode == "aim"
            if full:
                Rg = PT @ tr[:, e] @ tree.eff_rot[e].T
            th_exact, use = exact.pop(k, (None, None))
            if body.hinge and use is not None and use.all():
                theta[k] = th_exact
                R = axis_rotation(body.axis, theta[k])
            elif body.hinge:
                if below is not None:
                    th, ok = self._hinge_shape_fit(k, body, P, p[k], below, pb[k], Wb[k])
                elif full:
                    th, ok = best_axis_angle(body.axis, Rg), np.ones(n, dtype=bool)
                elif aim:
                    th, ok = signed_angle(body.axis, self._aim_local[e], apply(PT, apply(tr[:, e], self.aim_axis)))
                else:
                    th, ok = signed_angle(body.axis, body.bone, d_local)
                theta[k] = hinge_fit(np.where(ok, th, theta[k]), theta[k], body.lower, body.upper)
                if use is not None:
                    theta[k] = np.where(use, th_exact, theta[k])
                R = axis_rotation(body.axis, theta[k])
            else:
                limb = self._limbs.get(k) if pb is not None else None
                if limb is not None:
                    R_exact, th_exact, use = solve_limb(
                        limb, body.limit, apply(PT, tp[:, limb.effector] - p[k]),
                        apply(PT, pb[limb.hinge] - p[k]), theta[limb.hinge],
                    )
                    exact[limb.hinge] = (th_exact, use)
                    if use.all():
                        rel[k] = R_exact
                        W[k] = P @ R_exact
                        continue
                if full:
                    R = Rg
                else:
                    dl, _ = unit(d_local, apply(rel[k], body.bone))
                    R = shortest_rotation(body.bone, dl)
                    if aim:
                        aim_now = apply(R, self._aim_local[e])
                        R = shortest_rotation(aim_now, apply(PT, apply(tr[:, e], self.aim_axis))) @ R
                    elif pts.shape[1] > 1 and pb is not None:
                        R = self._fit_branches(R, dl, body, apply(PT[:, None], pts - p[k][:, None]), d_local)
                    if self._carries_hinge[k] and Wb is not None:
                        # A hinge below needs its axis where the backward pass put it: turn about
                        # the bone towards the backward frame (pure swings otherwise).
                        R = twist_fit(dl, transpose(R), transpose(PT @ Wb[k])) @ R
                R = project_into_limit(body, R)
                if limb is not None:
                    R = np.where(use[:, None, None], R_exact, R)
            rel[k] = R
            W[k] = P @ R

    def _hinge_shape_fit(
        self, k: int, body: Body, P: np.ndarray, pk: np.ndarray, below: np.ndarray, pbk: np.ndarray, Wbk: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Hinge angle (n,) turning the backward-pass subtree onto its wanted places (see weighted_hinge_angle)."""
        pts = below[self._below[k]]
        x = np.einsum("nji,mnj->mni", Wbk, pts - pbk)
        y = np.einsum("nji,mnj->mni", P, pts - pk)
        return weighted_hinge_angle(body.axis, x, y, self._below_weight[k])

    # --- helpers ---------------------------------------------------------------------------
    def _effector_poses(self, W: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(n, E, 3) effector positions and (n, E, 3, 3) orientations of the current bodies."""
        tree = self.tree
        Wb = W[tree.eff_body]
        pe = p[tree.eff_body] + np.einsum("enij,ej->eni", Wb, tree.eff_pos)
        Re = Wb @ tree.eff_rot[:, None]
        return np.swapaxes(pe, 0, 1), np.swapaxes(Re, 0, 1)

    def _converged(self, pe: np.ndarray, Re: np.ndarray, tp: np.ndarray, tr: np.ndarray | None) -> np.ndarray:
        """(n,) True where every effector meets the position and rotation tolerances."""
        ok = np.linalg.norm(pe - tp, axis=-1).max(axis=-1) <= self.tolerance
        if tr is None:
            return ok
        if self.mode == "full":
            cos = 0.5 * (np.einsum("neij,neij->ne", Re, tr) - 1.0)
            err = np.arccos(np.clip(cos, -1.0, 1.0))
        else:
            a, b = apply(Re, self.aim_axis), apply(tr, self.aim_axis)
            err = np.arctan2(np.linalg.norm(np.cross(a, b), axis=-1), np.sum(a * b, axis=-1))
        return ok & (err.max(axis=-1) <= self.rotation_tolerance)
