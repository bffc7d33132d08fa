from collections.abc import Iterator

import dagster as dg
from dagster_pyspark import LazyPySparkResource

from snowplow_assets.cdc.history import IngestedLanding, ingest_landing
from snowplow_assets.defs.assets.folder_readiness import fail_unless_still_ready
from snowplow_assets.defs.assets.metadata_table import metadata_table
from snowplow_assets.defs.partitions import cdc_landings
from snowplow_assets.defs.resources import CdcResource, LakeResource

CDC_HISTORY = dg.AssetKey("cdc_history")
CDC_DELETES = dg.AssetKey("cdc_deletes")
NO_BAD_RECORDS = "no_bad_records"


def _models_table(ingested: IngestedLanding) -> dg.TableMetadataValue:
    return metadata_table(
        [("model", "string"), ("changes", "int"), ("deletes", "int"), ("truncates", "int"), ("columns", "int")],
        [
            {
                "model": name,
                "changes": summary.changes,
                "deletes": summary.deletes,
                "truncates": summary.truncates,
                "columns": len(summary.columns),
            }
            for name, summary in sorted(ingested.models.items())
        ],
    )


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            CDC_HISTORY,
            kinds={"spark", "parquet"},
            description="Every insert and update of a landing folder: key, timestamp, topic, partition, offset, "
            "the row and the raw value (cdc/history/<landing>/model=…/hour=…).",
        ),
        dg.AssetSpec(
            CDC_DELETES,
            kinds={"spark", "parquet"},
            description="Every delete of a landing folder, tombstones and truncates included "
            "(cdc/deletes/<landing>/model=…/hour=…).",
        ),
    ],
    check_specs=[
        dg.AssetCheckSpec(
            NO_BAD_RECORDS,
            asset=CDC_HISTORY,
            description="Every record of the landing was usable; bad ones are in cdc/bad/<landing>/ with their reason.",
        )
    ],
    partitions_def=cdc_landings,
    group_name="cdc",
    description="Parse one CDC landing folder by its topics' contracts into change and delete histories, in one Spark job.",
)
def cdc_ingest(
    context: dg.AssetExecutionContext, lake: LakeResource, spark: LazyPySparkResource, cdc: CdcResource
) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
    landing = context.partition_key
    fs = lake.filesystem()
    folder = lake.lake.cdc_landing(landing)
    fail_unless_still_ready(fs, folder, "landing", landing, {"path": folder, "landing": landing})
    ingested = ingest_landing(spark.spark_session, fs, lake.lake, landing, cdc.models())
    context.log.info(
        f"{landing}: {ingested.lines} lines, {ingested.changes} changes, {ingested.deletes} deletes, "
        f"{ingested.bad} bad, {ingested.ignored} ignored, {ingested.blank_lines} blank"
    )
    if not ingested.files:
        context.log.warning(f"{lake.lake.cdc_landing(landing)} holds no data files")
    common = {
        "lines": ingested.lines,
        "blank_lines": ingested.blank_lines,
        "bad": ingested.bad,
        "ignored": ingested.ignored,
        "files": ingested.files,
        "ingestion_token": ingested.token,
        "models": _models_table(ingested),
    }
    yield dg.MaterializeResult(
        asset_key=CDC_HISTORY,
        metadata={**common, "changes": ingested.changes, "path": dg.MetadataValue.path(lake.lake.cdc_history(landing))},
    )
    yield dg.MaterializeResult(
        asset_key=CDC_DELETES,
        metadata={**common, "deletes": ingested.deletes, "path": dg.MetadataValue.path(lake.lake.cdc_deletes(landing))},
    )
    yield dg.AssetCheckResult(
        asset_key=CDC_HISTORY,
        check_name=NO_BAD_RECORDS,
        passed=ingested.bad == 0,
        severity=dg.AssetCheckSeverity.WARN,
        description=f"{ingested.bad} of {ingested.lines - ingested.blank_lines} records were bad"
        + (
            f"; {ingested.ignored} were ignored (ignored topics, Debezium tombstones without the id)"
            if ingested.ignored
            else ""
        ),
        metadata={
            "bad": ingested.bad,
            "ignored": ingested.ignored,
            **{f"bad_{reason}": count for reason, count in sorted(ingested.bad_reasons.items())},
            "bad_rows_path": dg.MetadataValue.path(lake.lake.cdc_bad(landing)),
        },
    )
