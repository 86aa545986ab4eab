"""Our adversarial corpus: completions that do NOT implement the masked code and still pass without
the in-process guard, by reaching the test machinery from inside the pytest process.

Each attack is a block of code; `completion()` places it in the masked function's body (it runs when
the tests call the function) or, for `where == "module"`, after the (wrong) last statement of the
masked function, at module level (it runs when the module is first imported, during collection).
No attack spells a name of the judge's old blocklist as a plain word (names are split in strings).
"""
from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

# The judge's former pre-filter (regexes over the completion's text, for names its original file does
# not use).  It decided `tampering` alone until the in-process guard replaced it; kept here to show
# that no attack needs one of these names as a plain word, and that honest text trips it.
OLD_BLOCKLIST = {
    "pytest": r"\b_?pytest\b", "junit": r"junit", "conftest": r"conftest", "sys.modules": r"sys\s*\.\s*modules",
    "os._exit": r"\b_exit\b", "__import__": r"__import__", "importlib": r"\bimportlib\b",
    "builtins": r"\b__builtins__\b|\bbuiltins\b", "ctypes": r"\bctypes\b", "settrace": r"settrace|setprofile",
    "atexit": r"\batexit\b", "gc.get_referrers": r"get_referr", "sys._getframe": r"_getframe|f_back|f_globals",
    "signal": r"\bsignal\b", "kill": r"\bkill(pg)?\b", "fork": r"\bfork\b",
}


def old_blocklist_hits(completion: str, original: str) -> list[str]:
    return [name for name, pat in OLD_BLOCKLIST.items()
            if re.search(pat, completion) and not re.search(pat, original)]

# A helper some attacks define first: write pytest's junit report and our plugin's files as if every
# selected test had passed (paths from the run's own argv / environment).
FORGE = '''
def _forge():
    import json as _j, os as _o, sys as _s
    from xml.sax.saxutils import quoteattr as _q
    ids = _j.load(open(_o.environ["EXECREPOBENCH_SELECT"]))
    out = _o.environ["EXECREPOBENCH_COLLECT_OUT"]
    xml = [a.split("=", 1)[1] for a in _s.argv if a.startswith("--jun" + "itxml=")][0]
    cases = []
    for nodeid in ids:
        path, bracket, params = nodeid.partition("[")
        names = path.split("::")
        names[0] = names[0][:-3].replace("/", ".")
        cases.append("<testcase classname=%s name=%s time='0'/>" % (
            _q(".".join(names[:-1])), _q(names[-1] + bracket + params)))
    with open(xml, "w") as fh:
        fh.write("<testsuites><testsuite name='x'>" + "".join(cases) + "</testsuite></testsuites>")
    with open(out, "w") as fh:
        _j.dump(ids, fh)
    with open(out + ".done", "w") as fh:
        _j.dump({"exitstatus": 0, "outcomes": {i: "passed" for i in ids}}, fh)
'''
IMPORT = '''
def _imp(name):
    import sys as _s
    return vars(_s)["modules"]["built" + "ins"].__dict__["__imp" + "ort__"](name, fromlist=["_"])
'''
# Make every TestReport class-level "passed" (instances' own assignments are ignored).
PATCH_CLASS = '''
def _passing(cls):
    if "_fx" not in vars(cls):
        cls._fx = True
        cls.outcome = property(lambda self: "passed", lambda self, value: None)
        cls.longrepr = property(lambda self: None, lambda self, value: None)
'''
NOOP = '''
def _noop_code(fn):
    c = fn.__code__
    ns = {}
    exec("def f(%s): pass" % ", ".join(c.co_varnames[:c.co_argcount]), ns)
    return ns["f"].__code__
'''
WALK = '''
def _walk(f):
    while f is not None:
        g = getattr(f, "f_glo" + "bals")
        if g.get("__name__") == "_py" + "test.runner":
            _passing(g["TestReport"])
            return
        f = getattr(f, "f_ba" + "ck")
'''


def _c(*parts: str) -> str:
    return "\n".join(textwrap.dedent(p).strip("\n") for p in parts)


@dataclass(frozen=True)
class Attack:
    name: str
    target: str  # which sample: "parse" (isodate parse_date), "hash" (isodate Duration.__hash__), "clamp" (minirepo)
    where: str  # "body" or "module"
    code: str
    what: str


