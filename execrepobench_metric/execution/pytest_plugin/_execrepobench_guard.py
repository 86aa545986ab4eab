"""Run pytest under the in-process guard: `python -m _execrepobench_guard PYTEST_ARGS...`.

Before any repository code runs this module reads its settings (EXECREPOBENCH_GUARD, removed from the
environment) and the evidence key (from a pipe the judge wrote and closed; never in the environment,
whose initial copy stays readable in /proc/self/environ), imports the test machinery, routes thread
starts, process exit and signal handlers through the guard, snapshots the machinery's namespaces,
installs the audit hook (`_execrepobench_guard_hook.install`), and then runs pytest.  The last line of
evidence ("exit") comes from `main` after pytest returned.
"""
import _thread
import json
import os
import sys
import time

SETTINGS_VAR = "EXECREPOBENCH_GUARD"
# Top-level names of the modules whose namespaces (and classes) must not change once repository code
# may run: the test machinery, the import system, and what the guard's own wrappers replace.
GUARD_MODULES = ("_execrepobench_guard", "_execrepobench_guard_hook", "_execrepobench_guard_integrity",
                 "_execrepobench_guard_attribution", "_execrepobench_guard_machinery", "_execrepobench_guard_evidence",
                 "_execrepobench_guard_calls", "_execrepobench_guard_reports", "_execrepobench_guard_callbacks")
PROTECTED_PREFIXES = ("pytest", "_pytest", "pluggy", "unittest", "__main__", "_execrepobench_collect", *GUARD_MODULES,
                      "importlib", "_frozen_importlib", "_frozen_importlib_external", "builtins", "threading",
                      "_thread", "signal", "_signal", "os", "posix", "_imp", "posixpath", "pathlib", "faulthandler",
                      "logging", "traceback", "linecache", "doctest", "weakref", "atexit")
# Standard-library code that takes a frame and hands out only text (see `consumers`): the modules it
# relies on are checked whenever it does so.
CONSUMER_MODULES = ("logging", "traceback", "linecache")
# Checked before every test report (the path from running a test to its report); the rest of the
# protected namespaces are checked in turns, one part after each test, and all at the session's end.
HOT = ("builtins", "__main__", "_pytest.runner", "_pytest.reports", "_pytest.python", "_pytest.outcomes",
       "_pytest.raises", "_pytest.skipping", "_pytest.unittest", "pluggy._hooks", "pluggy._callers",
       "pluggy._execution", "pluggy._result", "_execrepobench_collect", *GUARD_MODULES, "doctest", "_pytest.doctest")
# Names the machinery itself rebinds while it runs ("module" or "module.Class"; "*": in every class):
# pytest's capture and per-test assertion hooks, exception hooks, the import system's state.
REBOUND = {"sys": ("stdin", "stdout", "stderr", "__stdin__", "__stdout__", "__stderr__", "last_type", "last_value",
                   "last_traceback", "last_exc", "unraisablehook", "excepthook", "displayhook", "breakpointhook",
                   "path", "path_importer_cache", "ps1", "ps2", "_home", "dont_write_bytecode", "argv", "orig_argv",
                   "modules", "exc_info", "tracebacklimit"),
           "weakref.finalize": ("_registered_with_atexit", "_shutdown"),  # set on first use, at exit
           "threading": ("excepthook", "_main_thread", "_dangling", "_shutdown_locks_lock", "_counter"),
           "_pytest.assertion.util": ("_reprcompare", "_assertion_pass", "_config"),
           "_pytest.assertion.rewrite": ("_ASSERTION_REWRITE_ACTIVE",),
           "builtins": ("_", "__debug__"),
           # class attributes pytest sets at configure time / while collecting, unittest on each TestCase
           # class it runs, and caches the standard library adds to a class when first asked
           "_pytest.debugging.pytestPDB": ("_config", "_pluginmanager", "_recursive_debug", "_wrapped_pdb_cls"),
           "*": ("_pytest_diamond_inheritance_warning_shown", "tearDown_exceptions", "_classSetupFailed",
                 "__slotnames__", "__annotations__")}
_audit = sys.audit


def start_new_thread(function, args, kwargs=None):
    box = []
    _audit("execrepobench.thread", function, args, {} if kwargs is None else kwargs, box)
    return box[0]


def _request_exit(how, status):
    _audit("execrepobench.exit_request", how, status)


def _exit(status):
    _request_exit("_exit", status)


def abort():
    _request_exit("abort", 0)


def signal(signalnum, handler):
    import signal as module

    box = []
    _audit("execrepobench.signal", module._enum_to_int(signalnum), module._enum_to_int(handler), box)
    return module._int_to_enum(box[0], module.Handlers)


