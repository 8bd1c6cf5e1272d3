"""The sample-efficiency tables of docs/benchmarks.md, built from the raw results in ``bench/results/learning/``,
``bench/results/residual/`` and ``bench/results/symmetry/``.

    python bench/report.py                    # every task and threshold measured
    python bench/report.py --task reach

One table per (task, observations, threshold): per method the seeds' steps to the threshold (the newest result
of each seed), the median, the final success, the ratio of the median to ours (``>=`` where the peer never
reached the threshold within its budget), and where and when it was measured.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Callable

import numpy as np
from _recipe import RESULTS, median_steps


def load(task: str | None) -> dict[tuple[str, str, float], dict[str, dict[int, dict]]]:
    """(task, obs, threshold) -> method -> seed -> row (with budget and provenance), the newest file winning."""
    tables: dict = defaultdict(lambda: defaultdict(dict))
    for path in sorted((RESULTS / "learning").glob("*.json")):  # names start with the run's time: newest last
        doc = json.loads(path.read_text())
        if task is not None and doc["task"] != task:
            continue
        key = (doc["task"], doc.get("obs", "state"), float(doc["threshold"]))
        for method, rows in doc["results"].items():
            for row in rows:
                tables[key][method][row["seed"]] = row | {"budget": doc["budget"], "provenance": doc["provenance"]}
    return tables


def steps_cell(row: dict) -> str:
    return str(row["steps_to_threshold"]) if row["steps_to_threshold"] is not None else f">{row['budget']}"


def render(key: tuple[str, str, float], methods: dict[str, dict[int, dict]]) -> list[str]:
    task, obs, threshold = key
    pct = f"{threshold:.0%}"
    lines = [f"**{task}** ({obs}), env steps to the first evaluation >= {pct}:", "",
             f"| method | steps to {pct} per seed | median | final success | ratio to ours | date | commit | CPU |",
             "|---|---|---|---|---|---|---|---|"]
    ours = median_steps([r["steps_to_threshold"] for r in methods.get("ours", {}).values()]) if "ours" in methods \
        else float("nan")
    for method, seeds in methods.items():
        rows = [seeds[s] for s in sorted(seeds)]
        median = median_steps([r["steps_to_threshold"] for r in rows])
        if method == "ours" or not np.isfinite(ours):
            ratio = ""
        elif np.isfinite(median):
            ratio = f"{median / ours:.1f}x"
        else:
            ratio = f">= {min(r['budget'] for r in rows) / ours:.1f}x"
        when = sorted({r["provenance"]["date"] for r in rows})
        commits = sorted({r["provenance"]["commit"] for r in rows})
        cpus = sorted({r["provenance"]["cpu"] for r in rows})
        finals = ", ".join(f"{r['final_success']:.0%}" for r in rows)
        shown = f"{median:.0f}" if np.isfinite(median) else "not reached"
        lines.append(f"| {method} | {', '.join(steps_cell(r) for r in rows)} | {shown} | {finals} | {ratio} | "
                     f"{', '.join(when)} | {', '.join(commits)} | {'; '.join(cpus)} |")
    return lines


def steps_tables(benchmark: str, task: str | None, label: Callable[[str, dict], str],
                 caption: Callable[[str, dict], str]) -> list[str]:
    """Per task of ``bench/results/<benchmark>/``: each method (``label(method, doc)``) with its seeds' steps to
    80% / 90% and final success (with its lower 95% bound where recorded), the newest result of each seed."""
    rows: dict = defaultdict(lambda: defaultdict(dict))
    for path in sorted((RESULTS / benchmark).glob("*.json")):
        doc = json.loads(path.read_text())
        if task is not None and doc["task"] != task:
            continue
        for method, runs in doc["results"].items():
            for run in runs:
                rows[doc["task"]][label(method, doc)][run["seed"]] = run | {"budget": doc["budget"],
                                                                            "provenance": doc["provenance"]}
    lines: list[str] = []
    for name in sorted(rows):
        lines += [caption(name, rows[name]), "",
                  "| method | steps to 80% | steps to 90% | final success | date | commit |",
                  "|---|---|---|---|---|---|"]
        for method, seeds in rows[name].items():
            runs = [seeds[s] for s in sorted(seeds)]
            finals = ", ".join(f"{r['final_success']:.0%}" + (f" ({r['final_ci_low']:.0%})" if "final_ci_low" in r
                                                              else "") for r in runs)
            when = ", ".join(sorted({r["provenance"]["date"] for r in runs}))
            commits = ", ".join(sorted({r["provenance"]["commit"] for r in runs}))
            to80, to90 = (", ".join(str(r[k]) if r[k] else f">{r['budget']}" for r in runs)
                          for k in ("steps_to_80", "steps_to_90"))
            lines.append(f"| {method} | {to80} | {to90} | {finals} | {when} | {commits} |")
        lines.append("")
    return lines


def residual_caption(task: str, methods: dict) -> str:
    bases = {s: r["base_success"] for runs in methods.values() for s, r in runs.items()}
    return f"**{task}** over a BC base (base success per seed: {', '.join(f'{bases[s]:.0%}' for s in sorted(bases))}):"


def residual_label(method: str, doc: dict) -> str:
    return {"residual": f"residual, scale {doc['residual_scale']}",
            "jsrl": f"JSRL, {doc.get('guide_schedule', 'curriculum')} h"}.get(method, "RLPD, same demos")


def symmetry_label(method: str, doc: dict) -> str:
    mode = f"{doc['mode']}" + (f", {doc['copies']} copies" if doc["mode"] == "copies" else f", {doc['fraction']:.0%}")
    return {"none": "no augmentation", "symmetry": f"symmetry ({mode})",
            "states_only": f"states moved, actions not ({mode})"}[method]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default=None)
    args = parser.parse_args()
    tables = load(args.task)
    if not tables:
        raise SystemExit(f"no results under {RESULTS / 'learning'}")
    for key in sorted(tables):
        print("\n".join(render(key, tables[key])) + "\n")
    print("\n".join(steps_tables("residual", args.task, residual_label, residual_caption)))
    print("\n".join(steps_tables("symmetry", args.task, symmetry_label,
                                 lambda task, _: f"**{task}** with and without its symmetry group:")))


if __name__ == "__main__":
    main()
