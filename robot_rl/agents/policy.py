"""``ActingPolicy``: the part of a SAC agent that acts (observation encoder, tanh-Gaussian actor and the
discrete gripper head), without critics, target networks or optimisers.

``SACAgent`` owns one as its online acting networks; actor processes (the gRPC actor, the ROS 2 policy actor,
``robot-rl eval``) build only this, so a robot PC never allocates an ensemble of critics to act.

With ``SACConfig.residual_scale`` the policy is a bounded residual over a frozen base policy: ``sample_action``
and ``deterministic_action`` (which receive the observation as well as its features) compose
clip(base + scale * r) from the ``base_action`` observation and the actor's r in [-1, 1]; the actor's mean
layer starts at zero, so before training the deterministic policy is exactly the base.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from robot_rl.agents.config import SACConfig
from robot_rl.agents.encoders import ObservationEncoder
from robot_rl.agents.networks import GRIPPER_CLASSES, TanhGaussianActor, gripper_class_to_action, mlp
from robot_rl.envs.contract import ACTION_DIM, BASE_ACTION


class ActingPolicy(nn.Module):
    def __init__(self, config: SACConfig, observation_space: gym.spaces.Dict, action_space: gym.spaces.Box,
                 device: str | torch.device = "cpu", seed: int = 0) -> None:
        super().__init__()
        if not isinstance(action_space, gym.spaces.Box) or len(action_space.shape) != 1:
            raise TypeError(f"action_space must be a 1-D gymnasium Box, got {action_space}")
        low = torch.as_tensor(np.asarray(action_space.low, np.float64))
        high = torch.as_tensor(np.asarray(action_space.high, np.float64))
        if not (torch.isfinite(low).all() and torch.isfinite(high).all() and (high > low).all()):
            raise ValueError(f"action_space bounds must be finite with high > low, got {low} .. {high}")
        self.config = c = config
        self.device = torch.device(device)
        self.action_dim = int(action_space.shape[0])
        self.discrete_gripper = c.gripper == "discrete"
        if self.discrete_gripper and self.action_dim != ACTION_DIM:
            raise ValueError(
                f"SACConfig.gripper='discrete' needs the {ACTION_DIM}-D contract action, "
                f"got action_dim={self.action_dim}"
            )
        self.sac_dim = self.action_dim - 1 if self.discrete_gripper else self.action_dim
        self.obs_keys = sorted(observation_space.spaces)
        self.residual_scale = c.residual_scale
        encoded_space, actor_low, actor_high = observation_space, low[: self.sac_dim], high[: self.sac_dim]
        if self.residual_scale is not None:
            base = observation_space.spaces.get(BASE_ACTION)
            if base is None or base.shape != (self.action_dim,):
                raise ValueError(
                    f"SACConfig.residual_scale={self.residual_scale} needs a {BASE_ACTION!r} observation of shape "
                    f"({self.action_dim},) from a base policy (--base-policy), got "
                    f"{None if base is None else base.shape} among keys {self.obs_keys}")
            if not c.residual_observe_base:
                encoded_space = gym.spaces.Dict({k: v for k, v in observation_space.spaces.items() if k != BASE_ACTION})
            bound = self.residual_scale * (actor_high - actor_low) / 2
            if c.residual_gripper_scale is not None:
                if self.action_dim != ACTION_DIM:
                    raise ValueError(f"SACConfig.residual_gripper_scale bounds the {ACTION_DIM}-D contract action's "
                                     f"gripper; this action has {self.action_dim} dims")
                bound[-1] = c.residual_gripper_scale * (actor_high[-1] - actor_low[-1]) / 2
            self.register_buffer("residual_bound", bound.float())
            self.register_buffer("action_low", actor_low.float())
            self.register_buffer("action_high", actor_high.float())
            actor_low, actor_high = -torch.ones_like(actor_low), torch.ones_like(actor_high)  # r in [-1, 1]
        with torch.random.fork_rng(devices=[]):  # seeded init without touching the global RNG
            torch.manual_seed(seed)
            self.encoder = ObservationEncoder(encoded_space, c)
            if self.encoder.out_dim == 0:
                raise ValueError("observation_space has no keys to encode")
            self.actor = TanhGaussianActor(
                self.encoder.out_dim, self.sac_dim, c.hidden_dims, c.actor_layer_norm, c.activation, c.log_std_min,
                c.log_std_max, actor_low, actor_high, getattr(torch, c.precision), c.exploration_std,
            )  # fmt: skip
            if self.residual_scale is not None:  # r's mean starts at 0: the untrained policy is the base
                head = self.actor.trunk[-1]
                with torch.no_grad():
                    head.weight[: self.sac_dim].zero_()
                    head.bias[: self.sac_dim].zero_()
            self.gripper_q: nn.Module | None = None
            if self.discrete_gripper:
                self.gripper_q = mlp(self.encoder.out_dim, c.gripper_hidden_dims, GRIPPER_CLASSES,
                                     c.critic_layer_norm, c.activation)
        self.to(self.device)
        self.act_generator = torch.Generator(self.device).manual_seed(seed + 1)  # exploration randomness

    # ----------------------------------------------------------------------------------- the action seams
    def policy_noise(self, batch_size: int, generator: torch.Generator) -> torch.Tensor:
        """N(0, 1) noise [batch_size, sac_dim] for ``sample_action``."""
        return torch.randn((batch_size, self.sac_dim), generator=generator, device=self.device)

    def sample_action(
        self, features: torch.Tensor, obs: dict[str, torch.Tensor], noise: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Policy sample for the SAC dims with ``noise``: (action [B, sac_dim], log_prob [B]); with a residual
        the action is the composed one and log_prob that of the residual r."""
        action, log_prob = self.actor.sample(features, noise)
        return (action if self.residual_scale is None else self.compose(action, obs)), log_prob

    def deterministic_action(self, features: torch.Tensor, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """tanh(mean) for the SAC dims: [B, sac_dim] (composed with the base action under a residual)."""
        action = self.actor.deterministic(features)
        return action if self.residual_scale is None else self.compose(action, obs)

    def compose(self, residual: torch.Tensor, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """clip(base + bound * r) into the action box: residual r [B, sac_dim] in [-1, 1] -> action [B, sac_dim].
        |action - base| <= bound for every r, whatever the actor outputs."""
        base = self.base_action(obs)
        return torch.minimum(torch.maximum(base + self.residual_bound * residual, self.action_low), self.action_high)

    def base_action(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """The base policy's proposal for the SAC dims: [B, sac_dim]."""
        return obs[BASE_ACTION][:, : self.sac_dim].float()

    # ------------------------------------------------------------------------------------------------ act
    @torch.inference_mode()
    def act_batch(self, obs: dict[str, torch.Tensor], deterministic: bool = False) -> torch.Tensor:
        """Batched observations ``{key: [N, ...]}`` (on the policy's device) -> float32 actions [N, action_dim];
        the discrete gripper's column is in {-1, 0, 1} (epsilon-greedy per row when sampling)."""
        if self.encoder.training:
            self.eval()
        x = {k: obs[k] for k in self.obs_keys}
        n = next(iter(x.values())).shape[0]
        features = self.encoder(x)
        if deterministic:
            action = self.deterministic_action(features, x)
        else:
            action, _ = self.sample_action(features, x, self.policy_noise(n, self.act_generator))
        if self.gripper_q is not None:
            cls = self.gripper_q(features).argmax(-1)
            eps, gen = self.config.gripper_epsilon, self.act_generator
            if not deterministic and eps > 0:
                explore = torch.rand((n,), generator=gen, device=self.device) < eps
                if explore.any():
                    random_cls = torch.randint(GRIPPER_CLASSES, (n,), generator=gen, device=self.device)
                    cls = torch.where(explore, random_cls, cls)
            action = torch.cat([action, gripper_class_to_action(cls).unsqueeze(-1)], -1)
        return action.float()

    def batch_of_one(self, obs: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
        """One unbatched observation as a batch of one on the policy's device."""
        return {k: torch.as_tensor(np.asarray(obs[k])).unsqueeze(0).to(self.device) for k in self.obs_keys}

    def act(self, obs: dict[str, np.ndarray], deterministic: bool = False) -> np.ndarray:
        """One unbatched observation -> float32 action [action_dim]."""
        return self.act_batch(self.batch_of_one(obs), deterministic)[0].cpu().numpy()

    # ------------------------------------------------------------------------------------------ weights
    def actor_state_dict(self) -> dict[str, Any]:
        """What acting needs, as the learner publishes it: encoder, actor, gripper head."""
        state = {"encoder": self.encoder.state_dict(), "actor": self.actor.state_dict()}
        if self.gripper_q is not None:
            state["gripper_q"] = self.gripper_q.state_dict()
        return state

    def load_actor_state_dict(self, state: dict[str, Any]) -> None:
        self.encoder.load_state_dict(state["encoder"])
        self.actor.load_state_dict(state["actor"])
        if self.gripper_q is not None:
            self.gripper_q.load_state_dict(state["gripper_q"])
