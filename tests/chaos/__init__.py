"""The nemesis: a run of random, overlapping faults across every process of a stack while
pipelines and connector changes run, and a checker over everything they wrote
(``python -m tests.chaos``, ``make chaos``)."""
