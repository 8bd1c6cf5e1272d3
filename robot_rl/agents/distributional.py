"""Categorical (C51) return distributions for a distributional critic (``SACConfig.critic_atoms``).

A critic's output is K logits over fixed returns (atoms) evenly spaced on [v_min, v_max]. The TD target of a
distribution moves each atom z to r + discount * z; ``project`` puts that mass back onto the fixed atoms,
splitting each moved atom between its two neighbours in proportion to closeness (mass beyond either end goes
to that end), so the critic can be trained by cross-entropy to it (Bellemare, Dabney and Munos, 2017).
"""

from __future__ import annotations

import torch


def expected(logits: torch.Tensor, atoms: torch.Tensor) -> torch.Tensor:
    """The mean return of distributions given as logits [..., K] over ``atoms`` [K]: [...]."""
    return logits.softmax(-1) @ atoms


def project(probs: torch.Tensor, returns: torch.Tensor, atoms: torch.Tensor) -> torch.Tensor:
    """Mass ``probs`` [B, K] sitting at ``returns`` [B, K] (moved atoms), put onto ``atoms`` [K]: [B, K].

    Each row's mass is kept (it sums to what ``probs`` sums to) and its mean is kept wherever ``returns``
    lie inside [atoms[0], atoms[-1]]."""
    k = atoms.shape[0]
    v_min, v_max = atoms[0], atoms[-1]
    position = (returns.clamp(v_min, v_max) - v_min) / ((v_max - v_min) / (k - 1))  # in [0, K - 1]
    lower = position.floor().clamp(0, k - 1)
    upper_weight = position - lower  # 0 when a moved atom lands exactly on an atom: all of it goes to ``lower``
    lower = lower.long()
    upper = (lower + 1).clamp(max=k - 1)
    out = torch.zeros_like(probs)
    out.scatter_add_(-1, lower, probs * (1 - upper_weight))
    out.scatter_add_(-1, upper, probs * upper_weight)
    return out
