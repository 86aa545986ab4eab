"""The calls the bootstrap routes through the guard: thread starts, process exit, signal handlers,
`os.open` relative to a directory descriptor, `_imp.create_builtin`; and where a path or a descriptor
leads (/proc, /dev/fd, the run's evidence folder).

`make_calls` returns closures (see `_execrepobench_guard_hook.install`): the original functions live
only in them, with everything else they use.
"""
import _thread
import os
import posixpath
import sys


class _Probe:
    def method(self):  # its bound method's type: a handler may be one
        pass


def make_calls(originals, sensitive, text, evidence, busy, bootstrap_modules, tainted_threads, handler_codes):
    """(wrapped_call, suspicious_path, fd_path).  `wrapped_call(event, args, theirs)` decides a routed
    call (`theirs`: attributed to the completion) and makes it; True = refuse it.  A signal handler that
    code not the completion's installs goes into `handler_codes` (id -> code: the attribution ends there)."""
    _type, _str, _bytes, _int, _getattr = type, str, bytes, int, getattr
    _OSError, _ValueError, _id = OSError, ValueError, id
    _function_type, _method_type = type(make_calls), type(_Probe().method)
    _ident, _fspath, _realpath, _readlink, _join = _thread.get_ident, os.fspath, posixpath.realpath, os.readlink, \
        posixpath.join
    _modules = sys.modules
    start_thread, exit_now, abort, set_signal, open_file, create_builtin = (
        originals["thread"], originals["exit"], originals["abort"], originals["signal"], originals["open"],
        originals["create_builtin"])

    def wrapped_call(event, args, theirs):
        """Thread start, process exit, signal handler: decided here; the originals live only here."""
        if event == "execrepobench.exit_request":
            if theirs and sensitive("process.exit", text(args[0])):
                return True
            if args[0] == "_exit":
                exit_now(args[1])
            elif args[0] == "abort":
                abort()
        elif event == "execrepobench.signal":
            if theirs and sensitive("signal.handler"):
                return True
            if not theirs:
                code = handler_code(args[1])
                if code is not None:
                    handler_codes[_id(code)] = code
            args[2].append(set_signal(args[0], args[1]))
        elif event == "execrepobench.open":
            path, flags, mode, dir_fd, box = args
            if dir_fd is not None and theirs:  # relative to a directory descriptor: where does it lead?
                name = _fspath(path)
                name = name.decode("utf-8", "replace") if _type(name) is _bytes else text(name)
                found = suspicious_path(_join(fd_path(dir_fd), name or ""))
                if found is not None and sensitive(found[0], "dir_fd"):
                    return True
            box.append(open_file(path, flags, mode, dir_fd=dir_fd))
        elif event == "execrepobench.create_builtin":
            name = text(_getattr(args[0], "name", None))
            if theirs and (name in _modules or name in bootstrap_modules) and sensitive("builtin.second", name):
                return True  # a second instance of a loaded builtin module (its functions not routed here)
            args[1].append(create_builtin(args[0]))
        else:
            if theirs and sensitive("thread.start"):
                return True
            function, fargs, kwargs, box = args
            box.append(start_thread(trampoline, (function, fargs, kwargs, theirs)))
        return False

    def handler_code(handler):
        """The code object of a Python function or bound method given as a signal handler (else None)."""
        me = _ident()
        busy[me] = 1
        try:
            function = handler.__func__ if _type(handler) is _method_type else handler
            return function.__code__ if _type(function) is _function_type else None
        finally:
            busy.pop(me, None)

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

    return wrapped_call, suspicious_path, fd_path
