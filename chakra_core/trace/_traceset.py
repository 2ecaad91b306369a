"""TraceSet: the per-rank Chakra ETs of one job, streamed rank by rank.

A set is opened from a prefix (``prefix.{rank}.et``), a directory, a glob, or a list of files;
ranks are discovered from the names and must be 0..N-1 without gaps.  Process-group membership
travels in each rank's GlobalMetadata as the string attribute ``process_groups`` (a JSON list of
``{"pg_name", "ranks", "pg_desc"}``, the shape of PyTorch's ``## process_group:init ##`` node);
traces from other tools that only have that METADATA node are understood too.
"""

from __future__ import annotations

import glob as _glob
import json
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from chakra_core.base._errors import ConfigError, TraceFormatError
from chakra_core.base._limits import get_limit, limit_message
from chakra_core.base._paths import expand_paths, is_glob
from chakra_core.io._etio import EtReader, EtWriter
from chakra_core.io._publish import (
    commit_files,
    finish_interrupted,
    is_temporary,
    new_directories,
    output_directory,
    publish_files,
)
from chakra_core.io._schema import PG_INIT_NAME, GlobalMetadata, Node, NodeType
from chakra_core.trace._attrs import make_attr

__all__ = [
    "RankTrace",
    "FileRank",
    "MemoryRank",
    "GeneratedRank",
    "TraceSet",
    "open_traceset",
    "with_process_groups",
    "groups_by_rank",
    "process_groups_json",
    "PG_ATTR",
    "publish_set",
]

#: GlobalMetadata attribute that carries the set's process groups.
PG_ATTR = "process_groups"
_ET_SUFFIXES = (".et", ".et.gz")
_RANK_RE = re.compile(r"^(?P<prefix>.*)\.(?P<rank>[0-9]+)\.et(?:\.gz)?$")


class RankTrace(ABC):
    """One rank's ET: its metadata and a re-iterable stream of nodes.

    ``rank_known`` is False for a lone file whose name carries no rank (taken as rank 0);
    ``shares_nodes`` is True when iteration hands out the same Node objects every time (so a
    transform must copy before changing them).  A rank may also offer ``raw()`` (serialized
    node messages) or ``framed()`` (``(bytes, node_count)`` pieces of the ``.et`` body, see
    :func:`chakra_core.frame_nodes`), which :meth:`TraceSet.write` then uses.
    """

    rank: int
    path: str | None = None
    rank_known: bool = True
    shares_nodes: bool = False

    @abstractmethod
    def metadata(self) -> GlobalMetadata:
        """The rank's GlobalMetadata."""

    @abstractmethod
    def batches(self) -> Iterator[Iterable[Node]]:
        """Yield the nodes in batches (fastest way to stream)."""

    def nodes(self) -> Iterator[Node]:
        """Yield every node, in file order."""
        for b in self.batches():
            yield from b

    def editable_nodes(self) -> Iterator[Node]:
        """Yield every node, in file order, as an object the caller may change: a copy where
        the rank hands out the same objects every time (``shares_nodes``), else the node read."""
        if not self.shares_nodes:
            yield from self.nodes()
            return
        for n in self.nodes():
            own = Node()
            own.CopyFrom(n)
            yield own

    def __iter__(self) -> Iterator[Node]:
        return self.nodes()

    @property
    def label(self) -> str:
        """A name for messages: the file path, or ``rank N``."""
        return self.path or f"rank {self.rank}"


class FileRank(RankTrace):
    """A rank backed by an ``.et`` (or ``.et.gz``) file, streamed on each iteration.

    ``file`` is the file read; ``path``, the name messages use, starts as the same.
    """

    def __init__(self, rank: int, path: str | os.PathLike, rank_known: bool = True):
        self.rank = rank
        self.path = str(path)
        self.file = self.path
        self.rank_known = rank_known
        self._reader = EtReader(self.path)

    def metadata(self) -> GlobalMetadata:
        """The file's GlobalMetadata."""
        return self._reader.metadata

    def batches(self) -> Iterator[Iterable[Node]]:
        """Stream the file's nodes in batches."""
        return self._reader.batches()

    def raw(self) -> Iterator[bytes]:
        """Serialized node messages, undecoded."""
        return self._reader.raw()

    def may_contain(self, needle: bytes) -> bool:
        """False when no node message of the file holds the bytes ``needle`` (nothing decoded)."""
        return self._reader.may_contain(needle)


