"""The guard's own events (`execrepobench.*`, raised by our pytest plugin and the bootstrap): who may
raise them, and what each one records - the baseline, each collected item, the collected tests,
collection errors, each test's reports (after the integrity checks of the path to the report and of
the item), the end of the session and pytest's exit status.

`make_reports` returns a closure (see `_execrepobench_guard_hook.install`): everything it uses lives
in it, never read through a module global.
"""
import _thread
import sys


def make_reports(cfg, genuine, evidence, integrity, machinery, attribution, text, esc, wrapped_call, run_state):
    """guard_event(event, args, caller) -> True to refuse.  evidence: (emit, sensitive, close);
    integrity: (snapshot_namespace, take_snapshots, check_integrity, group_names, cold); machinery:
    (snapshot_machinery, check_machinery, check_item_data); attribution: (is_masked, attributed,
    called_by, tainted_threads); run_state: {"ran": whether code of the masked file ran yet}."""
    _list, _type, _str, _int, _getattr, _any, _frozenset, _set = list, type, str, int, getattr, any, frozenset, set
    _function_type = type(make_reports)
    _ident, _frames = _thread.get_ident, sys._current_frames
    emit, sensitive, close = evidence
    snapshot_namespace, take_snapshots, check_integrity, group_names, cold = integrity
    snapshot_machinery, check_machinery, check_item_data = machinery
    is_masked, attributed, called_by, tainted_threads = attribution
    main, pluggy_dir, pytest_dir = cfg["main"], cfg["pluggy_dir"], cfg["pytest_dir"]
    wrapped = _frozenset(cfg["wrapped"])
    multicall, report_type, subtest_type = genuine["multicall"], genuine["report_type"], genuine["subtest_report_type"]
    items, labels, teardowns = {}, _set(), [0]

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
        if namespace is not None and label not in labels:
            labels.add(label)
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
            teardowns[0] += 1
            check_integrity(("cold%d" % (teardowns[0] % cold),))
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
            if not run_state["ran"]:  # nothing of the masked file ran yet: what pytest set up so far is its own
                take_snapshots()
            emit("baseline", "bootstrap" if run_state["ran"] else "fresh")
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
            close()
        return False

    return guard_event
