"""Batches (batches.py): the boundary rule, incremental cuts with late records, full recompute, expiry."""

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from snowplow_assets.cdc.batches import (
    BatchManifest,
    cut_batches,
    expire_batches,
    latest_batch,
    list_batches,
    plan_batch,
    read_batches,
)
from snowplow_assets.cdc.history import LandingBeingIngested, ingest_landing, read_ingested
from snowplow_assets.cdc.latest import latest_table
from snowplow_assets.lake import Lake
from snowplow_assets.storage import LocalFileSystem, failed_on_a_gone_file
from snowplow_assets_tests.cdc.builders import (
    ISSUE_MODELS_YAML,
    debezium,
    event,
    models,
    partial,
    record,
    write_landing,
)

MODELS = models(ISSUE_MODELS_YAML + "  orders:\n    topics: [{topic: shop.orders, contract: partial}]\n")
T = 1_772_359_200_000  # 2026-03-01T10:00:00Z


def at(minutes: int) -> int:
    return T + minutes * 60_000


LANDING_A = [  # inserts in hour 10 and at 11:00; deletes after
    partial(1, at(10), 0, {"email": "one@x", "state": "active"}),
    partial(4, at(15), 3, {"email": "four@x", "state": "active"}),
    debezium("c", 2, at(20), 0, {"email": "two@x", "state": "active"}),
    event("INSERT", 3, at(60), 0, {"email": "three@x", "state": "invited"}),
    partial(1, at(70), 1, None),
    debezium("d", 2, at(80), 1),
    record("shop.customers", None, '{"id": 2}', at(80), 2),
    record("shop.orders", {"id": "o1", "total": 5}, "o1", at(100), 0),
]
LANDING_B = [
    partial(3, at(90), 2, {"email": "three@y", "state": "active", "tier": "gold"}),
    event("INSERT", 1, at(75), 1, {"email": "one@y", "state": "invited"}),  # re-insert after the delete at 70
    debezium("u", 2, at(25), 3, {"email": "two@y", "state": "active"}),  # late: older than the delete at 80
    event("DELETE", 3, at(5), 2),  # late: older than the insert at 60
]
LANDING_C = [event("DELETE", 3, at(100), 3)]


def _contents(spark, fs, lake, batch):
    return {
        r["__key"]: (r["__kind"], json.loads(r["__data"]) if r["__data"] else None)
        for r in read_batches(spark, fs, lake, [batch]).where("__model = 'customers'").collect()
    }


@pytest.fixture(scope="module")
def story(spark, tmp_path_factory):
    """Landings and cuts in order; what each cut produced, recorded as it happened."""
    lake, fs = Lake(str(tmp_path_factory.mktemp("batches") / "lake")), LocalFileSystem()
    seen = {}

    def cut(name, now, **options):
        results = {r.model: r for r in cut_batches(spark, fs, lake, MODELS, now_ms=now, **options)}
        # An unchanged model's batch is the previous one, whose contents were read when it was cut.
        cut_now = results["customers"].status == "cut"
        seen[name] = (results, _contents(spark, fs, lake, results["customers"].batch) if cut_now else None)

    for name, lines in (("landing=a", LANDING_A), ("landing=b", LANDING_B), ("landing=c", LANDING_C)):
        write_landing(lake, name, lines)
    # The first cuts run while landing a's and b's latest records are still ahead of the clock, so that `now`
    # sets their boundaries and the incremental cut has a window of landing a to read.
    ingest_landing(spark, fs, lake, "landing=a", MODELS)
    cut("first", at(60))
    seen["copy before the second cut"] = str(tmp_path_factory.mktemp("copy") / "lake")
    shutil.copytree(lake.root, seen["copy before the second cut"])
    ingest_landing(spark, fs, lake, "landing=b", MODELS)
    cut("incremental", at(80))
    cut("full", at(80), full=True)
    ingest_landing(spark, fs, lake, "landing=c", MODELS)
    cut("now caps", at(85))
    cut("after now", at(1000))
    cut("unchanged", at(1000))
    ingest_landing(spark, fs, lake, "landing=b", MODELS)
    cut("re-ingested", at(1000))
    return lake, seen


