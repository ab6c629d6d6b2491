# SPDX-License-Identifier: GPL-3.0-or-later
"""A stand-in for ``bpy.types.UILayout`` that checks every call against Blender's own RNA definitions.

Panels never draw headless, and a stub that accepts anything hides a call Blender refuses (a
``template_list`` given a collection where it needs an integer index draws nothing, with a
message on the terminal). This one reads ``UILayout.bl_rna.functions`` of the running Blender,
so each of 4.2, 4.5 and 5.0 is checked against its own API:

- every call names a real ``UILayout`` function, with known keyword names, every required
  parameter, no more positional arguments than parameters, and values of the parameter's type
  (strings, booleans, integers, floats, enum identifiers such as icons, RNA structs);
- ``prop``/``prop_search``/``prop_enum`` name a real property of ``data`` (the search one a
  collection), ``template_list`` a registered UIList, a collection and an *integer* active
  index, ``operator``/``operator_menu_enum`` a registered operator and its real properties;
- attributes set on a layout (``active``, ``use_property_split``) are ``UILayout``'s own.

``template_list`` then draws each item through the list's ``draw_item`` with a strict layout,
as Blender would. Any violation raises ``AssertionError`` naming the call.
"""

from __future__ import annotations

import types

import bpy

LAYOUT_RNA = bpy.types.UILayout.bl_rna


def _is_struct(value) -> bool:
    return isinstance(value, bpy.types.bpy_struct) or isinstance(value, OperatorSelf)


def _rna(value):
    return value.bl_rna if not isinstance(value, OperatorSelf) else value.props.bl_rna


def _check_value(where: str, param, value) -> None:
    kind = param.type
    if kind == "STRING":
        ok = isinstance(value, str)
    elif kind == "BOOLEAN":
        ok = isinstance(value, (bool, int)) and not getattr(param, "is_array", False)
    elif kind == "INT":
        ok = isinstance(value, (bool, int))
    elif kind == "FLOAT":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif kind == "ENUM":
        valid = param.enum_items.keys()
        if param.is_enum_flag:
            ok = isinstance(value, (set, frozenset)) and set(value) <= set(valid)
        else:
            ok = isinstance(value, str) and (value in valid or not valid)
        assert ok, f"{where}: {param.identifier}={value!r} is not one of its {len(valid)} enum items"
        return
    elif kind == "POINTER":
        ok = _is_struct(value) or (value is None and not param.is_required)
    else:
        ok = True
    assert ok, f"{where}: {param.identifier}={value!r} is not a {kind.lower()}"


def _bind(name: str, args: tuple, kwargs: dict) -> dict:
    """The call's arguments by parameter name, checked against ``UILayout.<name>``'s RNA signature."""
    assert name in LAYOUT_RNA.functions, f"UILayout has no function {name!r}"
    params = [p for p in LAYOUT_RNA.functions[name].parameters if not p.is_output]
    where = f"UILayout.{name}()"
    assert len(args) <= len(params), f"{where} takes {len(params)} arguments, got {len(args)} positional"
    bound = {p.identifier: a for p, a in zip(params, args)}
    by_name = {p.identifier: p for p in params}
    for key, value in kwargs.items():
        assert key in by_name, f"{where} has no parameter {key!r}; valid: {', '.join(by_name)}"
        assert key not in bound, f"{where} got {key!r} twice"
        bound[key] = value
    for p in params:
        if p.is_required:
            assert p.identifier in bound, f"{where} misses the required parameter {p.identifier!r}"
        if p.identifier in bound:
            _check_value(where, p, bound[p.identifier])
    return bound


def _property(where: str, data, name: str):
    assert _is_struct(data), f"{where}: {data!r} is not an RNA struct"
    props = _rna(data).properties
    assert name in props, f"{where}: {_rna(data).identifier} has no property {name!r}"
    return props[name]


def _operator_rna(where: str, idname: str):
    category, _, name = idname.partition(".")
    assert category and name and "." not in name, f"{where}: {idname!r} is not an operator id"
    op = getattr(getattr(bpy.ops, category), name)
    try:
        return op.get_rna_type()
    except KeyError:
        raise AssertionError(f"{where}: operator {idname!r} is not registered") from None


class OperatorProperties:
    """What ``layout.operator()`` returns: only the operator's own properties can be set, with values of their type."""

    def __init__(self, idname: str, rna, log: list):
        object.__setattr__(self, "_where", f"operator {idname}")
        object.__setattr__(self, "_rna", rna)
        object.__setattr__(self, "_log", log)

    def __setattr__(self, key, value):
        assert key in self._rna.properties, f"{self._where} has no property {key!r}"
        _check_value(self._where, self._rna.properties[key], value)
        self._log.append(("set", key))


class OperatorSelf:
    """An operator instance for calling its ``draw()``: its properties (real ones), its methods and ``layout``."""

    def __init__(self, cls, layout: StrictLayout):
        object.__setattr__(self, "cls", cls)
        object.__setattr__(self, "layout", layout)
        props = bpy.context.window_manager.operator_properties_last(cls.bl_idname)
        assert props is not None, f"no properties for {cls.bl_idname}"
        object.__setattr__(self, "props", props)

    @property
    def properties(self):
        return self.props

    def __getattr__(self, name):
        if name in self.props.bl_rna.properties:
            return getattr(self.props, name)
        attr = getattr(self.cls, name)
        return types.MethodType(attr, self) if isinstance(attr, types.FunctionType) else attr

    def __setattr__(self, name, value):
        setattr(self.props, name, value)


