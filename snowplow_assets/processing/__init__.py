"""The processing manifest (FORMATS.md §6): items of the lake, their records and the state derived from them.

Pure Python, no dagster import. `records.py` holds the semantics; the records themselves are read from
Dagster's event log and run storage by `snowplow_assets/defs/manifests/processing_manifest.py`.
"""

from snowplow_assets.processing.records import NEVER_STARTED, Item, Record, State, derive_item

__all__ = ["NEVER_STARTED", "Item", "Record", "State", "derive_item"]
