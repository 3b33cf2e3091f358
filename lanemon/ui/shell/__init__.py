"""The application around the views: start, main window, presenter mode,
settings, about, first paint, exports. Knows every view; no view knows it."""
