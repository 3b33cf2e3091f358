"""The window: a thin Qt layer over the Qt-free domains.

Laid out by what each part is:

- ``shell``      the application around the views: ``app`` (``run_app()``,
                 the ``main`` coroutine, signals, clean shutdown),
                 ``main_window``, ``talk_mode`` (presenter), ``settings``,
                 ``about``, ``first_paint``, ``exports``.
- ``heartbeat``  the lag the window exists to show: ``timer`` (the precise
                 re-armed single-shot heartbeat and its ring buffer),
                 ``chart`` (the heartbeat chart: header and axes),
                 ``scroll_plot`` (its plot area, a ring of pixel columns),
                 ``lag_trace`` and ``column_max`` (what it draws from),
                 ``programs_overlay`` (probed programs' lines on it),
                 ``own_watchdog`` (what blocked the window's own loop).
- ``runs``       the Runs tab (whole / sliced / worker runs of the CPU job):
                 ``controller``, ``model``, ``panel``, ``placement``.
- ``lanes``      the Lanes & queues tab: ``view``, ``model``, ``controls``,
                 ``timeline``.
- ``counters``   the Counters tab: ``view``, ``controls``, ``grid``.
- ``programs``   the Programs tab: asyncio programs heard through
                 ``lanemon.probe`` (``view``), where a stall's time went
                 (``where``, Qt-free).
- ``talk``       a talk script played in the window (``lanemon.talk`` reads
                 it): ``player`` (the clicker's keys, steps, actions through
                 the views' public methods), ``caption`` (over the chart; the
                 blank screen).
- ``replay``     File → Record and File → Open recording: ``mode`` (the
                 replay: what the views are handed at each position), ``panel``
                 (the replay bar, moments, the race told), ``record`` (a
                 recording of the window's counters, lanes and heartbeat).
- ``kit``        the drawing kit every view uses, no domain in it:
                 ``theme`` (every colour and font), ``live_label``,
                 ``static_texts``, ``fast_delegate``, ``chart_items``,
                 ``tables``; ``qt_start`` (pyqtgraph as every module takes
                 it, every Qt class built; PySide6's import scan made cheap).
- ``tools``      not part of the window: screenshot scripts (``shoot*``) and
                 the drivers tests and benchmarks use (``testing``).

Importing this package (or any module in it) changes no process setting.
The window's entry points call :func:`steady_process_settings` first.
"""

import os as _os


def steady_process_settings() -> None:
    """Set, unless already set, two process settings for a steady event loop.

    Call before numpy and Qt are imported (the window, the benchmarks, the
    screenshot tools and the tests do). Both matter on a machine with few
    cores (``lanemon bench ui``):

    - ``QT_NO_GUI_THREADPOOL=1``: Qt's raster engine fills large areas on
      helper threads and waits for them; with a worker process on the other
      core the GUI thread then waits for a thread to be scheduled. Fills stay
      on the GUI thread.
    - ``OPENBLAS_NUM_THREADS=1``: numpy's BLAS threads spin after each call
      (``perf`` counted 6 % of the window process in ``blas_thread_server``);
      the window does no linear algebra worth a second thread. Takes effect
      only when numpy is imported after this call.

    A value the user set is kept.
    """
    _os.environ.setdefault("QT_NO_GUI_THREADPOOL", "1")
    _os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
