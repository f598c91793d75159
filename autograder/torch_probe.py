"""What ex05's probe process runs (:mod:`autograder.checks.ex05._probe` says why): the
script (:data:`RUNNER`: torch imported, torch's attention switched off, ``execve`` refused,
then the learner's cells and the checker's calls) and its command line inside bubblewrap
(:func:`command`). :mod:`autograder.torch_probe_process` starts it and reads its answer.
Neither imports torch: ``check`` starts the process before the checker has imported it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from autograder import bwrap_box
from autograder.bwrap_box import Box, remount_ro, ro_bind, tmpfs
from autograder.sandbox import bwrap, sandbox_error, system_binds

MAX_OUTPUT = 8 * 2**20

# Run with python -I -c in the sandbox. Imports torch, then reads {"cells", "calls",
# "course", "cuda"} on stdin; writes
# {"replies", "off", "no_exec", "hits"} on stdout. Tensors cross as
# {"tensor": dtype, "shape": [...], "device": str, "data": [flat values]}.
RUNNER = r'''
import json, sys
out = sys.stdout
sys.stdout = sys.stderr
import ctypes, warnings
import torch  # before the request: a process started ahead imports it while it waits
import torch.nn.functional as F
try:  # and what torch imports at the first torch.broadcast_shapes (warm_sandbox.TORCH_LAZY)
    import torch.fx.experimental.symbolic_shapes
except ImportError:
    pass
warnings.simplefilter("ignore")
request = json.loads(sys.stdin.read())
sys.path.insert(0, request["course"])  # what the kernel has of the course (autograder.testing)

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
import os
os._exit(0)  # the answer is out: the interpreter's teardown with torch loaded takes 0.4 s
'''


def command(course: Path) -> list[str]:
    """The probe's command line: sandboxed where bubblewrap can start (torch importable,
    the GPU devices bound as for kernels, ``course`` read-only at its own path)."""
    py = [sys.executable, "-I", "-c", RUNNER]
    if sandbox_error() is not None:
        return py
    mounts = (*tmpfs("/tmp"), *system_binds(),
              *remount_ro("/"), *tmpfs("/tmp"),  # a writable /tmp of its own
              *_under_tmp_again(),  # a Python environment in /tmp (a clone there) stays seen
              *ro_bind(str(course)))  # (under /tmp: bound after it)
    box = Box(mounts=mounts, chdir="/tmp", env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
                                                "HOME": "/tmp", "OMP_NUM_THREADS": "1"})
    return bwrap_box.command(bwrap(), box, py)


def _under_tmp_again() -> list[str]:
    """Binds, read-only, of the Python environment's folders that the probe's own ``/tmp``
    hides (a virtual environment in a clone under ``/tmp``, as CI's may be)."""
    out: list[str] = []
    for path in dict.fromkeys((sys.prefix, sys.exec_prefix, sys.base_prefix)):
        real = os.path.realpath(path)
        if real == "/tmp" or real.startswith("/tmp/"):
            out += ro_bind(real)
    return out
