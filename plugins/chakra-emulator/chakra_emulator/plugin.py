"""Registration of the ``emulator`` backend (light: nothing heavy is imported here)."""

from chakra_core import Register, hookimpl


@hookimpl
def chakra_register_backends(register: Register) -> None:
    """Register the ``emulator`` backend."""
    register("emulator", "chakra_emulator.backend:EmulatorBackend",
             description="replay a Chakra ET set on real hardware (torch.distributed: gloo on CPU, NCCL on GPUs)",
             install_hint="pip install chakra-emulator")
