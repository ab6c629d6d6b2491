# SPDX-License-Identifier: GPL-3.0-or-later
"""Unknown names: the nearest valid ones are suggested, with sides and case understood."""

import pytest

from ik_core.errors import LIST_ALL_UP_TO, UnknownNameError, close_names, name_hint

RIG = ["upper_arm.L", "forearm.L", "hand.L", "upper_arm.R", "forearm.R", "hand.R", "spine", "spine.001", "head"]
MANY = RIG + [f"finger_{k:03d}" for k in range(150)]


@pytest.mark.parametrize("typed, expected", [
    ("hand.l", ["hand.L"]),  # case only: that one alone
    ("Hand_L", ["hand.L"]),  # separators too
    ("LeftHand", ["hand.L", "hand.R"]),  # Mixamo's spelling of the side, the same side first
    ("mixamorig:RightHand", ["hand.R", "hand.L"]),  # with a namespace
    ("forarm.R", ["forearm.R", "forearm.L"]),  # a typo: alike letter by letter, same side first
    ("zzz", []),
])
def test_close_names(typed, expected):
    """The nearest names come first; a name matching but for case or separators hides the merely similar."""
    assert close_names(typed, MANY)[: len(expected)] == expected
    if not expected:
        assert close_names(typed, MANY) == []


def test_a_long_list_is_not_printed():
    """Beyond LIST_ALL_UP_TO names only the nearest are named, with the count; a short list is given whole."""
    hint = name_hint("hnd.L", MANY, "bone")
    assert hint == f"did you mean 'hand.L' or 'hand.R'? ({len(MANY)} bones)"
    assert "finger_001" not in hint
    assert name_hint("zzz", MANY, "bone").startswith(f"no bone has a similar name ({len(MANY)} bones, such as")
    assert name_hint("hed", RIG[:LIST_ALL_UP_TO], "bone").endswith("; did you mean 'head'?")
    assert name_hint("x", [], "chain") == "there are no chains"


def test_unknown_name_error_suggests():
    """UnknownNameError keeps its 'valid ...' list for few names and adds the suggestion."""
    err = UnknownNameError("joint", "elbw", ["root", "shoulder", "elbow"])
    assert str(err) == "unknown joint 'elbw'; valid joints: 'root', 'shoulder', 'elbow'; did you mean 'elbow'?"
    assert str(UnknownNameError("bone", "Hand.L", MANY)).startswith("unknown bone 'Hand.L'; did you mean 'hand.L'?")
