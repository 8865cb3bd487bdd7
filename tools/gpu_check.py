"""The environment side of the one-call GPU check (``tools/gpu-check.sh``).

The CUDA stack a GPU machine needs beside its own packages travels as wheels
(``.whl/`` in the repository root, carried by the device tool).  Which ones,
and at which versions, follows from ``blocksolve/cuda/constraints.txt`` (the
versions of the last full verification) and :data:`CARRIED`.  Before any
kernel runs, :func:`preflight` checks that the machine really offers what the
GPU tests need -- a missing NVVM, say, makes ``numba.cuda.is_available()``
false, every ``gpu`` test skip and pytest exit 0 -- and says so loudly.

Commands (run from the repository root)::

    python tools/gpu_check.py download-command [DIR]   # the pip command for the wheels
    python tools/gpu_check.py fetch-wheels [DIR]       # run it (replaces DIR/*.whl)
    python tools/gpu_check.py wheels [DIR]             # cp312 wheels of the constraints?
    python tools/gpu_check.py preflight OUT.json       # on the GPU machine; exit 1: stop
    python tools/gpu_check.py preflight-selftest       # the checks, against fake machines
    python tools/gpu_check.py summary WORK OUT         # OUT/summary.txt; exit 1: a failure
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib.util
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# What the device tool carries with the working tree (its limit: 64 MiB in all).
CARRY_LIMIT = 64 << 20

# The wheels carried to the GPU machine, at the constraints' versions (about 41 MB).  The
# machine has none of the first three; the others replace its own versions by the verified
# ones.  Left out, as too large to carry: cupy-cuda13x, numba and llvmlite (the machine
# has them), nvidia-cuda-nvrtc, nvidia-nvjitlink, nvidia-cuda-runtime (it has wheels of
# its own) and nvidia-nvvm (75 MB; NVVM comes from the machine's CUDA toolkit through
# CUDA_HOME): their versions are compared with the verified ones and reported.
CARRIED = (
    "nvmath-python",
    "nvidia-libmathdx-cu13",
    "array-api-compat",
    "numba-cuda",
    "cuda-core",
    "cuda-bindings",
    "cuda-pathfinder",
    "nvidia-cuda-cccl",
)

# The GPU machine's Python and platform (pip download's view of it).
PYTHON_VERSION = "3.12"
PLATFORMS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_24_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
)

# The lowest CUDA driver that runs what blocksolve builds (cupy-cuda13x, CUDA 13 cubins).
MIN_DRIVER = 13000

# Shared libraries the code generation loads, by cuda.pathfinder name, and the wheel whose
# version the constraints record for each (libmathdx's version is a carried wheel's).
LIBRARIES = {"nvvm": "nvidia-nvvm", "nvrtc": "nvidia-cuda-nvrtc", "nvJitLink": "nvidia-nvjitlink"}
LOADED = (*LIBRARIES, "mathdx")


def constraints():
    """``{distribution: version}`` of ``blocksolve/cuda/constraints.txt``.

    Read by ``blocksolve/cli/constraints.py``'s own parser, loaded on its own: it needs
    only the standard library, and the package may not import yet (that is one
    of the things :func:`preflight` reports).
    """
    spec = importlib.util.spec_from_file_location(
        "_blocksolve_info", ROOT / "blocksolve/cli/constraints.py"
    )
    info = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(info)
    return info.read_constraints()[0]


def carried():
    """``[(distribution, version)]`` of the wheels to carry."""
    pinned = constraints()
    missing = [name for name in CARRIED if name not in pinned]
    if missing:
        raise SystemExit(f"the constraints file pins no version of {missing}")
    return [(name, pinned[name]) for name in CARRIED]


# --- wheels -----------------------------------------------------------------------------


def download_command(directory=".whl"):
    """The ``pip download`` command line that fetches the carried wheels into ``directory``."""
    command = ["python3", "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    command += ["--python-version", PYTHON_VERSION, "--implementation", "cp"]
    for platform in PLATFORMS:
        command += ["--platform", platform]
    command += ["-d", str(directory)]
    return command + [f"{name}=={version}" for name, version in carried()]


def fetch_wheels(directory=".whl"):
    """Replace the wheels in ``directory`` by the carried ones (two versions of one
    package would stop the install on the GPU machine)."""
    directory = Path(directory)
    directory.mkdir(exist_ok=True)
    for old in directory.glob("*.whl"):
        old.unlink()
    command = download_command(directory)
    command[0] = sys.executable
    return subprocess.run(command).returncode


def _supported_tags():
    """The wheel tags CPython 3.12 on Linux x86-64 (glibc up to 2.39) installs."""
    from packaging import tags

    platforms = [f"manylinux_2_{minor}_x86_64" for minor in range(39, 4, -1)]
    platforms += ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]
    return {
        *tags.cpython_tags((3, 12), abis=["cp312"], platforms=platforms),
        *tags.compatible_tags((3, 12), interpreter="cp312", platforms=platforms),
    }


def _metadata(path):
    """``(Name, Version, Requires-Python)`` from a wheel's METADATA, or None."""
    try:
        with zipfile.ZipFile(path) as wheel:
            member = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
            text = wheel.read(member).decode("utf-8", "replace")
    except (zipfile.BadZipFile, StopIteration, OSError):
        return None
    fields = dict(re.findall(r"^(Name|Version|Requires-Python): *(.*?)\s*$", text, re.M))
    return fields.get("Name"), fields.get("Version"), fields.get("Requires-Python", "")