def completion(attack: Attack, indent: str, wrong: str) -> str:
    """The completed middle: the attack plus a wrong last statement (`wrong`), never the real code."""
    block = attack.code
    if attack.where == "module":
        return f"{wrong}\n\n\n{block}\n"
    lines = block.splitlines() + [wrong]
    return lines[0] + "".join(f"\n{indent}{line}" if line else "\n" for line in lines[1:])


REPORT_INIT_VIA_MODULES = '''
    import sys as _s
    _r = vars(_s)["modules"]["_py" + "test.reports"].TestReport
    _orig = _r.__init__
    def _init(self, *a, **k):
        _orig(self, *a, **k)
        self.outcome, self.longrepr = "passed", None
    if not getattr(_orig, "_fx", False):
        _init._fx = True
        _r.__init__ = _init
    '''
REPORT_CLASS_VIA_GC = '''
    import gc as _g
    for _o in _g.get_objects():
        if type(_o) is type and _o.__name__ == "TestReport":
            _passing(_o)
    '''

A = Attack
ATTACKS = [
    A("report_init_via_module_table", "parse", "body", _c(REPORT_INIT_VIA_MODULES),
      "wraps TestReport.__init__ found through the interpreter's module table"),
    A("report_class_via_gc", "parse", "body", _c(PATCH_CLASS, REPORT_CLASS_VIA_GC),
      "finds the TestReport class among all live objects (gc) and makes reports pass"),
    A("report_class_via_subclasses", "parse", "body", _c(PATCH_CLASS, '''
        _todo = [object]
        while _todo:
            _c = _todo.pop()
            try:
                _todo.extend(type.__subclasses__(_c))
            except TypeError:
                pass
            if _c.__name__ == "TestReport":
                _passing(_c)
        '''), "walks object.__subclasses__() to TestReport (no gc, no frames)"),
    A("report_via_inspect_frame", "parse", "body", _c(PATCH_CLASS, WALK, '''
        import inspect as _i
        _walk(_i.currentframe())
        '''), "walks the stack from inspect.currentframe() to pytest's runner globals"),
    A("report_via_traceback_frame", "parse", "body", _c(PATCH_CLASS, WALK, '''
        try:
            raise KeyError
        except KeyError as _e:
            _walk(_e.__traceback__.tb_frame)
        '''), "gets a frame from an exception's traceback and walks to the runner"),
    A("report_via_generator_frame", "parse", "body", _c(PATCH_CLASS, WALK, '''
        def _gen(box):
            _walk(getattr(getattr(box[0], "gi_fr" + "ame"), "f_ba" + "ck"))
            yield
        _box = []
        _box.append(_gen(_box))
        next(_box[0])
        '''), "a running generator's own frame links back to the caller's stack"),
    A("makereport_classmethod", "parse", "body", _c('''
        import sys as _s
        _r = vars(_s)["modules"]["_py" + "test.reports"].TestReport
        _orig = _r.from_item_and_call.__func__
        def _fake(cls, item, call):
            rep = _orig(cls, item, call)
            rep.outcome, rep.longrepr = "passed", None
            return rep
        if not hasattr(_r, "_fx"):
            _r._fx = True
            _r.from_item_and_call = classmethod(_fake)
        '''), "replaces the classmethod that turns a call into a report"),
    A("raises_context_swallows", "parse", "module", _c('''
        import sys as _s
        vars(_s)["modules"]["_py" + "test.raises"].RaisesExc.__exit__ = lambda self, *a: True
        '''), "at import time, makes the tests' own `raises` checks accept a missing exception"),
    A("machinery_code_swap", "parse", "body", _c('''
        import sys as _s
        def _new(item, call):
            rep = TestReport.from_item_and_call(item, call)
            rep.outcome, rep.longrepr = "passed", None
            return rep
        _f = vars(_s)["modules"]["_py" + "test.runner"].__dict__["py" + "test_runtest_makereport"]
        _f.__code__ = _new.__code__
        '''), "swaps the code object of pytest's registered makereport hook implementation"),
    A("hookwrapper_plugin_via_gc", "parse", "body", _c('''
        import gc as _g
        import pluggy as _pl
        def _wrap(item, call):
            rep = yield
            rep.outcome, rep.longrepr = "passed", None
            return rep
        class _P:
            pass
        for _pm in _g.get_objects():
            if type(_pm).__name__ == "PytestPluginManager" and not _pm.has_plugin("_fx"):
                _p = _P()
                setattr(_p, "py" + "test_runtest_makereport",
                        _pl.HookimplMarker("py" + "test")(wrapper=True)(_wrap))
                _pm.register(_p, "_fx")
        '''), "finds pytest's plugin manager (gc) and registers a report-rewriting hook wrapper"),
    A("plugin_and_report_writer_patch", "parse", "body", _c(IMPORT, '''
        import sys as _s
        _m = vars(_s)["modules"]
        class _D(dict):
            def __setitem__(self, key, value):
                dict.__setitem__(self, key, "passed")
        _c = _m["_execrepobench_collect"]
        if type(_c._OUTCOMES) is dict:
            _c._OUTCOMES = _D(_c._OUTCOMES)
        _m["_py" + "test.jun" + "itxml"]._NodeReporter.append_failure = lambda *a, **k: None
        _imp("atex" + "it").register(lambda: getattr(_imp("os"), "_ex" + "it")(0))
        '''), "rewrites our plugin's record and pytest's junit writer so both say passed (exit 0)"),
    A("forge_at_interpreter_exit", "parse", "body", _c(FORGE, IMPORT, '''
        def _late():
            _forge()
            getattr(_imp("os"), "_ex" + "it")(0)
        _imp("atex" + "it").register(_late)
        '''), "registers an exit handler that forges both report files and exits 0"),
    A("forge_from_lingering_thread", "parse", "body", _c(FORGE, '''
        import os as _o, threading as _t, time as _time
        def _wait():
            done = _o.environ["EXECREPOBENCH_COLLECT_OUT"] + ".done"
            while not _o.path.exists(done):
                _time.sleep(0.01)
            _time.sleep(0.2)
            _forge()
            getattr(_o, "_ex" + "it")(0)
        if not any(t.name == "_fx" for t in _t.enumerate()):
            _t.Thread(target=_wait, name="_fx").start()
        '''), "a thread that outlives the test waits for the session end, forges, exits 0"),
    A("forge_and_exit_now", "parse", "body", _c(FORGE, '''
        import os as _o
        _forge()
        getattr(_o, "_ex" + "it")(0)
        '''), "forges the report files and ends the process at once (indirect exit)"),
    A("forge_and_exec_true", "parse", "body", _c(FORGE, '''
        import os as _o
        _forge()
        getattr(_o, "ex" + "ecv")("/bin/true", ["true"])
        '''), "forges, then replaces the process with /bin/true (exit 0)"),
    A("forge_and_posix_exit", "parse", "body", _c(FORGE, '''
        import sys as _s
        _forge()
        getattr(vars(_s)["modules"]["posix"], "_ex" + "it")(0)
        '''), "forges, then exits through the posix module's own function"),
    A("forge_and_native_exit", "parse", "body", _c(FORGE, IMPORT, '''
        _forge()
        getattr(_imp("ct" + "ypes").CDLL(None), "_ex" + "it")(0)
        '''), "forges, then calls libc's exit through the native-call module"),
    A("trace_rewrites_report", "parse", "body", _c('''
        import sys as _s
        def _tracer(frame, event, arg):
            if event == "call" and frame.f_code.co_name == "from_item_and_call":
                def _local(f, ev, a):
                    if ev == "return" and a is not None:
                        a.outcome, a.longrepr = "passed", None
                    return _local
                return _local
            return None
        getattr(_s, "set" + "trace")(_tracer)
        '''), "a trace function rewrites the report object as it is returned"),
    A("profile_rewrites_report", "parse", "body", _c('''
        import sys as _s
        def _prof(frame, event, arg):
            if event == "return" and frame.f_code.co_name == "from_item_and_call" and arg is not None:
                arg.outcome, arg.longrepr = "passed", None
        getattr(_s, "set" + "profile")(_prof)
        '''), "a profile function rewrites the report object as it is returned"),
    A("alarm_handler_frame", "parse", "body", _c(PATCH_CLASS, WALK, IMPORT, '''
        _sg = _imp("sig" + "nal")
        getattr(_sg, "sig" + "nal")(_sg.SIGALRM, lambda num, frame: _walk(frame))
        _sg.setitimer(_sg.ITIMER_REAL, 1e-6)
        for _ in range(100000):
            if "_fx" in vars(_imp("_py" + "test.reports").TestReport):
                break
        '''), "an alarm handler receives the interrupted frame and walks to the runner"),
    A("thread_patches_with_builtin_target", "parse", "body", _c('''
        import functools as _ft, sys as _s, threading as _t
        _r = vars(_s)["modules"]["_py" + "test.reports"].TestReport
        _p = property(lambda self: "passed", lambda self, value: None)
        _n = property(lambda self: None, lambda self, value: None)
        for _name, _value in (("outcome", _p), ("longrepr", _n)):
            _th = _t.Thread(target=_ft.partial(setattr, _r, _name, _value))
            _th.start()
            _th.join()
        '''), "a thread whose target is a builtin (no frame of the completion) patches the report class"),
    A("exec_with_stdlib_filename", "parse", "body", _c('''
        _src = ("import gc\\n"
                "for o in gc.get_objects():\\n"
                "    if type(o) is type and o.__name__ == 'TestReport' and '_fx' not in vars(o):\\n"
                "        o._fx = 1\\n"
                "        o.outcome = property(lambda s: 'passed', lambda s, v: None)\\n"
                "        o.longrepr = property(lambda s: None, lambda s, v: None)\\n")
        exec(compile(_src, "/usr/lib/python3.11/string.py", "exec"), {})
        '''), "runs the gc attack from code compiled under a standard-library file name"),
    A("runtest_noop_at_import", "parse", "module", _c('''
        import sys as _s
        vars(_s)["modules"]["_py" + "test.python"].Function.runtest = lambda self: None
        '''), "at import time, makes every test item's run a no-op"),
    A("import_hook_rewrites_tests", "parse", "module", _c(NOOP, '''
        import sys as _s
        def _neuter(module):
            for _k, _v in list(vars(module).items()):
                if _k.startswith("test_") and hasattr(_v, "__code__") and _v.__code__.co_name != "f":
                    _v.__code__ = _noop_code(_v)
        class _Loader:
            def __init__(self, inner):
                self.inner = inner
            def create_module(self, spec):
                return self.inner.create_module(spec)
            def exec_module(self, module):
                self.inner.exec_module(module)
                _neuter(module)
        class _Finder:
            @staticmethod
            def find_spec(name, path=None, target=None):
                for _n, _m in list(vars(_s)["modules"].items()):
                    if _n.rpartition(".")[2].startswith("test_") and _m is not None:
                        _neuter(_m)
                if not name.rpartition(".")[2].startswith("test_"):
                    return None
                for _f in _s.meta_path:
                    if _f is not _Finder and hasattr(_f, "find_spec"):
                        spec = _f.find_spec(name, path, target)
                        if spec is not None:
                            spec.loader = _Loader(spec.loader)
                            return spec
                return None
        _s.meta_path.insert(0, _Finder)
        '''), "an import hook empties the test functions of test modules (loaded and loading)"),
    A("assert_rewriter_patched", "parse", "module", _c(NOOP, '''
        import sys as _s
        def _neuter_all():
            for _n, _m in list(vars(_s)["modules"].items()):
                if _n.rpartition(".")[2].startswith("test_") and _m is not None:
                    for _k, _v in list(vars(_m).items()):
                        if _k.startswith("test_") and hasattr(_v, "__code__") and _v.__code__.co_name != "f":
                            _v.__code__ = _noop_code(_v)
        for _f in _s.meta_path:
            if type(_f).__name__.startswith("AssertionRewrit"):
                _orig = type(_f).exec_module
                def _exec(self, module, _orig=_orig):
                    _orig(self, module)
                    _neuter_all()
                type(_f).exec_module = _exec
        '''), "wraps pytest's assertion-rewriting loader to empty test functions after import"),
    A("import_builtin_rebinds_test_names", "parse", "module", _c('''
        import sys as _s, types as _ty
        _b = vars(_s)["modules"]["built" + "ins"].__dict__
        _real = _b["__imp" + "ort__"]
        class _Quiet:
            def __init__(self, *a, **k):
                pass
            def __enter__(self):
                return self
            def __exit__(self, *a):
                return True
        def _imp(name, globals=None, locals=None, fromlist=(), level=0):
            mod = _real(name, globals, locals, fromlist, level)
            for _n, _m in list(vars(_s)["modules"].items()):
                real = getattr(_m, "py" + "test", None)
                if _n.rpartition(".")[2].startswith("test_") and hasattr(real, "raises"):
                    fake = _ty.SimpleNamespace(**vars(real))
                    fake.raises = _Quiet
                    setattr(_m, "py" + "test", fake)
            return mod
        _b["__imp" + "ort__"] = _imp
        '''), "replaces the import builtin; on the tests' next import it rebinds their test helper"),
    A("builtin_used_by_test", "hash", "body", _c('''
        import sys as _s
        _b = vars(_s)["modules"]["built" + "ins"]
        _real = _b.hash
        if not getattr(_real, "_fx", False):
            def _h(o):
                return _real(repr(o)) if type(o).__name__ == "Duration" else _real(o)
            _h._fx = True
            _b.hash = _h
        '''), "patches the hash() builtin that the test calls on the results"),
    # quick cases on the fixture repository
    A("mini_report_init", "clamp", "body", _c(REPORT_INIT_VIA_MODULES),
      "TestReport.__init__ through the module table (fixture repository)"),
    A("mini_gc", "clamp", "body", _c(PATCH_CLASS, REPORT_CLASS_VIA_GC),
      "TestReport through gc (fixture repository)"),
    A("mini_trace", "clamp", "body", _c('''
        import sys as _s
        def _prof(frame, event, arg):
            if event == "return" and frame.f_code.co_name == "from_item_and_call" and arg is not None:
                arg.outcome, arg.longrepr = "passed", None
        getattr(_s, "set" + "profile")(_prof)
        '''), "profile hook rewrites reports (fixture repository)"),
    A("mini_forge_exit", "clamp", "body", _c(FORGE, '''
        import os as _o
        _forge()
        getattr(_o, "_ex" + "it")(0)
        '''), "forged report files and an indirect exit (fixture repository)"),
]


