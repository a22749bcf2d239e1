"""What writes a plan into a runtime's own format: one package per target
(``tflm``: TFLite Micro's offline plan in a ``.tflite``; ``executorch``: a
re-planned ``.pte``), found through ``registry``."""
