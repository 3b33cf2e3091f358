"""The heartbeat: the window's own loop lag, measured (``timer``) and drawn
(``chart``, from ``lag_trace`` and ``column_max``)."""
