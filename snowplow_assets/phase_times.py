"""Where a job's time goes: wall seconds per named phase, each phase counting only its own time."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class PhaseTimes:
    """Wall seconds per phase, for a report and the benchmark (benchmarks/shred.py).

    A phase entered inside another is taken out of the outer one's time, so the phases never overlap and
    add up to the time spent in any of them: a phase that calls another (the decisions call the event
    manifest) does not need to be split around it. A phase entered twice adds up.
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.seconds: dict[str, float] = {}
        self._clock = clock
        self._open: list[str] = []
        self._since = 0.0

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        self._charge_open_phase()
        self._open.append(name)
        try:
            yield
        finally:
            self._charge_open_phase()
            self._open.pop()

    def _charge_open_phase(self) -> None:
        now = self._clock()
        if self._open:
            name = self._open[-1]
            self.seconds[name] = self.seconds.get(name, 0.0) + now - self._since
        self._since = now
