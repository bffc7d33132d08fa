"""One run of the web models: the run limits, then each enabled model in build order over the same window.

A run is opened with the incremental manifest as it was before the run ({model: last_success}) and the
current time; `run_limits` turns them into one window for every model of the run. Building a model then:

- writes nothing when its own last_success is at or past the upper limit (another model is catching up);
- otherwise upserts the rows of every session the window touches and returns the model's new last_success:
  the latest collector_tstamp in the window, never earlier than before. A window without an event after
  the model's last_success (empty, or holding only what its lookback reads again) leaves last_success alone,
  except when complete run folders already hold events after it (a gap in the data): then last_success
  moves to the upper limit, or a gap longer than the backfill limit would stop the models for good.

Sessions touched by a window: the lifecycle folds the window's valid events in; the derived models then
build every session whose lifecycle span [start, end] overlaps the window, from all of its valid events
up to its end (at most its cap) and the upper limit. Those events are read once per run, staged, and shared
by page views and sessions; a page view id that a session not built holds goes to the earlier of the two
(page_views.py), and sessions count the page views of the page-views table (sessions.py), so a session whose
page views changed is counted again. Every user those events name, or whose session was counted again, is
rebuilt from all of the user's sessions in the sessions table. Because a session is always rebuilt from all
of its events, and a user from all of its sessions, the tables do not depend on how the events were split
into runs, as long as an event lands in the lake before the window has moved more than
`lookback_window_hours` past its collector_tstamp (a quarantined session takes no event collected after its
cap: quarantine.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import cached_property

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from snowplow_assets.check_outcome import CheckOutcome
from snowplow_assets.lake import Lake
from snowplow_assets.storage import LakeFileSystem
from snowplow_assets.web import checks
from snowplow_assets.web.events import (
    DROP_REASONS,
    FolderSelection,
    RunFolderSpan,
    classify,
    drop_counts,
    event_time,
    from_micros,
    in_window,
    read_events,
    select_run_folders,
    timestamp_sql,
)
from snowplow_assets.web.page_views import PAGE_VIEWS_TABLE, UNINDEXED, indexed, owners, session_page_views
from snowplow_assets.web.quarantine import QUARANTINE, frozen_sessions, newly_quarantined
from snowplow_assets.web.run_limits import RunLimits, advance_last_success, format_timestamp, run_limits
from snowplow_assets.web.sessions import SESSIONS_TABLE, recounted, sessions
from snowplow_assets.web.sessions_lifecycle import LIFECYCLE, merge_lifecycle, touched_sessions
from snowplow_assets.web.upsert import (
    PARTITION,
    TableSpec,
    UpsertReport,
    day_floor,
    read_table,
    read_table_if_any,
    upsert,
)
from snowplow_assets.web.users import USERS_TABLE, users
from snowplow_assets.web.variables import (
    PAGE_VIEWS,
    QUARANTINED_SESSIONS,
    SESSIONS,
    SESSIONS_LIFECYCLE,
    USERS,
    WebVariables,
)

TOUCHED_SCHEMA = (
    "session_id STRING, domain_userid STRING, start_tstamp TIMESTAMP, end_tstamp TIMESTAMP, first_event_id STRING, "
    "events BIGINT"
)
SESSION_EVENTS_SCHEMA = (
    "event_id STRING, event STRING, collector_tstamp TIMESTAMP, event_time TIMESTAMP, ping_time TIMESTAMP, "
    "session_id STRING, domain_userid STRING, event_domain_userid STRING, page_view_id STRING, page_url STRING, "
    "page_title STRING"
)

TABLES: dict[str, TableSpec] = {
    SESSIONS_LIFECYCLE: LIFECYCLE,
    QUARANTINED_SESSIONS: QUARANTINE,
    PAGE_VIEWS: PAGE_VIEWS_TABLE,
    SESSIONS: SESSIONS_TABLE,
    USERS: USERS_TABLE,
}


@dataclass(frozen=True)
class WindowScan:
    """The window's events: where they came from, what was dropped, and the sessions they touch."""

    selection: FolderSelection
    counts: dict[str, int]  # events = malformed + duplicate + late + unidentified + valid
    processed_up_to: datetime | None  # the latest collector_tstamp in the window
    data_after: bool  # complete run folders hold events after the window, and none that may hold some is unfinished
    touched: DataFrame  # touched_sessions() of the valid events, every session including quarantined ones


