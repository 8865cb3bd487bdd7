"""Every use of another library's private API, one module per library, each naming the
versions it was checked against (``tests/test_compat.py`` fails loudly when an
upgrade changes one)."""
