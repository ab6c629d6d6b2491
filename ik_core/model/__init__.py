# SPDX-License-Identifier: GPL-3.0-or-later
"""The kinematic model: rotations, the skeleton, its sub-chains, forward kinematics and Jacobians, poles.

Everything else in ``ik_core`` builds on this folder; it imports nothing above it.

- :mod:`.rotation_kernels`: unchecked rotation arithmetic for hot paths.
- :mod:`.rotations`, :mod:`.euler`: validated conversions between rotation forms.
- :mod:`.skeleton`: joints, effectors and the skeleton itself.
- :mod:`.chains`: the sub-skeleton from a root to some tips.
- :mod:`.kinematics`: forward kinematics, effector poses, Jacobians.
- :mod:`.poles`: where a chain bends toward its pole.
- :mod:`.distance`: how far apart two configurations are, joint by joint.
"""
