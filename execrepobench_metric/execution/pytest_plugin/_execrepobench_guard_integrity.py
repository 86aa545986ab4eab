"""Integrity snapshots of the test machinery's namespaces, for the guard's audit hook.

`make_integrity()` returns closures only: after it returns, nothing here is read through a module
global (the code under test could rebind those), and namespaces are compared by object identity
only (never calling __eq__ / __hash__ of what is stored in them).

Each protected namespace (a module's __dict__, a class's __dict__, sys.meta_path, ...) belongs to one
group: "hot" (the path from running a test to its report, and the test modules), "filtered" (sys,
threading, ...: namespaces where the machinery itself rebinds some names all the time; those names
are not compared), or one of COLD slices of the rest.  A group is checked with one C-level pass over
a flat list of its values and sizes; only when that fails does a slower pass say which names changed.
After a check, the current state is the reference: each change is reported once.

Swaps that the standard library makes itself while it runs a test, and undoes afterwards, are not
changes (`make_swaps`): doctest's runner replaces `linecache.getlines` with its own bound method
(over the function it saved) for the duration of each doctest, so a traceback formatted inside a
doctest - any doctest whose example raises - would otherwise read as a change of `linecache`.  Such a
value is accepted only when it is exactly that swap (the genuine method of a genuine runner class
wrapping the reference value), and the reference is kept, so the restore is not a change either.
"""
import _operator
import itertools
import sys
import types

COLD = 64  # slices of the namespaces off the hot path: one is checked after each test, all at the end


def make_text():
    """text(x): an exact str (never running a method of a str subclass) or None; esc(x): for a line."""
    _str_str, _type, _str, _TypeError = str.__str__, type, str, TypeError

    def text(value):
        try:
            return _str_str(value)
        except _TypeError:
            return None

    def esc(value):
        value = text(value) if _type(value) is not _str else value
        return "<non-str>" if value is None else value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")

    return text, esc


def make_swaps():
    """-> (capture, accepted).  capture(): take the genuine swapping code from the machinery as loaded
    now (before any repository code runs); accepted(label, name, value, reference): is `value` the
    machinery's own temporary replacement of `reference` under this name?"""
    _type, _vars, _set, _getattr, _frozenset = type, vars, set, getattr, frozenset
    _method_type, _module_type, modules = types.MethodType, type(sys), sys.modules
    genuine = {}  # "module:linecache:getlines" -> (function, frozenset of trusted runner classes)

    def capture():
        genuine.clear()
        doctest = modules.get("doctest")
        base = _getattr(doctest, "DocTestRunner", None) if _type(doctest) is _module_type else None
        if _type(base) is not _type:
            return
        fn = _vars(base).get("_DocTestRunner__patched_linecache_getlines")
        runners = {base, object, _getattr(doctest, "DebugRunner", None)}
        pytest_doctest = modules.get("_pytest.doctest")  # pytest's runner class (bound before this, see
        if _type(pytest_doctest) is _module_type:  # `_warm_lazy_machinery` in _execrepobench_collect)
            runners.add(_vars(pytest_doctest).get("RUNNER_CLASS"))
        genuine["module:linecache:getlines"] = (fn, _frozenset(c for c in runners if _type(c) is _type))

    def accepted(label, name, value, reference):
        found = genuine.get(label + ":" + name)
        if found is None or _type(value) is not _method_type:
            return False
        fn, runners = found
        owner = value.__self__
        if value.__func__ is not fn or not _set(_type(owner).__mro__) <= runners:
            return False
        return _vars(owner).get("save_linecache_getlines") is reference  # classes without a custom __dict__

    return capture, accepted


