"""Comparing run records: statistics over repetitions (stats), figures, the table, the HTML report."""

from bench.compare.comparison import FIGURES, Comparison, build_comparison, select_runs

__all__ = ["FIGURES", "Comparison", "build_comparison", "select_runs"]
