"""How often an unchanged run is kept out of its case's series: each card's records, oldest first, added one
at a time to a file of that card alone (`perfguard baseline accept RUN.json`, as `--perfguard-update` adds
a run), counting the runs the admission rule leaves out (analysis/series.py: "not added").

    python benchmarks/admission_replay.py RUN.json ...      (anywhere: reads perfguard.json records)

The records should be runs of unchanged code (a re-record, `benchmarks/rerecord.sh`'s or
`unseen_card.py`'s): every run left out is then a false alarm of the update path, which, unlike the
gate, cannot measure a case again before it decides. Prints each line left out, and per card and run
how many of its cases' runs were left out.
"""

from __future__ import annotations

import collections
import contextlib
import io
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perfguard.cli import main as perfguard  # noqa: E402
from perfguard.model import loads_record  # noqa: E402


def replay(paths: list[Path]) -> int:
    by_card: dict[str, list[tuple[str, Path]]] = collections.defaultdict(list)
    for path in paths:
        record = loads_record(path.read_text(encoding="utf-8"), str(path))
        card = record.devices[0].uuid or record.devices[0].host or "?"
        by_card[card].append((record.created_at, path))
    total = refused = 0
    for card, runs in sorted(by_card.items()):
        with tempfile.TemporaryDirectory() as folder:
            for i, (_, path) in enumerate(sorted(runs), start=1):
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    perfguard(["baseline", "accept", str(path), "--baselines", folder])
                left = [line for line in out.getvalue().splitlines() if " not added: " in line]
                print(f"{card[:12]} run {i} ({path}): {len(left)} left out")
                for line in left:
                    print(f"  {line.split(' from ', 1)[0]}: {line.split(' not added: ', 1)[1].split(', so ', 1)[0]}")
                if i > 1:
                    total, refused = total + 1, refused + len(left)
    print(f"{refused} unchanged run(s) left out over {total} runs added to a series")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[3].strip(), file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(replay([Path(p) for p in sys.argv[1:]]))
