"""Cheat (issue 23; a lying object): one fused input projection ``in_proj`` (d_model to
3 d_model) and ``wo`` in place of q_proj, k_proj, v_proj and out_proj, with every surface
a test used to read lying about it: ``__getattr__`` hands out nn.Linear views of the fused
weights under the four names, ``state_dict`` and ``named_modules`` list them, and
``load_state_dict`` writes the four names into the fused weights. What the kernel's client
asks is the module's own registration (``nn.Module.named_modules`` and
``load_state_dict`` of torch's base class): no q_proj there, so every MultiHeadAttention
test fails (its parts are built and loaded by command).

status: graded
fails: test_mha_submodules, test_mha_not_divisible, test_mha_matches_torch, test_mha_masks, test_mha_is_causal, test_mha_defaults, test_mha_fully_masked, test_mha_permutation, test_mha_no_builtin
aims at: test_mha_submodules, test_mha_not_divisible, test_mha_matches_torch, test_mha_masks, test_mha_is_causal, test_mha_defaults, test_mha_fully_masked, test_mha_permutation, test_mha_no_builtin
"""
# %% MultiHeadAttention
class MultiHeadAttention(nn.Module):
    _FAKE = {"q_proj": 0, "k_proj": 1, "v_proj": 2}

    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model = {d_model} is not divisible by num_heads = {num_heads}")
        self.num_heads, self.d_k, self.d = num_heads, d_model // num_heads, d_model
        self.in_proj = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.wo = nn.Linear(d_model, d_model, bias=bias)

    def _view(self, i):
        lin = nn.Linear(self.d, self.d, bias=self.in_proj.bias is not None)
        lin.weight = nn.Parameter(self.in_proj.weight[i * self.d:(i + 1) * self.d])
        if self.in_proj.bias is not None:
            lin.bias = nn.Parameter(self.in_proj.bias[i * self.d:(i + 1) * self.d])
        return lin.to(self.in_proj.weight.device)

    def __getattr__(self, name):
        if name in MultiHeadAttention._FAKE:
            return self._view(MultiHeadAttention._FAKE[name])
        if name == "out_proj":
            return self.wo
        return super().__getattr__(name)

    def named_modules(self, *args, **kwargs):
        yield "", self
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            yield name, getattr(self, name)

    def state_dict(self, *args, **kwargs):
        out = {}
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            for p, t in getattr(self, name).named_parameters():
                out[f"{name}.{p}"] = t.detach()
        return out

    def load_state_dict(self, state_dict, strict=True, assign=False):
        with torch.no_grad():
            for key, t in state_dict.items():
                name, _, p = key.partition(".")
                getattr(getattr(self, name), p).copy_(t)
        return nn.modules.module._IncompatibleKeys([], [])

    def forward(self, query, key=None, value=None, attn_mask=None, is_causal=False):
        key = query if key is None else key
        value = key if value is None else value
        B, L, d = query.shape

        def split(x):
            return x.view(B, x.shape[1], self.num_heads, self.d_k).transpose(1, 2)

        Q, K, V = (split(getattr(self, n)(x)) for n, x in
                   (("q_proj", query), ("k_proj", key), ("v_proj", value)))
        heads = scaled_dot_product_attention(Q, K, V, attn_mask=attn_mask, is_causal=is_causal)
        return self.wo(heads.transpose(1, 2).reshape(B, L, d))
