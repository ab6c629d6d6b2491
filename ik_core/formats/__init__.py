# SPDX-License-Identifier: GPL-3.0-or-later
"""File formats read into the model: URDF and xacro (robots, with their link geometry), Collada meshes and BVH.

- :mod:`.urdf_model`: the URDF document as data, checked (joint types, tree, mimics).
- :mod:`.urdf`: URDF text or files to a :class:`~ik_core.model.skeleton.Skeleton`.
- :mod:`.urdf_tree`: the links as index arrays, and the tree questions an import asks, for every link at once.
- :mod:`.urdf_visuals`: link geometry, its colours, and where its meshes are.
- :mod:`.xacro_files`: xacro files expanded into URDF by the bundled ``xacro`` package.
- :mod:`.ros_packages`: the folders ``package://pkg`` and ``$(find pkg)`` name, found without ROS.
- :mod:`.collada`: Collada (.dae) triangle meshes, read with the standard library.
- :mod:`.stl`: STL (binary and ASCII) triangle meshes, read with numpy.
- :mod:`.bvh`: BVH motion capture to skeletons and joint rotations.
"""
