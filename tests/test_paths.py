"""What a user types as a PATH: sets beside other files, globs and prefixes for both formats,
single ranks, and outputs named like files."""

from __future__ import annotations

import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _stats(chakra_cli, *args):
    status, out, err = chakra_cli("stats", *args, "--json")
    return status, (json.loads(out) if status == 0 else err)


def test_set_beside_a_chrome_trace_and_results(tmp_path, dp_set, chakra_cli):
    dp_set.write(tmp_path / "trace")
    (tmp_path / "timeline.json").write_text('{"traceEvents": [{"ph": "X", "name": "a", "ts": 0, "dur": 1}]}')
    (tmp_path / "result.json").write_text('{"backend": "x"}')
    status, s = _stats(chakra_cli, tmp_path)
    assert status == 0 and s["ranks"] == 2


def test_json_backend_output_reads_back(tmp_path, dp_set, chakra_cli, chakra_pipeline):
    dp_set.write(tmp_path / "job")
    chakra_pipeline({"input": {"paths": [str(tmp_path / "job")]},
                     "backends": [{"name": "json", "output": str(tmp_path / "js")}]})
    assert (tmp_path / "js" / "result.json").exists()
    for spec in (tmp_path / "js", tmp_path / "js" / "trace", f"{tmp_path}/js/trace.*.json"):
        status, s = _stats(chakra_cli, spec)
        assert status == 0 and s["nodes"] == 22, spec


def test_et_glob_skips_other_files(tmp_path, dp_set, chakra_cli):
    dp_set.write(tmp_path / "trace")
    (tmp_path / "result.json").write_text("{}")
    status, s = _stats(chakra_cli, f"{tmp_path}/*")
    assert status == 0 and s["ranks"] == 2


def test_single_json_file_of_a_later_rank(tmp_path, dp_set, chakra_cli):
    dp_set.write(tmp_path / "job")
    chakra_cli("jsonize", tmp_path / "job.1.et", "-o", tmp_path / "j1.json")
    status, out, err = chakra_cli("convert", tmp_path / "j1.json", "-o", tmp_path / "back")
    assert status == 0, err
    assert (tmp_path / "back.1.et").read_bytes() == (tmp_path / "job.1.et").read_bytes()


def test_output_named_like_a_file(tmp_path, dp_set, chakra_cli):
    dp_set.write(tmp_path / "job")
    status, out, _ = chakra_cli("convert", tmp_path / "job", "-o", tmp_path / "o" / "run.et.gz")
    assert status == 0 and sorted(os.listdir(tmp_path / "o")) == ["run.0.et.gz", "run.1.et.gz"]


def test_output_naming_an_existing_file_or_nothing_is_refused(tmp_path, chakra_cli):
    # ASTRA-sim's microbenchmark (other team's files): "-o DIR/all_reduce.0.et" was read as the
    # prefix DIR/all_reduce.0 and wrote a second set into the input's folder, after which every
    # command on that folder failed ("several trace sets here"); "-o ''" wrote into the working
    # directory
    src = ROOT.parent / "shared/data/public-traces/astrasim/microbenchmarks/all_reduce/8npus_1MB"
    folder = tmp_path / "ar"
    folder.mkdir()
    for f in src.glob("*.et"):
        (folder / f.name).write_bytes(f.read_bytes())
    before = sorted(os.listdir(folder))
    status, _, err = chakra_cli("convert", folder, "-o", folder / "all_reduce.0.et")
    assert status == 2 and err.strip() == (f"chakra convert: error: {folder / 'all_reduce.0.et'}: an existing file: "
                                           "give a directory, or a prefix that names no file (PREFIX.<rank>.et "
                                           "are written)")
    status, _, err = chakra_cli("transform", folder, "scale", "-o", "")
    assert status == 2 and "an empty output path" in err
    assert sorted(os.listdir(folder)) == before and len(before) == 8
    status, s = _stats(chakra_cli, folder)
    assert status == 0 and s["ranks"] == 8