@dataclass(frozen=True)
class ModelResult:
    model: str
    ran: bool  # False: the model was at or past the upper limit and wrote nothing
    previous_last_success: datetime | None
    last_success: datetime | None
    rows: int  # rows inserted or replaced
    note: str
    counts: dict[str, int] = field(default_factory=dict)
    partitions_written: list[str] = field(default_factory=list)
    updated: DataFrame | None = None  # the rows written, readable until the run is closed


class WebRun:
    """The web models' work for one window. Use as a context manager: closing removes the run's staging, and
    any that killed runs left."""

    def __init__(
        self,
        spark: SparkSession,
        fs: LakeFileSystem,
        lake: Lake,
        variables: WebVariables,
        enabled: Sequence[str],
        manifest: Mapping[str, datetime | None],
        now: datetime,
    ):
        self.spark, self.fs, self.lake, self.variables = spark, fs, lake, variables
        self.manifest = dict(manifest)
        self.now = now
        self.limits: RunLimits = run_limits(enabled, manifest, now, variables)
        self.staging = lake.web_staging(uuid.uuid4().hex[:16])
        self._builders: dict[str, Callable[[datetime | None], tuple[UpsertReport, dict[str, int]]]] = {
            SESSIONS_LIFECYCLE: self._sessions_lifecycle,
            QUARANTINED_SESSIONS: self._quarantined_sessions,
            PAGE_VIEWS: self._page_views,
            SESSIONS: self._sessions,
            USERS: self._users,
        }
        self._results: dict[str, ModelResult] = {}
        # Sessions whose page views changed while their events did not (sessions.recounted), when the sessions
        # model counted some again in this run: the users model rebuilds their users.
        self._recounted_sessions: DataFrame | None = None

    def __enter__(self) -> WebRun:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        # The parent of every run's staging folder (Lake.web_staging): a killed run leaves its own behind,
        # and one web-models run at a time (the web_models pool) means no other run is using one.
        self.fs.delete(self.staging.rsplit("/", 1)[0])

    # The window, read once ------------------------------------------------------------------------------

    def _days_before(self, moment: datetime, days: int) -> date:
        return day_floor(moment.date(), days)

    @cached_property
    def window(self) -> WindowScan:
        lower, upper = self.limits.lower, self.limits.upper
        selection = select_run_folders(self.fs, self.lake, lower, upper, now=self.now)
        latest = None
        counts = dict.fromkeys(("events", *DROP_REASONS, "valid"), 0)
        touched = self.spark.createDataFrame([], TOUCHED_SCHEMA)
        if selection.folders:
            observation = Observation("web_window")
            events = read_events(self.spark, self.fs, selection.folders, page_ids=False)
            classified = classify(in_window(events, lower, upper), self.variables.days_late_allowed)
            valid = classified.observe(observation, *drop_counts()).where("drop_reason IS NULL")
            path = f"{self.staging}/touched"
            touched_sessions(valid).write.parquet(self.fs.spark_path(path))
            observed = dict(observation.get)
            latest = from_micros(observed.pop("max_collector_micros"))
            counts = {name: int(value) for name, value in observed.items()}
            touched = self.spark.read.schema(TOUCHED_SCHEMA).parquet(self.fs.spark_read_path(path))
        data_after = not selection.incomplete and (
            selection.later_data or self._collected_after_window(selection.straddling, upper)
        )
        return WindowScan(selection, counts, latest, data_after, touched)

    def _collected_after_window(self, folders: list[RunFolderSpan], upper: datetime) -> bool:
        """Whether `folders`, whose markers span the window's end and now, hold an event between the two: read,
        since a marker cannot tell. Only a folder that also holds an event from the future is one."""
        if not folders:
            return False
        after = f"collector_tstamp > {timestamp_sql(upper)} AND collector_tstamp <= {timestamp_sql(self.now)}"
        return bool(read_events(self.spark, self.fs, folders, page_ids=False).where(after).limit(1).count())

    @property
    def session_events(self) -> DataFrame:
        """Every valid event of the sessions overlapping the window, up to each one's end and the upper limit.

        Columns: event_id, event, collector_tstamp, event_time, ping_time, session_id, domain_userid (the
        session's), event_domain_userid (the event's own), page_view_id, page_url, page_title. Staged once,
        shared by page views, sessions and users.
        """
        return self._session_scan[0]

    @cached_property
    def _session_scan(self) -> tuple[DataFrame, date | None]:
        """The session events and the day of the earliest of them."""
        lower, upper = self.limits.lower, self.limits.upper
        lifecycle = read_table(
            self.spark, self.fs, self.lake, LIFECYCLE, since=self._days_before(lower, self.variables.max_session_days)
        )
        overlapping = lifecycle.where(
            f"start_tstamp <= {timestamp_sql(upper)} AND end_tstamp >= {timestamp_sql(lower)}"
        ).select("session_id", "domain_userid", "start_tstamp", "end_tstamp")
        earliest = from_micros(overlapping.agg(F.min(F.unix_micros("start_tstamp"))).first()[0])
        if earliest is None:
            return self.spark.createDataFrame([], SESSION_EVENTS_SCHEMA), None
        folders = select_run_folders(self.fs, self.lake, earliest, upper).folders
        events = classify(
            in_window(read_events(self.spark, self.fs, folders), earliest, upper), self.variables.days_late_allowed
        ).where("drop_reason IS NULL")
        path = f"{self.staging}/session_events"
        observation = Observation("web_session_events")
        (
            events.alias("e")
            .join(overlapping.alias("s"), F.expr("e.domain_sessionid = s.session_id"))
            .where("e.collector_tstamp <= s.end_tstamp")
            .selectExpr(
                "e.event_id",
                "e.event",
                "e.collector_tstamp",
                f"{event_time('e.')} AS event_time",
                "coalesce(e.dvce_created_tstamp, e.derived_tstamp, e.collector_tstamp) AS ping_time",
                "s.session_id",
                "s.domain_userid",
                "e.domain_userid AS event_domain_userid",
                "e.page_view_id",
                "e.page_url",
                "e.page_title",
            )
            # The day as the upsert names partitions: an event time may be in the year 0 (upsert.day_floor).
            .observe(observation, F.min(F.date_format("event_time", "yyyy-MM-dd")).alias("earliest"))
            .write.parquet(self.fs.spark_path(path))
        )
        earliest_day = observation.get["earliest"]
        staged = self.spark.read.schema(SESSION_EVENTS_SCHEMA).parquet(self.fs.spark_read_path(path))
        return staged, day_floor(earliest_day) if earliest_day else None

    # Building models ----------------------------------------------------------------------------------

    def build(self, model: str) -> ModelResult:
        """Bring one model up to the window; models must be built in build order (variables.MODELS)."""
        if model not in self.limits.models:
            raise ValueError(f"web model {model!r} is not enabled in this run ({list(self.limits.models)})")
        previous = self.manifest.get(model)
        upper = format_timestamp(self.limits.upper)
        if previous is not None and not self.limits.should_run(previous):
            note = f"last_success {format_timestamp(previous)} is at or past the upper limit {upper}: nothing to do"
            result = ModelResult(model, False, previous, previous, 0, note)
        elif not self.window.counts["events"]:
            last_success, gap = self._last_success(previous)
            note = (
                f"no events up to {upper}, but later run folders hold events: last_success moves to {upper}"
                if gap
                else "no new events in the window: nothing written, last_success unchanged"
            )
            result = ModelResult(model, True, previous, last_success, 0, note)
        else:
            report, counts = self._builders[model](previous)
            last_success, gap = self._last_success(previous)
            note = f"{report.rows} rows upserted" + (f" from {_day(report.floor)} on" if report.floor else "")
            if gap:
                note += (
                    f"; no event after last_success up to {upper}, but later run folders hold events: "
                    f"last_success moves to {upper}"
                )
            result = ModelResult(
                model,
                True,
                previous,
                last_success,
                report.rows,
                note,
                counts,
                report.partitions_written,
                report.updated,
            )
        self._results[model] = result
        return result

    def _last_success(self, previous: datetime | None) -> tuple[datetime | None, bool]:
        """A model's new last_success, and whether it moved over a gap in the data.

        It is the latest collector_tstamp of the window, never earlier than before. But when the window holds
        no event after `previous` while complete run folders hold events after the window and before now
        (`data_after`), the data has a gap there, and last_success moves to the upper limit. That is whether
        the window is empty or holds only events that the lookback reads again: those up to last_success,
        which every window after a run with events holds. Otherwise a gap longer than backfill_limit_days
        would stop the models for good, every run reading the same window again.
        """
        moved = advance_last_success(previous, self.window.processed_up_to)
        if moved == previous and self.window.data_after:
            moved = advance_last_success(previous, self.limits.upper)
            return moved, moved != previous
        return moved, False

    def _upsert(
        self,
        spec: TableSpec,
        rows: DataFrame,
        *metrics,
        earliest: date | None = None,
        replaced_keys: DataFrame | None = None,
    ) -> UpsertReport:
        return upsert(
            self.spark, self.fs, self.lake, spec, rows, self.staging, self.variables.upsert_lookback_days, metrics,
            earliest, replaced_keys,
        )  # fmt: skip

    def _from_session_events(self, spec: TableSpec, rows: DataFrame, *metrics) -> UpsertReport:
        """Upsert rows built from the session events, which start no earlier than the earliest of them."""
        return self._upsert(spec, rows, *metrics, earliest=self._session_scan[1])

    def _matched_since(self) -> date:
        return self._days_before(self.limits.lower, self.variables.session_lookback_days)

    def _sessions_lifecycle(self, _previous: datetime | None) -> tuple[UpsertReport, dict[str, int]]:
        existing = read_table(self.spark, self.fs, self.lake, LIFECYCLE, since=self._matched_since())
        quarantined = read_table(self.spark, self.fs, self.lake, QUARANTINE).select("session_id")
        frozen = quarantined.union(existing.where("is_quarantined").select("session_id")).distinct()
        observation = Observation("web_lifecycle_frozen")
        flagged = self.window.touched.join(frozen.withColumn("_frozen", F.lit(True)), "session_id", "left").observe(
            observation,
            F.count_if(F.col("_frozen").isNotNull()).alias("quarantined_sessions_seen"),
            F.expr("coalesce(sum(CASE WHEN _frozen THEN events END), 0)").alias("quarantined_events"),
        )
        live = flagged.where("_frozen IS NULL").drop("_frozen", "events")
        report = self._upsert(
            LIFECYCLE,
            merge_lifecycle(live, existing, self.variables.max_session_days),
            F.count_if("is_new").alias("new_sessions"),
            F.count_if("is_quarantined").alias("newly_quarantined"),
        )
        counts = {**self.window.counts, **{k: int(v) for k, v in observation.get.items()}}
        counts.update({k: int(v) for k, v in report.metrics.items()})
        counts["sessions_touched"] = report.rows + counts["quarantined_sessions_seen"]
        return report, counts

    def _quarantined_sessions(self, _previous: datetime | None) -> tuple[UpsertReport, dict[str, int]]:
        lifecycle = self._results.get(SESSIONS_LIFECYCLE)
        if (
            lifecycle is not None
            and lifecycle.ran
            and not (lifecycle.counts["newly_quarantined"] or lifecycle.counts["quarantined_sessions_seen"])
        ):
            # The lifecycle just folded this window in and quarantined none of the sessions it touched.
            empty = self.spark.createDataFrame([], QUARANTINE.table_schema)
            return UpsertReport(0, None, [], [], {}, empty), {}
        lifecycle_rows = read_table(self.spark, self.fs, self.lake, LIFECYCLE, since=self._matched_since())
        report = self._upsert(QUARANTINE, newly_quarantined(lifecycle_rows, self.window.touched))
        return report, {}

    def _events_for_models(self) -> tuple[DataFrame, DataFrame]:
        """This run's session events that the derived models build, and the quarantined sessions they skip."""
        frozen = frozen_sessions(read_table(self.spark, self.fs, self.lake, QUARANTINE), self.limits.lower)
        # Partitioned by session once: page views and sessions then aggregate and join without more shuffles.
        events = self.session_events.join(F.broadcast(frozen), "session_id", "left_anti").repartition("session_id")
        return events, frozen

    @cached_property
    def _page_view_candidates(self) -> DataFrame:
        """session_page_views of the sessions the derived models build, staged: their ids find the held rows,
        and then they compete with them."""
        events, _ = self._events_for_models()
        candidates = session_page_views(events, self.variables.heartbeat, self.variables.min_visit_length)
        return self._stage("page_view_candidates", candidates)

    @property
    def _page_views_floor(self) -> date | None:
        """The first day the page-views upsert rewrites, where rows holding an id are looked for (page_views.py)."""
        earliest = self._session_scan[1]
        return day_floor(earliest, self.variables.upsert_lookback_days) if earliest else None

    def _held_page_views(self, rebuilt: DataFrame) -> DataFrame:
        """The page-views table's rows of the candidates' ids in sessions other than `rebuilt`, from the floor."""
        floor = self._page_views_floor
        if floor is None:  # no session events, so no candidates
            return self.spark.createDataFrame([], PAGE_VIEWS_TABLE.table_schema)
        ids = self._page_view_candidates.select("page_view_id")
        table = read_table(self.spark, self.fs, self.lake, PAGE_VIEWS_TABLE, since=floor)
        return table.join(ids, "page_view_id", "left_semi").join(rebuilt, "session_id", "left_anti")

    def _stage(self, name: str, rows: DataFrame) -> DataFrame:
        path = f"{self.staging}/{name}"
        rows.write.parquet(self.fs.spark_path(path))
        return self.spark.read.schema(rows.schema).parquet(self.fs.spark_read_path(path))

    def _page_views(self, _previous: datetime | None) -> tuple[UpsertReport, dict[str, int]]:
        events, _ = self._events_for_models()
        rebuilt = events.select("session_id").distinct()
        # Staged: the upsert rewrites the table they come from.
        held = self._stage("page_views_held", self._held_page_views(rebuilt))
        owned, lost = owners(self._page_view_candidates, held)
        lost = self._stage("page_views_lost", lost.select("page_view_id", "session_id"))
        counts = {"page_views_moved": lost.count()}
        metric = F.sum("page_pings").alias("page_pings")
        if held.isEmpty():
            return self._from_session_events(PAGE_VIEWS_TABLE, indexed(owned), metric), counts
        # The sessions holding the ids keep their other page views, indexed again without the ones they lost.
        kept = (
            read_table(self.spark, self.fs, self.lake, PAGE_VIEWS_TABLE, since=self._holders_since)
            .join(held.select("session_id").distinct(), "session_id", "left_semi")
            .join(lost, ["page_view_id", "session_id"], "left_anti")
            .select(*UNINDEXED)
        )
        # Those rows may start before the session events: the upsert finds the earliest day itself.
        return self._upsert(PAGE_VIEWS_TABLE, indexed(owned.unionByName(kept)), metric), counts

    @property
    def _holders_since(self) -> date | None:
        """The first day of a session that can hold a page view row from _page_views_floor on: sessions end
        within max_session_days of their start. The sessions model looks for sessions to count again from there."""
        floor = self._page_views_floor
        return day_floor(floor, self.variables.max_session_days) if floor else None

    def _sessions(self, previous: datetime | None) -> tuple[UpsertReport, dict[str, int]]:
        events, _ = self._events_for_models()
        metric = F.sum("total_events").alias("events")
        since = self._holders_since
        if since is None:  # no session events
            return self._upsert(SESSIONS_TABLE, self.spark.createDataFrame([], SESSIONS_TABLE.schema), metric), {}
        # The page views as the page-views model left them, collected up to the last_success this run gives
        # sessions, the bound of page_view_counts_agree: the page-views model may be ahead (sessions.py).
        up_to, _ = self._last_success(previous)
        views = read_table(self.spark, self.fs, self.lake, PAGE_VIEWS_TABLE, since=since).where(
            f"collector_tstamp <= {timestamp_sql(up_to or self.limits.upper)}"
        )
        built = sessions(events, views, self.variables.heartbeat)
        others = read_table(self.spark, self.fs, self.lake, SESSIONS_TABLE, since=since).join(
            events.select("session_id").distinct(), "session_id", "left_anti"
        )
        # Staged: the upsert rewrites the table they come from.
        again = self._stage("sessions_recounted", recounted(others, views, self.variables.heartbeat))
        counted_again = again.count()
        self._recounted_sessions = again.select("domain_userid") if counted_again else None
        # Counted-again rows may start before the session events: the upsert finds the earliest day itself.
        report = self._upsert(SESSIONS_TABLE, built.unionByName(again.select(*SESSIONS_TABLE.columns)), metric)
        return report, {"sessions_counted_again": counted_again}

    def _users(self, _previous: datetime | None) -> tuple[UpsertReport, dict[str, int]]:
        # A late event that is earlier than a session's first event hands the session to that event's user.
        # The user it leaves is the one its former first event names, and that event is still among the
        # session's events: rebuilding the users of every event rebuilds that one too, or removes its row
        # when it has no session left.
        events = self.session_events
        touched = events.select("domain_userid").union(
            events.select(F.col("event_domain_userid").alias("domain_userid"))
        )
        if self._recounted_sessions is not None:  # their page views changed, and so their users' counts
            touched = touched.union(self._recounted_sessions)
        touched = touched.where(F.col("domain_userid").isNotNull()).distinct()
        # A user's row covers all of the user's sessions, however old (dbt-snowplow-web's users model reads
        # them from the user's first session on, and upserts users without a lookback): the earliest of
        # their current rows and of this run's sessions bounds both the sessions read and the days rewritten.
        current_rows = read_table(self.spark, self.fs, self.lake, USERS_TABLE).join(
            touched, "domain_userid", "left_semi"
        )
        first_row_day = current_rows.agg(F.min(PARTITION)).first()[0]
        days = [day_floor(first_row_day)] if first_row_day else []
        days += [self._session_scan[1]] if self._session_scan[1] else []
        if not days:  # no session events: no user to rebuild
            return self._upsert(USERS_TABLE, self.spark.createDataFrame([], USERS_TABLE.schema)), {}
        since = min(days)
        table = read_table(self.spark, self.fs, self.lake, SESSIONS_TABLE, since=since)
        rows = users(table.join(touched, "domain_userid", "left_semi"))
        return self._upsert(USERS_TABLE, rows, earliest=since, replaced_keys=touched), {}

    # Checks ---------------------------------------------------------------------------------------------

    def check(self, model: str, names: Collection[str] | None = None) -> list[CheckOutcome]:
        """The checks of one model's table after it was built in this run: all of them, or those `names`.
        A check left out is not evaluated at all. Empty tables need no Spark job."""
        evaluate = {checks.UNIQUE_KEYS: self._unique_keys}
        if model == SESSIONS:
            evaluate |= {
                checks.PAGE_VIEW_COUNTS_AGREE: self._page_view_counts_agree,
                checks.QUARANTINED_SESSIONS_FROZEN: self._quarantined_sessions_frozen,
            }
        unknown = set(names or ()) - set(evaluate)
        if unknown:
            raise KeyError(f"{model} has no checks {sorted(unknown)} (its checks: {list(evaluate)})")
        return [check(model) for name, check in evaluate.items() if names is None or name in names]

    def _unique_keys(self, model: str) -> CheckOutcome:
        spec = TABLES[model]
        return checks.unique_keys(read_table_if_any(self.spark, self.fs, self.lake, spec), spec.key)

    def _page_view_counts_agree(self, model: str) -> CheckOutcome:
        table = read_table_if_any(self.spark, self.fs, self.lake, SESSIONS_TABLE)
        views = read_table_if_any(self.spark, self.fs, self.lake, PAGE_VIEWS_TABLE)
        if table is None and views is None:
            return CheckOutcome(checks.PAGE_VIEW_COUNTS_AGREE, True, "no sessions and no page views yet")
        return checks.page_view_counts_agree(
            table if table is not None else self.spark.createDataFrame([], SESSIONS_TABLE.table_schema),
            views if views is not None else self.spark.createDataFrame([], PAGE_VIEWS_TABLE.table_schema),
            self._results[model].last_success or self.limits.lower,
        )

    def _quarantined_sessions_frozen(self, model: str) -> CheckOutcome:
        quarantine = read_table_if_any(self.spark, self.fs, self.lake, QUARANTINE)
        views = read_table_if_any(self.spark, self.fs, self.lake, PAGE_VIEWS_TABLE)
        if quarantine is None or views is None:
            no_rows = "no quarantined session yet" if quarantine is None else "no page views yet"
            return CheckOutcome(checks.QUARANTINED_SESSIONS_FROZEN, True, no_rows)
        return checks.quarantined_sessions_gain_no_events(quarantine, views)


def _day(floor: date) -> str:
    return "the first day" if floor == date.min else floor.isoformat()  # date.min: every day (upsert.day_floor)


def drop_summary(counts: Mapping[str, int]) -> str:
    dropped = ", ".join(f"{counts.get(reason, 0)} {reason}" for reason in DROP_REASONS)
    return f"{counts.get('events', 0)} events in the window: {dropped}, {counts.get('valid', 0)} valid"
