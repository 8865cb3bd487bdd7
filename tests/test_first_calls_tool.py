"""tools/first_calls.py: how the processes of one case make its row."""

import pytest

from _helpers import tool_module

first_calls = tool_module("first_calls")


def _runs():
    return [
        dict(
            op="cholesky",
            import_s=float(i),
            import_cpu_s=i / 2,
            first_call_s=0.5 - i / 10,
            first_call_cpu_s=0.4 - i / 10,
            steal_s=i / 100,
            iowait_s=i / 1000,
            new_pattern_s=[2.0 * (i + 1), 4.0],
            numpy_first_s=[1.0, 1.0],
            numpy_best_s=[0.5, 0.5],
        )
        for i in range(3)
    ]


def test_the_runs_of_a_case_pool_their_new_sizes():
    runs = _runs()
    row = first_calls._pooled(runs)
    assert row["runs"] == 3 and row["op"] == "cholesky"  # scalars: the first run's ...
    assert row["import_s"] == 2.0 and row["import_runs_s"] == [0.0, 1.0, 2.0]  # ... but these
    assert row["new_pattern_s"] == [2.0, 4.0, 4.0, 4.0, 6.0, 4.0]
    assert row["numpy_first_s"] == [1.0] * 6
    assert row["ratio_first"] == 4.0  # the median over all six new sizes
    assert row["ratio_best"] == 8.0
    assert row["first_call_s"] == 0.5 and row["first_call_runs_s"] == [0.5, 0.4, 0.3]
    assert runs[0]["new_pattern_s"] == [2.0, 4.0]  # the runs are left as they were


def test_the_slowest_import_and_first_call_keep_their_own_cpu_time_and_waits():
    row = first_calls._pooled(_runs())
    assert row["import_cpu_s"] == 1.0  # run 3's: it imported slowest
    assert (row["first_call_cpu_s"], row["steal_s"], row["iowait_s"]) == (0.4, 0.0, 0.0)  # run 1
    assert row["first_call_cpu_runs_s"] == pytest.approx([0.4, 0.3, 0.2])
    assert row["steal_runs_s"] == [0.0, 0.01, 0.02]


def test_a_first_call_over_the_bound_is_reported_with_where_its_time_went():
    runs = _runs()
    runs[1].update(first_call_s=4.1, first_call_cpu_s=0.45, steal_s=3.2, iowait_s=0.1)
    runs[2].update(steal_s=None, iowait_s=None)  # no /proc/stat
    runs[2]["first_call_s"] = 1.5
    lines = first_calls._slow_first_calls(first_calls._pooled(runs))
    assert lines == [
        "  run 2: first call 4.10 s, of it CPU 0.45 s; import 1.00 s, CPU 0.50 s; "
        "the machine's steal 3.20 s, iowait 0.10 s over both",
        "  run 3: first call 1.50 s, of it CPU 0.20 s; import 2.00 s, CPU 1.00 s",
    ]
    assert first_calls._slow_first_calls(first_calls._pooled(_runs())) == []
