# SPDX-License-Identifier: GPL-3.0-or-later
"""Operators: read Blender state into numpy, call the core once, write the result back."""

import bpy

from . import aim_chains, alternatives, bake, chains, contacts, fullbody, ik_fk, live, robots, transaction

# Every operator runs as a transaction: a failure puts back what it changed (see transaction.py).
classes = transaction.guard_all((*bake.classes, *chains.classes, *aim_chains.classes, *robots.classes,
                                 *fullbody.classes, *alternatives.classes, *ik_fk.classes,
                                 *contacts.classes))

_register, _unregister = bpy.utils.register_classes_factory(classes)


def register() -> None:
    """Register every operator class."""
    _register()
    live.register()


def unregister() -> None:
    """Remove the live-posing handler, then unregister every operator class in reverse order."""
    live.unregister()
    _unregister()
