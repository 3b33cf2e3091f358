"""The window: a thin Qt layer over the Qt-free domains.

Modules:

- ``app``               ``run_app()`` (the ``lanemon`` command) and the ``main``
                        coroutine: qasync start, clean shutdown.
- ``main_window``       ``MainWindow``: heartbeat chart on top, tabbed views
                        below (``add_view``), status bar.
- ``heartbeat``         ``Heartbeat``: the precise re-armed single-shot timer
                        and its preallocated ring buffer (Qt, no widgets);
                        ``lag_stats`` (nearest-rank, same as
                        ``lanemon.work.lag.summarize``).
- ``heartbeat_chart``   ``HeartbeatChart``: pyqtgraph view of the buffer,
                        runs as shaded regions, redrawn at ~30 fps.
- ``run_controller``    ``RunController``: button -> domain call -> event;
                        machine figures (calibration, start-up, thresholds),
                        the report.
- ``runs_model``        ``RunRecord`` and the results table model.
- ``runs_panel``        job size, Whole / Sliced / Worker, results, exports.
- ``placement_panel``   ``place()`` for a described job and for each run.
- ``exports``           report JSON, heartbeat CSV, chart PNG.
- ``theme``             colours, fonts, ``font_scale``.
- ``shoot``             ``python -m lanemon.ui.shoot out.png``: the README
                        screenshot, reproducibly.
"""
