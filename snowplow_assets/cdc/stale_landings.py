"""Landings ingested under another reading of their topics than the models file gives now.

Ingestion reads each record by the models file of the moment (contracts.classify): the model its topic feeds,
the topic's contract and its id field decide the record's model, its kind and its key, and a topic no model
declares makes bad rows, or is ignored when an `ignored_topics` pattern fits it. The histories keep that
reading. Changing the models file afterwards changes nothing already ingested: a batch recomputed in full
(batches.py, on any change of a model's spec) still reads the records as they were read. So each landing's
summary records the reading of every topic its records name (`IngestedLanding.topics`), and a landing whose
topics are now read differently is *stale* until it is ingested again: materialise its `cdc_history`
partition, or `snowplow-assets process --ingest <landing>`. The `cdc_landings_read_by_the_current_models`
check of cdc_batches and `process` name them, and `latest` warns of those that concern its model. A batch
that took a landing in under its old reading cannot be merged into (batches.superseded): the next batch after
the re-ingest is recomputed in full, and the latest view replays until then.

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
        concerned = model is None or feeds(then, model) or feeds(now, model)
        if now != then and concerned:
            changed.append(f"{topic}: {then or UNDECLARED} -> {now or UNDECLARED}")
    return changed


def feeds(reading: str | None, model: str) -> bool:
    """Whether a topic read this way (models.CdcModels.reading) feeds `model`."""
    return reading is not None and reading.startswith(f"{model}/")


def model_readings(landing: IngestedLanding, model: str) -> dict[str, str] | None:
    """How the landing's topics that fed `model` were read when it was ingested (topic -> reading); None when
    its summary does not record it. Batches keep this per landing they hold (batches.py): a landing ingested
    again under another one must be taken out of them, which a merge cannot do."""
    if landing.topics is None:
        return None
    return {topic: reading for topic, reading in sorted(landing.topics.items()) if feeds(reading, model)}


def reading_changes(then: dict[str, str], landing: IngestedLanding, model: str) -> list[str]:
    """What changed between `then` (model_readings of an earlier ingestion) and the landing's reading now,
    for the topics that fed or feed `model`, as `topic: then -> now`, by topic."""
    topics = landing.topics or {}
    now = model_readings(landing, model) or {}
    changed = []
    for topic in sorted(then.keys() | now.keys()):
        if then.get(topic) != now.get(topic):
            # A topic that did not feed the model then was read some other way, which the batch did not keep.
            before = then.get(topic, f"not {model}")
            after = (topics[topic] or UNDECLARED) if topic in topics else "no longer in the landing"
            changed.append(f"{topic}: {before} -> {after}")
    return changed


def stale_landings(
    ingested: Mapping[str, IngestedLanding], models: CdcModels, model: str | None = None
) -> dict[str, list[str]]:
    """Every landing read differently from how `models` reads its topics now -> what changed, by name; only
    the changes that concern `model` when it is given."""
    stale = {name: changed_readings(landing, models.reading, model) for name, landing in sorted(ingested.items())}
    return {name: changes for name, changes in stale.items() if changes}
