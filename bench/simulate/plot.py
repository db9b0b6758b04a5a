"""The sweep figure: STD_DEV and DIST_COST against the number of workers, one line per grouping."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def plot_sweep(frame: pd.DataFrame, stem: Path) -> list[Path]:
    """One figure per dataset, saved as `<stem>-<dataset>.png` and `.svg`. Returns the paths.

    Args: frame: one row per point with columns dataset, grouping, workers, std_dev, dist_cost.
    """
    # deferred: matplotlib takes about 0.5 s to import; a sweep without --plot never draws
    import matplotlib

    matplotlib.use("Agg")
    # deferred: pyplot after matplotlib.use("Agg"), so that no display backend is tried
    import matplotlib.pyplot as plt

    paths = []
    for dataset, part in frame.groupby("dataset"):
        fig, (ax_std, ax_cost) = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
        for grouping, g in part.sort_values("workers").groupby("grouping", sort=False):
            ax_std.plot(g["workers"], g["std_dev"], marker="o", label=grouping)
            ax_cost.plot(g["workers"], g["dist_cost"], marker="o", label=grouping)
        ax_std.set(xlabel="workers W", ylabel="STD_DEV (percentage points)", title="load imbalance")
        ax_cost.set(xlabel="workers W", ylabel="DIST_COST (workers per key)", title="replication cost")
        for ax in (ax_std, ax_cost):
            ax.grid(alpha=0.3)
            ax.set_xscale("log")
            ax.set_xticks(sorted(part["workers"].unique()), labels=map(str, sorted(part["workers"].unique())))
        ax_cost.set_yscale("log")
        ax_std.legend()
        fig.suptitle(f"{dataset}: simulated, {int(part['splitters'].iloc[0])} splitters")
        for ext in ("png", "svg"):
            path = stem.parent / f"{stem.name}-{dataset.lower()}.{ext}"
            fig.savefig(path, dpi=120)
            paths.append(path)
        plt.close(fig)
    return paths
