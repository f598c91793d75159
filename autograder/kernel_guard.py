"""Start a guarded grading kernel in the sandbox: ``python -m autograder.kernel_guard -f FILE``.

Started by :class:`autograder.sandbox.SandboxedKernelManager` inside bubblewrap, before any
learner code runs, this module:

1. loads the checks of the assignment (``AUTOGRADER_ASSIGNMENT``) and everything they
   import (the reference implementations, ``autograder.testing``...) from the sandbox's
   private copy of the course package, then takes all of it out of ``sys.modules`` and
   deletes the copy: from then on these *private* modules exist only as objects that the
   guard's audit hook holds;
2. imports fresh *public* copies of what the notebook's locked cells import
   (``autograder.testing``, for ex07 the given building blocks) and, in place of each
   ``autograder.checks.<exNN>``, a *facade* module whose functions hold no reference to the
   real checks: each call goes through ``sys.audit("autograder.check", ...)`` to the hook,
   which runs the private check;
3. installs an audit hook (PEP 578; it cannot be removed) that reports to the grader, over
   a pipe (``AUTOGRADER_CHANNEL``), every route learner code takes to the hidden code or
   around it: importing or opening course modules and files, reading or replacing
   ``__code__``/``__defaults__`` of course functions, ``gc``'s object graph, frames of a
   running check, ctypes access to raw memory, ``/proc/*/mem``, new processes, a second
   audit hook; and every change to the functions and classes the checks rely on (numpy,
   torch, math, builtins, the course's own modules), compared before and after each
   check and before each cell;
4. starts ipykernel.

A line on the channel is ``violation<TAB>what was found``. The grader
(:class:`autograder.sandbox.GuardedExecute`) turns them into the status ``tampering``.
"""

from __future__ import annotations

import os
import sys

# Modules a learner's code may never import while graded (prefixes).
BLOCKED = ("autograder.reference", "autograder.diagnose", "autograder.checks",
           "autograder.grading", "autograder.kernel_guard", "autograder.sandbox",
           "solutions")
# Course modules the checks and the learner's cells share (one object, not two copies):
# ex08's Rust glue, whose compiled functions the checks recognise by class.
SHARED = ("autograder.rust",)
# Snapshotted for changes (what the checks' comparisons rely on): these modules' functions,
# classes and submodules, every course module's, and the dictionaries of these classes.
WATCHED_MODULES = ("builtins", "math", "operator", "functools", "numbers", "copy", "types",
                   "numpy", "numpy.testing", "numpy.linalg", "numpy.random", "torch",
                   "torch.testing", "torch.nn", "torch.nn.functional", "torch.linalg",
                   "tracemalloc", "gc", "random", "dis", "sys")
WATCHED_CLASSES = (("torch", "Tensor"), ("torch.nn", "Module"), ("torch.nn", "Linear"),
                   ("torch.nn", "MultiheadAttention"), ("numpy", "ndarray"))
# Standard-library helpers through which learner code may act (skipped to find who acted).
WRAPPERS = tuple(f"/{name}.py" for name in (
    "inspect", "traceback", "linecache", "pathlib", "dis", "tokenize", "codecs", "_pyio",
    "genericpath", "posixpath", "os", "io", "shutil", "pickle", "copy", "functools",
    "json/__init__", "importlib/__init__", "pkgutil", "runpy", "glob", "fnmatch", "subprocess",
    "IPython/core/interactiveshell",  # IPython's open() in the user namespace
    "ctypes/__init__", "threading"))
# Audit events of ctypes: raw memory, foreign functions, frames reached through the C API.
CTYPES_EVENTS = ("ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.call_function",
                 "ctypes.addressof", "ctypes.cdata", "ctypes.cdata/buffer", "ctypes.string_at",
                 "ctypes.wstring_at", "ctypes.memmove", "ctypes.memset", "ctypes.PyObj_FromPtr",
                 "ctypes.create_string_buffer", "ctypes.create_unicode_buffer")
VOLATILE = {"sys": {"last_type", "last_value", "last_traceback", "ps1", "ps2", "displayhook",
                    "excepthook", "stdout", "stderr", "stdin", "modules", "path", "meta_path",
                    "path_importer_cache", "argv", "_getframe"},
            "builtins": {"_", "__", "___", "display", "get_ipython", "exit", "quit", "input", "raw_input",
                         "__IPYTHON__", "copyright", "credits", "license", "help"}}


