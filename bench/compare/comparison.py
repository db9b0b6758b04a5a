"""A comparison of run records: which runs, their repetition groups, the table, the tests, the figures.

`select_runs` picks the runs (explicit ids, an experiment, or by default the newest run of each
grouping on one dataset, widened to its repetitions); `build_comparison` loads what the figures
and the table need; `Comparison.write` saves figures (PNG + SVG) and tables (markdown + CSV).
The CLI (`python -m bench compare`), the HTML report and notebooks/compare.ipynb all go through here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from bench.compare import figures as fig_mod
from bench.compare import rescale as rescale_mod
from bench.compare.stats import ALPHA, group_labels, pairwise_tests, present_metrics, repetition_summary
from bench.compare.table import to_markdown, write_tables
from bench.results import reader
from bench.results.reader import HEADLINE, ResultsError

# name -> (what it shows, note when it cannot be drawn)
FIGURES = {
    "std_dev_over_time": ("STD_DEV over time per grouping", "no STD_DEV in the metrics of these runs"),
    "load_share": ("final load share per worker (bars)", "no worker_loads in the summaries of these runs"),
    "dist_cost": ("DIST_COST over time and final", "no DIST_COST in these runs"),
    "throughput_over_time": ("throughput over time",
                             "no throughput column in the metrics of these runs"),
    "latency_over_time": ("latency over time",
                          "no latency in these runs: simulate records carry none; stream runs add latency_* columns"),
    "resources_over_time": ("memory, checkpoint, state store and batch time over time",
                            "no resource samples in these runs: simulate records carry none"),
}


def figure_caption(name: str) -> str:
    """What figure `name` shows: FIGURES' text, or that of a rescale figure (per dataset)."""
    if name in FIGURES:
        return FIGURES[name][0]
    for prefix, what in (("rescale_timeline_", "throughput and worst latency over time around each rescale"),
                         ("rescale_costs_", "what each rescale cost, protocol x routing")):
        if name.startswith(prefix):
            return f"{what} ({name[len(prefix):].upper()})"
    return name


def select_runs(
    root: str | Path | None = None,
    run_ids: list[str] | None = None,
    dataset: str | None = None,
    experiment_id: str | None = None,
    workers: int | None = None,
) -> tuple[pd.DataFrame, str]:
    """The runs to compare and a one-line description of how they were chosen.

    - `run_ids`: exactly these runs (each must be complete, i.e. have summary.json);
    - `experiment_id`: every complete run of the experiment (optionally one dataset / worker count);
    - neither: the newest complete run of each grouping on one dataset, worker count and mode
      (`dataset`/`workers` or those of the newest run), each with its repetitions.
    Raises: ResultsError with a one-line message.
    """
    if run_ids:
        runs = reader.load_runs(root, run_ids=run_ids)
        incomplete = runs.loc[~runs["complete"].astype(bool), "run_id"].tolist()
        if incomplete:
            raise ResultsError(f"run {incomplete[0]} has no summary.json (still running, or it failed)")
        return runs, f"runs given: {len(runs)}"
    runs = reader.load_runs(root, experiment_id=experiment_id)
    if experiment_id is not None:
        picked = runs[runs["complete"].astype(bool)]
        if dataset is not None:
            picked = picked[picked["dataset"].astype(str).str.upper() == dataset.upper()]
        if workers is not None:
            picked = picked[picked["workers"] == workers]
        if picked.empty:
            raise ResultsError(f"experiment {experiment_id!r} has no complete run"
                               + (f" on {dataset}" if dataset else "") + (f" with W={workers}" if workers else ""))
        return picked.reset_index(drop=True), f"experiment {experiment_id}: {len(picked)} runs"
    latest = reader.latest_per_grouping(runs, dataset=dataset, workers=workers)
    picked = reader.repetitions(runs, latest)
    first = latest.iloc[0]
    return picked, (f"newest run of each grouping on {first['dataset']}, W={first['workers']}, {first['mode']}, "
                    f"with its repetitions: {len(picked)} runs")


