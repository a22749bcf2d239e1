"""The TFLite front end: ``model`` reads the flatbuffer, ``importer`` emits
the value-semantic IR, ``kernels`` holds the NumPy kernels `memplan-run`
runs its operators with, ``arguments`` the format's own options
(``memplan.tools.exporters.tflm`` writes plans into TFLite models)."""
