"""A step's read of the lake that failed on a file gone since it was listed is run again.

Ingesting a landing is in no concurrency pool (cdc_history), so it may replace the history files that a cut
(`cdc_batches`) or the latest view (`cdc_latest`) planned to read; their pool keeps them apart from each other
only. Such a read fails on a missing file, and the step then asks Dagster to run it again (RetryRequested),
which plans anew from the lake as it is then: a cut staged its batch and publishes nothing before its reads
succeeded, so it is safe to run again. After RETRIES more attempts, the read's own error fails the step, so
the failure says what is missing (cdc.history.LostHistory for a history gone for good). Until 2026-11-28 the
step failed at the first such read, and the next schedule's run cut the batch. `snowplow-assets latest`, not a
Dagster step, retries the same way itself (cli/latest.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg

from snowplow_assets.storage import failed_on_a_gone_file

RETRIES = 2
SECONDS_BETWEEN = 2


@contextmanager
def read_again_if_files_are_swapped(context: dg.AssetExecutionContext) -> Iterator[None]:
    try:
        yield
    except Exception as error:
        if failed_on_a_gone_file(error) and context.retry_number < RETRIES:
            context.log.warning(
                f"a file the step planned to read is gone (an ingestion replaced it meanwhile); "
                f"running the step again, retry {context.retry_number + 1} of {RETRIES}"
            )
            raise dg.RetryRequested(max_retries=RETRIES, seconds_to_wait=SECONDS_BETWEEN) from error
        raise
