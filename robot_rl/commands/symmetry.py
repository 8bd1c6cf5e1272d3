"""``robot-rl check-symmetry --task T``: does the task's declared group hold in simulation?"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CheckSymmetryArgs:
    """Step sampled states of a task and their transforms by its declared symmetry group side by side: the
    one-step error of every transformed field, reward and success agreement. Exit status 1 if the group does
    not hold (training with ``--symmetry.mode`` refuses it then unless ``--symmetry.force``)."""

    task: str = "reach"
    states: int = 200
    """Transformed steps to check."""
    seed: int = 0


def check_symmetry_command(args: CheckSymmetryArgs) -> int:
    from robot_rl.sim import make_env
    from robot_rl.sim.symmetry import Thresholds, check_symmetry
    from robot_rl.training.env_factory import is_robot_rl_task

    if not is_robot_rl_task(args.task):
        raise ValueError(f"check-symmetry: {args.task!r} is not a robot_rl task (symmetry groups are declared by "
                         "robot_rl tasks)")
    if args.states < 1:
        raise ValueError(f"check-symmetry: --states must be >= 1, got {args.states}")
    env, twin = make_env(args.task), make_env(args.task)
    group = env.task.config.symmetry
    if not group.declared:
        print(f"task {args.task!r} declares no symmetry group: nothing to check")
        return 0
    report = check_symmetry(env, twin, group, states=args.states, seed=args.seed)
    thresholds = Thresholds()
    print("\n".join(report.lines(thresholds)))
    failures = report.failures(thresholds)
    print("holds" if not failures else "DOES NOT HOLD: " + "; ".join(failures))
    return 0 if not failures else 1
