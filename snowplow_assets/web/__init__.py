"""Incremental web models (FORMATS.md §8): sessions lifecycle, quarantined sessions, page views, sessions, users.

Plain PySpark and Python, no dagster import. `run_limits.py` decides which collector_tstamp window a run
processes; `pipeline.py` builds each model over that window; the Dagster wiring is defs/assets/web_models.py.
"""
