"""Write pipeline.schema.json in this folder: the JSON Schema of pipelines and their sweep:
section, as the loader checks them (chakra_core.sweeps._schema.full_schema).

    python schema/pipeline_schema.py

Editors that read JSON Schema validate pipeline YAML with it and show each key's help
(docs/pipelines.md, "Editors"); tests/test_schema.py fails when the file is not what this writes.
"""

import json
import pathlib

from chakra_core.sweeps._schema import full_schema

PATH = pathlib.Path(__file__).resolve().parent / "pipeline.schema.json"


def render() -> str:
    """The schema as the file holds it: JSON indented by two spaces, keys in the tables' order."""
    return json.dumps(full_schema(), indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    """Write the file."""
    PATH.write_text(render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
