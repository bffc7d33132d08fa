"""Random version 4 UUIDs, reproducible for a seed."""

from __future__ import annotations

import random

_UUID_VARIANT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}


class Uuids:
    """Random version 4 UUIDs drawn from `rng`, so they are reproducible for a seed.

    They are made a thousand at a time: one comprehension costs much less than a call per UUID.
    """

    def __init__(self, rng: random.Random):
        self._rng = rng
        self._ready: list[str] = []

    def next(self) -> str:
        if not self._ready:
            h = self._rng.randbytes(16 * 1024).hex()
            self._ready = [
                f"{h[i : i + 8]}-{h[i + 8 : i + 12]}-4{h[i + 13 : i + 16]}-{_UUID_VARIANT[h[i + 16]]}"
                f"{h[i + 17 : i + 20]}-{h[i + 20 : i + 32]}"
                for i in range(0, len(h), 32)
            ]
        return self._ready.pop()
