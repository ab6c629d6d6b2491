# SPDX-License-Identifier: GPL-3.0-or-later
"""Build, validate, install, enable, disable and uninstall the add-on in a fresh Blender process.

Run by test_packaging.py as ``python packaging_check.py REPO_ROOT OUT_DIR`` with
BLENDER_USER_RESOURCES pointing at an empty folder; prints one JSON object on its last line.
"""

import importlib
import json
import sys
import tomllib
import zipfile
from pathlib import Path

import bpy

# Both modules only exist once bpy has been imported.
addon_utils = importlib.import_module("addon_utils")
bl_extension_cli = importlib.import_module("bl_pkg.bl_extension_cli")

root, out = Path(sys.argv[1]), Path(sys.argv[2])
report: dict = {"blender": bpy.app.version_string}
report["validate_rc"] = bl_extension_cli.cli_extension_handler(["validate", str(root)])
report["build_rc"] = bl_extension_cli.cli_extension_handler(
    ["build", "--source-dir", str(root), "--output-dir", str(out)]
)
zips = sorted(out.glob("*.zip"))
report["zips"] = [z.name for z in zips]
zip_path = zips[0]
report["validate_zip_rc"] = bl_extension_cli.cli_extension_handler(["validate", str(zip_path)])
report["zip_names"] = zipfile.ZipFile(zip_path).namelist()
# The manifest as the built zip ships it, read by Blender's own TOML reader.
report["zip_manifest"] = tomllib.loads(zipfile.ZipFile(zip_path).read("blender_manifest.toml").decode())

module = "bl_ext.user_default.articulate"
bpy.ops.extensions.package_install_files(filepath=str(zip_path), repo="user_default", enable_on_install=True)
repo = next(r for r in bpy.context.preferences.extensions.repos if r.module == "user_default")
installed = Path(repo.directory) / "articulate"
report["installed_dir_exists"] = installed.is_dir()
report["enabled"] = module in bpy.context.preferences.addons
report["registered"] = {
    "operator": hasattr(bpy.types, "ARTICULATE_OT_bake"),
    "panel": hasattr(bpy.types, "ARTICULATE_PT_main"),
    "scene_property": hasattr(bpy.types.Scene, "articulate"),
}
report["operator_callable"] = "bake" in dir(bpy.ops.articulate)
# The manifest's wheels, installed by Blender into the extensions' own site-packages (not the wheels/ files).
site = Path(bpy.utils.user_resource("EXTENSIONS")) / ".local"
report["wheels_installed"] = {
    name: Path(importlib.import_module(name).__file__).resolve().is_relative_to(site.resolve())
    for name in ("xacro", "yaml", "mcap", "mcap_ros2")
}

addon_utils.disable(module, default_set=True)
report["disabled"] = module not in bpy.context.preferences.addons
report["unregistered"] = {
    "operator": not hasattr(bpy.types, "ARTICULATE_OT_bake"),
    "panel": not hasattr(bpy.types, "ARTICULATE_PT_main"),
    "scene_property": not hasattr(bpy.types.Scene, "articulate"),
    "object_property": not hasattr(bpy.types.Object, "articulate"),
}
bpy.ops.extensions.package_uninstall(repo_directory=repo.directory, pkg_id="articulate")
report["uninstalled"] = not installed.exists()
print(json.dumps(report))
