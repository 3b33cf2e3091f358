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
- ``chart_items``       Qt-painted chart pieces (curve, bars, labels, lines):
                        no Python call per frame; ``lag_trace``: the lag
                        curve and the area under it (small polygons), from
                        buffers kept between frames; ``column_max``: one
                        point per pixel column, the column's maximum, kept
                        as the ticks arrive.
- ``live_label``        ``LiveLabel``: often-changing text, no re-layout.
- ``fast_delegate``     ``FastDelegate``: table cells from cached laid-out text.
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

Importing this package sets two process settings, unless already set, both
for a steady event loop on a machine with few cores (``lanemon bench ui``):

- ``QT_NO_GUI_THREADPOOL=1``: Qt's raster engine fills large areas on helper
  threads and waits for them; with a worker process on the other core the
  GUI thread then waits for a thread to be scheduled. Fills stay on the GUI
  thread.
- ``OPENBLAS_NUM_THREADS=1``: numpy's BLAS threads spin after each call
  (``perf`` counted 6 % of the window process in ``blas_thread_server``);
  the window does no linear algebra worth a second thread. Takes effect
  only when numpy is imported after this package.
"""

import os as _os

_os.environ.setdefault("QT_NO_GUI_THREADPOOL", "1")
_os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