def _tree_bytes():
    """Bytes of the working tree the device tool sends (tracked and untracked-not-ignored)."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    paths = (ROOT / p.decode() for p in listed.split(b"\0") if p)
    return sum(p.stat().st_size for p in paths if p.is_file() and not p.is_symlink())


def check_wheels(directory=".whl"):
    """What is wrong with the wheels in ``directory`` for the GPU machine (empty: nothing).

    Each carried distribution has exactly one wheel, of the constraints' version,
    installable on CPython 3.12 x86-64; no other wheel is there; the wheels and the
    working tree fit what the device tool carries.
    """
    from packaging.specifiers import SpecifierSet
    from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

    directory = Path(directory)
    wheels = sorted(directory.glob("*.whl")) if directory.is_dir() else []
    if not wheels:
        return [f"no wheels in {directory}/: run `tools/gpu-check.sh --fetch-wheels`"]
    problems, found, supported = [], {}, _supported_tags()
    for path in wheels:
        meta = _metadata(path)
        try:
            _, _, _, wheel_tags = parse_wheel_filename(path.name)
        except InvalidWheelFilename:
            meta = None
        if meta is None:
            problems.append(f"{path.name}: not a wheel")
            continue
        name, version, requires = meta
        found.setdefault(canonicalize_name(name), []).append((version, path.name))
        if not wheel_tags & supported:
            problems.append(f"{path.name}: not installable on CPython 3.12, Linux x86-64")
        if PYTHON_VERSION + ".0" not in SpecifierSet(requires):
            problems.append(f"{path.name}: Requires-Python {requires} excludes 3.12")
    for name, version in carried():
        have = found.pop(canonicalize_name(name), [])
        if not have:
            problems.append(f"{name}=={version}: no wheel")
        elif len(have) > 1:
            problems.append(f"{name}: {len(have)} wheels ({[f for _, f in have]}); keep one")
        elif have[0][0] != version:
            problems.append(f"{name}: wheel of {have[0][0]}, the constraints pin {version}")
    problems += [f"{files[0][1]}: not a carried wheel (CARRIED)" for files in found.values()]
    carried_bytes = sum(p.stat().st_size for p in wheels)
    tree = _tree_bytes()
    if tree is not None and carried_bytes + tree > CARRY_LIMIT:
        problems.append(
            f"wheels {carried_bytes / 2**20:.1f} MiB + working tree {tree / 2**20:.1f} MiB: "
            f"more than the {CARRY_LIMIT >> 20} MiB the device tool carries"
        )
    return problems


# --- preflight ----------------------------------------------------------------------------


@dataclasses.dataclass
class Check:
    """One preflight finding; a failed ``blocking`` one stops the GPU check."""

    name: str
    ok: bool
    found: object
    expected: object = None
    blocking: bool = True
    note: str = ""


class Machine:
    """What the preflight asks of the machine it runs on (:class:`FakeMachine` in the
    self-test).  Every answer is plain data; nothing here launches a kernel."""

    def gpus(self):
        fields = "name,driver_version,memory.total,compute_cap"
        try:
            out = subprocess.run(
                ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=30,
            ).stdout
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"nvidia-smi: {error}"
        keys = fields.split(",")
        return [
            dict(zip(keys, (x.strip() for x in line.split(","))))
            for line in out.splitlines()
            if line.count(",") == len(keys) - 1
        ]

    def driver_version(self):
        try:
            import cupy

            return int(cupy.cuda.runtime.driverGetVersion())
        except Exception as error:  # noqa: BLE001 - reported as the finding
            return f"{type(error).__name__}: {error}"

    def distribution(self, name):
        from importlib import metadata

        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    def import_error(self, module):
        try:
            __import__(module)
            return None
        except Exception as error:  # noqa: BLE001 - reported as the finding
            return f"{type(error).__name__}: {error}"

    def library(self, name):
        """``(path, found_via)`` of a CUDA library as cuda.pathfinder loads it, or an error."""
        try:
            from cuda.pathfinder import load_nvidia_dynamic_lib

            loaded = load_nvidia_dynamic_lib(name)
            return [loaded.abs_path, loaded.found_via]
        except Exception as error:  # noqa: BLE001 - reported as the finding
            return f"{type(error).__name__}: {error}"

    def library_version(self, name, path):
        """``'major.minor'`` of the library loaded from ``path``, or None.

        NVRTC and nvJitLink report their own; NVVM reports only its IR version, so
        its wheel's version is taken, or the ``cuda_nvcc`` entry of the toolkit's
        ``version.json`` where it came from a toolkit.
        """
        try:
            if name == "nvrtc":
                from cuda.bindings import nvrtc

                _, major, minor = nvrtc.nvrtcVersion()
                return f"{major}.{minor}"
            if name == "nvJitLink":
                from cuda.bindings import nvjitlink

                return ".".join(map(str, nvjitlink.version()[:2]))
            if "site-packages" in path or "dist-packages" in path:
                version = self.distribution("nvidia-nvvm")
            else:
                toolkit = next(p for p in Path(path).parents if (p / "version.json").exists())
                described = json.loads((toolkit / "version.json").read_text())
                version = described["cuda_nvcc"]["version"]
            return ".".join(version.split(".")[:2])
        except Exception:  # noqa: BLE001 - unknown is reported as a deviation
            return None

    def numba_cuda(self):
        """Where ``numba.cuda`` comes from and whether it sees a GPU (the tests' condition)."""
        try:
            import numba
            import numba_cuda
            from numba import cuda

            return {
                "version": getattr(numba_cuda, "__version__", None),
                "redirected": Path(numba_cuda.__file__).parent in Path(cuda.__file__).parents,
                "is_available": bool(cuda.is_available()),
                "simulator": bool(numba.config.ENABLE_CUDASIM),
            }
        except Exception as error:  # noqa: BLE001 - reported as the finding
            return f"{type(error).__name__}: {error}"

    def cupy_sees_a_gpu(self):
        try:
            import cupy

            return bool(cupy.cuda.is_available())
        except Exception:  # noqa: BLE001 - the import check says why
            return False

    def cuda_home(self):
        return os.environ.get("CUDA_PATH") or os.environ.get("CUDA_HOME")


def _version_check(name, found, verified, blocking):
    return Check(name, found == verified, found, verified, blocking)


def preflight(machine, pinned):
    """Every check, in order: a list of :class:`Check`.

    Blocking: a GPU and a CUDA 13 driver; NVVM, NVRTC and nvJitLink loadable; the
    carried packages at the constraints' versions; the imports the tests need;
    numba.cuda from numba-cuda and seeing the GPU -- the condition without which
    ``conftest.py`` skips every ``gpu`` test.  Not blocking: the versions of what is
    not carried, where they differ from the verified ones (reported beside the results).
    """
    checks = []
    gpus = machine.gpus()
    checks.append(Check("GPU", isinstance(gpus, list) and len(gpus) > 0, gpus, "an NVIDIA GPU"))
    driver = machine.driver_version()
    checks.append(
        Check(
            "CUDA driver",
            isinstance(driver, int) and driver >= MIN_DRIVER,
            driver,
            f">= {MIN_DRIVER}",
        )
    )
    checks.append(
        Check(
            "CUDA_HOME",
            bool(machine.cuda_home()),
            machine.cuda_home(),
            "the machine's CUDA toolkit",
            blocking=False,
            note="where NVVM comes from when no nvidia-nvvm wheel is installed",
        )
    )
    versions = {}
    for library in LOADED:
        loaded = machine.library(library)
        checks.append(Check(library, isinstance(loaded, list), loaded, "loadable"))
        if library not in LIBRARIES or not isinstance(loaded, list):
            continue
        version = versions[library] = machine.library_version(library, loaded[0])
        wheel = LIBRARIES[library]
        verified = ".".join(pinned[wheel].split(".")[:2]) if wheel in pinned else None
        checks.append(
            Check(
                f"{library} version",
                version == verified,
                version,
                verified,
                blocking=False,
                note=f"{wheel} {machine.distribution(wheel) or 'not installed'} "
                f"(verified {pinned.get(wheel)})",
            )
        )
    if len(versions) == len(LIBRARIES) and all(versions.values()):
        # nvJitLink links the LTO-IR of NVVM (numba-cuda) and of NVRTC (libmathdx): it must be
        # at least as new as either.
        order = {k: tuple(map(int, v.split("."))) for k, v in versions.items()}
        checks.append(
            Check(
                "nvJitLink reads the LTO-IR",
                order["nvJitLink"] >= max(order["nvvm"], order["nvrtc"]),
                versions,
                "nvJitLink >= NVVM, NVRTC",
            )
        )
    for name in CARRIED:
        checks.append(_version_check(name, machine.distribution(name), pinned[name], True))
    for name, version in pinned.items():
        if name not in CARRIED and name not in LIBRARIES.values():
            checks.append(_version_check(name, machine.distribution(name), version, False))
    for module in ("cupy", "numba.cuda", "nvmath.device", "array_api_compat", "blocksolve"):
        error = machine.import_error(module)
        checks.append(Check(f"import {module}", error is None, error or "ok", "imports"))
    numba_cuda = machine.numba_cuda()
    checks.append(
        Check(
            "numba.cuda",
            isinstance(numba_cuda, dict)
            and numba_cuda["version"] == pinned["numba-cuda"]
            and numba_cuda["redirected"]
            and numba_cuda["is_available"]
            and not numba_cuda["simulator"],
            numba_cuda,
            f"numba-cuda {pinned['numba-cuda']}, is_available() true, no simulator",
            note="without it conftest.py skips every gpu test",
        )
    )
    checks.append(Check("cupy sees the GPU", machine.cupy_sees_a_gpu(), machine.cupy_sees_a_gpu()))
    return checks


def blocking_failures(checks):
    return [c.name for c in checks if c.blocking and not c.ok]


def _print_checks(checks, out=sys.stdout):
    for c in checks:
        mark = "ok  " if c.ok else ("FAIL" if c.blocking else "note")
        found = json.dumps(c.found, default=str)
        found = found if len(found) <= 90 else found[:87] + "..."
        expected = f" (expected {c.expected})" if not c.ok and c.expected is not None else ""
        print(f"  {mark} {c.name:<24} {found}{expected}", file=out)


def run_preflight(out_path):
    """Check this machine, write what was found to ``out_path``; exit status 1 if blocked."""
    pinned = constraints()
    checks = preflight(Machine(), pinned)
    document = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "python": sys.version,
        "executable": sys.executable,
        "blocking": blocking_failures(checks),
        "deviations": [
            {"name": c.name, "found": c.found, "verified": c.expected, "note": c.note}
            for c in checks
            if not c.ok and not c.blocking
        ],
        "checks": [dataclasses.asdict(c) for c in checks],
        "constraints": pinned,
    }
    try:
        from blocksolve.cli.info import environment

        document["blocksolve_info"] = environment()
    except Exception as error:  # noqa: BLE001 - the import check above says it too
        document["blocksolve_info"] = f"{type(error).__name__}: {error}"
    Path(out_path).write_text(json.dumps(document, indent=1, default=str) + "\n")
    _print_checks(checks)
    if document["blocking"]:
        print(f"PREFLIGHT FAILED: {', '.join(document['blocking'])}; nothing was launched")
        return 1
    print(f"preflight passed ({len(document['deviations'])} deviation(s) noted)")
    return 0


