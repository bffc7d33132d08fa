"""Why something failed, from an error's message: the message itself or, when it carries a JVM's stack
trace, one line.

Spark's errors, through Py4J and through Spark Connect alike, carry the JVM's stack trace in their message,
hundreds of lines, and the reason an operator can act on is often only in its last cause: a write that
fails says `[TASK_WRITE_FAILED] Task failed while writing rows to file:…` first and `Caused by:
java.io.IOException: No space left on device` at the end. A run's failure, the processing manifest and the
CLI show the first line with that cause; the whole error stays in the run's event log. Any other message
(a Python error's, whose lines all say something) is kept whole.
"""

from __future__ import annotations

import re

# A frame of a Java stack trace: `at org.apache.spark.scheduler.Task.run(Task.scala:147)`.
_JVM_FRAME = re.compile(r"at [\w$.<>/]+\(")
_PY4J_PREAMBLE = "An error occurred while calling "
_CAUSED_BY = "Caused by: "


def reason(message: str) -> str:
    """`message`, or if it carries a JVM stack trace, its first line and the innermost of the trace's causes."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    if not any(_JVM_FRAME.match(line) for line in lines):
        return message.strip()
    first = lines[0]
    if _PY4J_PREAMBLE in first and len(lines) > 1:
        # Py4J says which Python call failed (after the error's class, in Dagster's record of it), then gives
        # the JVM's error on the next line, after ": ".
        first = lines[1].removeprefix(": ")
    causes = [line.removeprefix(_CAUSED_BY) for line in lines if line.startswith(_CAUSED_BY)]
    if causes and causes[-1] not in first:
        return f"{first} (caused by {causes[-1]})"
    return first


def reason_of(error: BaseException) -> str:
    """`reason` of `error`'s message, named by its type. Its causes are not followed: an error raised from
    another (such as spark.SharedServerEnded from gRPC's) says what its cause means."""
    return f"{type(error).__name__}: {reason(str(error))}"
