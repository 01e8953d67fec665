/*===- kiln/runtime.h - the C ABI of Kiln's runtime ------------------------===
 *
 * A compiled model is a `kiln_model_desc` (emitted by kiln-compile) plus
 * this runtime. An application creates an instance (which owns one
 * activation arena and a thread pool), runs it as often as it likes and
 * destroys it. Several instances may run at once from different threads;
 * one instance runs one call at a time (a second thread's call while it
 * runs returns KILN_ERROR_BUSY, nothing else happens).
 * Errors come back as status codes; the message is read with
 * kiln_instance_error() or, for creation failures, kiln_last_error().
 * Nothing here throws or aborts: failed allocations and threads that cannot
 * be started come back as codes too.
 *===----------------------------------------------------------------------===*/
#ifndef KILN_RUNTIME_H
#define KILN_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_ABI_VERSION 14

typedef enum kiln_status {
  KILN_OK = 0,
  KILN_ERROR_INVALID_ARGUMENT = 1, /* null pointer, wrong tensor count */
  KILN_ERROR_DTYPE_MISMATCH = 2,   /* an input/output has the wrong dtype */
  KILN_ERROR_SHAPE_MISMATCH = 3,   /* an input/output has the wrong shape */
  KILN_ERROR_OUT_OF_MEMORY = 4,
  KILN_ERROR_ABI_MISMATCH = 5,     /* model built for another runtime ABI */
  KILN_ERROR_INTERNAL = 6,
  KILN_ERROR_NO_DEVICE = 7,        /* a CUDA model and no usable CUDA device */
  KILN_ERROR_DEVICE = 8,           /* the CUDA driver reported an error */
  KILN_ERROR_BUSY = 9,             /* the instance is running a call on another
                                      thread; this call did nothing */
  KILN_ERROR_INDEX_OUT_OF_RANGE = 10 /* an index tensor of the run (Gather,
                                        GatherElements, GatherND, a scatter)
                                        held a value outside the axis it
                                        indexes; the outputs are undefined */
} kiln_status;

typedef enum kiln_dtype {
  KILN_F32 = 1,
  KILN_F64 = 2,
  KILN_I64 = 3,
  KILN_I32 = 4,
  KILN_I8 = 5,
  KILN_U8 = 6,
  KILN_F16 = 7,  /* IEEE half */
  KILN_BF16 = 8, /* bfloat16: the high 16 bits of an f32 */
  KILN_I16 = 9,
  KILN_U16 = 10,
  KILN_U32 = 11,
  KILN_U64 = 12,
  KILN_BOOL = 13, /* one byte per element, 0 or 1 */
  /* Narrow types (ONNX's; kiln/narrow.h converts them): the caller passes
   * them packed, kernels compute on a wider carrier (kiln_dtype_carrier)
   * and the runtime converts between the two. */
  KILN_F8E4M3FN = 14,   /* float8: 4 exponent bits, 3 mantissa, NaN, no inf */
  KILN_F8E4M3FNUZ = 15, /* float8: bias 8, one NaN (0x80), no -0 */
  KILN_F8E5M2 = 16,     /* float8: 5 exponent bits, 2 mantissa, inf and NaN */
  KILN_F8E5M2FNUZ = 17, /* float8: bias 16, one NaN (0x80), no -0 */
  KILN_U4 = 18,         /* 4-bit integers, two per byte (element 0 low) */
  KILN_I4 = 19,
  KILN_F4E2M1 = 20,     /* float4: 2 exponent bits, 1 mantissa; two per byte */
  KILN_F8E8M0 = 21,     /* float8 scale: a power of two 2^(code - 127); 0xFF NaN */
  KILN_U2 = 22,         /* 2-bit integers, four per byte (element 0 low) */
  KILN_I2 = 23
} kiln_dtype;

/** Bits per element of a kiln_dtype (0 for an unknown code). */
static inline int32_t kiln_dtype_bits(int32_t dtype) {
  switch (dtype) {
  case KILN_F64: case KILN_I64: case KILN_U64: return 64;
  case KILN_F32: case KILN_I32: case KILN_U32: return 32;
  case KILN_F16: case KILN_BF16: case KILN_I16: case KILN_U16: return 16;
  case KILN_I8: case KILN_U8: case KILN_BOOL: case KILN_F8E4M3FN:
  case KILN_F8E4M3FNUZ: case KILN_F8E5M2: case KILN_F8E5M2FNUZ: case KILN_F8E8M0: return 8;
  case KILN_U4: case KILN_I4: case KILN_F4E2M1: return 4;
  case KILN_U2: case KILN_I2: return 2;
  default: return 0;
  }
}

