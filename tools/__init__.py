"""Command-line front ends (installed as the ``memplan_tools`` package)."""
