"""The in-process guard's brain: one PEP 578 audit hook, installed before any repository code runs.

`install()` builds the hook as a closure.  Everything it uses afterwards - the evidence key and file
descriptor, the integrity snapshots, the original thread/exit/signal functions, the constants below,
the builtins it calls - lives in that closure, never read through a module global.  Audit hooks
cannot be listed or removed from Python, and the hook refuses the ways to reach a closure (gc object
queries, frames) to code attributed to the masked file.

Attribution (`_execrepobench_guard_attribution`): an event is the completion's when a frame of the
masked file (or of code that code made) is on the stack, or in a thread such code started.  Such
events (DIRECT, frame attributes, code replacement, re-imports of machinery modules, touching /proc or
the evidence files, threads, signal handlers, process exit) are refused unless the ground truth
triggers them too (`allowed`).  Independently of attribution, the
protected namespaces must not change (`_execrepobench_guard_integrity`).

Evidence: one line per fact, `seq<TAB>kind<TAB>fields...<TAB>mac`, where mac is HMAC-SHA256 over the
previous mac and the line, written with os.write to a descriptor the judge opened.  In record mode with
several masked files (verification's shared ground-truth runs), an event line also names each masked
file with a frame on the stack (`owners`), so the builder can tell whose it was.
"""
import _hashlib
import _operator
import _thread
import os
import posixpath
import sys

from _execrepobench_guard_attribution import make_attribution
from _execrepobench_guard_integrity import COLD, make_integrity, make_text
from _execrepobench_guard_machinery import make_machinery

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
# Modules a completion may not import itself (unless its ground truth does): raw memory access and
# type punning that raise no audit event (ctypes), CPython's test hooks, interpreters without our hook.
NATIVE_MODULES = frozenset({"ctypes", "_ctypes", "_testcapi", "_testinternalcapi", "_testmultiphase",
                            "_xxsubinterpreters", "_xxinterpchannels", "_interpreters", "_interpchannels"})
NATIVE = frozenset("ctypes." + name for name in (
    "addressof", "call_function", "cdata", "cdata/buffer", "create_string_buffer", "create_unicode_buffer", "dlopen",
    "dlsym", "dlsym/handle", "get_errno", "set_errno", "get_last_error", "set_last_error", "string_at", "wstring_at",
    "PyObj_FromPtr", "set_exception", "seh_exception"))
WATCH = frozenset(DIRECT) | PATH_EVENTS | OWN | WRAPPED | NATIVE | {"object.__getattr__", "object.__setattr__", "exec",
                                                                    "function.__new__", "import"}


