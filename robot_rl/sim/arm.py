"""MJCF of a 7-DoF Franka-Panda-class arm with a parallel gripper, table and cameras.

Kinematics are Franka's published modified-DH parameters (d1 = 0.333, d3 = 0.316, a4 = 0.0825,
a5 = -0.0825, d5 = 0.384, a7 = 0.088, flange 0.107 m), joint limits and link masses are the published
ones, inertias are diagonal approximations of the published tensors. Collision geometry is capsules and
boxes only, so the model needs no mesh assets and contact stays cheap.

The Cartesian impedance controller is part of the model: six ``general`` actuators with a *site
transmission* whose ``refsite`` is a mocap "target" frame. MuJoCo then evaluates, inside its C step at
physics rate, ``F = kp * (0 - e) - kd * de/dt`` on the TCP pose error ``e`` (expressed in the target
frame) and maps it through the TCP Jacobian (``tau = J^T F``). Gravity of the arm is compensated with
``gravcomp``; a weak joint spring towards the home posture acts as the null-space posture term.
Python touches the controller once per control step (to move the target), never per physics step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

HOME_QPOS = np.array([0.0, -0.5, 0.0, -2.3, 0.0, 1.8, 0.785])
JOINT_LIMITS = np.array(
    [
        [-2.8973, 2.8973],
        [-1.7628, 1.7628],
        [-2.8973, 2.8973],
        [-3.0718, -0.0698],
        [-2.8973, 2.8973],
        [-0.0175, 3.7525],
        [-2.8973, 2.8973],
    ]
)
FINGER_MAX_OPENING_M = 0.04  # per finger; the hand opens to 8 cm


@dataclass(frozen=True)
class ImpedanceGains:
    """Cartesian impedance gains of the simulated controller."""

    translational_stiffness: float = 1500.0  # N/m
    rotational_stiffness: float = 60.0  # N m / rad
    translational_damping_ratio: float = 1.0
    max_force_n: float = 60.0  # per axis; bounds contact forces like reference limiting does
    max_torque_nm: float = 8.0

    def __post_init__(self) -> None:
        for name in ("translational_stiffness", "rotational_stiffness", "max_force_n", "max_torque_nm"):
            if getattr(self, name) <= 0:
                raise ValueError(f"ImpedanceGains.{name} must be > 0, got {getattr(self, name)}")


FRAME_AXES = ("xaxis", "yaxis", "zaxis")


def frame_sensors(name: str, objtype: str, objname: str) -> str:
    """Sensors ``<name>_pos`` and ``<name>_xaxis`` / ``_yaxis`` / ``_zaxis`` (the rotation matrix's columns) of a
    frame: ``objtype`` "site", or "xbody" for a body's own frame (MJCF's "body" is its inertial frame)."""
    kinds = [("pos", "framepos")] + [(axis, f"frame{axis}") for axis in FRAME_AXES]
    return "".join(f'<{element} name="{name}_{kind}" objtype="{objtype}" objname="{objname}"/>'
                   for kind, element in kinds)


def _link(name: str, pos: str, quat: str, mass: float, inertia: str, com: str, geoms: str, inner: str) -> str:
    index = int(name[-1]) - 1
    lo, hi = JOINT_LIMITS[index]
    return f"""
<body name="{name}" pos="{pos}" quat="{quat}" gravcomp="1">
  <inertial pos="{com}" mass="{mass}" diaginertia="{inertia}"/>
  <joint name="{name}_joint" class="arm" range="{lo} {hi}" springref="{HOME_QPOS[index]}"/>
  {geoms}
  {inner}
</body>"""


def _arm_xml() -> str:
    hand = """
