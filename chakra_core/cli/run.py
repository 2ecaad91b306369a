"""``chakra run PIPELINE.yaml [--json] [--check] [--no-validate]``."""

from __future__ import annotations

from chakra_core.cli._common import host_of, print_json


def add_arguments(p) -> None:
    """Arguments of ``run``."""
    p.add_argument("pipeline", metavar="PIPELINE.yaml", help="pipeline file")
    p.add_argument("--json", action="store_true", help="print the full results as JSON")
    p.add_argument("--check", action="store_true", help="only validate the pipeline")
    p.add_argument("--no-validate", action="store_true",
                   help="run every backend even when the set has validation errors (as validate: false)")


def run(args) -> int:
    """Validate, then run the pipeline; print where each backend's result was written."""
    from chakra_core.pipeline._pipeline import load_pipeline

    pipe = load_pipeline(args.pipeline, host=host_of(args))
    if args.check:
        print(f"{args.pipeline}: OK ({len(pipe.transforms)} transform(s), {len(pipe.backends)} backend(s))")
        return 0
    if args.no_validate:
        for b in pipe.backends:
            b.validate = False
    out = pipe.run()
    if args.json:
        print_json(out)
    else:
        from chakra_core.base._human import label, value

        for b in out["backends"]:
            print(f"{b['name']}: {b['result_file']}")
            for k, v in b["result"]["summary"].items():
                if isinstance(v, (int, float, str)):
                    print(f"  {label(k)}: {value(k, v)}")
    return 0
