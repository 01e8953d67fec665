"""Token generation over a compiled decoder (runtime/include/kiln/generate.h):
`Model(path).generate(ids, max_new_tokens)` and, for a loop of one's own,
`Model(path).decoder()` whose `step(tokens)` returns the last token's logits.
The runtime finds the decoder's tokens, KV caches, attention_mask,
position_ids and logits in the artifact and keeps the cache between steps."""
import ctypes

import numpy as np


class _GenerateOptions(ctypes.Structure):
    _fields_ = [("max_new_tokens", ctypes.c_int32), ("top_k", ctypes.c_int32),
                ("top_p", ctypes.c_float), ("temperature", ctypes.c_float),
                ("seed", ctypes.c_uint64), ("eos_token", ctypes.c_int64)]


class _GenerateStats(ctypes.Structure):
    _fields_ = [("prompt_tokens", ctypes.c_int64), ("prefill_ms", ctypes.c_double),
                ("decode_tokens", ctypes.c_int64), ("decode_ms", ctypes.c_double)]


def _declare(lib):
    if getattr(lib, "_kiln_generate_declared", False):
        return
    vp, i64p = ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64)
    lib.kiln_decoder_create.restype = ctypes.c_int
    lib.kiln_decoder_create.argtypes = [vp, ctypes.POINTER(vp)]
    lib.kiln_decoder_destroy.argtypes = [vp]
    lib.kiln_decoder_step.restype = ctypes.c_int
    lib.kiln_decoder_step.argtypes = [vp, i64p, ctypes.c_size_t,
                                      ctypes.POINTER(ctypes.POINTER(ctypes.c_float))]
    lib.kiln_decoder_reset.argtypes = [vp]
    for f in ("kiln_decoder_length", "kiln_decoder_capacity", "kiln_decoder_vocab_size"):
        getattr(lib, f).restype = ctypes.c_int64
        getattr(lib, f).argtypes = [vp]
    for f in ("kiln_decoder_describe", "kiln_decoder_error"):
        getattr(lib, f).restype = ctypes.c_char_p
        getattr(lib, f).argtypes = [vp]
    lib.kiln_generate.restype = ctypes.c_int
    lib.kiln_generate.argtypes = [vp, i64p, ctypes.c_size_t, ctypes.POINTER(_GenerateOptions),
                                  i64p, ctypes.POINTER(ctypes.c_size_t),
                                  ctypes.POINTER(_GenerateStats)]
    lib._kiln_generate_declared = True


def _tokens(ids):
    """A prompt as contiguous int64 of shape [n] (from [n] or [1, n])."""
    a = np.asarray(ids.cpu().numpy() if hasattr(ids, "cpu") else ids)
    if a.ndim == 2 and a.shape[0] == 1:
        a = a[0]
    if a.ndim != 1 or a.size == 0 or a.dtype.kind not in "iu":
        raise ValueError("kiln: tokens are a non-empty integer array of shape [n] or [1, n]")
    return np.ascontiguousarray(a, dtype=np.int64)


