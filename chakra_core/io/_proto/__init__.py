"""Generated protobuf bindings (do not edit; see schema/generate.py)."""