/** Bytes per element of a kiln_dtype of at least 8 bits (0 for an unknown
 *  code and for the 4- and 2-bit types: see kiln_tensor_bytes). */
static inline size_t kiln_dtype_size(int32_t dtype) {
  int32_t bits = kiln_dtype_bits(dtype);
  return bits >= 8 ? (size_t)bits / 8 : 0;
}

/** Bytes of a tensor of n elements of a kiln_dtype (packed sub-byte types
 *  round up to whole bytes). */
static inline size_t kiln_tensor_bytes(int32_t dtype, int64_t n) {
  return (size_t)(((uint64_t)n * (uint64_t)kiln_dtype_bits(dtype) + 7) / 8);
}

/** The type a model's kernels hold a dtype in: the dtype itself, or for a
 *  narrow type f32 (float8, float4) or int8/uint8 (4- and 2-bit integers),
 *  which hold each of its values exactly. */
static inline int32_t kiln_dtype_carrier(int32_t dtype) {
  switch (dtype) {
  case KILN_F8E4M3FN: case KILN_F8E4M3FNUZ: case KILN_F8E5M2: case KILN_F8E5M2FNUZ:
  case KILN_F4E2M1: case KILN_F8E8M0: return KILN_F32;
  case KILN_I4: case KILN_I2: return KILN_I8;
  case KILN_U4: case KILN_U2: return KILN_U8;
  default: return dtype;
  }
}

/** Description of one model input or output. */
typedef struct kiln_tensor_desc {
  const char *name;
  int32_t dtype; /* kiln_dtype */
  int32_t rank;
  const int64_t *shape; /* a symbolic axis holds its symbol's bound */
  /** Null for a static tensor; else per axis the index of the symbolic
   *  dimension it carries (kiln_model_desc.symbol_names), or -1. */
  const int32_t *symbols;
} kiln_tensor_desc;

/** A kernel entry: runs one workgroup of a kernel on its arguments. */
typedef void (*kiln_kernel_fn)(void *const *args, int64_t workgroup);

/** Where a model's kernels run. */
typedef enum kiln_device_kind {
  KILN_DEVICE_CPU = 0,
  KILN_DEVICE_CUDA = 1,     /* CUBIN/PTX images run through the CUDA driver */
  KILN_DEVICE_CUDA_EMU = 2  /* the same CUDA kernels compiled for this CPU */
} kiln_device_kind;

/** A buffer a device kernel reads or writes. */
typedef enum kiln_buffer_kind {
  KILN_BUFFER_INPUT = 0,   /* value: the input's index */
  KILN_BUFFER_OUTPUT = 1,  /* value: the output's index */
  KILN_BUFFER_WEIGHTS = 2, /* value: byte offset in the weights blob */
  KILN_BUFFER_ARENA = 3    /* value: byte offset in the activation arena */
} kiln_buffer_kind;

typedef struct kiln_buffer_ref {
  int32_t kind; /* kiln_buffer_kind */
  int32_t reserved;
  int64_t value;
} kiln_buffer_ref;

/** One kernel launch of a device schedule: kernel<<<grid, block, shared>>>
 *  with the buffers `args` (indices into the program's buffers) followed by
 *  one int64 parameter, `workgroups`. */
typedef struct kiln_device_launch {
  const char *kernel;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_bytes;
  uint32_t num_args;
  const uint32_t *args;
  int64_t workgroups;
} kiln_device_launch;

/** A compiled image of every kernel: CUBIN for sm_<arch>, or PTX for
 *  compute_<arch> (JIT-compiled by the driver on newer GPUs). */
typedef struct kiln_cuda_image {
  uint32_t arch; /* 80 for sm_80 / compute_80 */
  uint32_t is_ptx;
  const void *data;
  uint64_t bytes;
} kiln_cuda_image;

/** The device side of a CUDA or cuda-emu model: buffers, the launch
 *  schedule, and the code (images for CUDA, host entry points for cuda-emu:
 *  emu_blocks[i](args, b) runs block b of launch i, args as the launch's
 *  buffer addresses). The weights are uploaded once per instance. */
