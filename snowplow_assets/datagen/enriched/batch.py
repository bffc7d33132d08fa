"""One batch: original events, interleaved with their duplicates and with bad lines."""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from snowplow_assets.datagen.enriched.bad_lines import BAD_LINE_KINDS, bad_line
from snowplow_assets.datagen.enriched.event_templates import V_ETL, V_EVENT_ID, Event
from snowplow_assets.datagen.enriched.options import GenerationOptions
from snowplow_assets.datagen.enriched.timestamps import timestamp_text
from snowplow_assets.datagen.enriched.uuids import Uuids
from snowplow_assets.datagen.enriched.visitors import WebTraffic

# How much later than its collector time the batch is enriched.
_ENRICHMENT_LAG_MS = 3 * 60_000
# A few events of a batch are enriched a little later than the rest.
_STRAGGLER_RATE = 0.005
_LATER_COPY_RATE = 1 / 3
# Visitors on the site at the same time, whose events are interleaved. Bounding them bounds the memory a
# batch needs, however many events it has (about 70 MB for a million).
_CONCURRENT_VISITORS = 200


class Batch:
    """The lines of one run folder: its events in output order, with their duplicates and bad lines."""

    def __init__(self, options: GenerationOptions, rng: random.Random):
        self._options = options
        self._rng = rng
        self._start_ms = (options.start - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)
        self._traffic = WebTraffic(rng, self._start_ms - _ENRICHMENT_LAG_MS)
        self._uuids = Uuids(rng)
        extra_lines = options.natural_duplicates + options.synthetic_duplicates + options.bad_lines
        self.total_lines = options.events + extra_lines
        kinds = list(BAD_LINE_KINDS)
        self._bad_kinds = [kinds[i % len(kinds)] for i in range(options.bad_lines)]
        self.bad_line_kinds = {kind: self._bad_kinds.count(kind) for kind in kinds}

    def lines(self) -> Iterator[bytes]:
        """Every line of the batch in output order; each extra line comes after the event it derives from."""
        options, rng = self._options, self._rng
        extras = self._extras_by_event()
        etl = timestamp_text(self._start_ms)
        stragglers = [timestamp_text(self._start_ms + rng.randrange(1000, 30_000)) for _ in range(5)]
        # An extra line lands up to a file's length later, so duplicates are rarely adjacent or in one file.
        window = max(2, self.total_lines // options.files)
        pending: list[tuple[int, int, bytes]] = []
        sequence = itertools.count()
        written = 0

        for position, event in enumerate(self._original_events()):
            event.values[V_ETL] = etl if rng.random() >= _STRAGGLER_RATE else rng.choice(stragglers)
            line = event.line()
            yield line
            written += 1

            for extra in extras.get(position, ()):
                extra_line = self._extra_line(extra, event, line)
                heapq.heappush(pending, (written + rng.randint(1, window), next(sequence), extra_line))
            while pending and pending[0][0] <= written:
                yield heapq.heappop(pending)[2]
                written += 1
        while pending:
            yield heapq.heappop(pending)[2]

    def _extra_line(self, extra: str, event: Event, line: bytes) -> bytes:
        """The line of an extra of `event`, whose own line is `line`: see _extras_by_event."""
        rng = self._rng
        if extra == "natural":
            if rng.random() < _LATER_COPY_RATE:  # delivered again after the enricher had moved on
                later = timestamp_text(self._start_ms + rng.randrange(30_000, 600_000))
                return event.replaced(V_ETL, later).line()
            return line
        if extra == "synthetic":
            return self._traffic.synthetic_twin(event).line()
        other_event = event.replaced(V_EVENT_ID, self._uuids.next())
        return bad_line(extra, other_event.line().decode(), rng)

    def _extras_by_event(self) -> dict[int, list[str]]:
        """Original event position -> the extra lines derived from it: 'natural', 'synthetic' or a bad kind."""
        options, rng = self._options, self._rng
        population = range(options.events)
        extras: dict[int, list[str]] = {}
        for position in rng.sample(population, options.natural_duplicates):
            extras.setdefault(position, []).append("natural")
        for position in rng.sample(population, options.synthetic_duplicates):
            extras.setdefault(position, []).append("synthetic")
        for position, kind in zip(rng.sample(population, options.bad_lines), self._bad_kinds, strict=True):
            extras.setdefault(position, []).append(kind)
        return extras

    def _original_events(self) -> Iterator[Event]:
        """The batch's events, visitors coming and going with a few hundred on the site at any time."""
        rand = self._rng.random
        arriving = (self._traffic.visitor_events(budget) for budget in self._visitor_budgets() if budget)
        present = list(itertools.islice(arriving, _CONCURRENT_VISITORS))
        while present:
            slot = int(rand() * len(present))
            try:
                yield next(present[slot])
            except StopIteration:
                newcomer = next(arriving, None)
                if newcomer is None:
                    present[slot] = present[-1]
                    present.pop()
                else:
                    present[slot] = newcomer

    def _visitor_budgets(self) -> list[int]:
        """How many of the batch's events each visitor makes; some are much more active than others."""
        rng, users = self._rng, self._options.users
        assert users is not None  # GenerationOptions sets it
        activity = list(itertools.accumulate(rng.lognormvariate(0, 0.8) for _ in range(users)))
        budgets = [0] * users
        for visitor in rng.choices(range(users), cum_weights=activity, k=self._options.events):
            budgets[visitor] += 1
        return budgets
