"""Writing shredded good output (FORMATS.md §3) directly, for web-model tests that need no shred job.

A run folder gets what the shred job writes and the web models read: atomic-events TSV in the 128-column
order of ATOMIC_FIELDS, the `web_page` context as self-describing JSON lines, and `shredding_complete.json`
with the folder's collector_tstamp range, written last.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from snowplow_assets.events.enriched_schema import ATOMIC_FIELDS
from snowplow_assets.lake import Lake
from snowplow_assets.web.events import WEB_PAGE_TYPE

_NAMESPACE = uuid.UUID("6d1f3c1e-9a4b-4c55-8f4e-000000000000")


def uid(name: str) -> str:
    """A stable UUID for a readable test name."""
    return str(uuid.uuid5(_NAMESPACE, name))


def ts(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def render(value: datetime | None) -> str:
    if value is None:
        return ""
    value = value.astimezone(UTC)
    return f"{value.year:04d}" + value.strftime("-%m-%d %H:%M:%S.%f")[:-3]  # %Y does not pad years before 1000


@dataclass
class Event:
    """One good event. Device timestamps default to a device whose clock is right and sends at once."""

    name: str  # becomes event_id via uid()
    collector: datetime
    session: str | None
    user: str | None
    event: str = "page_view"
    page_view: str | None = None  # web_page context id (via uid()); None: no context
    created: datetime | None = None
    sent: datetime | None = None
    derived: datetime | None = None
    etl: datetime | None = None
    page_url: str = "https://shop.example.com/"
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def event_id(self) -> str:
        return uid(self.name)

    def values(self) -> dict[str, str]:
        created = self.created or self.collector - timedelta(milliseconds=400)
        sent = self.sent or created + timedelta(milliseconds=100)
        derived = self.derived or self.collector - (sent - created)
        values = {
            "app_id": "shop",
            "platform": "web",
            "etl_tstamp": render(self.etl or self.collector + timedelta(minutes=3)),
            "collector_tstamp": render(self.collector),
            "dvce_created_tstamp": render(created),
            "dvce_sent_tstamp": render(sent),
            "derived_tstamp": render(derived),
            "event": self.event,
            "event_id": self.event_id,
            "v_collector": "ssc-3.2.0-kinesis",
            "v_etl": "snowplow-enrich-kinesis-5.0.0",
            "domain_userid": uid(self.user) if self.user else "",
            "domain_sessionid": uid(self.session) if self.session else "",
            "page_url": self.page_url,
            "page_title": self.page_url.rsplit("/", 1)[-1] or "home",
            "event_fingerprint": self.name,
        }
        values.update(self.extra)
        return values

    def atomic_line(self) -> str:
        values = self.values()
        return "\t".join(values.get(f.name, "") for f in ATOMIC_FIELDS)

    def web_page_line(self) -> str | None:
        if self.page_view is None:
            return None
        return json.dumps(
            {
                "schema": {"vendor": "com.snowplowanalytics.snowplow", "name": "web_page", "format": "jsonschema",
                           "version": "1-0-0"},
                "data": {"id": uid(self.page_view)},
                "hierarchy": {"rootId": self.event_id, "rootTstamp": render(self.collector), "refRoot": "events",
                              "refTree": ["events", "web_page"], "refParent": "events"},
            },
            separators=(",", ":"),
        )  # fmt: skip


def write_shredded_run(lake: Lake, run: str, events: list[Event], *, complete: bool = True,
                       raw_lines: list[str] = ()) -> Path:  # fmt: skip
    """A shredded good run folder holding `events` (and any `raw_lines` as extra atomic lines)."""
    good = Path(lake.shredded_good(run))
    (good / "atomic-events").mkdir(parents=True, exist_ok=True)
    (good / "atomic-events" / "part-00000").write_text("".join(e.atomic_line() + "\n" for e in events)
                                                        + "".join(line + "\n" for line in raw_lines))  # fmt: skip
    pages = [line for e in events if (line := e.web_page_line()) is not None]
    if pages:
        folder = good / "shredded-types" / WEB_PAGE_TYPE / "version=1-0-0"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "part-00000").write_text("".join(line + "\n" for line in pages))
    if complete:
        # From the text of each line, as the shredder formats the range (fixed width, so the strings compare as
        # the instants do): an event's collector_tstamp may be overridden through `extra`, in year 0 say.
        stamps = [text for e in events if (text := e.values()["collector_tstamp"])]
        iso = lambda text: text.replace(" ", "T") + "Z"  # noqa: E731
        marker = {
            "schema": "iglu:com.snowplowanalytics.snowplow.storage.rdbloader/shredding_complete/jsonschema/2-0-1",
            "data": {
                "base": str(good) + "/",
                "timestamps": {
                    "min": iso(min(stamps)) if stamps else None,
                    "max": iso(max(stamps)) if stamps else None,
                },
                "count": {"good": len(events) + len(raw_lines), "bad": 0},
            },
        }
        (good / "shredding_complete.json").write_text(json.dumps(marker))
    return good


def run_name(moment: datetime) -> str:
    return f"run={moment.astimezone(UTC):%Y-%m-%d-%H-%M-%S}"
