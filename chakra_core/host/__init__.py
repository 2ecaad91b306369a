"""Layer 4, the plugin host: component base classes, the registry, loading of entry points
and the guard around plugin code (the hooks themselves are :mod:`chakra_core.hookspecs`).
Imports base, io, trace, system and validation. Private: public names through :mod:`chakra_core`."""
