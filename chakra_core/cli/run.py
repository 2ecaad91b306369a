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
    """Validate, then run the pipeline; print where each backend's result was written, then
    that result as ``chakra simulate`` prints one (summary, ranks, the notes of defaults used)."""
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
        from chakra_core.cli._backend import print_result
        from chakra_core.host._api import Result

        for b in out["backends"]:
            print(f"{b['name']}: {b['result_file']}")
            print_result(Result(**b["result"]), args.verbose)
    return 0
