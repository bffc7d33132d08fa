"""The multi-batch scenario the cross-batch tests read, run once per backend, and a throttling AWS proxy.

Shredding is the expensive part, so the scenario runs every batch once per backend (session-scoped,
parametrised) and records what the tests assert on: reports, outputs, check outcomes, manifest entries.

    step        run folder (etlTime)        what happens
    B3          run=2026-03-02-09-00-00     processed first, out of order: X, Y/fpY2, E (no fingerprint), all new
    B1          run=2026-03-01-10-00-00     A, C, N (no fingerprint), S, U new; X, a copy of B3's: dropped;
                                            Y/fpY1: id held by B3, renamed; E, the very line B3 had: renamed
    B2          run=2026-03-01-11-00-00     A and S/fpS1 copies of B1: dropped; C/fpC2 and N: ids B1 recorded,
                                            renamed; S/fpS2 shares S in-batch: renamed in-batch; D new;
                                            E, the same line a third time: renamed again, to another new id
    B1 rerun                                after the newer batches: the same output
    populate    into an empty manifest, from the outputs of B1-B3
    B5          run=2026-09-15-10-00-00     180 days later: A and C again, every earlier entry expired: kept
    tampered    a B5 key made wrong in the backend's storage: the blocking check must fail
"""

from __future__ import annotations

import http.client
import json
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import boto3
import pytest

from snowplow_assets.check_outcome import CheckOutcome
from snowplow_assets.events.enriched_schema import ATOMIC_FIELDS, FIELD_NAMES
from snowplow_assets.events.shred_batch import ShredOptions, ShredReport, shred_run_folder
from snowplow_assets.lake import Lake
from snowplow_assets.manifest.base import Batch, EventManifest
from snowplow_assets.manifest.checks import check_batch_against_manifest
from snowplow_assets.manifest.dynamodb_event_manifest import DynamoDbConfig, DynamoDbEventManifest, create_table
from snowplow_assets.manifest.lake_event_manifest import LakeEventManifest
from snowplow_assets.manifest.populate import PopulateReport, populate_event_manifest
from snowplow_assets.storage import LocalFileSystem
from snowplow_assets_tests.conftest import read_lines, write_run_folder
from snowplow_assets_tests.events.builders import event_line

NOW = datetime(2026, 3, 10, tzinfo=timezone.utc)
LATER = datetime(2026, 9, 16, tzinfo=timezone.utc)  # more than 180 days after every March etlTime
REGION = "eu-west-1"

B1, B2, B3, B5 = (
    "run=2026-03-01-10-00-00",
    "run=2026-03-01-11-00-00",
    "run=2026-03-02-09-00-00",
    "run=2026-09-15-10-00-00",
)
A = "aaaaaaaa-0000-4000-8000-00000000000a"
C = "cccccccc-0000-4000-8000-00000000000c"
N = "dddddddd-0000-4000-8000-00000000000d"  # never has a fingerprint
S = "eeeeeeee-0000-4000-8000-00000000000e"
U = "ffffffff-0000-4000-8000-00000000000f"
D = "bbbbbbbb-0000-4000-8000-00000000000b"
X = "11111111-0000-4000-8000-000000000001"
Y = "22222222-0000-4000-8000-000000000002"
E = "e0e0e0e0-0000-4000-8000-0000000000e0"  # never has a fingerprint; one line redelivered to three batches
F = "44444444-0000-4000-8000-000000000004"
Z = "55555555-0000-4000-8000-000000000005"  # the tests of a batch run again without some events
IDS = {"A": A, "C": C, "N": N, "S": S, "U": U, "D": D, "X": X, "Y": Y, "E": E}


def line(event_id: str, fingerprint: str | None, etl: str, **overrides: str) -> str:
    return event_line(
        event_id=event_id,
        event_fingerprint=fingerprint,
        etl_tstamp=etl,
        collector_tstamp=etl[:11] + "10:00:00.123",
        **overrides,
    )


