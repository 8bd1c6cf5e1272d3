"""The ``sim/`` model files: plain MJCF that plain MuJoCo loads, the same model the CPU env compiles, kept
equal to the code, and shipped inside the wheel."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import mujoco
import numpy as np
import pytest

from robot_rl.commands.sim_models import WriteSimModelsArgs, write_sim_models_command
from robot_rl.sim import TASKS, make_env, models
from robot_rl.sim.models import CHECKOUT_DIR, model_file, stale_model_files

COMPARED = ("qpos0", "body_pos", "body_quat", "body_mass", "body_inertia", "geom_size", "geom_pos", "geom_friction",
            "actuator_gainprm", "actuator_biasprm", "actuator_forcerange", "jnt_range", "dof_damping", "cam_pos")


def test_the_committed_files_are_what_the_code_writes() -> None:
    assert stale_model_files() == [], "rewrite the files with: robot-rl write-sim-models"


@pytest.mark.parametrize("task", sorted(TASKS))
def test_each_file_loads_in_plain_mujoco_as_the_env_model(task: str) -> None:
    path = model_file(task)
    assert path.parent == CHECKOUT_DIR
    plain = mujoco.MjModel.from_xml_path(str(path))
    env = make_env(task)
    ours = env.scene.model
    assert (plain.nq, plain.nv, plain.nu, plain.nbody, plain.ngeom) == (ours.nq, ours.nv, ours.nu, ours.nbody,
                                                                        ours.ngeom)
    assert plain.opt.timestep == ours.opt.timestep
    for name in COMPARED:
        np.testing.assert_array_equal(getattr(plain, name), getattr(ours, name), err_msg=name)
    # Same state, same commands: the same trajectory (the impedance controller is part of the model).
    env.reset(seed=3)
    sim = env.scene.data
    data = mujoco.MjData(plain)
    data.qpos[:], data.qvel[:] = sim.qpos, sim.qvel
    rng = np.random.default_rng(0)
    for _ in range(20):
        env.step(rng.uniform(-1, 1, env.action_space.shape))
        data.ctrl[:], data.mocap_pos[:], data.mocap_quat[:] = sim.ctrl, sim.mocap_pos, sim.mocap_quat
        mujoco.mj_step(plain, data, nstep=env.cfg.substeps)
    np.testing.assert_allclose(data.qpos, sim.qpos, atol=1e-9)


def test_the_command_reports_and_rewrites_a_changed_file(tmp_path, capsys) -> None:
    assert write_sim_models_command(WriteSimModelsArgs(dir=tmp_path)) == 0
    assert write_sim_models_command(WriteSimModelsArgs(check=True, dir=tmp_path)) == 0
    edited = tmp_path / "push.xml"
    edited.write_text(edited.read_text().replace('mass="0.1"', 'mass="0.2"', 1))
    assert write_sim_models_command(WriteSimModelsArgs(check=True, dir=tmp_path)) == 1
    assert "push.xml is missing or differs" in capsys.readouterr().err
    assert stale_model_files(tmp_path) == ["push"]


def test_an_installed_package_finds_its_packaged_copy(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(models, "CHECKOUT_DIR", tmp_path / "no_checkout")
    monkeypatch.setattr(models, "PACKAGED_DIR", tmp_path / "packaged")
    with pytest.raises(FileNotFoundError, match=r"no_checkout.*packaged"):
        models.model_dir()
    models.write_model_files(tmp_path / "packaged")
    assert model_file("reach") == tmp_path / "packaged" / "reach.xml"
    with pytest.raises(ValueError, match="Unknown task 'stack'"):
        model_file("stack")


def test_the_wheel_carries_the_model_files(tmp_path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(CHECKOUT_DIR.parent), "--no-deps",
                    "--no-build-isolation", "--quiet", "-w", str(tmp_path)], check=True, timeout=300)
    (wheel,) = tmp_path.glob("robot_rl-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for task in TASKS:
        assert f"robot_rl/sim/mjcf/{task}.xml" in names