class FakeMachine(Machine):
    """A machine as the constraints describe it, with some answers replaced."""

    def __init__(self, pinned, **answers):
        self.pinned = pinned
        self.answers = answers

    def _answer(self, key, default):
        return self.answers.get(key, default)

    def gpus(self):
        default = [{"name": "NVIDIA H200", "driver_version": "580.159", "compute_cap": "9.0"}]
        return self._answer("gpus", default)

    def driver_version(self):
        return self._answer("driver", 13000)

    def distribution(self, name):
        return self._answer("distributions", {}).get(name, self.pinned.get(name))

    def import_error(self, module):
        return self._answer("import_errors", {}).get(module)

    def library(self, name):
        missing = name in self._answer("missing_libraries", ())
        return "OSError: not found" if missing else [f"/usr/local/cuda/lib64/{name}.so", "fake"]

    def library_version(self, name, path):
        wheel = self.pinned[LIBRARIES[name]]
        return self._answer("library_versions", {}).get(name, ".".join(wheel.split(".")[:2]))

    def numba_cuda(self):
        default = {
            "version": self.distribution("numba-cuda"),
            "redirected": True,
            "is_available": "nvvm" not in self._answer("missing_libraries", ()),
            "simulator": False,
        }
        return self._answer("numba_cuda", default)

    def cupy_sees_a_gpu(self):
        return self._answer("cupy_sees_a_gpu", True)

    def cuda_home(self):
        return self._answer("cuda_home", "/usr/local/cuda")