typedef struct kiln_device_program {
  uint32_t num_buffers;
  uint32_t num_launches; /* == the model's num_kernels */
  const kiln_buffer_ref *buffers;
  const kiln_device_launch *launches;
  uint32_t num_images;
  uint32_t reserved;
  const kiln_cuda_image *images;
  const kiln_kernel_fn *emu_blocks;
  const void *weights;
} kiln_device_program;

/** How a derived symbol's size S follows from symbol a's size A and b
 *  (a constant, or symbol b's size B). Derived symbols come from ops along
 *  a dynamic axis: a reshape merging it with static axes (MUL_CONST), a
 *  concat (ADD, ADD_CONST), a slice (ADD_CONST, MIN_CONST, SUB,
 *  CEIL_DIV_CONST), two symbols broadcast on one axis (BROADCAST), a
 *  reshape splitting it into parts of a static size (DIV_CONST), a reshape
 *  merging two dynamic axes (MUL). */
typedef enum kiln_symbol_op {
  KILN_SYM_INPUT = 0,          /* a size an input carries */
  KILN_SYM_MUL_CONST = 1,      /* S = A * b */
  KILN_SYM_ADD = 2,            /* S = A + B */
  KILN_SYM_ADD_CONST = 3,      /* S = max(0, A + b) */
  KILN_SYM_MIN_CONST = 4,      /* S = min(A, b) */
  KILN_SYM_SUB = 5,            /* S = max(0, A - B) */
  KILN_SYM_CEIL_DIV_CONST = 6, /* S = ceil(A / b), b > 0 */
  KILN_SYM_BROADCAST = 7,      /* S = A if A == B or B == 1, B if A == 1;
                                  any other pair is a shape error */
  KILN_SYM_DIV_CONST = 8,      /* S = A / b, b > 0; an A that is not a
                                  multiple of b is a shape error (ABI 7) */
  KILN_SYM_COMPUTED = 9,       /* S is computed by the run from the data
                                  (NonZero's count, Compress's length): the
                                  model writes it into hidden output a
                                  (outputs num_outputs + a, one int64 each;
                                  ABI 10). Before the run only its bound is
                                  known. */
  KILN_SYM_MUL = 10            /* S = A * B (ABI 12) */
} kiln_symbol_op;

/** Whether a derivation's b names a symbol (B) rather than a constant. */
#define KILN_SYM_B_IS_SYMBOL(op)                                                   \
  ((op) == KILN_SYM_ADD || (op) == KILN_SYM_SUB || (op) == KILN_SYM_BROADCAST ||   \
   (op) == KILN_SYM_MUL)

