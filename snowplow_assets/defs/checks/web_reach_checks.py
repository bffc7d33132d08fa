"""The shred's warning that the web models' incremental runs will not read some of a batch's events; its logic is
in snowplow_assets/web/late_batches.py."""

from collections.abc import Mapping, Sequence
from datetime import datetime

import dagster as dg

from snowplow_assets.defs.checks.check_results import check_result
from snowplow_assets.defs.checks.shred_checks import ATOMIC_EVENTS
from snowplow_assets.events.shred_batch import ShredReport
from snowplow_assets.web.late_batches import WITHIN_REACH, events_within_reach
from snowplow_assets.web.variables import WebVariables

WEB_REACH_CHECK_SPEC = dg.AssetCheckSpec(
    WITHIN_REACH,
    asset=ATOMIC_EVENTS,
    description="Every event of the batch from start_date on is within the web models' incremental reach (their "
    "greatest last_success less lookback_window_hours); one before it needs a full refresh of the web models (warns).",
)


def web_reach_check_result(
    enabled: Sequence[str], manifest: Mapping[str, datetime | None], variables: WebVariables, report: ShredReport
) -> dg.AssetCheckResult:
    outcome = events_within_reach(
        enabled, manifest, variables, report.min_collector_tstamp, report.max_collector_tstamp
    )
    return check_result(ATOMIC_EVENTS, outcome, dg.AssetCheckSeverity.WARN)
