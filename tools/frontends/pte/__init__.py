"""The ExecuTorch front end: ``program`` reads a ``.pte`` (ExecuTorch's
flatbuffer), ``importer`` emits a method as the value-semantic IR,
``frontend`` implements the protocol (no run: memplan has no kernels for
ATen's operators; ExecuTorch's runtime runs programs ``memplan-export pte``
re-plans)."""
