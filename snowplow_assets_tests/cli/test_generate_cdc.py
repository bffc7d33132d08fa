"""`snowplow-assets generate cdc` on a temporary lake."""

from click.testing import CliRunner

from snowplow_assets.cli import main
from snowplow_assets_tests.cdc.builders import ISSUE_MODELS_YAML, write_models


def _invoke(*args):
    result = CliRunner().invoke(main, ["generate", "cdc", *args])
    return result.exit_code, result.output


def test_writes_landings_with_the_options(tmp_path):
    code, output = _invoke(
        "--lake", str(tmp_path), "--landings", "3", "--keys", "50", "--update-rate", "0.4", "--delete-rate", "0.2",
        "--reinsert-rate", "1", "--late-rate", "0.1", "--duplicate-rate", "0.1", "--files", "2", "--gzip",
        "--start", "2026-05-04T03:00:00+02:00", "--interval-minutes", "5", "--seed", "9",
    )  # fmt: skip
    assert code == 0, output
    folders = sorted((tmp_path / "cdc" / "landing").iterdir())
    assert [f.name for f in folders] == [
        "landing=2026-05-04-01-00-00",
        "landing=2026-05-04-01-05-00",
        "landing=2026-05-04-01-10-00",
    ]
    assert sorted(p.name for p in folders[0].iterdir()) == ["_SUCCESS", "part-00000.json.gz", "part-00001.json.gz"]
    assert "50 inserts, 0 updates, 0 deletes" in output and "late from the previous landing" in output
    assert output.count(str(tmp_path)) == 3 and "customers:" in output and "live keys after the last landing" in output


def test_one_contract_only(tmp_path):
    code, output = _invoke("--lake", str(tmp_path), "--keys", "10", "--landings", "1", "--contract", "partial")
    assert code == 0, output
    assert "(partial 10)" in output


def test_refuses_to_overwrite_and_needs_a_model_when_there_are_several(tmp_path):
    assert _invoke("--lake", str(tmp_path), "--keys", "5", "--landings", "1")[0] == 0
    code, output = _invoke("--lake", str(tmp_path), "--keys", "5", "--landings", "1")
    assert code == 2 and "already exist" in output
    models = write_models(
        tmp_path / "models.yaml", ISSUE_MODELS_YAML + "  orders:\n    topics: [{topic: o, contract: partial}]\n"
    )
    code, output = _invoke("--lake", str(tmp_path / "other"), "--models", str(models))
    assert code == 2 and "choose one with --model" in output
    code, output = _invoke(
        "--lake",
        str(tmp_path / "other"),
        "--models",
        str(models),
        "--model",
        "orders",
        "--keys",
        "3",
        "--landings",
        "1",
    )
    assert code == 0 and "orders: 3 live keys" in output
