"""ex05's rule "compute attention yourself", by construction: the learner's cells run again
in a fresh, sandboxed Python in which torch's attention does not work.

The trusted checker judges values from plain data; *how* the kernel computed them it cannot
see, and the kernel is the learner's. So the setup and solution cells (where the contract
puts ``scaled_dot_product_attention`` and ``MultiHeadAttention``) run again in a process of
the grader's (:data:`RUNNER`, ``python -I`` inside bubblewrap: no network, its own ``/tmp``,
the root read-only), which before any learner code runs:

1. replaces, in torch's dispatcher, every kernel of every ``aten`` operator whose name
   holds ``attention``, ``_sdp``, ``multi_head`` or ``transformer_encoder`` (the public
   ``scaled_dot_product_attention``, the flash, memory-efficient, cuDNN and math kernels,
   ``_native_multi_head_attention``, ...) by one that records the call and raises, at every
   dispatch key the operator has (CPU, CUDA, the autograd and composite keys, vmap's
   batching rules). Whatever name reaches them (``F.scaled_dot_product_attention``,
   ``torch._C._nn``, ``torch.ops.aten.*``, a stored reference, ``nn.MultiheadAttention``'s
   fast path) ends there. The registrations' handles are kept alive by a reference count
   no Python object holds (they are not tracked by ``gc``): learner code finds nothing to
   undo them with, and a kernel it registers on top cannot reach torch's original one;
2. replaces torch's Python-level multi-head attention (``F.multi_head_attention_forward``,
   ``nn.MultiheadAttention.forward``), whose ``need_weights=True`` path multiplies and
   normalises itself;
3. installs a seccomp filter (inherited by every thread and child, irrevocable) that
   refuses ``execve``: no fresh interpreter with an untouched torch, no compiler.

The checker then asks there for the same calls it makes in the kernel (:func:`verdict`):
what the kernel returned, the probe must return too (values to float rounding). A
delegating function raises there, and every test of the part it belongs to fails.

Limits, said plainly: the Python-level replacements of step 2 can be undone (torch's
source file is readable, and code executed from it, like copied code anywhere, computes
with basic operators) and then pass; a submission that calls torch's attention in the
kernel and its own code where that fails has the own implementation the rule asks for,
and passes; ``torch.compile`` cannot compile there (no ``execve``: no compiler) and fails;
a determined learner who loads a second copy of libtorch under another name, or calls
its C++ symbols through ``ctypes``, is not stopped (nothing short of removing the kernels
from the library would). The calls cover the paths the tests grade (no mask, boolean and
float masks, is_causal, float32, float16, bfloat16, 2-D to 4-D, CUDA when present), not
every shape. The probe sees what the kernel has of the course (``autograder.testing``),
not the submission's folder.
Without bubblewrap (``grade --no-sandbox``) the probe runs unsandboxed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import weakref
from concurrent.futures import Future
from pathlib import Path

from autograder import limits
from autograder.checker import setup_and_solution_cells
from autograder.sandbox import bwrap, copy_course, sandbox_error, system_binds
from autograder.testing import in_hidden_part, raised

MAX_OUTPUT = 8 * 2**20

# Run with python -I -c in the sandbox. Reads {"cells", "calls"} on stdin; writes
# {"replies", "off", "no_exec", "hits"} on stdout. Tensors cross as
# {"tensor": dtype, "shape": [...], "device": str, "data": [flat values]}.
RUNNER = r'''
import json, sys
request = json.loads(sys.stdin.read())
out = sys.stdout
sys.stdout = sys.stderr
sys.path.insert(0, request["course"])  # what the kernel has of the course (autograder.testing)
import ctypes, warnings
import torch
import torch.nn.functional as F
warnings.simplefilter("ignore")

# CUDA is started before anything is switched off (its driver must not meet the filter
# below half-way); calls on a device this process cannot use are not judged.
cuda_ok = False
if request.get("cuda"):
    try:
        torch.zeros(1, device="cuda").sum().item()
        cuda_ok = True
    except Exception:
        pass
hits = []


def _switched_off(name):
    def kernel(*args, **kwargs):
        hits.append(name)
        raise RuntimeError(f"{name} is switched off in this run (ex05 computes attention "
                           "itself)")
    return kernel


def _keys(op):
    keys = []
    for line in torch._C._dispatch_dump(op).splitlines():
        head, _, rest = line.partition(":")
        if "registered at" in rest and head.strip() not in ("name", "schema", "debug"):
            keys.append(head.strip().replace("[alias]", ""))
    return keys


handles, off = [], 0
for full in torch._C._dispatch_get_all_op_names():
    if not full.startswith("aten::") or not any(
            p in full for p in ("attention", "_sdp", "multi_head", "transformer_encoder")):
        continue
    for key in _keys(full):
        try:
            m = torch._C._dispatch_library("IMPL", "aten", key, "", 0)
            m.impl(full.split("::", 1)[1], key, _switched_off(full), False)
        except Exception:
            continue
        handles.append(m)
        off += 1
for m in handles:  # alive for good, held by no Python object
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(m))
del handles, m
# torch's higher-order attention operators (flex_attention, its backward): their eager
# kernels are Python functions (math_attention) registered in the operator itself, so
# each registration is replaced, and the module-level names too.
import torch._higher_order_ops.flex_attention as _flex
for _op in list(getattr(torch._ops, "_higher_order_ops", {}).values()):
    if "attention" not in str(getattr(_op, "_name", _op)):
        continue
    for _table in (getattr(_op, "py_kernels", {}), getattr(_op, "python_key_table", {})):
        for _key in list(_table):
            _table[_key] = _switched_off(f"torch.ops.higher_order.{_op._name}")
            off += 1
    getattr(_op, "_dispatch_cache", {}).clear()
for _name in ("math_attention", "sdpa_dense", "sdpa_dense_backward"):
    if hasattr(_flex, _name):
        setattr(_flex, _name, _switched_off(f"torch._higher_order_ops.flex_attention.{_name}"))
F.multi_head_attention_forward = _switched_off("torch.nn.functional.multi_head_attention_forward")
torch.nn.MultiheadAttention.forward = _switched_off("torch.nn.MultiheadAttention.forward")


def _no_exec():
    import platform, struct
    arch = {"x86_64": (0xC000003E, 59, 322, 317), "aarch64": (0xC00000B7, 221, 281, 277)}.get(
        platform.machine())
    if arch is None:
        return False
    audit, execve, execveat, sys_seccomp = arch
    refuse, allow = 0x00050000 | 1, 0x7FFF0000  # SECCOMP_RET_ERRNO | EPERM, RET_ALLOW
    ins = lambda code, k, jt=0, jf=0: struct.pack("HBBI", code, jt, jf, k)
    prog = [ins(0x20, 4), ins(0x15, audit, 1, 0), ins(0x06, refuse), ins(0x20, 0)]
    if audit == 0xC000003E:  # the x32 ABI's numbers
        prog += [ins(0x35, 0x40000000, 0, 1), ins(0x06, refuse)]
    prog += [ins(0x15, execve, 0, 1), ins(0x06, refuse), ins(0x15, execveat, 0, 1),
             ins(0x06, refuse), ins(0x06, allow)]
    code = b"".join(prog)
    buf = ctypes.create_string_buffer(code, len(code))

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        return False
    fprog = Prog(len(prog), ctypes.cast(buf, ctypes.c_void_p))
    # SECCOMP_SET_MODE_FILTER with SECCOMP_FILTER_FLAG_TSYNC: every thread, for good
    return libc.syscall(sys_seccomp, 1, 1, ctypes.byref(fprog)) == 0


no_exec = _no_exec()
ns = {"__name__": "__main__"}
for source in request["cells"]:
    code = "\n".join(l for l in source.splitlines() if not l.lstrip().startswith(("%", "!")))
    try:
        exec(compile(code, "<cell>", "exec"), ns)
    except BaseException:
        pass


def dec(v):
    if type(v) is dict and "tensor" in v:
        dtype = getattr(torch, v["tensor"])
        flat = torch.tensor(v["data"], dtype=torch.bool if dtype is torch.bool else torch.float64)
        return flat.reshape(v["shape"]).to(dtype).to(v["device"])
    if type(v) is list:
        return [dec(x) for x in v]
    if type(v) is dict:
        return {k: dec(x) for k, x in v.items()}
    return v


def enc(v):
    if isinstance(v, torch.Tensor):
        base = torch._C.TensorBase
        with torch._C.DisableTorchFunctionSubclass():
            data = torch.Tensor.detach(v).to("cpu", torch.float64).reshape(-1).tolist()
        return {"tensor": str(base.dtype.__get__(v)).removeprefix("torch."),
                "shape": list(base.shape.__get__(v)), "device": str(base.device.__get__(v)),
                "data": data}
    return {"type": type(v).__name__}


def raised(exc):
    kinds = [k for k in ("NotImplementedError", "ValueError", "TypeError", "RuntimeError",
                         "Exception") if isinstance(exc, getattr(__builtins__, k))]
    return {"raised": {"type": type(exc).__name__, "kinds": kinds, "message": str(exc)[:2000]}}


def forward(module, a, k):
    try:
        with torch.no_grad():
            return enc(module(*dec(a), **dec(k)))
    except BaseException as exc:
        return raised(exc)


replies = []
for call in request["calls"]:
    if call.get("cuda") and not cuda_ok:
        replies.append({"skipped": "cuda"})
        continue
    try:
        with torch.no_grad():
            if "call" in call:
                replies.append(enc(ns[call["call"]](*dec(call["args"]), **dec(call["kwargs"]))))
                continue
            init_args, init_kwargs = dec(call["init"])
            torch.manual_seed(call["seed"])
            module = ns[call["module"]](*init_args, **init_kwargs).double()
            module.load_state_dict(dec(call["state"]), strict=False)
            module.eval()
    except BaseException as exc:
        replies.append(raised(exc))
        continue
    replies.append([forward(module, a, k) for a, k in call["forward"]])
out.write(json.dumps({"replies": replies, "off": off, "no_exec": no_exec,
                      "hits": sorted(set(hits))[:20]}))
out.flush()
'''


def command(course: Path) -> list[str]:
    """The probe's command line: sandboxed where bubblewrap can start (torch importable,
    the GPU devices bound as for kernels, ``course`` read-only at its own path)."""
    py = [sys.executable, "-I", "-c", RUNNER]
    if sandbox_error() is not None:
        return py
    return [bwrap(), "--unshare-all", "--die-with-parent", "--cap-drop", "ALL",
            "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", *system_binds(),
            "--remount-ro", "/", "--tmpfs", "/tmp",  # a writable /tmp of its own
            *_under_tmp_again(),  # a Python environment in /tmp (a clone there) stays seen
            "--ro-bind", str(course), str(course),  # (under /tmp: bound after it)
            "--chdir", "/tmp", "--clearenv",
            "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "LANG", "C.UTF-8",
            "--setenv", "HOME", "/tmp", "--setenv", "OMP_NUM_THREADS", "1", "--", *py]


def _under_tmp_again() -> list[str]:
    """Binds, read-only, of the Python environment's folders that the probe's own ``/tmp``
    hides (a virtual environment in a clone under ``/tmp``, as CI's may be)."""
    out: list[str] = []
    for path in dict.fromkeys((sys.prefix, sys.exec_prefix, sys.base_prefix)):
        real = os.path.realpath(path)
        if real == "/tmp" or real.startswith("/tmp/"):
            out += ["--ro-bind", real, real]
    return out


class ProbeFailed(Exception):
    """The probe gave no answer (a timeout, a crash, malformed output)."""


def run(cells: list[str], calls: list[dict], timeout: float,
        assignment: str = "ex05_torch_attention", cuda: bool = False) -> dict:
    """The probe's answer for ``calls`` after ``cells`` ran: ``replies`` (one per call),
    ``off`` (kernels switched off), ``no_exec`` (the filter is in place), ``hits``. The
    cells can import what ``assignment``'s kernel has of the course
    (:data:`autograder.sandbox.KERNEL_FILES`), nothing more."""
    import shutil
    import tempfile

    course = Path(tempfile.mkdtemp(prefix="autograder-probe-course-"))
    try:
        copy_course(course, assignment)
        request = json.dumps({"cells": cells, "calls": calls, "course": str(course),
                              "cuda": cuda})
        try:
            done = subprocess.run(limits.limited(command(course), timeout),
                                  input=request.encode(), capture_output=True,
                                  timeout=limits.backstop(timeout), cwd=Path("/"))
        except subprocess.TimeoutExpired:
            raise ProbeFailed(f"the cells and calls waited longer than "
                              f"{limits.backstop(timeout):g} s") from None
    finally:
        shutil.rmtree(course, ignore_errors=True)
    if limits.out_of_cpu(done.returncode):
        raise ProbeFailed(f"the cells and calls ran longer than {timeout:g} s of CPU time")
    text = done.stdout[:MAX_OUTPUT + 1]
    try:
        answer = json.loads(text.decode("utf-8")) if len(text) <= MAX_OUTPUT else None
    except (UnicodeDecodeError, ValueError, RecursionError):
        answer = None
    if type(answer) is not dict or type(answer.get("replies")) is not list or len(
            answer["replies"]) != len(calls) or type(answer.get("off")) is not int:
        raise ProbeFailed(f"the process ended with status {done.returncode} and no answer")
    return answer


def tensor_node(t) -> dict:
    """A checker tensor for the probe's request (its values as float64, exact for every
    dtype the calls use)."""
    import torch

    flat = t.detach().to("cpu").reshape(-1)
    data = flat.tolist() if t.dtype is torch.bool else flat.double().tolist()
    return {"tensor": str(t.dtype).removeprefix("torch."), "shape": list(t.shape),
            "device": t.device.type, "data": data}


def _node(value):
    import torch

    if isinstance(value, torch.Tensor):
        return tensor_node(value)
    if isinstance(value, (list, tuple)):
        return [_node(v) for v in value]
    if isinstance(value, dict):
        return {k: _node(v) for k, v in value.items()}
    return value


def sdpa_calls(devices) -> list[tuple[tuple, dict]]:
    """(args, kwargs) of the calls of ``scaled_dot_product_attention`` made in both places:
    every path the tests grade."""
    import torch

    gen = torch.Generator().manual_seed(2305)

    def r(*shape, dtype=torch.float64):
        return torch.randn(*shape, generator=gen, dtype=torch.float64).to(dtype)

    q, k, v = r(2, 3, 5, 4), r(2, 3, 7, 4), r(2, 3, 7, 3)
    mask = torch.rand(5, 7, generator=gen) < 0.6
    mask[:, 0] = True
    calls = [((q, k, v), {}), ((q, k, v), {"attn_mask": mask}),
             ((q, k, v), {"attn_mask": r(2, 1, 5, 7)}), ((q, k, v), {"is_causal": True}),
             ((r(5, 4), r(7, 4), r(7, 3)), {})]
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        calls.append(((r(2, 4, 16, dtype=dtype), r(2, 6, 16, dtype=dtype),
                       r(2, 6, 3, dtype=dtype)), {}))
    if "cuda" in devices:
        calls += [(tuple(t.to("cuda") for t in args), {n: m.to("cuda") if isinstance(
            m, torch.Tensor) else m for n, m in kw.items()}) for args, kw in calls[:4]]
    return calls


def mha_calls(devices) -> list[dict]:
    """The modules built in both places: (init args, kwargs), the parameters loaded into
    them (float64), and the forward calls (args, kwargs)."""
    import torch

    gen = torch.Generator().manual_seed(2306)
    out = []
    for d, h, bias in ((8, 2, True), (12, 3, False)):
        state = {}
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            state[f"{name}.weight"] = torch.randn(d, d, generator=gen, dtype=torch.float64) / d
            if bias:
                state[f"{name}.bias"] = torch.randn(d, generator=gen, dtype=torch.float64)
        x = torch.randn(2, 5, d, generator=gen, dtype=torch.float64)
        y = torch.randn(2, 6, d, generator=gen, dtype=torch.float64)
        mask = torch.rand(2, h, 5, 6, generator=gen) < 0.6
        mask[..., 0] = True
        forward = [((x,), {}), ((x, y, y), {}), ((x, y, y), {"attn_mask": mask}),
                   ((x,), {"is_causal": True})]
        out.append({"init": ((d, h), {"bias": bias}), "seed": d, "state": state,
                    "forward": forward})
    return out


def _same(probe: dict, kernel) -> str:
    """'' when the probe's reply equals the kernel's result, else what differs."""
    import numpy as np
    import torch

    if "skipped" in probe:
        return ""  # the probe could not use that device: not judged
    if "raised" in probe:
        r = probe["raised"] if type(probe["raised"]) is dict else {}
        kinds = r.get("kinds") if type(r.get("kinds")) is list else []
        return "raised " + raised(name=str(r.get("type"))[:80], message=str(r.get("message"))[:300],
                                  kinds=kinds)
    if not isinstance(kernel, torch.Tensor):
        return ""  # not a tensor in the kernel: the other tests say so
    if probe.get("tensor") != str(kernel.dtype).removeprefix("torch.") or \
            probe.get("shape") != list(kernel.shape):
        if in_hidden_part():  # the probe's reply is the learner's text: none of it shown
            return "returned a tensor of another dtype or shape than in your kernel"
        return (f"returned a {str(probe.get('tensor'))[:40]} tensor of shape "
                f"{str(probe.get('shape'))[:80]} (in your kernel: {kernel.dtype}, "
                f"{tuple(kernel.shape)})")
    try:
        got = np.asarray(probe.get("data"), dtype=np.float64).reshape(tuple(kernel.shape))
    except (TypeError, ValueError):
        return "returned values that are not numbers"
    want = kernel.detach().to("cpu", torch.float64).numpy()
    tol = 1e-6 if kernel.dtype in (torch.float32, torch.float64) else 2e-2
    if not np.allclose(got, want, rtol=tol, atol=tol, equal_nan=True):
        return "returned other values than in your kernel"
    return ""


_ANSWERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # by session
# Answers :func:`prefetch` started, by what decides them (the notebook's setup and solution
# cells, the devices), each a Future that the first session with those cells takes over.
_PREFETCHED: dict[tuple, Future] = {}
_PREFETCHED_LOCK = threading.Lock()


def _probe_answer(cells: list[str], devices, timeout: float) -> dict:
    """The probe run on ``cells`` for every call of both graded parts."""
    calls = [{"call": "scaled_dot_product_attention", "args": _node(a), "kwargs": _node(k),
              "cuda": a[0].device.type == "cuda"} for a, k in sdpa_calls(devices)]
    calls += [{"module": "MultiHeadAttention", "init": _node(m["init"]), "seed": m["seed"],
               "state": _node(m["state"]), "forward": _node(m["forward"])}
              for m in mha_calls(devices)]
    try:
        return run(cells, calls, timeout, cuda="cuda" in devices)
    except ProbeFailed as exc:
        return {"failed": str(exc)}


def _fill(future: Future, cells: list[str], devices, timeout: float) -> None:
    try:
        future.set_result(_probe_answer(cells, devices, timeout))
    except BaseException as exc:  # noqa: BLE001 - whoever waits for the answer gets it raised
        future.set_exception(exc)


def prefetch(notebook, devices, timeout: float) -> None:
    """Start the probe of ``notebook`` in a background thread: ``check`` calls this before
    the kernel runs the learner's cells (the probe needs only their source), so that the
    first test that needs the answer finds it ready or under way. At most one prefetch is
    kept (a learner's check is one notebook)."""
    cells = setup_and_solution_cells(notebook)
    future: Future = Future()
    with _PREFETCHED_LOCK:
        _PREFETCHED.clear()
        _PREFETCHED[(tuple(cells), tuple(devices))] = future
    threading.Thread(target=_fill, args=(future, cells, devices, timeout), daemon=True,
                     name="ex05-probe").start()


def _answer(session, devices) -> dict:
    """The probe's answer for ``session``'s notebook (run once per session, for both graded
    parts; a prefetched one for the same cells is waited for), within the test cell's time
    limit, which the wait for the probe counts against."""
    if session not in _ANSWERS:
        cells = setup_and_solution_cells(session.notebook)
        with _PREFETCHED_LOCK:
            future = _PREFETCHED.pop((tuple(cells), tuple(devices)), None)
        _ANSWERS[session] = (future.result() if future is not None
                             else _probe_answer(cells, devices, session.timeout))
    return _ANSWERS[session]


_VERDICTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
OFF = ("with torch's attention operators switched off (F.scaled_dot_product_attention, "
       "torch.ops.aten's attention kernels, nn.MultiheadAttention)")


def _kernel_results(part: str, learner, devices) -> list:
    """What the learner's ``part`` returns in the kernel for the probe's calls: one entry
    per call (per forward call of each module), an exception where it raised."""
    import torch

    results: list = []
    if part == "sdpa":
        for args, kwargs in sdpa_calls(devices):
            try:
                with torch.no_grad():
                    results.append(learner(*args, **kwargs))
            except Exception as exc:  # noqa: BLE001 - the other tests judge what it raises
                results.append(exc)
        return results
    for m in mha_calls(devices):
        try:
            module = learner.call(m["init"][0], m["init"][1], seed=m["seed"]).double()
            module.load_state_dict(m["state"], strict=False)
            module.eval()
        except Exception as exc:  # noqa: BLE001 - the other tests judge it
            results.append([exc] * len(m["forward"]))
            continue
        row = []
        for args, kwargs in m["forward"]:
            try:
                with torch.no_grad():
                    row.append(module(*args, **kwargs))
            except Exception as exc:  # noqa: BLE001 - the other tests judge it
                row.append(exc)
        results.append(row)
    return results


def verdict(part: str, learner, devices) -> str:
    """'' when the learner's ``part`` (``sdpa``: the function ``learner``; ``mha``: the class)
    returns in the probe what it returns in the kernel for the same calls (a call that
    raises in the kernel is the other tests' business); else why not, as a check's failure
    message. The probe runs once per notebook, and only when the kernel returned something
    to compare. Cached per notebook and part."""
    import torch

    session = learner._session
    cache = _VERDICTS.setdefault(session, {})
    if part in cache:
        return cache[part]
    kernel = _kernel_results(part, learner, devices)
    pairs: list = []  # (index of the probe's reply, index of the forward call or None, result)
    if part == "sdpa":
        pairs = [(i, None, r) for i, r in enumerate(kernel)]
    else:
        n_sdpa = len(sdpa_calls(devices))
        pairs = [(n_sdpa + j, f, r) for j, row in enumerate(kernel) for f, r in enumerate(row)]
    pairs = [p for p in pairs if isinstance(p[2], torch.Tensor)]
    problem, answer = "", {}
    if pairs:
        answer = _answer(session, devices)
    for i, f, result in pairs:
        if "failed" in answer:
            problem = "gave no answer: " + answer["failed"]
            break
        reply = answer["replies"][i]
        if f is not None and type(reply) is list:
            reply = reply[f] if f < len(reply) else {}
        problem = _same(reply if type(reply) is dict else {}, result)
        if problem:
            break
    if problem:
        name = "scaled_dot_product_attention" if part == "sdpa" else "MultiHeadAttention"
        hits = [str(h)[:100] for h in answer.get("hits", []) if type(h) is str][:3]
        problem = (f"{name}, run again in a fresh Python {OFF}, {problem}"
                   + (f" (it called {', '.join(hits)})" if hits else "")
                   + ": compute the attention yourself, with matrix products, a mask and a "
                   "softmax")
    cache[part] = problem
    return problem
