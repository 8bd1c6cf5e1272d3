"""SAC with the RLPD recipe (critic ensemble, random-subset min target, LayerNorm, UTD) and an optional
HIL-SERL discrete gripper head.

Per ``update(sample_fn)``: ``utd_ratio`` x [fresh batch -> ``batch_transform`` -> DrQ shift -> critic
(+ gripper) step -> Polyak], then one actor + temperature step on the last batch. The losses are small
methods taking a ``Batch``, so extensions (residual policies, symmetry augmentation) override
``sample_action`` / ``deterministic_action`` or pass a ``batch_transform`` instead of rewriting the class.
Each step's random draws (policy noise, the target critics' subset) are taken before it and passed in, so
a step is a pure function of parameters, batch and draws: ``SACConfig.compile`` compiles it whole
(``robot_rl.agents.compiled_steps``).
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from robot_rl.agents.compiled_steps import CompiledSteps, compile_decision
from robot_rl.agents.config import SACConfig
from robot_rl.agents.data_parallel import DataParallel
from robot_rl.agents.distributional import expected, project
from robot_rl.agents.networks import (
    EnsembleMLP,
    Temperature,
    gripper_action_to_class,
)
from robot_rl.agents.policy import ActingPolicy
from robot_rl.data.augmentation import augment_batch
from robot_rl.data.batch import Batch

Metrics = dict[str, torch.Tensor]


@dataclass
class Features:
    """Encoded batch. obs: [B, F] online encoder (with grad); next_obs: [B, F] online encoder (no grad, for
    the policy and the double-DQN argmax); next_obs_target: [B, F] target encoder (no grad)."""

    obs: torch.Tensor
    next_obs: torch.Tensor
    next_obs_target: torch.Tensor


@dataclass
class CriticDraws:
    """The random draws of one critic step. next_action_noise: [B, sac_dim] N(0, 1) for a' ~ pi(.|s');
    target_subset: long [M] target critics whose minimum is the TD target (None: all of them)."""

    next_action_noise: torch.Tensor
    target_subset: torch.Tensor | None


def _adam(params: Iterable[nn.Parameter], lr: float) -> torch.optim.Adam:
    params = list(params)
    try:
        return torch.optim.Adam(params, lr=lr, fused=True)
    except (RuntimeError, TypeError):
        return torch.optim.Adam(params, lr=lr, foreach=True)


def cpu_has_native_bfloat16() -> bool:
    """Whether this CPU multiplies bfloat16 in hardware (AVX512-BF16 or AMX); True when torch cannot tell."""
    try:
        return bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())
    except AttributeError:  # private probes moved in another torch version: do not guess
        return True


class SACAgent:
    """SAC / RLPD learner and policy.

    Observations are dicts (``{"state": [S], "images/<cam>": uint8 [H, W, 3]}``); actions a Box of any
    dimension (the 7-D contract layout for ``gripper='discrete'``)."""

    def __init__(
        self,
        config: SACConfig,
        observation_space: gym.spaces.Dict,
        action_space: gym.spaces.Box,
        device: str | torch.device = "cpu",
        seed: int = 0,
        batch_transform: Callable[[Batch], Batch] | None = None,
        planned_updates: int | None = None,
        data_parallel: DataParallel | None = None,
    ) -> None:
        """``planned_updates``: critic updates the run plans (``compile="auto"`` compiles long runs only; None,
        as for an agent loaded to act or evaluate: eager). ``data_parallel``: this agent is one replica of a
        data-parallel learner (``robot_rl.agents.data_parallel``): its batches are its share of each update's
        batch, and gradients are averaged over the replicas."""
        self.policy = ActingPolicy(config, observation_space, action_space, device, seed)
        self.config = config
        self.device = self.policy.device
        self.action_dim, self.sac_dim = self.policy.action_dim, self.policy.sac_dim
        self.discrete_gripper, self.obs_keys = self.policy.discrete_gripper, self.policy.obs_keys
        self.encoder, self.actor, self.gripper_q = self.policy.encoder, self.policy.actor, self.policy.gripper_q
        self.target_entropy = (
            -self.sac_dim / 2 if config.target_entropy is None else float(config.target_entropy)
        )
        self.batch_transform = batch_transform
        self.data_parallel = data_parallel
        if config.precision == "bfloat16" and self.device.type == "cpu" and not cpu_has_native_bfloat16():
            warnings.warn(
                "SACConfig.precision='bfloat16' on a CPU without AVX512-BF16/AMX: bfloat16 is emulated there and "
                "an update runs about 10x slower than in float32 (measured 13x); use precision='float32'",
                stacklevel=2,
            )

        with torch.random.fork_rng(devices=[]):  # seeded init without touching the global RNG
            torch.manual_seed(seed + 2)  # the policy's networks are drawn from seed
            c = config
            self.critic = EnsembleMLP(
                c.num_critics, self.encoder.out_dim + self.sac_dim, c.hidden_dims, c.critic_atoms or 1,
                c.critic_layer_norm, c.activation, compute_dtype=getattr(torch, c.precision),
            )
        self.atoms = (torch.linspace(c.critic_v_min, c.critic_v_max, c.critic_atoms, device=self.device)
                      if c.critic_atoms else None)
        """The returns a distributional critic's outputs are over (None: scalar critics)."""
        shared = {id(m): m for m in self.encoder.shared_modules()}  # one copy for online and target
        self.target_encoder = copy.deepcopy(self.encoder, memo=dict(shared)).requires_grad_(False)
        self.target_critic = copy.deepcopy(self.critic).requires_grad_(False)
        self.target_gripper_q = copy.deepcopy(self.gripper_q)
        if self.target_gripper_q is not None:
            self.target_gripper_q.requires_grad_(False)
        self.anchor: nn.Module | None = (copy.deepcopy(self.actor).requires_grad_(False)
                                         if c.anchor_weight > 0 else None)
        """The actor the fine-tuning penalty holds this one near (``anchor_weight``): set by ``anchor_here``."""
        for module in self._modules().values():
            module.to(self.device)
        self.temperature = Temperature(c.init_temperature).to(self.device)

        encoder_params = [p for p in self.encoder.parameters() if p.requires_grad]
        self.critic_optimizer = _adam([*encoder_params, *self.critic.parameters()], c.critic_lr)
        self.actor_optimizer = _adam(self.actor.parameters(), c.actor_lr)
        self.temperature_optimizer = _adam(self.temperature.parameters(), c.temperature_lr)
        self.gripper_optimizer: torch.optim.Optimizer | None = None
        if self.gripper_q is not None:
            self.gripper_optimizer = _adam(self.gripper_q.parameters(), c.gripper_lr)

        online, target = [self.encoder, self.critic], [self.target_encoder, self.target_critic]
        if self.gripper_q is not None and self.target_gripper_q is not None:
            online.append(self.gripper_q)
            target.append(self.target_gripper_q)
        pairs = [
            (pt, po)
            for mt, mo in zip(target, online)
            for pt, po in zip(mt.parameters(), mo.parameters())
            if pt is not po
        ]
        self._polyak_target = [p for p, _ in pairs]
        self._polyak_online = [p for _, p in pairs]
        self.generator = torch.Generator(self.device).manual_seed(seed)  # update randomness
        self.num_critic_updates = 0
        self.num_actor_updates = 0
        self._training: bool | None = None
        compiled, self.compile_note = compile_decision(c, self.device, planned_updates, data_parallel is not None)
        self._compiled: CompiledSteps | None = CompiledSteps(self) if compiled else None
        if data_parallel is not None:  # replicas start from one state and draw alike (seeded alike; made sure)
            data_parallel.broadcast_([*self._modules().values(), self.temperature])
            self.generator.set_state(data_parallel.from_main(self.generator.get_state()))

    @property
    def compiled(self) -> bool:
        """The update steps run compiled (``SACConfig.compile``)."""
        return self._compiled is not None

    # ------------------------------------------------------------------------------------------- helpers
    def _modules(self) -> dict[str, nn.Module]:
        """Every network by checkpoint name (the gripper heads only with ``gripper='discrete'``)."""
        mods = {
            "encoder": self.encoder,
            "actor": self.actor,
            "critic": self.critic,
            "target_encoder": self.target_encoder,
            "target_critic": self.target_critic,
            "gripper_q": self.gripper_q,
            "target_gripper_q": self.target_gripper_q,
            "anchor": self.anchor,
        }
        return {name: m for name, m in mods.items() if m is not None}

    def _optimizers(self) -> dict[str, torch.optim.Optimizer]:
        opts = {
            "critic": self.critic_optimizer,
            "actor": self.actor_optimizer,
            "temperature": self.temperature_optimizer,
            "gripper": self.gripper_optimizer,
        }
        return {name: o for name, o in opts.items() if o is not None}

    def _set_training(self, mode: bool) -> None:
        if self._training is not mode:
            for module in self._modules().values():
                module.train(mode)
            self._training = mode

    @property
    def log_alpha(self) -> torch.Tensor:
        """log of the entropy temperature (the learned parameter), scalar tensor."""
        return self.temperature.log_alpha

    @property
    def learns_temperature(self) -> bool:
        """Whether actor steps also step the temperature (not with a fixed exploration std: no entropy term)."""
        return self.config.learn_temperature and self.config.exploration_std is None

    @property
    def alpha(self) -> torch.Tensor:
        """Entropy temperature, scalar tensor (no grad); 0 with a fixed exploration std."""
        alpha = self.log_alpha.detach().exp()
        return alpha if self.config.exploration_std is None else torch.zeros_like(alpha)

    def encode(self, obs: dict[str, torch.Tensor], target: bool = False) -> torch.Tensor:
        """Observation dict [B, ...] -> features [B, F] (online or target encoder)."""
        return (self.target_encoder if target else self.encoder)(obs)

    def policy_noise(self, batch_size: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """N(0, 1) noise [batch_size, sac_dim] for ``sample_action``, from ``generator`` (default: the update
        generator). A data-parallel replica draws the noise of the whole batch and keeps its own rows."""
        generator = self.generator if generator is None else generator
        dp = self.data_parallel
        if dp is None:
            return self.policy.policy_noise(batch_size, generator)
        return dp.own_rows(self.policy.policy_noise(batch_size * dp.world_size, generator))

    def sample_action(
        self, features: torch.Tensor, obs: dict[str, torch.Tensor], noise: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``ActingPolicy.sample_action``: the losses and acting sample the same way."""
        return self.policy.sample_action(features, obs, noise)

    def deterministic_action(self, features: torch.Tensor, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.policy.deterministic_action(features, obs)

    @property
    def act_generator(self) -> torch.Generator:
        """Exploration randomness (the acting policy's)."""
        return self.policy.act_generator

    def target_subset(self) -> torch.Tensor | None:
        """Random subset (long [M], no repeats) of the N target critics; None when M == N (use all)."""
        n, m = self.config.num_critics, self.config.num_min_critics
        if m == n:
            return None
        return torch.randperm(n, generator=self.generator, device=self.device)[:m]

    def draw_critic(self, batch_size: int) -> CriticDraws:
        """The random draws of one critic step, from the update generator."""
        noise = self.policy_noise(batch_size)
        return CriticDraws(noise, self.target_subset())

    def encode_batch(self, batch: Batch) -> Features:
        obs = self.encode(batch.obs)
        with torch.no_grad():
            next_obs = self.encode(batch.next_obs)
            next_target = (
                self.encode(batch.next_obs, target=True) if self.encoder.has_parameters else next_obs
            )
        return Features(obs, next_obs, next_target)

    def prepare_batch(self, batch: Batch) -> Batch:
        """To the device, then ``batch_transform``, then DrQ-shift the images (obs, next_obs separately)."""
        if batch.action.device != self.device:
            batch = batch.to(self.device)
        if self.batch_transform is not None:
            batch = self.batch_transform(batch)
        if self.encoder.image_keys and self.config.image_augmentation:
            batch = augment_batch(
                batch, self.config.augmentation_pad, self.generator, self.encoder.image_keys
            )
        return batch

    # -------------------------------------------------------------------------------------------- losses
    def td_target(
        self, batch: Batch, features: Features | None = None, draws: CriticDraws | None = None
    ) -> torch.Tensor:
        """reward + discount * (min over a random M-subset of target Q(s', a') [- alpha log pi(a'|s')]): [B],
        clipped to the configured return bounds. ``draws`` default: fresh ones from the update generator.
        A distributional critic's target is a distribution [B, K] over ``atoms``: that of the subset's critic
        with the lowest mean, each atom z moved to reward + discount * (z [- alpha log pi]) and projected back.

        ``discount`` is gamma^n, or 0 where the n-step window terminated (truncation keeps gamma^n)."""
        f = self.encode_batch(batch) if features is None else features
        d = self.draw_critic(len(batch)) if draws is None else draws
        with torch.no_grad():
            next_action, next_log_prob = self.sample_action(f.next_obs, batch.next_obs, d.next_action_noise)
            out = self.target_critic(torch.cat([f.next_obs_target, next_action], -1), d.target_subset)
            entropy = self.alpha * next_log_prob if self.config.backup_entropy else torch.zeros_like(next_log_prob)
            if self.atoms is None:
                return self.bound_target(batch.reward + batch.discount * (out.min(0).values - entropy))
            lowest = expected(out, self.atoms).argmin(0)  # [B]: per transition, the pessimistic critic
            logits = out.gather(0, lowest.view(1, -1, 1).expand(1, *out.shape[1:])).squeeze(0)  # [B, K]
            moved = batch.reward.unsqueeze(-1) + batch.discount.unsqueeze(-1) * (self.atoms - entropy.unsqueeze(-1))
            return project(logits.softmax(-1), moved, self.atoms)

    def bound_target(self, target: torch.Tensor) -> torch.Tensor:
        """TD targets clipped to [``td_target_min``, ``td_target_max``] (either may be None: unbounded)."""
        c = self.config
        if c.td_target_min is None and c.td_target_max is None:
            return target
        return target.clamp(c.td_target_min, c.td_target_max)

    def critic_loss(
        self, batch: Batch, features: Features | None = None, draws: CriticDraws | None = None
    ) -> tuple[torch.Tensor, Metrics]:
        """Mean over critics and batch of (Q_i(s, a) - target)^2; a = the stored action's SAC dims. A
        distributional critic: mean cross-entropy of each critic's distribution to the target distribution."""
        f = self.encode_batch(batch) if features is None else features
        target = self.td_target(batch, f, draws)
        out = self.critic(torch.cat([f.obs, batch.action[:, : self.sac_dim]], -1))  # [N, B] (or [N, B, K])
        if self.atoms is None:
            q, target_mean = out, target
            loss = (q - target).square().mean()
        else:
            q, target_mean = expected(out, self.atoms), target @ self.atoms
            loss = -(target * out.log_softmax(-1)).sum(-1).mean()
        return loss, {"critic_loss": loss, "q_mean": q.mean(), "q_max": q.max(), "target_mean": target_mean.mean()}

    def gripper_td_target(self, batch: Batch, features: Features) -> torch.Tensor:
        """Double DQN: r + grasp_penalty + discount * Q_target(s', argmax_a Q_online(s', a)): [B]."""
        assert self.gripper_q is not None and self.target_gripper_q is not None
        with torch.no_grad():
            best = self.gripper_q(features.next_obs).argmax(-1, keepdim=True)
            next_q = self.target_gripper_q(features.next_obs_target).gather(-1, best).squeeze(-1)
            reward = batch.reward + batch.extras.get(self.config.gripper_penalty_key, 0.0)
            return self.bound_target(reward + batch.discount * next_q)

    def gripper_loss(self, batch: Batch, features: Features | None = None) -> tuple[torch.Tensor, Metrics]:
        """MSE of Q_grip(s, class(a_gripper)) to the double-DQN target; like the critic loss (and as in
        HIL-SERL) its gradient also trains the shared encoder."""
        assert self.gripper_q is not None
        f = self.encode_batch(batch) if features is None else features
        target = self.gripper_td_target(batch, f)
        cls = gripper_action_to_class(batch.action[:, -1]).unsqueeze(-1)
        q = self.gripper_q(f.obs).gather(-1, cls).squeeze(-1)
        loss = (q - target).square().mean()
        return loss, {"gripper_loss": loss, "gripper_q_mean": q.mean()}

    def actor_loss(
        self, batch: Batch, features: torch.Tensor | None = None, noise: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, Metrics]:
        """mean(alpha * log pi(a|s) - mean_i Q_i(s, a)), a ~ pi (``noise`` default: fresh from the update
        generator); encoder features, critic weights detached."""
        if features is None:
            with torch.no_grad():
                features = self.encode(batch.obs)
        noise = self.policy_noise(len(batch)) if noise is None else noise
        action, log_prob = self.sample_action(features.detach(), batch.obs, noise)
        out = self.critic(torch.cat([features.detach(), action], -1), detach_params=True)
        q = (out if self.atoms is None else expected(out, self.atoms)).mean(0)
        loss = (self.alpha * log_prob - q).mean()
        metrics = {"actor_loss": loss, "entropy": -log_prob.detach().mean(), "log_prob": log_prob}
        if self.anchor is not None:
            with torch.no_grad():
                anchored = self.anchor.deterministic(features)
            distance = (self.actor.deterministic(features.detach()) - anchored).square().sum(-1).mean()
            loss = loss + self.config.anchor_weight * q.detach().abs().mean() * distance
            metrics["anchor_distance"] = distance.detach()
        if self.policy.residual_scale is not None:  # how much of its bound the correction uses, in [0, 1]
            correction = (action.detach() - self.policy.base_action(batch.obs)).abs()
            metrics["residual_of_bound"] = (correction / self.policy.residual_bound.clamp_min(1e-12)).mean()
        return loss, metrics

    def temperature_loss(self, log_prob: torch.Tensor) -> torch.Tensor:
        """-alpha * mean(log pi + target_entropy): raises alpha while entropy is below the target."""
        return -(self.log_alpha.exp() * (log_prob.detach() + self.target_entropy)).mean()

    def critic_objective(self, batch: Batch, draws: CriticDraws) -> tuple[torch.Tensor, Metrics]:
        """What one critic step minimises: the critic loss (+ the gripper head's), one shared encoding."""
        features = self.encode_batch(batch)
        loss, metrics = self.critic_loss(batch, features, draws)
        if self.gripper_q is not None:
            gripper_loss, gripper_metrics = self.gripper_loss(batch, features)
            loss = loss + gripper_loss
            metrics.update(gripper_metrics)
        return loss, metrics

    def actor_objective(self, batch: Batch, noise: torch.Tensor) -> tuple[torch.Tensor, Metrics]:
        """What one actor step minimises: actor loss (+ temperature loss when learned). The two share no
        gradient (alpha is detached in one, log pi in the other), so one backward serves both."""
        loss, metrics = self.actor_loss(batch, noise=noise)
        log_prob = metrics.pop("log_prob")
        if self.learns_temperature:
            temperature_loss = self.temperature_loss(log_prob)
            loss = loss + temperature_loss
            metrics["temperature_loss"] = temperature_loss
        return loss, metrics

    # ------------------------------------------------------------------------------------------- updates
    def critic_optimizers(self) -> list[torch.optim.Optimizer]:
        """The optimisers a critic step steps: critic + encoder, and the gripper head's."""
        return [o for o in (self.critic_optimizer, self.gripper_optimizer) if o is not None]

    def actor_optimizers(self) -> list[torch.optim.Optimizer]:
        """The optimisers an actor step steps: the actor's, and the temperature's when it is learned."""
        return [self.actor_optimizer] + ([self.temperature_optimizer] if self.learns_temperature else [])

    def _backward_and_step(self, loss: torch.Tensor, optimizers: list[torch.optim.Optimizer]) -> None:
        """The eager step: backward, then per optimiser gradient clipping (if configured) and Adam."""
        for optimizer in optimizers:
            optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.data_parallel is not None:
            self.data_parallel.average_(
                [p.grad for o in optimizers for g in o.param_groups for p in g["params"] if p.grad is not None])
        for optimizer in optimizers:
            if self.config.max_grad_norm is not None:
                params = [p for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
                torch.nn.utils.clip_grad_norm_(params, self.config.max_grad_norm)
            optimizer.step()

    def polyak_update(self) -> None:
        """target <- (1 - tau) target + tau online, for the critics, the encoder and the gripper head."""
        with torch.no_grad():
            torch._foreach_lerp_(self._polyak_target, self._polyak_online, self.config.tau)

    def update_critic(self, batch: Batch) -> Metrics:
        """One critic (+ encoder, + gripper head) gradient step on a prepared batch, then Polyak targets."""
        draws = self.draw_critic(len(batch))
        if self._compiled is not None:
            metrics = self._compiled.critic_step(batch, draws)
        else:
            loss, metrics = self.critic_objective(batch, draws)
            self._backward_and_step(loss, self.critic_optimizers())
            self.polyak_update()
        self.num_critic_updates += 1
        return metrics

    def update_actor(self, batch: Batch) -> Metrics:
        """One actor step and (if learned) one temperature step on a prepared batch."""
        noise = self.policy_noise(len(batch))
        if self._compiled is not None:
            metrics = self._compiled.actor_step(batch, noise)
        else:
            loss, metrics = self.actor_objective(batch, noise)
            self._backward_and_step(loss, self.actor_optimizers())
        metrics["alpha"] = self.alpha
        self.num_actor_updates += 1
        return metrics

    def update(self, sample_fn: Callable[[], Batch]) -> dict[str, float]:
        """``utd_ratio`` critic updates (fresh batch each), then one actor + temperature step on the last (once
        ``critic_warmup_updates`` critic updates are done)."""
        self._set_training(True)
        metrics: Metrics = {}
        batch = None
        for i in range(self.config.utd_ratio):
            batch = self.prepare_batch(sample_fn())
            if i == 0:
                self.update_normalizer(batch.obs)
            metrics = self.update_critic(batch)
        assert batch is not None
        if self.num_critic_updates > self.config.critic_warmup_updates:
            metrics.update(self.update_actor(batch))
        values = torch.stack([v.detach().float() for v in metrics.values()])
        if self.data_parallel is not None:  # the whole batch's figures: means of the replicas' means, a max of maxes
            every = self.data_parallel.gather_rows(values.unsqueeze(0))
            values = torch.stack([every[:, i].amax() if key.endswith("_max") else every[:, i].mean()
                                  for i, key in enumerate(metrics)])
        return dict(zip(metrics.keys(), values.tolist()))

    def update_normalizer(self, obs: dict[str, torch.Tensor]) -> None:
        """Merge a batch into the observation normaliser (a data-parallel replica: every replica's rows)."""
        dp = self.data_parallel
        if dp is not None:
            obs = {k: dp.gather_rows(obs[k]) for k in self.encoder.state_keys}
        self.encoder.update_normalizer(obs)

    # ------------------------------------------------------------------------------------------------ act
    def act(self, obs: dict[str, np.ndarray], deterministic: bool = False) -> np.ndarray:
        """One unbatched observation -> float32 action [action_dim] (discrete gripper: last in {-1, 0, 1})."""
        self._set_training(False)
        return self.policy.act(obs, deterministic)

    def act_batch(self, obs: dict[str, torch.Tensor], deterministic: bool = False) -> torch.Tensor:
        """Batched observations [N, ...] on the agent's device -> actions [N, action_dim] (parallel envs)."""
        self._set_training(False)
        return self.policy.act_batch(obs, deterministic)

    @torch.no_grad()
    def q_value(self, obs: dict[str, np.ndarray], action: np.ndarray) -> float:
        """The critics' mean estimate of Q(obs, action) for one unbatched step (its SAC dims), as the actor
        maximises it: what the learner expects of an action (evaluation panels)."""
        self._set_training(False)
        a = torch.as_tensor(np.asarray(action, np.float32)[None, : self.sac_dim], device=self.device)
        out = self.critic(torch.cat([self.encode(self.policy.batch_of_one(obs)), a], -1))
        return float((out if self.atoms is None else expected(out, self.atoms)).mean())

    # ----------------------------------------------------------------------------------------- checkpoints
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume bit-identically: networks, targets, optimisers, temperature, RNG
        states, counters. Tensors are shared with the live agent (as in ``nn.Module.state_dict``)."""
        return {
            "modules": {name: m.state_dict() for name, m in self._modules().items()},
            "optimizers": {name: o.state_dict() for name, o in self._optimizers().items()},
            "log_alpha": self.log_alpha.detach(),
            "rng": {"update": self.generator.get_state(), "act": self.act_generator.get_state()},
            "counters": {"critic_updates": self.num_critic_updates, "actor_updates": self.num_actor_updates},
        }

    def anchor_here(self) -> None:
        """Make the current actor the one ``anchor_weight`` holds the actor near (a run that starts from
        another's agent: ``--init-from``)."""
        if self.anchor is not None:
            self.anchor.load_state_dict(self.actor.state_dict())

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for name, module in self._modules().items():
            if name == "anchor" and name not in state["modules"]:  # saved without one: anchor at its actor
                module.load_state_dict(state["modules"]["actor"])
                continue
            module.load_state_dict(state["modules"][name])
        rates = {"critic": self.config.critic_lr, "actor": self.config.actor_lr,
                 "temperature": self.config.temperature_lr, "gripper": self.config.gripper_lr}
        for name, opt in self._optimizers().items():
            opt.load_state_dict(state["optimizers"][name])
            for group in opt.param_groups:  # the rates are this agent's config's, also over another run's state
                group["lr"] = rates[name]
        with torch.no_grad():
            self.log_alpha.copy_(state["log_alpha"])
        for gen, key in ((self.generator, "update"), (self.act_generator, "act")):
            try:
                gen.set_state(state["rng"][key])
            except RuntimeError:  # saved on another device type (CPU <-> CUDA): reseed deterministically
                warnings.warn(
                    f"SACAgent: {key} RNG state is from another device type; reseeding", stacklevel=2
                )
                gen.manual_seed(int(state["counters"]["critic_updates"]) + (key == "act"))
        self.num_critic_updates = int(state["counters"]["critic_updates"])
        self.num_actor_updates = int(state["counters"]["actor_updates"])

    def actor_state_dict(self) -> dict[str, Any]:
        """What an actor process needs to act (``ActingPolicy``): encoder, actor, gripper head."""
        return self.policy.actor_state_dict()

    def load_actor_state_dict(self, state: dict[str, Any]) -> None:
        self.policy.load_actor_state_dict(state)
