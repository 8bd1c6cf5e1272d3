"""``SACConfig.compile``: each critic step and each actor step of ``SACAgent`` as one compiled function.

Compiling the networks alone leaves the losses, the backward pass, gradient clipping, Adam and Polyak as
hundreds of small eager ops between compiled pieces; on CPU that glue cost as much as the matmuls (2 critics:
1.13x SB3 with compiled networks, measured). Here one ``torch.compile`` graph holds a whole step: the agent's
own objective (``critic_objective`` / ``actor_objective``, so the maths is written once), its gradients by
``torch.func.grad`` over the parameters swapped in with ``torch.func.functional_call``, clipping, Adam
(``torch.optim.adam.adam``, the functional form of the eager optimiser, on that optimiser's own state, so a
checkpoint is the same either way) and the Polyak update. ``Optimizer.step`` itself cannot join the graph: it
forces graph breaks around itself. Random draws are taken before a step and passed in (a compiled graph
cannot draw from the agent's generator), in the eager path's order, so both paths see the same numbers.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.func import functional_call, grad
from torch.optim.adam import adam

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


def _init_adam_state(optimizer: torch.optim.Optimizer) -> None:
    """Creates Adam's per-parameter state where it is missing, in ``torch.optim.Adam``'s own layout."""
    params = optimizer.param_groups[0]["params"]
    if len(optimizer.state) == len(params):  # the usual case on every update: nothing to do
        return
    for p in params:
        state = optimizer.state[p]
        if not state:
            state["step"] = torch.zeros((), dtype=torch.float32, device=p.device)
            state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)


def _adam_(optimizer: torch.optim.Optimizer, params: list[torch.Tensor], grads: list[torch.Tensor]) -> None:
    """``optimizer.step()`` with ``grads`` as the gradients of ``params``, in a form that compiles."""
    group = optimizer.param_groups[0]
    states = [optimizer.state[p] for p in params]
    adam(
        params,
        grads,
        [s["exp_avg"] for s in states],
        [s["exp_avg_sq"] for s in states],
        [],
        [s["step"] for s in states],
        foreach=True,
        capturable=True,  # the step count stays a tensor: no host sync, no recompile per step
        amsgrad=False,
        beta1=group["betas"][0],
        beta2=group["betas"][1],
        lr=group["lr"],
        weight_decay=group["weight_decay"],
        eps=group["eps"],
        maximize=False,
    )


def _clip_(grads: list[torch.Tensor], max_norm: float) -> None:
    """``torch.nn.utils.clip_grad_norm_`` on gradient tensors: scale all by min(1, max_norm / total norm)."""
    total = torch.nn.utils.get_total_norm(grads)
    torch._foreach_mul_(grads, (max_norm / (total + 1e-6)).clamp(max=1.0))


AUTO_COMPILE_MIN_UPDATES = 20_000
"""Planned updates from which ``compile="auto"`` compiles: about twice the measured break-even, where faster
updates have paid for the first update's compile (docs/architecture.md)."""


def _compilers() -> list[str]:
    return [c for c in (os.environ.get("CXX"), "g++", "c++", "clang++") if c]


def compile_decision(config: SACConfig, device: torch.device, planned_updates: int | None,
                     data_parallel: bool = False) -> tuple[bool, str]:
    """Whether an agent compiles its update steps, and the line that says so (and why) for the run log."""
    if config.compile == "off":
        return False, "update step: eager (--agent.compile off)"
    if data_parallel:  # the compiled step applies Adam inside the graph: no place for the gradient all-reduce
        if config.compile == "on":
            raise ValueError("SACConfig.compile='on' with data-parallel replicas (torchrun): the compiled step has "
                             "no gradient all-reduce; use --agent.compile off or auto")
        return False, "update step: eager (data-parallel replicas average gradients between backward and Adam)"
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
    """The compiled critic and actor steps of one agent (compiled on first use)."""

    def __init__(self, agent: SACAgent) -> None:
        for optimizer in (*agent.critic_optimizers(), *agent.actor_optimizers()):
            groups = optimizer.param_groups  # what ``_adam_`` implements, so nothing is silently ignored
            plain = not any(groups[0][k] for k in ("amsgrad", "maximize", "decoupled_weight_decay"))
            if not (isinstance(optimizer, torch.optim.Adam) and len(groups) == 1 and plain):
                raise TypeError(f"SACConfig.compile supports single-group plain Adam only, got {optimizer}")
        self.agent = agent
        self.networks = _Networks({**agent._modules(), "temperature": agent.temperature})
        self.names = {p: name for name, p in self.networks.named_parameters()}
        self._critic_step = torch.compile(self._critic_step_fn)
        self._actor_step = torch.compile(self._actor_step_fn)

    def critic_step(self, batch: Batch, draws: CriticDraws) -> Metrics:
        """``critic_objective`` -> gradients -> clip -> Adam (critic + encoder, gripper head) -> Polyak."""
        for optimizer in self.agent.critic_optimizers():
            _init_adam_state(optimizer)  # here, not at init: loading a fresh checkpoint empties it
        return self._critic_step(batch, draws)

    def actor_step(self, batch: Batch, noise: torch.Tensor) -> Metrics:
        """``actor_objective`` -> gradients -> clip -> Adam (actor, temperature when learned)."""
        for optimizer in self.agent.actor_optimizers():
            _init_adam_state(optimizer)
        return self._actor_step(batch, noise)

    def _step(
        self,
        objective: Callable[..., tuple[torch.Tensor, Metrics]],
        optimizers: list[torch.optim.Optimizer],
        *args: Any,
    ) -> Metrics:
        """Gradients of ``objective(*args)`` w.r.t. the parameters of ``optimizers``, then clip and Adam."""
        groups = [optimizer.param_groups[0]["params"] for optimizer in optimizers]
        params = {self.names[p]: p for group in groups for p in group}

        def loss_of(swapped: dict[str, torch.Tensor]) -> tuple[torch.Tensor, Metrics]:
            return functional_call(self.networks, swapped, (objective, *args))

        with torch.no_grad():  # the optimiser's in-place updates; torch.func.grad still differentiates
            grads, metrics = grad(loss_of, has_aux=True)(params)
            for optimizer, group in zip(optimizers, groups):
                group_grads = [grads[self.names[p]] for p in group]
                if self.agent.config.max_grad_norm is not None:
                    _clip_(group_grads, self.agent.config.max_grad_norm)
                _adam_(optimizer, group, group_grads)
        return metrics

    def _critic_step_fn(self, batch: Batch, draws: CriticDraws) -> Metrics:
        metrics = self._step(self.agent.critic_objective, self.agent.critic_optimizers(), batch, draws)
        self.agent.polyak_update()
        return metrics

    def _actor_step_fn(self, batch: Batch, noise: torch.Tensor) -> Metrics:
        return self._step(self.agent.actor_objective, self.agent.actor_optimizers(), batch, noise)
