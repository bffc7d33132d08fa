
from collections.abc import Iterator

import dagster as dg
from dagster_pyspark import LazyPySparkResource

from snowplow_assets.defs.checks.shred_checks import ATOMIC_EVENTS, SHRED_CHECK_SPECS, SHREDDED_TYPES, shred_check_results
from snowplow_assets.defs.partitions import enriched_runs
from snowplow_assets.defs.resources import LakeResource, ShredResource
from snowplow_assets.events import dedup
from snowplow_assets.events.shred_batch import ShredReport, shred_run_folder


def _common_metadata(report: ShredReport) -> dict[str, object]:
    return {
        "lines_read": report.lines_read,
        "good": report.good,
        "bad": report.bad,
        "natural_duplicates_removed": report.duplicates.get(dedup.NATURAL_DUPLICATE, 0),
        "synthetic_duplicates_renamed": report.duplicates.get(dedup.SYNTHETIC_RENAME, 0),
        "input_files": report.input_files,
    }


def _entity_types_table(report: ShredReport) -> dg.TableMetadataValue:
    return dg.MetadataValue.table(
        records=[dg.TableRecord({"schema": t.schema, "kind": t.kind, "count": t.count}) for t in report.entity_types],
        schema=dg.TableSchema(
            columns=[
                dg.TableColumn("schema", "string"),
                dg.TableColumn("kind", "string"),
                dg.TableColumn("count", "int"),
            ]
        ),
    )


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            ATOMIC_EVENTS,
            deps=["enriched_batch"],
            kinds={"spark", "tsv"},
            description="128-column atomic-events TSV of a run folder, deduplicated (shredded/good/run=…/atomic-events).",
        ),
        dg.AssetSpec(
            SHREDDED_TYPES,
            deps=["enriched_batch"],
            kinds={"spark", "json"},
            description="One self-describing JSON file set per entity type (shredded/good/run=…/shredded-types).",
        ),
    ],
    check_specs=SHRED_CHECK_SPECS,
    partitions_def=enriched_runs,
    group_name="events",
    description="Parse, deduplicate and shred one enriched run folder in one Spark job, then verify the output.",
)
def shred(
    context: dg.AssetExecutionContext, lake: LakeResource, spark: LazyPySparkResource, shredder: ShredResource
) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
    fs = lake.filesystem()
    session = spark.spark_session
    report = shred_run_folder(session, fs, lake.lake, context.partition_key, shredder.options())
    context.log.info(
        f"{report.lines_read} lines: {report.good} good, {report.bad} bad, "
        f"{report.removed} duplicates removed, {report.renamed} renamed"
    )
    common = _common_metadata(report)
    yield dg.MaterializeResult(
        asset_key=ATOMIC_EVENTS,
        metadata={**common, "path": dg.MetadataValue.path(f"{report.good_output}/atomic-events")},
    )
    yield dg.MaterializeResult(
        asset_key=SHREDDED_TYPES,
        metadata={
            **common,
            "path": dg.MetadataValue.path(f"{report.good_output}/shredded-types"),
            "entity_types": _entity_types_table(report),
            "entities": sum(t.count for t in report.entity_types),
            "bad_rows_path": dg.MetadataValue.path(report.bad_output),
        },
    )
    yield from shred_check_results(session, fs, report)
