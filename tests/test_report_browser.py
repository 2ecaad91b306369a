"""The report's HTML page in a real headless browser (Debian's chromium, which .ci/run installs
when missing): it loads without script errors, every image decodes and every section is there.
With CHAKRA_SCREENSHOTS=DIR the screenshots are also copied to DIR (docs/img for docs/report.md)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import chakra_core as chakra

pytest.importorskip("chakra_pytorch")
pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[1]
DDP = ROOT / "plugins/chakra-pytorch/tests/data/ddp"
BROWSER = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         "--disable-dev-shm-usage"]


def browse(*args: str) -> str:
    out = subprocess.run([BROWSER, *FLAGS, *args], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


@pytest.mark.skipif(BROWSER is None, reason="no chromium could be installed on this machine")
def test_report_page_loads_in_a_headless_browser(tmp_path):
    from chakra_core.analysis._html import SECTIONS

    page = tmp_path / "report.html"
    chakra.report(str(DDP), what_if=["compute=2", "comm=2"], output=page)
    text = page.read_text()
    assert "http://" not in text and "https://" not in text  # self-contained: nothing to fetch
    images = text.count("<img ")
    dom = browse("--virtual-time-budget=5000", "--dump-dom", page.as_uri())
    check = re.search(r'data-check="images (\d+)/(\d+) sections (\d+) errors (\d+)"', dom)
    assert check, dom[:2000]
    ok, total, sections, errors = map(int, check.groups())
    assert (ok, total, sections, errors) == (images, images, len(SECTIONS), 0)
    for sid in SECTIONS:
        assert f'id="{sid}"' in dom
    assert "c10d::allreduce_" in dom and "ALL_REDUCE" in dom
    shots = {"report-page.png": page}
    timeline = re.search(r'<section id="timeline">.*?</section>', text, re.S).group(0)
    only = tmp_path / "timeline.html"
    only.write_text(f"<!DOCTYPE html><html><body style='margin:1em'>{timeline}</body></html>")
    shots["report-timeline.png"] = only
    for name, source in shots.items():
        size = "1200,2400" if name == "report-page.png" else "1000,560"
        browse(f"--window-size={size}", f"--screenshot={tmp_path / name}", "--virtual-time-budget=5000",
               source.as_uri())
        png = (tmp_path / name).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000  # a blank page compresses to a few KB
    target = os.environ.get("CHAKRA_SCREENSHOTS")
    if target:
        for name in shots:
            shutil.copyfile(tmp_path / name, Path(target) / name)
