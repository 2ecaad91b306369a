"""Layer 6, pipelines and commands: YAML pipelines, the one-call commands behind the CLI,
the input cache, per-rank conversion parts, provenance and synthesis commands. Private: public
names through :mod:`chakra_core`."""
