"""Every path of the lake, in one place (DESIGN.md "Interfaces").

The lake root is a local folder or an `s3://bucket/prefix` URI. Paths are built only from the root, fixed
folder names and names that passed validation here, so a folder name or a schema URI from the data can never
point outside the lake.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone

# [0-9], not \d: Python's \d takes every Unicode digit, and `run=٢٠٢٦-…` is no run folder (nor a date).
_RUN = r"run=[0-9]{4}-[0-9]{2}-[0-9]{2}-[0-9]{2}-[0-9]{2}-[0-9]{2}"
RUN_FOLDER = re.compile(rf"^{_RUN}$")
SHREDDING_COMPLETE = "shredding_complete.json"
WEB_MODEL = re.compile(r"^[a-z][a-z_]*$")


def validate_run_folder(name: str) -> str:
    """Return `name` if it is a run folder name (`run=YYYY-MM-DD-hh-mm-ss`); raise ValueError otherwise."""
    if not RUN_FOLDER.fullmatch(name):
        raise ValueError(f"not a run folder name (expected run=YYYY-MM-DD-hh-mm-ss): {name!r}")
    return name


def run_folder_time(run: str) -> datetime | None:
    """When a run folder was cut, from its name; None for a name that is no instant, such as `run=2026-02-30-…`
    or one in the year 0: RUN_FOLDER takes those, so such a folder is registered and shredded, and every rule
    that reads a time from a name has to do without one."""
    try:
        return datetime.strptime(validate_run_folder(run), "run=%Y-%m-%d-%H-%M-%S").replace(tzinfo=timezone.utc)
    except ValueError:
        if not RUN_FOLDER.fullmatch(run):
            raise
        return None


# An entry folder is `run=….<created>.<16 hex>`, `<created>` the UTC second it was made (CREATED_FORMAT), by
# which compaction tells a folder still being published from an orphan (manifest/lake_event_manifest.py).
# Folders made before 2026-11-27 are `run=….<16 hex>`, without it, and are still valid.
_CREATED = r"[0-9]{8}T[0-9]{6}Z"
CREATED_FORMAT = "%Y%m%dT%H%M%SZ"
EVENT_MANIFEST_FOLDER = re.compile(rf"^({_RUN})\.(?:({_CREATED})\.)?([0-9a-f]{{16}})$")


def validate_event_manifest_folder(name: str) -> str:
    """Return `name` if it is an event manifest entry folder (`run=….<created>.<16 hex>`, or `run=….<16 hex>` as
    made before 2026-11-27); raise ValueError otherwise."""
    if not EVENT_MANIFEST_FOLDER.fullmatch(name):
        raise ValueError(
            f"not an event manifest entry folder (expected run=YYYY-MM-DD-hh-mm-ss.YYYYMMDDThhmmssZ.<token>): {name!r}"
        )
    return name


def event_manifest_folder_name(run: str, created: datetime, token: str) -> str:
    """The name of a new entry folder of `run`'s entries, made at `created` (any time zone; named in UTC)."""
    stamp = created.astimezone(timezone.utc).strftime(CREATED_FORMAT)
    return validate_event_manifest_folder(f"{validate_run_folder(run)}.{stamp}.{token}")


def event_manifest_folder_created(name: str) -> datetime | None:
    """When the entry folder `name` was made, as its name says; None for a name without a time (made before
    2026-11-27), or one whose time is no date (the 30th of February), or no entry folder name at all."""
    match = EVENT_MANIFEST_FOLDER.fullmatch(name)
    if match is None or match.group(2) is None:
        return None
    try:
        return datetime.strptime(match.group(2), CREATED_FORMAT).replace(tzinfo=timezone.utc)
    except ValueError:
        return None


# CDC landing folders are named by whoever lands them; the name becomes a partition key and a folder under
# cdc/history, cdc/deletes and cdc/bad, so it is held to a strict, path-safe alphabet. A name of the form
# storage/base.py gives an old copy that a swap left behind (`x.replaced-1f`) is refused: swapping in the
# history of landing `x` deleted the history of landing `x.replaced-1f` as its leftover (until 2026-11-28).
CDC_LANDING_FOLDER = re.compile(r"^(?!.*\.\.)(?!.*\.replaced-[0-9a-f]+$)[A-Za-z0-9][A-Za-z0-9._=-]{0,127}$")
# CDC model names come from the models YAML and name folders under cdc/batches and cdc/latest.
CDC_MODEL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")


def validate_cdc_landing_folder(name: str) -> str:
    """Return `name` if it can name a CDC landing folder; raise ValueError otherwise."""
    if not isinstance(name, str) or not CDC_LANDING_FOLDER.fullmatch(name):
        raise ValueError(
            f"not a CDC landing folder name (letters, digits and . _ = -, starting with a letter or digit, "
            f"no '..', not ending in .replaced-<hex digits>, at most 128 characters): {name!r}"
        )
    return name


def validate_cdc_model_name(name: str) -> str:
    """Return `name` if it can name a CDC model; raise ValueError otherwise."""
    if not isinstance(name, str) or not CDC_MODEL_NAME.fullmatch(name):
        raise ValueError(f"not a CDC model name (a letter, then letters, digits or _; at most 64): {name!r}")
    return name


def join_uri(base: str, *parts: str) -> str:
    for part in parts:
        if not part or part in (".", "..") or "/" in part or "\\" in part:
            raise ValueError(f"unsafe path segment {part!r}")
    return "/".join([base.rstrip("/"), *parts])