ETL = {B1: "2026-03-01 10:05:00.000", B2: "2026-03-01 11:05:00.000", B3: "2026-03-02 09:05:00.000",
       B5: "2026-09-15 10:05:00.000"}  # fmt: skip
# At-least-once delivery with the fingerprint enrichment off lands the very same line in several run folders.
REDELIVERED = line(E, None, ETL[B3])
BATCHES = {
    B3: [line(X, "fpX", ETL[B3]), line(Y, "fpY2", ETL[B3], page_url="https://shop.example.com/y2"), REDELIVERED],
    B1: [line(A, "fpA", ETL[B1]), line(C, "fpC1", ETL[B1]), line(N, None, ETL[B1]), line(S, "fpS1", ETL[B1]),
         line(U, "fpU", ETL[B1]), line(X, "fpX", ETL[B1]), line(Y, "fpY1", ETL[B1]), REDELIVERED],
    B2: [line(A, "fpA", ETL[B2]), line(C, "fpC2", ETL[B2], page_url="https://shop.example.com/c2"),
         line(N, None, ETL[B2]), line(S, "fpS1", ETL[B2]), line(S, "fpS2", ETL[B2], page_url="https://x.example/s2"),
         line(D, "fpD", ETL[B2]), REDELIVERED],
    B5: [line(A, "fpA", ETL[B5]), line(C, "fpC3", ETL[B5], page_url="https://shop.example.com/c3")],
}  # fmt: skip
# Every key the scenario can record: pairs, and id claims (fingerprint None).
PAIRS = [(A, "fpA"), (C, "fpC1"), (C, "fpC2"), (C, "fpC3"), (S, "fpS1"), (S, "fpS2"), (U, "fpU"), (D, "fpD"),
         (X, "fpX"), (Y, "fpY1"), (Y, "fpY2")]  # fmt: skip
KEYS = PAIRS + [(event_id, None) for event_id in IDS.values()]


class MovableClock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Step:
    run: str
    report: ShredReport
    output: dict[str, list[str]]
    check: CheckOutcome


@dataclass
class Scenario:
    backend: str
    lake: Lake
    manifest: EventManifest
    steps: dict[str, Step] = field(default_factory=dict)
    entries_before_expiry: dict[tuple[str, str | None], str] = field(default_factory=dict)
    lake_layout_before_expiry: dict[str, Any] = field(default_factory=dict)
    populated: PopulateReport | None = None
    populated_entries: dict[tuple[str, str | None], str] = field(default_factory=dict)
    populated_statuses: dict[tuple[str, str | None, str], str] = field(default_factory=dict)
    after_expiry: dict[str, Any] = field(default_factory=dict)
    tampered_check: CheckOutcome | None = None


def write_shredded_output(lake: Lake, run: str, lines: list[str]) -> None:
    """The published output of enriched `lines`, as far as the populator reads it: atomic events and the marker."""
    atomic = Path(lake.shredded_good(run), "atomic-events")
    atomic.mkdir(parents=True)
    rows = [dict(zip(FIELD_NAMES, enriched.split("\t"), strict=True)) for enriched in lines]
    (atomic / "part-00000").write_text("".join("\t".join(row[f.name] for f in ATOMIC_FIELDS) + "\n" for row in rows))
    Path(lake.shredding_complete(run)).write_text("{}")


def output_of(lake: Lake, run: str) -> dict[str, list[str]]:
    """Every output folder of a run with its sorted lines: equal dicts mean equal output, whatever the file names."""
    good = Path(lake.shredded_good(run))
    folders = sorted({p.parent.relative_to(good).as_posix() for p in good.rglob("part-*")})
    return {**{folder: read_lines(good / folder) for folder in folders}, "bad": read_lines(lake.shredded_bad(run))}