def test_boundary_is_the_latest_record_capped_by_now(story):
    _, seen = story
    first = seen["first"][0]
    assert first["customers"].batch.boundary_ms == at(60), "records up to 80, now 60"
    assert first["orders"].batch.boundary_ms == at(60), "records up to 100, now 60"
    assert seen["incremental"][0]["customers"].batch.boundary_ms == at(80), "records up to 90, now 80"
    assert seen["now caps"][0]["customers"].batch.boundary_ms == at(85), "records up to 100, now 85"
    assert seen["after now"][0]["customers"].batch.boundary_ms == at(100), (
        "landing c's delete at 100 is the latest record; the latest change, at 90, does not hold it back"
    )
    assert seen["after now"][0]["orders"].batch.boundary_ms == at(100)


def test_a_delete_long_ago_does_not_hold_the_boundary_back(spark, lake):
    """Deletes are rare: under the seed's slowest-stream rule every cut after the one delete stayed at it."""
    fs = LocalFileSystem()
    landings = {
        "landing=1": [partial(1, at(0), 0, {"email": "one@x"}), partial(1, at(1), 1, None)],
        "landing=2": [partial(2, at(5), 2, {"email": "two@x"}), partial(2, at(6), 3, {"email": "two@y"})],
        "landing=3": [partial(2, at(8), 4, {"email": "two@z"})],
    }
    cuts = []
    for name, lines in landings.items():
        write_landing(lake, name, lines)
        ingest_landing(spark, fs, lake, name, MODELS)
        [result] = [r for r in cut_batches(spark, fs, lake, MODELS, now_ms=at(1000)) if r.model == "customers"]
        cuts.append(result.batch)
    assert [(b.mode, b.boundary_ms) for b in cuts] == [("full", at(1)), ("incremental", at(6)), ("incremental", at(8))]
    assert (cuts[-1].landings_read, cuts[-1].records_read) == (1, 1), "the window (6, 8] is in landing 3 alone"
    assert _contents(spark, fs, lake, cuts[-1]) == {"1": ("delete", None), "2": ("update", {"email": "two@z", "id": 2})}
    table, sources = latest_table(spark, fs, lake, MODELS.model("customers"), ["email"])
    assert sources.batch == cuts[-1] and [(r["id"], r["email"]) for r in table.collect()] == [("2", "two@z")]


def test_first_batch_holds_everything_up_to_its_boundary(story):
    _, seen = story
    results, contents = seen["first"]
    assert results["customers"].batch.mode == "full" and results["customers"].batch.previous_boundary_ms is None
    assert contents == {
        "1": ("update", {"id": 1, "email": "one@x", "state": "active"}),
        "2": ("insert", {"id": 2, "email": "two@x", "state": "active"}),
        "3": ("insert", {"customerId": 3, "email": "three@x", "state": "invited"}),
        "4": ("update", {"id": 4, "email": "four@x", "state": "active"}),
    }, "the deletes at 70 and 80 are after the boundary"


def test_incremental_cut_with_late_records_reinserts_and_deletes(story):
    _, seen = story
    results, contents = seen["incremental"]
    batch = results["customers"].batch
    assert (batch.mode, batch.previous_boundary_ms, batch.boundary_ms) == ("incremental", at(60), at(80))
    assert contents == {
        "1": ("insert", {"customerId": 1, "email": "one@y", "state": "invited"}),  # inserted again after its delete
        "2": ("delete", None),  # the late update at 25 does not undo the delete at 80
        "3": ("insert", {"customerId": 3, "email": "three@x", "state": "invited"}),  # the late delete at 5 is older
        "4": ("update", {"id": 4, "email": "four@x", "state": "active"}),
    }
    assert (batch.rows, batch.tombstones) == (3, 1)


def test_incremental_cut_reads_only_the_window_and_the_new_landing(story):
    _, seen = story
    incremental = seen["incremental"][0]["customers"].batch
    full = seen["full"][0]["customers"].batch
    # landing a: the deletes in (60, 80] only, from its hour-11 folders; landing b: its 3 records up to 80
    assert (incremental.records_read, incremental.landings_read, incremental.files_read) == (6, 2, 5)
    assert (full.records_read, full.files_read) == (10, 6)


def test_incremental_cut_does_not_rescan_older_history(spark, story):
    """With landing a's hour-10 history gone, the incremental cut is still right; a full one is not."""
    _, seen = story
    lake, fs = Lake(seen["copy before the second cut"]), LocalFileSystem()
    shutil.rmtree(Path(lake.cdc_history("landing=a")) / "model=customers" / "hour=2026-03-01-10")
    write_landing(lake, "landing=b", LANDING_B)
    ingest_landing(spark, fs, lake, "landing=b", MODELS)
    [incremental] = [r for r in cut_batches(spark, fs, lake, MODELS, now_ms=at(80)) if r.model == "customers"]
    assert _contents(spark, fs, lake, incremental.batch) == seen["incremental"][1]
    [full] = [r for r in cut_batches(spark, fs, lake, MODELS, now_ms=at(80), full=True) if r.model == "customers"]
    assert _contents(spark, fs, lake, full.batch) != seen["incremental"][1]


