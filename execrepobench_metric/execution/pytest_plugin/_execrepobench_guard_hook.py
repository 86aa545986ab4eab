"""The in-process guard's brain: one PEP 578 audit hook, installed before any repository code runs.

`install()` builds the hook as a closure.  Everything it uses afterwards - the evidence key and file
descriptor, the integrity snapshots, the original thread/exit/signal functions, the constants below,
the builtins it calls - lives in that closure (and in the closures it builds), never read through a
module global.  Audit hooks cannot be listed or removed from Python, and the hook refuses the ways to
reach a closure (gc object queries, frames) to code attributed to the masked file.

Attribution (`_execrepobench_guard_attribution`): an event is the completion's when a frame of the
masked file (or of code that code made) is on the stack, or in a thread such code started.  Such
events (DIRECT, frame attributes, code replacement, re-imports of machinery modules, touching /proc or
the evidence files, threads, signal handlers, process exit) are refused unless the ground truth
triggers them too (`allowed`).  Independently of attribution, the protected namespaces must not change
(`_execrepobench_guard_integrity`, `_execrepobench_guard_machinery`).  The evidence stream
(`_execrepobench_guard_evidence`), the routed calls (`_execrepobench_guard_calls`) and our own events
(`_execrepobench_guard_reports`) are built here, into this closure.
"""
import _operator
import _thread
import os
import sys

from _execrepobench_guard_attribution import make_attribution
from _execrepobench_guard_callbacks import make_callbacks
from _execrepobench_guard_calls import make_calls
from _execrepobench_guard_evidence import make_evidence
from _execrepobench_guard_integrity import COLD, make_integrity, make_text
from _execrepobench_guard_machinery import make_machinery
from _execrepobench_guard_reports import make_reports

FRAME_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
CODE_ATTRS = frozenset({"__code__", "__defaults__", "__kwdefaults__", "__class__", "__bases__"})
DIRECT = {  # audit event -> kind, when attributed to the completion
    "gc.get_objects": "gc.get_objects", "gc.get_referrers": "gc.get_referrers", "gc.get_referents": "gc.get_referents",
    "sys._getframe": "sys._getframe", "sys._current_frames": "sys._current_frames", "sys.settrace": "sys.settrace",
    "sys.setprofile": "sys.setprofile", "sys.addaudithook": "sys.addaudithook", "os.kill": "signal.send",
    "os.killpg": "signal.send", "signal.pthread_kill": "signal.send", "os.fork": "process.fork",
    "os.forkpty": "process.fork", "subprocess.Popen": "process.spawn", "os.system": "process.spawn",
    "os.exec": "process.spawn", "os.posix_spawn": "process.spawn", "os.spawn": "process.spawn",
    "pty.spawn": "process.spawn", "resource.setrlimit": "resource.setrlimit", "resource.prlimit": "resource.setrlimit",
}
PATH_EVENTS = frozenset({"open", "os.rename", "os.remove", "os.rmdir", "os.truncate", "os.chmod", "os.link",
                         "os.symlink", "os.chown", "os.utime", "os.chdir"})
OWN = frozenset({"execrepobench.report", "execrepobench.item", "execrepobench.collected", "execrepobench.baseline",
                 "execrepobench.collecterror", "execrepobench.finish", "execrepobench.exit"})
WRAPPED = frozenset({"execrepobench.thread", "execrepobench.exit_request", "execrepobench.signal",
                     "execrepobench.open", "execrepobench.create_builtin"})
# What the completion leaves to run later, and the skips it raises (_execrepobench_guard_callbacks)
CALLBACKS = frozenset({"execrepobench.finalize_new", "execrepobench.finalize", "execrepobench.atexit",
                       "execrepobench.class", "execrepobench.outcome"})
