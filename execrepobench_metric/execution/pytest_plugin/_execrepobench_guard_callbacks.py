"""What the completion leaves to run later stays the completion's: callbacks, finalizers, class slots,
and the skips its code raises.

Code that runs without a frame of its own on the stack - `weakref.finalize(obj, exec, text)`, an exit
handler, `__del__ = functools.partial(exec, text)` on a class, a gc callback - would otherwise run
unattributed (whatever frame is current when it fires is not the completion's).  So:

- `weakref.finalize`: the bootstrap routes its constructor and its call through the guard.  A finalizer
  is run as the caller's own only when an unattributed caller registered it through the constructor and
  its function and arguments are still the ones registered; any other (registered by the completion's
  code, made without the constructor, or its record rewritten since) runs inside `theirs_call`, whose
  frame is the completion's.
- `atexit.register` from the completion's code registers `theirs_call(func, ...)` instead.
- A class made by the completion's code (a class statement it runs): special methods that are callables
  without a frame of their own (a `functools.partial`, a builtin) are wrapped in `theirs_call`; setting
  one on a class later from the completion's code is refused.
- `gc.callbacks` is compared like the machinery's namespaces (`_execrepobench_guard_integrity`).
- A test's call or setup ending in a skip (pytest's skip or xfail, unittest's SkipTest) whose traceback
  passes through the completion's code is refused ("skip"): a completion must not make its tests skip.

`make_callbacks` returns closures only (nothing is read through a module global afterwards).  In mode
"legacy" (tests only) everything here is passed through unchanged: the former attribution.
"""
import _thread
import functools
import sys


def _traceback():
    try:
        raise ValueError
    except ValueError:
        return sys.exc_info()[2]


def make_callbacks(legacy, originals, attributed, theirs, sensitive, busy, tainted_codes, skip_types, text, info_type):
    """-> handle(event, args, caller) for the events `execrepobench.finalize_new`, `.finalize`, `.atexit`,
    `.class`, `.outcome`; True = refuse."""
    _type, _id, _list, _vars, _callable, _any = type, id, list, vars, callable, any
    _partial, _ident, _issubclass, _str, _getattr = functools.partial, _thread.get_ident, issubclass, str, getattr
    _function_type, _mro, _tb_type = _type(make_callbacks), type.__dict__["__mro__"].__get__, _type(_traceback())
    register_atexit = originals["atexit"]
    honest = {}  # id(finalize) -> (finalize, func, args, kwargs) as an unattributed caller registered them

    def theirs_call(function, /, *args, **kwargs):  # its frame is the completion's (its code is tainted)
        return function(*args, **kwargs)

    def own_call(function, /, *args, **kwargs):
        return function(*args, **kwargs)

    if not legacy:
        tainted_codes[_id(theirs_call.__code__)] = theirs_call.__code__

    def quietly(action, *args):
        me = _ident()
        busy[me] = 1
        try:
            return action(*args)
        finally:
            busy.pop(me, None)

    def finalize_new(finalizer, info, caller):
        if legacy or _type(info) is not info_type or attributed(caller):
            return
        honest[_id(finalizer)] = (finalizer, info.func, info.args, info.kwargs)

    def finalize_call(finalizer, info, box):
        known = honest.pop(_id(finalizer), None)
        genuine = known is not None and _type(info) is info_type and known[0] is finalizer and \
            known[1] is info.func and known[2] is info.args and known[3] is info.kwargs
        box.append(own_call if legacy or genuine else theirs_call)

    def on_class(cls):
        """A class the completion's code made: its special methods that have no frame of their own."""
        for name, value in _list(_vars(cls).items()):
            if _type(name) is _str and name[:2] == "__" == name[-2:] and frameless(value):
                quietly(_type.__setattr__, cls, name, _partial(theirs_call, value))

    def frameless(value):
        """A callable that runs without a frame of its own when a slot calls it (no `__get__`: not bound)."""
        kind = _type(value)  # (looked up in the classes' own dicts: no metaclass code runs here)
        return kind is not _function_type and not _issubclass(kind, _type) and _callable(value) and \
            not _any("__get__" in _vars(k) for k in _mro(kind))

    def on_outcome(call, nodeid):
        info = call.excinfo
        if info is None or not _issubclass(_type(info.value), skip_types):
            return False
        tb = info.tb
        while _type(tb) is _tb_type:
            frame = quietly(_getattr, tb, "tb_frame")
            if quietly(theirs, frame.f_code):
                return sensitive("skip", nodeid)
            tb = tb.tb_next
        return False

    def handle(event, args, caller):
        if event == "execrepobench.finalize_new":
            finalize_new(args[0], args[1], caller.f_back)
        elif event == "execrepobench.finalize":
            finalize_call(*args)
        elif event == "execrepobench.atexit":
            function, fargs, kwargs, box = args
            if not legacy and attributed(caller.f_back):
                register_atexit(theirs_call, function, *fargs, **kwargs)
            else:
                register_atexit(function, *fargs, **kwargs)
            box.append(function)
        elif event == "execrepobench.class":
            if not legacy and attributed(caller.f_back):
                on_class(args[0])
        elif event == "execrepobench.outcome":
            return not legacy and on_outcome(args[0], text(args[1]))
        return False

    def dunder_set(target, name, value, caller):
        """`Class.__x__ = value` from the completion's code, where value would run without a frame."""
        return not legacy and _issubclass(_type(target), _type) and frameless(value) and attributed(caller) and \
            sensitive("setattr:" + name, "frameless")

    return handle, dunder_set
