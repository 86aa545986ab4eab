"""Integrity of what pytest runs and reports with, beyond module namespaces: the plugin manager's
registrations and hook implementations, and each collected item with its test data.

Back-references pytest leaves in module globals (the debugging plugin's plugin manager and config,
the assertion helpers' config, doctest's runner behind `linecache.getlines` while a doctest runs, the
session's setup stack) lead from a completion to these objects without any audit event.  So their
state is taken when collection is over and compared by identity: the hook callers on the report path
(`pytest_runtest_*`, `pytest_pyfunc_call`, `pytest_report_*`, `pytest_fixture_*`) and the plugin
manager itself before every test report, every hook caller at the end; each item (the methods it
must not override on itself, its test function, a doctest's runner, checker, flags and examples)
before its own report.  `make_machinery()` returns closures only; nothing is read through a module
global afterwards, and nothing of an object that has changed is read further (an attacker's object
could run code when read).
"""
import _operator

HOT_HOOKS = ("pytest_runtest_", "pytest_pyfunc_call", "pytest_report_", "pytest_fixture_")


def make_machinery(theirs):
    """theirs(function) -> is this function the completion's code?  -> (snapshot, check, check_item)."""
    _list, _len, _map, _all, _is, _type, _getattr, _vars = list, len, map, all, _operator.is_, type, getattr, vars
    _frozenset, _str, _dict, _set, _sorted = frozenset, str, dict, set, sorted
    _function_type, hot_prefixes = _type(make_machinery), HOT_HOOKS
    state = {"pm": None}
    callers, items, methods = {}, {}, {}  # hook name -> [caller, flat]; nodeid -> (item, type, flat)

    def flat_dict(mapping):
        keys = _list(mapping)
        return [mapping, keys, _list(_map(mapping.get, keys))]

    def same_dict(saved):
        mapping, keys, values = saved
        return _len(mapping) == _len(keys) and _all(_map(_is, _map(mapping.get, keys), values))

    def caller_state(caller):
        impls = _getattr(caller, "_hookimpls", None)
        out = [_getattr(caller, "_hookexec", None), impls, _len(impls) if _type(impls) is _list else -1]
        for impl in _list(impls) if _type(impls) is _list else ():
            fn = _getattr(impl, "function", None)
            out += [impl, fn, fn.__code__ if _type(fn) is _function_type else None,
                    _getattr(impl, "wrapper", None), _getattr(impl, "hookwrapper", None)]
        return out

    def completion_hooks(pm):
        """Hook implementations whose function is the completion's code (registered or inserted)."""
        found = []
        for name, caller in _list(_vars(pm.hook).items()):
            impls = _getattr(caller, "_hookimpls", None)
            for impl in _list(impls) if _type(impls) is _list else ():
                fn = _getattr(impl, "function", None)
                fn = _getattr(fn, "__func__", fn)
                if _type(fn) is _function_type and theirs(fn.__code__):
                    found.append("pluginmanager:completion-hook:" + _str(name))
        return found

    def item_state(item):
        obj = _getattr(item, "obj", None)
        out = [_type(item), obj]
        dtest, runner = _vars(item).get("dtest"), _vars(item).get("runner")
        if dtest is not None:
            examples = _getattr(dtest, "examples", None)
            # (not the runner's optionflags: doctest changes them per example and leaves them so on a failure)
            out += [dtest, runner, _type(runner), _getattr(runner, "_checker", None), _getattr(dtest, "globs", None),
                    examples, _len(examples) if _type(examples) is _list else -1]
            for example in _list(examples) if _type(examples) is _list else ():
                options = _getattr(example, "options", None)
                out += [example, _getattr(example, "source", None), _getattr(example, "want", None),
                        _getattr(example, "exc_msg", None), _getattr(example, "lineno", None), options]
                if _type(options) is _dict:  # e.g. +SKIP added to an example
                    keys = _list(options)
                    out += [_len(options), *keys, *_map(options.get, keys)]
        return out

    def methods_of(cls):
        """Names of the methods an item's class (and its bases) defines: an item must not shadow them."""
        if cls not in methods:
            names = _set()
            for base in cls.__mro__[:-1]:
                names.update(k for k, v in _list(_vars(base).items()) if _type(v) is _function_type)
            methods[cls] = _frozenset(names)
        return methods[cls]

    def snapshot(session):
        """When collection is over (before any test runs): -> problems found already."""
        pm = session.config.pluginmanager
        state["pm"] = (pm, flat_dict(_vars(pm)), flat_dict(_vars(pm.hook)), flat_dict(_vars(pm).get("_name2plugin", {})))
        callers.clear()
        for name, caller in _list(_vars(pm.hook).items()):
            callers[name] = [caller, caller_state(caller), _str(name).startswith(hot_prefixes)]
        items.clear()
        for item in _list(session.items):
            items[item.nodeid] = (item, methods_of(_type(item)), item_state(item))
        return completion_hooks(pm)

    def check(everything):
        """Problems in the plugin manager (hook callers on the report path only, unless `everything`)."""
        if state["pm"] is None:
            return []
        pm, own, relay, plugins = state["pm"]
        found = []
        if not same_dict(own):
            found.append("integrity:pluginmanager")
        if not same_dict(plugins):
            found.append("integrity:pluginmanager:plugins")
        if not same_dict(relay):
            found.append("integrity:pluginmanager:hooks")
            return found
        for name, entry in _list(callers.items()):
            caller, saved, hot = entry
            if not (hot or everything):
                continue
            now = caller_state(caller)
            if _len(now) != _len(saved) or not _all(_map(_is, now, saved)):
                found.append("integrity:pluginmanager:" + _str(name))
                entry[1] = now  # each change is reported once
        if everything and not found:
            found += completion_hooks(pm)
        return found

    def check_item(nodeid):
        entry = items.get(nodeid)
        if entry is None:
            return []
        item, names, saved = entry
        found = []
        if not names.isdisjoint(_vars(item)):
            found.append("integrity:item:" + nodeid + ":" + ",".join(_sorted(names.intersection(_vars(item)))))
        if _type(item) is not saved[0]:
            return found + ["integrity:item:" + nodeid + ":class"]
        now = item_state(item)
        if _len(now) != _len(saved) or not _all(_map(_is, now, saved)):
            found.append("integrity:item:" + nodeid + ":data")
        return found

    return snapshot, check, check_item
