"""Synthetic Snowplow enriched events: run folders of realistic web tracking data (FORMATS.md §1 and §5).

The data is what a JavaScript tracker on a shop site produces: visitors with sessions of page views, page
pings, structured events, link clicks and checkout steps. On top of that come the defects a pipeline has to
handle, in exact numbers: natural duplicates (one payload delivered twice), synthetic duplicates (another
payload that reuses an event id) and lines the parser must reject.

Generation is deterministic for a seed and has to write gigabytes for benchmarks in reasonable time. Values
therefore come from pools and per-visitor, per-session and per-page field templates, the JSON texts are
precomputed where they do not vary, and one `random.Random` drives everything.
"""

from __future__ import annotations

import bisect
import gzip
import hashlib
import heapq
import itertools
import json
import random
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cached_property
from operator import itemgetter
from pathlib import Path
from typing import BinaryIO, Generic, TypeVar
from urllib.parse import quote_plus, urlsplit

from snowplow_assets.events.enriched_schema import FIELD_INDEX, FIELD_NAMES

CONTEXTS_SCHEMA = "iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-1"
UNSTRUCT_EVENT_SCHEMA = "iglu:com.snowplowanalytics.snowplow/unstruct_event/jsonschema/1-0-0"
WEB_PAGE_SCHEMA = "iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0"
LINK_CLICK_SCHEMA = "iglu:com.snowplowanalytics.snowplow/link_click/jsonschema/1-0-1"
CHECKOUT_STEP_SCHEMA = "iglu:com.acme/checkout_step/jsonschema/1-0-0"
USER_CONTEXT_SCHEMA = "iglu:com.acme/user_context/jsonschema/1-0-0"
SCHEMA_ORG_WEB_PAGE_SCHEMA = "iglu:org.schema/WebPage/jsonschema/1-0-0"
UA_PARSER_SCHEMA = "iglu:com.snowplowanalytics.snowplow/ua_parser_context/jsonschema/1-0-0"
YAUAA_SCHEMA = "iglu:nl.basjes/yauaa_context/jsonschema/1-0-4"

SUCCESS_MARKER = "_SUCCESS"

_T = TypeVar("_T")

# Bad line kind -> the parse failure type it must produce (FORMATS.md §1).
BAD_LINE_KINDS: dict[str, str] = {
    "not_tsv": "NotTSV",
    "truncated": "FieldNumberMismatch",
    "invalid_timestamp": "RowDecodingError",
    "invalid_int": "RowDecodingError",
    "invalid_boolean": "RowDecodingError",
    "invalid_uuid": "RowDecodingError",
    "invalid_json": "RowDecodingError",
    "wrong_wrapper_schema": "RowDecodingError",
    "invalid_iglu_uri": "RowDecodingError",
}


# ---------------------------------------------------------------------------------------------------------
# Lines and self-describing JSON


def make_line(values: Mapping[str, str | None]) -> str:
    """One enriched TSV line (no newline) from field name -> text; fields not given are empty."""
    fields = [""] * len(FIELD_NAMES)
    for name, value in values.items():
        if name not in FIELD_INDEX:
            raise KeyError(f"not an enriched event field: {name!r}")
        if value is not None:
            if "\t" in value or "\n" in value:
                raise ValueError(f"{name} contains a tab or a newline, which would break the TSV line: {value!r}")
            fields[FIELD_INDEX[name]] = value
    return "\t".join(fields)


def contexts_json(entities: list[tuple[str, dict]]) -> str:
    """The `contexts` / `derived_contexts` text for (schema URI, data) entities."""
    return _contexts_text(",".join(_entity_json(schema, data) for schema, data in entities))


def unstruct_json(schema: str, data: dict) -> str:
    """The `unstruct_event` text for one self-describing event."""
    return _compact({"schema": UNSTRUCT_EVENT_SCHEMA, "data": {"schema": schema, "data": data}})


def _compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _entity_json(schema: str, data: dict) -> str:
    return _compact({"schema": schema, "data": data})


_CONTEXTS_OPEN = '{"schema":"' + CONTEXTS_SCHEMA + '","data":['


def _contexts_text(joined_entities: str) -> str:
    return _CONTEXTS_OPEN + joined_entities + "]}"


_WEB_PAGE_OPEN = '{"schema":"' + WEB_PAGE_SCHEMA + '","data":{"id":"'


def _web_page_entity(page_view_id: str) -> str:
    return _WEB_PAGE_OPEN + page_view_id + '"}}'


# ---------------------------------------------------------------------------------------------------------
# Options and results


@dataclass
class GenerationOptions:
    events: int = 1000
    natural_duplicate_rate: float = 0.02
    synthetic_duplicate_rate: float = 0.01
    bad_line_rate: float = 0.01
    files: int = 2
    gzip: bool = False
    seed: int = 1
    start: datetime = datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC)
    users: int | None = None  # None: one visitor per 40 events

    def __post_init__(self) -> None:
        if self.events < 0:
            raise ValueError(f"events must not be negative: {self.events}")
        if self.files < 1:
            raise ValueError(f"files must be at least 1: {self.files}")
        for name in ("natural_duplicate_rate", "synthetic_duplicate_rate", "bad_line_rate"):
            rate = getattr(self, name)
            if not 0 <= rate <= 1:
                raise ValueError(f"{name} is a fraction of events, between 0 and 1: {rate}")
        if self.users is None:
            self.users = max(1, self.events // 40)
        if self.users < 1:
            raise ValueError(f"users must be at least 1: {self.users}")
        self.start = _as_utc(self.start)

    @property
    def natural_duplicates(self) -> int:
        return round(self.events * self.natural_duplicate_rate)

    @property
    def synthetic_duplicates(self) -> int:
        return round(self.events * self.synthetic_duplicate_rate)

    @property
    def bad_lines(self) -> int:
        return round(self.events * self.bad_line_rate)


@dataclass
class GenerationStats:
    lines_written: int
    events: int  # distinct original events
    natural_duplicates: int  # extra exact copies of an event
    synthetic_duplicates: int  # extra events reusing another event's id with a different payload
    bad_lines: int
    bad_line_kinds: dict[str, int] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)


def run_folder_name(ts: datetime) -> str:
    return f"run={_as_utc(ts):%Y-%m-%d-%H-%M-%S}"


def _as_utc(ts: datetime) -> datetime:
    """Naive datetimes are taken as UTC, like every timestamp in the lake."""
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


# ---------------------------------------------------------------------------------------------------------
# Writing a run folder