class MemoryRank(RankTrace):
    """A rank held in memory as a list of nodes."""

    shares_nodes = True

    def __init__(self, rank: int, metadata: GlobalMetadata, nodes: Sequence[Node]):
        self.rank = rank
        self._meta = metadata
        self._nodes = nodes

    def metadata(self) -> GlobalMetadata:
        """The rank's GlobalMetadata."""
        return self._meta

    def batches(self) -> Iterator[Iterable[Node]]:
        """All nodes as one batch."""
        yield self._nodes


class GeneratedRank(RankTrace):
    """A rank whose nodes are produced on demand by ``factory()`` (a fresh iterator per call)."""

    def __init__(self, rank: int, metadata: GlobalMetadata, factory: Callable[[], Iterable[Node]],
                 path: str | None = None):
        self.rank = rank
        self._meta = metadata
        self._factory = factory
        self.path = path

    def metadata(self) -> GlobalMetadata:
        """The rank's GlobalMetadata."""
        return self._meta

    def batches(self) -> Iterator[Iterable[Node]]:
        """Produce the nodes in batches of 4096."""
        batch: list[Node] = []
        for n in self._factory():
            batch.append(n)
            if len(batch) >= 4096:
                yield batch
                batch = []
        if batch:
            yield batch


class TraceSet:
    """The Chakra ETs of one job, one :class:`RankTrace` per rank (0..N-1)."""

    def __init__(self, ranks: Mapping[int, RankTrace] | Sequence[RankTrace],
                 process_groups: Mapping[str, Sequence[int]] | None = None, source: str = ""):
        items = list(ranks.values()) if isinstance(ranks, Mapping) else list(ranks)
        self._ranks = {r.rank: r for r in sorted(items, key=lambda r: r.rank)}
        if len(self._ranks) != len(items):
            raise TraceFormatError("two traces claim the same rank", source or None)
        # None = unknown (read from the traces on first use); {} = known to have no groups
        self._pgs = {k: list(v) for k, v in process_groups.items()} if process_groups is not None else None
        self.source = source

    @property
    def ranks(self) -> list[int]:
        """Rank numbers, ascending."""
        return list(self._ranks)

    def __len__(self) -> int:
        return len(self._ranks)

    def __getitem__(self, rank: int) -> RankTrace:
        return self._ranks[rank]

    def __iter__(self) -> Iterator[RankTrace]:
        return iter(self._ranks.values())

    @property
    def process_groups(self) -> dict[str, list[int]]:
        """``{pg_name: [ranks]}`` of the set ("" and "0" stand for all ranks and are not listed)."""
        if self._pgs is None:
            self._pgs = _discover_groups(list(self._ranks.values())) if self._ranks else {}
        return self._pgs

    def group_members(self, pg_name: str | None) -> list[int]:
        """Ranks of process group ``pg_name`` as the traces record them (so that a set of some of
        a run's ranks keeps the run's groups); the set's ranks for None or "", a name the traces
        do not record (the default group "0" included), or a group recorded with no ranks
        (PyTorch's ``"ranks": []`` for a group of every rank)."""
        if pg_name is None or pg_name == "":
            return self.ranks
        return self.process_groups.get(pg_name) or self.ranks

    def map_nodes(self, fn: Callable[[int, Node], Node | None],
                  metadata: Callable[[int, GlobalMetadata], GlobalMetadata] | None = None
                  ) -> TraceSet:
        """A lazily transformed set: ``fn(rank, node)`` returns the new node or None to drop it.

        ``fn`` may change the node it is given (:meth:`RankTrace.editable_nodes`), so the
        source set is never modified.
        """
        def make(rt: RankTrace) -> RankTrace:
            def factory() -> Iterator[Node]:
                for n in rt.editable_nodes():
                    out = fn(rt.rank, n)
                    if out is not None:
                        yield out
            meta = metadata(rt.rank, rt.metadata()) if metadata else rt.metadata()
            return GeneratedRank(rt.rank, meta, factory, rt.path)
        return TraceSet([make(r) for r in self], self._pgs, self.source)

    def write(self, out: str | os.PathLike, compress: bool = False,
              progress: Callable[[int, int], None] | None = None, replace_stale: bool = False) -> list[Path]:
        """Write ``prefix.{rank}.et`` files; ``out`` is a directory (prefix ``trace``) or a prefix.

        Each rank's GlobalMetadata gets the process groups it is a member of (:func:`groups_by_rank`:
        the set's are their union, so a file does not grow with the set); ``progress(done, total)`` is
        called after each rank.  All ranks are written to a temporary directory first and
        published together (docs/formats.md says exactly what a failure or kill leaves).  With
        ``replace_stale``, files of an earlier set at the same prefix that the new one does not
        have (other ranks, the other compression) are removed, so the prefix holds one
        consistent set (leave it off when several processes each write their own ranks); a
        directory output that holds nothing but such a set is then replaced whole, in one
        atomic swap.  Returns the paths written.
        """
        def write_all(stage: Path, name: str, suffix: str) -> list[str]:
            return self.write_ranks(stage, self.ranks, name, suffix, progress)

        return publish_set(out, write_all, compress, replace_stale)

    def write_ranks(self, directory: str | os.PathLike, ranks: Sequence[int], name: str = "trace",
                    suffix: str = ".et", progress: Callable[[int, int], None] | None = None) -> list[str]:
        """Write the given ranks as ``directory/name.{rank}{suffix}`` (``suffix`` ``.et`` or
        ``.et.gz``), byte for byte as :meth:`write` writes them; returns the file names.  A rank
        with ``framed()`` (yielding ``(bytes, node_count)`` pieces of an ``.et`` body) is written
        from those pieces, one with ``raw()`` from its serialized nodes."""
        own = groups_by_rank(_listed(self.process_groups))
        names = []
        for i, rank in enumerate(ranks):
            rt = self._ranks[rank]
            names.append(f"{name}.{rank}{suffix}")
            meta = with_process_groups(rt.metadata(), own(rank))
            with EtWriter(Path(directory) / names[-1], meta) as w:
                raw = getattr(rt, "raw", None)
                framed = getattr(rt, "framed", None)
                if framed is not None:
                    for data, count in framed():
                        w.write_framed(data, count)
                elif raw is not None:
                    for data in raw():
                        w.write_raw(data)
                else:
                    for b in rt.batches():
                        w.write_many(b)
            if progress:
                progress(i + 1, len(ranks))
        return names