/** What kiln-compile emits for a model (`<name>_desc`). */
typedef struct kiln_model_desc {
  uint32_t abi_version;
  uint32_t num_inputs;
  uint32_t num_outputs;
  uint32_t num_kernels;
  const char *name;
  const kiln_tensor_desc *inputs;
  const kiln_tensor_desc *outputs;
  uint64_t arena_bytes;
  uint64_t weights_bytes;
  void (*run)(void *arena, void *const *inputs, void *const *outputs,
              void *pool);
  /** num_kernels entries, in launch order: "kiln_k3_conv" ... */
  const char *const *kernel_names;
  /** num_kernels entries: floating-point operations of each launch. */
  const int64_t *kernel_flops;
  /** kiln_device_kind; for CUDA and cuda-emu models `run` is null and
   *  `device` holds the schedule. */
  int32_t device_kind;
  int32_t reserved;
  const kiln_device_program *device;
  /** Symbolic (dynamic) dimensions of the inputs: names ("batch", or
   *  "input[axis]" for an unnamed one) and bounds. A run takes any size from
   *  1 to the bound on a symbolic axis (the same size wherever one symbol
   *  appears); outputs carrying a symbol take its size. */
  uint32_t num_symbols;
  uint32_t reserved2;
  const char *const *symbol_names;
  const int64_t *symbol_bounds;
  /** Per symbol: 0, or K when the model broadcasts it against a static
   *  size K (then a run gives 1 or K). */
  const int64_t *symbol_pins;
  /** Hidden inputs the runtime appends after the caller's (`run` and device
   *  programs read them as inputs num_inputs...): each is one int64, the
   *  run-time size of symbol symbol_inputs[i] (the masks of reductions over
   *  a symbolic axis; the workgroup counts of CPU kernels that compute only
   *  a run's rows). */
  uint32_t num_symbol_inputs;
  /** Non-zero when kernels check run-time indices: one more hidden int64
   *  input follows the symbol sizes, the fault word. The runtime zeroes it
   *  before each run; a kernel that meets an index outside its axis stores
   *  its site's code there, c in [1, num_fault_sites] (and reads a clamped
   *  element), and the run returns KILN_ERROR_INDEX_OUT_OF_RANGE naming
   *  fault_sites[c - 1]. */
  uint32_t num_fault_sites;
  const int32_t *symbol_inputs;
  /** Null, or per symbol three entries {op, a, b} (kiln_symbol_op): how
   *  the size of a symbol no input carries follows from earlier symbols'
   *  (a < the symbol's index, b too where it names one); {0, -1, 0} for
   *  the inputs' symbols. */
  const int64_t *symbol_derived;
  /** The constants the kernels read (weights_bytes bytes; null when there
   *  are none). CPU models: kiln_instance_create moves the whole 2 MiB
   *  pages inside them onto transparent huge pages once per process, same
   *  addresses and contents (KILN_HUGE_PAGES=0 leaves them). */
  const void *weights;
  /** num_fault_sites entries: what each checking kernel computes, for
   *  which nodes ("gather (node 'Gather_3')"). */
  const char *const *fault_sites;
  /** Hidden outputs after the caller's (`run` and device programs write
   *  them as outputs num_outputs...): one int64 each, the size of a
   *  KILN_SYM_COMPUTED symbol, which the runtime reads after the run. */
  uint32_t num_symbol_outputs;
  uint32_t reserved3;
  /** Null, or num_inputs entries: 1 when some kernel reads the padding of
   *  the input's symbolic axes (a run below the bounds fills it, repeating
   *  the last element), 0 when kernels read only the run's sizes (the
   *  runtime copies those and leaves the padding as it is). */
  const uint8_t *input_padding;
  /** Null, or num_inputs entries: 1 when every kernel reading the input
   *  reads the caller's tensor in its own row-major layout at the run's
   *  sizes (ABI 13): a run below the bounds hands it over as it is, with
   *  no bound-shaped staging copy. */
  const uint8_t *input_compact;
  /** Null, or num_outputs entries: 1 when the one kernel writing the
   *  output writes the caller's tensor in its own layout at the run's
   *  sizes: no staging and no crop after the run. */
  const uint8_t *output_compact;
  /** KV caches kept in place (ABI 14): num_states triples {input, output,
   *  axis}, output being input grown along axis by the run's new positions
   *  (a decoder's past and present). The kernels write only the new
   *  positions into the output's buffer, laid out at the output's bounds,
   *  and never read the input: kiln_instance_run puts the input's values
   *  there first; kiln_instance_run_states leaves them to the caller. */
  uint32_t num_states;
  uint32_t reserved4;
  const int32_t *states;
} kiln_model_desc;

/** The most threads one instance's pool may have. */
#define KILN_MAX_THREADS 1024

/** Options for kiln_instance_create; a null pointer means defaults. */
typedef struct kiln_options {
  int32_t num_threads; /* 0: one per available core; at most
                          KILN_MAX_THREADS */
  int32_t profile;     /* non-zero: time every kernel launch of each run */
  int32_t cuda_graphs; /* CUDA models: capture the whole run (copies and
                          launches) once as a CUDA graph and replay it */
  int32_t cuda_device; /* CUDA models: the device ordinal (default 0) */
} kiln_options;

/** A caller's tensor: data plus the dtype and shape it claims to have. */
typedef struct kiln_tensor {
  void *data;
  int32_t dtype;
  int32_t rank;
  const int64_t *shape;
} kiln_tensor;

typedef struct kiln_instance kiln_instance;

kiln_status kiln_instance_create(const kiln_model_desc *model,
                                 const kiln_options *options,
                                 kiln_instance **out);
/** Checks every tensor's dtype and shape against the model, then runs it.
 *  Output buffers are written in place. With symbolic dimensions, inputs
 *  smaller than the bounds are padded to them (edge values repeated) and the
 *  outputs cropped; kiln_instance_output_shape gives the outputs' shapes.
 *  An output whose size depends on the data (a KILN_SYM_COMPUTED symbol:
 *  NonZero, Compress) is given at its bound on that axis, as
 *  kiln_instance_output_shape states; the run writes its real elements
 *  packed at the start (row-major in the real shape) and
 *  kiln_instance_last_output_shape says what that shape is. */
