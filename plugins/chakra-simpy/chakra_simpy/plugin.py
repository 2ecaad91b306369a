"""Registration of the ``simpy`` backend (light: nothing heavy is imported here)."""

from chakra_core import Register, hookimpl


@hookimpl
def chakra_register_backends(register: Register) -> None:
    """Register the ``simpy`` simulator backend."""
    register("simpy", "chakra_simpy.backend:SimpyBackend",
             description="built-in SimPy simulator reproducing ASTRA-sim's analytical model",
             install_hint="pip install chakra-simpy")