def publish_set(out: str | os.PathLike, write: Callable[[Path, str, str], list[str]], compress: bool = False,
                replace_stale: bool = False) -> list[Path]:
    """Publish a set that ``write(stage, name, suffix)`` writes into the directory ``stage`` as
    ``name.{rank}{suffix}`` files (returning their names), at ``out`` as :meth:`TraceSet.write`
    does; returns the paths, by rank."""
    as_dir = os.path.isdir(out) or str(out).endswith(("/", os.sep))
    with new_directories(Path(out) if as_dir else Path(out).parent):
        return _publish_set(out, write, compress, replace_stale, as_dir)


def _publish_set(out: str | os.PathLike, write: Callable[[Path, str, str], list[str]], compress: bool,
                 replace_stale: bool, as_dir: bool) -> list[Path]:
    prefix = _out_prefix(out)
    for ext in (".et.gz", ".et"):  # "out/job.et.gz" means prefix "out/job" (and gzip)
        if prefix.name.endswith(ext) and len(prefix.name) > len(ext):
            prefix = prefix.with_name(prefix.name[: -len(ext)])
            compress = compress or ext == ".et.gz"
            break
    suffix = ".et.gz" if compress else ".et"
    if as_dir and replace_stale and _only_set(prefix):
        with output_directory(prefix.parent, marker=False) as stage:
            names = write(stage, prefix.name, suffix)
    else:
        with publish_files(prefix) as stage:
            names = write(stage, prefix.name, suffix)
            stale = _stale_names(prefix, set(names)) if replace_stale else []
            commit_files(stage, names, stale)
    return sorted((prefix.parent / n for n in names), key=lambda p: _rank_of(str(p)) or ("", 0))


def _only_set(prefix: Path) -> bool:
    """True when the directory of ``prefix`` holds nothing but files of the set at ``prefix``
    and chakra's own files (so that replacing the directory whole loses nothing else)."""
    with os.scandir(prefix.parent) as it:
        return all(is_temporary(e.name) or (e.is_file() and _of_set(e.name, prefix))
                   for e in it)