def generate_run_folder(folder: Path, options: GenerationOptions) -> GenerationStats:
    """Write the part files of one run folder, then its `_SUCCESS` marker."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(options.seed)
    batch = _Batch(options, rng)
    lines = batch.lines()
    total = batch.total_lines
    paths: list[Path] = []
    written = 0
    for index in range(options.files):
        share = total // options.files + (1 if index < total % options.files else 0)
        path = folder / f"part-{index:05d}{'.gz' if options.gzip else ''}"
        with _open_part(path, options.gzip) as out:
            written += _write_lines(out, itertools.islice(lines, share))
        paths.append(path)
    (folder / SUCCESS_MARKER).touch()
    return GenerationStats(
        lines_written=written,
        events=options.events,
        natural_duplicates=options.natural_duplicates,
        synthetic_duplicates=options.synthetic_duplicates,
        bad_lines=options.bad_lines,
        bad_line_kinds=batch.bad_line_kinds,
        files=paths,
    )


@contextmanager
def _open_part(path: Path, compress: bool) -> Iterator[BinaryIO]:
    with open(path, "wb") as raw:
        if compress:
            # mtime=0 and no file name in the header keep the bytes identical for a seed; level 1 compresses
            # twice as fast as the default for a slightly bigger file, which suits benchmark volumes
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=1) as zipped:
                yield zipped  # type: ignore[misc]
        else:
            yield raw


def _write_lines(out: BinaryIO, lines: Iterable[bytes]) -> int:
    count = 0
    chunk: list[bytes] = []
    for line in lines:
        chunk.append(line)
        if len(chunk) == 4096:
            out.write(b"".join(chunk))
            count += len(chunk)
            chunk.clear()
    out.write(b"".join(chunk))
    return count + len(chunk)


# ---------------------------------------------------------------------------------------------------------
# One batch: original events, interleaved with their duplicates and with bad lines

# How much later than its collector time the batch is enriched.
_ENRICHMENT_LAG_MS = 3 * 60_000
# A few events of a batch are enriched a little later than the rest.
_STRAGGLER_RATE = 0.005
_LATER_COPY_RATE = 1 / 3
# Visitors on the site at the same time, whose events are interleaved. Bounding them bounds the memory a
# batch needs, however many events it has (about 70 MB for a million).
_CONCURRENT_VISITORS = 200


class _Batch:
    """The lines of one run folder: its events in output order, with their duplicates and bad lines."""

    def __init__(self, options: GenerationOptions, rng: random.Random):
        self._options = options
        self._rng = rng
        self._start_ms = (options.start - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)
        self._traffic = _WebTraffic(rng, self._start_ms - _ENRICHMENT_LAG_MS)
        self._uuids = _Uuids(rng)
        extra_lines = options.natural_duplicates + options.synthetic_duplicates + options.bad_lines
        self.total_lines = options.events + extra_lines
        kinds = list(BAD_LINE_KINDS)
        self._bad_kinds = [kinds[i % len(kinds)] for i in range(options.bad_lines)]
        self.bad_line_kinds = {kind: self._bad_kinds.count(kind) for kind in kinds}

    def lines(self) -> Iterator[bytes]:
        """Every line of the batch in output order; each extra line comes after the event it derives from."""
        options, rng = self._options, self._rng
        extras = self._extras_by_event()
        etl = _timestamp_text(self._start_ms)
        stragglers = [_timestamp_text(self._start_ms + rng.randrange(1000, 30_000)) for _ in range(5)]
        # An extra line lands up to a file's length later, so duplicates are rarely adjacent or in one file.
        window = max(2, self.total_lines // options.files)
        pending: list[tuple[int, int, bytes]] = []
        sequence = itertools.count()
        written = 0

        for position, event in enumerate(self._original_events()):
            event.values[_V_ETL] = etl if rng.random() >= _STRAGGLER_RATE else rng.choice(stragglers)
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

    def _extra_line(self, extra: str, event: _Event, line: bytes) -> bytes:
        """The line of an extra of `event`, whose own line is `line`: see _extras_by_event."""
        rng = self._rng
        if extra == "natural":
            if rng.random() < _LATER_COPY_RATE:  # delivered again after the enricher had moved on
                later = _timestamp_text(self._start_ms + rng.randrange(30_000, 600_000))
                return event.replaced(_V_ETL, later).line()
            return line
        if extra == "synthetic":
            return self._traffic.synthetic_twin(event).line()
        other_event = event.replaced(_V_EVENT_ID, self._uuids.next())
        return _bad_line(extra, other_event.line().decode(), rng)

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

    def _original_events(self) -> Iterator[_Event]:
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


_INVALID_VALUES = {
    "invalid_timestamp": ("collector_tstamp", "not-a-date"),
    "invalid_int": ("dvce_screenwidth", "wide"),
    "invalid_boolean": ("dvce_ismobile", "yes"),
    "invalid_uuid": ("event_id", "not-a-uuid"),
}
_WRONG_WRAPPER_SCHEMAS = (
    "iglu:com.snowplowanalytics.snowplow/unstruct_event/jsonschema/1-0-0",
    "iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/2-0-0",
    "iglu:com.acme/contexts/jsonschema/1-0-1",
)
_INVALID_IGLU_URIS = (
    "iglu:com.acme/../../etc/jsonschema/1-0-0",
    "iglu:bad",
    "com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0",
    "iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0",
)


def _bad_line(kind: str, good_line: str, rng: random.Random) -> bytes:
    """A line with exactly one defect of `kind`, made from a good line so everything else is valid."""
    fields = good_line.removesuffix("\n").split("\t")
    if kind == "not_tsv":
        return (",".join(fields) + "\n").encode()
    if kind == "truncated":
        return ("\t".join(fields[: rng.randint(2, len(fields) - 1)]) + "\n").encode()
    if kind in _INVALID_VALUES:
        name, value = _INVALID_VALUES[kind]
        fields[FIELD_INDEX[name]] = value
    elif kind == "invalid_json":
        fields[_CONTEXTS] = fields[_CONTEXTS][: len(fields[_CONTEXTS]) // 2]
    elif kind == "wrong_wrapper_schema":
        fields[_CONTEXTS] = fields[_CONTEXTS].replace(CONTEXTS_SCHEMA, rng.choice(_WRONG_WRAPPER_SCHEMAS), 1)
    elif kind == "invalid_iglu_uri":
        fields[_CONTEXTS] = fields[_CONTEXTS].replace(WEB_PAGE_SCHEMA, rng.choice(_INVALID_IGLU_URIS), 1)
    else:
        raise ValueError(f"unknown bad line kind {kind!r}")
    return ("\t".join(fields) + "\n").encode()


# ---------------------------------------------------------------------------------------------------------
# Event lines: a template per page view, filled in per event
#
# Most fields are the same for every event of a page view (visitor, device, session, page, contexts). They
# are joined into text once per page view, leaving gaps for the few per-event fields, so an event costs a
# join of about 50 short strings instead of one of 131 fields.


def _indices(*names: str) -> tuple[int, ...]:
    return tuple(FIELD_INDEX[name] for name in names)


def _assign(fields: list[str], values: Mapping[str, str]) -> None:
    for name, value in values.items():
        fields[FIELD_INDEX[name]] = value


_PER_EVENT_FIELDS = tuple(
    sorted(
        _indices(
            "etl_tstamp", "collector_tstamp", "dvce_created_tstamp", "event", "event_id",
            "se_category", "se_action", "se_label", "se_property", "se_value", "unstruct_event",
            "pp_xoffset_min", "pp_xoffset_max", "pp_yoffset_min", "pp_yoffset_max",
            "dvce_sent_tstamp", "derived_tstamp", "event_vendor", "event_name", "event_format", "event_version",
            "event_fingerprint", "true_tstamp",
        )
    )
)  # fmt: skip
_VALUE_POSITION = {FIELD_NAMES[index]: position for position, index in enumerate(_PER_EVENT_FIELDS)}


def _value_span(first: str, last: str) -> slice:
    """Per-event fields that are consecutive in the line, to set in one slice assignment."""
    span = slice(_VALUE_POSITION[first], _VALUE_POSITION[last] + 1)
    assert span.stop - span.start == FIELD_INDEX[last] - FIELD_INDEX[first] + 1, (first, last)
    return span


(
    _V_ETL, _V_COLLECTOR, _V_DVCE_CREATED, _V_DVCE_SENT, _V_DERIVED, _V_TRUE_TSTAMP, _V_EVENT, _V_EVENT_ID,
    _V_UNSTRUCT, _V_FINGERPRINT,
) = (
    _VALUE_POSITION[name]
    for name in (
        "etl_tstamp", "collector_tstamp", "dvce_created_tstamp", "dvce_sent_tstamp", "derived_tstamp",
        "true_tstamp", "event", "event_id", "unstruct_event", "event_fingerprint",
    )
)  # fmt: skip
_V_EVENT_SCHEMA = _value_span("event_vendor", "event_version")
_V_STRUCT = _value_span("se_category", "se_value")
_V_PAGE_PING = _value_span("pp_xoffset_min", "pp_yoffset_max")

# Marks the per-event fields in a page view's fields, where its text is split into parts; never in data.
_PER_EVENT = "\0"

(_CONTEXTS, _DOMAIN_SESSIONID, _DOMAIN_SESSIONIDX, _DOC_HEIGHT) = _indices(
    "contexts", "domain_sessionid", "domain_sessionidx", "doc_height"
)
# The page, its referrer and its campaign are consecutive fields, set per page view in one slice.
_PAGE_SPAN = slice(FIELD_INDEX["page_url"], FIELD_INDEX["mkt_campaign"] + 1)
_AD_CLICK_SPAN = slice(FIELD_INDEX["mkt_clickid"], FIELD_INDEX["mkt_network"] + 1)


def _page_span(values: Mapping[str, str]) -> tuple[str, ...]:
    """The _PAGE_SPAN fields from field name -> text; the ones not given are empty."""
    assert values.keys() <= set(FIELD_NAMES[_PAGE_SPAN]), values.keys() - set(FIELD_NAMES[_PAGE_SPAN])
    return tuple(values.get(name, "") for name in FIELD_NAMES[_PAGE_SPAN])


class _PageView:
    __slots__ = ("parts", "payload_hash")

    def __init__(self, page_view_id: str, fields: list[str]):
        # the fixed text at even positions, a slot for each per-event field at odd ones
        self.parts: list[str] = [_PER_EVENT] * (2 * len(_PER_EVENT_FIELDS) + 1)
        self.parts[::2] = ("\t".join(fields) + "\n").split(_PER_EVENT)
        # The page view id (in the web_page context) stands for all the fields fixed per page view: hashing
        # it is as good as hashing them, and much cheaper.
        self.payload_hash = hashlib.md5(page_view_id.encode())


class _Event:
    __slots__ = ("page_view", "values", "event_ms", "visitor")

    def __init__(self, page_view: _PageView, values: list[str], event_ms: int, visitor: _Visitor):
        self.page_view = page_view
        self.values = values  # the per-event fields, in line order
        self.event_ms = event_ms  # when it happened, by a correct clock
        self.visitor = visitor

    def line(self) -> bytes:
        parts = self.page_view.parts.copy()
        parts[1::2] = self.values
        return "".join(parts).encode()

    def replaced(self, position: int, value: str) -> _Event:
        """A copy with one per-event field changed and the fingerprint kept."""
        values = self.values.copy()
        values[position] = value
        return _Event(self.page_view, values, self.event_ms, self.visitor)


def _fingerprint(page_view: _PageView, values: list[str]) -> str:
    """An md5 of the payload: the page view's fixed fields and the event's own, taken while etl_tstamp and
    the fingerprint itself are still empty, so a copy delivered again and enriched later keeps it."""
    payload_hash = page_view.payload_hash.copy()
    payload_hash.update("\t".join(values).encode())
    return payload_hash.hexdigest()


_MINUTE_TEXT: dict[int, str] = {}
_SECONDS_TEXT = [f"{millis // 1000:02d}.{millis % 1000:03d}" for millis in range(60_000)]


def _timestamp_text(epoch_ms: int) -> str:
    """`yyyy-MM-dd HH:mm:ss.SSS` in UTC from texts computed once: each minute's, and each `ss.SSS`."""
    minute = epoch_ms // 60_000
    try:
        prefix = _MINUTE_TEXT[minute]
    except KeyError:
        prefix = _MINUTE_TEXT[minute] = datetime.fromtimestamp(minute * 60, UTC).strftime("%Y-%m-%d %H:%M:")
    return prefix + _SECONDS_TEXT[epoch_ms % 60_000]


