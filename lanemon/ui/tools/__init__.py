"""Not part of the window: screenshot scripts (``python -m
lanemon.ui.tools.shoot``, ``shoot_lanes``, ``shoot_counters``) and the
drivers that tests and benchmarks use (``testing``)."""