def entries(spark, manifest: EventManifest) -> dict[tuple[str, str | None], str]:
    """Which run holds each scenario key, per the manifest's own lookup (expired entries included)."""
    found = manifest.lookup(spark.createDataFrame(KEYS, "event_id STRING, fingerprint STRING")).collect()
    assert len({(r.event_id, r.fingerprint) for r in found}) == len(found), "a key with two entries"
    return {(r.event_id, r.fingerprint): r.run for r in found}


def new_table(endpoint: str, name: str) -> DynamoDbConfig:
    config = DynamoDbConfig(
        f"{name}-{uuid.uuid4().hex[:8]}", REGION, endpoint, max_attempts=4, backoff_base_seconds=0.001
    )
    create_table(config)
    return config


@pytest.fixture(scope="session", params=["lake", "dynamodb"])
def scenario(request, spark, tmp_path_factory, moto_server) -> Scenario:
    fs, clock = LocalFileSystem(), MovableClock(NOW)
    lake = Lake(str(tmp_path_factory.mktemp(f"scenario-{request.param}") / "lake"))

    def manifest_in(place: str) -> EventManifest:
        if request.param == "lake":
            return LakeEventManifest(fs, Lake(str(tmp_path_factory.mktemp(place) / "lake")), clock=clock)
        return DynamoDbEventManifest(new_table(moto_server, place), fs, clock=clock)

    manifest = LakeEventManifest(fs, lake, clock=clock) if request.param == "lake" else manifest_in("live")
    scenario = Scenario(request.param, lake, manifest)
    options = ShredOptions(event_manifest=manifest)

    def shred(label: str, run: str) -> None:
        if not Path(lake.enriched_run(run)).exists():
            write_run_folder(lake, run, BATCHES[run])
        report = shred_run_folder(spark, fs, lake, run, options)
        check = check_batch_against_manifest(spark, fs, lake, manifest, report, claim_ids=True)
        scenario.steps[label] = Step(run, report, output_of(lake, run), check)

    for label, run in [("B3", B3), ("B1", B1), ("B2", B2), ("B1 rerun", B1)]:
        shred(label, run)
    scenario.entries_before_expiry = entries(spark, manifest)
    if request.param == "lake":
        index = json.loads(Path(lake.event_manifest_index).read_text())
        scenario.lake_layout_before_expiry = {
            "version": index["version"],
            "batches": {run: b["folder"] for run, b in index["batches"].items()},
            "folders": sorted(p.name for p in Path(lake.event_manifest_entries).iterdir()),
        }

    populated = manifest_in("populated")
    scenario.populated = populate_event_manifest(lambda: spark, fs, lake, populated, date(2026, 3, 1), claim_ids=True)
    scenario.populated_entries = entries(spark, populated)
    # A new batch checked against the populated manifest: the back-filled entries drop its copy of A.
    new_events = spark.createDataFrame([(A, "fpA"), (F, "fpF")], "event_id STRING, fingerprint STRING")
    work = str(tmp_path_factory.mktemp("populated-check") / "work")
    check = populated.check_and_set(new_events, Batch("run=2026-03-03-10-00-00", 1772532000), True, work)
    scenario.populated_statuses = {(r.event_id, r.fingerprint, r.kind): r.status for r in check.findings.collect()}

    clock.now = LATER
    shred("B5", B5)
    scenario.after_expiry = {"entries": entries(spark, manifest)}
    if request.param == "lake":
        index = json.loads(Path(lake.event_manifest_index).read_text())
        scenario.after_expiry["indexed_batches"] = sorted(index["batches"])
        scenario.after_expiry["entry_folders"] = sorted(p.name for p in Path(lake.event_manifest_entries).iterdir())
        del index["batches"][B5]  # B5's entries vanish from the index: its pairs are no longer recorded
        Path(lake.event_manifest_index).write_text(json.dumps(index))
    else:
        assert isinstance(manifest, DynamoDbEventManifest)
        table = boto3.client("dynamodb", region_name=REGION, endpoint_url=moto_server)
        item = {"eventId": {"S": A}, "fingerprint": {"S": "fpA"}, "etlTime": {"N": "1788000000"},
                "ttl": {"N": "1999999999"}, "run": {"S": "run=2026-01-01-00-00-00"}}  # fmt: skip
        table.put_item(TableName=manifest.config.table, Item=item)  # another batch now holds B5's pair of A
    scenario.tampered_check = check_batch_against_manifest(
        spark, fs, lake, manifest, scenario.steps["B5"].report, claim_ids=True
    )
    return scenario


