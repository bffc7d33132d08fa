import dagster as dg

from snowplow_assets.defs.checks.partition_range import combine_partition_results

KEY = dg.AssetKey("atomic_events")


def result(name: str, passed: bool, **metadata: int) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        asset_key=KEY,
        check_name=name,
        passed=passed,
        metadata=metadata,
        description="ok" if passed else f"{name} broke",
    )


def test_one_partition_keeps_its_own_results():
    own = [result("unique_event_ids", True, duplicates=0), result("lines_accounted_for", False, missing=3)]
    assert combine_partition_results({"run=a": own}) == own


def test_each_check_is_reported_once_failing_if_it_failed_for_any_partition():
    combined = combine_partition_results(
        {
            "run=a": [result("unique_event_ids", True, duplicates=0), result("lines_accounted_for", True, missing=0)],
            "run=b": [result("unique_event_ids", False, duplicates=2), result("lines_accounted_for", True, missing=0)],
            "run=c": [result("unique_event_ids", False, duplicates=1), result("lines_accounted_for", True, missing=0)],
        }
    )
    unique, lines = combined
    assert (unique.check_name, unique.passed, lines.check_name, lines.passed) == (
        "unique_event_ids",
        False,
        "lines_accounted_for",
        True,
    )
    assert (
        unique.description
        == "failed for 2 of 3 partitions: run=b: unique_event_ids broke; run=c: unique_event_ids broke"
    )
    assert lines.description == "passed for each of 3 partitions"
    assert unique.metadata["partitions"].value == 3
    assert unique.metadata["failed_partitions"].value == ["run=b", "run=c"]
    assert unique.metadata["by_partition"].value["run=b"] == {
        "passed": False,
        "description": "unique_event_ids broke",
        "duplicates": 2,
    }
    assert unique.severity is dg.AssetCheckSeverity.ERROR and unique.asset_key == KEY
