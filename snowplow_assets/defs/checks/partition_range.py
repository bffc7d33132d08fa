"""Asset check results of a run over a range of partitions (a single-run backfill).

Dagster 1.13 takes one result per check and step, without a partition. A ranged shred run evaluates every
check on each run folder's own output, right after that folder is published, exactly as a single-folder run
does; `combine_partition_results` then reports each check once: passed only if it passed for every folder,
with each folder's verdict, description and metadata. A blocking check that failed for any folder therefore
fails the run, and the description names the folders at fault.
"""

from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg

SHOWN = 10  # folders named in a description; the metadata lists them all


def _plain(value: dg.MetadataValue) -> Any:
    raw = value.value
    return raw if isinstance(raw, (int, float, str, bool, type(None), list, dict)) else str(raw)


def combine_partition_results(by_partition: Mapping[str, Sequence[dg.AssetCheckResult]]) -> list[dg.AssetCheckResult]:
    """One result per check over every partition's results of it (each partition's own when there is one)."""
    if len(by_partition) == 1:
        return list(next(iter(by_partition.values())))
    checks: dict[tuple[dg.AssetKey | None, str | None], dict[str, dg.AssetCheckResult]] = {}
    for partition, results in by_partition.items():
        for result in results:
            checks.setdefault((result.asset_key, result.check_name), {})[partition] = result
    return [_combined(asset_key, check_name, results) for (asset_key, check_name), results in checks.items()]


def _combined(
    asset_key: dg.AssetKey | None, check_name: str | None, results: Mapping[str, dg.AssetCheckResult]
) -> dg.AssetCheckResult:
    failed = [partition for partition, result in results.items() if not result.passed]
    if failed:
        shown = "; ".join(f"{p}: {results[p].description or 'failed'}" for p in failed[:SHOWN])
        more = f"; and {len(failed) - SHOWN} more" if len(failed) > SHOWN else ""
        description = f"failed for {len(failed)} of {len(results)} partitions: {shown}{more}"
    else:
        description = f"passed for each of {len(results)} partitions"
    details = {
        partition: {
            "passed": result.passed,
            "description": result.description,
            **{k: _plain(v) for k, v in result.metadata.items()},
        }
        for partition, result in results.items()
    }
    return dg.AssetCheckResult(
        asset_key=asset_key,
        check_name=check_name,
        passed=not failed,
        severity=max((r.severity for r in results.values()), key=_severity_rank),
        description=description,
        metadata={
            "partitions": len(results),
            "failed_partitions": dg.MetadataValue.json(failed),
            "by_partition": dg.MetadataValue.json(details),
        },
    )


def _severity_rank(severity: dg.AssetCheckSeverity) -> int:
    return 1 if severity is dg.AssetCheckSeverity.ERROR else 0
