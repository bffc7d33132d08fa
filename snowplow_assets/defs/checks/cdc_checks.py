"""The checks of cdc_batches: each model's dbt column tests, a warning when its columns change, a warning when
ingested landings were read under other models than the models file declares now, and one when tables remain of
models it no longer declares.

Their logic is in snowplow_assets/cdc/column_tests.py, columns.py and stale_landings.py; the specs are built
from the models file when the code location loads, one check per declared test (`<model>__<test>__<column>`),
one `<model>__column_drift` per model, `cdc_landings_read_by_the_current_models` and
`cdc_tables_only_of_declared_models`.
"""

from collections.abc import Iterator
from typing import Any

import dagster as dg
from pyspark.sql import SparkSession

from snowplow_assets.cdc.batches import BatchManifest
from snowplow_assets.cdc.column_tests import declared_tests, test_batch
from snowplow_assets.cdc.columns import column_drift
from snowplow_assets.cdc.history import IngestedLanding
from snowplow_assets.cdc.models import CdcModels
from snowplow_assets.cdc.stale_landings import stale_landings
from snowplow_assets.cdc.undeclared_models import undeclared_model_tables
from snowplow_assets.lake import Lake
from snowplow_assets.shown import shown
from snowplow_assets.storage import LakeFileSystem

CDC_BATCHES = dg.AssetKey("cdc_batches")
STALE_LANDINGS_CHECK = "cdc_landings_read_by_the_current_models"
UNDECLARED_MODELS_CHECK = "cdc_tables_only_of_declared_models"
LISTED = 1000  # stale landings listed with their changes in the metadata


def drift_check_name(model: str) -> str:
    return f"{model}__column_drift"


def cdc_batch_check_specs(models: CdcModels) -> list[dg.AssetCheckSpec]:
    specs = []
    for name, model in sorted(models.models.items()):
        specs += [
            dg.AssetCheckSpec(test.check_name, asset=CDC_BATCHES, description=test.description)
            for test in declared_tests(model)
        ]
        specs.append(
            dg.AssetCheckSpec(
                drift_check_name(name),
                asset=CDC_BATCHES,
                description=f"Warns when the columns of {name} (the union of its rows' keys) change between batches.",
            )
        )
    specs.append(
        dg.AssetCheckSpec(
            STALE_LANDINGS_CHECK,
            asset=CDC_BATCHES,
            description="Warns when ingested landings hold topics that the models file now reads otherwise (another "
            "model, contract or id field, or none): their records keep the old reading until they are ingested again.",
        )
    )
    specs.append(
        dg.AssetCheckSpec(
            UNDECLARED_MODELS_CHECK,
            asset=CDC_BATCHES,
            description="Warns when batches or a latest view remain of models the models file no longer declares: "
            "nothing updates them, and readers of the latest table would take their last rows for current.",
        )
    )
    return specs


def cdc_batch_check_results(
    spark: SparkSession,
    fs: LakeFileSystem,
    lake: Lake,
    models: CdcModels,
    batches: dict[str, BatchManifest | None],
    ingested: dict[str, IngestedLanding],
) -> Iterator[dg.AssetCheckResult]:
    for name, model in sorted(models.models.items()):
        batch = batches.get(name)
        for outcome in test_batch(spark, fs, lake, model, batch):
            yield dg.AssetCheckResult(
                asset_key=CDC_BATCHES,
                check_name=outcome.test.check_name,
                passed=outcome.passed,
                severity=dg.AssetCheckSeverity.ERROR,
                description=outcome.message,
                metadata={
                    "failures": outcome.failures,
                    "failing_rows": outcome.failing_rows,
                    "failing_values": dg.MetadataValue.json(list(outcome.samples)),
                    **({"batch_boundary_ms": batch.boundary_ms} if batch else {}),
                },
            )
        yield _drift_result(name, batch)
    yield _stale_landings_result(ingested, models)
    yield _undeclared_models_result(undeclared_model_tables(fs, lake, models))


def _warning(check_name: str, passed: bool, description: str, metadata: dict[str, Any]) -> dg.AssetCheckResult:
    """One of the checks of cdc_batches that warn rather than fail (the module docstring)."""
    return dg.AssetCheckResult(
        asset_key=CDC_BATCHES,
        check_name=check_name,
        passed=passed,
        severity=dg.AssetCheckSeverity.WARN,
        description=description,
        metadata=metadata,
    )


def _undeclared_models_result(folders: list[str]) -> dg.AssetCheckResult:
    return _warning(
        UNDECLARED_MODELS_CHECK,
        passed=not folders,
        description=(
            f"{len(folders)} folder(s) of batches or latest views belong to models the models file no longer "
            f"declares, which nothing updates: {shown(folders)}. Remove them once the models are gone for good."
            if folders
            else "every batch and latest view belongs to a declared model"
        ),
        metadata={"folders": dg.MetadataValue.json(folders)},
    )


def _stale_landings_result(ingested: dict[str, IngestedLanding], models: CdcModels) -> dg.AssetCheckResult:
    stale = stale_landings(ingested, models)
    names = list(stale)
    return _warning(
        STALE_LANDINGS_CHECK,
        passed=not stale,
        description=(
            f"{len(names)} landing(s) were ingested under other models than the models file declares now: "
            f"{shown(names)}. Ingest them again: materialise their cdc_history partitions (a backfill), or "
            "`snowplow-assets process --ingest <landing>`."
            if stale
            else "every landing was read as the models file reads its topics now"
        ),
        metadata={
            "stale_landings": len(names),
            "changes": dg.MetadataValue.json({name: stale[name] for name in names[:LISTED]}),
        },
    )


def _drift_result(model: str, batch: BatchManifest | None) -> dg.AssetCheckResult:
    if batch is None or batch.previous_columns is None:
        return _warning(
            drift_check_name(model),
            passed=True,
            description="no previous batch to compare with",
            metadata={"columns": dg.MetadataValue.json(batch.columns if batch else {})},
        )
    drift = column_drift(batch.previous_columns, batch.columns)
    summary = [f"{len(drift.added)} added", f"{len(drift.removed)} removed", f"{len(drift.retyped)} retyped"]
    return _warning(
        drift_check_name(model),
        passed=not drift.changed,
        description=(
            f"columns changed since the batch at {batch.previous_boundary_ms}: " + ", ".join(summary)
            if drift.changed
            else "same columns as the previous batch"
        ),
        metadata={
            "added": dg.MetadataValue.json(drift.added),
            "removed": dg.MetadataValue.json(drift.removed),
            "retyped": dg.MetadataValue.json({n: list(t) for n, t in drift.retyped.items()}),
            "columns": dg.MetadataValue.json(batch.columns),
            "batch_boundary_ms": batch.boundary_ms,
        },
    )
