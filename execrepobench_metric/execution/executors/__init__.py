"""Executors: where sandboxed work runs.  The engine (and the builder's verification) groups work by
repository into `Batch`es and hands them to an executor, which streams back one `Done` per item as
it lands.  `registry.open_executor(config, workers)` opens the one a config names; the interface and
the value objects every executor shares are in `base.py`.

- `local` (default): a thread pool on this machine (`local.LocalExecutor`); environments must already
  be in this cache (the caller prepares them, as today).
- `ray`: Ray tasks across a cluster (`ray.RayExecutor`, imported only when asked for; needs the
  optional extra `pip install execrepobench[ray]`).  Each task takes one batch of one repository;
  the node first makes the repository's environment from its record (the code path of `execrepobench
  prepare`, once per node, in that node's own cache), then runs the items.

An item a node could not run (its environment could not be made, the node was lost for good) comes
back as a `Done` with `error` set: the caller turns it into a harness error, never a model failure.
"""