def _of_set(name: str, prefix: Path) -> bool:
    r = _rank_of(name)
    return r is not None and r[0] == prefix.name


def _stale_names(prefix: Path, keep: set[str]) -> list[str]:
    """Files of an earlier set at ``prefix`` (other ranks or the other compression)."""
    out = []
    for p in prefix.parent.glob(_glob.escape(prefix.name) + ".*.et*"):
        if _of_set(p.name, prefix) and p.name not in keep and p.is_file():
            out.append(p.name)
    return out


def _out_prefix(out: str | os.PathLike) -> Path:
    """The prefix of the set to write at ``out`` (a directory: ``DIR/trace``; made as needed);
    a ConfigError for an empty path or one naming an existing file (read as a prefix, it wrote
    a second set beside that file, as ``NAME.0.et`` and on)."""
    if not str(out):
        raise ConfigError("an empty output path: give a directory or a prefix")
    p = Path(out)
    if p.is_file():
        raise ConfigError("an existing file: give a directory, or a prefix that names no file (PREFIX.<rank>.et "
                          "are written)", str(out))
    if p.is_dir() or str(out).endswith(("/", os.sep)):
        p.mkdir(parents=True, exist_ok=True)
        return p / "trace"
    p.parent.mkdir(parents=True, exist_ok=True)
    return p


def with_process_groups(meta: GlobalMetadata, pgs: Mapping[str, Sequence[int]],
                        text: str | None = None) -> GlobalMetadata:
    """A copy of ``meta`` whose ``process_groups`` attribute lists ``pgs`` (when any is left:
    groups "" and "0", all ranks on a collective, are not listed, as converters leave PyTorch's
    default group out); ``text``, when given, is ``process_groups_json`` of those already made
    (for many ranks)."""
    pgs = _listed(pgs)
    out = GlobalMetadata()
    out.CopyFrom(meta)
    keep = [a for a in out.attr if a.name != PG_ATTR]
    if len(keep) != len(out.attr) or pgs:
        del out.attr[:]
        out.attr.extend(keep)
        if pgs:
            out.attr.append(make_attr(PG_ATTR, text if text is not None else process_groups_json(pgs)))
    return out


def groups_by_rank(pgs: Mapping[str, Sequence[int]]) -> Callable[[int], dict[str, Sequence[int]]]:
    """``own(rank)``: the groups of ``pgs`` that list ``rank`` or list no rank (PyTorch's
    ``"ranks": []``, a group of every rank), in the order of :func:`group_order`; what each rank
    of a set written carries, so that a file's size does not grow with the number of ranks."""
    names: dict[int, list[str]] = {}
    everyone = []
    for name in sorted(pgs, key=group_order):
        if not pgs[name]:
            everyone.append(name)
        for r in pgs[name]:
            names.setdefault(r, []).append(name)

    def own(rank: int) -> dict[str, Sequence[int]]:
        mine = names.get(rank, [])
        return {n: pgs[n] for n in (sorted(mine + everyone, key=group_order) if everyone else mine)}
    return own


def group_order(name: str) -> tuple[int, int, str]:
    """The order groups are listed in: decimal names by their number, then the others by name."""
    return (0, int(name), "") if name.isdigit() and len(name) < 19 else (1, 0, name)


def _listed(pgs: Mapping[str, Sequence[int]]) -> Mapping[str, Sequence[int]]:
    """``pgs`` without groups "" and "0" (all ranks)."""
    return pgs if not ("" in pgs or "0" in pgs) else {k: v for k, v in pgs.items() if k not in ("", "0")}


def process_groups_json(groups: Mapping[str, Sequence[int]], descriptions: Mapping[str, str] | None = None) -> str:
    """``groups`` (``{pg_name: ranks}``) as the JSON list traces carry them in.

    ``[{"pg_name": "1", "ranks": [0, 1]}, ...]``, with ``"pg_desc"`` for the groups that
    ``descriptions`` names: the text of our ``process_groups`` metadata attribute and of
    PyTorch's ``## process_group:init ##`` node.
    """
    desc = descriptions or {}
    items = [{"pg_name": k, "ranks": list(v), **({"pg_desc": desc[k]} if k in desc else {})}
             for k, v in groups.items()]
    return json.dumps(items, separators=(",", ":"))


