"""The `snowplow-assets` command group (snowplow_assets/cli/__init__.py)."""

from click.testing import CliRunner

from snowplow_assets.cli import main


def test_settings_the_environment_got_wrong_are_an_error_message_not_a_traceback(monkeypatch):
    monkeypatch.setenv("SNOWPLOW_SPARK_CONF", "{bad")
    monkeypatch.setenv("SNOWPLOW_LAKE", "s3:/bucket/lake")
    done = CliRunner().invoke(main, ["shared-spark-server"])
    assert done.exit_code == 1
    assert done.output.startswith("Error: invalid settings:\n  SNOWPLOW_SPARK_CONF: not valid JSON (")
    assert isinstance(done.exception, SystemExit), "click reported it, rather than the exception escaping"

    monkeypatch.delenv("SNOWPLOW_SPARK_CONF")
    done = CliRunner().invoke(main, ["shared-spark-server"])
    assert done.exit_code == 1
    assert done.output == (
        "Error: invalid settings:\n"
        "  SNOWPLOW_LAKE: the lake is a local folder or an s3://bucket/prefix URI (it is 's3:/bucket/lake')\n"
    )
