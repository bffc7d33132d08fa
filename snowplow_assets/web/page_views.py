"""Page views: one row per page view id (the `web_page` context), owned by one session, with engaged time.

- A page view id belongs to one session: the session of its earliest page_view event by (event time,
  event_id, then session_id), and that event is the page view. dbt-snowplow-web deduplicates page views by
  page_view_id the same way. A page_view event whose id an earlier one owns makes no page view, so it counts
  in no session's page views, index or engaged time: an id is one page view wherever it is seen again (a bot
  replaying page views, a server-side tracker that sets the id itself, a synthetic duplicate's copy in
  another session). A page_view event without a web_page context has no id and makes no page view.
- Page pings count toward the page view with the same id *in the same session*: a tab left open past the
  session timeout pings into a new session, and counting those pings in both would make a page view's
  engaged time depend on which sessions a run happened to build together.
- Engaged time (dbt-snowplow-web): `heartbeat × (distinct ping buckets − 1) + min_visit_length` for a page
  view with pings, 0 without; a bucket is `floor(dvce_created_tstamp / heartbeat)`, on the device clock
  the tracker pinged by.
- start is the page_view event's time, end the latest of it and its pings; the index is the position in
  the session by (start, event_id), from 1.
- `collector_tstamp` is the page_view event's, so a table can be compared with a model's last_success.

Ownership across runs (`owners`). A run builds the page views of the sessions it rebuilds, but an id may
already be held by a row of a session it does not rebuild. The run's page views and those rows compete: the
earliest owns the id, as in one run over every event. A held row that loses is replaced by the owner's, the
other rows of its session are indexed again, and the sessions model counts its session again (sessions.py). An
owner only gets earlier, so a session that lost an id never wins it back. Held rows are looked for in the
days the page-views upsert rewrites (`upsert_lookback_days` before the run's earliest session event; the
read the upsert makes anyway): an id seen again further apart keeps one row per holder, as dbt-snowplow-web's
upsert, which deletes within its lookback alone, keeps them too, and `unique_keys` reports it. (Until
2026-11-28 an id was a page view per session: two rows of one key when one run built both sessions.)
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from snowplow_assets.web.upsert import TableSpec
from snowplow_assets.web.variables import PAGE_VIEWS

PAGE_VIEWS_TABLE = TableSpec(
    PAGE_VIEWS,
    key="page_view_id",
    schema="page_view_id STRING, event_id STRING, session_id STRING, domain_userid STRING, "
    "page_view_in_session_index INT, page_url STRING, page_title STRING, collector_tstamp TIMESTAMP, "
    "start_tstamp TIMESTAMP, end_tstamp TIMESTAMP, page_pings BIGINT, engaged_time_in_s BIGINT",
)
INDEX = "page_view_in_session_index"
# A page view before it is indexed in its session: what `session_page_views` builds and `owners` compares.
UNINDEXED = [column for column in PAGE_VIEWS_TABLE.columns if column != INDEX]
# Which of two rows of one id owns it: the earlier page_view event. The session decides only between copies of
# one event_id, which no tracker sends to two sessions.
_OWNER_ORDER = "start_tstamp, event_id, session_id"


def session_page_views(events: DataFrame, heartbeat: int, min_visit_length: int) -> DataFrame:
    """Each session's page view of every id it has a page_view event of, from session events (`session_id`,
    `domain_userid`, `event`, `event_time`, `ping_time`…); not yet owned (`owners`) nor indexed (`indexed`).

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
        "page_url",
        "page_title",
        "collector_tstamp",
        "event_time AS start_tstamp",
        "greatest(event_time, coalesce(last_ping, event_time)) AS end_tstamp",
        "CAST(page_pings AS BIGINT) AS page_pings",
        f"CAST({engaged} AS BIGINT) AS engaged_time_in_s",
    )


def owners(candidates: DataFrame, held: DataFrame) -> tuple[DataFrame, DataFrame]:
    """The candidates (session_page_views of the sessions a run rebuilds) that own their id against each other
    and against `held`, the table's rows of those ids in sessions the run does not rebuild; and the held rows
    that lose their id, whose sessions lose a page view (module doc). Both in UNINDEXED columns."""
    contest = candidates.select(*UNINDEXED, F.lit(False).alias("_held")).unionByName(
        held.select(*UNINDEXED, F.lit(True).alias("_held"))
    )
    ranked = contest.withColumn(
        "_owner", F.expr(f"row_number() OVER (PARTITION BY page_view_id ORDER BY {_OWNER_ORDER}) = 1")
    )
    owned = ranked.where("_owner AND NOT _held").select(*UNINDEXED)
    lost = ranked.where("_held AND NOT _owner").select(*UNINDEXED)
    return owned, lost


def indexed(rows: DataFrame) -> DataFrame:
    """Page views (UNINDEXED columns), each one numbered in its session by (start, event_id): table rows."""
    return rows.withColumn(
        INDEX, F.expr("row_number() OVER (PARTITION BY session_id ORDER BY start_tstamp, event_id)")
    ).select(*PAGE_VIEWS_TABLE.columns)
