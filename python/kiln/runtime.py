"""Loads a Kiln artifact (.so from kiln-compile) and runs it on NumPy arrays
or torch tensors through the runtime's C API (runtime/include/kiln/runtime.h)
with ctypes. Contiguous CPU inputs are passed in place and outputs are
written straight into the arrays or tensors returned: no copies."""
import ctypes
import functools
import os
import threading

import numpy as np

ABI_VERSION = 14  # KILN_ABI_VERSION

# kiln_dtype codes and their NumPy types (bfloat16 only through torch).
_NP = {1: np.float32, 2: np.float64, 3: np.int64, 4: np.int32, 5: np.int8, 6: np.uint8,
       7: np.float16, 9: np.int16, 10: np.uint16, 11: np.uint32, 12: np.uint64, 13: np.bool_}
_NP_CODE = {np.dtype(v): k for k, v in _NP.items()}


@functools.lru_cache(maxsize=None)
def _torch_codes():
    import torch
    return {torch.float32: 1, torch.float64: 2, torch.int64: 3, torch.int32: 4, torch.int8: 5,
            torch.uint8: 6, torch.float16: 7, torch.bfloat16: 8, torch.int16: 9,
            torch.uint16: 10, torch.uint32: 11, torch.uint64: 12, torch.bool: 13}


@functools.lru_cache(maxsize=None)
def _torch_dtypes():
    return {v: k for k, v in _torch_codes().items()}


class _TensorDesc(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("symbols", ctypes.POINTER(ctypes.c_int32))]


class _ModelDesc(ctypes.Structure):
    # The leading fields of kiln_model_desc (all this module reads).
    _fields_ = [("abi_version", ctypes.c_uint32), ("num_inputs", ctypes.c_uint32),
                ("num_outputs", ctypes.c_uint32), ("num_kernels", ctypes.c_uint32),
                ("name", ctypes.c_char_p), ("inputs", ctypes.POINTER(_TensorDesc)),
                ("outputs", ctypes.POINTER(_TensorDesc))]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("shape", ctypes.POINTER(ctypes.c_int64))]


class _Options(ctypes.Structure):
    _fields_ = [("num_threads", ctypes.c_int32), ("profile", ctypes.c_int32),
                ("cuda_graphs", ctypes.c_int32), ("cuda_device", ctypes.c_int32)]


class TensorSpec:
    """An input or output as the artifact declares it (symbolic axes hold
    their bound in `shape` and True in `dynamic`)."""

    def __init__(self, d):
        self.name = d.name.decode()
        self.dtype = d.dtype
        self.shape = tuple(d.shape[i] for i in range(d.rank))
        self.dynamic = tuple(bool(d.symbols) and d.symbols[i] >= 0 for i in range(d.rank))

    def __repr__(self):
        dims = ["<=%d" % s if dyn else str(s) for s, dyn in zip(self.shape, self.dynamic)]
        return "%s: dtype %d [%s]" % (self.name, self.dtype, ", ".join(dims))


class KilnError(RuntimeError):
    pass