kiln_status kiln_instance_run(kiln_instance *instance,
                              const kiln_tensor *inputs, size_t num_inputs,
                              const kiln_tensor *outputs, size_t num_outputs);
/** As kiln_instance_run for a caller that keeps the model's states
 *  (kiln_model_desc.states) between runs: each state's output tensor has
 *  the run's shape (the past's length P plus the new positions along the
 *  axis) but its data is laid out at the output's bounds and holds the
 *  past at positions [0, P) of the axis already; the run writes positions
 *  [P, P + T) and nothing else of it. The state's input tensor gives P by
 *  its shape; its data is not read. kiln_decoder (kiln/generate.h) runs
 *  this way: the cache stays where it is. */
kiln_status kiln_instance_run_states(kiln_instance *instance,
                                     const kiln_tensor *inputs, size_t num_inputs,
                                     const kiln_tensor *outputs, size_t num_outputs);
void kiln_instance_destroy(kiln_instance *instance);
/** The shape output `index` has when the model runs on `inputs` (rank
 *  entries written to `shape`): the symbols take the inputs' sizes. Checks
 *  the inputs as kiln_instance_run does. */
kiln_status kiln_instance_output_shape(kiln_instance *instance,
                                       const kiln_tensor *inputs, size_t num_inputs,
                                       uint32_t index, int64_t *shape);
/** The shape output `index` had in the instance's last successful run
 *  (rank entries written to `shape`): the real sizes of data-dependent
 *  axes, which kiln_instance_output_shape knows only as bounds. Fails
 *  before the first run. */
kiln_status kiln_instance_last_output_shape(kiln_instance *instance, uint32_t index,
                                            int64_t *shape);
/** The message of the instance's last failed call ("" if none). */
const char *kiln_instance_error(const kiln_instance *instance);
/** The message of this thread's last failed kiln_instance_create. */
const char *kiln_last_error(void);
const kiln_model_desc *kiln_instance_model(const kiln_instance *instance);
/** Where the instance runs: "cpu (2 threads)", "NVIDIA H100 80GB HBM3 (sm_90,
 *  CUBIN sm_90)", "cuda-emu (...)". */
const char *kiln_instance_device(const kiln_instance *instance);
/** With options.profile set: the milliseconds each kernel launch took in the
 *  last run, in launch order (model->num_kernels entries). */
kiln_status kiln_instance_profile(const kiln_instance *instance,
                                  const double **kernel_ms, size_t *count);

/** Called by generated code: runs fn(args, wg) for wg in [0, n) on the
 *  instance's thread pool and returns when all are done. */
void kiln_rt_parallel_for(void *pool, kiln_kernel_fn fn, void *const *args,
                          int64_t n);

/** Called by generated code: C[M x N] (+)= A[M x K] * B[K x N], row-major,
 *  on the calling thread. Pointers are passed as integers (addresses of f32
 *  data); accumulate: KILN_UK_ACCUMULATE adds to C instead of overwriting
 *  it (below). */
void kiln_uk_sgemm(int64_t M, int64_t N, int64_t K, int64_t a, int64_t lda,
                   int64_t b, int64_t ldb, int64_t c, int64_t ldc,
                   int64_t accumulate);

/** As kiln_uk_sgemm with A packed the way the ukernel reads it (weights,
 *  packed at compile time): rows in groups of 6, each group k-major with its
 *  6 rows interleaved -- element (r, k) at a[(r / 6) * lda + k * 6 + r % 6];
 *  rows past M in the last group are zero. lda >= 6 * K. */
void kiln_uk_sgemm_pa(int64_t M, int64_t N, int64_t K, int64_t a, int64_t lda,
                      int64_t b, int64_t ldb, int64_t c, int64_t ldc,
                      int64_t accumulate);

/** The matrix-product ukernels' `accumulate` argument: bit 0 adds to C
 *  instead of overwriting it; bit 1 (kiln_uk_sgemm_pb, _pbr and their _ep
 *  forms) asks for k blocks as deep as L2 holds -- the whole K while a
 *  32-column panel of it fits a quarter of the core's L2, else blocks of
 *  equal depth -- instead of 128 where K > 192 (AVX-512) or 256 (AVX2;
 *  the portable kernel ignores it). */
