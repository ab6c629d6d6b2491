# SPDX-License-Identifier: GPL-3.0-or-later
"""The closed-form two-bone solver (a ball root, a hinge), for one limb or several at once.

- :mod:`.kernel`: the law of cosines, the pole plane and the swivel into a limit, on limb constants.
- :mod:`.solver`: :class:`TwoBoneSolver`.
- :mod:`.group`: :class:`TwoBoneGroup`, several limbs solved in one batched evaluation.
"""
