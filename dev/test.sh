#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Every check the project has: ruff, import circles and private imports (dev/check_imports.py),
# the core tests on a Python without Blender (numpy 2.x), then the Blender tests on bpy 5.0.1, 4.5.15 and 4.2.23 (the core tests run again on 5.0.1,
# whose bpy pins numpy 1.26), then the farm jobs (OpenJD's `openjd check` and `openjd run` for
# real, the Flamenco job type under Node) on bpy 5.0.1, then the independent forward kinematics
# (tests/pinocchio: the core and the rigs Import URDF builds, link by link, against pinocchio run
# in its own venv) on each bpy. Fails if any suite fails.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
dev/envs.sh all >/dev/null || { echo "test.sh: could not create the environments" >&2; exit 1; }
venvs="${ARTICULATE_VENVS:-$root/.venvs}"
export BLENDER_USER_RESOURCES="$(mktemp -d -t articulate-user-XXXXXX)"
trap 'rm -rf "$BLENDER_USER_RESOURCES"' EXIT

declare -a names results
run() {  # run NAME COMMAND...
  local name="$1"; shift
  echo; echo "=== $name"
  "$@"
  local rc=$?
  names+=("$name"); results+=("$rc")
}

run "ruff" "$venvs/core/bin/ruff" check .
run "imports (no circles, no private names)" "$venvs/core/bin/python" dev/check_imports.py
cd tests
run "core (no bpy, numpy 2)" "$venvs/core/bin/python" -m pytest core -q
for version in 5.0.1 4.5.15 4.2.23; do
  paths=(blender)
  [[ "$version" == 5.0.1 ]] && paths=(core blender)
  run "blender $version" "$venvs/$version/bin/python" -m pytest "${paths[@]}" -q
done
ARTICULATE_OPENJD="$venvs/openjd/bin/openjd" run "farm (OpenJD, Flamenco) 5.0.1" "$venvs/5.0.1/bin/python" -m pytest farm -q
for version in 5.0.1 4.5.15 4.2.23; do
  ARTICULATE_PINOCCHIO="$venvs/pinocchio/bin/python" run "independent FK (pinocchio) $version" \
    "$venvs/$version/bin/python" -m pytest pinocchio -q
done

echo; echo "=== summary"
failed=0
for i in "${!names[@]}"; do
  status=ok; [[ "${results[$i]}" != 0 ]] && { status="FAILED (exit ${results[$i]})"; failed=$((failed + 1)); }
  printf '  %-40s %s\n' "${names[$i]}" "$status"
done
exit $(( failed > 0 ))