_UUID_VARIANT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}


class _Uuids:
    """Random version 4 UUIDs drawn from `rng`, so they are reproducible for a seed.

    They are made a thousand at a time: one comprehension costs much less than a call per UUID.
    """

    def __init__(self, rng: random.Random):
        self._rng = rng
        self._ready: list[str] = []

    def next(self) -> str:
        if not self._ready:
            h = self._rng.randbytes(16 * 1024).hex()
            self._ready = [
                f"{h[i:i + 8]}-{h[i + 8:i + 12]}-4{h[i + 13:i + 16]}-{_UUID_VARIANT[h[i + 16]]}"
                f"{h[i + 17:i + 20]}-{h[i + 20:i + 32]}"
                for i in range(0, len(h), 32)
            ]
        return self._ready.pop()


# ---------------------------------------------------------------------------------------------------------
# Reference data: the pipeline, the visitors' places and devices


class _WeightedChoice(Generic[_T]):
    """Options picked at random in proportion to their weights, with one random number per pick."""

    def __init__(self, weighted: Iterable[tuple[_T, float]]):
        options, weights = zip(*weighted, strict=True)
        self._options: tuple[_T, ...] = options
        self._cumulative_weights = list(itertools.accumulate(weights))

    @classmethod
    def of(cls, **weights: float) -> _WeightedChoice[str]:
        return _WeightedChoice(weights.items())

    def pick(self, rng: random.Random) -> _T:
        total = self._cumulative_weights[-1]
        return self._options[bisect.bisect(self._cumulative_weights, rng.random() * total)]


_TRACKER_VERSIONS = ("js-3.17.0", "js-3.21.0", "js-3.23.1", "js-3.24.2")
_COLLECTOR_VERSION = "ssc-2.10.0-kinesis"
_ENRICH_VERSION = "snowplow-enrich-kinesis-3.9.0"
_APP_ID = "acme-shop"
_SITE_HOST = "www.acme.com"


@dataclass(frozen=True)
class _Place:
    weight: float
    country: str
    region: str
    city: str
    zipcode: str
    latitude: str
    longitude: str
    region_name: str
    timezone: str
    language: str
    isp: str
    isp_domain: str
    ip_prefix: str  # the first two octets of the visitors' addresses