@dataclass
class Comparison:
    """Everything a comparison shows, computed once."""

    runs: pd.DataFrame            # one row per run, with `label` (its repetition group)
    metrics: pd.DataFrame         # one row per (run, tick)
    worker_loads: pd.DataFrame    # one row per (run, worker)
    metric_columns: list[str]     # the figures tabulated and tested
    summary: pd.DataFrame         # one row per repetition group
    tests: pd.DataFrame           # one row per (pair of groups, figure)
    alpha: float = ALPHA
    description: str = ""
    notes: list[str] = field(default_factory=list)
    _figures: dict | None = field(default=None, repr=False)
    _events: pd.DataFrame | None = field(default=None, repr=False)

    @property
    def labels(self) -> pd.Series:
        """run_id -> label."""
        return self.runs.set_index("run_id")["label"]

    def figure(self, name: str):
        """One figure by name (see FIGURES), or None when its data is absent."""
        labels = self.labels
        if name == "std_dev_over_time":
            return fig_mod.std_dev_over_time(self.metrics, labels)
        if name == "load_share":
            return fig_mod.load_share_bars(self.worker_loads, labels)
        if name == "dist_cost":
            return fig_mod.dist_cost_figure(self.metrics, self.runs, labels)
        if name == "throughput_over_time":
            return fig_mod.throughput_over_time(self.metrics, labels)
        if name == "latency_over_time":
            return fig_mod.latency_over_time(self.metrics, labels)
        if name == "resources_over_time":
            return fig_mod.resources_over_time(self.metrics, labels)
        raise KeyError(f"unknown figure {name!r}; known: {', '.join(FIGURES)}")

    def figures(self) -> dict:
        """name -> Figure, for the figures with data (drawn once); a note for each missing one lands in `notes`.

        Runs that rescaled add `rescale_timeline_<dataset>` and `rescale_costs_<dataset>`
        (bench/compare/rescale.py)."""
        if self._figures is None:
            self._figures = {}
            for name, (what, missing) in FIGURES.items():
                fig = self.figure(name)
                if fig is None:
                    self.notes.append(f"{what}: not drawn, {missing}.")
                else:
                    self._figures[name] = fig
            self._figures.update(rescale_mod.rescale_figures(self.metrics, self.rescale_events))
        return self._figures

    @property
    def rescale_events(self) -> pd.DataFrame:
        """One row per rescale event of the runs (empty when none rescaled)."""
        if self._events is None:
            self._events = rescale_mod.load_events(self.runs)
        return self._events

    def markdown(self) -> str:
        """The table, the tests and every note (figures left out for want of data included)."""
        self.figures()
        text = to_markdown(self.summary, self.tests, self.metric_columns, self.alpha)
        if self.notes:
            text += "".join(f"- {n}\n" for n in self.notes)
        if not self.rescale_events.empty:
            text += "\n" + rescale_mod.rescale_table_markdown(self.rescale_events)
        return text

    def write(self, out_dir: Path) -> dict[str, list[Path]]:
        """Figures (`<name>.png`, `.svg`) and tables (`comparison.md`, `.csv`, `significance.csv`) into out_dir."""
        out_dir.mkdir(parents=True, exist_ok=True)
        written = {}
        for name, fig in self.figures().items():
            written[name] = fig_mod.save_figure(fig, out_dir / name)
        paths = write_tables(self.summary, self.tests, self.metric_columns, out_dir, self.alpha)
        paths[0].write_text(self.markdown())  # with the comparison's own notes
        written["tables"] = paths
        return written


def input_condition(runs: pd.DataFrame) -> pd.Series:
    """Per run, the input conditions it ran under: `live 500 rec/s` (paced: it replayed the dataset at
    that rate while consuming it), `live unpaced`, `recorded` (it read a recorded topic as fast as it
    could), `simulated` (a simulate run), `unknown` (a stream record from before the `input` block)."""
    def one(r) -> str:
        if r.get("mode") == "simulate":
            return "simulated"
        mode = r.get("input_mode")
        if not isinstance(mode, str):
            return "unknown"
        if mode == "live":
            return f"live {float(r.get('input_rate')):g} rec/s"
        return "live unpaced" if mode == "live-unpaced" else "recorded"
    return runs.apply(one, axis=1) if len(runs) else pd.Series([], dtype=object)


class MixedInputError(ResultsError):
    """The runs ran under different input conditions (paced and unpaced); see `build_comparison`."""


def build_comparison(runs: pd.DataFrame, alpha: float = ALPHA, description: str = "",
                     allow_mixed: bool = False) -> Comparison:
    """Load metrics and worker loads of `runs` (a `load_runs` frame) and compute table and tests.

    Stream runs under different input conditions (`input_condition`: a paced live replay against a
    recorded topic, or two rates) measure different things; they are refused (MixedInputError)
    unless `allow_mixed`, and then every label carries its condition and the notes say so."""
    if runs.empty:
        raise ResultsError("nothing to compare: no runs selected")
    runs = runs.copy().reset_index(drop=True)
    runs["input"] = input_condition(runs).to_numpy()
    stream_conditions = sorted(set(runs.loc[runs["mode"] != "simulate", "input"]))
    mixed = len(stream_conditions) > 1
    if mixed and not allow_mixed:
        raise MixedInputError(f"these stream runs ran under different input conditions ({', '.join(stream_conditions)}): "
                              "their throughput and latency are not comparable; select runs of one condition, or pass "
                              "--allow-mixed to compare them anyway (each row then marked)")
    runs["label"] = group_labels(runs).to_numpy()
    notes = []
    if mixed:  # group_labels marks every label with its input condition
        notes.append(f"MIXED input conditions ({', '.join(stream_conditions)}), compared because --allow-mixed was "
                     "given: each label says its condition; throughput and latency differ by condition, not only "
                     "by grouping.")
    elif stream_conditions:
        notes.append(f"Input conditions of the stream runs: {stream_conditions[0]} (all the same).")
    # A simulation's throughput is its virtual clock's replay rate, the same for every grouping:
    # tabulating and testing it would only dress up a constant.
    tabulated = runs.copy()
    simulated = tabulated["mode"] == "simulate"
    virtual = [c for c in _VIRTUAL_CLOCK_FIGURES
               if c in tabulated.columns and tabulated.loc[simulated, c].notna().any()]
    if virtual:
        tabulated.loc[simulated, virtual] = float("nan")
        notes.append("Throughput of simulate runs is the virtual clock's replay rate, not a measured speed: "
                     "left out of the table (the throughput figure shows it).")
    candidates = tuple(HEADLINE) + tuple(reader.latency_columns(tabulated))
    metric_columns = present_metrics(tabulated, candidates)
    summary = repetition_summary(tabulated, metric_columns)
    tests = pairwise_tests(tabulated, metric_columns, alpha)
    metrics = reader.load_metrics(runs)
    loads = reader.load_worker_loads(runs)
    absent = [m for m in HEADLINE if m not in metric_columns and m not in virtual]
    if absent:
        notes.append(f"Not in these runs' summaries (stream-only or absent), so not tabulated: {', '.join(absent)}.")
    return Comparison(runs, metrics, loads, metric_columns, summary, tests, alpha, description, notes)


_VIRTUAL_CLOCK_FIGURES = ("throughput_ratio",)
