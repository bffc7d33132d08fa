"""`snowplow-assets latest MODEL`: the freshest view, printed as JSON lines or CSV."""

import csv
import importlib
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from snowplow_assets.cdc.batches import cut_batches
from snowplow_assets.cdc.history import ingest_landing
from snowplow_assets.cdc.latest import latest_table
from snowplow_assets.cdc.models import parse_models
from snowplow_assets.cli import main
from snowplow_assets.datagen.cdc import CdcGenerationOptions, generate_cdc_landings
from snowplow_assets.lake import Lake
from snowplow_assets.settings import DEFAULT_CDC_MODELS
from snowplow_assets.storage import LocalFileSystem, failed_on_a_gone_file
from snowplow_assets_tests.cdc.builders import record, write_landing, write_models

cli_latest = importlib.import_module("snowplow_assets.cli.latest")  # the package's `latest` is the command

# The packaged customers model, a model of awkward strings for the output formats, and one keyed by two columns.
MODELS_YAML = (
    Path(DEFAULT_CDC_MODELS).read_text()
    + "  notes:\n    topics: [{topic: notes, contract: partial}]\n"
    + "  order_lines:\n    id: [order_id, line_no]\n    topics: [{topic: lines, contract: partial}]\n"
)
MODELS = parse_models(MODELS_YAML)
AWKWARD = ' two "words", and\na line break '
NOTES = {"a": {"text": AWKWARD, "empty": "", "none": None}, "b": {"text": "\\ plain"}}
LINES = [(10, 2), (9, 12), (10, 1), (9, 1)]  # (order_id, line_no)


@pytest.fixture(scope="module")
def landed(spark, tmp_path_factory):
    """Two generated landings, a batch after the first, the second ingested after it; and the notes."""
    root = tmp_path_factory.mktemp("cli-latest")
    lake, fs = Lake(str(root / "lake")), LocalFileSystem()
    generation = generate_cdc_landings(
        Path(lake.cdc_landings),
        MODELS.model("customers"),
        CdcGenerationOptions(keys=40, landings=2, delete_rate=0.2, seed=5),
    )
    write_landing(
        lake, "landing=notes", [record("notes", row, key, 1_000, i) for i, (key, row) in enumerate(NOTES.items())]
    )
    write_landing(
        lake,
        "landing=lines",
        [
            record("lines", {"sku": f"s{order}-{line}"}, json.dumps({"order_id": order, "line_no": line}), 1_000, i)
            for i, (order, line) in enumerate(LINES)
        ],
    )
    for landing in (generation.landings[0].folder.name, "landing=notes", "landing=lines"):
        ingest_landing(spark, fs, lake, landing, MODELS)
    cut_batches(spark, fs, lake, MODELS)
    ingest_landing(spark, fs, lake, generation.landings[1].folder.name, MODELS)
    return lake, generation, write_models(root / "models.yaml", MODELS_YAML)


@pytest.fixture
def env(landed, monkeypatch):
    lake, _, models_file = landed
    monkeypatch.setenv("SNOWPLOW_LAKE", lake.root)
    monkeypatch.setenv("SNOWPLOW_CDC_MODELS", str(models_file))
    monkeypatch.setenv("SNOWPLOW_SPARK_MASTER", "local[2]")
    monkeypatch.setenv("SNOWPLOW_SPARK_SHUFFLE_PARTITIONS", "2")


def _invoke(*args):
    result = CliRunner().invoke(main, ["latest", *args])
    return result.exit_code, result.output


def test_json_prints_one_object_per_key_with_every_column(env, landed):
    _, generation, _ = landed
    code, output = _invoke("customers", "--format", "json")
    assert code == 0, output
    objects = [json.loads(line) for line in output.splitlines()]
    assert [o["id"] for o in objects] == sorted(generation.expected), "sorted by key, every live key once"
    columns = ["id", "country", "customerId", "email", "lifetime_value", "marketing_opt_in", "name", "orders", "state"]
    assert all(list(o) == columns for o in objects), "the key first, then every column, nulls included"
    for o in objects:
        row = generation.expected[o["id"]]
        assert {c: v for c, v in o.items() if v is not None and c != "id"} == {
            c: v for c, v in row.items() if c != "id"
        }


def test_csv_with_chosen_columns(env, landed):
    _, generation, _ = landed
    code, output = _invoke("customers", "--columns", "state, email", "--format", "csv")
    assert code == 0, output
    rows = list(csv.reader(io.StringIO(output)))
    assert rows[0] == ["id", "state", "email"]
    assert rows[1:] == [
        [key, generation.expected[key]["state"], generation.expected[key]["email"]]
        for key in sorted(generation.expected)
    ]


