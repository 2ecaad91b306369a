"""Layer 0, base: errors, resource limits, option values, paths, lazy imports, progress and
located YAML/JSON documents. Imports nothing else of the core. Private: the public names are
re-exported by :mod:`chakra_core`."""