def open(path, flags, mode=0o777, *, dir_fd=None):  # noqa: A001 - os.open's own name
    box = []
    _audit("execrepobench.open", path, flags, mode, dir_fd, box)
    return box[0]


def create_builtin(spec):
    box = []
    _audit("execrepobench.create_builtin", spec, box)
    return box[0]


def finalize_init(self, obj, func, /, *args, **kwargs):
    _finalize_init(self, obj, func, *args, **kwargs)
    _audit("execrepobench.finalize_new", self, self._registry.get(self))


def finalize_call(self, _=None):
    """weakref.finalize.__call__, with the guard choosing whose call it is (see _execrepobench_guard_callbacks)."""
    info = self._registry.pop(self, None)
    if info and not self._shutdown:
        box = []
        _audit("execrepobench.finalize", self, info, box)
        return box[0](info.func, *info.args, **(info.kwargs or {}))


def atexit_register(func, /, *args, **kwargs):
    box = []
    _audit("execrepobench.atexit", func, args, kwargs, box)
    return box[0]


def make_build_class(original):
    def build_class(func, name, /, *bases, **kwds):
        cls = original(func, name, *bases, **kwds)
        _audit("execrepobench.class", cls)
        return cls
    return build_class


_finalize_init = None  # weakref.finalize's own constructor (set by route_through_guard)


def _refuse_crash(*args, **kwargs):
    _request_exit("crash", 0)
    raise RuntimeError("execrepobench guard: deliberate crashes are not available")


def read_settings() -> tuple[dict, bytes]:
    settings = json.loads(os.environ.pop(SETTINGS_VAR))
    with os.fdopen(settings.pop("key_fd"), "rb") as fh:
        key = fh.read()
    return settings, key


def import_machinery() -> dict:
    """Import what judges a test before the repository can touch it; return the genuine code objects."""
    import faulthandler  # noqa: F401
    import importlib.util  # noqa: F401
    import pathlib  # noqa: F401
    import unittest  # noqa: F401

    import _execrepobench_collect as plugin
    import _pytest.reports
    import pytest  # noqa: F401
    from pluggy import _callers

    multicall = getattr(_callers, "_multicall", None)
    if multicall is None:  # pluggy >= 1.6 keeps it in _execution
        from pluggy import _execution
        multicall = _execution._multicall
    try:  # pytest >= 9 reports each subtest with its own report (after the test's own call report)
        from _pytest.subtests import SubtestReport
    except ImportError:
        SubtestReport = None
    from _pytest.outcomes import Skipped, XFailed
    import builtins

    callbacks = {"execrepobench.finalize_new": finalize_init.__code__, "execrepobench.finalize": finalize_call.__code__,
                 "execrepobench.atexit": atexit_register.__code__,
                 "execrepobench.class": make_build_class(builtins.__build_class__).__code__,
                 "execrepobench.outcome": plugin.pytest_runtest_makereport.__code__}
    return {"multicall": multicall.__code__, "report_type": _pytest.reports.TestReport,
            "subtest_report_type": SubtestReport,
            "execrepobench.baseline": plugin.pytest_load_initial_conftests.__code__,
            "execrepobench.item": plugin.pytest_itemcollected.__code__,
            "execrepobench.collected": plugin.pytest_collection_finish.__code__,
            "execrepobench.collecterror": plugin.pytest_collectreport.__code__,
            "execrepobench.report": plugin.pytest_runtest_logreport.__code__,
            "execrepobench.finish": plugin.pytest_sessionfinish.__code__,
            "execrepobench.exit": main.__code__, "execrepobench.thread": start_new_thread.__code__,
            "execrepobench.exit_request": _request_exit.__code__, "execrepobench.signal": signal.__code__,
            "execrepobench.open": open.__code__, "execrepobench.create_builtin": create_builtin.__code__,
            "consumers": consumers(), "skip_types": (Skipped, XFailed, unittest.SkipTest), **callbacks}


