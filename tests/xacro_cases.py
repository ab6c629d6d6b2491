# SPDX-License-Identifier: GPL-3.0-or-later
"""A xacro robot for tests: a ROS workspace holding a two-armed robot, its parts in a sibling package, its URDF.

The xacro uses what real descriptions use: an arm macro with parameters, a default and an
``<origin>`` block, properties, maths (pi, radians), ``xacro:if`` / ``xacro:unless``, an include
relative to the file and one through ``$(find pkg)``, and arguments with defaults.
"""

from __future__ import annotations

import math
from pathlib import Path

NS = 'xmlns:xacro="http://www.ros.org/wiki/xacro"'

# A two-armed robot as a roboticist writes it: an arm macro with parameters and an <origin> block,
# properties, maths, a conditional gripper, an include relative to the file and one through $(find),
# arguments with defaults.
TOP = f"""<?xml version="1.0"?>
<robot name="duo" {NS}>
  <xacro:arg name="prefix" default=""/>
  <xacro:arg name="gripper" default="true"/>
  <xacro:arg name="reach" default="0.4"/>
  <xacro:include filename="common.xacro"/>
  <xacro:include filename="$(find duo_parts)/urdf/arm.xacro"/>
  <link name="$(arg prefix)torso"><visual><geometry><box size="${{torso_w}} 0.2 0.6"/></geometry></visual></link>
  <xacro:arm side="left" parent="$(arg prefix)torso" reach="$(arg reach)">
    <origin xyz="0 ${{torso_w / 2}} 0.5" rpy="${{-pi/2}} 0 0"/>
  </xacro:arm>
  <xacro:arm side="right" parent="$(arg prefix)torso" reach="$(arg reach)" twist="${{radians(30)}}">
    <origin xyz="0 ${{-torso_w / 2}} 0.5" rpy="${{pi/2}} 0 0"/>
  </xacro:arm>
  <xacro:if value="$(arg gripper)">
    <link name="finger"/>
    <joint name="finger_joint" type="prismatic"><parent link="left_hand"/><child link="finger"/>
      <axis xyz="1 0 0"/><limit lower="0" upper="${{finger_travel}}" effort="5" velocity="0.1"/></joint>
  </xacro:if>
  <xacro:unless value="$(arg gripper)"><link name="flange"/>
    <joint name="flange_joint" type="fixed"><parent link="left_hand"/><child link="flange"/></joint>
  </xacro:unless>
</robot>
"""
COMMON = f"""<robot {NS}>
  <xacro:property name="torso_w" value="0.3"/>
  <xacro:property name="finger_travel" value="${{0.02 * 2}}"/>
</robot>
"""
ARM = f"""<robot {NS}>
  <xacro:macro name="arm" params="side parent reach twist:=0 *origin">
    <link name="${{side}}_upper"/>
    <link name="${{side}}_hand"/>
    <joint name="${{side}}_shoulder" type="revolute">
      <parent link="${{parent}}"/><child link="${{side}}_upper"/>
      <xacro:insert_block name="origin"/>
      <axis xyz="0 0 1"/>
      <limit lower="${{-pi}}" upper="${{pi}}" effort="10" velocity="${{2 * pi / 3}}"/>
    </joint>
    <joint name="${{side}}_elbow" type="revolute">
      <parent link="${{side}}_upper"/><child link="${{side}}_hand"/>
      <origin xyz="${{reach}} 0 0" rpy="${{twist}} 0 0"/>
      <axis xyz="0 1 0"/>
      <limit lower="${{-radians(150)}}" upper="${{radians(150)}}" effort="10" velocity="3"/>
    </joint>
  </xacro:macro>
</robot>
"""

# The same robot written out by hand (defaults: no prefix, gripper on, reach 0.4).
EXPECTED = f"""<robot name="duo">
  <link name="torso"/><link name="left_upper"/><link name="left_hand"/>
  <link name="right_upper"/><link name="right_hand"/><link name="finger"/>
  <joint name="left_shoulder" type="revolute"><parent link="torso"/><child link="left_upper"/>
    <origin xyz="0 0.15 0.5" rpy="{-math.pi / 2} 0 0"/><axis xyz="0 0 1"/>
    <limit lower="{-math.pi}" upper="{math.pi}" effort="10" velocity="{2 * math.pi / 3}"/></joint>
  <joint name="left_elbow" type="revolute"><parent link="left_upper"/><child link="left_hand"/>
    <origin xyz="0.4 0 0"/><axis xyz="0 1 0"/>
    <limit lower="{-math.radians(150)}" upper="{math.radians(150)}" effort="10" velocity="3"/></joint>
  <joint name="right_shoulder" type="revolute"><parent link="torso"/><child link="right_upper"/>
    <origin xyz="0 -0.15 0.5" rpy="{math.pi / 2} 0 0"/><axis xyz="0 0 1"/>
    <limit lower="{-math.pi}" upper="{math.pi}" effort="10" velocity="{2 * math.pi / 3}"/></joint>
  <joint name="right_elbow" type="revolute"><parent link="right_upper"/><child link="right_hand"/>
    <origin xyz="0.4 0 0" rpy="{math.radians(30)} 0 0"/><axis xyz="0 1 0"/>
    <limit lower="{-math.radians(150)}" upper="{math.radians(150)}" effort="10" velocity="3"/></joint>
  <joint name="finger_joint" type="prismatic"><parent link="left_hand"/><child link="finger"/>
    <axis xyz="1 0 0"/><limit lower="0" upper="0.04" effort="5" velocity="0.1"/></joint>
</robot>
"""


def workspace(root: Path, top: str = TOP) -> Path:
    """A ROS workspace: src/duo_description/urdf/duo.urdf.xacro (+ common.xacro), src/duo_parts/urdf/arm.xacro."""
    desc, parts = root / "src" / "duo_description" / "urdf", root / "src" / "duo_parts" / "urdf"
    desc.mkdir(parents=True)
    parts.mkdir(parents=True)
    (desc / "common.xacro").write_text(COMMON)
    (parts / "arm.xacro").write_text(ARM)
    (desc / "duo.urdf.xacro").write_text(top)
    return desc / "duo.urdf.xacro"
