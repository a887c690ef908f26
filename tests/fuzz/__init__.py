"""The differential fuzzer (issue 28): typed random queries (:mod:`tests.fuzz.generate`) over tables of edge
values (``data.sql``), each answered by PostgreSQL and by the gateway on ``pg.*``, ``lake.*`` and federated
(:mod:`tests.fuzz.run`); a difference is minimised (:mod:`tests.fuzz.shrink`) and kept in ``regressions.sql``.
``tests/test_fuzz.py`` runs a fixed seed in CI; ``python -m tests.fuzz --minutes N --seed S`` runs longer."""
