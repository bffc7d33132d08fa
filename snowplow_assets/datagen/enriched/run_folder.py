"""Writing a run folder: its name, its part files (plain or gzipped), then its `_SUCCESS` marker."""

from __future__ import annotations

import gzip
import itertools
import random
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

from snowplow_assets.datagen.enriched.batch import Batch
from snowplow_assets.datagen.enriched.options import GenerationOptions, GenerationStats, as_utc
from snowplow_assets.run_folders import SUCCESS_MARKER


def run_folder_name(ts: datetime) -> str:
    return f"run={as_utc(ts):%Y-%m-%d-%H-%M-%S}"


def generate_run_folder(folder: Path, options: GenerationOptions) -> GenerationStats:
    """Write the part files of one run folder, then its `_SUCCESS` marker."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(options.seed)
    batch = Batch(options, rng)
    lines = batch.lines()
    total = batch.total_lines
    paths: list[Path] = []
    written = 0
    for index in range(options.files):
        share = total // options.files + (1 if index < total % options.files else 0)
        path = folder / f"part-{index:05d}{'.gz' if options.gzip else ''}"
        with _open_part(path, options.gzip) as out:
            written += _write_lines(out, itertools.islice(lines, share))
        paths.append(path)
    (folder / SUCCESS_MARKER).touch()
    return GenerationStats(
        lines_written=written,
        events=options.events,
        natural_duplicates=options.natural_duplicates,
        synthetic_duplicates=options.synthetic_duplicates,
        bad_lines=options.bad_lines,
        bad_line_kinds=batch.bad_line_kinds,
        files=paths,
    )


@contextmanager
def _open_part(path: Path, compress: bool) -> Iterator[BinaryIO]:
    with open(path, "wb") as raw:
        if compress:
            # mtime=0 and no file name in the header keep the bytes identical for a seed; level 1 compresses
            # twice as fast as the default for a slightly bigger file, which suits benchmark volumes
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=1) as zipped:
                yield zipped  # type: ignore[misc]
        else:
            yield raw


def _write_lines(out: BinaryIO, lines: Iterable[bytes]) -> int:
    count = 0
    chunk: list[bytes] = []
    for line in lines:
        chunk.append(line)
        if len(chunk) == 4096:
            out.write(b"".join(chunk))
            count += len(chunk)
            chunk.clear()
    out.write(b"".join(chunk))
    return count + len(chunk)