# (what is wrong, the fake machine's answers, the blocking checks it must give)
SCENARIOS = (
    ("nothing", {}, set()),
    ("no GPU", {"gpus": [], "cupy_sees_a_gpu": False}, {"GPU", "cupy sees the GPU"}),
    ("a CUDA 12 driver", {"driver": 12080}, {"CUDA driver"}),
    (
        "no NVVM: numba.cuda.is_available() false, every gpu test would skip",
        {"missing_libraries": ("nvvm",), "cuda_home": None},
        {"nvvm", "numba.cuda"},
    ),
    (
        "no nvmath-python",
        {
            "distributions": {"nvmath-python": None},
            "import_errors": {"nvmath.device": "ModuleNotFoundError: No module named 'nvmath'"},
        },
        {"nvmath-python", "import nvmath.device"},
    ),
    (
        "libmathdx 0.4.0.9",
        {"distributions": {"nvidia-libmathdx-cu13": "0.4.0.9"}},
        {"nvidia-libmathdx-cu13"},
    ),
    (
        "no array-api-compat: blocksolve does not import",
        {
            "distributions": {"array-api-compat": None},
            "import_errors": {
                "array_api_compat": "ModuleNotFoundError",
                "blocksolve": "ModuleNotFoundError: No module named 'array_api_compat'",
            },
        },
        {"array-api-compat", "import array_api_compat", "import blocksolve"},
    ),
    (
        "the machine's own numba-cuda 0.22.0",
        {"distributions": {"numba-cuda": "0.22.0"}},
        {"numba-cuda", "numba.cuda"},
    ),
    (
        "the machine's NVRTC, NVVM and nvJitLink 13.0, not carried",
        {"library_versions": {"nvJitLink": "13.0", "nvrtc": "13.0", "nvvm": "13.0"}},
        set(),
    ),
    (
        "nvJitLink 13.0 beside NVRTC 13.5: kernels would not link",
        {"library_versions": {"nvJitLink": "13.0"}},
        {"nvJitLink reads the LTO-IR"},
    ),
    ("no libmathdx library", {"missing_libraries": ("mathdx",)}, {"mathdx"}),
)


