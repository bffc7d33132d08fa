from collections.abc import Iterator

import dagster as dg
from dagster_pyspark import LazyPySparkResource

from snowplow_assets.cdc.batches import BatchResult, cut_batches
from snowplow_assets.cdc.history import read_ingested
from snowplow_assets.cdc.models import CdcModels, load_models
from snowplow_assets.defs.assets.cdc_history import CDC_DELETES, CDC_HISTORY
from snowplow_assets.defs.assets.metadata_table import metadata_table
from snowplow_assets.defs.checks.cdc_checks import CDC_BATCHES, cdc_batch_check_results, cdc_batch_check_specs
from snowplow_assets.defs.lake_read_retries import read_again_if_files_are_swapped
from snowplow_assets.defs.pools import CDC_BATCHES_POOL
from snowplow_assets.defs.resources import CdcResource, LakeResource
from snowplow_assets.settings import Settings


class CdcBatchConfig(dg.Config):
    full: bool = False  # recompute every model from its whole history instead of from its previous batch


def _timestamp(ms: int | None) -> dg.MetadataValue:
    return dg.MetadataValue.timestamp(ms / 1000) if ms is not None else dg.MetadataValue.null()


def _results_table(results: list[BatchResult]) -> dg.TableMetadataValue:
    columns = [
        ("model", "string"), ("status", "string"), ("mode", "string"), ("boundary_ms", "int"),
        ("previous_boundary_ms", "int"), ("rows", "int"), ("tombstones", "int"), ("truncated_ms", "int"),
        ("records_read", "int"), ("files_read", "int"), ("landings_read", "int"), ("expired", "int"),
    ]  # fmt: skip
    rows = []
    for result in results:
        batch, cut = result.batch, result.status == "cut"
        rows.append(
            {
                "model": result.model,
                "status": result.status,
                "mode": batch.mode if batch and cut else "",
                "boundary_ms": batch.boundary_ms if batch else None,
                "previous_boundary_ms": batch.previous_boundary_ms if batch else None,
                "rows": batch.rows if batch else 0,
                "tombstones": batch.tombstones if batch else 0,
                "truncated_ms": batch.truncated_ms if batch else None,
                "records_read": batch.records_read if batch and cut else 0,
                "files_read": batch.files_read if batch and cut else 0,
                "landings_read": batch.landings_read if batch and cut else 0,
                "expired": len(result.expired),
            }
        )
    return metadata_table(columns, rows)


def build_cdc_batches(models: CdcModels) -> dg.AssetsDefinition:
    @dg.asset(
        key=CDC_BATCHES,
        deps=[CDC_HISTORY, CDC_DELETES],
        check_specs=cdc_batch_check_specs(models),
        group_name="cdc",
        pool=CDC_BATCHES_POOL,
        kinds={"spark", "parquet"},
        description="A snapshot of every CDC model at its boundary (its latest record, capped at now), cut from "
        "the previous batch and the newer records (cdc/batches/<model>/boundary=…).",
    )
    def cdc_batches(
        context: dg.AssetExecutionContext,
        config: CdcBatchConfig,
        lake: LakeResource,
        spark: LazyPySparkResource,
        cdc: CdcResource,
    ) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
        fs, session = lake.filesystem(), spark.spark_session
        with read_again_if_files_are_swapped(context):
            # Read once: the cut plans from the landings' summaries, and the stale-landings check judges them.
            ingested = read_ingested(fs, lake.lake)
            results = cut_batches(
                session,
                fs,
                lake.lake,
                models,
                full=config.full,
                retention_hours=cdc.batch_retention_hours,
                ingested=ingested,
            )
        metadata: dict[str, object] = {
            "models": _results_table(results),
            "path": dg.MetadataValue.path(lake.lake.uri("cdc", "batches")),
        }
        for result in results:
            context.log.info(f"{result.model}: {result.message}")
            batch = result.batch
            metadata[f"{result.model}/status"] = result.status
            metadata[f"{result.model}/boundary"] = _timestamp(batch.boundary_ms if batch else None)
            metadata[f"{result.model}/previous_boundary"] = _timestamp(batch.previous_boundary_ms if batch else None)
            metadata[f"{result.model}/last_truncate"] = _timestamp(batch.truncated_ms if batch else None)
            if batch:
                metadata[f"{result.model}/boundary_ms"] = batch.boundary_ms
                metadata[f"{result.model}/rows"] = batch.rows
        yield dg.MaterializeResult(metadata=metadata)
        yield from cdc_batch_check_results(
            session, fs, lake.lake, models, {r.model: r.batch for r in results}, ingested
        )

    return cdc_batches


@dg.definitions
def cdc_batches_asset() -> dg.Definitions:
    # Built when the code location loads: the checks are one per test declared in the models file.
    return dg.Definitions(assets=[build_cdc_batches(load_models(Settings().cdc_models))])
