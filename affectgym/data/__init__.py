"""Scenario sources (embedded, local path, hub) and the embedded assets."""