def check_group_ranks(name: str, ranks: Sequence[int], nranks: int, where: str | None = None) -> None:
    """Refuse (ConfigError naming ``where``, the file that defines the group, when given) group
    ``name`` when its ``ranks`` (ascending) name one outside 0 to ``nranks - 1`` or one twice:
    what a backend checks before it runs a set whose validation was skipped (validation reports
    both as ``pg-bad-rank``)."""
    down = next((a for a, b in zip(ranks, ranks[1:]) if a > b), None)
    if down is not None:
        raise ConfigError(f"group {name!r}: its ranks are not in ascending order (rank {down} before a lower one)",
                          where)
    if ranks and not 0 <= ranks[0] <= ranks[-1] < nranks:
        bad = ranks[0] if ranks[0] < 0 else ranks[-1]
        more = (f" (the set looks like part of a job of {bad + 1} or more ranks: give every rank's file)"
                if bad >= nranks else "")
        raise ConfigError(f"group {name!r} names rank {bad} but there are ranks 0 to {nranks - 1}{more}", where)
    twice = next((a for a, b in zip(ranks, ranks[1:]) if a == b), None)
    if twice is not None:
        raise ConfigError(f"group {name!r} lists rank {twice} twice", where)


def parse_groups_json(text: str, where: str) -> dict[str, list[int]]:
    """Parse a JSON list of ``{pg_name, ranks}`` (our attribute or PyTorch's pg-init node)."""
    try:
        items = json.loads(text)
    except json.JSONDecodeError as e:
        raise TraceFormatError(f"bad process-group description: not JSON (line {e.lineno}, column {e.colno}: "
                               f"{e.msg})", where) from None
    except RecursionError:
        raise TraceFormatError("bad process-group description: nested too deeply", where) from None
    try:
        return {str(d["pg_name"]): [int(r) for r in d["ranks"]] for d in items}
    except (ValueError, TypeError, KeyError, OverflowError, RecursionError):
        raise TraceFormatError('bad process-group description: not a list of {"pg_name": NAME, "ranks": '
                               "[whole numbers]} objects", where) from None


def _discover_groups(ranks: list[RankTrace]) -> dict[str, list[int]]:
    """The groups of a set: the union of its ranks' ``process_groups`` attributes (each lists the
    rank's own groups, or, written before, every group), else of the groups of its ranks'
    ``## process_group:init ##`` nodes (PyTorch's, in every rank; a rank without one adds
    none); a group that two ranks list with other members is a TraceFormatError naming both."""
    found: dict[str, list[int]] = {}
    seen: dict[str, str] = {}  # group -> the label of the first rank that lists it
    texts: set[str] = set()
    for rt in ranks:
        text = listed_groups_text(rt.metadata())
        if text is None or text in texts:
            continue
        texts.add(text)
        _add_groups(found, seen, parse_groups_json(text, rt.label), rt.label)
    if not texts:
        for rt in ranks:
            _add_groups(found, seen, _pg_init_of(rt), rt.label)
    return found


def _add_groups(found: dict[str, list[int]], seen: dict[str, str], groups: dict[str, list[int]], label: str) -> None:
    """Add the ``groups`` rank ``label`` lists to ``found`` (``seen``: the rank that listed each
    first); a group listed before with other members is a TraceFormatError naming both."""
    for name, members in groups.items():
        if name not in found:
            found[name], seen[name] = members, label
        elif found[name] != members:
            raise TraceFormatError(f"process group {name!r} has the ranks {members} here but "
                                   f"{found[name]} in {seen[name]}", label)


def listed_groups_text(meta: GlobalMetadata) -> str | None:
    """The text of a rank's ``process_groups`` attribute, None without one."""
    for a in meta.attr:
        if a.name == PG_ATTR and a.WhichOneof("value") == "string_val":
            return a.string_val
    return None


