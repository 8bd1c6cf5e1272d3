"""``robot-rl record-demos --teleop DEVICE``: demos by hand (or by the scripted corrector) in the demo format."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from robot_rl.envs.contract import STATE_LAYOUT


def _status_line(device: Any, t: int, obs: dict[str, np.ndarray], episode: int, episodes: int) -> str:
    state = obs.get("state")
    where = ""
    if state is not None and len(state) == STATE_LAYOUT.dim:
        pos = state[STATE_LAYOUT.slice("tcp_pos")]
        grip = float(state[STATE_LAYOUT.slice("gripper_opening")][0])
        where = f" tcp [{pos[0]:+.3f} {pos[1]:+.3f} {pos[2]:+.3f}] m, gripper {grip:.2f}"
    return f"episode {episode + 1}/{episodes} step {t:3d}{where} | {device.status()}"


def record_teleop_demos_command(args: Any) -> int:
    """``args``: ``RecordDemosArgs`` with ``teleop`` set (``keep_failed``, ``noise``, ``seed`` as for scripted)."""
    from robot_rl.teleop import CorrectorConfig, make_teleop
    from robot_rl.training.env_factory import is_robot_rl_task, make_training_env
    from robot_rl.training.hil import check_scripted_teleop
    from robot_rl.training.record import record_teleop_demos

    if args.episodes <= 0:
        raise ValueError(f"record-demos: --episodes must be > 0, got {args.episodes}")
    check_scripted_teleop(args.teleop, args.task, is_robot_rl_task(args.task))
    out = args.out or Path("demos") / f"{args.task}-{args.obs}"
    env = make_training_env(args.task, args.obs, args.image_size)
    # The scripted "human" drives every step (zero policy, always in control), with the expert's noise.
    corrector = CorrectorConfig(threshold=math.inf, p_takeover_random=1.0, takeover_steps=1,
                                expert_noise_std=args.noise, seed=args.seed)
    device = make_teleop(args.teleop, corrector)
    live = device.realtime and sys.stdout.isatty()
    current = {"episode": 0}

    def show_step(t: int, obs: dict[str, np.ndarray]) -> None:
        if live:
            print("\r" + _status_line(device, t, obs, current["episode"], args.episodes), end="", flush=True)

    def show(i: int, episode, kept: bool) -> None:
        current["episode"] = i + 1
        interventions = int(np.sum(episode.infos.get("intervention", 0)))
        status = "success" if episode.success else "FAILED"
        print(("\n" if live else "") + f"episode {i + 1}/{args.episodes}: {status}, {len(episode)} steps "
              f"({interventions} by {device.name}), {'kept' if kept else 'dropped'}", flush=True)

    if device.realtime:
        print(f"recording with {device.name}: {device.status()}", flush=True)
    device.connect()
    try:
        _, stats = record_teleop_demos(env, args.task, device, args.episodes, out, seed=args.seed,
                                       keep_failed=args.keep_failed, on_episode=show, on_step=show_step)
    finally:
        device.disconnect()
    print(f"recorded {stats.recorded}, succeeded {stats.successes}, kept {stats.kept} -> {out}")
    return 0