_PLACES = _WeightedChoice((place, place.weight) for place in (
    _Place(14, "NL", "NH", "Amsterdam", "1012", "52.3731", "4.8922", "North Holland", "Europe/Amsterdam", "nl-NL", "KPN B.V.", "kpn.net", "145.53"),
    _Place(6, "NL", "ZH", "Rotterdam", "3011", "51.9225", "4.4792", "South Holland", "Europe/Amsterdam", "nl-NL", "Ziggo B.V.", "ziggo.nl", "84.26"),
    _Place(12, "DE", "BE", "Berlin", "10115", "52.5200", "13.4050", "Land Berlin", "Europe/Berlin", "de-DE", "Deutsche Telekom AG", "telekom.de", "91.64"),
    _Place(8, "DE", "BY", "Munich", "80331", "48.1374", "11.5755", "Bavaria", "Europe/Berlin", "de-DE", "Vodafone GmbH", "vodafone.de", "88.217"),
    _Place(14, "GB", "ENG", "London", "EC1A", "51.5072", "-0.1276", "England", "Europe/London", "en-GB", "British Telecommunications PLC", "bt.com", "81.129"),
    _Place(6, "FR", "IDF", "Paris", "75001", "48.8566", "2.3522", "Île-de-France", "Europe/Paris", "fr-FR", "Orange S.A.", "orange.fr", "90.84"),
    _Place(4, "CH", "ZH", "Zürich", "8001", "47.3769", "8.5417", "Zurich", "Europe/Zurich", "de-CH", "Swisscom (Schweiz) AG", "swisscom.ch", "178.197"),
    _Place(4, "ES", "MD", "Madrid", "28013", "40.4168", "-3.7038", "Madrid", "Europe/Madrid", "es-ES", "Telefonica de Espana", "telefonica.es", "83.44"),
    _Place(12, "US", "NY", "New York", "10001", "40.7128", "-74.0060", "New York", "America/New_York", "en-US", "Verizon Fios", "verizon.net", "72.229"),
    _Place(8, "US", "CA", "San Francisco", "94103", "37.7749", "-122.4194", "California", "America/Los_Angeles", "en-US", "Comcast Cable", "comcast.net", "73.15"),
    _Place(5, "US", "IL", "Chicago", "60601", "41.8781", "-87.6298", "Illinois", "America/Chicago", "en-US", "AT&T Services", "att.net", "99.12"),
    _Place(3, "BR", "SP", "São Paulo", "01310", "-23.5505", "-46.6333", "São Paulo", "America/Sao_Paulo", "pt-BR", "Telefonica Brasil", "vivo.com.br", "177.68"),
    _Place(2, "JP", "13", "Tokyo", "100-0001", "35.6762", "139.6503", "Tokyo", "Asia/Tokyo", "ja-JP", "NTT Communications", "ocn.ne.jp", "153.156"),
    _Place(2, "AU", "NSW", "Sydney", "2000", "-33.8688", "151.2093", "New South Wales", "Australia/Sydney", "en-AU", "Telstra", "telstra.net", "101.160"),
))  # fmt: skip


@dataclass(frozen=True)
class _Device:
    weight: float
    useragent: str
    browser: str
    browser_version: str
    render_engine: str  # as user-agent-utils names it
    layout_engine: str  # as YAUAA names it
    layout_engine_version: str
    os_name: str
    os_family: str
    os_version: str
    os_manufacturer: str
    device_type: str  # Computer, Mobile or Tablet
    device_family: str  # as ua-parser names it
    device_brand: str
    device_name: str
    screens: tuple[tuple[int, int], ...]
    color_depth: str = "24"

    @property
    def is_mobile(self) -> bool:
        return self.device_type != "Computer"

    @cached_property
    def derived_contexts(self) -> tuple[str, str]:
        """derived_contexts without and with the YAUAA enrichment."""
        ua_parser = (UA_PARSER_SCHEMA, self._ua_parser_data())
        yauaa = (YAUAA_SCHEMA, self._yauaa_data())
        return contexts_json([ua_parser]), contexts_json([ua_parser, yauaa])

    def _ua_parser_data(self) -> dict:
        major, minor, patch = (self.browser_version.split(".") + ["", "", ""])[:3]
        os_parts = (self.os_version.split(".") + ["", "", ""])[:3]
        return {
            "useragentFamily": self.browser,
            "useragentMajor": major,
            "useragentMinor": minor or None,
            "useragentPatch": patch or None,
            "useragentVersion": f"{self.browser} {self.browser_version}",
            "osFamily": self.os_family,
            "osMajor": os_parts[0],
            "osMinor": os_parts[1] or None,
            "osPatch": os_parts[2] or None,
            "osPatchMinor": None,
            "osVersion": f"{self.os_family} {self.os_version}",
            "deviceFamily": self.device_family,
        }

    def _yauaa_data(self) -> dict:
        device_class = {"Computer": "Desktop", "Mobile": "Phone", "Tablet": "Tablet"}[self.device_type]
        major = self.browser_version.split(".")[0]
        return {
            "deviceClass": device_class,
            "deviceName": self.device_name,
            "deviceBrand": self.device_brand,
            "operatingSystemClass": "Mobile" if self.is_mobile else "Desktop",
            "operatingSystemName": self.os_family,
            "operatingSystemVersion": self.os_version,
            "layoutEngineClass": "Browser",
            "layoutEngineName": self.layout_engine,
            "layoutEngineVersion": self.layout_engine_version,
            "agentClass": "Browser",
            "agentName": self.browser,
            "agentVersion": self.browser_version,
            "agentVersionMajor": major,
        }


