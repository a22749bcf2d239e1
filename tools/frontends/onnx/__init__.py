"""The ONNX front end: ``model`` reads and prepares an ONNX model, ``importer``
emits the value-semantic IR, ``kernels`` runs its nodes for `memplan-run`."""
