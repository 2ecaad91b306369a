"""Hook implementations: light, so that listing plugins imports nothing else."""

from chakra_core import hookimpl


@hookimpl
def chakra_register_transforms(register):
    """Register the ``hide_names`` transform (imported on first use)."""
    register("hide_names", "chakra_example.hide:HideNames",
             description="replace node names by salted hashes")


@hookimpl
def chakra_register_backends(register):
    """Register the ``csv`` exporter (imported on first use)."""
    register("csv", "chakra_example.csv_export:CsvExporter",
             description="one CSV row per node")
