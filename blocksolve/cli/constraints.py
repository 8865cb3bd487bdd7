"""The CUDA stack of blocksolve's last full verification: ``blocksolve/cuda/constraints.txt``.

Standard library only: ``tools/gpu_check.py`` loads this file on its own, before
the package may import at all.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["CONSTRAINTS", "read_constraints"]

# pip constraints plus their story in comments
CONSTRAINTS = Path(__file__).resolve().parents[1] / "cuda" / "constraints.txt"


def read_constraints(path=CONSTRAINTS):
    """``({distribution: version}, what the verification covered, what else was verified)``
    from the constraints file: its ``name==version`` lines, the text of its ``# verified:``
    comment paragraph and of its ``# Also verified`` one (empty when absent)."""
    pinned, paragraphs = {}, {"verified:": [], "Also verified": []}
    current = None
    for line in path.read_text(encoding="utf-8").splitlines():
        text = line.lstrip("# ").rstrip()
        if line.startswith("#"):
            starts = [key for key in paragraphs if text.startswith(key)]
            current = starts[0] if starts else (current if text else None)
            if current is not None:
                paragraphs[current].append(text)
        elif "==" in line:
            name, version = line.split("==", 1)
            pinned[name.strip()] = version.strip()
    note, also = (" ".join(lines) for lines in paragraphs.values())
    return pinned, note.removeprefix("verified:").strip(), also
