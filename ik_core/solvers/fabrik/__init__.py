# SPDX-License-Identifier: GPL-3.0-or-later
"""FABRIK with constraint projection: the solver, and what it is built from.

- :mod:`.solver`: :class:`FabrikSolver`, forward and backward passes over chains and trees.
- :mod:`.primitives`: rotations between directions, hinge fits and limit projection of one joint.
- :mod:`.tree`: the skeleton as FABRIK sees it (bodies, sub-bases, effector paths).
- :mod:`.limb`: the closed form for two-bone limbs inside a FABRIK pass.
- :mod:`.hints`: pole hints that pick a chain's bend plane.
"""
