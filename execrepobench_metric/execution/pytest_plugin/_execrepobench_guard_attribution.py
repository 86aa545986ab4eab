"""Which events are the completion's: the stack (and the thread) of the masked file's code.

`make_attribution()` returns closures only (nothing is read through a module global afterwards).
An event is the completion's when, walking its stack outwards, a frame of the masked file - or of
code the completion made: compiled and run or turned into a function by it, or a module file written
during the run that it imported - comes before the module-level code of any module that existed
before the run (a lazy import of the standard library, say: what that module does at import is its
own) or a signal handler the completion did not install (what runs on top of the frames a signal
interrupted is the handler's: pytest-timeout's stack dump over a completion that loops); or when it
happens in a thread the completion started.
"""
import _thread
import os


def make_attribution(masked, start, text, consumers):
    """masked: the masked file's paths; start: the run's start time (files older than it are the
    repository's or the environment's); text: see `make_text`; consumers: see `consumed`.
    -> (is_masked, attributed, direct_caller, consumed, called_by, taint, mark_ran, busy, tainted_threads,
    tainted_codes, whose, handler_codes).  Until `mark_ran()` (the masked file's code is about to run) nothing is
    attributed.  `handler_codes` (id -> code): the signal handlers installed by code not the completion's
    (`_execrepobench_guard_calls`)."""
    _type, _str, _id, _stat, _ident = type, str, id, os.stat, _thread.get_ident
    _OSError, _ValueError, _code_type = OSError, ValueError, type(make_attribution.__code__)
    busy, tainted_threads, tainted_codes, ran, handler_codes = {}, {}, {}, [], {}

    def handler(code):
        return handler_codes and handler_codes.get(_id(code)) is code

    def is_masked(filename):
        return (filename if _type(filename) is _str else text(filename)) in masked

    def theirs(code):
        return is_masked(code.co_filename) or (tainted_codes and _id(code) in tainted_codes)

    def attributed(frame):
        """Is a frame of the masked file or of code it made on this stack (or is this its thread)?
        Walking outwards, the module-level code of a module that existed before the run (a lazy
        import of the standard library, say) ends the walk: what that code does is its own."""
        me = _ident()
        if me in tainted_threads:
            return True
        if not ran:  # no code of the masked file (or made by it) has run yet: nothing can be its
            return False
        busy[me] = 1  # our own frame / code / id accesses below raise audit events: ignore them
        try:
            while frame is not None:
                code = frame.f_code
                if theirs(code):
                    return True
                if code.co_name == "<module>" or handler(code):
                    return False
                frame = frame.f_back
            return False
        finally:
            busy.pop(me, None)

    def whose(frame):
        """The masked files (as paths) with a frame on this stack, walking outwards as `attributed` does
        (to the module-level code of a module, or code the completion made); empty when none."""
        me = _ident()
        busy[me] = 1
        found = []
        try:
            while frame is not None:
                code = frame.f_code
                if is_masked(code.co_filename):
                    found.append(text(code.co_filename))
                elif code.co_name == "<module>" or (tainted_codes and _id(code) in tainted_codes) or handler(code):
                    break
                frame = frame.f_back
            return found
        finally:
            busy.pop(me, None)

    def direct_caller(frame):
        me = _ident()
        busy[me] = 1
        try:
            return theirs(frame.f_code)
        finally:
            busy.pop(me, None)

    def consumed(frame):
        """For a frame access made by standard-library code that uses the frame itself and hands out
        nothing but text (namedtuple's module name, logging's caller, traceback's formatting):
        False when that is so by construction, True when so only while those modules' namespaces are
        unchanged (the caller must check), None when the access is not such a case.  `consumers`:
        (code that made the access, code that must be its caller or None, needs the check)."""
        me = _ident()
        busy[me] = 1
        try:
            code = frame.f_code
            for inner, outer, needs_check in consumers:
                if code is inner and (outer is None or (frame.f_back is not None and frame.f_back.f_code is outer)):
                    return needs_check
            return None
        finally:
            busy.pop(me, None)

    def called_by(frame, passing, caller_dir):
        """Walking outwards from `frame` past frames of files under `passing` (pluggy's hook calls),
        is the first other frame code under `caller_dir` (pytest), and not the completion's?"""
        me = _ident()
        busy[me] = 1
        try:
            while frame is not None and text(frame.f_code.co_filename).startswith(passing):
                frame = frame.f_back
            return frame is not None and text(frame.f_code.co_filename).startswith(caller_dir) and \
                not theirs(frame.f_code)
        finally:
            busy.pop(me, None)

    def mark_ran():
        ran.append(True)

    def taint(code, made_by_them):
        """Code the completion made (compiled and run or turned into a function itself, or a module
        file written during the run that it imports): its frames count as the completion's."""
        filename = text(code.co_filename)
        if not made_by_them and filename is not None and filename not in masked:
            try:
                if _stat(filename).st_ctime < start:
                    return  # a file that existed before the run: stdlib, site-packages, the repository
            except (_OSError, _ValueError):
                pass
        ran.append(True)
        todo = [code]
        while todo:
            c = todo.pop()
            tainted_codes[_id(c)] = c
            todo.extend(k for k in c.co_consts if _type(k) is _code_type)

    return (is_masked, attributed, direct_caller, consumed, called_by, taint, mark_ran, busy, tainted_threads,
            tainted_codes, whose, handler_codes)