#define KILN_UK_ACCUMULATE 1
#define KILN_UK_DEEP_K 2

/** As kiln_uk_sgemm with B packed the way the ukernel reads it (weights,
 *  packed at compile time): 32-column panels ldb floats apart, each k-major
 *  -- element (k, j) at b[(j / 32) * ldb + k * 32 + j % 32] -- columns past
 *  N zero in the last panel; ldb >= 32 * K. Read in place, no copy. */
void kiln_uk_sgemm_pb(int64_t M, int64_t N, int64_t K, int64_t a, int64_t lda,
                      int64_t b, int64_t ldb, int64_t c, int64_t ldc,
                      int64_t accumulate);

/** As kiln_uk_sgemm_pb with A's rows anywhere: `a` is the address of M
 *  row addresses (int64), row i's K floats at the i-th of them; lda is
 *  unused. An NHWC convolution's rows read from its input in place, one
 *  kernel row of taps at a time. */
void kiln_uk_sgemm_pbr(int64_t M, int64_t N, int64_t K, int64_t a, int64_t lda,
                       int64_t b, int64_t ldb, int64_t c, int64_t ldc,
                       int64_t accumulate);

/** kiln_uk_sgemm_pb and _pbr with an epilogue applied as the last k block
 *  of each tile is stored: C = min(max(A * B (+ C) + bias[j], lo), hi),
 *  NaN kept. `bias` is 0 (none) or the address of N floats; lo = -inf and
 *  hi = +inf turn the clamp off. Generated code calls them for a
 *  convolution whose epilogue is its bias and a ReLU, ReLU6 or Clip. */
void kiln_uk_sgemm_pb_ep(int64_t M, int64_t N, int64_t K, int64_t a, int64_t lda,
                         int64_t b, int64_t ldb, int64_t c, int64_t ldc, int64_t accumulate,
                         int64_t bias, float lo, float hi);
void kiln_uk_sgemm_pbr_ep(int64_t M, int64_t N, int64_t K, int64_t a, int64_t lda,
                          int64_t b, int64_t ldb, int64_t c, int64_t ldc, int64_t accumulate,
                          int64_t bias, float lo, float hi);

/** Called by generated code: C[M x N] (+)= A[M x K] * B^T for few rows
 *  (M < 6: matrix-vector products), B given as N rows of K floats, ldb
 *  apart (runtime/cpu/ukernels/Sgemv.cpp): the weights stream once, each
 *  row prefetched ahead. */
void kiln_uk_sgemv_t(int64_t M, int64_t N, int64_t K, int64_t a, int64_t lda, int64_t b,
                     int64_t ldb, int64_t c, int64_t ldc, int64_t accumulate);

/** Called by generated code: one workgroup of a 3x3, stride-1, one-group
 *  NHWC convolution (f32) in Winograd's F(2x2, 3x3) form
 *  (runtime/cpu/ukernels/Winograd.cpp). `in` and `out` are one image
 *  ([H x W x C] and [OH x OW x O]); tiles are 2x2 output pixels, tile rows
 *  [tr0, tr1) (all (OW + 1) / 2 tile columns) and output channels
 *  [c0, c0 + cols) are computed (c0 a multiple of 32), added to `out` when
 *  accumulate != 0. `u`: the transformed weights G g G^T, per position xi
 *  of the 4x4 domain the kiln_uk_sgemm_pb panels of a [C x O] matrix
 *  (ceil(O / 32) * 32 * C floats each). `scratch`: T * C + C + 16 * T *
 *  cols floats, T = (tr1 - tr0) * ((OW + 1) / 2). Each output is stored as
 *  min(max(y + bias[o], lo), hi), NaN kept: `bias` 0 (none) or the address
 *  of O floats; lo = -inf and hi = +inf turn the clamp off. */
void kiln_uk_winograd_f23(int64_t in, int64_t u, int64_t out, int64_t scratch, int64_t H,
                          int64_t W, int64_t C, int64_t padT, int64_t padL, int64_t OH,
                          int64_t OW, int64_t O, int64_t tr0, int64_t tr1, int64_t c0,
                          int64_t cols, int64_t accumulate, int64_t bias, float lo, float hi);

