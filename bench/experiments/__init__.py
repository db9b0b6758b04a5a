"""Experiments over the engines: `make rescale`'s scenario matrix in the simulator
(`rescale_matrix`), its figures and table drawn with `bench.compare`. An experiment sits above the
engines it runs and the figures it draws; neither engine imports it."""
