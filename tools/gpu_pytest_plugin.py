"""pytest plugin of the GPU check's test step (``-p gpu_pytest_plugin``, tools/ on the path).

* Every verdict is appended to ``$GPU_CHECK_TEST_LOG`` (JSON lines) the moment
  the controller knows it, so a step cut short by its time limit keeps what it
  reached; the first line gives the number of tests selected.
* A test that fails with a CUDA error ends its xdist worker right after its
  report is sent: an illegal address is sticky, and would fail every later test
  of that process.  xdist reports the test as crashed and starts a fresh
  worker for the rest.  Without xdist the process cannot be replaced: later
  verdicts are marked ``after_cuda_error``.
* A skipped test fails the run: on the GPU machine every selected ``gpu`` test
  must run (a missing piece of the CUDA stack skips them all, quietly).
"""

from __future__ import annotations

import json
import os
import re
import time

import pytest

CUDA_ERROR = re.compile(
    r"CUDA_ERROR_[A-Z_]+|cudaError[A-Za-z]+|CUDA(?:Runtime|Driver)Error|"
    r"illegal memory access|unspecified launch failure|misaligned address|"
    r"illegal instruction|device-side assert"
)


def cuda_error(report):
    """The CUDA error a failed report shows, or None."""
    if not report.failed:
        return None
    match = CUDA_ERROR.search(report.longreprtext or "")
    return match.group(0) if match else None


class GpuCheckReporter:
    """The plugin's state in one pytest process (the controller, a worker, or both)."""

    def __init__(self, config):
        self.config = config
        self.path = os.environ.get("GPU_CHECK_TEST_LOG")
        self.worker = getattr(config, "workerinput", None)
        self.skipped = 0
        self.collected_logged = False
        self.poisoned_by = None

    def _append(self, record):
        if self.path:
            with open(self.path, "a", encoding="utf-8") as log:
                log.write(json.dumps({**record, "time": round(time.time(), 3)}) + "\n")

    def _collected(self, count):
        if not self.collected_logged:
            self.collected_logged = True
            self._append({"collected": count})

    def pytest_collection_finish(self, session):
        if self.worker is None and not self.config.pluginmanager.hasplugin("dsession"):
            self._collected(len(session.items))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        self._collected(len(ids))

    @pytest.hookimpl(trylast=True)  # after xdist's worker has sent the report on
    def pytest_runtest_logreport(self, report):
        error = cuda_error(report)
        if self.worker is not None:
            if error:
                self._append(
                    {"test": report.nodeid, "cuda_error": error, "worker": self.worker["workerid"]}
                )
                os._exit(3)  # a fresh worker takes the rest
            return
        if report.when != "call" and report.passed:
            return
        record = {
            "test": report.nodeid,
            "when": report.when,
            "outcome": report.outcome,
            "seconds": round(report.duration, 3),
            "message": report.longreprtext[-2000:] if not report.passed else None,
        }
        if self.poisoned_by:
            record["after_cuda_error"] = self.poisoned_by
        self._append(record)
        if report.skipped:
            self.skipped += 1
        if error and not self.config.pluginmanager.hasplugin("dsession"):
            self.poisoned_by = report.nodeid

    def pytest_sessionfinish(self, session):
        if self.worker is not None:
            return
        self._append({"finished": True, "skipped": self.skipped})
        if self.skipped:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter):
        if self.worker is None and self.skipped:
            terminalreporter.write_line(
                f"GPU CHECK: {self.skipped} test(s) skipped; every selected gpu test must run",
                red=True,
            )


def pytest_configure(config):
    config.pluginmanager.register(GpuCheckReporter(config), "gpu_check_reporter")
