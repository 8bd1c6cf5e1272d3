"""``SACConfig.compile``: the gradients of each critic step and each actor step of ``SACAgent`` as one
compiled function.

Compiling the networks alone leaves the losses and the autograd engine's backward pass as hundreds of small
eager ops between compiled pieces; on CPU that glue cost as much as the matmuls (2 critics: 1.13x SB3 with
compiled networks, measured). Here one ``torch.compile`` graph holds the agent's own objective
(``critic_objective`` / ``actor_objective``, so the maths is written once) and its gradients by
``torch.func.grad`` over the parameters swapped in with ``torch.func.functional_call``. The gradients then go
through the eager path's own ``SACAgent.step_optimizers`` (the replicas' all-reduce, clipping, the optimisers'
fused Adam), and the critic step ends with the Polyak update, so a checkpoint is the same either way. Adam
stays out of the graph because on CPU the compiler's code for it ran 6x slower than the fused kernel (0.9 ms
against 0.14 per critic step of 2 critics), and ``Optimizer.step`` breaks graphs around itself. Random draws
are taken before a step and passed in (a compiled graph cannot draw from the agent's generator), in the eager
path's order, so both paths see the same numbers.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.func import functional_call, grad

if TYPE_CHECKING:
    from robot_rl.agents.config import SACConfig
    from robot_rl.agents.sac import CriticDraws, Metrics, SACAgent
    from robot_rl.data.batch import Batch


class _Networks(nn.Module):
    """Every network of an agent under one root, so ``functional_call`` can swap any of their parameters
    while ``forward`` runs one of the agent's objectives."""

    def __init__(self, modules: dict[str, nn.Module]) -> None:
        super().__init__()
        self.nets = nn.ModuleDict(modules)

    def forward(self, objective: Callable[..., Any], *args: Any) -> Any:
        return objective(*args)


Gradients = tuple[dict[str, torch.Tensor], "Metrics"]
"""What a compiled step returns: gradients by parameter name, and the objective's metrics."""

AUTO_COMPILE_MIN_UPDATES = 20_000
"""Planned updates from which ``compile="auto"`` compiles: about twice the measured break-even, where faster
updates have paid for the first update's compile (docs/architecture.md)."""


def _compilers() -> list[str]:
    return [c for c in (os.environ.get("CXX"), "g++", "c++", "clang++") if c]


def compile_decision(config: SACConfig, device: torch.device, planned_updates: int | None) -> tuple[bool, str]:
    """Whether an agent compiles its update steps, and the line that says so (and why) for the run log."""
    if config.compile == "off":
        return False, "update step: eager (--agent.compile off)"
    has_compiler = device.type != "cpu" or any(shutil.which(c) for c in _compilers())
    if config.compile == "on":
        if not has_compiler:  # without this check the failure would come at the first update, minutes in
            raise RuntimeError(
                f"SACConfig.compile='on' on CPU needs a C++ compiler for torch.compile; none of {_compilers()} is "
                "on PATH: install one (e.g. apt install g++) or train with --agent.compile off")
        return True, "update step: compiled (the first update compiles for 20-40 s)"
    if not has_compiler:
        return False, (f"update step: eager (no C++ compiler for torch.compile: none of {_compilers()} on PATH; "
                       "install one, e.g. apt install g++, for 1.1-1.6x faster updates)")
    if planned_updates is None or planned_updates < AUTO_COMPILE_MIN_UPDATES:
        planned = "unknown" if planned_updates is None else f"{planned_updates:,}"
        return False, (f"update step: eager ({planned} planned updates; compiling pays back from "
                       f"{AUTO_COMPILE_MIN_UPDATES:,}, --agent.compile on forces it)")
    return True, (f"update step: compiled for {planned_updates:,} planned updates (the first update compiles "
                  "for 20-40 s)")


class CompiledSteps:
    """The compiled gradients of one agent's critic and actor steps (compiled on first use); the optimisers
    then step eagerly, as in the eager path."""

    def __init__(self, agent: SACAgent) -> None:
        self.agent = agent
        self.networks = _Networks({**agent._modules(), "temperature": agent.temperature})
        self.names = {p: name for name, p in self.networks.named_parameters()}
        self._critic_gradients = torch.compile(self._critic_gradients_fn)
        self._actor_gradients = torch.compile(self._actor_gradients_fn)

    def critic_step(self, batch: Batch, draws: CriticDraws) -> Metrics:
        """``critic_objective`` -> gradients -> the critic optimisers' step (clipped) -> Polyak."""
        metrics = self._step(self._critic_gradients(batch, draws), self.agent.critic_optimizers())
        self.agent.polyak_update()
        return metrics

    def actor_step(self, batch: Batch, noise: torch.Tensor) -> Metrics:
        """``actor_objective`` -> gradients -> the actor (and temperature) optimisers' step (clipped)."""
        return self._step(self._actor_gradients(batch, noise), self.agent.actor_optimizers())

    def _step(self, result: Gradients, optimizers: list[torch.optim.Optimizer]) -> Metrics:
        """The graph's gradients into ``.grad``, then the optimisers' step as in the eager path."""
        grads, metrics = result
        for p in (p for o in optimizers for g in o.param_groups for p in g["params"]):
            grad_p = grads[self.names[p]]
            # In the parameter's own layout, as autograd leaves ``.grad``: the graph may give a convolution's
            # weight gradient other strides, and the fused Adam kernel walks both tensors as flat memory.
            p.grad = grad_p if grad_p.stride() == p.stride() else torch.empty_like(p).copy_(grad_p)
        self.agent.step_optimizers(optimizers)
        return metrics

    def _gradients(
        self,
        objective: Callable[..., tuple[torch.Tensor, Metrics]],
        optimizers: list[torch.optim.Optimizer],
        *args: Any,
    ) -> Gradients:
        """Gradients of ``objective(*args)`` w.r.t. the parameters of ``optimizers`` (by name), and its metrics."""
        params = {self.names[p]: p for o in optimizers for g in o.param_groups for p in g["params"]}

        def loss_of(swapped: dict[str, torch.Tensor]) -> tuple[torch.Tensor, Metrics]:
            return functional_call(self.networks, swapped, (objective, *args))

        with torch.no_grad():  # torch.func.grad still differentiates; no graph is kept around its outputs
            return grad(loss_of, has_aux=True)(params)

    def _critic_gradients_fn(self, batch: Batch, draws: CriticDraws) -> Gradients:
        return self._gradients(self.agent.critic_objective, self.agent.critic_optimizers(), batch, draws)

    def _actor_gradients_fn(self, batch: Batch, noise: torch.Tensor) -> Gradients:
        return self._gradients(self.agent.actor_objective, self.agent.actor_optimizers(), batch, noise)
