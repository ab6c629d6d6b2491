#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The main job on the bundled example: a headless bake writing OUT/{demo.blend,report.json,demo.png}
# (demo.png: a filmstrip of four frames with each chain's residual), then the UR5, Panda and iiwa
# presets as Add Robot draws them, labelled: OUT/robots.png. OUT is out/demo unless --out is given.
# Quiet: Blender's own messages go to OUT/blender.log; --verbose (make demo VERBOSE=1) shows them.
# Other options are cli.py demo's (--frames, --scene, --solver, --samples, --no-picture).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="out/demo" verbose=() picture=1 args=()
while (($#)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --out=*) out="${1#--out=}"; shift ;;
    --verbose) verbose=(--verbose); shift ;;
    --no-picture) picture=0; args+=("$1"); shift ;;
    *) args+=("$1"); shift ;;
  esac
done
python="$(dev/envs.sh 5.0.1 | tail -n 1)"
export BLENDER_USER_RESOURCES="$(mktemp -d -t articulate-user-XXXXXX)"
trap 'rm -rf "$BLENDER_USER_RESOURCES"' EXIT
"$python" cli.py demo --out "$out" ${verbose[@]+"${verbose[@]}"} ${args[@]+"${args[@]}"}
if ((picture)); then
  "$python" dev/robot_previews.py --out "$out" ${verbose[@]+"${verbose[@]}"}
fi
cat <<DONE

Written to $out/:
  demo.blend   the baked example: open it in Blender (4.2 or newer) and press Space to play
  report.json  per chain and frame: residual, iterations, convergence, limit hits, reason
DONE
if ((picture)); then
  cat <<DONE
  demo.png     a filmstrip of four frames, each with its frame number and every chain's residual
  robots.png   the UR5, Panda and iiwa presets as Add Robot draws them, each labelled
DONE
fi
if ((${#verbose[@]} == 0)); then
  echo "  blender.log  Blender's own messages (dev/demo.sh --verbose or make demo VERBOSE=1 shows them)"
fi
cat <<DONE
Next: look at $out/demo.png, then install the add-on (docs/install.md), open $out/demo.blend
and follow docs/animator.md to put chains on a rig of your own; docs/pipeline.md bakes files headless.
DONE