_DESKTOP_SCREENS = ((1920, 1080), (1366, 768), (1536, 864), (2560, 1440), (1440, 900))
_MAC_SCREENS = ((1440, 900), (1512, 982), (1728, 1117), (2560, 1440))
_IPHONE_SCREENS = ((390, 844), (393, 852), (430, 932), (375, 667))
_ANDROID_SCREENS = ((412, 915), (360, 800), (384, 854), (393, 873))
_DEVICES = _WeightedChoice((device, device.weight) for device in (
    _Device(
        28, "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/122.0.0.0 Safari/537.36",
        "Chrome", "122.0.0.0", "WEBKIT", "Blink", "122.0", "Windows 10", "Windows", "10", "Microsoft Corporation",
        "Computer", "Other", "Unknown", "Desktop", _DESKTOP_SCREENS,
    ),
    _Device(
        8, "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/122.0.0.0 Safari/537.36 Edg/122.0.2365.80",
        "Edge", "122.0.2365.80", "WEBKIT", "Blink", "122.0", "Windows 10", "Windows", "10", "Microsoft Corporation",
        "Computer", "Other", "Unknown", "Desktop", _DESKTOP_SCREENS,
    ),
    _Device(
        6, "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:123.0) Gecko/20100101 Firefox/123.0",
        "Firefox", "123.0", "GECKO", "Gecko", "123.0", "Windows 10", "Windows", "10", "Microsoft Corporation",
        "Computer", "Other", "Unknown", "Desktop", _DESKTOP_SCREENS,
    ),
    _Device(
        10, "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.3.1 Safari/605.1.15",
        "Safari", "17.3.1", "WEBKIT", "AppleWebKit", "605.1.15", "Mac OS X", "Mac OS X", "10.15.7", "Apple Inc.",
        "Computer", "Mac", "Apple", "Apple Macintosh", _MAC_SCREENS, "30",
    ),
    _Device(
        7, "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/122.0.0.0 Safari/537.36",
        "Chrome", "122.0.0.0", "WEBKIT", "Blink", "122.0", "Mac OS X", "Mac OS X", "10.15.7", "Apple Inc.",
        "Computer", "Mac", "Apple", "Apple Macintosh", _MAC_SCREENS, "30",
    ),
    _Device(
        22, "Mozilla/5.0 (iPhone; CPU iPhone OS 17_3_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.3.1 Mobile/15E148 Safari/604.1",
        "Mobile Safari", "17.3.1", "WEBKIT", "AppleWebKit", "605.1.15", "iOS", "iOS", "17.3.1", "Apple Inc.",
        "Mobile", "iPhone", "Apple", "Apple iPhone", _IPHONE_SCREENS,
    ),
    _Device(
        14, "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/122.0.0.0 Mobile Safari/537.36",
        "Chrome Mobile", "122.0.0.0", "WEBKIT", "Blink", "122.0", "Android", "Android", "10", "Google Inc.",
        "Mobile", "K", "Unknown", "Android Mobile", _ANDROID_SCREENS,
    ),
    _Device(
        5, "Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/24.0 Chrome/117.0.0.0 Mobile Safari/537.36",
        "Samsung Internet", "24.0", "WEBKIT", "Blink", "117.0", "Android", "Android", "14", "Google Inc.",
        "Mobile", "Samsung SM-S918B", "Samsung", "Samsung SM-S918B", ((384, 832), (412, 915)),
    ),
    _Device(
        4, "Mozilla/5.0 (iPad; CPU OS 17_3 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.3 Mobile/15E148 Safari/604.1",
        "Mobile Safari", "17.3", "WEBKIT", "AppleWebKit", "605.1.15", "iOS", "iOS", "17.3", "Apple Inc.",
        "Tablet", "iPad", "Apple", "Apple iPad", ((820, 1180), (768, 1024), (834, 1194)),
    ),
))  # fmt: skip
_BROWSER_FEATURES = (
    "br_features_flash", "br_features_java", "br_features_director", "br_features_quicktime",
    "br_features_realplayer", "br_features_windowsmedia", "br_features_gears", "br_features_silverlight",
)  # fmt: skip


# ---------------------------------------------------------------------------------------------------------
# Reference data: the shop site


@dataclass(frozen=True)
class _Product:
    sku: str
    price: float
    sizes: tuple[str, ...]


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: each page exists once
class _Page:
    kind: str
    path: str
    title: str
    doc_height: int
    query: str = ""
    product: _Product | None = None
    checkout_step: int = 0
    schema_org: str = ""  # ",{org.schema WebPage entity}" for pages that carry one

    def url_fields(self, extra_query: str = "") -> dict[str, str]:
        """The page_url* fields, with campaign parameters added to the query of a landing page."""
        query = "&".join(part for part in (self.query, extra_query) if part)
        return {
            "page_url": f"https://{_SITE_HOST}{self.path}" + (f"?{query}" if query else ""),
            "page_title": self.title,
            "page_urlscheme": "https",
            "page_urlhost": _SITE_HOST,
            "page_urlport": "443",
            "page_urlpath": self.path,
            "page_urlquery": query,
        }

    def arrival_from(self, previous: _Page) -> tuple[str, ...]:
        """The _PAGE_SPAN fields of a visit to this page from `previous` on the site."""
        span = self._arrivals.get(previous)
        if span is None:
            previous_url = previous.url_fields()
            referrer = {
                "page_referrer": previous_url["page_url"],
                "refr_urlscheme": "https",
                "refr_urlhost": _SITE_HOST,
                "refr_urlport": "443",
                "refr_urlpath": previous.path,
                "refr_urlquery": previous.query,
                "refr_medium": "internal",
            }
            span = self._arrivals[previous] = _page_span(self.url_fields() | referrer)
        return span

    @cached_property
    def _arrivals(self) -> dict[_Page, tuple[str, ...]]:
        return {}

    @cached_property
    def doc_height_text(self) -> str:
        return str(self.doc_height)


_SHOE_SIZES = tuple(f"eu-{size}" for size in range(38, 47))
_CLOTHING_SIZES = ("xs", "s", "m", "l", "xl")
_CATEGORIES = (
    ("running-shoes", "Running shoes", _SHOE_SIZES,
     ("Cloudstride 3", "Tempo Racer", "Glide Max", "Pacer Lite", "Marathon Pro 2", "Daily Trainer", "Swift 5")),
    ("trail-shoes", "Trail shoes", _SHOE_SIZES,
     ("Ridgeline GTX", "Summit Grip", "Mudrunner", "Canyon Trail 2", "Fell Racer")),
    ("jackets", "Jackets", _CLOTHING_SIZES,
     ("Stormshell Jacket", "Windbreaker Ultra", "Thermal Vest", "Rain Runner Jacket")),
    ("tops", "Tops", _CLOTHING_SIZES,
     ("Merino Long Sleeve", "Breeze Tee", "Race Singlet", "Half-Zip Midlayer", "Tech Tee")),
    ("accessories", "Accessories", ("one-size",),
     ("Trail Socks 3-Pack", "Headlamp 400", "Running Belt", "Cap Airflow", "Hydration Vest 5L", "Gloves Thermo")),
)  # fmt: skip
_SEARCHES = ("running shoes", "trail", "rain jacket", "socks", "gore-tex", "marathon", "headlamp", "merino", "vest")
_FILTER_COLOURS = ("black", "blue", "red", "green", "grey", "orange")


def _schema_org_entity(genre: str, breadcrumb: list[str], keywords: list[str]) -> str:
    data = {"genre": genre, "breadcrumb": breadcrumb, "inLanguage": "en-US", "keywords": keywords}
    return "," + _entity_json(SCHEMA_ORG_WEB_PAGE_SCHEMA, data)


def _build_site() -> dict[str, tuple[_Page, ...]]:
    pages: dict[str, list[_Page]] = defaultdict(list)
    home_schema_org = _schema_org_entity("home", ["Home"], ["running", "outdoor"])
    pages["home"].append(_Page("home", "/", "Acme - running and outdoor gear", 4200, schema_org=home_schema_org))
    number = 1000
    for slug, label, sizes, names in _CATEGORIES:
        pages["category"].append(_Page("category", f"/c/{slug}", f"{label} | Acme", 5200 + 100 * len(names)))
        for name in names:
            number += 1
            product = _Product(f"ACM-{number}", round(29.95 + (number * 37 % 13) * 10, 2), sizes)
            slug_name = name.lower().replace(" ", "-")
            # about half the product pages carry the schema.org context
            schema_org = _schema_org_entity("product", ["Home", label, name], slug.split("-")) if number % 2 else ""
            pages["product"].append(
                _Page("product", f"/p/{product.sku.lower()}-{slug_name}", f"{name} | Acme",
                      3400 + number % 7 * 150, product=product, schema_org=schema_org)
            )  # fmt: skip
    for search in _SEARCHES:
        pages["search"].append(
            _Page("search", "/search", f"Search: {search} | Acme", 3800, query=f"q={quote_plus(search)}")
        )
    pages["cart"].append(_Page("cart", "/cart", "Your basket | Acme", 1900))
    for step, name in enumerate(("address", "delivery", "payment"), start=1):
        pages["checkout"].append(
            _Page("checkout", f"/checkout/{name}", f"Checkout - {name} | Acme", 1600, checkout_step=step)
        )
    pages["confirmation"].append(
        _Page("confirmation", "/checkout/confirmation", "Thank you for your order | Acme", 1400)
    )
    pages["account"] += [
        _Page("account", "/account", "My account | Acme", 1500),
        _Page("account", "/account/orders", "My orders | Acme", 2100),
    ]
    for slug, title in (("returns", "Returns"), ("shipping", "Shipping"), ("size-guide", "Size guide")):
        pages["help"].append(_Page("help", f"/help/{slug}", f"{title} | Acme help", 2600))
    return {kind: tuple(kind_pages) for kind, kind_pages in pages.items()}


