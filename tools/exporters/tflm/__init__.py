"""TFLite Micro: ``planning`` plans a `.tflite` model for TFLM and picks the
pipeline with the smallest head, ``offline_plan`` writes the plan into the
model as TFLM's ``OfflineMemoryAllocation``, ``runner`` runs a model in
TFLM's interpreter (the proof), ``command`` is `memplan-export tflm`."""
