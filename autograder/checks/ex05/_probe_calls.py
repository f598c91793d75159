"""The calls ex05's probe and the learner's kernel both make (:mod:`._probe`): inputs on
every device the checks use, as the probe's request carries them (plain data)."""

from __future__ import annotations


def tensor_node(t) -> dict:
    """A checker tensor for the probe's request (its values as float64, exact for every
    dtype the calls use)."""
    import torch

    flat = t.detach().to("cpu").reshape(-1)
    data = flat.tolist() if t.dtype is torch.bool else flat.double().tolist()
    return {"tensor": str(t.dtype).removeprefix("torch."), "shape": list(t.shape),
            "device": t.device.type, "data": data}


def request_node(value):
    """``value`` for the probe's request: tensors as :func:`tensor_node`, lists, tuples and
    dicts of them alike, anything else as it is."""
    import torch

    if isinstance(value, torch.Tensor):
        return tensor_node(value)
    if isinstance(value, (list, tuple)):
        return [request_node(v) for v in value]
    if isinstance(value, dict):
        return {k: request_node(v) for k, v in value.items()}
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
