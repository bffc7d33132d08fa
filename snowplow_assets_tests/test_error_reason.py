import gzip
import subprocess
import sys
import urllib.parse

import pytest

from snowplow_assets.error_reason import reason, reason_of
from snowplow_assets.storage import LocalFileSystem


@pytest.fixture
def truncated_gzip(tmp_path) -> str:
    whole = gzip.compress(b"a line\n" * 100_000)
    path = tmp_path / "part-00000.gz"
    path.write_bytes(whole[: len(whole) // 2])
    return str(path)


def spark_uri(path: str) -> str:
    """The file's URI as Spark's messages name it: Java's, which quotes what a URI's path may not hold."""
    return "file://" + urllib.parse.quote(path, safe="/:@!$&'()*+,;=-._~")


def _read_error(session, path: str) -> BaseException:
    with pytest.raises(Exception) as raised:
        session.read.text(LocalFileSystem().spark_read_path(path)).count()
    return raised.value


def test_a_spark_error_through_py4j_gives_its_jvm_error_and_last_cause(spark, truncated_gzip):
    error = _read_error(spark, truncated_gzip)
    assert str(error).startswith("An error occurred while calling"), "Py4J's preamble, which says nothing"
    assert len(str(error).splitlines()) > 20, "and the JVM's stack trace"
    assert reason_of(error) == (
        f"{type(error).__name__}: org.apache.spark.SparkException: [FAILED_READ_FILE.NO_HINT] Encountered error "
        f"while reading file {spark_uri(truncated_gzip)}.  SQLSTATE: KD001 "
        "(caused by java.io.EOFException: Unexpected end of input stream)"
    )


def test_a_spark_error_through_spark_connect_gives_its_error_and_last_cause(spark_connect_server, truncated_gzip):
    """A client in a process of its own, as every Connect client of the tests: a Connect session switches
    PySpark's API to Connect for its whole process."""
    script = (
        "import sys\n"
        "from pyspark.sql import SparkSession\n"
        "from snowplow_assets.error_reason import reason_of\n"
        "session = SparkSession.builder.remote(sys.argv[1]).create()\n"
        "try:\n"
        "    session.read.text(sys.argv[2]).count()\n"
        "except Exception as error:\n"
        "    print('JVM stacktrace' in str(error))\n"
        "    print(reason_of(error))\n"
        "session.stop()\n"
    )
    command = [
        sys.executable,
        "-c",
        script,
        spark_connect_server.url,
        LocalFileSystem().spark_read_path(truncated_gzip),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "True",
        "SparkException: [FAILED_READ_FILE.NO_HINT] Encountered error while reading file "
        f"{spark_uri(truncated_gzip)}.  SQLSTATE: KD001 (caused by java.io.EOFException: Unexpected end of input stream)",
    ]


def test_an_error_raised_from_another_is_the_reason():
    """Its message says what its cause means; the cause stays in the traceback."""
    try:
        try:
            raise OSError("Connection refused")
        except OSError as cause:
            raise RuntimeError("the server has ended") from cause
    except RuntimeError as error:
        assert reason_of(error) == "RuntimeError: the server has ended"


def test_py4js_preamble_after_the_errors_class_as_dagster_records_it(spark, truncated_gzip):
    error = _read_error(spark, truncated_gzip)
    recorded = f"py4j.protocol.Py4JJavaError: {error}"
    assert reason(recorded) == reason_of(error).removeprefix("Py4JJavaError: ")


def test_a_message_without_a_stack_trace_is_kept_whole():
    message = "1 validation error for Settings\nlake\n  Input should be a valid string"
    assert reason(f"  {message}\n") == message
    assert reason("") == ""
