"""Example third-party chakra plugin (see docs/plugin-tutorial.md)."""