def make_integrity(prefixes, hot, rebound, consumers=(), lists=()):
    """-> (snapshot_namespace, take_snapshots, changed, group_names).  prefixes: top-level module names
    protected; hot: module names checked before every test report; consumers: top-level names of the
    modules checked on demand (group "consumers"); rebound: "module" or "module.Class" (or "*": every
    class) -> names the machinery rebinds itself."""
    _len, _list, _map, _all, _is, _type, _tuple, _dict = len, list, map, all, _operator.is_, type, tuple, dict
    _enumerate = enumerate
    _vars, _zip, _issubclass, _sorted, _set, _frozenset = vars, zip, issubclass, sorted, set, frozenset
    _qualname, _RuntimeError, _module_type = type.__dict__["__qualname__"].__get__, RuntimeError, type(sys)
    _chain, _values, _eq = itertools.chain.from_iterable, _operator.methodcaller("values"), _operator.eq
    _gettrace, _getprofile, modules, _sys_vars, cold = sys.gettrace, sys.getprofile, sys.modules, vars(sys), COLD
    text, esc = make_text()
    prefixes, hot, everywhere = _frozenset(prefixes), _frozenset(hot), _frozenset(rebound.get("*", ()))
    consumers = _frozenset(consumers)
    snaps, groups, stale, trace_now = [], {}, _set(), []
    capture_swaps, swapped = make_swaps()

    def contents(mapping):  # a namespace's values, or a list's items
        return mapping if _type(mapping) is _list else mapping.values()

    def filtered(mapping, skip):
        return [k for k in _list(mapping) if text(k) not in skip]

    def snapshot(label, mapping, skip, group):
        if skip - everywhere:
            group = "filtered"
        elif group is None:
            module = label.partition(":")[2]
            group = "hot" if module in hot else "consumers" if module.split(".")[0] in consumers else \
                "cold%d" % (_len(snaps) % cold)
        keys = filtered(mapping, skip) if group == "filtered" else _list(mapping)
        values = _list(_map(mapping.get, keys)) if group == "filtered" else _list(contents(mapping))
        snaps.append([label, mapping, skip, keys, values, group, _len(mapping)])
        stale.add(group)

    def snapshot_namespace(label, namespace, skip=_frozenset(), group=None):
        """A namespace and the classes defined in it."""
        snapshot(label, namespace, skip, group)
        group = snaps[-1][5] if snaps[-1][5] != "filtered" else group
        name = text(namespace.get("__name__"))
        for value in _list(namespace.values()):
            if _issubclass(_type(value), _type) and text(_vars(value).get("__module__")) == name:
                qualname = esc(_qualname(value))
                snapshot(label + "." + qualname, _vars(value),
                         _frozenset(rebound.get(name + "." + qualname, ())) | everywhere, group)

    def take_snapshots():
        """Every protected module (and its classes), sys, the import hooks: as they are now."""
        del snaps[:]
        groups.clear()
        for name, module in _sorted(_list(modules.items())):
            if _type(module) is _module_type and name.split(".")[0] in prefixes:
                snapshot_namespace("module:" + name, _vars(module), _frozenset(rebound.get(name, ())))
        snapshot("module:sys", _sys_vars, _frozenset(rebound["sys"]), "hot")
        snapshot("sys.meta_path", _sys_vars["meta_path"], _frozenset(), "hot")
        snapshot("sys.path_hooks", _sys_vars["path_hooks"], _frozenset(), "hot")
        for label, items in lists:  # more lists whose items must not change (gc.callbacks)
            snapshot(label, items, _frozenset(), "hot")
        trace_now[:] = [_gettrace(), _getprofile()]
        capture_swaps()

    def flatten(name):
        entries = [e for e in snaps if e[5] == name]
        maps = _tuple(e[1] for e in entries if _type(e[1]) is not _list)
        values = [v for e in entries if _type(e[1]) is not _list for v in e[4]]
        sizes = [_len(e[4]) for e in entries if _type(e[1]) is not _list]
        groups[name] = (entries, maps, sizes, values, [e for e in entries if _type(e[1]) is _list])
        stale.discard(name)

    def unchanged(name):
        entries, maps, sizes, values, lists = groups[name]
        if name == "filtered":  # the same size and the same values under the compared names
            return _all(_len(e[1]) == e[6] and _all(_map(_is, _map(e[1].get, e[3]), e[4])) for e in entries)
        try:
            return _all(_map(_eq, _map(_len, maps), sizes)) and _all(_map(_is, _chain(_map(_values, maps)), values)) \
                and _all(_len(e[1]) == _len(e[3]) and _all(_map(_is, e[1], e[3])) for e in lists)
        except _RuntimeError:  # a namespace changed size while we read it (another thread): look closer
            return False

    def side_effect(package, name, value):
        """A new name that an import or a warning adds by itself (not a rebinding of an existing one)."""
        if name == "__warningregistry__":
            return _type(value) is _dict
        return package is not None and _type(value) is _module_type and \
            text(_vars(value).get("__name__")) == package + "." + name

    def differences(label, mapping, skip, keys, saved, now, values):
        """(problems, values to keep as the reference: `values` except where a swap was accepted)."""
        if _type(mapping) is _list:
            return ["integrity:" + label], values
        old = _dict(_zip(_map(esc, keys), saved))
        package = text(mapping.get("__name__")) if label.startswith(("module:", "tests:")) else None
        found, keep = [], _list(values)
        for i, (name, value) in _enumerate(_zip(_map(esc, now), values)):
            reference = old.pop(name, _dict)
            if reference is value or name in skip or side_effect(package, name, value):
                continue
            if reference is not _dict and swapped(label, name, value, reference):
                keep[i] = reference  # the machinery's own swap: its restore must not read as a change
                continue
            found.append("integrity:" + label + ":" + name)
        return found + ["integrity:" + label + ":" + name for name in old if name not in skip], keep

    def changed(names):
        """Integrity problems in these groups since they were last checked."""
        found = []
        for name in names:
            if name in stale:
                flatten(name)
            if name not in groups or unchanged(name):
                continue
            for entry in groups[name][0]:
                label, mapping, skip, keys, saved = entry[:5]
                now = filtered(mapping, skip) if name == "filtered" else _list(mapping)
                values = _list(_map(mapping.get, now)) if name == "filtered" else _list(contents(mapping))
                if _len(now) != _len(keys) or not _all(_map(_is, now, keys)) or not _all(_map(_is, values, saved)):
                    problems, values = differences(label, mapping, skip, keys, saved, now, values)
                    found.extend(problems)
                entry[3], entry[4], entry[6] = now, values, _len(mapping)  # the reference from now on
            flatten(name)
        if _gettrace() is not trace_now[0] or _getprofile() is not trace_now[1]:
            trace_now[:] = [_gettrace(), _getprofile()]
            found.append("integrity:sys:trace")
        return found

    def group_names():
        return _sorted(_set(e[5] for e in snaps))

    return snapshot_namespace, take_snapshots, changed, group_names
