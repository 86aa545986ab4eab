"""Environments: pinned sources, the uv environments made from repository records, and the cache
where both live.

The path through it: `prepare` readies a dataset's repositories on this machine - per repository it
fetches the pinned source (`sources`), makes the environment from the record's lock
(`venvs.ensure_environment`, byte-compiled once by `bytecode`) and gold-checks it with the judge.
The judge finds an environment by its key (`venvs.find_environment`); `measured` finds a repository's
measurements (what time budgets derive from); `layout` says where everything sits under the cache
(`EXECREPOBENCH_CACHE`).

Nothing is re-exported here: import from the module that defines a name.
"""
