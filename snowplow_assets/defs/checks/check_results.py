"""Domain check outcomes as Dagster asset check results."""

import dagster as dg

from snowplow_assets.check_outcome import CheckOutcome


def check_result(
    asset_key: dg.AssetKey, outcome: CheckOutcome, severity: dg.AssetCheckSeverity = dg.AssetCheckSeverity.ERROR
) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        asset_key=asset_key,
        check_name=outcome.name,
        passed=outcome.passed,
        severity=severity,
        description=outcome.description,
        metadata=outcome.metadata,
    )
