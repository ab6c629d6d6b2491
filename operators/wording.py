# SPDX-License-Identifier: GPL-3.0-or-later
"""Text for people: misses in millimetres and degrees, as the UI shows lengths and angles.

Reports and the core keep SI units (metres, radians); what an operator says to the user goes
through here.
"""

from __future__ import annotations

import math
import re

_RADIANS = re.compile(r"(-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?) rad\b")


def printable(text: str) -> str:
    """``text`` as Blender can show it: the bytes of a file name that are not UTF-8 (Python's surrogate
    escapes, which Blender refuses with a TypeError) shown as U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def angles_in_degrees(text: str) -> str:
    """``text`` with every "<number> rad" rewritten in degrees ("0.5 rad" -> "28.6 deg").

    For messages of the core, which states angles in radians, shown where the UI shows degrees.
    """
    return _RADIANS.sub(lambda m: f"{math.degrees(float(m.group(1))):.3g} deg", text)


def missed_chains(report: dict, k: int) -> list[str]:
    """Per chain that missed on the report's ``k``-th frame, how far off it is: mm and degrees, as the UI shows them."""
    out = []
    for entry in report["chains"]:
        if entry["converged"][k]:
            continue
        if entry.get("mode") == "aim":
            text = f"aims {math.degrees(entry['aim_error_rad'][k]):.3g} deg off its target"
        else:
            text = f"ends {entry['position_error_m'][k] * 1000:.3g} mm from its target"
            turn = entry["rotation_error_rad"][k]
            if turn > 1e-6:
                text += f", turned {math.degrees(turn):.3g} deg from it"
        out.append(f"chain {entry['chain']!r} {text}")
    return out
