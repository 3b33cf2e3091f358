"""The heartbeat: the window's own loop lag, measured (``timer``) and drawn
(``chart``; its plot area ``scroll_plot``, from ``lag_trace`` and ``column_max``)."""