/** As kiln_uk_winograd_f23 in the F(4x4, 3x3) form: tiles of 4x4 output
 *  pixels ((OW + 3) / 4 tile columns), `u` per position xi = 6i + j of the
 *  6x6 domain (G g G^T with Lavin and Gray's G), `scratch` 6 * T * C + C +
 *  36 * T * cols floats, T = (tr1 - tr0) * ((OW + 3) / 4). */
void kiln_uk_winograd_f43(int64_t in, int64_t u, int64_t out, int64_t scratch, int64_t H,
                          int64_t W, int64_t C, int64_t padT, int64_t padL, int64_t OH,
                          int64_t OW, int64_t O, int64_t tr0, int64_t tr1, int64_t c0,
                          int64_t cols, int64_t accumulate, int64_t bias, float lo, float hi);

/** Called by generated code for fp16 contractions on the CPU
 *  (--precision=fp16): as kiln_uk_sgemm with B IEEE half (binary16),
 *  row-major, ldb in half elements; B is widened to f32 as it is read, so
 *  products and sums are f32. */
void kiln_uk_hgemm(int64_t M, int64_t N, int64_t K, int64_t a, int64_t lda,
                   int64_t b, int64_t ldb, int64_t c, int64_t ldc,
                   int64_t accumulate);

/** As kiln_uk_sgemm_pa with the packed A IEEE half (lda in half elements)
 *  and B f32. */
void kiln_uk_hgemm_pa(int64_t M, int64_t N, int64_t K, int64_t a, int64_t lda,
                      int64_t b, int64_t ldb, int64_t c, int64_t ldc,
                      int64_t accumulate);

/** The ukernel implementation this process uses, f32 and fp16 alike:
 *  "avx512", "avx2" (with FMA and F16C) or "portable" -- the best the CPU
 *  has, or the one $KILN_UKERNEL names when the CPU has it (read once, at
 *  load). */
const char *kiln_uk_sgemm_impl(void);

/** Called by generated code for bf16 contractions (--precision=bf16): as
 *  kiln_uk_sgemm, accumulating in f32, with one operand bf16 packed at
 *  compile time and the other f32, rounded to bf16 (nearest even) by the
 *  ukernel. K is padded to an even Kp with zeros; a pair is the bf16 values
 *  of k = 2p and 2p + 1 (low half first), 32 bits.
 *  _pa: A packed as bf16 rows lda elements apart (lda even, >= Kp): element
 *  (r, k) at r * lda + k, so a row's pairs are adjacent 32-bit words; only
 *  M rows are read. B f32 row-major. A call's A starts at an even k. */
void kiln_uk_sbgemm_pa(int64_t M, int64_t N, int64_t K, int64_t a, int64_t lda,
                       int64_t b, int64_t ldb, int64_t c, int64_t ldc,
                       int64_t accumulate);

/** _pb: A f32 row-major; B packed in 32-column panels ldb bf16 elements
 *  apart (ldb >= 32 * Kp), each panel pair-major with its 32 columns
 *  interleaved: element (k, j) at ((j / 32) * ldb + ((k / 2) * 32 + j % 32)
 *  * 2 + k % 2); columns past N zero. A call's B starts at an even k. */
void kiln_uk_sbgemm_pb(int64_t M, int64_t N, int64_t K, int64_t a, int64_t lda,
                       int64_t b, int64_t ldb, int64_t c, int64_t ldc,
                       int64_t accumulate);

/** _pb_a16: as _pb with A bf16 (already rounded), row-major lda elements
 *  apart (lda even), starting at an even k; when K is odd, A's element K of
 *  each row (the last pair's upper half) is read and must be zero. */
void kiln_uk_sbgemm_pb_a16(int64_t M, int64_t N, int64_t K, int64_t a, int64_t lda,
                           int64_t b, int64_t ldb, int64_t c, int64_t ldc,
                           int64_t accumulate);

/** The bf16 ukernels' implementation: "amx" (TDPBF16PS on AMX tiles, where
 *  the CPU has AMX-BF16 and Linux grants the tile state), "avx512bf16"
 *  (VDPBF16PS; KILN_UKERNEL=avx512bf16 forces it on an AMX CPU), "avx512"
 *  (the pairs split into f32 FMAs on AVX-512F; KILN_UKERNEL=avx512 forces
 *  it), or the f32 fallback on the f32 ukernel ("f32-avx2", "f32-portable";
 *  KILN_UKERNEL=avx2|portable). */
