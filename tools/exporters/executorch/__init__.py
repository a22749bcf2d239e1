"""ExecuTorch: ``replan`` re-plans a built `.pte` program with memplan
(``memplan.tools.exporters.executorch.hook`` is the hook that plans while ExecuTorch
builds it), ``command`` is `memplan-export pte`."""
