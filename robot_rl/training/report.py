"""``robot-rl report RUN``: one self-contained HTML page summarising a run folder, readable offline.

Everything is inside the file (figures and video stills as inline PNGs, styles inline, no script, no link to
anything outside it), so it can be mailed, archived beside the run or opened on a robot PC without network:

- the evaluation success rate over env steps with its 95% Wilson band, and the training episodes' return
  (and success where the task reports it) as a moving mean with a band of one standard deviation;
- a table of every evaluation (success, interval, return, length);
- stills of the latest evaluation video, and the latest evaluation panel (what the policy saw and did);
- the resolved config and the git state the run was started from.
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from robot_rl.training.run_dir import RunDir, draw_eval_curve

WINDOW = 20
"""Training episodes per moving-mean window."""


Read = Callable[[str, str], tuple[np.ndarray, np.ndarray]]
"""``RunDir.read_metrics``: (kind, key) -> (env steps, values)."""


def _png(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _curves(read: Read) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 5.5), sharex=True)
    draw_eval_curve(top, read)
    with_success = len(read("eval", "success_rate")[0]) > 0
    for key, color in (("return", "C1"), ("success", "C2")):
        steps, values = read("episode", key)
        if not len(values) or (key == "success" and not with_success):
            continue
        k = min(WINDOW, len(values))
        mean = np.convolve(values, np.ones(k) / k, mode="valid")
        sq = np.convolve(values**2, np.ones(k) / k, mode="valid")
        std = np.sqrt(np.maximum(sq - mean**2, 0))
        at = steps[k - 1:]
        bottom.plot(at, mean, color=color, label=f"training episode {key} (mean of {k})")
        bottom.fill_between(at, mean - std, mean + std, color=color, alpha=0.15)
    bottom.set_xlabel("env steps")
    bottom.grid(alpha=0.3)
    if bottom.get_legend_handles_labels()[0]:
        bottom.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return _png(fig)


def _stills(gif: Path, count: int = 4) -> list[str]:
    import imageio.v2 as imageio

    frames = imageio.mimread(gif)
    picks = np.linspace(0, len(frames) - 1, min(count, len(frames))).round().astype(int)
    out = []
    for i in picks:
        buf = io.BytesIO()
        imageio.imwrite(buf, np.asarray(frames[i])[..., :3], format="png")
        out.append(base64.b64encode(buf.getvalue()).decode())
    return out


def _table(read: Read) -> str:
    value = {key: dict(zip(*read("eval", key))) for key in
             ("success_rate", "success_ci_low", "success_ci_high", "return", "length")}
    steps = sorted({s for column in value.values() for s in column})
    if not steps:
        return "<p>No evaluation yet.</p>"
    head = "<tr><th>env steps</th><th>success</th><th>95% interval</th><th>return</th><th>length</th></tr>"
    body = []
    for s in steps:
        rate, lo, hi = (value[k].get(s) for k in ("success_rate", "success_ci_low", "success_ci_high"))
        cells = [f"{s:,}", "unknown" if rate is None else f"{rate:.0%}",
                 "" if lo is None else f"{lo:.0%} - {hi:.0%}",
                 f"{value['return'].get(s, float('nan')):.2f}", f"{value['length'].get(s, float('nan')):.1f}"]
        body.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    return f"<table>{head}{''.join(body)}</table>"


def _json_block(file: Path) -> str:
    if not file.exists():
        return f"<p>No {html.escape(file.name)} in the run folder.</p>"
    try:
        text = json.dumps(json.loads(file.read_text()), indent=2, sort_keys=True)
    except ValueError as err:
        raise ValueError(f"{file}: not JSON ({err})") from err
    return f"<pre>{html.escape(text)}</pre>"


def _newest_last(folder: Path, pattern: str) -> list[Path]:
    return sorted(folder.glob(pattern), key=lambda p: p.stat().st_mtime) if folder.exists() else []


STYLE = """body{font-family:sans-serif;max-width:60em;margin:2em auto;color:#222}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:right}
pre{background:#f6f6f6;padding:.6em;overflow-x:auto;font-size:.8em}img{max-width:100%}
.stills img{width:24%;margin-right:1%;image-rendering:pixelated}"""


def write_report(run: str | Path, out: str | Path | None = None) -> Path:
    """Render the report of run folder ``run`` to ``out`` (default ``<run>/report.html``)."""
    run_dir = RunDir(Path(run))
    run = run_dir.path
    env = run_dir.read_config().get("env", {})
    read = run_dir.read_metrics
    title = f"{run.name}: {env.get('task', '?')} ({env.get('obs', '?')})"
    last = ""
    steps, rate = read("eval", "success_rate")
    if len(steps):
        lo, hi = read("eval", "success_ci_low")[1][-1], read("eval", "success_ci_high")[1][-1]
        last = (f"latest evaluation at {steps[-1]:,} env steps: success {rate[-1]:.0%} (95% interval {lo:.0%} - "
                f"{hi:.0%})")
    episode_steps = read("episode", "return")[0]
    trained = int(episode_steps.max()) if len(episode_steps) else 0
    parts = [f"<h1>{html.escape(title)}</h1>",
             f"<p>{html.escape(last or 'no success rate measured')}; {trained:,} env steps of training "
             f"episodes logged. Written {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC.</p>",
             "<h2>Learning curves</h2>", f'<img alt="learning curves" src="data:image/png;base64,{_curves(read)}">',
             "<h2>Evaluations</h2>", _table(read)]
    gifs = _newest_last(run / "videos", "*.gif")
    if gifs:
        stills = "".join(f'<img alt="frame" src="data:image/png;base64,{s}">' for s in _stills(gifs[-1]))
        parts += [f"<h2>Evaluation video: {html.escape(gifs[-1].name)}</h2>", f'<div class="stills">{stills}</div>']
    panels = _newest_last(run / "panels", "*.png")
    if panels:
        data = base64.b64encode(panels[-1].read_bytes()).decode()
        parts += [f"<h2>What the policy saw: {html.escape(panels[-1].stem)}</h2>",
                  f'<img alt="evaluation panel" src="data:image/png;base64,{data}">']
    parts += ["<h2>Config</h2>", _json_block(run / "config.json"), "<h2>Git state</h2>", _json_block(run / "git.json")]
    page = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{STYLE}</style></head><body>{''.join(parts)}</body></html>")
    out = Path(out) if out is not None else run / "report.html"
    out.write_text(page)
    return out
