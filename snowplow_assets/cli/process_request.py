"""What the operator asked `snowplow-assets process` for beyond its routine: the command's options."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProcessRequest:
    runs: tuple[str, ...] = ()  # --run: run folders to shred even if shredded before
    landings: tuple[str, ...] = ()  # --ingest: CDC landings to ingest even if ingested before
    # --full-refresh, as dbt's: the web models rebuilt from SNOWPLOW_WEB_START_DATE, every CDC batch cut from
    # all its model's records instead of from the previous batch.
    full_refresh: bool = False
