"""policy_actor: the contract env over ROS 2 at control_hz, a policy, and a (pluggable) learner link."""

from __future__ import annotations

import rclpy
from rclpy.node import Node

from robot_rl.ros.actor import (
    LEARNERS,
    POLICIES,
    ActorConfig,
    ActorStats,
    NoLearner,
    run_actor,
    run_remote,
    write_stats,
)
from robot_rl.ros.env import RobotUnavailable, RosArmEnv, RosEnvConfig
from robot_rl.ros.runtime import BackgroundSpinner, declare_dataclass, init, startup_errors


def main(argv: list[str] | None = None) -> None:
    init(argv)
    node = Node("policy_actor")
    env_cfg = declare_dataclass(node, RosEnvConfig, prefix="env.")
    cfg = declare_dataclass(node, ActorConfig, prefix="actor.")
    if cfg.policy in ("checkpoint", "network"):
        import torch

        torch.set_num_threads(max(1, cfg.torch_threads))
    remote = cfg.learner == "remote"
    with startup_errors(node):
        env = RosArmEnv(env_cfg, node)
        policy = None if remote else POLICIES[cfg.policy](cfg, env)
        learner = NoLearner() if remote else LEARNERS[cfg.learner](cfg, env)
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
            log.info(f"done: {run_remote(env, cfg, kwargs)}")
        else:
            run_actor(env, policy, learner, cfg.episodes, should_stop=lambda: not rclpy.ok(), stats=stats)
            log.info(f"done: {stats.episodes} episodes, {stats.successes} successes")
    except RobotUnavailable as err:
        if rclpy.ok():
            log.error(str(err))
            exit_code = 1
    except Exception as err:  # a SIGTERM shuts the context down under a waiting step: stop quietly
        if rclpy.ok():
            raise
        log.info(f"stopping ({err})")
    finally:
        write_stats(cfg.stats_path, stats, env)
        learner.close()
        spinner.stop()
        node.destroy_node()
        rclpy.try_shutdown()
    if exit_code:
        raise SystemExit(exit_code)


if __name__ == "__main__":
    main()
