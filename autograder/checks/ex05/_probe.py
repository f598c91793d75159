"""ex05's rule "compute attention yourself", by construction: the learner's cells run again
in a fresh, sandboxed Python in which torch's attention does not work.

The trusted checker judges values from plain data; *how* the kernel computed them it cannot
see, and the kernel is the learner's. So the setup and solution cells (where the contract
puts ``scaled_dot_product_attention`` and ``MultiHeadAttention``) run again in a process of
the grader's (:mod:`autograder.torch_probe`, ``python -I`` inside bubblewrap: no network, its own ``/tmp``,
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
Without bubblewrap (``grade --no-sandbox``) the probe runs unsandboxed. A grading worker
forks each probe from a warm sandbox of its own (:mod:`autograder.warm_zygotes`: torch
imported once, the previous probe and all it left killed and wiped, the same script and
limits); ``check`` starts a process of its own ahead.
"""

from __future__ import annotations

import threading
import weakref
from concurrent.futures import Future

from autograder.checker import setup_and_solution_cells
from autograder.checks.ex05._probe_calls import mha_calls, request_node, sdpa_calls
from autograder.torch_probe_process import ProbeFailed, run
from autograder.testing import in_hidden_part, raised


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
    calls = [{"call": "scaled_dot_product_attention", "args": request_node(a),
              "kwargs": request_node(k), "cuda": a[0].device.type == "cuda"}
             for a, k in sdpa_calls(devices)]
    calls += [{"module": "MultiHeadAttention", "init": request_node(m["init"]),
               "seed": m["seed"], "state": request_node(m["state"]),
               "forward": request_node(m["forward"])} for m in mha_calls(devices)]
    try:
        return run(cells, calls, timeout, cuda="cuda" in devices)
    except ProbeFailed as exc:
        return {"failed": str(exc)}


def _answer_into(future: Future, cells: list[str], devices, timeout: float) -> None:
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
    threading.Thread(target=_answer_into, args=(future, cells, devices, timeout), daemon=True,
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
