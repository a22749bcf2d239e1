"""ExecuTorch: ``replan`` re-plans a built `.pte` program with memplan
(``memplan.tools.executorch`` is the hook that plans while ExecuTorch
builds it), ``command`` is `memplan-export pte`."""
