# SPDX-License-Identifier: GPL-3.0-or-later
"""Importers and exporters are where users look: File > Import / Export, the file browser's filters, a .urdf drop."""

import fnmatch
import types
from pathlib import Path

import bpy
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "presets" / "examples"
IMPORTERS = {  # operator -> (filter_glob, filename_ext)
    "articulate.robot_import_urdf": ("*.urdf;*.xml;*.xacro", ".urdf"),
    "articulate.trajectory_import": ("*.csv;*.json;*.mcap", ".csv"),
    "articulate.cartesian_import": ("*.csv", ".csv"),
    "articulate.trackers_import": ("*.csv", ".csv"),
}


class MenuLayout:
    """Stands in for a menu's UILayout: records the operators drawn, checks they are registered."""

    def __init__(self):
        self.operators = []

    def separator(self):
        pass

    def operator(self, idname, text="", icon="NONE"):
        category, name = idname.split(".")
        assert hasattr(getattr(bpy.ops, category), name) and getattr(getattr(bpy.ops, category), name).idname()
        assert text and icon in bpy.types.UILayout.bl_rna.functions["operator"].parameters["icon"].enum_items
        self.operators.append((idname, text))


def _drawn(menu_name: str, addon_name: str) -> list:
    """Operators our draw functions add to a menu (only functions of the add-on's modules)."""
    menu = getattr(bpy.types, menu_name)
    ours = [f for f in getattr(menu.draw, "_draw_funcs", []) if f.__module__.startswith(addon_name)]
    layout = MenuLayout()
    for draw in ours:
        draw(types.SimpleNamespace(layout=layout), bpy.context)
    return ours, layout.operators


def _rna(idname):
    category, name = idname.split(".")
    return getattr(getattr(bpy.ops, category), name).get_rna_type()


def test_file_import_menu_lists_the_four_importers(addon):
    """File > Import draws URDF, joint trajectory, Cartesian poses and trackers, with readable labels."""
    funcs, ops = _drawn("TOPBAR_MT_file_import", addon.__name__)
    assert len(funcs) == 1
    assert [op for op, _ in ops] == list(IMPORTERS)
    assert [text for _, text in ops] == ["Robot URDF (.urdf, .xacro)", "Robot Joint Trajectory (.csv, .json, .mcap)",
                                         "Robot Cartesian Poses (.csv)", "Body Trackers (.csv)"]


def test_file_export_menu_lists_the_trajectory_exporter(addon):
    funcs, ops = _drawn("TOPBAR_MT_file_export", addon.__name__)
    assert len(funcs) == 1 and ops == [("articulate.trajectory_export",
                                            "Robot Joint Trajectory (.csv, .json, .mcap)")]


def test_menu_entries_leave_with_the_add_on(addon, addon_module):
    """Unregistering the menus takes exactly our entries out; registering puts them back once."""
    menus = addon_module("ui.menus")
    menus.unregister()
    try:
        assert _drawn("TOPBAR_MT_file_import", addon.__name__)[0] == []
        assert _drawn("TOPBAR_MT_file_export", addon.__name__)[0] == []
        assert bpy.types.TOPBAR_MT_file_import.draw._draw_funcs  # Blender's own entries stay
    finally:
        menus.register()
    assert len(_drawn("TOPBAR_MT_file_import", addon.__name__)[0]) == 1


@pytest.mark.parametrize("idname", list(IMPORTERS))
def test_importers_filter_glob_and_extension(addon, idname):
    """Each importer filters the browser to its files (the example files pass), and never remembers a path."""
    glob, ext = IMPORTERS[idname]
    rna = _rna(idname)
    assert rna.properties["filter_glob"].default == glob and rna.properties["filter_glob"].is_hidden
    cls = getattr(bpy.types, "ARTICULATE_OT_" + idname.split(".")[1])
    assert cls.filename_ext == ext
    assert rna.properties["filepath"].subtype == "FILE_PATH" and rna.properties["filepath"].is_skip_save
    assert issubclass(cls, __import__("bpy_extras.io_utils", fromlist=["ImportHelper"]).ImportHelper)
    patterns = glob.split(";")
    assert any(fnmatch.fnmatch("robot" + ext, p) for p in patterns)
    assert not any(fnmatch.fnmatch("robot.blend", p) for p in patterns)


def test_example_files_pass_their_importers_filters(addon):
    """The shipped examples are offered by the browser of the importer that reads them."""
    for name, idname in (("ur5_joint_trajectory.csv", "articulate.trajectory_import"),
                         ("ur5_cartesian_poses.csv", "articulate.cartesian_import"),
                         ("trackers.csv", "articulate.trackers_import")):
        assert (EXAMPLES / name).is_file()
        assert any(fnmatch.fnmatch(name, p) for p in IMPORTERS[idname][0].split(";"))


