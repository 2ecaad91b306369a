"""Layer 7, sweeps: the spec and its expressions, planning, running points, the results table
and the worker pool. Private: public names through :mod:`chakra_core`."""
