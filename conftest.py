"""What every test session shares: a cache folder of its own.

The core keeps the plugins' entry points, and the emulator its calibration, under
``$XDG_CACHE_HOME/chakra``. The session points ``XDG_CACHE_HOME`` at a temporary folder,
children started by the tests included, so that the tests never read or write the user's caches.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def _own_cache(tmp_path_factory):
    """``XDG_CACHE_HOME`` set to a temporary folder for the whole session."""
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    yield
    mp.undo()