def test_awkward_strings_round_trip_through_both_formats(env):
    code, output = _invoke("notes", "--format", "csv")
    assert code == 0, output
    assert list(csv.reader(io.StringIO(output))) == [
        ["id", "empty", "none", "text"], ["a", "", "", AWKWARD], ["b", "", "", "\\ plain"],
    ]  # fmt: skip
    assert output.startswith('id,empty,none,text\na,"",,"'), "an empty string is quoted, a null is not"
    code, output = _invoke("notes", "--format", "json")
    assert code == 0, output
    assert [json.loads(line) for line in output.splitlines()] == [
        {"id": "a", "empty": "", "none": None, "text": AWKWARD}, {"id": "b", "empty": None, "none": None, "text": "\\ plain"},
    ]  # fmt: skip


def test_a_key_of_two_columns_prints_as_two_columns_sorted_by_both(env):
    code, output = _invoke("order_lines", "--format", "csv")
    assert code == 0, output
    assert list(csv.reader(io.StringIO(output))) == [
        ["order_id", "line_no", "sku"], ["10", "1", "s10-1"], ["10", "2", "s10-2"], ["9", "1", "s9-1"], ["9", "12", "s9-12"],
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("orders",), "no CDC model 'orders'"),
        (("customers", "--columns", "nope"), "nope"),
        (("customers", "--columns", "a,,b"), "empty column"),
    ],
)
def test_bad_model_or_columns_are_usage_errors(env, args, message):
    code, output = _invoke(*args)
    assert code == 2 and message in output


def test_a_broken_models_file_is_reported(env, tmp_path, monkeypatch):
    (tmp_path / "models.yaml").write_text("models: {m: {topics: []}}\n")
    monkeypatch.setenv("SNOWPLOW_CDC_MODELS", str(tmp_path / "models.yaml"))
    code, output = _invoke("m")
    assert code == 1 and "invalid CDC models" in output


def test_a_view_over_landings_read_under_other_models_warns_on_standard_error(env, tmp_path, monkeypatch):
    changed = MODELS_YAML.replace("{topic: notes, contract: partial}", "{topic: notes, contract: event}")
    monkeypatch.setenv("SNOWPLOW_CDC_MODELS", str(write_models(tmp_path / "models.yaml", changed)))
    notes = CliRunner().invoke(main, ["latest", "notes", "--columns", "text"])
    assert notes.exit_code == 0, notes.output
    assert notes.stderr == (
        "warning: 1 CDC landing(s) were read under other models than the models file declares now, and this "
        "view reads them as they were read: landing=notes; ingest them again (snowplow-assets process --ingest "
        "LANDING)\n"
    )
    assert [json.loads(line)["id"] for line in notes.stdout.splitlines()] == ["a", "b"], "the rows as read"
    customers = CliRunner().invoke(main, ["latest", "customers", "--columns", "email"])
    assert customers.exit_code == 0 and customers.stderr == "", "the change does not concern customers"


def test_a_landing_swapped_under_the_view_is_read_again_and_nothing_printed_twice(env, landed, spark, monkeypatch):
    """The command is in no pool: a landing ingested again between the view's plan and its read swaps the files
    it planned to read. The read fails before anything is printed, and the view is computed again."""
    lake, generation, _ = landed
    unheld = generation.landings[1].folder.name  # read whole: no batch holds it
    planned = []

    def latest_table_then_ingest_again(*args, **kwargs):
        table = latest_table(*args, **kwargs)
        if len(planned) < swaps:
            ingest_landing(spark, LocalFileSystem(), lake, unheld, MODELS)
        planned.append(table)
        return table

    monkeypatch.setattr(cli_latest, "latest_table", latest_table_then_ingest_again)
    swaps = 1
    once = CliRunner().invoke(main, ["latest", "customers", "--columns", "email"])
    assert once.exit_code == 0, once.output
    assert [json.loads(line)["id"] for line in once.stdout.splitlines()] == sorted(generation.expected)
    assert once.stderr == (
        "the lake changed under the view (a file it planned to read is gone); reading it again, attempt 2 of 3\n"
    )
    planned.clear()
    swaps = cli_latest.ATTEMPTS
    always = CliRunner().invoke(main, ["latest", "customers", "--columns", "email"])
    assert (always.exit_code, always.stdout, len(planned)) == (1, "", 3)
    assert always.stderr.splitlines()[1:] == [
        "the lake changed under the view (a file it planned to read is gone); reading it again, attempt 3 of 3",
        "the lake changed under the view (a file it planned to read is gone), in each of 3 attempts",
    ]
    assert failed_on_a_gone_file(always.exception), "the read's own error, raised after the last attempt"
