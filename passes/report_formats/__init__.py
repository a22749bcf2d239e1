"""Report formats of ``plan-report`` beyond text and JSON.

Each module holds one format, a function ``PlanReport -> str`` that
``passes.plan_report.REPORT_WRITERS`` registers by name:

- ``svg``: ``format_svg``, a memory map per function and pool;
- ``trace``: ``format_trace``, Chrome trace-event JSON (Perfetto,
  ``chrome://tracing``);
- ``c_header``: ``format_c_header``, pool sizes and offsets as C macros.

``common`` holds what they share: the kind of a buffer and the layout drawn
for a pool (planned offsets, or storages stacked when there is no plan).
The formats only read ``PlanReport`` data; they never see IR.
"""