@dataclass(frozen=True)
class Lake:
    root: str

    @property
    def is_s3(self) -> bool:
        return self.root.startswith("s3://")

    def uri(self, *parts: str) -> str:
        return join_uri(self.root, *parts)

    # Enriched input
    @property
    def enriched(self) -> str:
        return self.uri("enriched")

    def enriched_run(self, run: str) -> str:
        return self.uri("enriched", validate_run_folder(run))

    # Shredded output (FORMATS.md §3-4)
    def shredded_good(self, run: str) -> str:
        return self.uri("shredded", "good", validate_run_folder(run))

    def shredded_bad(self, run: str) -> str:
        return self.uri("shredded", "bad", validate_run_folder(run))

    def shredding_complete(self, run: str) -> str:
        return join_uri(self.shredded_good(run), SHREDDING_COMPLETE)

    def shred_staging(self, run: str, token: str) -> str:
        """A private folder a shred attempt writes into before it publishes; hidden from lake readers."""
        if not re.fullmatch(r"[0-9a-f]{8,32}", token):
            raise ValueError(f"bad staging token {token!r}")
        return self.uri("shredded", ".staging", f"{validate_run_folder(run)}.{token}")

    def manifest_claims(self, run: str) -> str:
        """The keys each run of a batch gave an event manifest whose entries outlive a run, until its output
        accounts for them (manifest/claims_journal.py); hidden from lake readers."""
        return self.uri("shredded", ".manifest-claims", validate_run_folder(run))

    # Event manifest, lake backend (manifest/lake_event_manifest.py)
    @property
    def event_manifest(self) -> str:
        return self.uri("event-manifest")

    @property
    def event_manifest_index(self) -> str:
        """The one file that says which entry folder is each batch's current one."""
        return self.uri("event-manifest", "batches.json")

    @property
    def event_manifest_entries(self) -> str:
        return self.uri("event-manifest", "entries")

    def event_manifest_entry_folder(self, folder: str) -> str:
        """`entries/run=….<token>`: one published version of one batch's entries."""
        validate_event_manifest_folder(folder)
        return self.uri("event-manifest", "entries", folder)

    def event_manifest_work(self, token: str) -> str:
        """Scratch space of one populate run (statuses), whichever backend it fills."""
        if not re.fullmatch(r"[0-9a-f]{8,32}", token):
            raise ValueError(f"bad work token {token!r}")
        return self.uri("event-manifest", ".work", token)

    # Incremental web models: one Parquet table per model
    def web_model(self, model: str) -> str:
        if not WEB_MODEL.fullmatch(model):
            raise ValueError(f"not a web model name: {model!r}")
        return self.uri("web", model)

    def web_staging(self, token: str) -> str:
        """A private folder of one web-models run; hidden from readers of the tables."""
        if not re.fullmatch(r"[0-9a-f]{8,32}", token):
            raise ValueError(f"bad staging token {token!r}")
        return self.uri("web", ".staging", token)

    # CDC consolidation (snowplow_assets/cdc/): landing -> history, deletes, bad -> batches -> latest
    @property
    def cdc_landings(self) -> str:
        return self.uri("cdc", "landing")

    def cdc_landing(self, folder: str) -> str:
        return self.uri("cdc", "landing", validate_cdc_landing_folder(folder))

    def cdc_history(self, folder: str) -> str:
        """Inserts and updates of one landing folder: `model=<m>/hour=<yyyy-MM-dd-HH>/part-*.parquet`."""
        return self.uri("cdc", "history", validate_cdc_landing_folder(folder))

    def cdc_deletes(self, folder: str) -> str:
        """Deletes of one landing folder, laid out like its history."""
        return self.uri("cdc", "deletes", validate_cdc_landing_folder(folder))

    def cdc_bad(self, folder: str) -> str:
        """Records of one landing folder that could not be used, as JSON lines with their reason."""
        return self.uri("cdc", "bad", validate_cdc_landing_folder(folder))

    @property
    def cdc_ingested_root(self) -> str:
        return self.uri("cdc", "ingested")

    def cdc_ingested(self, folder: str) -> str:
        """The summary of one landing folder's ingestion, written last: batches read only landings that have one."""
        return self.uri("cdc", "ingested", f"{validate_cdc_landing_folder(folder)}.json")

    def cdc_batches(self, model: str) -> str:
        return self.uri("cdc", "batches", validate_cdc_model_name(model))

    def cdc_batch(self, model: str, boundary_ms: int) -> str:
        """One snapshot of a model at a boundary (epoch milliseconds)."""
        if not isinstance(boundary_ms, int) or isinstance(boundary_ms, bool):
            raise ValueError(f"a batch boundary is an integer of epoch milliseconds, not {boundary_ms!r}")
        return self.uri("cdc", "batches", validate_cdc_model_name(model), f"boundary={boundary_ms}")

    def cdc_latest(self, model: str) -> str:
        return self.uri("cdc", "latest", validate_cdc_model_name(model))

    @property
    def cdc_stagings(self) -> str:
        return self.uri("cdc", ".staging")

    def cdc_staging(self, owner: str, token: str) -> str:
        """A private folder of one CDC ingestion, batch or latest run, `<owner>@<token>`; hidden from readers.
        The owner (cdc/staging.py) names what one run at a time writes, whose earlier runs' folders it removes."""
        if not re.fullmatch(r"[0-9a-f]{8,32}", token):
            raise ValueError(f"bad staging token {token!r}")
        if not re.fullmatch(r"[A-Za-z0-9._=-]{1,160}", owner):
            raise ValueError(f"bad staging owner {owner!r}")
        return self.uri("cdc", ".staging", f"{owner}@{token}")