class Decoder:
    """The decoder roles of a Model and its KV cache. `step(tokens)` feeds
    tokens after the cached ones and returns the last one's logits (a
    NumPy array of `vocab_size` floats); `reset()` empties the cache. Made
    by Model.decoder(); calls take the Model's lock."""

    def __init__(self, model):
        from .runtime import KilnError
        self._model, self._lib = model, model._lib
        _declare(self._lib)
        self._ptr = ctypes.c_void_p()
        if self._lib.kiln_decoder_create(model._inst, ctypes.byref(self._ptr)) != 0:
            raise KilnError(self._lib.kiln_decoder_error(None).decode())
        self.vocab_size = self._lib.kiln_decoder_vocab_size(self._ptr)
        self.capacity = self._lib.kiln_decoder_capacity(self._ptr)
        self.description = self._lib.kiln_decoder_describe(self._ptr).decode()
        self.last_stats = None

    def __del__(self):
        if getattr(self, "_ptr", None):
            self._lib.kiln_decoder_destroy(self._ptr)
            self._ptr = None

    def _check(self, rc):
        if rc != 0:
            from .runtime import KilnError
            raise KilnError(self._lib.kiln_decoder_error(self._ptr).decode())

    def __len__(self):
        return self._lib.kiln_decoder_length(self._ptr)

    def reset(self):
        with self._model._lock:
            self._lib.kiln_decoder_reset(self._ptr)

    def step(self, tokens):
        t = _tokens(tokens)
        logits = ctypes.POINTER(ctypes.c_float)()
        with self._model._lock:
            self._check(self._lib.kiln_decoder_step(
                self._ptr, t.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)), t.size,
                ctypes.byref(logits)))
            return np.ctypeslib.as_array(logits, shape=(self.vocab_size,)).copy()

    def generate(self, ids, max_new_tokens, temperature=0.0, top_k=0, top_p=1.0, seed=0,
                 eos_token_id=None):
        """The prompt followed by up to max_new_tokens generated tokens, as
        int64 [1, n + new] (greedy when temperature is 0; else sampled from
        softmax(logits / temperature) restricted to the top_k likeliest and
        then the top_p nucleus, the stream seeded by `seed`). Stops after
        eos_token_id. `last_stats` then holds the prefill and decode times."""
        t = _tokens(ids)
        opts = _GenerateOptions(int(max_new_tokens), int(top_k), float(top_p),
                                float(temperature), int(seed) & (2 ** 64 - 1),
                                -1 if eos_token_id is None else int(eos_token_id))
        out = np.zeros(max(int(max_new_tokens), 1), np.int64)
        count = ctypes.c_size_t()
        stats = _GenerateStats()
        i64p = ctypes.POINTER(ctypes.c_int64)
        with self._model._lock:
            self._check(self._lib.kiln_generate(
                self._ptr, t.ctypes.data_as(i64p), t.size, ctypes.byref(opts),
                out.ctypes.data_as(i64p), ctypes.byref(count), ctypes.byref(stats)))
        self.last_stats = {"prompt_tokens": stats.prompt_tokens, "prefill_ms": stats.prefill_ms,
                           "decode_tokens": stats.decode_tokens, "decode_ms": stats.decode_ms}
        return np.concatenate([t, out[:count.value]])[None, :]


def reference_sample(logits, temperature, top_k, top_p, state):
    """The runtime's sampler (runtime/generate/Sampler.cpp) step by step in
    Python, for tests: returns (token, new splitmix64 state)."""
    logits = np.asarray(logits, np.float32)
    if temperature <= 0:
        finite = np.where(logits > -np.inf, logits, -np.inf)
        return (int(np.argmax(finite)) if np.any(logits > -np.inf) else -1), state
    cands = [(float(v) / float(np.float32(temperature)), i) for i, v in enumerate(logits)
             if v > -np.inf]
    cands.sort(key=lambda c: (-c[0], c[1]))
    if 0 < top_k < len(cands):
        cands = cands[:top_k]
    import math
    top = cands[0][0]
    w = [math.exp(c - top) for c, _ in cands]
    keep, total = len(cands), sum(w)
    p32 = float(np.float32(top_p))
    if 0 < p32 < 1:
        reach, run, n = p32 * total, 0.0, 0
        while n < keep and run < reach:
            run += w[n]
            n += 1
        keep = max(n, 1)
        total = sum(w[:keep])
    mask = 2 ** 64 - 1
    state = (state + 0x9E3779B97F4A7C15) & mask
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    z ^= z >> 31
    u = (z >> 11) * 2.0 ** -53 * total
    run = 0.0
    for k in range(keep):
        run += w[k]
        if u < run:
            return cands[k][1], state
    return cands[keep - 1][1], state
