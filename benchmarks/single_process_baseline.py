"""The single-process baseline of the shred benchmark: the same job as plain Python, one core, no Spark.

    /tmp/venv/bin/python benchmarks/single_process_baseline.py --output DIR FILE [FILE ...]

It is meant to be what a competent engineer would write without a cluster, so that "Spark is faster" means
something: it streams the files line by line, keeps only event ids in memory, and holds back only the rare
lines whose id occurs more than once.

1. *Ids pass.* Read every line and split off its event_id; remember which ids occur more than once.
2. *Output pass.* Read again and parse each line fully: split the tabs, check the field count, check every
   typed field with the parser's own patterns (UUID, ints with their 32-bit range, decimals, booleans,
   timestamps, required fields; snowplow_assets/events/parse.py), `json.loads` the three JSON fields and
   check their wrappers and each entity's Iglu URI. A bad line becomes a loader_parsing_error bad row
   naming every bad field. A good line whose id is unique is written at once: its 128 atomic fields as a
   TSV line, and one JSON line per entity (unstruct event, derived contexts, contexts) in its type's file.
3. *Duplicates.* The held-back good lines are grouped by event_id. Natural duplicates (same id and
   fingerprint; an empty fingerprint never matches) keep the copy with the earliest etl_tstamp, then the
   earliest in the read; the survivors that still share an id are renamed (uuid5 of id, fingerprint,
   etl_tstamp and line number) and get the `duplicate` context, and are written like the others.

It writes `atomic-events/part-00000`, `shredded-types/vendor=…/name=…/format=…/version=…/part-00000` and
`bad/part-00000` under DIR and prints one JSON object: the seconds the work took (imports excluded), the
counts the benchmark compares with the Spark job's, and the process's peak RSS.

What it leaves out, in its favour: it writes the atomic fields as they came (the Spark job renders every
timestamp as `.SSS` and doubles in plain notation), checks timestamps by pattern only, and writes no
completion marker, staging or event manifest.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import resource
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import TextIO

from snowplow_assets.events.bad_rows import LOADER_PARSING_ERROR, PROCESSOR_ARTIFACT, PROCESSOR_VERSION
from snowplow_assets.events.dedup import SYNTHETIC_ID_NAMESPACE
from snowplow_assets.events.enriched_schema import ENRICHED_FIELDS, FIELD_COUNT, FIELD_INDEX, FieldType
from snowplow_assets.events.iglu import IGLU_URI_PATTERN, SchemaKey
from snowplow_assets.events.parse import (
    CONTEXTS_WRAPPER,
    DOUBLE_PATTERN,
    INT_PATTERN,
    TIMESTAMP_PATTERN,
    UNSTRUCT_WRAPPER,
    UUID_PATTERN,
)
from snowplow_assets.events.shred import CONTEXT, DUPLICATE_SCHEMA, SELF_DESCRIBING_EVENT

EVENT_ID = FIELD_INDEX["event_id"]
ETL_TSTAMP = FIELD_INDEX["etl_tstamp"]
COLLECTOR_TSTAMP = FIELD_INDEX["collector_tstamp"]
FINGERPRINT = FIELD_INDEX["event_fingerprint"]
CONTEXTS = FIELD_INDEX["contexts"]
UNSTRUCT_EVENT = FIELD_INDEX["unstruct_event"]
DERIVED_CONTEXTS = FIELD_INDEX["derived_contexts"]
BUFFER = 1 << 20


def _int_ok(value: str, _match=re.compile(INT_PATTERN).match) -> bool:
    return _match(value) is not None and -(2**31) <= int(value) < 2**31


_CHECKS = {
    FieldType.UUID: (re.compile(UUID_PATTERN).match, "Value is not a UUID"),
    FieldType.INT: (_int_ok, "Value is not a 32-bit integer"),
    FieldType.DOUBLE: (re.compile(DOUBLE_PATTERN).match, "Value is not a decimal number"),
    FieldType.BOOLEAN: ({"0", "1"}.__contains__, "Value is not a boolean (1 or 0)"),
    FieldType.TIMESTAMP: (re.compile(TIMESTAMP_PATTERN).match, "Value is not a timestamp (yyyy-MM-dd HH:mm:ss[.SSS])"),
}
# (index, name, required, check or None, message) for every field that needs a look
_FIELD_CHECKS = [
    (f.index, f.name, f.required, *(_CHECKS.get(f.type) or (None, None)))
    for f in ENRICHED_FIELDS
    if f.required or f.type in _CHECKS
]
_CONTEXTS_WRAPPER = re.compile(CONTEXTS_WRAPPER).match
_UNSTRUCT_WRAPPER = re.compile(UNSTRUCT_WRAPPER).match
_IGLU_URI = re.compile(IGLU_URI_PATTERN).match
_PROCESSOR = {"artifact": PROCESSOR_ARTIFACT, "version": PROCESSOR_VERSION}


class BadLine(Exception):
    def __init__(self, failure: dict):
        self.failure = failure


def _invalid(name: str, value: str, message: str) -> dict:
    return {"type": "InvalidValue", "key": name, "value": value, "message": message}


def _entities(name: str, text: str, is_array: bool) -> list[dict]:
    """The entities of one JSON field, or the reason it is unusable (raised as a message)."""
    try:
        wrapper = json.loads(text)
    except ValueError:
        wrapper = None
    if not isinstance(wrapper, dict) or not isinstance(wrapper.get("schema"), str) or "data" not in wrapper:
        raise ValueError("invalid JSON or not a self-describing JSON with schema and data")
    match = _CONTEXTS_WRAPPER if is_array else _UNSTRUCT_WRAPPER
    if not match(wrapper["schema"]):
        raise ValueError(f"wrapper schema '{wrapper['schema']}' is not the {name} schema")
    data = wrapper["data"]
    entities = data if is_array else [data]
    if is_array and not isinstance(data, list):
        raise ValueError("invalid JSON or not a self-describing JSON with schema and data")
    for entity in entities:
        if not isinstance(entity, dict) or not isinstance(entity.get("schema"), str):
            raise ValueError("an entity is null or has no schema")
        if not _IGLU_URI(entity["schema"]):
            raise ValueError(f"entity schema '{entity['schema']}' is not a valid Iglu URI")
        if not isinstance(entity.get("data"), dict):
            raise ValueError(f"data of entity {entity['schema']} is not a JSON object")
    return entities


def parse(line: str) -> tuple[list[str], list[tuple[str, dict]]]:
    """The fields of a good line and its entities (kind, entity) in shredding order; BadLine otherwise."""
    fields = line.split("\t")
    if len(fields) == 1:
        raise BadLine({"type": "NotTSV"})
    if len(fields) != FIELD_COUNT:
        raise BadLine({"type": "FieldNumberMismatch", "fieldCount": len(fields)})
    errors = []
    for index, name, required, check, message in _FIELD_CHECKS:
        value = fields[index]
        if not value:
            if required:
                errors.append(_invalid(name, value, "Field is required but empty"))
        elif check is not None and not check(value):
            errors.append(_invalid(name, value, message))
    entities: list[tuple[str, dict]] = []
    for index, name, kind, is_array in (
        (UNSTRUCT_EVENT, "unstruct_event", SELF_DESCRIBING_EVENT, False),
        (DERIVED_CONTEXTS, "derived_contexts", CONTEXT, True),
        (CONTEXTS, "contexts", CONTEXT, True),
    ):
        if fields[index]:
            try:
                entities.extend((kind, e) for e in _entities(name, fields[index], is_array))
            except ValueError as error:
                errors.append(_invalid(name, fields[index], str(error)))
    if errors:
        raise BadLine({"type": "RowDecodingError", "errors": errors})
    return fields, entities


def _timestamp_ms(text: str) -> str:
    """`yyyy-MM-dd HH:mm:ss.SSS`, as the entity hierarchy's rootTstamp is rendered."""
    fraction = text[20:].rstrip("Z") if len(text) > 19 else ""
    return text[:10] + " " + text[11:19] + "." + (fraction + "000")[:3]