def test_full_recompute_gives_the_same_batch(story):
    _, seen = story
    results, contents = seen["full"]
    assert results["customers"].batch.mode == "full" and results["customers"].batch.boundary_ms == at(80)
    assert contents == seen["incremental"][1]


def test_boundary_capped_by_now_then_moves_on(story):
    _, seen = story
    assert seen["now caps"][1] == seen["incremental"][1], "nothing happened in (80, 85]"
    assert seen["after now"][1]["3"] == ("delete", None), "the update at 90 and then landing c's delete at 100"
    assert seen["after now"][1]["1"] == seen["incremental"][1]["1"]


def test_nothing_new_cuts_nothing_and_reingesting_changes_nothing(story):
    lake, seen = story
    unchanged = seen["unchanged"][0]["customers"]
    assert unchanged.status == "unchanged" and unchanged.batch == seen["after now"][0]["customers"].batch
    reingested = seen["re-ingested"][0]["customers"]
    assert reingested.status == "cut" and reingested.batch.boundary_ms == at(100)
    assert "1 landing(s) new or re-ingested" in reingested.message
    assert seen["re-ingested"][1] == seen["after now"][1]
    assert [b.boundary_ms for b in list_batches(LocalFileSystem(), lake, "customers")] == [
        at(60),
        at(80),
        at(85),
        at(100),
    ]


def test_column_drift_is_recorded_between_batches(story):
    _, seen = story
    first, second = seen["first"][0]["customers"].batch, seen["incremental"][0]["customers"].batch
    assert first.columns == {"customerId": "BIGINT", "email": "STRING", "state": "STRING"}
    assert second.previous_columns == first.columns
    assert second.columns == {**first.columns, "tier": "STRING"}, "landing b's rows bring a key: the union grows"
    assert seen["after now"][0]["customers"].batch.previous_columns == second.columns


def test_changed_model_spec_or_lost_landing_forces_a_full_cut(story):
    lake, _ = story
    fs, ingested = LocalFileSystem(), read_ingested(LocalFileSystem(), lake)
    previous = latest_batch(fs, lake, "customers")
    changed = models(ISSUE_MODELS_YAML.replace("customers_raw", "customers_raw_v2")).model("customers")
    plan = plan_batch(changed, ingested, previous, at(1000))
    assert plan.mode == "full" and "topics" in plan.reason
    without_c = {name: landing for name, landing in ingested.items() if name != "landing=c"}
    plan = plan_batch(MODELS.model("customers"), without_c, previous, at(1000))
    assert plan.mode == "full" and "landing=c" in plan.reason
    assert (previous.boundary_ms, plan.boundary_ms) == (at(100), at(100)), (
        "the latest record left is at 90, but boundaries never move back"
    )


def test_a_landing_reingested_under_another_reading_supersedes_the_batch_and_one_as_read_does_not(story):
    lake, _ = story
    fs, ingested = LocalFileSystem(), read_ingested(LocalFileSystem(), lake)
    previous = latest_batch(fs, lake, "customers")
    assert previous.readings["landing=a"] == {
        "customer_events": "customers/event/customerId",
        "customers_raw": "customers/partial/id",
        "shop.customers": "customers/debezium/id",
    }, "each batch records how it read every landing it holds"
    again = {**ingested, "landing=a": dataclasses.replace(ingested["landing=a"], token="again")}
    plan = plan_batch(MODELS.model("customers"), again, previous, at(1000))
    assert plan.mode == "incremental", "ingested again as it was read: a merge takes it in exactly"
    topics = {**ingested["landing=a"].topics, "customers_raw": "customers/partial/customer_id"}
    reread = {**ingested, "landing=a": dataclasses.replace(ingested["landing=a"], token="again", topics=topics)}
    plan = plan_batch(MODELS.model("customers"), reread, previous, at(1000))
    assert (plan.mode, plan.reason) == (
        "full",
        "landings ingested again under another reading since the batch: "
        "landing=a (customers_raw: customers/partial/id -> customers/partial/customer_id)",
    )
    before_readings = dataclasses.replace(previous, readings=None)
    plan = plan_batch(MODELS.model("customers"), again, before_readings, at(1000))
    assert plan.mode == "full" and "landing=a (reading not recorded)" in plan.reason
    plan = plan_batch(MODELS.model("customers"), ingested, before_readings, at(1000))
    assert plan.startswith("unchanged"), "a batch cut before readings were recorded serves until a landing changes"
    assert BatchManifest.from_json(json.dumps({**json.loads(previous.to_json()), "readings": None})) == before_readings