class StrictLayout:
    """Records a draw() and fails on any call or attribute Blender's ``UILayout`` would refuse."""

    def __init__(self, log: list, context=None):
        object.__setattr__(self, "_log", log)
        object.__setattr__(self, "_context", context or bpy.context)
        object.__setattr__(self, "_values", {})

    def __setattr__(self, name, value):
        assert name in LAYOUT_RNA.properties, f"UILayout has no attribute {name!r}"
        prop = LAYOUT_RNA.properties[name]
        assert not prop.is_readonly, f"UILayout.{name} is read-only"
        _check_value(f"UILayout.{name}", prop, value)
        self._values[name] = value

    def __getattr__(self, name):
        if name in LAYOUT_RNA.properties:
            return self._values.get(name, getattr(LAYOUT_RNA.properties[name], "default", None))
        assert name in LAYOUT_RNA.functions, f"UILayout has no function or attribute {name!r}"
        return lambda *args, **kwargs: self._call(name, args, kwargs)

    def _call(self, name: str, args: tuple, kwargs: dict):
        bound = _bind(name, args, kwargs)
        self._log.append((name, bound))
        where = f"UILayout.{name}()"
        check = getattr(type(self), f"_check_{name}", None)
        result = check(self, where, bound) if check is not None else None
        outputs = [p for p in LAYOUT_RNA.functions[name].parameters if p.is_output]
        makes_layout = outputs and outputs[0].type == "POINTER" and outputs[0].fixed_type.identifier == "UILayout"
        if result is None and makes_layout:
            return StrictLayout(self._log, self._context)
        return result

    def _check_prop(self, where, bound):
        prop = _property(where, bound["data"], bound["property"])
        if bound.get("index", -1) not in (-1, None):
            assert getattr(prop, "is_array", False), f"{where}: {bound['property']!r} is not an array"

    def _check_prop_enum(self, where, bound):
        prop = _property(where, bound["data"], bound["property"])
        assert prop.type == "ENUM", f"{where}: {bound['property']!r} is not an enum"

    def _check_prop_search(self, where, bound):
        prop = _property(where, bound["data"], bound["property"])
        assert prop.type in ("STRING", "POINTER"), f"{where}: {bound['property']!r} is a {prop.type.lower()}"
        search = _property(where, bound["search_data"], bound["search_property"])
        assert search.type == "COLLECTION", f"{where}: {bound['search_property']!r} is not a collection"

    def _check_operator(self, where, bound):
        rna = _operator_rna(where, bound["operator"])
        return OperatorProperties(bound["operator"], rna, self._log)

    def _check_operator_menu_enum(self, where, bound):
        rna = _operator_rna(where, bound["operator"])
        prop = bound["property"]
        assert prop in rna.properties, f"{where}: {bound['operator']} has no property {prop!r}"
        assert rna.properties[bound["property"]].type == "ENUM", f"{where}: {bound['property']!r} is not an enum"
        return OperatorProperties(bound["operator"], rna, self._log)

    def _check_template_list(self, where, bound):
        listtype = bound["listtype_name"]
        ul = getattr(bpy.types, listtype, None)
        assert ul is not None and issubclass(ul, bpy.types.UIList), f"{where}: no UIList class {listtype!r}"
        if listtype == "UI_UL_list":
            assert bound["list_id"], f"{where}: the default 'UI_UL_list' needs a custom list_id"
        items = _property(where, bound["dataptr"], bound["propname"])
        assert items.type == "COLLECTION", f"{where}: {bound['propname']!r} is not a collection"
        active = _property(where, bound["active_dataptr"], bound["active_propname"])
        assert active.type == "INT" and not getattr(active, "is_array", False), (
            f"{where}: active_propname {bound['active_propname']!r} is a {active.type.lower()}; Blender needs an "
            "integer property holding the active index")
        if ul is not bpy.types.UI_UL_list and "draw_item" in vars(ul):
            data = bound["dataptr"]
            for index, item in enumerate(getattr(data, bound["propname"])):
                row = StrictLayout(self._log, self._context)
                ul.draw_item(types.SimpleNamespace(layout_type="DEFAULT", bl_idname=listtype), self._context, row,
                             data, item, 0, bound["active_dataptr"], bound["active_propname"], index)
                self._log.append(("draw_item", listtype, index))

    def _check_menu(self, where, bound):
        assert hasattr(bpy.types, bound["menu"]), f"{where}: no menu {bound['menu']!r}"

    def _check_popover(self, where, bound):
        assert hasattr(bpy.types, bound["panel"]), f"{where}: no panel {bound['panel']!r}"


def draw_panel(panel_cls, context=None) -> list:
    """Run a panel's ``draw_header`` (if any) and ``draw`` on strict layouts; returns the calls made."""
    log: list = []
    context = context or bpy.context
    fake = types.SimpleNamespace(layout=StrictLayout(log, context), bl_label=panel_cls.bl_label)
    if "draw_header" in vars(panel_cls):
        panel_cls.draw_header(fake, context)
    panel_cls.draw(fake, context)
    return log


def draw_operator(op_cls, context=None, **props) -> list:
    """Run an operator's ``draw()`` (its redo panel) with ``props`` set; returns the calls made."""
    log: list = []
    fake = OperatorSelf(op_cls, StrictLayout(log, context))
    for key, value in props.items():
        setattr(fake, key, value)
    op_cls.draw(fake, context or bpy.context)
    return log


def drawn_props(log: list) -> list[str]:
    """Names of the properties a draw showed with ``prop``, in order."""
    return [bound["property"] for name, bound in (e for e in log if len(e) == 2 and isinstance(e[1], dict))
            if name == "prop"]


def drawn_operators(log: list) -> list[str]:
    """Operator ids a draw showed as buttons or menus."""
    return [bound["operator"] for name, bound in (e for e in log if len(e) == 2 and isinstance(e[1], dict))
            if name in ("operator", "operator_menu_enum")]