def consumers() -> tuple:
    """(code that takes a frame, code that must be calling it or None, whether the consumer modules
    must be checked): the standard library's own uses of frames that hand out only text."""
    import collections
    import enum
    import gettext
    import logging
    import traceback
    import typing

    def nested(code, name):
        return next(c for c in code.co_consts if getattr(c, "co_name", None) == name)

    extract = traceback.StackSummary.extract.__func__.__code__
    from_gen = traceback.StackSummary._extract_from_extended_frame_gen.__func__.__code__
    found = [(collections.namedtuple.__code__, None, False), (typing._caller.__code__, None, False),
             (enum.EnumType._create_.__code__, None, False),
             (gettext._as_int.__code__, None, False),  # a stack level for its warning about a float plural
             (logging.currentframe.__code__, logging.Logger.findCaller.__code__, True),
             (traceback.walk_stack.__code__, nested(extract, "extended_frame_gen"), True),
             (traceback.walk_tb.__code__, nested(extract, "extended_frame_gen"), True),
             (traceback._walk_tb_with_full_positions.__code__, from_gen, True)]
    stacks = (traceback.extract_stack, traceback.format_stack, traceback.print_stack)
    found += [(f.__code__, None, True) for f in stacks]
    return tuple(found)


def route_through_guard() -> dict:
    """Replace the functions that start threads, end the process, install signal handlers, open a
    file relative to a directory descriptor or make a builtin module with ones that ask the guard;
    return the originals (they go into the hook's closure only)."""
    import _imp
    import _signal
    import atexit
    import builtins
    import faulthandler
    import weakref
    import signal as signal_module
    import threading

    global _finalize_init
    originals = {"thread": _thread.start_new_thread, "exit": os._exit, "abort": os.abort, "signal": _signal.signal,
                 "open": os.open, "create_builtin": _imp.create_builtin, "atexit": atexit.register}
    _finalize_init = weakref.finalize.__init__
    weakref.finalize.__init__, weakref.finalize.__call__ = finalize_init, finalize_call
    atexit.register = atexit_register
    builtins.__build_class__ = make_build_class(builtins.__build_class__)
    for module, name in ((_thread, "start_new_thread"), (_thread, "start_new"), (threading, "_start_new_thread")):
        setattr(module, name, start_new_thread)
    import posix

    os._exit, os.abort, posix._exit, posix.abort = _exit, abort, _exit, abort
    os.open = posix.open = open
    _imp.create_builtin = create_builtin
    signal_module.signal = signal
    _signal.signal = lambda signalnum, handler: signal(signalnum, handler)
    for name in ("_sigsegv", "_sigabrt", "_sigfpe", "_read_null", "_fatal_error", "_fatal_error_c_thread",
                 "_stack_overflow"):
        if hasattr(faulthandler, name):
            setattr(faulthandler, name, _refuse_crash)
    return originals


def machinery_dirs() -> tuple:
    import _pytest
    import pluggy
    import unittest

    return tuple(os.path.dirname(m.__file__) + "/" for m in (_pytest, pluggy, unittest))


def package_dir(name: str) -> str:
    return os.path.dirname(sys.modules[name].__file__) + "/"


def pytest_args(argv: list) -> list:
    """The pytest arguments without `-p _execrepobench_collect`: the plugin module is handed to
    pytest as an object (it is imported here, before pytest's assertion rewriting, on purpose)."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] == "-p" and i + 1 < len(argv) and argv[i + 1] == "_execrepobench_collect":
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


def main() -> int:
    start = time.time()
    settings, key = read_settings()
    genuine = import_machinery()
    import pathlib

    from _pytest._py.path import LocalPath

    originals = route_through_guard()
    import _execrepobench_collect as plugin
    import _execrepobench_guard_hook as guard

    masked, owners = set(), {}
    for name in (settings["masked"], *settings.get("also_masked", ())):
        path = os.path.join(os.getcwd(), name)
        masked |= {path, os.path.realpath(path)}
        owners.update({path: name, os.path.realpath(path): name})
    loaded = {getattr(m, "__file__", None) for m in list(sys.modules.values())}
    cfg = {"mode": settings["mode"], "masked": masked, "allowed": settings["allowed"],
           "owners": owners if settings.get("also_masked") else {},
           "masked_in_machinery": bool(masked & loaded), "pluggy_dir": package_dir("pluggy"),
           "pytest_dir": package_dir("_pytest"),
           "evidence": settings["evidence"], "machinery_dirs": machinery_dirs(), "start": start,
           "bootstrap_modules": frozenset(sys.modules), "main": _thread.get_ident(),
           "path_types": (str, bytes, pathlib.PosixPath, pathlib.PurePosixPath, LocalPath),
           "protected": frozenset(PROTECTED_PREFIXES), "rebound": REBOUND, "hot": HOT,
           "consumers": CONSUMER_MODULES}
    guard.install(cfg, key, settings["stream_fd"], genuine, originals)
    del key, originals
    import pytest

    args = pytest_args(sys.argv[1:])
    sys.argv = [os.path.join(os.path.dirname(pytest.__file__), "__main__.py"), *args]
    code = int(pytest.main(args, plugins=[plugin]))
    _audit("execrepobench.exit", code)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
