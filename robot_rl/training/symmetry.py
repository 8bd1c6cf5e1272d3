"""The learner's symmetry augmentation from ``TrainConfig.symmetry``: the task's declared group, checked in
simulation before the first update (a group the simulator does not bear out is refused unless forced). The
image warps of a pixel run are compared with re-rendered views and the figures reported, not enforced: a
warp moves the table's texture with the scene, which the world does not (docs/architecture.md)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import gymnasium as gym
import numpy as np

from robot_rl.data.image_symmetry import transform_images
from robot_rl.data.symmetry import SymmetryAugmentation, contract_layouts
from robot_rl.envs.contract import ACTION_HISTORY, BASE_ACTION, image_key, is_image_key
from robot_rl.training.config import TrainConfig

CHECK_STEPS = 50
"""Transformed steps the start-up check runs (a few seconds); ``robot-rl check-symmetry`` runs more."""
CHECK_IMAGES = 6
"""Transformed scenes whose warped images the start-up check of a pixel run compares with re-rendered ones."""


def symmetry_augmentation(config: TrainConfig, env: gym.Env,
                          say: Callable[[str], None] = print) -> SymmetryAugmentation | None:
    """The batch transform of ``config.symmetry`` for ``env`` (None when off); errors name the reason."""
    s = config.symmetry
    if s.mode == "off":
        return None
    from robot_rl.sim import make_env  # MuJoCo only for runs that augment
    from robot_rl.sim.env import ArmEnv
    from robot_rl.sim.registry import with_overrides
    from robot_rl.sim.symmetry import Thresholds, camera_rules, check_image_warps, check_symmetry, workspace_of

    flag = f"--symmetry.mode {s.mode}"
    arm = env.unwrapped
    if not isinstance(arm, ArmEnv):
        raise ValueError(f"{flag}: {config.env.name!r} is not a robot_rl task; a symmetry group is declared by a "
                         "task's config (robot_rl.sim.tasks)")
    group = arm.task.config.symmetry
    if not group.declared:
        raise ValueError(f"{flag}: task {arm.task.name!r} declares no symmetry group")
    state_config = with_overrides(arm.task.config, obs_mode="state")
    report = check_symmetry(make_env(arm.task.name, state_config), make_env(arm.task.name, state_config), group,
                            states=CHECK_STEPS, seed=config.seed)
    failures = report.failures(Thresholds())
    if failures and not s.force:
        raise ValueError(f"{flag}: the group {group.describe()} of {arm.task.name!r} does not hold in simulation: "
                         f"{'; '.join(failures)} (robot-rl check-symmetry --task {arm.task.name} shows the "
                         "full report; --symmetry.force trains anyway)")
    transformed = ("a random element for " + f"{s.fraction:.0%} of each batch" if s.mode == "random"
                   else f"{s.copies} transformed copies of each drawn transition")
    say(f"symmetry augmentation: {group.describe()}; {transformed}"
        + ("" if s.actions else " (states only: actions kept as recorded)")
        + f"; checked on {report.steps} simulated steps"
        + (f", NOT holding ({'; '.join(failures)}), forced" if failures else ", holds"))
    spaces = env.observation_space.spaces
    privileged = arm.task.privileged_layout if "privileged" in spaces else ()
    layouts = contract_layouts(privileged, base_action=BASE_ACTION in spaces,
                               action_history=config.env.action_history if ACTION_HISTORY in spaces else 0)
    images = {}
    if any(is_image_key(k) for k in spaces):
        size = arm.cfg.image_size
        rules = camera_rules(arm, size, size)
        images = {image_key(name): partial(transform_images, rule) for name, rule in rules.items()}
        warps = check_image_warps(make_env(arm.task.name, state_config), make_env(arm.task.name, state_config),
                                  group, states=CHECK_IMAGES, seed=config.seed, size=size)
        say("image warps against re-rendered views (PSNR; fixed cameras on table-plane pixels, whose texture "
            "does not move with the scene): " + ", ".join(
                f"{w.camera} {np.median(w.psnr_db):.1f} dB" for w in warps if w.psnr_db))
    return SymmetryAugmentation(group, s, layouts, workspace_of(arm), seed=config.seed + 7, images=images)
