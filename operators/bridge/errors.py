# SPDX-License-Identifier: GPL-3.0-or-later
"""The bridge's exception."""


class BridgeError(Exception):
    """Blender data cannot be turned into a valid IK problem; the message says why and what is valid."""
