import dagster as dg
from dagster_pyspark import LazyPySparkResource

from snowplow_assets.cdc.latest import write_latest
from snowplow_assets.defs.assets.cdc_history import CDC_DELETES, CDC_HISTORY
from snowplow_assets.defs.assets.metadata_table import metadata_table
from snowplow_assets.defs.checks.cdc_checks import CDC_BATCHES
from snowplow_assets.defs.lake_read_retries import read_again_if_files_are_swapped
from snowplow_assets.defs.pools import CDC_BATCHES_POOL
from snowplow_assets.defs.resources import CdcResource, LakeResource


@dg.asset(
    deps=[CDC_BATCHES, CDC_HISTORY, CDC_DELETES],
    group_name="cdc",
    pool=CDC_BATCHES_POOL,
    kinds={"spark", "parquet"},
    description="Every CDC model as a typed table, freshest: its newest batch merged with every record the batch "
    "does not hold yet (cdc/latest/<model>/). `snowplow-assets latest MODEL` computes the same view on demand.",
)
def cdc_latest(
    context: dg.AssetExecutionContext, lake: LakeResource, spark: LazyPySparkResource, cdc: CdcResource
) -> dg.MaterializeResult:
    models = cdc.models()
    with read_again_if_files_are_swapped(context):
        written = write_latest(spark.spark_session, lake.filesystem(), lake.lake, list(models.models.values()))
    metadata: dict[str, object] = {
        "models": metadata_table(
            [
                ("model", "string"),
                ("rows", "int"),
                ("columns", "int"),
                ("batch_boundary_ms", "int"),
                ("landings_read", "int"),
            ],
            [
                {
                    "model": m.model,
                    "rows": m.rows,
                    "columns": len(m.columns),
                    "batch_boundary_ms": m.batch_boundary_ms,
                    "landings_read": m.landings_read,
                }
                for m in written
            ],
        ),
        "path": dg.MetadataValue.path(lake.lake.uri("cdc", "latest")),
    }
    for m in written:
        metadata[f"{m.model}/rows"] = m.rows
        metadata[f"{m.model}/columns"] = dg.MetadataValue.json(m.columns)
    return dg.MaterializeResult(metadata=metadata)