def install(cfg, key, fd, genuine, originals):
    """cfg: mode, masked, allowed, evidence, machinery_dirs, bootstrap_modules, start, main, path_types,
    protected, hot, rebound (see `make_integrity`).  genuine: event -> the code object allowed to raise
    it (+ multicall, report_type).  originals: the real thread/exit/abort/signal functions."""
    _len, _list, _map, _is, _type, _str, _bytes, _int = len, list, map, _operator.is_, type, str, bytes, int
    _getattr, _id, _set, _sorted, _any, _frozenset = getattr, id, set, sorted, any, frozenset
    _RuntimeError, _BaseException, _OSError, _ValueError = RuntimeError, BaseException, OSError, ValueError
    _code_type, _function_type = type(install.__code__), type(install)
    _write, _getframe, _ident, _hmac = os.write, sys._getframe, _thread.get_ident, _hashlib.hmac_digest
    _frames, _fspath, _realpath = sys._current_frames, os.fspath, posixpath.realpath
    frame_attrs, code_attrs, direct, path_events, wrapped, watch, native, cold = FRAME_ATTRS, CODE_ATTRS, DIRECT, \
        PATH_EVENTS, WRAPPED, WATCH, NATIVE, COLD
    native_modules, _readlink, _join, _modules = NATIVE_MODULES, os.readlink, posixpath.join, sys.modules
    lock = _thread.allocate_lock()
    mode, masked, allowed = cfg["mode"], _frozenset(cfg["masked"]), _frozenset(cfg["allowed"])
    evidence = cfg["evidence"]
    machinery_dirs, bootstrap_modules, main = cfg["machinery_dirs"], cfg["bootstrap_modules"], cfg["main"]
    path_types, multicall, report_type = cfg["path_types"], genuine["multicall"], genuine["report_type"]
    subtest_type = genuine["subtest_report_type"]
    text, esc = make_text()
    snapshot_namespace, take_snapshots, changed, group_names = make_integrity(
        cfg["protected"], cfg["hot"], cfg["rebound"], cfg["consumers"])
    take_snapshots()
    (is_masked, attributed, direct_caller, consumed, called_by, taint, mark_ran, busy, tainted_threads,
     tainted_codes, whose) = make_attribution(masked, cfg["start"], text, genuine["consumers"])
    snapshot_machinery, check_machinery, check_item_data = make_machinery(
        lambda code: is_masked(code.co_filename) or _id(code) in tainted_codes)
    owners = cfg.get("owners") or {}  # several masked files (a shared ground-truth run): path -> its name
    pluggy_dir, pytest_dir = cfg["pluggy_dir"], cfg["pytest_dir"]
    state = {"seq": 0, "mac": b"", "closed": False, "ran": False, "teardowns": 0}
    pending = []
    seen, items = _set(), {}

    def emit(kind, *fields, batch=False):
        """Sign and write one line.  Passing test reports may wait for a few more (in this closure,
        out of reach) to save system calls; anything else goes out at once, with what waited."""
        with lock:
            if state["closed"]:
                return
            state["seq"] += 1
            body = "\t".join((_str(state["seq"]), kind, *_map(esc, fields))).encode("utf-8", "surrogatepass")
            state["mac"] = mac = _hmac(key, state["mac"] + body, "sha256")
            pending.append(body + b"\t" + mac.hex().encode() + b"\n")
            if batch and _len(pending) < 16:
                return
            data = b"".join(pending)
            del pending[:]
            try:
                while data:
                    data = data[_write(fd, data):]
            except _OSError:  # the descriptor is gone: the record stays incomplete (never a pass)
                state["closed"] = True

    def forked():  # a forked child (multiprocessing, a test's fork) writes nothing more on our record
        state["closed"] = True

    def sensitive(kind, detail=""):
        """Record (mode "record") or judge (mode "enforce") a completion event; True = refuse it.  With
        several masked files, a recorded event names each one with a frame on the stack ("" if none)."""
        if mode == "record" and not kind.startswith("forged"):
            found = ()
            if owners:
                me = _ident()
                busy[me] = 1
                try:
                    frame = _getframe(1)
                finally:
                    busy.pop(me, None)
                found = _sorted(_set(owners.get(path, "") for path in whose(frame)))
            for who in found or ("",):
                if (kind, who) not in seen:
                    seen.add((kind, who))
                    emit("event", kind, detail, who)
            return False
        if kind in allowed and not kind.startswith("forged"):
            return False
        if (kind, detail) not in seen and _len(seen) < 500:
            seen.add((kind, detail))
            emit("tamper", kind, detail)
        return True

    def check_integrity(names):
        problems = changed(names)
        for problem in problems:
            sensitive(problem)
        return not problems

    def frame_access(kind, caller):
        how = consumed(caller)  # the standard library using a frame itself, handing out only text
        if how is not None and (not how or check_integrity(("consumers",))):
            return False
        return attributed(caller) and sensitive(kind)

    def check_item(nodeid):
        for problem in check_machinery(False) + check_item_data(nodeid):
            sensitive(problem)
        if nodeid in items:
            item, fn, code = items[nodeid]
            obj = _getattr(item, "obj", None)
            if _getattr(obj, "__func__", obj) is not fn or (_type(fn) is _function_type and fn.__code__ is not code):
                sensitive("integrity:item:" + nodeid)

    def on_item(item):
        obj = _getattr(item, "obj", None)
        fn = _getattr(obj, "__func__", obj)
        is_function = _type(fn) is _function_type
        items[text(item.nodeid)] = (item, fn, fn.__code__ if is_function else None)
        namespace = fn.__globals__ if is_function else None
        label = "tests:" + esc(namespace.get("__name__")) if namespace is not None else ""
        if namespace is not None and label not in seen:
            seen.add(label)
            snapshot_namespace(label, namespace, _frozenset(), "hot")

    def outcome(report):
        result, when = text(report.outcome), text(report.when)
        if result == "failed":
            return "failed" if when == "call" else "error"
        return result if result in ("passed", "skipped") else "error"

    def on_report(report):
        """A test's call phase, or a setup / teardown that did not pass, or a subtest: recorded."""
        subtest = subtest_type is not None and _type(report) is subtest_type
        if _type(report) is not report_type and not subtest:
            return sensitive("forged-report")
        check_integrity(("filtered", "hot"))  # the path from running a test to its report
        nodeid = text(report.nodeid)
        check_item(nodeid)
        result = outcome(report)
        emit("subreport" if subtest else "report", nodeid, text(report.when), result, batch=result == "passed")
        return False

    def routine_report(report):
        """A passed setup or teardown decides nothing: after each test one slice of the cold
        namespaces is checked in turn, and that is all."""
        if _type(report) is not report_type or text(report.outcome) != "passed":  # (subtests: on_report)
            return False
        when = text(report.when)
        if when == "teardown":
            state["teardowns"] += 1
            check_integrity(("cold%d" % (state["teardowns"] % cold),))
        return when == "setup" or when == "teardown"

    def guard_event(event, args, caller):
        """Our own events: from the genuine code only, main thread, no completion frame on the stack."""
        if event == "execrepobench.report" and routine_report(args[0]):
            return False
        if event in wrapped:
            if caller.f_code is not genuine[event]:
                return sensitive("forged-guard-event", event)
            return wrapped_call(event, args, attributed(caller.f_back))
        ok = caller.f_code is genuine.get(event) and _ident() == main
        if ok and event == "execrepobench.exit":
            ok = not attributed(caller)
        elif ok:  # our plugin's hook, called by pluggy, for pytest itself (not for a caller of pluggy)
            ok = caller.f_back is not None and caller.f_back.f_code is multicall and \
                called_by(caller.f_back, pluggy_dir, pytest_dir)
        if not ok:
            return sensitive("forged-guard-event", event)
        if event == "execrepobench.report":
            return on_report(args[0])
        if event == "execrepobench.item":
            on_item(args[0])
        elif event == "execrepobench.baseline":
            if not state["ran"]:  # nothing of the masked file ran yet: what pytest set up so far is its own
                take_snapshots()
            emit("baseline", "bootstrap" if state["ran"] else "fresh")
        elif event == "execrepobench.collected":
            session = args[0]
            for plugin in _list(session.config.pluginmanager.get_plugins()):
                if is_masked(_getattr(plugin, "__file__", None)):  # its hooks would judge its own tests
                    emit("tamper", "machinery-under-test", "the masked file is a pytest plugin")
            for problem in snapshot_machinery(session):
                sensitive(problem)
            emit("collected", *[text(item.nodeid) for item in _list(session.items)])
        elif event == "execrepobench.collecterror":
            emit("collecterror", text(args[0].nodeid))
        elif event == "execrepobench.finish":
            check_integrity(group_names())
            for problem in check_machinery(True):
                sensitive(problem)
            alive = _frames()
            if _any(ident in alive for ident in _list(tainted_threads)):
                sensitive("thread.outlives")
            emit("finish", _str(_int(args[0])))
        elif event == "execrepobench.exit":
            emit("exit", _str(_int(args[0])))
            with lock:
                state["closed"] = True
        return False

    def wrapped_call(event, args, theirs):
        """Thread start, process exit, signal handler: decided here; the originals live only here."""
        if event == "execrepobench.exit_request":
            if theirs and sensitive("process.exit", text(args[0])):
                return True
            if args[0] == "_exit":
                originals["exit"](args[1])
            elif args[0] == "abort":
                originals["abort"]()
        elif event == "execrepobench.signal":
            if theirs and sensitive("signal.handler"):
                return True
            args[2].append(originals["signal"](args[0], args[1]))
        elif event == "execrepobench.open":
            path, flags, mode, dir_fd, box = args
            if dir_fd is not None and theirs:  # relative to a directory descriptor: where does it lead?
                name = _fspath(path)
                name = name.decode("utf-8", "replace") if _type(name) is _bytes else text(name)
                found = suspicious_path(_join(fd_path(dir_fd), name or ""))
                if found is not None and sensitive(found[0], "dir_fd"):
                    return True
            box.append(originals["open"](path, flags, mode, dir_fd=dir_fd))
        elif event == "execrepobench.create_builtin":
            name = text(_getattr(args[0], "name", None))
            if theirs and (name in _modules or name in bootstrap_modules) and sensitive("builtin.second", name):
                return True  # a second instance of a loaded builtin module (its functions not routed here)
            args[1].append(originals["create_builtin"](args[0]))
        else:
            if theirs and sensitive("thread.start"):
                return True
            function, fargs, kwargs, box = args
            box.append(originals["thread"](trampoline, (function, fargs, kwargs, theirs)))
        return False

    def trampoline(function, args, kwargs, theirs):
        me = _ident()
        if theirs:
            tainted_threads[me] = 1
        try:
            return function(*args, **kwargs)
        finally:
            tainted_threads.pop(me, None)

    def fd_path(fd):
        """The path a descriptor of this process is open on ("" when it cannot be read)."""
        me = _ident()
        busy[me] = 1
        try:
            return _readlink("/proc/self/fd/%d" % fd) if _type(fd) is _int else ""
        except (_OSError, _ValueError):
            return ""
        finally:
            busy.pop(me, None)

    def suspicious_path(path):
        """(kind, resolved path) when the path may lead to /proc, /dev/fd or the evidence folder, else None."""
        if _type(path) is _bytes:
            path = path.decode("utf-8", "replace")
        elif _type(path) is not _str:
            path = _fspath(path)  # a pathlib / py.path object (other types are refused before)
        path = text(path)
        if path is None or not ("proc" in path or "/dev/fd" in path or evidence in path):
            return None
        resolved = _realpath(path)
        if evidence in resolved or evidence in path:
            return "path:evidence", resolved
        if resolved.startswith(("/proc/", "/dev/fd")) or resolved == "/proc" or path.startswith(("/proc/", "/dev/fd")):
            return "path:proc", resolved
        return None

    def on_setattr(args, caller):
        target = args[0].__code__ if _type(args[0]) is _function_type else None
        name = text(args[1])
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
                    state["ran"] = True
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
            if args[1] not in code_attrs:
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
    emit("hello", mode, *_sorted(masked))
    if cfg["masked_in_machinery"]:  # pytest itself runs it: no verdict from it can be trusted
        emit("tamper", "machinery-under-test", "the masked file is imported by pytest itself")
