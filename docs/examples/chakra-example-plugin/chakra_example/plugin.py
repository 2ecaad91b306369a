"""Hook implementations: light, so that listing plugins imports nothing else."""

from chakra_core import hookimpl


@hookimpl
def chakra_register_formats(register):
    """Register the ``opslist`` input format (imported on first use)."""
    register("opslist", "chakra_example.opsfile:OpsListFormat",
             description="one op per line: name duration_us [dep ...]")


@hookimpl
def chakra_detect_format(paths):
    """Claim ``.ops`` files (look at the name only: detection must be cheap)."""
    return "opslist" if paths and str(paths[0]).endswith(".ops") else None


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
