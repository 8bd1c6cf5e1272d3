"""policy_actor: the contract env over ROS 2 at control_hz, a policy, and a (pluggable) learner link."""

from __future__ import annotations

import rclpy
from rclpy.node import Node

from robot_rl.ros.actor import (
    LEARNERS,
    POLICIES,
    ActorStats,
    NoLearner,
    PolicyActorConfig,
    make_recorder,
    run_actor,
    run_remote,
    write_stats,
)
from robot_rl.ros.env import RobotUnavailable, RosArmEnv
from robot_rl.ros.params import RosEnvConfig
from robot_rl.ros.runtime import STOP, BackgroundSpinner, declare_dataclass, init, startup_errors
from robot_rl.utils.shutdown import StopRequested


def main(argv: list[str] | None = None) -> None:
    init(argv)
    node = Node("policy_actor")
    env_cfg = declare_dataclass(node, RosEnvConfig, prefix="env.")
    cfg = declare_dataclass(node, PolicyActorConfig, prefix="actor.")
    if cfg.policy in ("checkpoint", "network"):
        import torch

        torch.set_num_threads(max(1, cfg.torch_threads))
    remote = cfg.learner == "remote"
    stop = lambda: STOP.requested  # noqa: E731 - SIGINT/SIGTERM: finish or abandon the step, then stop
    with startup_errors(node):
        env = RosArmEnv(env_cfg, node, should_stop=stop)
        policy = None if remote else POLICIES[cfg.policy](cfg, env)
        learner = NoLearner() if remote else LEARNERS[cfg.learner](cfg, env)
        recorder = make_recorder(cfg, env)
    spinner = BackgroundSpinner(node)
    log = node.get_logger()
    log.info(f"policy actor at {env.arm.control_hz} Hz: " +
             (f"learner at {cfg.learner_address}" if remote else f"{cfg.policy} policy"))
    stats = ActorStats()
    exit_code = 0
    try:
        if remote:
            kwargs = {"hardware_config": env_cfg.hardware_config, "cameras": list(env_cfg.cameras),
                      "privileged_task": env_cfg.privileged_task}
            summary = run_remote(env, cfg, kwargs, should_stop=stop)
            stats.steps, stats.episodes = summary["steps"], summary["episodes"]
            if not STOP.requested:
                log.info(f"done: {summary}")
        else:
            run_actor(env, policy, learner, cfg.episodes, should_stop=stop, stats=stats, recorder=recorder)
            if not STOP.requested:
                log.info(f"done: {stats.episodes} episodes, {stats.successes} successes")
    except (StopRequested, KeyboardInterrupt):  # a wait abandoned for the stop, or a second signal
        pass
    except RobotUnavailable as err:
        log.error(str(err))
        exit_code = 1
    finally:
        write_stats(cfg.stats_path, stats, env)
        learner.close()
        if recorder is not None:
            recorder.close()  # an episode the stop cut is kept, marked interrupted
            log.info(f"recording: {cfg.record} ({recorder.episode} episodes)")
        if STOP.requested:
            log.info(f"stopped ({STOP.signal_name}) after {stats.steps} steps, {stats.episodes} episodes")
        spinner.stop()
        node.destroy_node()
        rclpy.try_shutdown()
    if exit_code:
        raise SystemExit(exit_code)


if __name__ == "__main__":
    main()
