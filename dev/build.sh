#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Build the extension zip users install (Edit > Preferences > Get Extensions > Install from Disk):
# dist/articulate-<version>.zip, made by Blender's own `extension build` (the code behind
# `blender --command extension build`, run here through the bpy module of .venvs/5.0.1), which
# first validates the manifest and leaves out what blender_manifest.toml's paths_exclude_pattern names.
#
#   dev/build.sh [OUT_DIR]   (default: dist)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
python="$(dev/envs.sh 5.0.1 | tail -n 1)"
export BLENDER_USER_RESOURCES="$(mktemp -d -t articulate-user-XXXXXX)"
trap 'rm -rf "$BLENDER_USER_RESOURCES"' EXIT
out="${1:-dist}"
mkdir -p "$out"
"$python" -c "import sys, bpy; from bl_pkg import bl_extension_cli as c; raise SystemExit(c.cli_extension_handler(['build', '--source-dir', '.', '--output-dir', sys.argv[1]]))" "$out"
