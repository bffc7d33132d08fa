"""The asset checks of the web models; their logic is in snowplow_assets/web/checks.py."""

from collections.abc import Iterable, Iterator

import dagster as dg

from snowplow_assets.check_outcome import CheckOutcome
from snowplow_assets.defs.checks.check_results import check_result
from snowplow_assets.defs.manifests.web_manifest import web_asset_key
from snowplow_assets.web.checks import PAGE_VIEW_COUNTS_AGREE, QUARANTINED_SESSIONS_FROZEN, UNIQUE_KEYS
from snowplow_assets.web.pipeline import TABLES
from snowplow_assets.web.variables import MODELS, SESSIONS

WEB_CHECK_SPECS = [
    *(
        dg.AssetCheckSpec(
            UNIQUE_KEYS,
            asset=web_asset_key(model),
            blocking=True,
            description=f"Every row has a {TABLES[model].key} and no two rows share one.",
        )
        for model in MODELS
    ),
    dg.AssetCheckSpec(
        PAGE_VIEW_COUNTS_AGREE,
        asset=web_asset_key(SESSIONS),
        blocking=True,
        description="Each session's page_views equals its rows in web_page_views collected up to the sessions' "
        "last_success.",
    ),
    dg.AssetCheckSpec(
        QUARANTINED_SESSIONS_FROZEN,
        asset=web_asset_key(SESSIONS),
        blocking=True,
        description="No page view of a session in the quarantined sessions table was collected after the session's "
        "capped end.",
    ),
]


def web_check_results(model: str, outcomes: Iterable[CheckOutcome]) -> Iterator[dg.AssetCheckResult]:
    key = web_asset_key(model)
    for outcome in outcomes:
        yield check_result(key, outcome)
