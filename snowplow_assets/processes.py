"""Whether a process, perhaps started by another program long ago, is still running.

A pid alone cannot say: once its process ends, the kernel may give the number to another, and two containers
may share a host name but not their pids. So a process is named by where its pid means it (the host name and,
on Linux, the pid namespace), its pid and, where Linux's /proc tells it, when it started (the boot's id and
the start time in clock ticks since that boot), which no later process with that pid shares, even after a
reboot. Where there is no /proc (macOS), a process with that pid counts as the same one: mistaking a new
process for an old one only leaves the old one's work alone, never the other way round.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

_PROC = Path("/proc")


def alive(pid: int) -> bool:
    """Whether process `pid` runs: not ended, nor ended and waiting to be reaped by its parent (a zombie).

    Where Linux's /proc tells a zombie apart, nobody's child is reaped here. The code server, the parent of
    the run workers it launches, asks after the pids of other processes (defs/sensors/abandoned_cli_runs.py),
    and reaping a child of its own that the kernel had given such a pid again would take that child's exit
    status from the code that waits for it. Without /proc (macOS) an ended child of this process can only be
    told apart by reaping it, so there it is.
    """
    stat = _stat_fields(pid)
    if stat is not None:
        return stat[0] != "Z"
    if not (_PROC / "self" / "stat").exists():
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return False
        except ChildProcessError:
            pass  # not this process's child
    # The kernel, not /proc, says whether the pid is taken: /proc mounted with `hidepid` hides other users'
    # processes, which must not be taken for ended.
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process
    return True


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat's fields after the command name (which may hold spaces): the state first."""
    try:
        return (_PROC / str(pid) / "stat").read_text().rsplit(") ", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


def _host() -> str:
    """This host's name, and on Linux its pid namespace: the place where a pid names one process."""
    try:
        return f"{socket.gethostname()} {os.readlink(_PROC / 'self' / 'ns' / 'pid')}"
    except OSError:
        return socket.gethostname()


def _started(pid: int) -> str | None:
    """When `pid` started, as `<boot id>/<clock ticks since boot>`; None without /proc or that process."""
    stat = _stat_fields(pid)
    try:
        boot = (_PROC / "sys" / "kernel" / "random" / "boot_id").read_text().strip()
    except FileNotFoundError:
        return None
    # starttime is field 22 of stat, the 20th after the command name
    return f"{boot}/{stat[19]}" if stat is not None and len(stat) > 19 else None


@dataclass(frozen=True)
class ProcessIdentity:
    host: str
    pid: int
    started: str | None

    @classmethod
    def current(cls) -> ProcessIdentity:
        return cls(_host(), os.getpid(), _started(os.getpid()))

    def text(self) -> str:
        """`pid/started` (the host is kept apart, so that it can be searched for)."""
        return f"{self.pid}/{self.started or ''}"

    @classmethod
    def parse(cls, host: str, text: str) -> ProcessIdentity:
        pid, _, started = text.partition("/")
        return cls(host, int(pid), started or None)

    def gone(self) -> bool | None:
        """True once this process has ended, False while it runs; None on another host or in another pid
        namespace, where this process cannot tell."""
        if self.host != _host():
            return None
        if not alive(self.pid):
            return True
        return self.started is not None and _started(self.pid) != self.started