def _snapshot(modules: dict, volatile: dict, classes: tuple, sources: dict) -> dict:
    """{(module, name): object} for the functions, classes and modules each module holds
    (less the ``volatile`` names), and for the entries of the dictionaries of ``classes``
    (:data:`VOLATILE`, :data:`WATCHED_CLASSES`). ``sources`` gets, for each key, the
    dictionary it was read from (looked up again, entry by entry, to find changes)."""
    snap = {}
    for modname, mod in modules.items():
        skip = volatile.get(modname, set())
        try:
            namespace = vars(mod)
            items = list(namespace.items())
        except TypeError:
            continue
        for name, value in items:
            if name in skip or name.startswith("__") and name not in ("__import__",
                                                                      "__build_class__"):
                continue
            if callable(value) or type(value).__name__ == "module":
                snap[(modname, name)] = value
                sources[(modname, name)] = namespace
    for modname, clsname in classes:
        cls = getattr(modules.get(modname), clsname, None)
        if isinstance(cls, type):
            namespace = vars(cls)
            for k, v in list(namespace.items()):
                if callable(v) or isinstance(v, (staticmethod, classmethod, property)):
                    snap[(f"{modname}.{clsname}", k)] = v
                    sources[(f"{modname}.{clsname}", k)] = namespace
    return snap