# Modules a completion may not import itself (unless its ground truth does): raw memory access and
# type punning that raise no audit event (ctypes), CPython's test hooks, interpreters without our hook.
NATIVE_MODULES = frozenset({"ctypes", "_ctypes", "_testcapi", "_testinternalcapi", "_testmultiphase",
                            "_xxsubinterpreters", "_xxinterpchannels", "_interpreters", "_interpchannels"})
NATIVE = frozenset("ctypes." + name for name in (
    "addressof", "call_function", "cdata", "cdata/buffer", "create_string_buffer", "create_unicode_buffer", "dlopen",
    "dlsym", "dlsym/handle", "get_errno", "set_errno", "get_last_error", "set_last_error", "string_at", "wstring_at",
    "PyObj_FromPtr", "set_exception", "seh_exception"))
WATCH = frozenset(DIRECT) | PATH_EVENTS | OWN | WRAPPED | CALLBACKS | NATIVE | {
    "object.__getattr__", "object.__setattr__", "exec", "function.__new__", "import"}


def install(cfg, key, fd, genuine, originals):
    """cfg: mode, masked, allowed, evidence, machinery_dirs, bootstrap_modules, start, main, path_types,
    protected, hot, rebound (see `make_integrity`).  genuine: event -> the code object allowed to raise
    it (+ multicall, report_type).  originals: the real thread/exit/abort/signal functions."""
    _type, _int, _str, _id, _frozenset, _any, _is = type, int, str, id, frozenset, any, _operator.is_
    _RuntimeError, _BaseException, _issubclass, _dunder = RuntimeError, BaseException, issubclass, str.startswith
    _code_type, _function_type = type(install.__code__), type(install)
    _getframe, _ident = sys._getframe, _thread.get_ident
    frame_attrs, code_attrs, direct, path_events, watch, native = FRAME_ATTRS, CODE_ATTRS, DIRECT, PATH_EVENTS, \
        WATCH, NATIVE
    native_modules, callback_events = NATIVE_MODULES, CALLBACKS
    mode, masked, allowed = cfg["mode"], _frozenset(cfg["masked"]), _frozenset(cfg["allowed"])
    machinery_dirs, bootstrap_modules, path_types = cfg["machinery_dirs"], cfg["bootstrap_modules"], cfg["path_types"]
    text, esc = make_text()
    snapshot_namespace, take_snapshots, changed, group_names = make_integrity(
        cfg["protected"], cfg["hot"], cfg["rebound"], cfg["consumers"], lists=() if mode == "legacy" else (
            ("gc.callbacks", sys.modules["gc"].callbacks),))
    take_snapshots()
    (is_masked, attributed, direct_caller, consumed, called_by, taint, mark_ran, busy, tainted_threads,
     tainted_codes, whose, handler_codes) = make_attribution(masked, cfg["start"], text, genuine["consumers"])
    snapshot_machinery, check_machinery, check_item_data = make_machinery(
        lambda code: is_masked(code.co_filename) or _id(code) in tainted_codes)
    emit, sensitive, forked, close = make_evidence(key, fd, mode, allowed, cfg.get("owners") or {}, busy, whose, esc)
    wrapped_call, suspicious_path, fd_path = make_calls(originals, sensitive, text, cfg["evidence"], busy,
                                                        bootstrap_modules, tainted_threads, handler_codes)
    run_state = {"ran": False}
    callback, dunder_set = make_callbacks(mode == "legacy", originals, attributed,
                                          lambda code: is_masked(code.co_filename) or _id(code) in tainted_codes,
                                          sensitive, busy, tainted_codes, genuine["skip_types"], text,
                                          sys.modules["weakref"].finalize._Info)

    def check_integrity(names):
        problems = changed(names)
        for problem in problems:
            sensitive(problem)
        return not problems

    guard_event = make_reports({**cfg, "wrapped": WRAPPED}, genuine, (emit, sensitive, close),
                               (snapshot_namespace, take_snapshots, check_integrity, group_names, COLD),
                               (snapshot_machinery, check_machinery, check_item_data),
                               (is_masked, attributed, called_by, tainted_threads), text, esc, wrapped_call, run_state)

    def frame_access(kind, caller):
        how = consumed(caller)  # the standard library using a frame itself, handing out only text
        if how is not None and (not how or check_integrity(("consumers",))):
            return False
        return attributed(caller) and sensitive(kind)

    def on_setattr(args, caller):
        target = args[0].__code__ if _type(args[0]) is _function_type else None
        name = text(args[1])
        if name not in code_attrs:  # a special method set on a class
            return dunder_set(args[0], name, args[2], caller)
        if target is not None and _type(target.co_filename) is _str and target.co_filename.startswith(machinery_dirs):
            return sensitive("setattr:" + name, target.co_filename.rsplit("/", 1)[-1])
        if not attributed(caller):
            return False
        if target is not None and (is_masked(target.co_filename) or _id(target) in tainted_codes):
            if _type(args[2]) is _code_type:
                taint(args[2], True)
            return False  # the completion's own function
        return sensitive("setattr:" + name)

    def handle(event, args, caller):
        if event == "sys._getframe":
            return frame_access("sys._getframe", caller)
        if event in direct:
            return attributed(caller) and sensitive(direct[event])
        if event == "object.__getattr__":
            return frame_access("frame:" + text(args[1]), caller)
        if event == "object.__setattr__":
            return on_setattr(args, caller)
        if event == "exec" or event == "function.__new__":
            if _type(args[0]) is _code_type:
                if is_masked(args[0].co_filename):
                    run_state["ran"] = True
                    mark_ran()
                if attributed(caller):
                    taint(args[0], direct_caller(caller))
            return False
        if event == "import":
            name = text(args[0])
            if name in native_modules:
                return attributed(caller) and sensitive("native", "import " + name)
            return attributed(caller) and sensitive("reimport", name)
        if event in path_events:
            if _type(args[0]) is _int:  # a descriptor (os.fchdir): where it is open
                found = suspicious_path(fd_path(args[0])) if event == "os.chdir" else None
                return found is not None and attributed(caller) and sensitive(*found)
            if not _any(_is(_type(args[0]), t) for t in path_types):
                return attributed(caller) and sensitive("path-object")
            found = suspicious_path(args[0])
            return found is not None and attributed(caller) and sensitive(*found)
        if event in native:
            return attributed(caller) and sensitive("native", event)
        if event in callback_events:
            if caller.f_code is not genuine[event]:
                return sensitive("forged-guard-event", event)
            return callback(event, args, caller)
        return guard_event(event, args, caller) if event.startswith("execrepobench.") else False

    def hook(event, args):
        # This runs for every audit event of the process (tens of thousands per run): the common
        # cases return after one or two lookups.  C code raises its events with exact-str names.
        if event not in watch:
            return
        if event == "object.__getattr__":
            if args[1] not in frame_attrs:
                return
        elif event == "object.__setattr__":
            if args[1] not in code_attrs and not (_issubclass(_type(args[0]), _type) and _dunder(args[1], "__")):
                return
        elif event == "import" and text(args[0]) not in bootstrap_modules and text(args[0]) not in native_modules:
            return
        event = text(event)
        me = _ident()
        if event is None or me in busy:
            return
        busy[me] = 1
        try:
            caller = _getframe(1)
        finally:
            busy.pop(me, None)
        try:
            block = handle(event, args, caller)
        except _BaseException:  # the guard's own fault: reported (the judge fails the run), never a pass
            emit("guard-error", event)
            block = False
        if block:
            raise _RuntimeError("execrepobench guard: refused " + event)

    os.register_at_fork(after_in_child=forked)
    sys.addaudithook(hook)
    emit("hello", mode, *sorted(masked))
    if cfg["masked_in_machinery"]:  # pytest itself runs it: no verdict from it can be trusted
        emit("tamper", "machinery-under-test", "the masked file is imported by pytest itself")