# Three models changes, one model each, replayed in one lake: a topic's id field, a topic's contract, and a
# topic moved out to another model. Each model reads topics of its own, `<model>.dbz` and `<model>.raw`.
REREAD_BEFORE = """
models:
  id_field:
    topics: [{topic: id_field.dbz, contract: debezium}]
  contract:
    topics: [{topic: contract.dbz, contract: debezium}]
  moved_out:
    topics: [{topic: moved_out.dbz, contract: debezium}, {topic: moved_out.raw, contract: partial}]
"""
REREAD_AFTER = """
models:
  id_field:
    topics: [{topic: id_field.dbz, contract: debezium, id_field: customerId}]
  contract:
    topics: [{topic: contract.dbz, contract: partial}]
  moved_out:
    topics: [{topic: moved_out.raw, contract: partial}]
  accounts:
    topics: [{topic: moved_out.dbz, contract: debezium}]
"""
# Each model's view after the change: id -> email.
REREAD_EXPECTED = {
    "id_field": {"c-1": "a@x"},
    # As partial rows, the whole values: no email; the delete of 2 is an update of 2 that a merge would
    # order before the tombstone at the same coordinate.
    "contract": {"1": None, "2": None},
    "moved_out": {"9": "z@x"},
}
REREAD_LANDING = [
    line
    for model in REREAD_EXPECTED
    for line in (
        record(
            f"{model}.dbz",
            {"payload": {"op": "c", "after": {"id": 1, "customerId": "c-1", "email": "a@x"}}},
            '{"id": 1}',
        ),
        record(
            f"{model}.dbz", {"payload": {"op": "d", "before": {"id": 2, "customerId": "c-2"}}}, '{"id": 2}', 1_001, 1
        ),
        record(f"{model}.raw", {"id": 9, "email": "z@x"}, "9"),  # a bad row (unknown topic) where no model declares it
    )
]


def _contents_by_model(spark, fs, lake, batches):
    """Each batch's contents as `_contents` gives them, by model, in one read."""
    contents = {batch.model: {} for batch in batches}
    for r in read_batches(spark, fs, lake, batches).collect():
        contents[r["__model"]][r["__key"]] = (r["__kind"], json.loads(r["__data"]) if r["__data"] else None)
    return contents


def test_reingesting_after_a_models_change_gives_the_batch_and_view_of_a_fresh_replay(spark, tmp_path):
    """The README's steps after a models change: the cut under the new models (full, still reading the landing
    as first ingested), the re-ingest the stale-landings check asks for, the next cut. A merge cannot take the
    old reading's records back, so that cut is full, and the view does not read the superseded batch. For each
    of the three changes of REREAD_AFTER, whose models are cut together."""
    fs, old, new = LocalFileSystem(), models(REREAD_BEFORE), models(REREAD_AFTER)
    lake, fresh = Lake(str(tmp_path / "lake")), Lake(str(tmp_path / "fresh"))

    def latest(at_lake: Lake) -> dict[str, tuple[dict, object]]:
        views = {}
        for model in REREAD_EXPECTED:
            table, sources = latest_table(spark, fs, at_lake, new.model(model))
            views[model] = ({r["id"]: r.asDict().get("email") for r in table.collect()}, sources.batch)
        return views

    def cut(at_lake: Lake, at_models, now_ms: int) -> dict:
        results = cut_batches(spark, fs, at_lake, at_models, now_ms=now_ms)
        return {r.model: r for r in results if r.model in REREAD_EXPECTED}

    for each in (lake, fresh):
        write_landing(each, "L1", REREAD_LANDING)
    ingest_landing(spark, fs, lake, "L1", old)
    first, changed = cut(lake, old, 10_000), cut(lake, new, 20_000)
    assert {model: (first[model].batch.mode, changed[model].batch.mode) for model in REREAD_EXPECTED} == dict.fromkeys(
        REREAD_EXPECTED, ("full", "full")
    )
    ingest_landing(spark, fs, lake, "L1", new)
    assert latest(lake) == {model: (expected, None) for model, expected in REREAD_EXPECTED.items()}, (
        "before the next cut, the view replays"
    )

    recut = cut(lake, new, 30_000)
    assert set(recut) == set(REREAD_EXPECTED)
    for model, result in recut.items():
        assert result.batch.mode == "full" and result.message.startswith(
            "full: landings ingested again under another reading since the batch: L1 ("
        ), model
    ingest_landing(spark, fs, fresh, "L1", new)
    replay = cut(fresh, new, 30_000)
    assert _contents_by_model(spark, fs, lake, [r.batch for r in recut.values()]) == _contents_by_model(
        spark, fs, fresh, [r.batch for r in replay.values()]
    )
    assert latest(lake) == {model: (expected, recut[model].batch) for model, expected in REREAD_EXPECTED.items()}
    assert latest(fresh) == {model: (expected, replay[model].batch) for model, expected in REREAD_EXPECTED.items()}


