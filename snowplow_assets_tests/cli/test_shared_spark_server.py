"""`snowplow-assets shared-spark-server` where runs share no server; with one, test_shared_spark_server.py."""

from click.testing import CliRunner

from snowplow_assets.cli import main


def test_without_a_shared_server_the_command_says_why(monkeypatch):
    own = {"SNOWPLOW_SPARK_SERVER": "own"}
    remote = {"SNOWPLOW_SPARK_SERVER": "shared", "SNOWPLOW_SPARK_REMOTE": "sc://localhost:15002"}
    for settings in (own, remote):
        with monkeypatch.context() as scoped:
            for key, value in settings.items():
                scoped.setenv(key, value)
            done = CliRunner().invoke(main, ["shared-spark-server", "--stop"])
        assert done.exit_code == 2
        assert "runs share no server: SNOWPLOW_SPARK_REMOTE is set, or SNOWPLOW_SPARK_SERVER is own" in done.output