def preflight_selftest(out=sys.stdout):
    """Run the preflight against each of :data:`SCENARIOS`; return the mismatches."""
    pinned = constraints()
    wrong = []
    for what, answers, expected in SCENARIOS:
        checks = preflight(FakeMachine(pinned, **answers), pinned)
        got = set(blocking_failures(checks))
        notes = [c.name for c in checks if not c.ok and not c.blocking]
        verdict = "ok" if got == expected else "WRONG"
        print(f"  {verdict:<5} {what}: blocks on {sorted(got) or 'nothing'}", file=out)
        if notes:
            print(f"        notes {notes}", file=out)
        if got != expected:
            wrong.append(f"{what}: blocks on {sorted(got)}, expected {sorted(expected)}")
    return wrong


# --- summary -------------------------------------------------------------------------------


def _load_json(path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


# The file each step's verdict is in ($OUT).
VERDICT_FILES = {
    "preflight": "preflight.json",
    "smoke": "smoke.json",
    "cusolver": "bench-cusolver.json",
    "tests": "tests.jsonl",
    "bench": "bench-gpu.json",
}


def _bench_lines(document):
    """``op dtype n batch: blocksolve s, peer s (xN)`` per case of a ``bench --json`` file."""
    rows = {}
    for row in document.get("results", []):
        key = (row["op"], row["dtype"], row["n"], row["batch"])
        rows.setdefault(key, {})[row["library"]] = row["time_s"]
    lines = []
    for (op, dtype, n, batch), times in rows.items():
        ours = times.get("blocksolve")
        peer = next((p for p in times if p != "blocksolve"), None)
        text = f"    {op} {dtype} n={n} batch={batch}: "
        text += f"blocksolve {ours:.3g} s" if ours else "no blocksolve row"
        if ours and peer:
            text += f", {peer} {times[peer]:.3g} s (x{times[peer] / ours:.2f})"
        lines.append(text)
    return lines


def _test_outcomes(records):
    """Each test's worst outcome (failed over skipped over passed)."""
    rank = {"passed": 0, "skipped": 1, "failed": 2}
    worst = {}
    for r in records:
        if "outcome" in r and rank[r["outcome"]] >= rank[worst.get(r["test"], "passed")]:
            worst[r["test"]] = r["outcome"]
    return worst


def summarize(work, out):
    """The verdicts so far: ``(text, failures)``.

    ``WORK/steps.tsv`` holds one ``step status seconds limit`` line per step (status: the
    exit code, ``not-selected``, ``stopped`` after a failed preflight, ``no-time``); the
    verdict files are the ones of :data:`VERDICT_FILES` in ``OUT``.
    """
    out = Path(out)
    steps_file = Path(work) / "steps.tsv"
    steps = [line.split("\t") for line in steps_file.read_text().splitlines() if line]
    lines = [f"{'step':<10} {'status':>12} {'seconds':>8} {'limit':>6}"]
    lines += [f"{s[0]:<10} {s[1]:>12} {s[2]:>8} {s[3]:>6}" for s in steps]
    failures = []
    for name, status, *_ in steps:
        if status in ("stopped", "no-time"):
            failures.append(f"{name} not run ({status})")
        elif status not in ("0", "not-selected"):
            timed_out = " (out of time)" if status in ("124", "137") else ""
            failures.append(f"{name} exited {status}{timed_out}")
        elif status == "0" and name in VERDICT_FILES and not (out / VERDICT_FILES[name]).exists():
            failures.append(f"{name} wrote no {VERDICT_FILES[name]}")

    pre = _load_json(out / "preflight.json")
    if pre:
        lines.append(
            "preflight: "
            + ("BLOCKED on " + ", ".join(pre["blocking"]) if pre["blocking"] else "passed")
        )
        gpus = next((c["found"] for c in pre["checks"] if c["name"] == "GPU"), None)
        lines.append(f"    GPU {gpus}")
        for d in pre["deviations"]:
            lines.append(f"    not as verified: {d['name']} {d['found']} ({d['verified']})")

    smoke = _load_json(out / "smoke.json")
    if smoke:
        lines.append(
            "smoke (a kernel per family, launched from the disk cache, against NumPy): "
            + ", ".join(f"{n} {k}" for k, n in smoke["counts"].items())
        )
        for name, case in smoke["cases"].items():
            if case["verdict"] != "passed":
                lines.append(f"    {name}: {case['verdict']}: {'; '.join(case['why'])[:300]}")

    cusolver = _load_json(out / "bench-cusolver.json")
    if cusolver:
        lines.append("cuSOLVER comparison (bench-cusolver.json; xN = the peer's time / ours):")
        lines += _bench_lines(cusolver)
        if cusolver.get("not_run"):
            lines.append(f"    not reached: {', '.join(cusolver['not_run'])}")

    tests = out / "tests.jsonl"
    if tests.exists():
        records = [json.loads(x) for x in tests.read_text().splitlines() if x.strip()]
        outcomes = _test_outcomes(records)
        counts = {k: list(outcomes.values()).count(k) for k in ("passed", "failed", "skipped")}
        selected = next((r["collected"] for r in records if "collected" in r), None)
        lines.append(
            f"gpu tests (tests.jsonl): {selected} selected, {len(outcomes)} reached: "
            + ", ".join(f"{n} {k}" for k, n in counts.items())
        )
        lines += [f"    {o}: {t}" for t, o in outcomes.items() if o != "passed"]
        lines += [
            f"    CUDA error in {r['test']}: {r['cuda_error']}"
            for r in records
            if "cuda_error" in r
        ]
        if counts["skipped"]:
            failures.append(f"{counts['skipped']} gpu test(s) skipped")
        if counts["failed"]:
            failures.append(f"{counts['failed']} gpu test(s) failed")

    full = _load_json(out / "bench-gpu.json")
    if full:
        lines.append(
            f"benchmark grid (bench-gpu.json): {len(full['results'])} rows, "
            f"{len(full['not_run'])} case(s) not reached in the time left"
        )
    head = "GPU check: " + ("FAILED: " + "; ".join(failures) if failures else "PASSED")
    return "\n".join([head, *lines]) + "\n", failures


def main(argv):
    command, *rest = argv or ["help"]
    if command == "download-command":
        print(" ".join(download_command(*rest[:1])))
    elif command == "fetch-wheels":
        return fetch_wheels(*rest[:1])
    elif command == "wheels":
        problems = check_wheels(*rest[:1])
        for problem in problems:
            print(f"  wheel problem: {problem}")
        if not problems:
            print(f"  {len(CARRIED)} wheels, one per carried distribution, as the constraints pin")
        return 1 if problems else 0
    elif command == "preflight":
        return run_preflight(rest[0])
    elif command == "preflight-selftest":
        wrong = preflight_selftest()
        for line in wrong:
            print(f"SELF-TEST FAILED: {line}")
        return 1 if wrong else 0
    elif command == "summary":
        text, failures = summarize(*rest[:2])
        (Path(rest[1]) / "summary.txt").write_text(text)
        print(text, end="")
        return 1 if failures else 0
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