const char *kiln_uk_sbgemm_impl(void);

/** Called by generated code for 8-bit integer contractions:
 *  C[M x N] (+)= (A - a_zero)[M x K] * (B + b_shift)[K x N] in int32, exact
 *  (sums wrap past 2^31 as int32 ones do). A: M rows of K 8-bit integers lda
 *  bytes apart, unsigned, or signed with KILN_UK_A_INT8 in flags; a_zero is
 *  subtracted from each. B: signed 8-bit values packed at compile time in
 *  16-column panels ldb bytes apart (ldb >= 64 * Kq + 64, Kq = K / 4
 *  rounded up), each quad-major with its 16 columns' 4 bytes of k side by
 *  side -- element (k, j) at byte (j / 16) * ldb + (k / 4) * 64 + (j % 16) *
 *  4 + k % 4, zero past K and past the last column -- then the panel's 16
 *  column sums (int32, the sum over k of B(k, j)) at byte 64 * Kq. b_shift:
 *  added to every element of B (the weights less their zero point are B +
 *  b_shift; 0 where those fit 8 signed bits). C: int32, ldc elements apart.
 *  flags: KILN_UK_ACCUMULATE adds to C; KILN_UK_A_INT8. */
void kiln_uk_q8gemm_pq(int64_t M, int64_t N, int64_t K, int64_t a, int64_t lda,
                       int64_t a_zero, int64_t b, int64_t ldb, int64_t b_shift, int64_t c,
                       int64_t ldc, int64_t flags);
#define KILN_UK_A_INT8 4

/** Called by generated code for 8-bit convolutions (kiln.conv_integer): the
 *  rows of output pixels [row0, row1) of the implicit product, each
 *  G * KH * KW * (C / G) bytes at col + row * that, k = (g * KH * KW + ky *
 *  KW + kx) * (C / G) + c; reads outside the input are `zero`. `in`: the
 *  8-bit input, NHWC when nhwc is 1, else NCHW ([N, C, H, W]). */
void kiln_uk_conv_rows8(int64_t in, int64_t col, int64_t row0, int64_t row1, int64_t H, int64_t W,
                     int64_t C, int64_t OH, int64_t OW, int64_t KH, int64_t KW, int64_t sh,
                     int64_t sw, int64_t dh, int64_t dw, int64_t pad_top, int64_t pad_left,
                     int64_t G, int64_t nhwc, int64_t zero);

/** The 8-bit ukernel's implementation: "avx512vnni" (VPDPBUSD on 4 bytes
 *  of k at a time), "avx2" (VPMADDWD on the bytes widened to 16 bits;
 *  KILN_UKERNEL=avx2 forces it) or "portable" (KILN_UKERNEL=portable). */
const char *kiln_uk_q8gemm_impl(void);

/** Called by generated code for products on block-quantized weights
 *  (kiln.matmul_nbits): C[M x N] (+)= A[M x K] * W^T in f32, A f32 rows lda
 *  apart, C ldc apart, W's N columns of K codes with a scale s and zero
 *  point z per column and block of `block` k (a multiple of 32; the last
 *  block may be short), W = (code - z) * s. Packed at compile time in quads
 *  of 4 columns (columns past N zero): a quad is ceil(K / 32) units of 32 k,
 *  each the 4 columns' codes one after the other, 16 bytes per column when
 *  bits <= 4 (byte j: k = j in the low nibble, k = 16 + j in the high) and
 *  32 when bits > 4 (byte j: k = j); codes past K zero. `scales`: per quad
 *  and block 8 floats, the 4 columns' s then their z. `w` and `scales`
 *  start at the quad of C's column 0. flags: KILN_UK_ACCUMULATE adds to C. */
void kiln_uk_bqgemm(int64_t M, int64_t N, int64_t K, int64_t a, int64_t lda, int64_t w,
                    int64_t scales, int64_t c, int64_t ldc, int64_t bits, int64_t block,
                    int64_t flags);

/** The block-quantized ukernel's implementation: "avx2" or "portable"
 *  (KILN_UKERNEL=portable forces it). */
const char *kiln_uk_bqgemm_impl(void);

#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_H */