def test_empty_directory(tmp_path, chakra_cli):
    (tmp_path / "empty").mkdir()
    status, err = _stats(chakra_cli, tmp_path / "empty")
    assert status == 2 and "no trace files" in err


def test_cli_refusals_say_what_to_do(tmp_path, dp_set, chakra_cli):
    import warnings

    dp_set.write(tmp_path / "job")
    status, _, err = chakra_cli("plugins", "--options", "scal")
    assert status == 2 and "did you mean 'scale'" in err
    status, _, err = chakra_cli("export", tmp_path / "job", "--to", "et", "-o", tmp_path / "o", "-O", "npus=4")
    assert status == 2 and "unknown option 'npus'" in err and "text" not in err  # .et has no npus
    status, _, err = chakra_cli("export", tmp_path / "job", "--to", "json", "-o", tmp_path / "o",
                                "--system", ROOT / "examples/system/system.yaml", "-O",
                                f"system={ROOT / 'examples/system/two_nodes.yaml'}")
    assert status == 2 and "'system' given twice" in err
    from chakra_core.host._plugins import PluginHost, PluginWarning

    os.environ["CHAKRA_LOAD_PLUGINS"] = "no-such-plugin"
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            PluginHost()
        assert any("CHAKRA_LOAD_PLUGINS names no installed plugin: no-such-plugin" in str(x.message)
                   for x in w if issubclass(x.category, PluginWarning))
    finally:
        del os.environ["CHAKRA_LOAD_PLUGINS"]


def test_json_form_version_is_checked(tmp_path):
    import pytest

    from chakra_core.base._errors import TraceFormatError
    from chakra_core.io._jsonform import read_json

    p = tmp_path / "v.jsonl"
    p.write_text('{"format": "chakra-et-json", "version": 2, "metadata": {}}\n')
    with pytest.raises(TraceFormatError, match="version 2"):
        read_json(p)
    p.write_text('{"format": "chakra-et-json", "version": 1, "metadata": []}\n')
    with pytest.raises(TraceFormatError, match="metadata"):
        read_json(p)


def _files(root, *names):
    for n in names:
        (root / n).parent.mkdir(parents=True, exist_ok=True)
        (root / n).write_bytes(b"x")


def test_expand_paths_file_directory_glob_and_prefix(tmp_path):
    from chakra_core import expand_paths

    _files(tmp_path, "job.0.et", "job.1.et.gz", "job.notes.txt", "other.0.et", "d/a.json", "d/b.txt", "d/sub/c.json")
    et = (".et", ".et.gz")
    assert expand_paths(tmp_path / "job.notes.txt", et) == [str(tmp_path / "job.notes.txt")]  # a file, any name
    assert expand_paths(str(tmp_path / "job"), et) == [str(tmp_path / "job.0.et"), str(tmp_path / "job.1.et.gz")]
    assert expand_paths(str(tmp_path / "*.0.et")) == [str(tmp_path / "job.0.et"), str(tmp_path / "other.0.et")]
    assert expand_paths(tmp_path / "d", (".json",)) == [str(tmp_path / "d/a.json")]  # not recursive
    assert expand_paths([tmp_path / "d", tmp_path / "other"], et) == [str(tmp_path / "other.0.et")]
    assert expand_paths("") == []


def test_expand_paths_required_names_the_argument(tmp_path):
    import pytest

    from chakra_core import TraceFormatError, expand_paths

    _files(tmp_path, "d/a.txt")
    for spec, why in [(tmp_path / "d", "no .et files in this directory"),
                      (tmp_path / "*.et", "no .et files match this pattern"),
                      (tmp_path / "nope", "no such file, directory or prefix of .et files")]:
        with pytest.raises(TraceFormatError, match=why) as e:
            expand_paths(spec, (".et",), required=".et files")
        assert str(spec) in str(e.value)