def _pg_init_of(rt: RankTrace) -> dict[str, list[int]]:
    """Groups of traces of other tools: the METADATA node named "## process_group:init ##"."""
    raw = getattr(rt, "raw", None)
    key = PG_INIT_NAME.encode()
    if isinstance(rt, FileRank) and not rt.may_contain(key):  # a run of frames at a time
        return {}
    if raw is not None:  # look for the name in the undecoded bytes first (cheap)
        nodes: Iterable[Node] = (Node.FromString(data) for data in raw() if key in data)
    else:
        nodes = rt.nodes()
    for n in nodes:
        if n.type == NodeType.METADATA_NODE and n.name == PG_INIT_NAME:
            return _pg_init_groups(n, rt.label)
    return {}


def _pg_init_groups(node: Node, where: str) -> dict[str, list[int]]:
    """The groups of a ``## process_group:init ##`` node."""
    text = node.inputs.values
    # PyTorch writes a Python-literal list around the JSON string: "['[...]']"-like
    return parse_groups_json(text if text.startswith("[{") else text[2:-2], where)


def _rank_of(path: str) -> tuple[str, int] | None:
    """``(prefix, rank)`` of a ``PREFIX.RANK.et`` name; a rank past the ``rank`` limit is an error."""
    m = _RANK_RE.match(path)
    if not m:
        return None
    digits = m.group("rank")
    rank = int(digits[:19])  # more digits than any limit allows: shown as written, never converted
    if len(digits) > 18 or rank > get_limit("rank"):
        raise TraceFormatError(limit_message("rank", rank, "rank", shown=digits), path)
    return m.group("prefix"), rank


def _from_files(files: list[str], where: str) -> TraceSet:
    ranked = [_rank_of(f) for f in files]
    if len(files) == 1 and ranked[0] is None:
        return TraceSet([FileRank(0, files[0], rank_known=False)], source=files[0])
    if any(r is None for r in ranked):
        bad = files[ranked.index(None)]
        raise TraceFormatError("cannot tell the rank from the name (want PREFIX.RANK.et)", bad)
    prefixes = sorted({r[0] for r in ranked if r})
    if len(prefixes) > 1:
        raise TraceFormatError(f"several trace sets here ({', '.join(prefixes)}); name one prefix", where)
    by_rank: dict[int, str] = {}
    for f, r in zip(files, ranked):
        assert r is not None
        if r[1] in by_rank:
            raise TraceFormatError(f"rank {r[1]} appears twice ({by_rank[r[1]]} and {f})", where)
        by_rank[r[1]] = f
    if len(files) > 1 or len(by_rank) > 1:
        missing = sorted(set(range(max(by_rank) + 1)) - set(by_rank))
        if missing:
            shown = ", ".join(map(str, missing[:10])) + (" ..." if len(missing) > 10 else "")
            raise TraceFormatError(f"missing ranks {shown} (found {len(by_rank)} of {max(by_rank) + 1})", where)
    return TraceSet([FileRank(r, f) for r, f in by_rank.items()], source=where)


def _refuse_listed(specs: list[str]) -> None:
    """Refuse a list of several paths that names one twice or holds a directory: a list names
    the files of one set."""
    seen: set[str] = set()
    for spec in specs:
        if spec in seen:
            raise TraceFormatError("named twice in the list of paths", spec)
        seen.add(spec)
        if os.path.isdir(spec):
            raise TraceFormatError("a directory in a list of several paths: give the directory alone, or the "
                                   "files of one set", spec)


def open_traceset(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> TraceSet:
    """Open a set from a file, a directory, a glob, a ``prefix`` or a list of files."""
    specs = [os.fspath(paths)] if isinstance(paths, (str, os.PathLike)) else [os.fspath(p) for p in paths]
    if not specs:
        raise TraceFormatError("no paths given: name a file, a directory, a glob or a prefix", None)
    if len(specs) > 1:
        _refuse_listed(specs)
        return _from_files(specs, specs[0])
    spec = specs[0]
    finish_interrupted(Path(spec, "x") if os.path.isdir(spec) else Path(spec), any_name=os.path.isdir(spec))
    files = expand_paths(spec, _ET_SUFFIXES, required=".et files")
    if not (os.path.isdir(spec) or os.path.isfile(spec) or is_glob(spec)):  # a prefix: PREFIX.RANK.et only
        files = [f for f in files if (r := _rank_of(f)) and r[0] == spec]
        if not files:
            raise TraceFormatError("no such file, directory or trace-set prefix", spec)
    return _from_files(files, spec)
