import pytest

from snowplow_assets.manifest.checks import CHECK_NAME, check_batch_against_manifest
from snowplow_assets.storage import LocalFileSystem


def test_the_blocking_check_passes_on_every_batch(scenario):
    for label, step in scenario.steps.items():
        assert step.check.name == CHECK_NAME
        assert step.check.passed, f"{label}: {step.check.description}"
    b2 = scenario.steps["B2"].check.metadata
    # B2's output: C', N', S', D. Pairs (C, fpC2), (S, fpS2), (D, fpD); only D kept its own id.
    assert (b2["pairs"], b2["ids"]) == (3, 1)


def test_the_blocking_check_fails_when_the_manifest_disagrees_with_the_output(scenario):
    check = scenario.tampered_check
    assert check is not None and not check.passed
    if scenario.backend == "lake":
        assert check.metadata["pairs_not_recorded"] == 2 and check.metadata["ids_not_claimed"] == 2
    else:
        assert check.metadata["pairs_held_by_other_batches"] == 1
        assert "1 pairs held by other batches" in check.description


def test_a_batch_shredded_without_a_manifest_cannot_be_checked(spark, scenario):
    report = scenario.steps["B1"].report
    without = type(report)(**{**report.__dict__, "event_manifest": None})
    with pytest.raises(ValueError, match="without an event manifest"):
        check_batch_against_manifest(spark, LocalFileSystem(), scenario.lake, scenario.manifest, without, True)
