"""Model front ends as libraries: model files -> value-semantic IR, and the
NumPy kernels `memplan-run` executes them with. ``protocol`` is the
interface each format implements, ``registry`` the formats by file suffix,
``common`` what importers share; each format is a package (``onnx``,
``tflite``). The `memplan-import-*` and `memplan-run` tools are thin
wrappers that reach a format through the registry."""