def _setup() -> None:
    import importlib
    import os  # local names: the closures below never read this module's globals, which
    import shutil  # learner code can reach (function.__globals__ is not audited) and rebind
    import sys
    import time

    started = time.perf_counter()
    blocked, wrappers, ctypes_events, snapshot = BLOCKED, WRAPPERS, CTYPES_EVENTS, _snapshot
    volatile = {k: frozenset(v) for k, v in VOLATILE.items()}
    watched_classes = tuple(WATCHED_CLASSES)

    assignment = os.environ.get("AUTOGRADER_ASSIGNMENT", "")
    exposed = [m for m in os.environ.get("AUTOGRADER_EXPOSED", "").split(",") if m]
    course_dir = os.environ["AUTOGRADER_COURSE_DIR"]
    channel_path = os.environ["AUTOGRADER_CHANNEL"]
    fd = os.open(channel_path, os.O_WRONLY)
    os.unlink(channel_path)  # the grader holds the read end; nobody else opens a write end
    fd_id = (os.fstat(fd).st_dev, os.fstat(fd).st_ino)
    write, fstat, exit_now = os.write, os.fstat, os._exit
    # The grader's requests for a look at the shell's state after each cell (a FIFO the
    # grader holds open for writing), answered with an HMAC under a key only this process
    # and the grader know: written first on the channel, before any learner code runs.
    import hmac
    import select

    requests_path = os.environ["AUTOGRADER_REQUESTS"]
    requests = os.open(requests_path, os.O_RDONLY)
    os.unlink(requests_path)
    requests_id = (os.fstat(requests).st_dev, os.fstat(requests).st_ino)
    key = os.urandom(32)
    mac, wait_readable, read = hmac.digest, select.select, os.read
    write(fd, b"key\t" + key.hex().encode() + b"\n")

    # 1. The private world: the assignment's checks and what they import.
    short = assignment.split("_")[0]  # ex01_python_attention -> autograder.checks.ex01
    checks_name = f"autograder.checks.{short}"
    private_checks = importlib.import_module(checks_name) if assignment else None
    private_testing = importlib.import_module("autograder.testing")
    private = {n: m for n, m in sys.modules.items() if (n == "autograder" or
               n.startswith("autograder.")) and n not in SHARED}
    for n in private:
        del sys.modules[n]
    importlib.invalidate_caches()

    # 2. The public world: fresh copies of what the locked cells import; facades for checks.
    import types

    import autograder  # noqa: F401 - the public package
    import autograder.memory  # noqa: F401
    import autograder.testing  # noqa: F401

    for name in exposed:  # e.g. ex07's given building blocks from autograder.reference
        if name.startswith("autograder.reference") or not name.startswith(BLOCKED):
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - the cell will report it
                pass
    checks_pkg = types.ModuleType("autograder.checks", "The course's checks (facades).")
    checks_pkg.__path__ = []
    sys.modules["autograder.checks"] = checks_pkg
    autograder.checks = checks_pkg
    facades = {}
    if private_checks is not None:
        facade = types.ModuleType(checks_name, private_checks.__doc__)
        names = [n for n, v in vars(private_checks).items() if callable(v) and not
                 n.startswith("_") and (getattr(v, "__module__", None) or "").startswith(
                     checks_name)]  # also a package's (ex05.sdpa, ex05.mha) re-exports
        for n in names:
            ns = {"__builtins__": {}}  # the facade's globals: nothing to reach from them
            exec(compile(
                f"def {n}(*args, _audit=_audit, _mod={checks_name!r}, _name={n!r}, "
                "**kwargs):\n"
                "    box = []\n"
                "    _audit('autograder.check', _mod, _name, args, kwargs, box)\n"
                "    return box[0] if box else None\n", f"<check {checks_name}>", "exec"),
                {"_audit": sys.audit, "__builtins__": {}}, ns)
            fn = ns[n]
            fn.__doc__ = getattr(private_checks, n).__doc__
            fn.__module__ = checks_name
            setattr(facade, n, fn)
        sys.modules[checks_name] = facade
        setattr(checks_pkg, short, facade)
        facades[checks_name] = facade
    # The knowledge checks' check_answer runs as a guarded check too (the private copy).
    # (Its globals are the public module's: changing them is found like any other change.)
    exec(compile("def check_answer(*args, _audit=__import__('sys').audit, **kwargs):\n"
                 "    box = []\n"
                 "    _audit('autograder.check', 'autograder.testing', 'check_answer', args, "
                 "kwargs, box)\n"
                 "    return box[0] if box else None\n", "<check autograder.testing>", "exec"),
         vars(autograder.testing))
    autograder.testing.check_answer.__doc__ = private_testing.check_answer.__doc__
    facades["autograder.testing"] = autograder.testing
    privates = {checks_name: private_checks, "autograder.testing": private_testing}
    # Decoys where the hidden modules were: whatever route reaches one (import, importlib,
    # sys.modules, a parent's attribute) finds nothing, and reading from it is reported.
    class Decoy(types.ModuleType):
        def __getattr__(self, attr, _audit=sys.audit):
            if not (attr.startswith("__") and attr.endswith("__")):
                _audit("autograder.decoy", f"{self.__name__}.{attr}")
            raise AttributeError(f"module {self.__name__!r} has no attribute {attr!r}")

    hidden = set(private) | {"autograder.reference", "autograder.diagnose"}
    for name in sorted(hidden, key=lambda n: n.count(".")):
        if name in sys.modules or name == "autograder" or name.startswith(
                ("autograder.checks", "autograder.testing", "autograder.memory")):
            continue
        decoy = Decoy(name)
        decoy.__path__ = []
        sys.modules[name] = decoy
        parent, _, child = name.rpartition(".")
        if parent in sys.modules and not hasattr(sys.modules[parent], child):
            setattr(sys.modules[parent], child, decoy)
    shutil.rmtree(course_dir, ignore_errors=True)  # the course's files: gone from here on

    watched = {n: m for n, m in sys.modules.items() if m is not None and (
        n in WATCHED_MODULES or n == "autograder" or n.startswith("autograder."))}
    baseline = {}  # taken before the first cell runs, once ipykernel has set itself up
    trusted_prefixes = tuple({sys.prefix, sys.base_prefix, os.path.realpath(sys.prefix),
                              os.path.realpath(sys.base_prefix), "<frozen"})
    course_prefix = course_dir
    import threading
    getprofile, gettrace, setprofile, settrace = (sys.getprofile, sys.gettrace, sys.setprofile,
                                                  sys.settrace)
    state = {"in_check": 0, "cell": None}
    # How deep each thread is in the guard's own hook (0: not in it). Per thread: a learner
    # thread's events are checked while the main thread runs the guard, and the reverse.
    depth: dict = {}
    from _thread import get_ident
    reported = set()

    def report(what: str) -> None:
        if what in reported:
            return
        reported.add(what)
        try:
            st = fstat(fd)
            if (st.st_dev, st.st_ino) != fd_id:
                raise OSError("channel replaced")
            # A leading newline: whatever a learner wrote into the channel before (a partial
            # line) cannot glue itself to the report and hide it. One short write is atomic.
            write(fd, f"\nviolation\t{what[:1000]}\n".encode("utf-8", "replace"))
        except OSError:
            exit_now(86)  # the channel was closed or replaced: no grade without it

    def is_learner(code) -> bool:
        f = code.co_filename
        return not f.startswith(trusted_prefixes) and not f.startswith(course_prefix) \
            and not f.startswith("<check ")

    own: set = set()  # the guard's own code objects, skipped when looking for the caller

    def caller():
        """The frame that performed the audited operation (below the guard's frames)."""
        frame = sys._getframe(1)
        while frame is not None and frame.f_code in own:
            frame = frame.f_back
        return frame

    def direct_learner() -> bool:
        """Whether learner code performed the operation itself, or through a standard
        library helper that only passes it on (inspect, traceback, pathlib, ...)."""
        frame = caller()
        while frame is not None and (frame.f_code.co_filename.endswith(wrappers) or
                                     frame.f_code.co_filename.startswith("<frozen")):
            frame = frame.f_back
        return frame is not None and is_learner(frame.f_code)

    def code_of(fn):
        """The code of a plain function or method, read without running anything of the
        object's (an attribute lookup could run a learner's property); else None."""
        if type(fn) is types.MethodType:
            fn = fn.__func__
        return fn.__code__ if type(fn) is types.FunctionType else None

    def library_code(fn) -> bool:
        """Whether a callback is a library's function or method (not the learner's): any
        other kind of callable counts as the learner's."""
        code = code_of(fn)
        return code is not None and not is_learner(code)

    def shell_state() -> dict:
        """What runs the cells and sends their results: callables in the instance
        dictionaries of IPython's shell, the kernel, its session and sockets (and their
        classes), the shell's input and AST transformers, custom exception handlers, the
        learner's event callbacks and the kernel's message handlers. Key ``("+", ...)``:
        instance entries, whose additions count too (a method shadowed on the instance)."""
        snap = {}
        ipy = sys.modules.get("IPython")
        shell = ipy.get_ipython() if ipy is not None else None
        if shell is None:
            return snap
        kernel = getattr(shell, "kernel", None)
        objs = {"shell": shell, "kernel": kernel, "session": getattr(kernel, "session", None),
                "iopub_socket": getattr(kernel, "iopub_socket", None),
                "iopub_thread": getattr(kernel, "iopub_thread", None),
                "iopub_thread.socket": getattr(getattr(kernel, "iopub_thread", None), "socket",
                                               None),
                "shell_stream": getattr(kernel, "shell_stream", None),
                "shell_stream.socket": getattr(getattr(kernel, "shell_stream", None), "socket",
                                               None),
                "control_stream": getattr(kernel, "control_stream", None),
                "displayhook": getattr(shell, "displayhook", None),
                "display_pub": getattr(shell, "display_pub", None),
                "compile": getattr(shell, "compile", None), "events": getattr(shell, "events",
                                                                             None),
                "input_transformer_manager": getattr(shell, "input_transformer_manager", None),
                "prefilter_manager": getattr(shell, "prefilter_manager", None)}
        for name, obj in objs.items():
            snap[("object", f"the kernel's {name}")] = obj
            d = getattr(obj, "__dict__", None) if obj is not None else None
            if not isinstance(d, dict):
                continue
            for k, v in list(d.items()) + list((d.get("_trait_values") or {}).items()):
                if callable(v) and not isinstance(v, type):
                    snap[("+", f"the kernel's {name}", k)] = v
            for cls in type(obj).__mro__:
                if (cls.__module__ or "").startswith(("IPython", "ipykernel", "jupyter_client",
                                                      "zmq")):
                    for k, v in list(vars(cls).items()):
                        if callable(v) or isinstance(v, (staticmethod, classmethod, property)):
                            snap[(f"{cls.__module__}.{cls.__qualname__}", k)] = v
        for attr in ("input_transformers_cleanup", "input_transformers_post",
                     "ast_transformers", "custom_exceptions"):
            snap[("the shell", attr)] = tuple(getattr(shell, attr, None) or ())
        # What turns a cell's text into code: the transformer manager's lists, IPython's
        # prefilter transformers and checkers (their objects are compared above).
        manager = objs["input_transformer_manager"]
        for attr in ("cleanup_transforms", "line_transforms", "token_transformers"):
            snap[("the shell's input_transformer_manager", attr)] = tuple(
                vars(manager).get(attr) or ()) if hasattr(manager, "__dict__") else None
        prefilter = objs["prefilter_manager"]
        for attr in ("_transformers", "_checkers"):
            snap[("the shell's prefilter_manager", attr)] = tuple(
                vars(prefilter).get(attr) or ()) if hasattr(prefilter, "__dict__") else None
        for ev, cbs in dict(getattr(getattr(shell, "events", None), "callbacks", {})).items():
            snap[("the shell's events", ev)] = tuple(cb for cb in cbs if not library_code(cb))
        ishell = sys.modules.get("IPython.core.interactiveshell")
        for name in ("exec", "eval"):  # a module global would shadow the builtin for run_code
            snap[("IPython.core.interactiveshell", name)] = vars(ishell).get(name) if ishell \
                else None
        result_cls = getattr(ishell, "ExecutionResult", None)
        for k, v in list(vars(result_cls).items()) if isinstance(result_cls, type) else ():
            snap[("IPython's ExecutionResult", k)] = v
        for attr in ("shell_handlers", "control_handlers"):
            snap[("the kernel", attr)] = tuple(dict(getattr(kernel, attr, None) or {}).values())
        return snap

    def same(new, old) -> bool:
        if type(new) is tuple and type(old) is tuple:
            return len(new) == len(old) and all(a is b for a, b in zip(new, old))
        return new is old

    sources: dict = {}  # baseline key of a module's or class's entry -> its dictionary

    def changes(modules: bool = True) -> list[str]:
        """What changed since the baseline; ``modules=False``: the shell's state only.

        The modules' and classes' entries are looked up one by one in their dictionaries
        (``sources``), not snapshotted again: a check runs this before and after itself."""
        if not baseline:
            baseline.update(snapshot(watched, volatile, watched_classes, sources))
            shell = shell_state()
            for key in shell:  # the shell's entries are compared with a new shell_state()
                sources.pop(key, None)
            baseline.update(shell)
            return []
        now = shell_state()
        for key, obj in now.items():  # an object ipykernel made after the baseline (its
            if key[0] == "object" and baseline.get(key) is None and obj is not None:
                baseline[key] = obj  # control stream, set up in another thread): adopted
                baseline.update((k, v) for k, v in now.items() if k[:2] == ("+", key[1]))
        changed = [f"{key[1]}.{key[2]}" for key in now if key[0] == "+" and key not in baseline]
        for key, old in baseline.items():
            source = sources.get(key)
            if source is not None:
                if not modules:
                    continue
                new = source.get(key[1])
                if new is old:
                    continue
            elif not modules and key not in now:
                continue
            else:
                new = now.get(key)
            if same(new, old):
                continue
            if key[0] == "+":
                changed.append(f"{key[1]}.{key[2]}")
                continue
            if key[0] == "object":  # only for the adoption above: an object swapped for
                continue  # another shows in its callables' entries, compared one by one
            code = getattr(new, "__code__", None)
            if new is not None and getattr(new, "__wrapped__", None) is old and \
                    code is not None and not is_learner(code):
                baseline[key] = new  # a library decorated it (torch._dynamo: manual_seed)
                continue
            changed.append(f"{key[0]}.{key[1]}")
        return sorted(changed)

    def learner_hooks() -> list[str]:
        """Tracing and profiling functions of learner code (they see and rewrite frames)."""
        found = []
        for what, fn in (("sys.setprofile", getprofile()), ("sys.settrace", gettrace()),
                         ("threading.setprofile", getattr(threading, "_profile_hook", None)),
                         ("threading.settrace", getattr(threading, "_trace_hook", None))):
            code = code_of(fn)
            if fn is not None and (code is None or is_learner(code)):
                found.append(what)
        return found

    def private_class(cls) -> bool:
        """Whether a class is one of the hidden course modules' (the reference's)."""
        mod = getattr(cls, "__module__", None) or ""
        if not mod.startswith(("autograder.", "solutions")):
            return False
        public = sys.modules.get(mod)
        return public is None or isinstance(public, Decoy) or mod.startswith("solutions")

    def borrows_private_class(values) -> str | None:
        for v in values:
            cls = v if isinstance(v, type) else type(v)
            try:
                mro = type.mro(cls) if isinstance(cls, type) else ()
            except TypeError:
                continue
            for base in mro:
                if private_class(base):
                    return f"{cls.__qualname__} derives from {base.__module__}.{base.__qualname__}"
        return None

    def user_values() -> list:
        try:
            shell = sys.modules["IPython"].get_ipython()
            values = list(shell.user_ns.values()) if shell is not None else []
        except Exception:  # noqa: BLE001 - no IPython: nothing to scan
            return []
        for v in list(values):  # and one level into containers (a class kept in a list)
            if type(v) in (list, tuple, set, frozenset):
                values.extend(list(v)[:1000])
            elif type(v) is dict:
                values.extend(list(v.values())[:1000])
        return values

    def verify(when: str) -> None:
        hooks = learner_hooks()
        if hooks:
            report(f"traces or profiles the checks ({', '.join(hooks)}, found {when})")
            setprofile(None)
            settrace(None)
            threading._profile_hook = threading._trace_hook = None
        borrowed = borrows_private_class(user_values())
        if borrowed:
            report(f"uses a hidden class: {borrowed} (found {when})")
        changed = changes()
        if changed:
            report(f"changed {', '.join(changed[:5])}{' ...' if len(changed) > 5 else ''} "
                   f"(found {when})")

    def course_function(obj) -> bool:
        code = code_of(obj)
        return code is not None and not is_learner(code)

    def hook(event: str, args: tuple) -> None:
        tid = get_ident()
        level = depth.get(tid, 0)
        if level:  # an event raised while the guard itself runs (in this thread)
            if level == 1:
                depth[tid] = 2  # the frames looked at below raise events too: not checked
                try:
                    who = inner_actor()
                    if who is not None:  # e.g. a metaclass __eq__ the guard's scan compared
                        report(f"runs its own code inside the guard ({event} from {who})")
                finally:
                    depth[tid] = 1
            return
        depth[tid] = 1
        try:
            _hook(event, args)
        finally:
            depth[tid] = 0

    def inner_actor() -> str | None:
        """The learner function that raised an event while the guard runs, or None when
        the guard (or a library it called) raised it."""
        frame = sys._getframe(2)  # below hook
        while frame is not None and (frame.f_code.co_filename.startswith(("<frozen",
                                                                          *trusted_prefixes))
                                     and frame.f_code not in own):
            frame = frame.f_back
        if frame is None or frame.f_code in own or not is_learner(frame.f_code):
            return None
        return frame.f_code.co_name

    forbidden_ops = None  # ex05: torch's attention, however the learner's code reaches it
    torch_dir = "/nonexistent/"
    if short == "ex05" and "torch" in sys.modules:
        from torch.overrides import TorchFunctionMode

        torch_dir = os.path.dirname(sys.modules["torch"].__file__)

        class ForbiddenOps(TorchFunctionMode):
            """Reports torch's scaled_dot_product_attention (any of its entry points: F.,
            torch._C._nn., torch.ops.aten.*) and multi_head_attention_forward when called
            from learner code while a check runs, even through a stored reference. (The
            mode is reachable from learner code: no closure, an event the hook judges.)"""

            def __torch_function__(self, func, types, args=(), kwargs=None, _audit=sys.audit):
                name = str(getattr(func, "__name__", "") or func)
                if "scaled_dot_product" in name or "multi_head_attention_forward" in name:
                    _audit("autograder.torch_op", name)
                return func(*args, **(kwargs or {}))

        own.add(ForbiddenOps.__torch_function__.__code__)
        forbidden_ops = ForbiddenOps

    def _hook(event: str, args: tuple) -> None:
        if event == "autograder.check":
            mod, name, a, kw, box = args
            if mod not in facades or getattr(facades[mod], name, None) is None or (
                    mod == "autograder.testing" and name != "check_answer"):
                return
            verify(f"before {name}")
            borrowed = borrows_private_class([*a, *kw.values()])
            if borrowed:
                report(f"uses a hidden class: {borrowed}")
            setprofile(None)  # nothing of the learner's sees the check's frames
            settrace(None)
            fn = getattr(privates[mod], name)
            state["in_check"] += 1
            depth[get_ident()] -= 1  # audit the learner's code while the check runs
            try:
                if forbidden_ops is not None:
                    with forbidden_ops():
                        box.append(fn(*a, **kw))
                else:
                    box.append(fn(*a, **kw))
            finally:
                depth[get_ident()] += 1
                state["in_check"] -= 1
                verify(f"after {name}")
            return
        if event in ("compile", "code.__new__"):  # (source | code, filename, ...)
            name = os.fsdecode(args[1]) if isinstance(args[1], (str, bytes)) else ""
            if (name.startswith(trusted_prefixes) or name.startswith(course_prefix) or
                    name.startswith("<check ")) and direct_learner():
                report(f"compiles code under the file name {name[:200]!r}, which is not "
                       "the learner's")
                raise PermissionError("that file name is not the learner's")
            return
        if event == "exec":
            name = args[0].co_filename
            # IPython runs a cell one statement at a time, each compiled under the cell's
            # file name: verified before the cell's first statement, not before each (a
            # check verifies before and after itself, and watch() runs meanwhile).
            if ("ipykernel_" in name or name.startswith("<ipython")) and \
                    name != state["cell"]:
                state["cell"] = name
                verify("before a cell")
            return
        if event == "autograder.hidden_init":
            if direct_learner():  # e.g. a factory function that returns the reference's object
                report(f"creates a {args[0]} (a hidden class)")
            return
        if event == "autograder.torch_op":
            frame = caller()
            while frame is not None and (frame.f_code in own or frame.f_code.co_filename
                                         .startswith(torch_dir)):
                frame = frame.f_back
            if frame is not None and is_learner(frame.f_code):
                report(f"calls torch's {args[0]}, which this exercise forbids")
            return
        if event == "autograder.decoy":
            if direct_learner():
                report(f"reads {args[0]} (a hidden module)")
            return
        if event in ("import", "autograder.blocked_import"):
            name = args[0] or ""
            if name.startswith(blocked) and name not in sys.modules:
                report(f"imports {name}")
                raise ModuleNotFoundError(f"No module named {name!r}")
            return
        if event == "open":
            path = args[0]
            if isinstance(path, (str, bytes)):
                p = os.path.abspath(os.fsdecode(path))  # //proc/self/mem, ./../proc
                if p.startswith("//"):
                    p = p[1:]
                memory = p.startswith("/proc/") and p.endswith("/mem")  # the kernel's memory
                if p.startswith("/proc/") and p.endswith("/clear_refs") and state["in_check"] \
                        and direct_learner():  # resets the high-water mark a check measures
                    report(f"opens {p} during a check")
                if (p.startswith(course_prefix) or "/solutions/" in p or memory or
                        "/autograder/reference" in p or "/autograder/checks" in p) \
                        and direct_learner():
                    report(f"opens {p}")
                if p.startswith(("/proc/", "/dev/fd/")):  # a second end of the guard's FIFOs
                    try:
                        st = os.stat(p)
                    except OSError:
                        return
                    if (st.st_dev, st.st_ino) in (fd_id, requests_id):
                        report(f"opens {p}, the guard's channel to the grader")
                        raise PermissionError(f"{p} is the grader's")
            return
        if event == "sys.addaudithook":
            report("adds an audit hook")
            raise RuntimeError("audit hooks are not allowed while grading")
        if event in ("object.__getattr__", "object.__setattr__", "object.__delattr__"):
            obj, name = args[0], args[1]
            if event == "object.__getattr__" and name in ("tb_frame", "gi_frame", "cr_frame",
                                                          "ag_frame"):
                frame = getattr(obj, name, None)
                hidden = frame is not None and frame.f_code.co_filename.startswith(
                    course_prefix)
                if direct_learner() and (hidden or state["in_check"]):
                    report(f"reads {name} of {'a check' if hidden else 'a running check'}")
                return
            if name in ("__code__", "__defaults__", "__kwdefaults__", "__globals__"):
                if event == "object.__getattr__":
                    if course_function(obj) and direct_learner():
                        report(f"reads {getattr(obj, '__qualname__', '?')}.{name}")
                elif (course_function(obj) or not hasattr(obj, "__code__")) and \
                        direct_learner():
                    report(f"replaces {getattr(obj, '__qualname__', '?')}.{name}")
            return
        if event in ("sys._getframe", "sys._current_frames"):
            if sys._getframe(2).f_code in own:  # the guard's own (exec without globals)
                return
            hidden = event == "sys._current_frames" or (  # other threads: the guard's too
                args and args[0].f_code not in own and  # IPython's var_expand: exec's frame
                args[0].f_code.co_filename.startswith(course_prefix))
            if direct_learner() and (hidden or state["in_check"]):
                who = caller()
                report(f"{event} inside a check (from {who.f_code.co_name if who else '?'} in "
                       f"{os.path.basename(who.f_code.co_filename) if who else '?'})")
            return
        if event in ("gc.get_objects", "gc.get_referrers", "gc.get_referents"):
            if direct_learner():
                report(f"uses {event}")
            return
        if event in ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.fork",
                     "os.forkpty", "pty.spawn"):
            if direct_learner():  # a process without this guard could read this one's memory
                report(f"starts a process ({event})")
            return
        if event in ctypes_events:
            if direct_learner():
                report(f"uses ctypes ({event})")
            return
        if event in ("sys.setprofile", "sys.settrace", "sys._setprofileallthreads",
                     "sys._settraceallthreads"):
            if direct_learner():
                report(f"traces or profiles the checks ({event})")
            return

    class BlockedFinder:
        """Reports imports of the hidden modules that bypass the ``import`` audit event
        (``importlib.import_module``); removing it gains nothing, the files are gone."""

        @staticmethod
        def find_spec(name, path=None, target=None, _audit=sys.audit, _blocked=blocked):
            if name.startswith(_blocked):
                _audit("autograder.blocked_import", name)
            return None

    def guard_init(cls, init):
        # No closure (function.__closure__ is not audited): only an event the hook judges.
        def __init__(self, *args, _init=init, _audit=sys.audit,
                     _name=f"{cls.__module__}.{cls.__qualname__}", **kwargs):
            _audit("autograder.hidden_init", _name)
            _init(self, *args, **kwargs)
        own.add(__init__.__code__)
        return __init__

    for module in private.values():  # the hidden classes: made only by the checks
        for value in list(vars(module).values()):
            if isinstance(value, type) and value.__module__ == module.__name__ and \
                    "__init__" in vars(value):
                try:
                    value.__init__ = guard_init(value, vars(value)["__init__"])
                except (TypeError, AttributeError):
                    pass
    own.update(f.__code__ for f in (hook, _hook, inner_actor, caller, direct_learner, report, verify,
                                    changes, course_function, is_learner, learner_hooks,
                                    private_class, borrows_private_class, user_values,
                                    library_code, shell_state, same,
                                    BlockedFinder.find_spec, Decoy.__getattr__))
    # The grader's profile (benchmarks/bench_grading.py --profile) reads this line.
    write(fd, f"time\tguard imports\t{time.perf_counter() - started:.4f}\n".encode())
    # A test cell whose exception learner code then hides (its _render_traceback_ or
    # __str__ clearing the cell's ExecutionResult, dropping the messages...): IPython runs
    # each cell's code through builtins.exec, so the exception passes through this wrapper
    # first and the grader learns of it before any learner code runs (it gives such a test
    # cell an error if none arrived). Replacing exec back is a change like any other.
    import _thread
    import builtins
    import time
    import types as _types

    def cell_failed(_write=write, _fd=fd, _exit=exit_now) -> None:  # no closure to rebind
        try:
            _write(_fd, b"\ncell\tfailed\n")
        except OSError:
            _exit(86)

    def exec_(source, /, *args, _exec=builtins.exec, _failed=cell_failed,
              _getframe=sys._getframe, _code=_types.CodeType, **kwargs):
        __tracebackhide__ = True  # noqa: F841 - IPython leaves this frame out of tracebacks
        if not args and "globals" not in kwargs:  # the caller's namespace, as exec does
            frame = _getframe(1)
            return _exec(source, frame.f_globals, frame.f_locals, **kwargs)
        name = source.co_filename if type(source) is _code else ""
        if "ipykernel_" not in name and not name.startswith("<ipython"):
            return _exec(source, *args, **kwargs)
        try:
            return _exec(source, *args, **kwargs)
        except BaseException:
            _failed()
            raise

    exec_.__doc__, exec_.__name__, exec_.__qualname__ = builtins.exec.__doc__, "exec", "exec"
    builtins.exec = exec_
    own.update((exec_.__code__, cell_failed.__code__))

    def look() -> None:
        """Compare the shell's state with the baseline; report what changed."""
        tid = get_ident()
        depth[tid] = 1
        try:
            error = None
            for _ in range(3):  # the namespace changed while scanned: again
                try:
                    changed = changes(modules=False)  # cheap: ~1 ms, not the modules' 20 ms
                except Exception as exc:  # noqa: BLE001
                    error = exc
                    continue
                if changed:
                    report(f"changed {', '.join(changed[:5])} (found while the notebook ran)")
                return
            report(f"the shell's state could not be read ({type(error).__name__})")
        finally:
            depth[tid] = 0

    def watch() -> None:
        """Looks at the shell's state after every cell, when the grader asks (a line on the
        request FIFO; the answer, ``checked NONCE HMAC``, comes after any report), and four
        times a second: a patch that stops the later cells from running (so that no check
        and no statement of theirs runs) is found after the cell that made it."""
        pending = b""
        while True:
            try:
                st = fstat(requests)
                if (st.st_dev, st.st_ino) != requests_id:
                    raise OSError("request FIFO replaced")
                data = read(requests, 4096) if wait_readable([requests], [], [], 0.25)[0] \
                    else b""
            except BlockingIOError:  # someone else read it first (made non-blocking)
                data = b""
            except OSError:
                exit_now(86)  # the grader's requests cannot reach the guard: no grade
            *nonces, pending = (pending + data).split(b"\n")
            waited = 0
            while state["in_check"] and waited < 2000:  # a check may patch and restore
                time.sleep(0.001)  # (spies): a learner thread's check, between cells
                waited += 1
            if state["in_check"]:
                if nonces:
                    report("runs a check in another thread while the grader waits")
            elif baseline:
                look()
            for nonce in nonces:
                answer = mac(key, nonce, "sha256").hex().encode()
                try:
                    st = fstat(fd)
                    if (st.st_dev, st.st_ino) != fd_id:
                        raise OSError("channel replaced")
                    write(fd, b"\nchecked\t" + nonce[:64] + b"\t" + answer + b"\n")
                except OSError:
                    exit_now(86)

    own.update((watch.__code__, look.__code__))
    sys.meta_path.insert(0, BlockedFinder)
    sys.addaudithook(hook)
    _thread.start_new_thread(watch, ())
    write(fd, b"ready\n")


def main() -> None:
    os.dup2(2, 1)  # the process's own stdout is the grader's; kernel output goes over zmq
    from autograder.exercises import trusted

    if not trusted(os.environ.get("AUTOGRADER_ASSIGNMENT", "")):
        _setup()  # the kernel holds the hidden checks: guard them (not needed otherwise)
    from ipykernel.kernelapp import launch_new_instance

    sys.argv[0] = "ipykernel_launcher"
    launch_new_instance()


if __name__ == "__main__":
    main()
