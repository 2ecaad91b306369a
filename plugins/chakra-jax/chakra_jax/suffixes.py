"""The file names taken as JAX profiles (detection needs them without loading the profile reader)."""

from __future__ import annotations

__all__ = ["PROFILE_SUFFIXES"]

#: file names taken as profiles.
PROFILE_SUFFIXES = (".xplane.pb", ".trace.json.gz", ".trace.json", "perfetto_trace.json.gz")
