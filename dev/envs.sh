#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Create (idempotently) the project's virtual environments and print their interpreters.
#
#   dev/envs.sh [core|5.0.1|4.5.15|4.2.23|openjd|pinocchio|all]...   (default: all)
#
# Each environment holds a pinned Blender-as-a-module (bpy) or, for "core", plain numpy 2.x,
# plus the pinned test tools; "openjd" holds only Open Job Description's CLI (the farm tests),
# "pinocchio" only pinocchio (the independent forward kinematics of tests/pinocchio).
# A stamp file records the requirements it was built from, so a second call is a no-op that
# returns in milliseconds.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
venv_root="${ARTICULATE_VENVS:-$root/.venvs}"
python="${ARTICULATE_PYTHON:-python3.11}"
blender_versions=(5.0.1 4.5.15 4.2.23)

command -v "$python" >/dev/null 2>&1 || python=python3
if ! "$python" -c 'import sys; raise SystemExit(sys.version_info[:2] != (3, 11))'; then
  echo "envs.sh: bpy wheels need Python 3.11; '$python' is $("$python" --version 2>&1)." >&2
  echo "         Set ARTICULATE_PYTHON to a Python 3.11 interpreter." >&2
  exit 2
fi

requirements_for() {
  case "$1" in
    core) echo "numpy==2.4.6" ;;
    5.0.1|4.5.15|4.2.23) echo "bpy==$1" ;;
    openjd) cat "$here/requirements-openjd.txt"; return 0 ;;
    pinocchio) cat "$here/requirements-pinocchio.txt"; return 0 ;;
    *) echo "envs.sh: unknown environment '$1' (valid: core ${blender_versions[*]} openjd pinocchio all)" >&2; return 2 ;;
  esac
  cat "$here/requirements-tools.txt"
}

ensure_env() {
  local name="$1" dir="$venv_root/$1" wanted
  wanted="$(requirements_for "$name")"
  if [[ -x "$dir/bin/python" && -f "$dir/.stamp" && "$(cat "$dir/.stamp")" == "$wanted" ]]; then
    echo "$dir/bin/python"
    return 0
  fi
  echo "envs.sh: creating $dir" >&2
  rm -rf "$dir"
  "$python" -m venv "$dir"
  printf '%s\n' "$wanted" > "$dir/requirements.txt"
  "$dir/bin/python" -m pip install --quiet --disable-pip-version-check -r "$dir/requirements.txt" >&2
  printf '%s' "$wanted" > "$dir/.stamp"
  echo "$dir/bin/python"
}

targets=("$@")
[[ ${#targets[@]} -eq 0 || " ${targets[*]} " == *" all "* ]] && targets=(core "${blender_versions[@]}" openjd pinocchio)
for target in "${targets[@]}"; do
  ensure_env "$target"
done
