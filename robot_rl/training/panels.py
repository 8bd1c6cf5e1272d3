"""What the policy saw and did in one episode, on one figure: the camera crops as the encoder sees them, the
actions, the critics' Q-value of each action, the reward, and the spans where a human was in control.

``EpisodePanel`` is an episode sink (``begin`` / ``step``, as ``evaluate`` and the training loop feed a
recording): it keeps the first episode it is given and draws it. Q-values are computed only when a panel is
drawn, so following the training loop costs no critic pass per step. Evaluations write one per evaluation to
``<run>/panels/eval_<steps>.png`` and TensorBoard (``eval/panel``); training with a teleop device or the
scripted corrector also draws the latest episode with an intervention (``panels/train_<steps>.png``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from robot_rl.envs.contract import is_image_key

STILLS = 8
"""Camera frames shown per camera, spread over the episode."""


class EpisodePanel:
    def __init__(self, q_value: Callable[[dict[str, np.ndarray], np.ndarray], float] | None = None) -> None:
        self.q_value = q_value
        self.images: dict[str, list[np.ndarray]] = {}
        self.actions: list[np.ndarray] = []
        self.answered: list[dict[str, np.ndarray]] = []  # the observation each action answers
        self.rewards: list[float] = []
        self.interventions: list[bool] = []
        self._obs: dict[str, np.ndarray] | None = None
        self.started = self.done = False

    # --- the episode sink ---
    def begin(self, obs: dict[str, np.ndarray], *_: Any, **__: Any) -> None:
        if self.started:
            self.done = True  # one episode per panel
            return
        self.started = True
        self._observe(obs)

    def step(self, action: np.ndarray, reward: float, next_obs: dict[str, np.ndarray], *_: Any,
             infos: dict[str, Any] | None = None, **__: Any) -> None:
        if self.done or self._obs is None:
            return
        self.answered.append(self._obs)
        self.actions.append(np.asarray(action, np.float32))
        self.rewards.append(float(reward))
        self.interventions.append(bool((infos or {}).get("intervention", False)))
        self._observe(next_obs)

    def record(self, step: Any, *_: Any) -> None:
        """A step of a collecting loop (``step_env``'s ``EnvStep``)."""
        t = step.transition
        self.step(t.action, t.reward, t.next_obs, infos={"intervention": t.intervention})

    def _observe(self, obs: dict[str, np.ndarray]) -> None:
        self._obs = dict(obs)
        for key, value in obs.items():
            if is_image_key(key):
                self.images.setdefault(key, []).append(np.asarray(value))

    @property
    def steps(self) -> int:
        return len(self.actions)

    @property
    def intervened(self) -> bool:
        return any(self.interventions)

    # --- drawing ---
    def figure(self, title: str = "") -> Any:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        cams = sorted(self.images)
        rows = len(cams) + 3
        fig = plt.figure(figsize=(9, 1.3 * len(cams) + 5.5))
        grid = fig.add_gridspec(rows, STILLS, height_ratios=[1.0] * len(cams) + [1.6, 1.2, 1.2])
        t = np.arange(self.steps)
        for r, cam in enumerate(cams):
            frames = self.images[cam]
            for c, i in enumerate(np.linspace(0, len(frames) - 1, min(STILLS, len(frames))).round().astype(int)):
                ax = fig.add_subplot(grid[r, c])
                ax.imshow(frames[i], interpolation="nearest")
                ax.set_xticks([])
                ax.set_yticks([])
                ax.set_title(f"{cam.split('/', 1)[1]} t={i}" if c == 0 else f"t={i}", fontsize=7)
        axes = [fig.add_subplot(grid[len(cams) + k, :]) for k in range(3)]
        actions = np.asarray(self.actions).reshape(self.steps, -1)
        labels = ["dx", "dy", "dz", "drx", "dry", "drz", "gripper"] if actions.shape[1] == 7 else None
        for j in range(actions.shape[1]):
            axes[0].plot(t, actions[:, j], lw=1, label=labels[j] if labels else f"a{j}")
        axes[0].set_ylabel("action")
        axes[0].legend(fontsize=6, ncol=7, loc="upper right")
        if self.q_value is not None and self.steps:
            axes[1].plot(t, [self.q_value(o, a) for o, a in zip(self.answered, self.actions)], color="C0")
        axes[1].set_ylabel("Q(s, a)")
        axes[2].step(t, self.rewards, where="post", color="C2")
        axes[2].set_ylabel("reward")
        axes[2].set_xlabel("step")
        for ax in axes:
            ax.grid(alpha=0.3)
            ax.set_xlim(-0.5, max(self.steps - 0.5, 0.5))
            for start, end in spans(self.interventions):
                ax.axvspan(start - 0.5, end - 0.5, color="orange", alpha=0.25, lw=0)
        if self.intervened:
            axes[0].text(0.01, 0.92, "shaded: a human in control", transform=axes[0].transAxes, fontsize=7)
        fig.suptitle(title, fontsize=9)
        fig.tight_layout()
        return fig

    def save(self, path: Path, title: str = "") -> Path:
        import matplotlib.pyplot as plt

        path.parent.mkdir(parents=True, exist_ok=True)
        fig = self.figure(title)
        fig.savefig(path, dpi=80)
        plt.close(fig)
        return path


def spans(flags: list[bool]) -> list[tuple[int, int]]:
    """[start, end) index ranges where ``flags`` is true."""
    out, start = [], None
    for i, flag in enumerate([*flags, False]):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            out.append((start, i))
            start = None
    return out