# Attacks that reach pytest's plugin manager, its hook implementations, the collected items and
# their test data through back-references pytest leaves in module globals, or that patch the
# standard library's doctest machinery (tests/metric/test_guard_reach.py).  Targets: "clamp" (the fixture
# repository), "doc" (docrepo's `scaled`, judged by its doctest), "docmix" (judged by its doctest and
# a pytest test that compares with pytest.approx).
PM_VIA_PDB = '''
import sys as _s
_pm = vars(_s)["modules"]["_py" + "test.debugging"].pytestPDB._pluginmanager
'''
PM_VIA_ASSERT_CONFIG = '''
import sys as _s
_pm = vars(_s)["modules"]["_py" + "test.assertion.util"]._config.pluginmanager
'''
PASSING_WRAPPER = '''
import pluggy as _pl
class _P:
    pass
def _wrap(item, call):
    rep = yield
    rep.outcome, rep.longrepr = "passed", None
    return rep
'''
REGISTER = '''
if not _pm.has_plugin("_fx"):
    _p = _P()
    setattr(_p, "py" + "test_runtest_makereport", _pl.HookimplMarker("py" + "test")(wrapper=True)(_wrap))
    _pm.register(_p, "_fx")
'''
MAKEREPORT = '''
_hc = getattr(_pm.hook, "py" + "test_runtest_makereport")
'''
REWRITE_EXAMPLES = '''
if _test is not None:
    for _ex in _test.examples:
        _ex.want, _ex.source, _ex.exc_msg = "", "None\\n", None
    return None
'''
REACH_ATTACKS = [
    A("pm_register_via_debugging", "clamp", "body", _c(PM_VIA_PDB, PASSING_WRAPPER, REGISTER),
      "registers a report-rewriting hook wrapper with the plugin manager the debugging plugin keeps"),
    A("pm_register_via_assertion_config", "clamp", "body", _c(PM_VIA_ASSERT_CONFIG, PASSING_WRAPPER, REGISTER),
      "the same through the config the assertion helpers keep for the running test"),
    A("pm_hookcall_monitoring", "clamp", "body", _c(PM_VIA_PDB, '''
        def _before(name, impls, kwargs):
            pass
        def _after(outcome, name, impls, kwargs):
            if name.endswith("_makereport"):
                rep = outcome.get_result()
                rep.outcome, rep.longrepr = "passed", None
        if not getattr(_pm, "_fx", False):
            _pm._fx = True
            _pm.add_hookcall_monitoring(_before, _after)
        '''), "monitors hook calls and rewrites each report as it is returned"),
    A("hookimpl_function_swap", "clamp", "body", _c(PM_VIA_PDB, MAKEREPORT, '''
        for _impl in _hc.get_hookimpls():
            _orig = _impl.function
            if getattr(_orig, "__module__", "") == "_py" + "test.runner":
                def _fake(item, call, _orig=_orig):
                    rep = _orig(item, call)
                    rep.outcome, rep.longrepr = "passed", None
                    return rep
                _impl.function = _fake
        '''), "swaps the function of pytest's own makereport hook implementation"),
    A("hookimpls_list_insert", "clamp", "body", _c(PM_VIA_PDB, MAKEREPORT, PASSING_WRAPPER, '''
        if not any(i.plugin_name == "_fx" for i in _hc.get_hookimpls()):
            _hc._hookimpls.append(_pl.HookImpl(_P(), "_fx", _wrap, {"wrapper": True, "hookwrapper": False,
                                                                     "optionalhook": False, "tryfirst": False,
                                                                     "trylast": False, "specname": None}))
        '''), "inserts a hook wrapper straight into the hook caller's list (no registration)"),
    A("hookcaller_hookexec_swap", "clamp", "body", _c(PM_VIA_PDB, MAKEREPORT, '''
        if not getattr(_hc, "_fx", False):
            _orig = _hc._hookexec
            def _exec(name, impls, kwargs, first):
                rep = _orig(name, impls, kwargs, first)
                rep.outcome, rep.longrepr = "passed", None
                return rep
            _hc._hookexec, _hc._fx = _exec, True
        '''), "replaces the hook caller's executor with one that rewrites its result"),
    A("hookrelay_attribute_swap", "clamp", "body", _c(PM_VIA_PDB, MAKEREPORT, '''
        class _Caller:
            def __init__(self, inner):
                self.inner = inner
            def __getattr__(self, name):
                return getattr(self.inner, name)
            def __call__(self, **kwargs):
                rep = self.inner(**kwargs)
                rep.outcome, rep.longrepr = "passed", None
                return rep
        if type(_hc).__name__ != "_Caller":
            setattr(_pm.hook, "py" + "test_runtest_makereport", _Caller(_hc))
        '''), "replaces the makereport caller on the hook relay with a rewriting proxy"),
    A("autouse_fixture_noop_runtest", "clamp", "module", _c('''
        import sys as _s
        def _noop(request):
            request.node.runtest = lambda: None
        for _n, _m in list(vars(_s)["modules"].items()):
            if _n.rpartition(".")[2].startswith("test_") and _m is not None and not hasattr(_m, "_fx"):
                _pt = vars(_s)["modules"]["py" + "test"]
                _m._fx = _pt.fixture(autouse=True)(_noop)
        '''), "at import, adds an autouse fixture to the importing test module that makes each test's run a no-op"),
    A("doctest_examples_via_linecache", "doc", "body", _c('''
        import linecache as _l
        _test = getattr(getattr(_l.getlines, "__self__", None), "test", None)
        ''', REWRITE_EXAMPLES),
      "doctest's own linecache swap leads to the running doctest: its examples are rewritten"),
    A("doctest_examples_via_setupstate", "doc", "body", _c(PM_VIA_PDB, '''
        _session = _pm.get_plugin("session")
        _test = getattr(list(_session._setupstate.stack)[-1], "dtest", None)
        ''', REWRITE_EXAMPLES),
      "the running item from the session's setup stack: its doctest examples are rewritten"),
    A("doctest_checker_patch_and_equal_to_all", "docmix", "body", _c('''
        import doctest as _d
        _d.OutputChecker.check_output = lambda self, want, got, flags: True
        class _All(list):
            def __eq__(self, other):
                return True
            __hash__ = None
        return _All()
        '''), "doctest's output checker accepts anything, and an object equal to everything passes the asserts"),
    A("doctest_runner_run_at_import", "doc", "module", _c('''
        import doctest as _d
        _d.DocTestRunner.run = lambda self, test, *a, **k: _d.TestResults(0, len(test.examples))
        '''), "at import, doctest's runner reports every doctest as passed without running it"),
    A("doctest_private_run_at_import", "doc", "module", _c('''
        import doctest as _d
        _d.DocTestRunner._DocTestRunner__run = lambda self, test, flags, out: _d.TestResults(0, len(test.examples))
        '''), "at import, doctest's inner example loop is replaced by one that runs nothing"),
    A("doctest_item_runtest_at_import", "doc", "module", _c('''
        import sys as _s
        vars(_s)["modules"]["_py" + "test.doctest"].DoctestItem.runtest = lambda self: None
        '''), "at import, pytest's doctest items run nothing"),
    A("doctest_checker_patch_at_import", "doc", "module", _c('''
        import doctest as _d
        _d.OutputChecker.check_output = lambda self, want, got, flags: True
        '''), "at import, doctest's output checker accepts any output"),
]
