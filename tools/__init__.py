"""memplan's command lines and the libraries they share (installed as ``memplan.tools``)."""
