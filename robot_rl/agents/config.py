"""Typed configuration of the SAC / RLPD learner (``SACAgent``); every knob is a field with its help text.

Defaults follow RLPD (``ikostrikov/rlpd``) and SERL / HIL-SERL (``rail-berkeley/serl``, ``hil-serl``). Where
the two differ the field says which one the default follows and what the other uses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

Activation = Literal["relu", "tanh", "gelu", "elu"]


@dataclass(frozen=True)
class SACConfig:
    """SAC with the RLPD recipe: critic ensemble, random-subset min target, LayerNorm, high UTD."""

    # --- networks -------------------------------------------------------------------------------------------
    hidden_dims: tuple[int, ...] = (256, 256)
    """Hidden layer widths of the actor and of every critic MLP (RLPD / SERL: 256x256)."""
    activation: Activation = "relu"
    """Hidden activation of actor, critics and gripper head (RLPD: relu; SERL uses tanh)."""
    critic_layer_norm: bool = True
    """LayerNorm after every hidden Dense layer of the critics (RLPD / SERL: on)."""
    actor_layer_norm: bool = False
    """LayerNorm after every hidden Dense layer of the actor (RLPD: off; SERL: on)."""
    num_critics: int = 10
    """Critic ensemble size N (RLPD / SERL: 10; HIL-SERL: 2)."""
    num_min_critics: int = 2
    """Size M of the random critic subset whose minimum forms the TD target (RLPD / SERL: 2)."""
    log_std_min: float = -5.0
    """Lower bound of the actor's pre-tanh log standard deviation."""
    log_std_max: float = 2.0
    """Upper bound of the actor's pre-tanh log standard deviation."""
    exploration_std: float | None = None
    """A fixed standard deviation of the actor's pre-tanh Gaussian instead of a learned one (ResFiT's
    fixed-noise exploration, TD3 style): the actor learns only its mean and the policy has no entropy term
    (the temperature is 0 and not learned). With a residual, ``exploration_std`` is in units of the residual's
    bound. None: SAC's learned std with the entropy temperature."""

    # --- optimisation ---------------------------------------------------------------------------------------
    actor_lr: float = 3e-4
    """Adam learning rate of the actor."""
    critic_lr: float = 3e-4
    """Adam learning rate of the critic ensemble and the image encoder."""
    temperature_lr: float = 3e-4
    """Adam learning rate of the log-temperature."""
    gripper_lr: float = 3e-4
    """Adam learning rate of the discrete gripper Q-head (``gripper='discrete'`` only)."""
    max_grad_norm: float | None = None
    """Clip each optimiser's gradient to this global L2 norm; None disables clipping (RLPD / SERL: off)."""
    tau: float = 0.005
    """Polyak factor of the target networks, applied after every critic update (RLPD / SERL: 0.005)."""
    utd_ratio: int = 4
    """Critic updates per ``update()`` call (fresh batch each), then one actor update (SERL: 4; RLPD: 20)."""
    precision: Literal["float32", "bfloat16"] = "float32"
    """Compute dtype of the hidden layers of the actor and the critic ensemble and of the image backbone's
    convolutions. ``bfloat16`` about halves their time on CPUs with AVX512-BF16 / AMX and on Ampere+ GPUs;
    parameters, optimiser state, the output layers (Q-values, action mean / std), image features after the
    backbone and all losses stay float32 (docs/architecture.md)."""
    compile: Literal["auto", "on", "off"] = "auto"
    """``torch.compile`` each critic step and each actor step whole (losses, gradients, Adam, Polyak): the
    first update compiles for 20-40 s (needs a C++ compiler on CPU), later ones run 1.1-1.6x faster on CPU
    (docs/benchmarks.md). ``auto``: compile when a C++ compiler is found and the run plans enough updates to
    earn the compile time back (``compiled_steps.AUTO_COMPILE_MIN_UPDATES``), else eager; the run log says
    which and why. Same maths and random draws either way; checkpoints move between the two."""

    # --- entropy --------------------------------------------------------------------------------------------
    init_temperature: float = 0.01
    """Initial entropy temperature alpha (SERL / HIL-SERL: 0.01; RLPD: 1.0, tuned for dense-reward benchmarks,
    keeps sparse-reward manipulation near-random for thousands of updates)."""
    target_entropy: float | None = None
    """Target policy entropy in nats; None means -|A|/2 over the SAC-controlled action dims (RLPD / SERL)."""
    learn_temperature: bool = True
    """Learn alpha by dual gradient descent on the entropy constraint; False keeps ``init_temperature``."""
    backup_entropy: bool = False
    """Subtract alpha * log pi(a'|s') inside the TD target (RLPD / SERL: False, i.e. no entropy backup)."""
    td_target_min: float | None = None
    """Clip TD targets (critic and gripper head) from below at the lowest return the task can give."""
    td_target_max: float | None = None
    """Clip TD targets from above at the highest return the task can give: 0 under RLIF (rewards are 0 or -1),
    1 for a sparse success reward of 1 that ends the episode. Bootstrapping can push Q-values of actions the
    data does not cover far past any real return; this bounds what the critic is trained towards."""
    critic_atoms: int = 0
    """0: each critic outputs Q(s, a). K >= 2: a distributional (C51) critic: each critic outputs a
    categorical distribution over K returns evenly spaced on [``critic_v_min``, ``critic_v_max``], trained by
    cross-entropy to the TD target's distribution projected onto those atoms; Q is its mean (the actor, the
    ensemble's minimum and the logs use that). With many parallel worlds and large batches the fast off-policy
    recipes (FastTD3, FastSAC) find it steadier than a scalar critic."""
    critic_v_min: float = -1.0
    """Lowest return a distributional critic represents (TD targets below it count as it)."""
    critic_v_max: float = 1.0
    """Highest return a distributional critic represents. [-1, 1] holds the sparse 0/1 success reward and
    RLIF's -1; give your returns' range for dense rewards."""

    # --- gripper --------------------------------------------------------------------------------------------
    gripper: Literal["continuous", "discrete"] = "continuous"
    """'continuous': SAC drives every action dim; 'discrete': SAC drives dims 0-5, a DQN head the gripper."""
    gripper_hidden_dims: tuple[int, ...] = (256, 256)
    """Hidden layer widths of the discrete gripper Q-head (HIL-SERL: 256x256)."""
    gripper_epsilon: float = 0.05
    """Epsilon-greedy exploration probability of the discrete gripper head when acting stochastically."""
    gripper_penalty_key: str = "grasp_penalty"
    """``Batch.extras`` key added to the reward in the gripper head's TD target (0 if absent)."""

    # --- residual over a base policy (robot_rl.training.base_policy) ----------------------------------------
    residual_scale: float | None = None
    """Residual RL: the executed action is clip(base + residual_scale * r) per SAC dim, r in [-1, 1] from the
    actor (in units of the action box's half-width), the base's action read from the ``base_action``
    observation (``--base-policy``). The actor's mean layer starts at zero, so an untrained agent acts as the
    base does; the critic judges the executed action. None: plain SAC."""
    residual_gripper_scale: float | None = None
    """The residual's bound on the contract action's gripper latch (dim 6; <= -0.5 close, >= 0.5 open), in the
    same units: 1.5 lets the residual turn any base command into any other (delay a premature close, reopen),
    which ``residual_scale``'s small bound cannot. None: ``residual_scale``."""
    residual_observe_base: bool = True
    """The residual's networks see the base action among their inputs (False: only the composition uses it)."""
    critic_warmup_updates: int = 0
    """Critic updates before the first actor update: with a residual, the critic first learns the values of
    the base policy's behaviour, so the first actor steps follow a critic that knows the base."""
    anchor_weight: float = 0.0
    """Fine-tuning (``--init-from``): a penalty on the actor's deterministic action for leaving that of the
    policy the run started from, ``anchor_weight * mean|Q| * |mu(s) - mu_0(s)|^2`` on every actor step (scaled
    by the critics' magnitude as in TD3+BC, so the weight does not depend on the reward's scale). Without it
    the actor follows the errors of critics fitted to a small new replay and a working policy falls apart
    within a thousand steps (docs/benchmarks.md). 0: off."""

    # --- observations ---------------------------------------------------------------------------------------
    normalize_observations: bool = True
    """Normalise non-image observations by running mean / std (updated from sampled batches)."""
    image_encoder: Literal["cnn", "resnet18"] = "cnn"
    """Per-camera backbone: a small CNN trained from scratch, or ResNet-18 from ``resnet_weights_path``."""
    resnet_weights_path: str | None = None
    """Local torchvision-layout ResNet-18 ``state_dict`` file (``torch.save``); never downloaded."""
    freeze_backbone: bool = True
    """Keep the pretrained ResNet-18 backbone frozen (SERL / HIL-SERL freeze their ResNet-10)."""
    cnn_channels: tuple[int, ...] = (32, 32, 32, 32)
    """Output channels of each 3x3 conv layer of the small CNN."""
    cnn_strides: tuple[int, ...] = (2, 2, 2, 1)
    """Stride of each conv layer of the small CNN (same length as ``cnn_channels``)."""
    image_pooling: Literal["spatial_embedding", "flatten"] = "spatial_embedding"
    """How a camera's feature map becomes a vector: SERL's learned spatial embedding, or flatten."""
    spatial_embedding_features: int = 8
    """Learned spatial kernels per channel of the spatial embedding (SERL: 8)."""
    image_latent_dim: int = 256
    """Per-camera feature size after Linear + LayerNorm + tanh (SERL: 256)."""
    proprio_latent_dim: int = 64
    """Size of the non-image (proprio) projection when cameras exist (SERL: 64); state-only obs stay raw."""
    image_augmentation: bool = True
    """DrQ random shift of obs and next_obs images inside the update (SERL: on)."""
    augmentation_pad: int = 4
    """Random-shift padding in pixels: shifts are uniform in [-pad, pad] (DrQ / SERL: 4)."""

    def __post_init__(self) -> None:
        def bad(name: str, why: str) -> ValueError:
            return ValueError(f"SACConfig.{name} {why}, got {getattr(self, name)!r}")

        if self.compile not in ("auto", "on", "off"):
            raise bad("compile", "must be auto, on or off")
        for name in ("hidden_dims", "gripper_hidden_dims", "cnn_channels", "cnn_strides"):
            dims = getattr(self, name)
            if not isinstance(dims, tuple) or not dims or any(not isinstance(d, int) or d <= 0 for d in dims):
                raise bad(name, "must be a non-empty tuple of positive ints")
        if len(self.cnn_strides) != len(self.cnn_channels):
            raise bad("cnn_strides", f"must have the same length as cnn_channels ({len(self.cnn_channels)})")
        if self.num_critics < 1:
            raise bad("num_critics", "must be >= 1")
        if not 1 <= self.num_min_critics <= self.num_critics:
            raise bad("num_min_critics", f"must be in [1, num_critics={self.num_critics}]")
        if self.log_std_min >= self.log_std_max:
            raise bad("log_std_min", f"must be < log_std_max={self.log_std_max}")
        if self.exploration_std is not None and not (math.isfinite(self.exploration_std) and self.exploration_std > 0):
            raise bad("exploration_std", "must be a finite number > 0 or None")
        for name in ("actor_lr", "critic_lr", "temperature_lr", "gripper_lr"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise bad(name, "must be a finite number > 0")
        if self.max_grad_norm is not None and not self.max_grad_norm > 0:
            raise bad("max_grad_norm", "must be > 0 or None")
        if not 0 < self.tau <= 1:
            raise bad("tau", "must be in (0, 1]")
        if self.precision not in ("float32", "bfloat16"):
            raise bad("precision", "must be 'float32' or 'bfloat16'")
        if self.utd_ratio < 1:
            raise bad("utd_ratio", "must be >= 1")
        if not (math.isfinite(self.anchor_weight) and self.anchor_weight >= 0):
            raise bad("anchor_weight", "must be a finite number >= 0")
        if not (math.isfinite(self.init_temperature) and self.init_temperature > 0):
            raise bad("init_temperature", "must be a finite number > 0")
        for name in ("td_target_min", "td_target_max"):
            if getattr(self, name) is not None and math.isnan(getattr(self, name)):
                raise bad(name, "must be a number or None")
        if self.critic_atoms != 0 and self.critic_atoms < 2:
            raise bad("critic_atoms", "must be 0 (a scalar critic) or >= 2")
        if not (math.isfinite(self.critic_v_min) and math.isfinite(self.critic_v_max)
                and self.critic_v_min < self.critic_v_max):
            raise bad("critic_v_min", f"must be finite and < critic_v_max={self.critic_v_max}")
        low, high = self.td_target_min, self.td_target_max
        if low is not None and high is not None and low > high:
            raise bad("td_target_min", f"must be <= td_target_max={self.td_target_max}")
        if self.target_entropy is not None and not math.isfinite(self.target_entropy):
            raise bad("target_entropy", "must be finite or None")
        if self.gripper not in ("continuous", "discrete"):
            raise bad("gripper", "must be 'continuous' or 'discrete'")
        if not 0 <= self.gripper_epsilon <= 1:
            raise bad("gripper_epsilon", "must be in [0, 1]")
        if self.activation not in ("relu", "tanh", "gelu", "elu"):
            raise bad("activation", "must be one of relu, tanh, gelu, elu")
        if self.image_encoder not in ("cnn", "resnet18"):
            raise bad("image_encoder", "must be 'cnn' or 'resnet18'")
        if self.image_encoder == "resnet18" and not self.resnet_weights_path:
            raise bad("resnet_weights_path", "must name a local weights file when image_encoder='resnet18'")
        if self.image_pooling not in ("spatial_embedding", "flatten"):
            raise bad("image_pooling", "must be 'spatial_embedding' or 'flatten'")
        for name in ("spatial_embedding_features", "image_latent_dim", "proprio_latent_dim"):
            if getattr(self, name) < 1:
                raise bad(name, "must be >= 1")
        if self.residual_scale is not None and not (math.isfinite(self.residual_scale) and self.residual_scale >= 0):
            raise bad("residual_scale", "must be a finite number >= 0 or None")
        if self.residual_gripper_scale is not None and not (
                self.residual_scale is not None and math.isfinite(self.residual_gripper_scale)
                and self.residual_gripper_scale >= 0):
            raise bad("residual_gripper_scale", "must be a finite number >= 0, with residual_scale set")
        if self.residual_scale is not None and self.gripper == "discrete":
            raise bad("gripper", "must be 'continuous' with residual_scale (the residual corrects every action dim)")
        if self.critic_warmup_updates < 0:
            raise bad("critic_warmup_updates", "must be >= 0")
        if self.augmentation_pad < 0:
            raise bad("augmentation_pad", "must be >= 0")
