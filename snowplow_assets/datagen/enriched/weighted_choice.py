"""Random picks in proportion to weights: the reference data's way of choosing."""

from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Iterable
from typing import Generic, TypeVar

_T = TypeVar("_T")


class WeightedChoice(Generic[_T]):
    """Options picked at random in proportion to their weights, with one random number per pick."""

    def __init__(self, weighted: Iterable[tuple[_T, float]]):
        options, weights = zip(*weighted, strict=True)
        self._options: tuple[_T, ...] = options
        self._cumulative_weights = list(itertools.accumulate(weights))

    @classmethod
    def of(cls, **weights: float) -> WeightedChoice[str]:
        return WeightedChoice(weights.items())

    def pick(self, rng: random.Random) -> _T:
        total = self._cumulative_weights[-1]
        return self._options[bisect.bisect(self._cumulative_weights, rng.random() * total)]
