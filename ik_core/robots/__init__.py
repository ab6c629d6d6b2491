# SPDX-License-Identifier: GPL-3.0-or-later
"""Robot arms: bundled presets, the kinematic model a robot rig stores, and the closed-form UR solver.

- :mod:`.presets`: robot arms as data (``presets/robots``), read without Blender.
- :mod:`.model`: :class:`RobotModel`, a URDF tree or preset with its home pose and limits.
- :mod:`.analytic_ur`, :mod:`.analytic_ur_path`: closed-form UR inverse kinematics, per pose and along a path.
- :mod:`.branches`: a robot's IK branches, joint values a whole turn apart counted as one.

Built on the model, the formats, the solvers and the take.
"""
