"""Command-line tools: ``python -m blocksolve info | bench | warm`` and the benchmark cases.

Nothing in the rest of the package imports this subpackage: it sits above the
public API (:mod:`blocksolve.cli.bench` times the public functions side by side
with NumPy, torch, JAX and cuSOLVER; :mod:`blocksolve.cli.workloads` makes the
random inputs the tests and benchmarks share).
"""
