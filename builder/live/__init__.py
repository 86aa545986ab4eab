"""ExecRepoBench Live: dated snapshots whose masked code was released after a date.

`index` reads a project's releases and upload times from the package index (PEP 691/700), `candidates`
is the packaged list of projects to try, `requirements` makes a candidate's manifest entry from what its
sdist declares, `newcode` finds the lines added or changed since the baseline release, and `snapshot`
turns all of it into an ordinary builder folder (`execrepobench live`).
"""
