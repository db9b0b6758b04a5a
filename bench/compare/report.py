"""A self-contained HTML report of one run or a comparison: figures embedded, the table, the configs.

One file, no external resource (no CDN, font, stylesheet or script from elsewhere): figures are
base64 PNG data URIs, the style and a 10-line render check are inline. The render check marks
`#render-status` with how many figures the browser decoded (`data-figures`, `data-rendered`), so
a headless browser can tell a report whose figures show from one whose figures are broken
(`bench.compare.render_check`).
"""

from __future__ import annotations

import base64
import html
import json
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from bench.compare import figures as fig_mod
from bench.compare.comparison import Comparison, figure_caption
from bench.compare.stats import CONTEXT_KEYS
from bench.compare.table import _cell, fmt, metric_name, notes

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 1em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.9em; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; font-size: 0.8em; }
dl { display: grid; grid-template-columns: max-content auto; gap: 0.2em 1em; }
dt { font-weight: 600; } dd { margin: 0; }
.note { color: #555; } .render-broken { color: #b00; font-weight: 600; }
"""

# Runs in the browser after every image has loaded or failed (window "load"): counts the figures
# actually decoded, so a broken figure shows on the page and to a headless check.
_RENDER_CHECK = """
window.addEventListener("load", function () {
  var imgs = Array.prototype.slice.call(document.querySelectorAll("img.figure"));
  var ok = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0 && i.naturalHeight > 0; });
  var s = document.getElementById("render-status");
  s.setAttribute("data-figures", String(imgs.length));
  s.setAttribute("data-rendered", String(ok.length));
  s.textContent = "figures rendered: " + ok.length + " of " + imgs.length;
  if (ok.length !== imgs.length) { s.className = "render-broken"; }
});
"""


def _e(value) -> str:
    return html.escape("" if value is None else str(value))


def _png_data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _table(header: list[str], rows: list[list], numeric: set[int] = frozenset()) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f'<td{" class=num" if i in numeric else ""}>{_e(c)}</td>' for i, c in enumerate(r)) + "</tr>"
        for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _summary_html(c: Comparison) -> str:
    parts = []
    for ctx, part in c.summary.groupby(list(CONTEXT_KEYS), dropna=False, sort=True):
        mode, dataset, workers = ctx
        parts.append(f"<h3>{_e(dataset)}, W={_e(workers)}, {_e(mode)}</h3>")
        header = ["grouping", "n", *(metric_name(m) for m in c.metric_columns)]
        rows = [[r["label"], int(r["n"]), *(_cell(r, m) for m in c.metric_columns)] for _, r in part.iterrows()]
        parts.append(_table(header, rows, numeric=set(range(1, len(header)))))
        sub = c.tests
        for k, v in zip(CONTEXT_KEYS, ctx):
            sub = sub[(sub[k] == v) | (sub[k].isna() & pd.isna(v))]
        if len(sub):
            parts.append(f"<p>Pairwise Mann-Whitney U, two-sided, alpha = {c.alpha}:</p>")
            rows = [[metric_name(r.metric), r.a, r.b, f"{r.n_a} vs {r.n_b}", fmt(r.median_a), fmt(r.median_b),
                     "-" if r.p_value is None or pd.isna(r.p_value) else f"{r.p_value:.3g}", r.verdict]
                    for r in sub.itertuples()]
            parts.append(_table(["metric", "A", "B", "n", "median A", "median B", "p", "verdict"], rows,
                                numeric={4, 5, 6}))
    all_notes = notes(c.summary, c.tests, c.alpha) + c.notes
    parts.append("<ul class=note>" + "".join(f"<li>{_e(n)}</li>" for n in all_notes) + "</ul>")
    return "\n".join(parts)


def _runs_html(c: Comparison) -> str:
    cols = ["run_id", "label", "mode", "dataset", "workers", "splitters", "created_utc", "experiment_id", "git_commit"]
    rows = [[str(r[k])[:10] if k == "git_commit" and isinstance(r[k], str) else r[k] for k in cols]
            for _, r in c.runs.iterrows()]
    out = [_table(["run", "group", "mode", "dataset", "W", "S", "created (UTC)", "experiment", "git"], rows)]
    single = len(c.runs) == 1
    for _, r in c.runs.iterrows():
        run = json.loads((Path(r["path"]) / "run.json").read_text())
        config = run.get("config") or {}
        dataset = run.get("dataset") or {}
        facts = {
            "grouping": config.get("grouping"), "workers": config.get("workers"),
            "splitters": config.get("splitters"), "grouping params": json.dumps(config.get("grouping_params") or {}),
            "dataset": dataset.get("name"), "dataset params": json.dumps(dataset.get("params") or {}),
            "records / tuples": f"{dataset.get('records')} / {dataset.get('tuples')}",
            "distinct keys": dataset.get("distinct_keys"), "tick (ms)": config.get("tick_ms"),
            "git": f"{(run.get('git') or {}).get('commit')} (dirty: {(run.get('git') or {}).get('dirty')})",
            "created (UTC)": run.get("created_utc"),
        }
        dl = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in facts.items())
        out.append(f"<details{' open' if single else ''}><summary>{_e(r['run_id'])}</summary><dl>{dl}</dl>"
                   f"<pre>{_e(json.dumps(run, indent=2))}</pre></details>")
    return "\n".join(out)


NEMESIS_CHECKS = ("completed", "record_complete", "input_complete", "exactly_once", "loads_equal_simulated",
                  "state_equal_simulated", "influx_equals_metrics")
"""The verdict's checks of `results/<run_id>/nemesis.json` (bench/nemesis/check.py), in the report's order."""


def _faults_html(c: Comparison) -> str:
    """For each run made by `make nemesis` (its nemesis.json): the seed, the checker's verdict, and
    every fault, recovery and rescale step with its instant; '' when no run has one."""
    out = []
    for _, r in c.runs.iterrows():
        path = Path(r["path"]) / "nemesis.json"
        if not path.exists():
            continue
        record = json.loads(path.read_text())
        plan, check = record.get("plan") or {}, record.get("check") or {}
        verdict = [[k, "yes" if check[k] is True else "NO"] for k in NEMESIS_CHECKS if k in check]
        verdict.append(["lost / counted twice (weighted tuples)", f"{check.get('lost')} / {check.get('duplicated')}"])
        history = [[f"+{e['t_s']:.1f} s", e["kind"], e["text"]] for e in record.get("history") or []]
        rescales = plan.get("schedule") or "none"
        if plan.get("protocol"):
            rescales += f", {plan['protocol']}"
        out.append(f"<h3>{_e(r['run_id'])}: seed {_e(plan.get('seed'))}, {len(plan.get('faults') or [])} faults "
                   f"planned (rescales: {_e(rescales)}), {'passed' if check.get('ok') else 'FAILED'}</h3>"
                   + _table(["check", "holds"], verdict) + _table(["instant", "kind", "what"], history))
    return "\n".join(out)


def render_html(c: Comparison, title: str | None = None) -> str:
    """The report as one HTML string."""
    figs = c.figures()  # fills c.notes for figures without data
    if title is None:
        title = (f"Run {c.runs['run_id'].iloc[0]}" if len(c.runs) == 1
                 else f"Comparison of {c.runs['grouping'].nunique()} groupings ({len(c.runs)} runs)")
    figure_html = []
    for name, fig in figs.items():
        uri = _png_data_uri(fig_mod.png_bytes(fig))
        figure_html.append(f'<figure><img class="figure" alt="{_e(figure_caption(name))}" src="{uri}">'
                           f"<figcaption>{_e(figure_caption(name))}</figcaption></figure>")
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    faults = _faults_html(c)
    description = c.description.rstrip(".") + "." if c.description else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="bench-figures" content="{len(figs)}">
<title>{_e(title)}</title><style>{_STYLE}</style></head>
<body>
<h1>{_e(title)}</h1>
<p class=note>{_e(description)} Generated {now} by <code>python -m bench report</code>.</p>
<p id="render-status" data-figures="" data-rendered="">figures rendered: not checked (scripts off)</p>
<h2>Comparison table</h2>
{_summary_html(c)}
<h2>Figures</h2>
{"".join(figure_html) or "<p>No figure: these runs carry no metrics.</p>"}
{"<h2>Faults (make nemesis)</h2>" + faults if faults else ""}
<h2>Runs and their configuration</h2>
{_runs_html(c)}
<script>{_RENDER_CHECK}</script>
</body></html>
"""


def write_report(c: Comparison, out: Path, title: str | None = None) -> Path:
    """Write the report to `out` (folders created); returns the path."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_html(c, title), encoding="utf-8")
    return out
