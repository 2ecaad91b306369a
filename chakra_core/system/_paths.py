"""Relative paths named inside a configuration file, resolved as ASTRA-sim resolves them."""

from __future__ import annotations

from pathlib import Path

from chakra_core.base._errors import ConfigError

__all__ = ["resolve_prefix"]


def resolve_prefix(value: str, suffix: str, where: str, location: str, what: str) -> str:
    """The path prefix ``value`` (a file is ``value + suffix``) as a path that exists.

    ASTRA-sim opens the paths in its files from its working directory, so a relative ``value``
    is tried there first, then from the folder of the file ``where`` that names it (not for
    ``<mapping>``); an absolute one as it is.  Returns the working-directory form as an
    absolute path, the other as joined to the file's folder.  Raises ConfigError (at
    ``location`` of ``where``) naming every place tried; ``what`` says what the file is.
    """
    given = Path(value)
    tried = [given.absolute()] if given.is_absolute() else [Path.cwd() / given]
    if not given.is_absolute() and where != "<mapping>":
        tried.append(Path(where).parent / given)
    for prefix in tried:
        if Path(f"{prefix}{suffix}").is_file():
            return str(prefix)
    if len(tried) == 1:
        places = f"no file {tried[0]}{suffix}"
    else:
        places = (f"no file {value}{suffix} from the working directory ({tried[0]}{suffix}) nor from "
                  f"the folder of {Path(where).name} ({tried[1]}{suffix})")
    raise ConfigError(f"{places}: {what}", where, location)
