"""Events whose schemas no Iglu registry holds become loader_iglu_error bad rows (FORMATS.md §4), before
deduplication and outside the event manifest, through the shredder resource as Dagster runs build it."""

import dataclasses
import json
from pathlib import Path

from snowplow_assets.datagen.enriched import contexts_json
from snowplow_assets.defs.resources import ShredResource
from snowplow_assets.events.bad_rows import LOADER_IGLU_ERROR
from snowplow_assets.events.shred_batch import IGLU, shred_run_folder
from snowplow_assets.manifest.lake_event_manifest import LakeEventManifest
from snowplow_assets_tests.conftest import read_lines, write_run_folder
from snowplow_assets_tests.events.builders import LINK_CLICK, UA_PARSER, WEB_PAGE, event_line, link_click
from snowplow_assets_tests.events.iglu_registries import embedded_repository, resolver_config, write_embedded_registry

RUN = "run=2026-03-01-10-00-00"
UNKNOWN = "iglu:com.acme/unpublished/jsonschema/1-0-0"
ID_A, ID_B, ID_C = (
    "aaaaaaaa-1111-4111-8111-111111111111",
    "bbbbbbbb-2222-4222-8222-222222222222",
    "cccccccc-3333-4333-8333-333333333333",
)
WITH_UNKNOWN = contexts_json([(WEB_PAGE, {"id": "p"}), (UNKNOWN, {"x": 1}), (UNKNOWN, {"x": 2})])

A = event_line(event_id=ID_A, event_fingerprint="fpA")
B = event_line(event_id=ID_B, event_fingerprint="fpB", contexts=WITH_UNKNOWN)
# Same id as A, another fingerprint: were it deduplicated, A would be renamed as a synthetic duplicate.
A_UNKNOWN = event_line(event_id=ID_A, event_fingerprint="fpA2", contexts=WITH_UNKNOWN)
C = event_line(event_id=ID_C, event="unstruct", event_fingerprint="fpC", unstruct_event=link_click())
LINES = [A, B, B, A_UNKNOWN, C]  # B twice: a natural duplicate of an event that is bad


def test_events_of_unpublished_schemas_are_iglu_error_bad_rows_and_take_no_part_in_deduplication(spark, lake, fs):
    registry = write_embedded_registry(Path(lake.root).parent / "iglu", [WEB_PAGE, UA_PARSER, LINK_CLICK])
    config = resolver_config(registry.parent / "resolver.json", [embedded_repository("Local", registry.name)])
    manifest = LakeEventManifest(fs, lake)
    write_run_folder(lake, RUN, LINES)
    options = ShredResource(iglu_resolver=str(config)).options()
    report = shred_run_folder(spark, fs, lake, RUN, dataclasses.replace(options, event_manifest=manifest))

    assert (report.lines_read, report.good, report.bad, report.removed, report.renamed) == (5, 2, 3, 0, 0)
    assert (report.iglu_errors, report.runtime_errors, report.unresolved_schemas) == (3, 0, [UNKNOWN])
    assert report.phase_seconds[IGLU] > 0

    good = Path(lake.shredded_good(RUN))
    ids = sorted(line.split("\t")[6] for line in read_lines(good / "atomic-events"))
    assert ids == [ID_A, ID_C], "A kept its id: the other event of its id was never a duplicate"
    assert not (good / "shredded-types" / "vendor=com.acme").exists()
    assert "vendor=com.snowplowanalytics.snowplow" in {p.name for p in (good / "shredded-types").iterdir()}
    marker = json.loads((good / "shredding_complete.json").read_text())["data"]
    assert marker["count"] == {"good": 2, "bad": 3}
    assert UNKNOWN not in {t["schemaKey"] for t in marker["typesInfo"]["types"]}

    rows = [json.loads(line) for line in read_lines(lake.shredded_bad(RUN))]
    assert {row["schema"] for row in rows} == {LOADER_IGLU_ERROR}
    assert sorted(row["data"]["payload"]["event_id"] for row in rows) == [ID_A, ID_B, ID_B]
    failure = rows[0]["data"]["failure"]
    assert [(f["type"], f["schemaKey"], f["error"]["error"]) for f in failure] == [
        ("IgluError", UNKNOWN, "ResolutionError")
    ], "one entry per unresolved schema, however many of its entities the event has"
    assert failure[0]["error"]["lookupHistory"][0]["repository"] == "Local"
    payload = next(row["data"]["payload"] for row in rows if row["data"]["payload"]["event_fingerprint"] == "fpA2")
    assert payload["contexts"]["data"][1]["schema"] == UNKNOWN, "the event whole, its JSON fields as JSON"

    # Never recorded: a copy sent again once the schema is published loads.
    held = manifest.lookup(
        spark.createDataFrame(
            [(ID_A, "fpA"), (ID_A, "fpA2"), (ID_B, "fpB"), (ID_B, None)], "event_id string, fingerprint string"
        )
    ).collect()
    assert {(row.event_id, row.fingerprint) for row in held} == {(ID_A, "fpA")}
