"""The privacy figures of ``chakra compare`` on closed-form inputs and on a recorded set against itself."""

from __future__ import annotations

from pathlib import Path

import chakra_core as chakra
from chakra_core.analysis._privacy import format_privacy, longest_run, privacy

REPO = Path(__file__).resolve().parents[1]


def test_longest_run_closed_form():
    assert longest_run([1, 2, 3, 4], [9, 2, 3, 4, 8]) == 3
    assert longest_run([1, 1, 1], [2, 2]) == 0
    assert longest_run([], [1]) == 0
    assert longest_run([5, 6, 5, 6, 5], [6, 5, 6, 5, 6]) == 4


def test_identical_and_disjoint_sequences():
    a = [[("COMP_NODE", -1, 10), ("COMM_COLL_NODE:ALL_REDUCE", 1024, 300), ("COMP_NODE", -1, 12)]]
    same = privacy(a, a)
    assert same["distance"] == 0.0 and same["structure_distance"] == 0.0
    assert same["aligned"] == 1.0 and same["exact_durations"] == 1.0 and same["exact_sizes"] == 1.0
    assert same["longest_duration_run"] == 3 and same["longest_verbatim_run"] == 3
    other = [[("MEM_LOAD_NODE", 8, 1000), ("MEM_LOAD_NODE", 8, 2000)]]
    apart = privacy(a, other)
    assert apart["distance"] == 1.0 and apart["aligned"] == 0.0 and apart["longest_verbatim_run"] == 0
    assert apart["exact_durations"] is None and apart["exact_sizes"] is None  # no aligned pair: not known


def test_a_set_with_no_sized_node_has_no_share_of_exact_sizes():
    # compare of a set without sizes against itself said "sizes 0.00%" exact, as if none matched
    a = [[("COMP_NODE", -1, 10), ("COMP_NODE", -1, 12)], [("COMP_NODE", -1, 7)]]
    same = privacy(a, a)
    assert same["exact_sizes"] is None and same["exact_durations"] == 1.0
    assert "sizes n/a" in format_privacy(same)[1]
    # ranks without sized pairs do not lower the mean of those with them
    b = [[("COMM_COLL_NODE:ALL_REDUCE", 64, 5)], [("COMP_NODE", -1, 7)]]
    assert privacy(b, b)["exact_sizes"] == 1.0


def test_durations_in_other_buckets_keep_the_structure():
    """Same kinds and sizes, every duration 16 times longer: buckets 6, 8, 9, 10 against 14, 16,
    17, 18 (``floor(2 * log2(d + 1))``), so no token matches but the structure is the same."""
    a = [[("COMP_NODE", -1, d) for d in (10, 20, 30, 40)]]
    b = [[("COMP_NODE", -1, 16 * d) for d in (10, 20, 30, 40)]]
    p = privacy(a, b)
    assert p["structure_distance"] == 0.0 and p["distance"] == 1.0
    assert p["exact_durations"] == 0.0 and p["longest_duration_run"] == 0


def test_compare_reports_privacy_of_a_set_against_itself(tmp_path):
    src = tmp_path / "ddp"
    chakra.convert([str(REPO / "plugins" / "chakra-pytorch" / "tests" / "data" / "ddp")], str(src) + "/")
    nodes = [sum(1 for _ in rt.nodes()) for rt in chakra.open_traceset(str(src))]
    p = chakra.compare(str(src), str(src), simulate=False)["privacy"]
    assert p["ranks_compared"] == 2 and p["distance"] == 0.0
    assert p["longest_verbatim_run"] == max(nodes)
