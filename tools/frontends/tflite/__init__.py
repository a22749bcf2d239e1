"""The TFLite front end: ``model`` reads the flatbuffer, ``importer`` emits
the value-semantic IR, ``kernels`` holds the NumPy kernels `memplan-run`
runs its operators with."""
