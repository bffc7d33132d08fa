"""What the event manifest keeps of a batch the operator skips: the keys its published output loads, no more.

A run that fails after its check-and-set has recorded entries for events it never loaded. The README's answer
is to run the batch again, which brings its entries to what it loads. A batch skipped instead (`snowplow-assets
manifest skip`, for a folder re-sent under another name, say) is never run again, and until 2026-11-28 its
entries stayed until their ttl, 180 days by default: every later copy of those events, the re-sent folder's
included, was dropped as a cross-batch duplicate of events no batch loaded.

So skipping a batch rewrites its entries as a populate would (populate.py): the keys of its complete published
output, or none when it has none (an output whose marker a blocking check withdrew loads nothing). On DynamoDB,
whose items are written one by one, the items its runs wrote beyond those, as its journal (claims_journal.py)
and such an output name them, are deleted too, each only while it is still the batch's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession

from snowplow_assets.lake import Lake
from snowplow_assets.manifest.base import EventManifest, manifest_keys
from snowplow_assets.manifest.claims_journal import clear_claims, earlier_claims
from snowplow_assets.manifest.populate import record_published_output, shredded_event_keys
from snowplow_assets.storage import LakeFileSystem


def release_skipped_batch(
    spark_session: Callable[[], SparkSession],
    fs: LakeFileSystem,
    lake: Lake,
    manifest: EventManifest,
    run: str,
    claim_ids: bool,
) -> dict[str, int] | None:
    """Bring `manifest`'s entries of batch `run` to what its published output loads; the counts of the rewrite
    and of the deletes. None, without starting Spark, when nothing can hold entries of the batch: the manifest
    names none, no journal of its runs is left, and (where items outlive a run) it has no output."""
    complete = fs.exists(lake.shredding_complete(run))
    written: list[DataFrame] = []  # the keys the batch's runs may have given a manifest that keeps them
    journalled = manifest.keeps_entries_across_runs and fs.exists(lake.manifest_claims(run))
    # An output without its marker (a blocking check withdrew it) is in no loader, and its keys are the batch's.
    output = manifest.keeps_entries_across_runs and fs.exists(lake.shredded_good(run))
    if not (journalled or output or manifest.names_batch(run)):
        return None
    manifest.verify(rewriting=[run])
    spark = spark_session()
    report = record_published_output(spark, fs, lake, manifest, [run], claim_ids)
    counts = dict(report.counts)
    if journalled and (claimed := earlier_claims(spark, fs, lake, run)) is not None:
        written.append(claimed)
    # The output's keys, read once: all of them stale without the marker, none with it (it loads them).
    output_keys = manifest_keys(shredded_event_keys(spark, fs, lake, [run]), claim_ids) if output else None
    if output_keys is not None and not complete:
        written.append(output_keys)
    if written:
        stale = functools.reduce(DataFrame.unionByName, written)
        if output_keys is not None and complete:
            stale = stale.subtract(output_keys)
        forgotten = manifest.forget(report.batches[0], stale)
        counts.update(forgotten)
        if forgotten.get("stale_entries_not_removed"):  # the journal and the output name them to the next attempt
            return counts
    if journalled:
        clear_claims(fs, lake, run)
    return counts
