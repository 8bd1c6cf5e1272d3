"""The batch the learner consumes; every replay source (online, demos, device replay) produces this."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass
class Batch:
    """A batch of (possibly n-step) transitions, all tensors on one device.

    obs / next_obs: ``{"state": float32 [B, S], "privileged": float32 [B, P], "images/<cam>": uint8 [B, H, W, 3]}``
    action:   float32 [B, A]  the action actually executed (the human's during an intervention).
    reward:   float32 [B]     sum_{k<n} gamma^k r_{t+k} (n-step; n = 1 gives r_t).
    discount: float32 [B]     gamma^n if the n-step window ended without termination, else 0: the factor
                              on the bootstrap value Q(next_obs). Time-limit truncation keeps gamma^n.
    extras:   per-transition side channels, e.g. ``intervention`` bool [B], ``grasp_penalty`` float32 [B].
    """

    obs: dict[str, torch.Tensor]
    action: torch.Tensor
    reward: torch.Tensor
    discount: torch.Tensor
    next_obs: dict[str, torch.Tensor]
    extras: dict[str, torch.Tensor] = field(default_factory=dict)

    def __len__(self) -> int:
        return self.action.shape[0]

    def to(self, device: torch.device | str) -> Batch:
        move = lambda d: {k: v.to(device, non_blocking=True) for k, v in d.items()}  # noqa: E731
        return Batch(
            move(self.obs),
            self.action.to(device),
            self.reward.to(device),
            self.discount.to(device),
            move(self.next_obs),
            move(self.extras),
        )

    @staticmethod
    def concat(a: Batch, b: Batch) -> Batch:
        """Concatenate along the batch dimension (symmetric online/demo sampling)."""
        cat = lambda x, y: {k: torch.cat([x[k], y[k]]) for k in x}  # noqa: E731
        extras = {k: torch.cat([a.extras[k], b.extras[k]]) for k in a.extras if k in b.extras}
        return Batch(
            cat(a.obs, b.obs),
            torch.cat([a.action, b.action]),
            torch.cat([a.reward, b.reward]),
            torch.cat([a.discount, b.discount]),
            cat(a.next_obs, b.next_obs),
            extras,
        )
