"""The Processes tab: agents started from the window, the store's sessions, the worker processes."""
