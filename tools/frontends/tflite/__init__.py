"""The TFLite front end: ``model`` reads the flatbuffer, ``importer`` emits
the value-semantic IR, ``kernels`` holds the NumPy kernels `memplan-run`
runs its operators with, ``offline_plan`` writes a planned module into the
model as TFLM's ``OfflineMemoryAllocation`` (`memplan-export-tflite`)."""