def _manifest(model: str, boundary: int, cut_at: int) -> BatchManifest:
    return BatchManifest(model, boundary, None, "full", "", cut_at, "", {}, {}, None, {}, 0, 0, 0, 0, 0)


def test_batches_expire_after_the_retention_but_the_newest_stays(lake):
    fs = LocalFileSystem()
    hour = 3_600_000
    for boundary, cut_at in ((1, 0), (2, 5 * hour), (3, 9 * hour)):
        fs.write_text(
            f"{lake.cdc_batch('customers', boundary)}/_batch.json", _manifest("customers", boundary, cut_at).to_json()
        )
    Path(lake.cdc_batches("customers"), "boundary=2.replaced-0123456789ab").mkdir()
    assert expire_batches(fs, lake, "customers", now_ms=10 * hour, retention_hours=6) == [1]
    assert [b.boundary_ms for b in list_batches(fs, lake, "customers")] == [2, 3]
    assert expire_batches(fs, lake, "customers", now_ms=100 * hour, retention_hours=6) == [2]
    assert [b.boundary_ms for b in list_batches(fs, lake, "customers")] == [3], "the newest batch is always kept"
    assert sorted(p.name for p in Path(lake.cdc_batches("customers")).iterdir()) == ["boundary=3"]


def test_a_model_without_records_gets_no_batch(spark, lake):
    results = cut_batches(spark, LocalFileSystem(), lake, MODELS, now_ms=at(1000))
    assert [(r.model, r.status, r.batch) for r in results] == [
        ("customers", "no data", None),
        ("orders", "no data", None),
    ]


def test_a_cut_while_a_landing_the_batch_holds_is_being_ingested_again_waits_for_it(spark, lake):
    """The ingestion removes the landing's summary before it swaps its folders. A cut in between read the
    landing as removed, and its full batch without it replaced the good one (CDC operator audit, 2026-11-28)."""
    fs = LocalFileSystem()
    write_landing(lake, "landing=a", LANDING_A)
    write_landing(lake, "landing=b", LANDING_B)
    for name in ("landing=a", "landing=b"):
        ingest_landing(spark, fs, lake, name, MODELS)
    [customers, _] = cut_batches(spark, fs, lake, MODELS, now_ms=at(1000))
    summary = Path(lake.cdc_ingested("landing=a"))
    text = summary.read_text()
    summary.unlink()  # where the ingestion that runs again stands between its first and last step

    with pytest.raises(LandingBeingIngested, match="holds landing.s. landing=a, whose history has no summary"):
        cut_batches(spark, fs, lake, MODELS, now_ms=at(1001))
    assert failed_on_a_gone_file(LandingBeingIngested("x")), "the step runs again"
    assert latest_batch(fs, lake, "customers") == customers.batch, "the newest batch stays"
    with pytest.raises(LandingBeingIngested):
        latest_table(spark, fs, lake, MODELS.model("customers"))  # its newer records would be left out

    summary.write_text(text)  # the ingestion is done
    assert {r.model: r.status for r in cut_batches(spark, fs, lake, MODELS, now_ms=at(1001))} == {
        "customers": "unchanged", "orders": "unchanged",
    }  # fmt: skip
    for folder in (lake.cdc_history("landing=a"), lake.cdc_deletes("landing=a")):
        shutil.rmtree(folder)
    summary.unlink()  # removed with its history: a full cut without it
    after = {r.model: r for r in cut_batches(spark, fs, lake, MODELS, now_ms=at(1002))}
    assert after["customers"].message.startswith("full: landings no longer ingested: ['landing=a']")
