"""The CPU kernels: one module per op family (numba kernels and the reference's LAPACK
calls), and the helpers they share."""
