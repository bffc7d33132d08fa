"""Landings ingested under another reading of their topics than the models file gives now.

Ingestion reads each record by the models file of the moment (contracts.classify): the model its topic feeds,
the topic's contract and its id field decide the record's model, its kind and its key, and a topic no model
declares makes bad rows, or is ignored when an `ignored_topics` pattern fits it. The histories keep that
reading. Changing the models file afterwards changes nothing already ingested: a batch recomputed in full
(batches.py, on any change of a model's spec) still reads the records as they were read. So each landing's
summary records the reading of every topic its records name (`IngestedLanding.topics`), and a landing whose
topics are now read differently is *stale* until it is ingested again: materialise its `cdc_history`
partition, or `snowplow-assets process --ingest <landing>`. The `cdc_landings_read_by_the_current_models`
check of cdc_batches and `process` name them, and `latest` warns of those that concern its model.

Decision: stale landings are reported, not ingested again automatically. The sensors would have to read
every landing's summary on every tick to notice, and a change of the models file may concern thousands of
landings, which the operator should choose to re-read (it is one backfill in the UI).

Landings ingested before summaries recorded their topics (2026-11-26), or naming more than
history.MAX_TOPICS_RECORDED topics a model could declare, cannot be judged and are never reported.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from snowplow_assets.cdc.history import IngestedLanding
from snowplow_assets.cdc.models import CdcModels

UNDECLARED = "no model (bad rows)"


def changed_readings(
    landing: IngestedLanding, reading: Callable[[str], str | None], model: str | None = None
) -> list[str]:
    """The landing's topics that the models now read otherwise, as `topic: then -> now`, by topic; only
    those whose reading, then or now, feeds `model` when it is given."""
    if landing.topics is None:
        return []
    changed = []
    for topic, then in sorted(landing.topics.items()):
        now = reading(topic)
        concerned = model is None or any(r is not None and r.startswith(f"{model}/") for r in (then, now))
        if now != then and concerned:
            changed.append(f"{topic}: {then or UNDECLARED} -> {now or UNDECLARED}")
    return changed


def stale_landings(
    ingested: Mapping[str, IngestedLanding], models: CdcModels, model: str | None = None
) -> dict[str, list[str]]:
    """Every landing read differently from how `models` reads its topics now -> what changed, by name; only
    the changes that concern `model` when it is given."""
    stale = {name: changed_readings(landing, models.reading, model) for name, landing in sorted(ingested.items())}
    return {name: changes for name, changes in stale.items() if changes}
