"""Hooks are called through pluggy: wrappers (new and old style), tryfirst/trylast and isolation
behave as pluggy documents, on every kind of hook (registration, detection, observers)."""

from __future__ import annotations

import warnings

import pytest

from chakra_core.base._errors import PluginError
from chakra_core.hookspecs import hookimpl
from chakra_core.host import _plugins as P
from chakra_core.pipeline._pipeline import detect_format, run_pipeline


class Noop:
    """A transform implementation (registered by the wrappers below)."""

    kind_label = "transform"


class RegistrationWrappers:
    """A wrapper of each style around the plugin's own registration hooks."""

    def __init__(self) -> None:
        self.seen: list[object] = []

    @hookimpl(specname="chakra_register_transforms")
    def transforms(self, register):
        register("inner_noop", Noop)

    @hookimpl(wrapper=True, specname="chakra_register_transforms")
    def wrap_transforms(self, register):
        result = yield  # the inner implementation has registered by now
        self.seen.append(result)
        register("added_by_wrapper", Noop)
        return result

    @hookimpl(hookwrapper=True)
    def chakra_register_backends(self, register):
        outcome = yield
        self.seen.append(outcome.get_result())


def test_registration_wrappers_see_and_extend_the_plugins_own_registration(chakra_isolated_host, chakra_register):
    plug = RegistrationWrappers()
    info = chakra_register(plug, name="wrappers", distribution="chakra-wrappers")
    assert plug.seen == [[], []]  # pluggy's result lists (registration hooks return None)
    assert info.registered == {"transform": ["inner_noop", "added_by_wrapper"]}  # the wrapper ran after
    assert chakra_isolated_host.registry.entry("transform", "added_by_wrapper").distribution == "chakra-wrappers"


class DetectWrapper:
    """Turns a ``.bin`` answer nobody gives into ``et`` (a new-style wrapper changing the result)."""

    @hookimpl(wrapper=True)
    def chakra_detect_format(self, paths):
        answer = yield
        if answer is None and paths[0].endswith(".bin"):
            return "et"
        return answer


class OldDetectWrapper:
    """An old-style hookwrapper that forces ``json`` for paths named ``force-json``."""

    @hookimpl(hookwrapper=True)
    def chakra_detect_format(self, paths):
        outcome = yield
        if "force-json" in paths[0]:
            outcome.force_result("json")


def test_detect_wrappers_change_the_answer(chakra_isolated_host, chakra_register, tmp_path):
    chakra_register(DetectWrapper(), name="detect-wrapper")
    chakra_register(OldDetectWrapper(), name="old-detect-wrapper")
    assert detect_format([str(tmp_path / "x.bin")]) == "et"
    assert detect_format([str(tmp_path / "force-json.et")]) == "json"
    assert chakra_isolated_host.detect_format([str(tmp_path / "x.txt")]) is None


class Early:
    @hookimpl(tryfirst=True)
    def chakra_detect_format(self, paths):
        return "json"


class Late:
    @hookimpl(trylast=True)
    def chakra_detect_format(self, paths):
        return "et"


def test_tryfirst_and_trylast_order_the_answers(chakra_isolated_host, chakra_register, tmp_path):
    chakra_register(Late(), name="late")
    assert chakra_isolated_host.detect_format([str(tmp_path / "x.unknown")]) == "et"  # the only answer
    chakra_register(Early(), name="early")
    assert chakra_isolated_host.detect_format([str(tmp_path / "x.unknown")]) == "json"


class Broken:
    @hookimpl(tryfirst=True)
    def chakra_detect_format(self, paths):
        raise RuntimeError("detector bug")


def test_a_failing_hook_is_named_and_the_others_still_answer(chakra_isolated_host, chakra_register, tmp_path):
    chakra_register(Late(), name="late")
    chakra_register(Broken(), name="broken", distribution="chakra-broken", version="2.0")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert chakra_isolated_host.detect_format([str(tmp_path / "x.unknown")]) == "et"
    [msg] = [str(x.message) for x in w if issubclass(x.category, P.PluginWarning)]
    assert msg == ("plugin 'broken' (chakra-broken 2.0) failed in chakra_detect_format: "
                   "RuntimeError: detector bug; ignored")
    chakra_isolated_host.strict = True
    with pytest.raises(PluginError, match="plugin 'broken' .* RuntimeError: detector bug"):
        chakra_isolated_host.detect_format([str(tmp_path / "x.unknown")])


class StageWrappers:
    """Wrappers of both styles on the observer hooks, and a plain observer between them."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, object]] = []

    @hookimpl(wrapper=True)
    def chakra_stage_started(self, stage, name, context):
        result = yield
        self.events.append(("started", stage, result))
        return result

    @hookimpl(specname="chakra_stage_started")
    def observe(self, stage, name, context):
        return f"saw {name}"

    @hookimpl(hookwrapper=True)
    def chakra_stage_finished(self, stage, name, context, result, seconds):
        outcome = yield
        self.events.append(("finished", stage, outcome.get_result()))


class BrokenWrapper:
    @hookimpl(wrapper=True)
    def chakra_stage_finished(self, stage, name, context, result, seconds):
        yield
        raise ValueError("wrapper bug")


def test_observer_wrappers_see_each_stage(chakra_isolated_host, chakra_register, dp_set, tmp_path):
    plug = StageWrappers()
    chakra_register(plug, name="stages")
    dp_set.write(tmp_path / "job")
    run_pipeline({"input": {"paths": ["job"]}, "backends": [{"name": "json", "output": "out"}]},
                 base_dir=tmp_path)
    assert plug.events == [("started", "input", ["saw et"]), ("finished", "input", []),
                           ("started", "backend", ["saw json"]), ("finished", "backend", [])]


def test_a_failing_wrapper_is_named(chakra_isolated_host, chakra_register, dp_set, tmp_path):
    chakra_register(BrokenWrapper(), name="bad-wrapper", distribution="chakra-bad", version="1")
    dp_set.write(tmp_path / "job")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        run_pipeline({"input": {"paths": ["job"]}, "backends": [{"name": "json", "output": "out"}]},
                     base_dir=tmp_path)
    msgs = {str(x.message) for x in w if issubclass(x.category, P.PluginWarning)}
    assert msgs == {"plugin 'bad-wrapper' (chakra-bad 1) failed in chakra_stage_finished: "
                    "ValueError: wrapper bug; ignored"}
    assert (tmp_path / "out" / "result.json").exists()