def test_exporter_filter_extension_and_format(addon):
    """The exporter is an ExportHelper offering .csv, .json and .mcap, CSV by default."""
    from bpy_extras.io_utils import ExportHelper

    cls = bpy.types.ARTICULATE_OT_trajectory_export
    rna = _rna("articulate.trajectory_export")
    assert issubclass(cls, ExportHelper) and cls.filename_ext == ".csv"
    assert rna.properties["filter_glob"].default == "*.csv;*.json;*.mcap"
    assert rna.properties["file_format"].default == "CSV"
    assert set(rna.properties["file_format"].enum_items.keys()) == {"CSV", "JSON", "MCAP"}


def test_choosing_the_format_changes_the_extension(addon):
    """In the browser, switching to ROS JSON turns 'ur5_trajectory.csv' into 'ur5_trajectory.json' and back."""
    check = bpy.types.ARTICULATE_OT_trajectory_export.check
    op = types.SimpleNamespace(filepath="/tmp/ur5_trajectory.csv", file_format="JSON")
    assert check(op, bpy.context) is True and op.filepath == "/tmp/ur5_trajectory.json"
    op.file_format = "CSV"
    assert check(op, bpy.context) is True and op.filepath == "/tmp/ur5_trajectory.csv"
    assert check(op, bpy.context) is False
    op.filepath = "/tmp/"  # a folder, no file name yet: left alone
    assert check(op, bpy.context) is False and op.filepath == "/tmp/"


def test_export_default_file_name(empty_scene, addon_module, tmp_path):
    """The browser proposes '<robot>_trajectory.csv', beside the .blend once it is saved."""
    files, robots = addon_module("operators.files"), addon_module("operators.robots")
    assert bpy.ops.articulate.robot_add(preset="ur5") == {"FINISHED"}
    arm = bpy.context.object
    name = robots.export_name(arm)
    assert name == f"{arm.name}_trajectory"
    assert arm.name == "Universal_Robots_UR5_CB3"
    assert files.default_export_path(bpy.context, name, ".csv") == "Universal_Robots_UR5_CB3_trajectory.csv"
    arm.name = "cell 3/arm"
    assert files.default_export_path(bpy.context, robots.export_name(arm), ".csv") == "cell_3_arm_trajectory.csv"
    blend = tmp_path / "cell.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    assert files.default_export_path(bpy.context, "x", ".json") == str(tmp_path / "x.json")


def test_export_file_name_decides_the_format(empty_scene, tmp_path, core):
    """'.json' writes ROS JSON whatever the format says; no extension takes the format's; another is refused."""
    assert bpy.ops.articulate.robot_add(preset="ur5") == {"FINISHED"}
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 3
    assert bpy.ops.articulate.trajectory_export(filepath=str(tmp_path / "a.json"), file_format="CSV") == {"FINISHED"}
    assert len(core.trajectory.read_joint_json(tmp_path / "a.json").times) == 3
    assert bpy.ops.articulate.trajectory_export(filepath=str(tmp_path / "b"), file_format="JSON") == {"FINISHED"}
    assert (tmp_path / "b.json").is_file() and not (tmp_path / "b").exists()
    with pytest.raises(RuntimeError, match=r"'\.txt' is not '\.csv' \(CSV\), '\.json' \(ROS JSON\) or '\.mcap'"):
        bpy.ops.articulate.trajectory_export(filepath=str(tmp_path / "c.txt"))
    assert not (tmp_path / "c.txt").exists()


def _area(kind: str):
    window = bpy.context.window_manager.windows[0]
    area = next(a for a in window.screen.areas if a.type == kind)
    return window, area, next(r for r in area.regions if r.type == "WINDOW")


def test_urdf_file_handler_accepts_drops_on_the_viewport_only(empty_scene, addon):
    """The .urdf/.xacro handler is registered for the URDF importer, polls true over a 3D viewport only."""
    handler = bpy.types.ARTICULATE_FH_urdf
    assert handler.is_registered and issubclass(handler, bpy.types.FileHandler)
    assert handler.bl_import_operator == "articulate.robot_import_urdf"
    assert handler.bl_file_extensions == ".urdf;.xacro"
    assert "filepath" in _rna(handler.bl_import_operator).properties  # what a drop sets
    window, area, region = _area("VIEW_3D")
    with bpy.context.temp_override(window=window, area=area, region=region):
        assert handler.poll_drop(bpy.context) is True
        assert bpy.ops.articulate.robot_import_urdf.poll()  # the importer runs there
    window, area, region = _area("OUTLINER")
    with bpy.context.temp_override(window=window, area=area, region=region):
        assert handler.poll_drop(bpy.context) is False


def test_robot_operators_say_why_they_are_greyed_out(empty_scene, addon):
    """Without a robot the trajectory operators poll false with a message naming what to do."""
    for idname in ("trajectory_import", "cartesian_import", "trajectory_check", "trajectory_export"):
        op = getattr(bpy.ops.articulate, idname)
        assert not op.poll()
        with pytest.raises(RuntimeError, match="select a robot rig first"):
            op()
