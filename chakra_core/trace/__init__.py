"""Layer 2, the trace model: trace sets and ranks, node attributes, dependency graphs,
columns, roles, statistics and node selection. Imports base and io. Private: public names
through :mod:`chakra_core`."""
