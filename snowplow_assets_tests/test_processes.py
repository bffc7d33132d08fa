import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from snowplow_assets.processes import ProcessIdentity, alive


def test_this_process_is_running():
    me = ProcessIdentity.current()
    assert me.pid == os.getpid() and me.host.split()[0] == socket.gethostname()
    assert me.gone() is False and alive(me.pid)
    assert ProcessIdentity.parse(me.host, me.text()) == me, "what a tag keeps names the same process"


def test_a_process_that_ended_is_gone():
    """Named by itself, as a CLI run's tags name the process that executes it."""
    program = "import time; from snowplow_assets.processes import ProcessIdentity as P; m = P.current(); "
    program += "print(m.host, m.text(), sep='\\t', flush=True); time.sleep(60)"
    child = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, text=True)
    try:
        host, text = child.stdout.readline().rstrip("\n").split("\t")
        identity = ProcessIdentity.parse(host, text)
        assert identity.pid == child.pid and identity.gone() is False and alive(child.pid)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert not alive(child.pid) and identity.gone() is True


def test_another_process_with_the_same_pid_is_not_the_one_named():
    me = ProcessIdentity.current()
    if me.started is None:  # no /proc: a pid that runs counts as the same process (processes.py)
        assert ProcessIdentity(me.host, me.pid, None).gone() is False
        return
    boot, _, ticks = me.started.rpartition("/")
    earlier = ProcessIdentity(me.host, me.pid, f"{boot}/{int(ticks) - 1}")
    other_boot = ProcessIdentity(me.host, me.pid, f"00000000-0000-0000-0000-000000000000/{ticks}")
    assert earlier.gone() is True and other_boot.gone() is True


def test_a_process_on_another_host_or_in_another_pid_namespace_cannot_be_told():
    """A container of its own may share the host's name (host networking) but not its pids."""
    me = ProcessIdentity.current()
    assert ProcessIdentity("elsewhere.example", me.pid, me.started).gone() is None
    assert ProcessIdentity(f"{socket.gethostname()} pid:[1]", me.pid, me.started).gone() is None


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="without /proc, an ended child is told by reaping it")
def test_asking_after_an_ended_child_leaves_its_exit_status_to_its_parent():
    """A code server asks after other processes' pids; one may now be a child of its own that has just ended,
    whose exit status belongs to the code that waits for it."""
    child = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    deadline = time.monotonic() + 30
    while Path(f"/proc/{child.pid}/stat").read_text().rsplit(") ", 1)[1][0] != "Z":
        assert time.monotonic() < deadline, "the child did not end"
        time.sleep(0.05)
    assert not alive(child.pid) and not alive(child.pid)
    assert child.wait() == 3