<body name="hand" pos="0 0 0.107" quat="0.9238795 0 0 -0.3826834" gravcomp="1">
  <site name="ft_site" pos="0 0 0" size="0.005" rgba="0 0 0 0"/>
  <inertial pos="0 0 0.03" mass="0.73" diaginertia="0.001 0.0025 0.0017"/>
  <geom class="arm_col" type="cylinder" size="0.04 0.01" pos="0 0 0.01"/>
  <geom class="arm_col" type="box" size="0.02 0.1 0.025" pos="0 0 0.045"/>
  <camera name="wrist" pos="0.06 0 0.02" quat="0 0.7071068 0.7071068 0" fovy="75"/>
  <site name="tcp" pos="0 0 0.1034" size="0.006" rgba="1 0 0 0.4"/>
  <body name="left_finger" pos="0 0 0.0584" gravcomp="1">
    <inertial pos="0 0.01 0.02" mass="0.015" diaginertia="2e-5 2e-5 2e-6"/>
    <joint name="finger_joint1" class="finger" axis="0 1 0"/>
    <geom class="finger_pad" pos="0 0.008 0.045" size="0.009 0.004 0.015"/>
    <geom class="arm_col" type="box" pos="0 0.012 0.02" size="0.009 0.004 0.02"/>
  </body>
  <body name="right_finger" pos="0 0 0.0584" gravcomp="1">
    <inertial pos="0 -0.01 0.02" mass="0.015" diaginertia="2e-5 2e-5 2e-6"/>
    <joint name="finger_joint2" class="finger" axis="0 -1 0"/>
    <geom class="finger_pad" pos="0 -0.008 0.045" size="0.009 0.004 0.015"/>
    <geom class="arm_col" type="box" pos="0 -0.012 0.02" size="0.009 0.004 0.02"/>
  </body>
</body>"""
    cap = 'class="arm_col" type="capsule"'
    link7 = _link(
        "link7",
        "0.088 0 0",
        "0.7071068 0.7071068 0 0",
        0.735522,
        "0.0125 0.01 0.0048",
        "0.0105 -0.0046 0.0617",
        f'<geom {cap} size="0.045" fromto="0 0 -0.02 0 0 0.08"/>',
        hand,
    )
    link6 = _link(
        "link6",
        "0 0 0",
        "0.7071068 0.7071068 0 0",
        1.666555,
        "0.002 0.0044 0.0054",
        "0.0601 0.0141 -0.0105",
        f'<geom {cap} size="0.055" fromto="0 0 -0.02 0.088 0 0"/>',
        link7,
    )
    link5 = _link(
        "link5",
        "-0.0825 0.384 0",
        "0.7071068 -0.7071068 0 0",
        1.225946,
        "0.0355 0.0295 0.0086",
        "-0.0119 0.0425 -0.1068",
        f'<geom {cap} size="0.055" fromto="0 0 -0.26 0 0 0"/>'
        f'<geom {cap} size="0.035" fromto="0 0.08 -0.13 0 0.08 -0.05"/>',
        link6,
    )
    link4 = _link(
        "link4",
        "0.0825 0 0",
        "0.7071068 0.7071068 0 0",
        3.587895,
        "0.0259 0.0196 0.0283",
        "-0.0530 0.1042 0.0274",
        f'<geom {cap} size="0.06" fromto="0 0 0 -0.0825 0.12 0"/>',
        link5,
    )
    link3 = _link(
        "link3",
        "0 -0.316 0",
        "0.7071068 0.7071068 0 0",
        3.228604,
        "0.0372 0.0362 0.0108",
        "0.0274 0.0392 -0.0665",
        f'<geom {cap} size="0.06" fromto="0 0 -0.15 0.0825 0 0"/>',
        link4,
    )
    link2 = _link(
        "link2",
        "0 0 0",
        "0.7071068 -0.7071068 0 0",
        0.646926,
        "0.008 0.0281 0.026",
        "-0.0038 -0.0709 0.0083",
        f'<geom {cap} size="0.06" fromto="0 0 0 0 -0.2 0"/>',
        link3,
    )
    link1 = _link(
        "link1",
        "0 0 0.333",
        "1 0 0 0",
        4.970684,
        "0.7034 0.7066 0.0091",
        "0.0039 0.0021 -0.0476",
        f'<geom {cap} size="0.06" fromto="0 0 -0.2 0 0 0"/>',
        link2,
    )
    return f"""
<body name="link0" pos="0 0 0">
  <inertial pos="-0.041 0 0.05" mass="3.06" diaginertia="0.0035 0.0087 0.0089"/>
  <geom class="arm_col" type="cylinder" size="0.07 0.07" pos="0 0 0.07"/>
  {link1}