class Outputs:
    """The output files: atomic events, one file per entity type, bad rows; and what went into them."""

    def __init__(self, root: Path):
        self.root = root
        (root / "atomic-events").mkdir(parents=True)
        (root / "bad").mkdir(parents=True)
        self.atomic = open(root / "atomic-events" / "part-00000", "w", encoding="utf-8", buffering=BUFFER)
        self.bad_rows = open(root / "bad" / "part-00000", "w", encoding="utf-8", buffering=BUFFER)
        self._types: dict[str, tuple[TextIO, str, str]] = {}
        self.entities: dict[tuple[str, str], int] = defaultdict(int)
        self.good = 0
        self.bad = 0

    def _type(self, schema: str) -> tuple[TextIO, str, str]:
        """The file of an entity type and the fixed start of its lines; the URI was validated by the parser."""
        try:
            return self._types[schema]
        except KeyError:
            key = SchemaKey.parse(schema)  # the pattern admits no path separator
            folder = self.root / "shredded-types" / f"vendor={key.vendor}" / f"name={key.name}"
            folder = folder / f"format={key.format}" / f"version={key.version}"
            folder.mkdir(parents=True)
            head = (
                f'{{"schema":{{"vendor":"{key.vendor}","name":"{key.name}","format":"{key.format}",'
                f'"version":"{key.version}"}},"data":'
            )
            tail = f'"refRoot":"events","refTree":["events","{key.name}"],"refParent":"events"}}}}\n'
            out = open(folder / "part-00000", "w", encoding="utf-8", buffering=BUFFER)
            self._types[schema] = (out, head, tail)
            return out, head, tail

    def event(self, fields: list[str], entities: list[tuple[str, dict]]) -> None:
        atomic = (
            fields[:CONTEXTS] + fields[CONTEXTS + 1 : UNSTRUCT_EVENT] + fields[UNSTRUCT_EVENT + 1 : DERIVED_CONTEXTS]
        )
        atomic += fields[DERIVED_CONTEXTS + 1 :]
        self.atomic.write("\t".join(atomic) + "\n")
        hierarchy = (
            f',"hierarchy":{{"rootId":"{fields[EVENT_ID]}","rootTstamp":"{_timestamp_ms(fields[COLLECTOR_TSTAMP])}",'
        )
        for kind, entity in entities:
            schema = entity["schema"]
            out, head, tail = self._type(schema)
            out.write(head + json.dumps(entity["data"], separators=(",", ":"), ensure_ascii=False) + hierarchy + tail)
            self.entities[(schema, kind)] += 1
        self.good += 1

    def bad_row(self, failure: dict, line: str) -> None:
        row = {"schema": LOADER_PARSING_ERROR, "data": {"processor": _PROCESSOR, "failure": failure, "payload": line}}
        self.bad_rows.write(json.dumps(row, separators=(",", ":"), ensure_ascii=False) + "\n")
        self.bad += 1

    def close(self) -> None:
        for out in (self.atomic, self.bad_rows, *(entry[0] for entry in self._types.values())):
            out.close()


