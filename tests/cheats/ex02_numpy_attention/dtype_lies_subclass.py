"""Cheat (lying object, issue 23): softmax computes in float64 and returns an ndarray
subclass whose ``dtype`` property claims the input's dtype. The checker receives the plain
array the subclass holds (float64), so the dtype tests still see float64.

status: graded
fails: test_softmax_dtype, test_attention_dtype
"""
# %% softmax
class _Claims(np.ndarray):
    claimed = None

    @property
    def dtype(self):
        return self.claimed if self.claimed is not None else super().dtype


def softmax(x, axis=-1):
    x = np.asarray(x)
    wanted = x.dtype
    z = x.astype(np.float64)
    m = np.max(z, axis=axis, keepdims=True)
    e = np.exp(z - np.where(np.isfinite(m), m, 0))
    total = np.sum(e, axis=axis, keepdims=True)
    out = (e / np.where(total > 0, total, 1)).view(_Claims)
    out.claimed = wanted
    return out
