"""chakra-collect-jax: compile and profile a jitted JAX step and write its per-device Chakra ETs."""

from .collect import Collected, collect

__all__ = ["Collected", "collect"]