def _lines(files: list[Path]):
    """Every line of the files, without its line end, as Spark's text reader splits them."""
    for path in files:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8", errors="replace") as lines:  # type: ignore[operator]
            for line in lines:
                yield line.rstrip("\r\n")


def shared_ids(files: list[Path]) -> set[str]:
    """The event ids that occur on more than one line (of any kind; parsing decides later)."""
    seen: set[str] = set()
    shared: set[str] = set()
    for line in _lines(files):
        parts = line.split("\t", EVENT_ID + 1)
        if len(parts) > EVENT_ID:
            event_id = parts[EVENT_ID]
            if event_id in seen:
                shared.add(event_id)
            else:
                seen.add(event_id)
    return shared


def _duplicate_context(original_id: str) -> tuple[str, dict]:
    return CONTEXT, {"schema": DUPLICATE_SCHEMA, "data": {"originalEventId": original_id}}


def write_held_back(held: list[tuple[int, list[str], list[tuple[str, dict]]]], outputs: Outputs) -> dict[str, int]:
    """Deduplicate the good lines whose id is shared and write the survivors (see the module docstring)."""
    by_id: dict[str, list[tuple[int, list[str], list[tuple[str, dict]]]]] = defaultdict(list)
    for entry in held:
        by_id[entry[1][EVENT_ID]].append(entry)
    natural = renamed = 0
    for event_id, copies in by_id.items():
        survivors = []
        earliest: dict[str, tuple[str, int]] = {}
        for number, fields, _ in copies:
            fingerprint = fields[FINGERPRINT]
            if fingerprint:
                order = (fields[ETL_TSTAMP] or "\uffff", number)
                if fingerprint not in earliest or order < earliest[fingerprint]:
                    earliest[fingerprint] = order
        for number, fields, entities in copies:
            fingerprint = fields[FINGERPRINT]
            if fingerprint and earliest[fingerprint][1] != number:
                natural += 1
            else:
                survivors.append((number, fields, entities))
        if len(survivors) > 1:
            for number, fields, entities in survivors:
                name = f"{event_id}|{fields[FINGERPRINT]}|{fields[ETL_TSTAMP]}|{number}"
                fields = fields.copy()
                fields[EVENT_ID] = str(uuid.uuid5(SYNTHETIC_ID_NAMESPACE, name))
                # the duplicate context goes first among the derived contexts, after any unstruct event
                position = sum(1 for kind, _ in entities if kind == SELF_DESCRIBING_EVENT)
                entities = [*entities[:position], _duplicate_context(event_id), *entities[position:]]
                outputs.event(fields, entities)
                renamed += 1
        else:
            for _, fields, entities in survivors:
                outputs.event(fields, entities)
    return {"natural_duplicates_removed": natural, "synthetic_duplicates_renamed": renamed}


def run(files: list[Path], output: Path) -> dict[str, object]:
    shared = shared_ids(files)
    outputs = Outputs(output)
    held = []
    lines = 0
    for number, line in enumerate(_lines(files)):
        lines += 1
        try:
            fields, entities = parse(line)
        except BadLine as bad:
            outputs.bad_row(bad.failure, line)
            continue
        if fields[EVENT_ID] in shared:
            held.append((number, fields, entities))
        else:
            outputs.event(fields, entities)
    duplicates = write_held_back(held, outputs)
    outputs.close()
    return {
        "lines_read": lines,
        "good": outputs.good,
        "bad": outputs.bad,
        **duplicates,
        "shared_ids": len(shared),
        "held_back_lines": len(held),
        "entities": {f"{schema} {kind}": n for (schema, kind), n in sorted(outputs.entities.items())},
    }


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", type=Path, required=True, help="Folder to create for the output.")
    parser.add_argument("files", type=Path, nargs="+", help="Enriched TSV files, plain or .gz, in read order.")
    args = parser.parse_args(argv)
    if args.output.exists():
        raise SystemExit(f"{args.output} exists; the baseline writes into a new folder")
    started = time.perf_counter()
    counts = run(args.files, args.output)
    seconds = time.perf_counter() - started
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # Linux: kilobytes
    print(json.dumps({"seconds": seconds, "peak_rss_mb": round(peak_kb / 1024, 1), "counts": counts}))


if __name__ == "__main__":
    main(sys.argv[1:])