# Where a visitor goes next from a kind of page; checkout steps advance through their own rule.
_NEXT_PAGE = {
    "home": _WeightedChoice.of(category=5, search=2, product=2, account=1, help=1),
    "category": _WeightedChoice.of(product=6, category=2, search=1, home=1),
    "product": _WeightedChoice.of(product=3, category=2, cart=2, search=1, home=1),
    "search": _WeightedChoice.of(product=5, search=1, category=1),
    "cart": _WeightedChoice.of(checkout=4, product=1, category=1),
    "confirmation": _WeightedChoice.of(home=1, account=1),
    "account": _WeightedChoice.of(home=1, category=1, product=1),
    "help": _WeightedChoice.of(home=1, category=1, product=1),
}
_LANDING_PAGE = _WeightedChoice.of(home=4, category=3, product=4, search=1, help=0.5)
_SITE = _build_site()


@dataclass(frozen=True)
class _TrafficSource:
    weight: float
    referrer: str = ""
    medium: str = ""
    source: str = ""
    campaign: Mapping[str, str] = field(default_factory=dict)  # utm_* parameters of the landing page
    click_network: str = ""  # ad network whose click id the landing page carries

    def landing(self, page: _Page, click_id: str) -> tuple[str, ...]:
        """The _PAGE_SPAN fields of a session's first page, reached from this source."""
        if click_id:
            return self._landing_span(page, click_id)
        span = self._landings.get(page)
        if span is None:
            span = self._landings[page] = self._landing_span(page, "")
        return span

    @cached_property
    def _landings(self) -> dict[_Page, tuple[str, ...]]:
        return {}

    def _landing_span(self, page: _Page, click_id: str) -> tuple[str, ...]:
        query = "&".join(f"utm_{key}={quote_plus(value)}" for key, value in self.campaign.items())
        if click_id:
            query = "&".join(part for part in (query, f"gclid={click_id}") if part)
        fields = page.url_fields(query) | {f"mkt_{key}": value for key, value in self.campaign.items()}
        if self.referrer:
            url = urlsplit(self.referrer)
            fields |= {
                "page_referrer": self.referrer,
                "refr_urlscheme": url.scheme,
                "refr_urlhost": url.hostname or "",
                "refr_urlport": str(url.port or (443 if url.scheme == "https" else 80)),
                "refr_urlpath": url.path,
                "refr_urlquery": url.query,
                "refr_medium": self.medium,
                "refr_source": self.source,
            }
        return _page_span(fields)


_TRAFFIC_SOURCES = _WeightedChoice((source, source.weight) for source in (
    _TrafficSource(32),
    _TrafficSource(20, "https://www.google.com/", "search", "Google"),
    _TrafficSource(4, "https://www.bing.com/", "search", "Bing"),
    _TrafficSource(2, "https://duckduckgo.com/", "search", "DuckDuckGo"),
    _TrafficSource(
        10, "https://www.google.com/", "search", "Google",
        {"source": "google", "medium": "cpc", "campaign": "spring_sale_2026", "term": "running shoes"}, "Google",
    ),
    _TrafficSource(7, "https://l.facebook.com/", "social", "Facebook"),
    _TrafficSource(
        5, "https://www.instagram.com/", "social", "Instagram",
        {"source": "instagram", "medium": "paid_social", "campaign": "trail_season", "content": "carousel_2"},
    ),
    _TrafficSource(
        10, "", "", "",
        {"source": "newsletter", "medium": "email", "campaign": "march_newsletter", "content": "hero_banner"},
    ),
    _TrafficSource(3, "https://www.runnersworld.com/gear/a20865766/best-running-shoes/", "unknown"),
))  # fmt: skip


def _link_click(target_url: str, element_id: str, classes: list[str], target: str = "") -> str:
    data: dict[str, object] = {"targetUrl": target_url, "elementId": element_id, "elementClasses": classes}
    if target:
        data["elementTarget"] = target
    return unstruct_json(LINK_CLICK_SCHEMA, data)


_FOOTER_LINK_CLICKS = (
    _link_click("https://www.instagram.com/acme/", "footer-instagram", ["footer-link", "social"], "_blank"),
    _link_click("https://www.strava.com/clubs/acme-run-club", "footer-strava", ["footer-link", "social"], "_blank"),
    _link_click(f"https://{_SITE_HOST}/help/returns", "footer-returns", ["footer-link"]),
    _link_click("https://maps.google.com/?q=Acme+Store+Amsterdam", "header-store-locator", ["header-link"], "_blank"),
)
_SIZE_GUIDE_CLICK = _link_click(f"https://{_SITE_HOST}/help/size-guide", "size-guide-link", ["pdp-link"])
_SITE_WIDE_STRUCT_EVENTS = (
    ("newsletter", "subscribe", "footer", "", ""),
    ("video", "play", "how-we-test-our-shoes", "", ""),
    ("ui", "open-menu", "header", "", ""),
    ("chat", "open", "help-widget", "", ""),
)


@dataclass(frozen=True)
class _EventKind:
    event: str
    schema: str

    @cached_property
    def blank_values(self) -> list[str]:
        """Per-event fields of this kind of event before any other is set: copy, then fill in."""
        values = [""] * len(_PER_EVENT_FIELDS)
        values[_V_EVENT] = self.event
        values[_V_EVENT_SCHEMA] = self.schema.removeprefix("iglu:").split("/")
        return values


_PAGE_VIEW = _EventKind("page_view", "iglu:com.snowplowanalytics.snowplow/page_view/jsonschema/1-0-0")
_PAGE_PING = _EventKind("page_ping", "iglu:com.snowplowanalytics.snowplow/page_ping/jsonschema/1-0-0")
_STRUCT = _EventKind("struct", "iglu:com.google.analytics/event/jsonschema/1-0-0")
_LINK_CLICK = _EventKind("unstruct", LINK_CLICK_SCHEMA)
_CHECKOUT_STEP = _EventKind("unstruct", CHECKOUT_STEP_SCHEMA)


# ---------------------------------------------------------------------------------------------------------
# Visitors, sessions and pages

