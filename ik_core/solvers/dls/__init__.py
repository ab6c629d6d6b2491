# SPDX-License-Identifier: GPL-3.0-or-later
"""Damped least squares: the solver, its kernels, its restarts and seeds, shared within the family.

- :mod:`.solver`: :class:`DLSSolver`, the solver and its batched iteration.
- :mod:`.kinematics`: the chain model DLS iterates on (poses and Jacobians in one pass).
- :mod:`.linalg`: the damped solves.
- :mod:`.small`: closed forms for small systems.
- :mod:`.restarts`: damping schedules and restarts of a stalled solve.
- :mod:`.seeds`: start configurations ranked for a target.
- :mod:`.serial`: the lean kernel for a few targets on serial chains (robot arms).
"""
