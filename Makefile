# SPDX-License-Identifier: GPL-3.0-or-later
.PHONY: demo test build envs bench bench-env

demo:  ## headless bake of the bundled example: out/demo/{demo.blend,report.json,demo.png,robots.png}; VERBOSE=1 shows Blender's messages
	dev/demo.sh $(if $(VERBOSE),--verbose)

test:  ## ruff + core tests + Blender tests on bpy 5.0.1, 4.5.15 and 4.2.23
	dev/test.sh

build:  ## the extension zip to install in Blender (Install from Disk): dist/articulate-<version>.zip
	dev/build.sh

envs:  ## create the virtual environments (idempotent)
	dev/envs.sh all

bench:  ## keyframe-writing benchmark (more in bench/README.md)
	.venvs/5.0.1/bin/python bench/bench_keyframes.py

bench-env:  ## bench-only venv with the peers (roboticstoolbox-python, ikpy); never an add-on dependency
	test -x .venvs/bench/bin/python || python3.11 -m venv .venvs/bench
	.venvs/bench/bin/pip install --quiet -r bench/requirements-peers.txt