class Model:
    """A compiled model: `Model("model.so")(x, ...)` returns its outputs as a
    list, torch tensors when the first input is one, NumPy arrays otherwise.

    A Model may be called from several threads: the calls take turns (one
    instance has one activation arena; a lock per Model serializes them).
    Threads that should run at the same time each make their own Model."""

    def __init__(self, path, threads=0):
        self.path = os.path.abspath(path)
        self._lib = ctypes.CDLL(self.path)
        lib = self._lib
        desc_ptr = ctypes.POINTER(_ModelDesc).in_dll(lib, "kiln_model")
        self._desc = desc_ptr.contents
        if self._desc.abi_version != ABI_VERSION:
            raise KilnError("%s was built for runtime ABI %d, this module reads %d"
                            % (path, self._desc.abi_version, ABI_VERSION))
        self.inputs = [TensorSpec(self._desc.inputs[i]) for i in range(self._desc.num_inputs)]
        self.outputs = [TensorSpec(self._desc.outputs[i]) for i in range(self._desc.num_outputs)]
        lib.kiln_instance_create.restype = ctypes.c_int
        lib.kiln_instance_create.argtypes = [ctypes.POINTER(_ModelDesc), ctypes.POINTER(_Options),
                                             ctypes.POINTER(ctypes.c_void_p)]
        lib.kiln_instance_run.restype = ctypes.c_int
        lib.kiln_instance_run.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Tensor), ctypes.c_size_t,
                                          ctypes.POINTER(_Tensor), ctypes.c_size_t]
        lib.kiln_instance_output_shape.restype = ctypes.c_int
        lib.kiln_instance_output_shape.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Tensor),
                                                   ctypes.c_size_t, ctypes.c_uint32,
                                                   ctypes.POINTER(ctypes.c_int64)]
        lib.kiln_instance_last_output_shape.restype = ctypes.c_int
        lib.kiln_instance_last_output_shape.argtypes = [ctypes.c_void_p, ctypes.c_uint32,
                                                        ctypes.POINTER(ctypes.c_int64)]
        lib.kiln_instance_error.restype = ctypes.c_char_p
        lib.kiln_instance_error.argtypes = [ctypes.c_void_p]
        lib.kiln_last_error.restype = ctypes.c_char_p
        lib.kiln_instance_destroy.argtypes = [ctypes.c_void_p]
        self._inst = ctypes.c_void_p()
        opts = _Options(int(threads), 0, 0, 0)
        if lib.kiln_instance_create(desc_ptr, ctypes.byref(opts), ctypes.byref(self._inst)) != 0:
            raise KilnError("kiln: cannot create an instance of %s: %s"
                            % (path, lib.kiln_last_error().decode()))
        # The run's tensor arrays, filled in place on every call (_set).
        self._in_ts = (_Tensor * max(len(self.inputs), 1))()
        self._out_ts = (_Tensor * max(len(self.outputs), 1))()
        self._in_dims = [(None, None)] * len(self.inputs)
        self._out_dims = [(None, None)] * len(self.outputs)
        self._lock = threading.Lock()

    def __del__(self):
        dec = getattr(self, "_decoder", None)
        if dec is not None:  # (before the instance it runs on)
            dec.__del__()
            self._decoder = None
        inst = getattr(self, "_inst", None)
        if inst:
            self._lib.kiln_instance_destroy(inst)
            self._inst = None

    def decoder(self):
        """This model as a decoder with a KV cache (kiln.generate.Decoder):
        step(tokens) -> the last token's logits; made once per Model."""
        if getattr(self, "_decoder", None) is None:
            from .generate import Decoder
            self._decoder = Decoder(self)
        return self._decoder

    def generate(self, ids, max_new_tokens, **sampling):
        """Generates tokens after the prompt `ids` ([n] or [1, n]) with the
        KV cache kept in the runtime; returns int64 [1, n + new]. Greedy by
        default; temperature, top_k, top_p, seed and eos_token_id as
        kiln.generate.Decoder.generate takes them. Timing of the last call:
        model.decoder().last_stats."""
        return self.decoder().generate(ids, max_new_tokens, **sampling)

    def _set(self, ts, dims, i, ptr, code, shape):
        """Points ts[i] at (ptr, code, shape); its shape array is kept in
        dims[i] and rebuilt only when the shape changes (a call's ctypes
        arrays were most of the wrapper's cost: about 10 us of a small
        CNN's 70)."""
        t = ts[i]
        t.data = ptr
        t.dtype = code
        if dims[i][0] != shape:
            arr = (ctypes.c_int64 * max(len(shape), 1))(*shape)
            dims[i] = (shape, arr)
            t.rank = len(shape)
            t.shape = arr

    def __call__(self, *args):
        # (ctypes releases the GIL during the run: without the lock a second
        # thread would rewrite the shared tensor arrays mid-run)
        with self._lock:
            return self._call(args)

    def _call(self, args):
        if len(args) != len(self.inputs):
            raise KilnError("%s takes %d inputs, got %d" % (self.path, len(self.inputs), len(args)))
        use_torch = type(args[0]).__module__.startswith("torch")
        keep = []  # (the contiguous copies, while the run reads them)
        in_ts = self._in_ts
        if use_torch:
            import torch
            codes = _torch_codes()
            torch_dtypes = _torch_dtypes()
            for i, a in enumerate(args):
                if a.device.type != "cpu":
                    raise KilnError("kiln: CPU artifacts take CPU tensors (got %s)" % a.device)
                a = a.detach().contiguous()
                keep.append(a)
                self._set(in_ts, self._in_dims, i, a.data_ptr(), codes[a.dtype], tuple(a.shape))
        else:
            for i, a in enumerate(args):
                # (np.ascontiguousarray would make a 0-d array 1-d)
                a = np.asarray(a)
                if not a.flags.c_contiguous:
                    a = a.copy(order="C")
                keep.append(a)
                code = _NP_CODE.get(a.dtype)
                if code is None:
                    raise KilnError("kiln: no Kiln dtype for %s" % a.dtype)
                self._set(in_ts, self._in_dims, i, a.__array_interface__["data"][0], code,
                          a.shape)
        outs = []
        for k, spec in enumerate(self.outputs):
            shape = spec.shape
            if any(spec.dynamic):
                dims = (ctypes.c_int64 * max(len(shape), 1))()
                if self._lib.kiln_instance_output_shape(self._inst, in_ts, len(args), k, dims) != 0:
                    raise KilnError(self._lib.kiln_instance_error(self._inst).decode())
                shape = tuple(dims[i] for i in range(len(shape)))
            if use_torch:
                o = torch.empty(shape, dtype=torch_dtypes[spec.dtype])
                ptr = o.data_ptr()
            else:
                if spec.dtype not in _NP:
                    raise KilnError("kiln: output %s has a dtype NumPy lacks" % spec.name)
                o = np.empty(shape, dtype=_NP[spec.dtype])
                ptr = o.__array_interface__["data"][0]
            self._set(self._out_ts, self._out_dims, k, ptr, spec.dtype, tuple(shape))
            outs.append(o)
        if self._lib.kiln_instance_run(self._inst, in_ts, len(args), self._out_ts,
                                       len(outs)) != 0:
            raise KilnError(self._lib.kiln_instance_error(self._inst).decode())
        # A data-dependent axis (NonZero's count) was given at its bound: the
        # run's real elements come first, in the shape the run reports.
        for k, spec in enumerate(self.outputs):
            if not any(spec.dynamic):
                continue
            dims = (ctypes.c_int64 * max(len(spec.shape), 1))()
            if self._lib.kiln_instance_last_output_shape(self._inst, k, dims) != 0:
                raise KilnError(self._lib.kiln_instance_error(self._inst).decode())
            shape = tuple(dims[i] for i in range(len(spec.shape)))
            if shape != tuple(outs[k].shape):
                n = int(np.prod(shape))
                outs[k] = outs[k].reshape(-1)[:n].reshape(shape)
        return outs