</body>"""


def build_scene_xml(
    task_worldbody: str = "",
    task_assets: str = "",
    timestep_s: float = 0.002,
    gains: ImpedanceGains = ImpedanceGains(),
    front_camera_pos: tuple[float, float, float] = (1.25, 0.0, 0.75),
    task_sensors: str = "",
) -> str:
    """Full scene: arm + gripper + table + front camera + controller, with the task's bodies and sensors
    inserted. The sensors read everything an observation, reward or success needs (the TCP frame and its
    velocity, the wrist wrench, the task's objects and contacts), so the batched backends observe a world
    from one ``sensordata`` row."""
    kp_t, kp_r = gains.translational_stiffness, gains.rotational_stiffness
    # Damping from the effective Cartesian mass of a Panda near home (~3 kg translational, ~0.05 kg m^2).
    kd_t = 2.0 * gains.translational_damping_ratio * np.sqrt(kp_t * 3.0)
    kd_r = 2.0 * np.sqrt(kp_r * 0.05)
    actuators = []
    for i, axis in enumerate("xyz"):
        gear = " ".join("1" if j == i else "0" for j in range(6))
        actuators.append(
            f'<general name="imp_{axis}" site="tcp" refsite="target_site" gear="{gear}" biastype="affine" '
            f'gainprm="{kp_t}" biasprm="0 {-kp_t} {-kd_t:.3f}" ctrlrange="-1 1" '
            f'forcelimited="true" forcerange="{-gains.max_force_n} {gains.max_force_n}"/>'
        )
    for i, axis in enumerate("xyz"):
        gear = " ".join("1" if j == i + 3 else "0" for j in range(6))
        actuators.append(
            f'<general name="imp_r{axis}" site="tcp" refsite="target_site" gear="{gear}" biastype="affine" '
            f'gainprm="{kp_r}" biasprm="0 {-kp_r} {-kd_r:.3f}" ctrlrange="-1 1" '
            f'forcelimited="true" forcerange="{-gains.max_torque_nm} {gains.max_torque_nm}"/>'
        )
    fx, fy, fz = front_camera_pos
    return f"""
<mujoco model="robot_rl_arm">
  <compiler angle="radian" autolimits="true"/>
  <option timestep="{timestep_s}" integrator="implicitfast" cone="elliptic" impratio="5"/>
  <visual><quality shadowsize="0"/><global offwidth="640" offheight="640"/></visual>
  <default>
    <default class="arm">
      <joint axis="0 0 1" damping="4" armature="0.1" stiffness="0.5"/>
    </default>
    <default class="arm_col"><geom rgba="0.92 0.92 0.95 1" contype="1" conaffinity="1" group="0"/></default>
    <default class="finger">
      <joint type="slide" range="0 {FINGER_MAX_OPENING_M}" damping="20" armature="0.05"/>
    </default>
    <default class="finger_pad">
      <geom type="box" rgba="0.2 0.2 0.2 1" friction="1.5 0.01 0.001" condim="4" solref="0.005 1"/>
    </default>
  </default>
  <asset>
    <texture name="grid" type="2d" builtin="checker" rgb1="0.55 0.45 0.35" rgb2="0.5 0.4 0.3" width="64" height="64"/>
    <!-- 11 checker cells across y, one centred on y = 0, so the table is mirror-symmetric in y -->
    <material name="table" texture="grid" texrepeat="6 5.5"/>
    {task_assets}
  </asset>
  <worldbody>
    <light pos="0.5 0 1.5" dir="0 0 -1" directional="true" castshadow="false"/>
    <geom name="table" type="plane" size="1.2 1.2 0.05" material="table" pos="0 0 0"/>
    <camera name="front" pos="{fx} {fy} {fz}" xyaxes="0 1 0 -0.55 0 0.835" fovy="45"/>
    <body name="target" mocap="true" pos="0.5 0 0.3">
      <site name="target_site" size="0.01" rgba="0 1 0 0" type="sphere"/>
    </body>
    {_arm_xml()}
    {task_worldbody}
  </worldbody>
  <equality>
    <joint joint1="finger_joint1" joint2="finger_joint2" solref="0.005 1"/>
  </equality>
  <contact>
    <exclude body1="hand" body2="left_finger"/>
    <exclude body1="hand" body2="right_finger"/>
    <exclude body1="link7" body2="hand"/>
    <exclude body1="link0" body2="link1"/>
    <exclude body1="link5" body2="link7"/>
    <exclude body1="link5" body2="hand"/>
  </contact>
  <actuator>
    {"".join(actuators)}
    <position name="gripper" joint="finger_joint1" kp="300" ctrlrange="0 {FINGER_MAX_OPENING_M}"
              forcelimited="true" forcerange="-40 40"/>
  </actuator>
  <sensor>
    <force name="ft_force" site="ft_site"/>
    <torque name="ft_torque" site="ft_site"/>
    {frame_sensors("tcp", "site", "tcp")}
    <framelinvel name="tcp_linvel" objtype="site" objname="tcp"/>
    <frameangvel name="tcp_angvel" objtype="site" objname="tcp"/>
    {task_sensors}
  </sensor>
</mujoco>"""
