"""Layer 5, analysis: spans, breakdown, critical path, tables, reports, diffs, fidelity,
timelines (Perfetto, Chrome), HTML, plots and graph views. Works on :class:`Spans` and trace
sets, never on the runner: what simulates lives in :mod:`chakra_core.pipeline`. Private: public
names through :mod:`chakra_core`."""
