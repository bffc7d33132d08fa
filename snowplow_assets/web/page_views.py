"""Page views: one row per page_view event's page view id (the `web_page` context), with engaged time.

- A page view belongs to the session of its page_view event. If its id has several page_view events in the
  session, the earliest by (event time, event_id) is the page view; a page_view event without a web_page
  context has no id and makes no page view.
- Page pings count toward the page view with the same id *in the same session*: a tab left open past the
  session timeout pings into a new session, and counting those pings in both would make a page view's
  engaged time depend on which sessions a run happened to build together.
- Engaged time (dbt-snowplow-web): `heartbeat × (distinct ping buckets − 1) + min_visit_length` for a page
  view with pings, 0 without; a bucket is `floor(dvce_created_tstamp / heartbeat)`, on the device clock
  the tracker pinged by.
- start is the page_view event's time, end the latest of it and its pings; the index is the position in
  the session by (start, event_id), from 1.
- `collector_tstamp` is the page_view event's, so a table can be compared with a model's last_success.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from snowplow_assets.web.upsert import TableSpec
from snowplow_assets.web.variables import PAGE_VIEWS

PAGE_VIEWS_TABLE = TableSpec(
    PAGE_VIEWS,
    key="page_view_id",
    schema="page_view_id STRING, event_id STRING, session_id STRING, domain_userid STRING, "
    "page_view_in_session_index INT, page_url STRING, page_title STRING, collector_tstamp TIMESTAMP, "
    "start_tstamp TIMESTAMP, end_tstamp TIMESTAMP, page_pings BIGINT, engaged_time_in_s BIGINT",
)


def page_views(events: DataFrame, heartbeat: int, min_visit_length: int) -> DataFrame:
    """Page view rows from session events (`session_id`, `domain_userid`, `event`, `event_time`, `ping_time`…).

    Written as window functions over (session_id, page_view_id) rather than aggregations and joins, so input
    partitioned by session_id is never shuffled again.
    """
    bucket = f"floor(unix_micros(ping_time) / {int(heartbeat) * 1_000_000})"
    view = "PARTITION BY session_id, page_view_id"
    ranked = events.where("page_view_id IS NOT NULL AND event IN ('page_view', 'page_ping')").selectExpr(
        "*",
        f"count_if(event = 'page_ping') OVER ({view}) AS page_pings",
        f"max(CASE WHEN event = 'page_ping' THEN event_time END) OVER ({view}) AS last_ping",
        f"size(collect_set(CASE WHEN event = 'page_ping' THEN {bucket} END) OVER ({view})) AS buckets",
        f"row_number() OVER ({view} ORDER BY event = 'page_view' DESC, event_time, event_id) AS _rank",
    )
    engaged = f"CASE WHEN buckets > 0 THEN {int(heartbeat)} * (buckets - 1) + {int(min_visit_length)} ELSE 0 END"
    return ranked.where("_rank = 1 AND event = 'page_view'").selectExpr(
        "page_view_id",
        "event_id",
        "session_id",
        "domain_userid",
        "row_number() OVER (PARTITION BY session_id ORDER BY event_time, event_id) AS page_view_in_session_index",
        "page_url",
        "page_title",
        "collector_tstamp",
        "event_time AS start_tstamp",
        "greatest(event_time, coalesce(last_ping, event_time)) AS end_tstamp",
        "CAST(page_pings AS BIGINT) AS page_pings",
        f"CAST({engaged} AS BIGINT) AS engaged_time_in_s",
    )
