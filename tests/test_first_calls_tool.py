"""tools/first_calls.py: how the processes of one case make its row."""

from _helpers import tool_module

first_calls = tool_module("first_calls")


def test_the_runs_of_a_case_pool_their_new_sizes():
    runs = [dict(op="cholesky", import_s=float(i), first_call_s=0.5 - i / 10,
                 new_pattern_s=[2.0 * (i + 1), 4.0], numpy_first_s=[1.0, 1.0],
                 numpy_best_s=[0.5, 0.5]) for i in range(3)]
    row = first_calls._pooled(runs)
    assert row["runs"] == 3 and row["op"] == "cholesky"  # scalars: the first run's ...
    assert row["import_s"] == 2.0 and row["import_runs_s"] == [0.0, 1.0, 2.0]  # ... but these
    assert row["new_pattern_s"] == [2.0, 4.0, 4.0, 4.0, 6.0, 4.0]
    assert row["numpy_first_s"] == [1.0] * 6
    assert row["ratio_first"] == 4.0  # the median over all six new sizes
    assert row["ratio_best"] == 8.0
    assert row["first_call_s"] == 0.5 and row["first_call_runs_s"] == [0.5, 0.4, 0.3]
    assert runs[0]["new_pattern_s"] == [2.0, 4.0]  # the runs are left as they were
