"""Model front ends as libraries: model files -> value-semantic IR, and the
NumPy kernels `memplan-run` executes them with. The `memplan-import-*` and
`memplan-run` command-line tools are thin wrappers over these modules."""
