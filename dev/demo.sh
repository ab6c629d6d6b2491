#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The main job on the bundled example: a headless bake writing out/demo/{demo.blend,report.json,demo.png},
# then the UR5, Panda and iiwa presets as Add Robot draws them: out/demo/robots.png.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
python="$(dev/envs.sh 5.0.1 | tail -n 1)"
export BLENDER_USER_RESOURCES="$(mktemp -d -t articulate-user-XXXXXX)"
trap 'rm -rf "$BLENDER_USER_RESOURCES"' EXIT
"$python" cli.py demo --out out/demo "$@"
case " $* " in
  *" --no-picture "*) ;;
  *) "$python" dev/robot_previews.py --out out/demo ;;
esac
