"""The ExecuTorch front end: ``program`` reads a ``.pte`` (ExecuTorch's
flatbuffer), ``importer`` emits a method as the value-semantic IR,
``lifetimes`` reads what its instructions say about the tensors it placed
(shared with ``memplan-export pte``), ``planned`` emits a method as the
program planned it (``--planned``, declared in ``arguments``), ``kernels``
lists the element-wise kernels (standard library only, shared with the
planning hook), ``frontend`` implements the protocol (no run: memplan has
no kernels for ATen's operators; ExecuTorch's runtime runs programs
``memplan-export pte`` re-plans)."""
