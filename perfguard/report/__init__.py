"""Rendering of run records: terminal table, files (and later HTML and Markdown). Never measures or compares."""
