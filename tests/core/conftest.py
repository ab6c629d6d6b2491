# SPDX-License-Identifier: GPL-3.0-or-later
"""The core tests mirror ``ik_core``'s folders; their shared helpers (``shared_data``) live here."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
