"""Menagerie visuals: meshes attach to our bodies from a local folder, physics is unchanged, errors are named."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest

from robot_rl.envs.contract import ACTION_DIM
from robot_rl.sim import make_env

# A folder in the Menagerie layout (panda.xml + assets/), with a small tetrahedron standing in for each mesh.
PANDA_XML = """<mujoco model="panda">
  <compiler angle="radian" meshdir="assets" autolimits="true"/>
  <default><default class="panda"><default class="visual"><geom type="mesh" contype="0" conaffinity="0"
    group="2"/></default></default></default>
  <asset>
    <material name="white" rgba="1 1 1 1"/>
    <material name="black" rgba="0.1 0.1 0.1 1"/>
    <mesh file="link0_0.obj"/>
    <mesh name="hand_vis" file="hand_0.obj"/>
    <mesh name="hand_c" file="hand_c.obj"/>
  </asset>
  <worldbody>
    <body name="link0" childclass="panda">
      <geom mesh="link0_0" material="white" class="visual"/>
      <body name="link1" pos="0 0 0.333"><body name="hand" pos="0 0 0.107">
        <geom mesh="hand_vis" material="black" class="visual" pos="0 0 0.01"/>
        <geom mesh="hand_c" class="collision"/>
      </body></body>
    </body>
  </worldbody>
</mujoco>"""
TETRA = "v 0 0 0\nv 0.05 0 0\nv 0 0.05 0\nv 0 0 0.05\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n"


@pytest.fixture
def panda_dir(tmp_path: Path) -> Path:
    (tmp_path / "assets").mkdir()
    (tmp_path / "panda.xml").write_text(PANDA_XML)
    for name in ("link0_0", "hand_0", "hand_c"):
        (tmp_path / "assets" / f"{name}.obj").write_text(TETRA)
    return tmp_path


def test_visual_meshes_attach_and_physics_is_unchanged(panda_dir: Path) -> None:
    plain, dressed = make_env("reach"), make_env("reach", menagerie_panda_dir=str(panda_dir))
    m = dressed.scene.model
    mesh_geoms = [g for g in range(m.ngeom) if m.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH]
    assert {m.body(m.geom_bodyid[g]).name for g in mesh_geoms} == {"link0", "hand"}  # collision mesh not copied
    assert all(m.geom_contype[g] == 0 and m.geom_conaffinity[g] == 0 for g in mesh_geoms)
    rng = np.random.default_rng(0)
    a, _ = plain.reset(seed=3)
    b, _ = dressed.reset(seed=3)
    for _ in range(10):
        action = rng.uniform(-1, 1, ACTION_DIM).astype(np.float32)
        a, *_ = plain.step(action)
        b, *_ = dressed.step(action)
    np.testing.assert_array_equal(a["state"], b["state"])


def test_missing_folder_names_the_field(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="menagerie_panda_dir"):
        make_env("reach", menagerie_panda_dir=str(tmp_path))


def test_missing_mesh_file_is_named(panda_dir: Path) -> None:
    (panda_dir / "assets" / "hand_0.obj").unlink()
    with pytest.raises(ValueError, match=r"hand_0\.obj"):
        make_env("reach", menagerie_panda_dir=str(panda_dir))
