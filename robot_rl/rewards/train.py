"""Train the success classifier: episode-level train / validation / test split, balanced batches, random
shift, BCE; the threshold is chosen on validation frames, accuracy and the confusion matrix are reported on
test frames (episodes never seen while fitting or choosing)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F

from robot_rl.data.augmentation import random_shift
from robot_rl.data.spaces import space_from_description
from robot_rl.rewards.classifier import SuccessClassifier
from robot_rl.rewards.config import ClassifierConfig
from robot_rl.rewards.dataset import FrameSet


@dataclass
class ClassifierReport:
    threshold: float
    val_accuracy: float
    test_accuracy: float
    test_balanced_accuracy: float
    test_confusion: list[list[int]]
    """[[true negatives, false positives], [false negatives, true positives]] on test frames."""
    frames: dict[str, list[int]]
    """Per split: [frames, positives]."""
    steps: int
    seconds: float

    def summary(self) -> str:
        (tn, fp), (fn, tp) = self.test_confusion
        return (
            f"held-out accuracy {self.test_accuracy:.1%} (balanced {self.test_balanced_accuracy:.1%}) on "
            f"{self.frames['test'][0]} test frames at threshold {self.threshold:.3f} (chosen on validation, "
            f"{self.val_accuracy:.1%}); confusion [[TN {tn}, FP {fp}], [FN {fn}, TP {tp}]]"
        )

    def as_dict(self) -> dict:
        return asdict(self)


def split_by_episode(
    frames: FrameSet, val_fraction: float, test_fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Frame indices (train, val, test); whole episodes per split, stratified by "has a success frame"."""
    rng = np.random.default_rng(seed)
    episodes = np.unique(frames.episode)
    has_pos = np.array([frames.labels[frames.episode == e].any() for e in episodes])
    parts: list[list[int]] = [[], [], []]
    for group in (episodes[has_pos], episodes[~has_pos]):
        group = rng.permutation(group)
        n_test = round(len(group) * test_fraction)
        n_val = round(len(group) * val_fraction)
        if len(group) >= 3:
            n_test, n_val = max(1, n_test), max(1, n_val)
        parts[2] += group[:n_test].tolist()
        parts[1] += group[n_test : n_test + n_val].tolist()
        parts[0] += group[n_test + n_val :].tolist()
    if (not parts[1] or not parts[2]) and len(episodes) >= 3:  # small groups: split without stratifying
        order = rng.permutation(episodes)
        n_test = max(1, round(len(order) * test_fraction))
        n_val = max(1, round(len(order) * val_fraction))
        parts = [order[n_test + n_val :].tolist(), order[n_test : n_test + n_val].tolist(), order[:n_test].tolist()]
    train, val, test = (np.flatnonzero(np.isin(frames.episode, p)) for p in parts)
    if len(val) == 0 or len(test) == 0:
        raise ValueError(f"too few episodes ({len(episodes)}) for train / validation / test splits; record more")
    return train, val, test


def balanced_accuracy(pred: np.ndarray, labels: np.ndarray) -> float:
    rates = [np.mean(pred[labels == c] == c) for c in (False, True) if np.any(labels == c)]
    return float(np.mean(rates)) if rates else 0.0


def choose_threshold(probs: np.ndarray, labels: np.ndarray, max_false_positive_rate: float | None = None) -> float:
    """The threshold chosen on (validation) frames; ties go to the one nearest 0.5.

    ``max_false_positive_rate`` None: maximise balanced accuracy. A rate: the lowest threshold (most success
    frames recalled) whose false-positive rate on the failure frames is at most that rate. A false positive
    ends a training episode with reward 1, which a policy learns to reproduce; a false negative only delays the
    reward by a frame or two while the object is held, so precision is worth more than recall here."""
    p = np.sort(np.unique(probs))
    candidates = np.concatenate([[0.5], (p[:-1] + p[1:]) / 2 if len(p) > 1 else [], [(1.0 + p[-1]) / 2]])
    candidates = candidates[(candidates > 0) & (candidates < 1)]
    if max_false_positive_rate is None:
        scores = np.array([balanced_accuracy(probs >= c, labels) for c in candidates])
        best = candidates[scores >= scores.max() - 1e-12]
        return float(best[np.argmin(np.abs(best - 0.5))])
    negatives = probs[~labels]
    fpr = np.array([np.mean(negatives >= c) if len(negatives) else 0.0 for c in candidates])
    allowed = candidates[fpr <= max_false_positive_rate + 1e-12]
    return float(allowed.min()) if len(allowed) else float(candidates.max())


