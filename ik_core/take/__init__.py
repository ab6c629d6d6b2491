# SPDX-License-Identifier: GPL-3.0-or-later
"""Solving a whole take: every frame of an animation, smooth and on one IK branch.

- :mod:`.tracking`: :func:`solve_track` and :func:`track_chain`, segments, retries and repairs.
- :mod:`.aim_track`: an aim chain over a take (every frame from one start, jumps repaired).
- :mod:`.steps`: how far a configuration moves between frames, and jump scores.
- :mod:`.smoothing`: the look-ahead block solve that spreads a jump over a window.
- :mod:`.horizon`: the receding-horizon pass for redundant chains.
- :mod:`.repair`: global searches around the jumps a take was left with.
- :mod:`.grid`, :mod:`.held`: the self-motion search of one-redundant chains.
- :mod:`.branch_search`: the IK-branch search of non-redundant chains.
- :mod:`.paths`: the dynamic programme both searches share.
- :mod:`.influence`: the goal of a chain at partial influence (blended toward its pose without IK).
- :mod:`.key_reduction`: the fewest keys that play within a tolerance of the full bake.

Built on :mod:`ik_core.solvers`.
"""
