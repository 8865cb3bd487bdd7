"""The CUDA kernels: one module per op family (cuSolverDx descriptors and kernels on the
skeleton of :mod:`._skeleton`), and the helpers they share."""