# A proxy in front of moto that throttles or refuses chosen requests (DynamoDB's and S3's), for the clients
# to retry or give up on.


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    target: str  # DynamoDB's operation (X-Amz-Target), "" for S3
    body: dict[str, Any]  # DynamoDB's JSON request, {} for S3


@dataclass(frozen=True)
class Answer:
    code: str
    status: int
    content_type: str
    body: bytes


ErrorRule = Callable[[Request, int], Answer | None]


def dynamodb_error(code: str, message: str) -> Answer:
    body = json.dumps({"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": message})
    return Answer(code, 400, "application/x-amz-json-1.0", body.encode())


def s3_error(code: str, message: str, status: int = 503) -> Answer:
    body = f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>{code}</Code><Message>{message}</Message></Error>"
    return Answer(code, status, "application/xml", body.encode())


class ThrottlingProxy:
    """Forwards requests to moto over HTTP; `rule(request, attempt)` may answer with an error instead.

    `attempt` counts the requests for the same thing: the same DynamoDB item, or the same S3 method and path.
    """

    def __init__(self, upstream: str, rule: ErrorRule) -> None:
        self.upstream = urlparse(upstream)
        self.rule = rule
        self.attempts: dict[tuple[str, str, str, str | None, str | None], int] = {}  # method, path, target, item key
        self.answered: list[str] = []  # the codes of the errors answered, in order
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                target = self.headers.get("X-Amz-Target", "").rpartition(".")[2]
                request = Request(self.command, self.path, target, json.loads(body) if target else {})
                error = proxy._decide(request)
                if error is not None:
                    self._send(error.status, {"Content-Type": error.content_type}, error.body)
                    return
                upstream = http.client.HTTPConnection(proxy.upstream.hostname, proxy.upstream.port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                upstream.request(
                    self.command, self.path, body if body or self.command in ("PUT", "POST") else None, headers
                )
                response = upstream.getresponse()
                data = response.read()
                forwarded = {
                    k: v for k, v in response.getheaders() if k.lower() not in ("transfer-encoding", "connection")
                }
                self._send(response.status, forwarded, data)
                upstream.close()

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _handle  # noqa: N815 - the http.server API

            def _send(self, status: int, headers: dict[str, str], data: bytes) -> None:
                length = str(len(data))
                if self.command == "HEAD":  # describes an object without carrying it: keep upstream's length
                    length = next((v for k, v in headers.items() if k.lower() == "content-length"), "0")
                self.send_response(status)
                for key, value in headers.items():
                    if key.lower() != "content-length":
                        self.send_header(key, value)
                self.send_header("Content-Length", length)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def _decide(self, request: Request) -> Answer | None:
        item = {name: value.get("S") for name, value in request.body.get("Item", {}).items() if isinstance(value, dict)}
        key = (request.method, request.path, request.target, item.get("eventId"), item.get("fingerprint"))
        with self._lock:
            attempt = self.attempts[key] = self.attempts.get(key, 0) + 1
        error = self.rule(request, attempt)
        if error is not None:
            with self._lock:
                self.answered.append(error.code)
        return error

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def throttling_proxy(moto_server) -> Iterator[Callable[[ErrorRule], ThrottlingProxy]]:
    proxies: list[ThrottlingProxy] = []

    def start(rule: ErrorRule) -> ThrottlingProxy:
        proxies.append(ThrottlingProxy(moto_server, rule))
        return proxies[-1]

    yield start
    for proxy in proxies:
        proxy.close()