def confusion(pred: np.ndarray, labels: np.ndarray) -> list[list[int]]:
    return [
        [int(np.sum(~pred & ~labels)), int(np.sum(pred & ~labels))],
        [int(np.sum(~pred & labels)), int(np.sum(pred & labels))],
    ]


def _space_of(frames: FrameSet, keys: list[str]) -> dict:
    return {k: {"shape": list(frames.observations[k].shape[1:]), "dtype": frames.observations[k].dtype.name}
            for k in keys}


def train_classifier(
    frames: FrameSet, config: ClassifierConfig, log: Callable[[str], None] | None = None
) -> tuple[SuccessClassifier, ClassifierReport]:
    start = time.perf_counter()
    torch.set_num_threads(config.torch_threads)
    torch.manual_seed(config.seed)
    keys = list(config.image_keys) or frames.image_keys
    missing = set(keys) - set(frames.observations)
    if missing or not keys:
        raise ValueError(f"ClassifierConfig.image_keys {sorted(missing) or keys} not in the data "
                         f"(keys: {sorted(frames.observations)})")
    train_idx, val_idx, test_idx = split_by_episode(frames, config.val_fraction, config.test_fraction, config.seed)
    labels = frames.labels
    pos, neg = train_idx[labels[train_idx]], train_idx[~labels[train_idx]]
    if len(pos) == 0 or len(neg) == 0:
        raise ValueError(f"training frames need both classes, got {len(pos)} success / {len(neg)} failure frames")
    model = SuccessClassifier(space_from_description(_space_of(frames, keys)), config)
    optim = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=config.lr)
    rng = np.random.default_rng(config.seed)
    gen = torch.Generator().manual_seed(config.seed)
    half = config.batch_size // 2
    target = torch.cat([torch.ones(half), torch.zeros(half)])
    model.train()
    for step in range(config.steps):
        idx = np.concatenate([rng.choice(pos, half), rng.choice(neg, half)])
        batch = {k: random_shift(torch.as_tensor(frames.observations[k][idx]), config.augmentation_pad, gen)
                 for k in keys}
        loss = F.binary_cross_entropy_with_logits(model(batch), target)
        optim.zero_grad(set_to_none=True)
        loss.backward()
        optim.step()
        if log is not None and (step + 1) % max(1, config.steps // 5) == 0:
            log(f"step {step + 1}/{config.steps}: loss {loss.item():.4f}")

    def probs(index: np.ndarray) -> np.ndarray:
        return model.predict_proba({k: frames.observations[k][index] for k in keys})

    val_p, test_p = probs(val_idx), probs(test_idx)
    threshold = choose_threshold(val_p, labels[val_idx], config.max_false_positive_rate)
    test_pred = test_p >= threshold
    report = ClassifierReport(
        threshold=threshold,
        val_accuracy=float(np.mean((val_p >= threshold) == labels[val_idx])),
        test_accuracy=float(np.mean(test_pred == labels[test_idx])),
        test_balanced_accuracy=balanced_accuracy(test_pred, labels[test_idx]),
        test_confusion=confusion(test_pred, labels[test_idx]),
        frames={name: [len(i), int(labels[i].sum())]
                for name, i in (("train", train_idx), ("val", val_idx), ("test", test_idx))},
        steps=config.steps,
        seconds=time.perf_counter() - start,
    )
    model.eval()
    return model, report