_MINIMUM_VISIT_MS = 5_000
_HEARTBEAT_MS = 10_000
_MAX_PINGS_PER_PAGE = 60
# No two consecutive events of a session are further apart than this (pings every heartbeat, an idle
# heartbeat skipped, or a short look at a page), which bounds how long a session of n events can last.
_MAX_EVENT_SPACING_MS = 30_000
_SESSION_TIMEOUT_MS = 30 * 60_000
_MEAN_SESSION_GAP_MS = 8 * 3_600_000
# The last session of a visitor ends at least this long before the batch's latest collector time, which
# leaves room for events that a device sends minutes after it created them.
_LAST_SESSION_MARGIN_MS = 10 * 60_000
_OFFLINE_RATE = 0.01


@dataclass(frozen=True)
class _Visitor:
    template: list[str]  # the fields all events of the visitor share; per-event fields are _PER_EVENT
    first_session_index: int
    clock_skew_ms: int  # how far the device clock is off
    sets_true_tstamp: bool
    view_height: int
    extra_contexts: str  # ",{entity}" texts added to the contexts of every event


class _WebTraffic:
    """What visitors do on the shop site, as events in time order per visitor."""

    def __init__(self, rng: random.Random, latest_event_ms: int):
        self._rng = rng
        self._uuids = _Uuids(rng)
        self._latest_event_ms = latest_event_ms

    def visitor_events(self, budget: int) -> Iterator[_Event]:
        """A new visitor's `budget` events, over sessions hours or days apart."""
        rng = self._rng
        visitor = self._new_visitor()
        sessions = min(budget, max(1, round(budget / rng.uniform(6, 25))))
        cuts = sorted(rng.sample(range(1, budget), sessions - 1))
        sizes = [end - begin for begin, end in zip([0, *cuts], [*cuts, budget], strict=True)]
        # Sessions are placed backwards from the end of the batch, so no event is later than the batch.
        starts: list[int] = []
        end = self._latest_event_ms - _LAST_SESSION_MARGIN_MS - rng.randrange(3_600_000)
        for size in reversed(sizes):
            start = end - size * _MAX_EVENT_SPACING_MS
            starts.append(start)
            end = start - _SESSION_TIMEOUT_MS - int(rng.expovariate(1 / _MEAN_SESSION_GAP_MS))
        starts.reverse()
        for number, (size, start) in enumerate(zip(sizes, starts, strict=True)):
            yield from self._session_events(visitor, visitor.first_session_index + number, start, size)

    def synthetic_twin(self, event: _Event) -> _Event:
        """Another event on the same page reusing the event id, as a buggy tracker or a bot sends."""
        rng = self._rng
        values = _STRUCT.blank_values.copy()
        values[_V_EVENT_ID] = event.values[_V_EVENT_ID]
        values[_V_STRUCT] = rng.choice(_SITE_WIDE_STRUCT_EVENTS)
        event_ms = event.event_ms + rng.randrange(1_000, 120_000)
        self._stamp(values, event_ms, event.visitor)
        values[_V_FINGERPRINT] = _fingerprint(event.page_view, values)
        values[_V_ETL] = event.values[_V_ETL]
        return _Event(event.page_view, values, event_ms, event.visitor)

    def _new_visitor(self) -> _Visitor:
        rng = self._rng
        place = _PLACES.pick(rng)
        device = _DEVICES.pick(rng)
        screen_width, screen_height = rng.choice(device.screens)
        if device.is_mobile:
            view_width, view_height = screen_width, screen_height - rng.randrange(80, 160)
        else:
            view_width = screen_width - rng.choice((0, 0, 15, 17, 120, 300))
            view_height = screen_height - rng.randrange(110, 220)
        user_id = str(rng.randrange(10_000_000, 100_000_000)) if rng.random() < 0.3 else ""
        extra_contexts = ""
        if rng.random() < 0.5:
            user_context = {"tier": rng.choice(("bronze", "silver", "gold")), "loggedIn": bool(user_id)}
            extra_contexts = "," + _entity_json(USER_CONTEXT_SCHEMA, user_context)
        template = [""] * len(FIELD_NAMES)
        for index in _PER_EVENT_FIELDS:
            template[index] = _PER_EVENT
        _assign(
            template,
            {
                "app_id": _APP_ID,
                "platform": "web",
                "name_tracker": "sp",
                "v_tracker": rng.choice(_TRACKER_VERSIONS),
                "v_collector": _COLLECTOR_VERSION,
                "v_etl": _ENRICH_VERSION,
                "user_id": user_id,
                "user_ipaddress": f"{place.ip_prefix}.{rng.randrange(256)}.{rng.randrange(1, 255)}",
                "domain_userid": self._uuids.next(),
                "network_userid": self._uuids.next(),
                "geo_country": place.country,
                "geo_region": place.region,
                "geo_city": place.city,
                "geo_zipcode": place.zipcode,
                "geo_latitude": place.latitude,
                "geo_longitude": place.longitude,
                "geo_region_name": place.region_name,
                "geo_timezone": place.timezone,
                "ip_isp": place.isp,
                "ip_organization": place.isp,
                "ip_domain": place.isp_domain,
                "ip_netspeed": "Cellular" if device.is_mobile and rng.random() < 0.6 else "Cable/DSL",
                "useragent": device.useragent,
                "br_name": f"{device.browser} {device.browser_version.split('.')[0]}",
                "br_family": device.browser,
                "br_version": device.browser_version,
                "br_type": "Browser (mobile)" if device.is_mobile else "Browser",
                "br_renderengine": device.render_engine,
                "br_lang": place.language,
                "br_features_pdf": "0" if device.is_mobile else "1",
                **{feature: "0" for feature in _BROWSER_FEATURES},
                "br_cookies": "0" if rng.random() < 0.01 else "1",
                "br_colordepth": device.color_depth,
                "br_viewwidth": str(view_width),
                "br_viewheight": str(view_height),
                "os_name": device.os_name,
                "os_family": device.os_family,
                "os_manufacturer": device.os_manufacturer,
                "os_timezone": place.timezone,
                "dvce_type": device.device_type,
                "dvce_ismobile": "1" if device.is_mobile else "0",
                "dvce_screenwidth": str(screen_width),
                "dvce_screenheight": str(screen_height),
                "doc_charset": "UTF-8",
                "doc_width": str(view_width),
                "derived_contexts": device.derived_contexts[rng.random() < 0.15],
            },
        )
        return _Visitor(
            template=template,
            first_session_index=1 if rng.random() < 0.6 else rng.randint(2, 25),
            clock_skew_ms=self._clock_skew(),
            sets_true_tstamp=rng.random() < 0.02,
            view_height=view_height,
            extra_contexts=extra_contexts,
        )

    def _clock_skew(self) -> int:
        """Most device clocks are about right; some are off by minutes, a few by hours."""
        rng = self._rng
        roll = rng.random()
        if roll < 0.85:
            return rng.randrange(-800, 800)
        if roll < 0.97:
            return rng.randrange(-180_000, 180_000)
        return rng.randrange(-36 * 3_600_000, 36 * 3_600_000)

    def _session_events(self, visitor: _Visitor, index: int, start_ms: int, budget: int) -> Iterator[_Event]:
        rng = self._rng
        session = visitor.template.copy()
        session[_DOMAIN_SESSIONID] = self._uuids.next()
        session[_DOMAIN_SESSIONIDX] = str(index)
        source = _TRAFFIC_SOURCES.pick(rng)
        page = self._page_of_kind(_LANDING_PAGE.pick(rng))
        click_id = f"EAIaIQobChMI{rng.getrandbits(96):024x}" if source.click_network else ""
        page_span = source.landing(page, click_id)
        ad_click = (click_id, source.click_network) if click_id else ("", "")
        basket = 0.0
        now = start_ms
        landing = True
        while True:
            fields = session.copy()
            fields[_PAGE_SPAN] = page_span
            fields[_AD_CLICK_SPAN] = ad_click
            page_view_id = self._uuids.next()
            entities = _web_page_entity(page_view_id) + visitor.extra_contexts + page.schema_org
            fields[_CONTEXTS] = _contexts_text(entities)
            fields[_DOC_HEIGHT] = page.doc_height_text
            page_view = _PageView(page_view_id, fields)
            timeline, now, basket = self._page_activity(page, now, visitor, basket, landing, budget)
            for values, event_ms in timeline:
                values[_V_FINGERPRINT] = _fingerprint(page_view, values)
                yield _Event(page_view, values, event_ms, visitor)
                budget -= 1
                if not budget:
                    return
            previous, page = page, self._next_page(page)
            page_span = page.arrival_from(previous)
            ad_click = ("", "")
            landing = False

    def _page_activity(
        self, page: _Page, viewed_ms: int, visitor: _Visitor, basket: float, landing: bool, budget: int
    ) -> tuple[list[tuple[list[str], int]], int, float]:
        """The per-event values of one page view's events in time order, when the visitor views the next
        page, and the basket value then. Pings beyond the session's remaining `budget` are not made."""
        rng = self._rng
        rand = rng.random
        timeline = [(self._event(_PAGE_VIEW, viewed_ms, visitor), viewed_ms)]

        pings = 0 if rand() < 0.2 else min(_MAX_PINGS_PER_PAGE, 1 + int(rng.expovariate(1 / 6)), budget - 1)
        view_height = visitor.view_height
        max_scroll = max(0, page.doc_height - view_height)
        scroll = 0
        ping_ms = viewed_ms + _MINIMUM_VISIT_MS
        left_ms = viewed_ms + 2_000 + int(rand() * 13_000)
        for _ in range(pings):
            ping_ms += int(rand() * 1_000)
            top = scroll
            scroll = min(max_scroll, scroll + int(rand() * view_height))
            ping = self._event(_PAGE_PING, ping_ms, visitor)
            ping[_V_PAGE_PING] = ("0", "0", str(top), str(scroll))
            timeline.append((ping, ping_ms))
            left_ms = ping_ms
            # a visitor who is idle for a whole heartbeat produces no ping for it
            ping_ms += _HEARTBEAT_MS if rand() >= 0.1 else 2 * _HEARTBEAT_MS

        def during_visit() -> int:
            return viewed_ms + rng.randrange(300, max(400, left_ms - viewed_ms))

        if landing and rand() < 0.5:
            consent = ("consent", "accept-all", "cookie-banner", "", "")
            timeline.append(self._struct(during_visit(), visitor, consent))
        if page.product is not None:
            if rand() < 0.25:
                product = page.product
                basket = round(basket + product.price, 2)
                values = ("product", "add-to-cart", product.sku, rng.choice(product.sizes), f"{product.price:.2f}")
                timeline.append(self._struct(during_visit(), visitor, values))
            if rand() < 0.08:
                timeline.append(self._unstruct(during_visit(), visitor, _LINK_CLICK, _SIZE_GUIDE_CLICK))
        elif page.kind == "category" and rand() < 0.2:
            values = ("filter", "apply", "colour", rng.choice(_FILTER_COLOURS), "")
            timeline.append(self._struct(during_visit(), visitor, values))
        elif page.kind == "search" and rand() < 0.5:
            query = page.query.removeprefix("q=").replace("+", " ")
            values = ("search", "refine", query, "results", str(rng.randrange(0, 60)))
            timeline.append(self._struct(during_visit(), visitor, values))
        elif page.checkout_step:
            value = basket or rng.choice(_SITE["product"]).product.price  # type: ignore[union-attr]
            step = unstruct_json(CHECKOUT_STEP_SCHEMA, {"step": page.checkout_step, "basketValue": value})
            timeline.append(self._unstruct(during_visit(), visitor, _CHECKOUT_STEP, step))
        if rand() < 0.04:
            click = rng.choice(_FOOTER_LINK_CLICKS)
            timeline.append(self._unstruct(during_visit(), visitor, _LINK_CLICK, click))
        if rand() < 0.02:
            timeline.append(self._struct(during_visit(), visitor, rng.choice(_SITE_WIDE_STRUCT_EVENTS)))

        if len(timeline) > pings + 1:  # other events happened between the pings
            timeline.sort(key=itemgetter(1))
        next_page_ms = left_ms + 1_000 + int(rand() * 11_000)
        if page.kind == "confirmation":
            basket = 0.0
        return timeline, next_page_ms, basket

    def _event(self, kind: _EventKind, event_ms: int, visitor: _Visitor) -> list[str]:
        values = kind.blank_values.copy()
        values[_V_EVENT_ID] = self._uuids.next()
        self._stamp(values, event_ms, visitor)
        return values

    def _struct(self, event_ms: int, visitor: _Visitor, struct: tuple[str, ...]) -> tuple[list[str], int]:
        values = self._event(_STRUCT, event_ms, visitor)
        values[_V_STRUCT] = struct
        return values, event_ms

    def _unstruct(
        self, event_ms: int, visitor: _Visitor, kind: _EventKind, unstruct: str
    ) -> tuple[list[str], int]:
        values = self._event(kind, event_ms, visitor)
        values[_V_UNSTRUCT] = unstruct
        return values, event_ms

    def _stamp(self, values: list[str], event_ms: int, visitor: _Visitor) -> None:
        """The timestamps of an event that happened at `event_ms`, as the tracker and the collector see it."""
        rand = self._rng.random
        if rand() < _OFFLINE_RATE:
            queued = 10_000 + int(rand() * 290_000)  # the device was offline and sent the event later
        else:
            queued = 20 + int(rand() * 1_480)
        network = 30 + int(rand() * 370)
        created = event_ms + visitor.clock_skew_ms
        collector = event_ms + queued + network
        values[_V_DVCE_CREATED] = _timestamp_text(created)
        values[_V_DVCE_SENT] = _timestamp_text(created + queued)
        values[_V_COLLECTOR] = _timestamp_text(collector)
        if visitor.sets_true_tstamp:
            values[_V_TRUE_TSTAMP] = values[_V_DERIVED] = _timestamp_text(event_ms)
        else:
            # derived_tstamp corrects the collector time by the time the event spent on the device
            values[_V_DERIVED] = _timestamp_text(collector - queued)

    def _page_of_kind(self, kind: str) -> _Page:
        return self._rng.choice(_SITE[kind])

    def _next_page(self, page: _Page) -> _Page:
        if page.checkout_step:
            if self._rng.random() < 0.15:
                return _SITE["cart"][0]
            if page.checkout_step == len(_SITE["checkout"]):
                return _SITE["confirmation"][0]
            return _SITE["checkout"][page.checkout_step]
        kind = _NEXT_PAGE[page.kind].pick(self._rng)
        return _SITE["checkout"][0] if kind == "checkout" else self._page_of_kind(kind)
