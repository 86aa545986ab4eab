"""The guard's evidence: signing and writing each fact, and judging the completion's events.

`make_evidence` returns closures (see `_execrepobench_guard_hook.install`): everything they use - the
key, the descriptor, the chain's state, the builtins they call - lives in the closure, never read
through a module global.

Evidence: one line per fact, `seq<TAB>kind<TAB>fields...<TAB>mac`, where mac is HMAC-SHA256 over the
previous mac and the line, written with os.write to a descriptor the judge opened.  In record mode with
several masked files (verification's shared ground-truth runs), an event line also names each masked
file with a frame on the stack (`owners`), so the builder can tell whose it was.  In "blind" mode (tests
only) nothing is refused or reported: the stream alone, as an attacker past every in-process check
would leave it.
"""
import _hashlib
import _thread
import os
import sys


def make_evidence(key, fd, mode, allowed, owners, busy, whose, esc):
    """(emit, sensitive, forked, close): `emit(kind, *fields, batch=False)` signs and writes one line;
    `sensitive(kind, detail="")` records (mode "record") or judges (mode "enforce") a completion event
    and returns True to refuse it; `forked()` and `close()` end the record."""
    _len, _map, _str, _set, _sorted, _OSError = len, map, str, set, sorted, OSError
    _write, _getframe, _ident, _hmac = os.write, sys._getframe, _thread.get_ident, _hashlib.hmac_digest
    lock = _thread.allocate_lock()
    state = {"seq": 0, "mac": b"", "closed": False}
    pending = []
    seen = _set()

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

    def close():
        with lock:
            state["closed"] = True

    def sensitive(kind, detail=""):
        """Record (mode "record") or judge (mode "enforce") a completion event; True = refuse it.  With
        several masked files, a recorded event names each one with a frame on the stack ("" if none)."""
        if mode == "blind":
            return False
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

    return emit, sensitive, forked, close
