// RUN: kiln-compile %s --precision=auto -o %t.so --report %t.md
// RUN: FileCheck %s < %t.md
// RUN: kiln-compile %s --precision=auto --tolerance=1e-9 -o %t.so --report %t.json
// RUN: %python -c "import json; p = json.load(open('%t.json'))['precision']; assert p['mode'] == 'auto' and p['lowered'] == 0 and p['contractions'] == 3 and p['relative_error'] == 0, p"
// RUN: %python -c "import numpy as np; np.save('%t.x.npy', np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32))"
// RUN: kiln-compile %s --precision=bf16 --calibrate x=%t.x.npy -o %t.so --report %t.bf16.md
// RUN: FileCheck %s --check-prefix=MEASURED < %t.bf16.md
// RUN: kiln-compile %s --precision=auto --auto-trials=2 -o %t.so --report %t.few.md
// RUN: FileCheck %s --check-prefix=FEW < %t.few.md
// RUN: kiln-compile %s --precision=auto --target=cuda-emu -o %t.emu.so --report %t.emu.md
// RUN: FileCheck %s --check-prefix=EMU < %t.emu.md
// RUN: kiln-compile %s --precision=auto --keep-fp32=c -o %t.so --report %t.keep.md
// RUN: FileCheck %s --check-prefix=KEEP < %t.keep.md
// RUN: not kiln-compile %s --precision=auto --calibrate y=%t.x.npy -o %t.so 2>&1 | FileCheck %s --check-prefix=BADNAME
// RUN: not kiln-compile %s --precision=fp32 --calibrate x=%t.x.npy -o %t.so 2>&1 | FileCheck %s --check-prefix=FP32
// RUN: not kiln-compile %s --precision=auto --tolerance=0 -o %t.so 2>&1 | FileCheck %s --check-prefix=TOL

// --precision=auto: trial builds on random calibration inputs choose which
// contractions compute in bf16. y = (x Wa - x Wb) Wc with Wa and Wb equal
// to bf16 precision: the difference cancels, so rounding either of the
// first two products (or x for them) loses it, while the last product
// rounds fine. The search keeps the first two fp32 and lowers the third:
// all lowered (out), prefix [a] (out) -> a kept; [b, c] (out), [b] (out) ->
// b kept; [c] (within): 6 builds with the fp32 reference.
// CHECK: | kiln_k{{[0-9]+}}_matmul | matmul | b | {{.*}} | fp32 |
// CHECK: | kiln_k{{[0-9]+}}_matmul | matmul+sub+cast+cast | a, c | {{.*}} | fp32 |
// CHECK: | kiln_k{{[0-9]+}}_matmul | matmul+cast+cast | c | {{.*}} | bf16 |
// CHECK: - precision (--precision=auto, --tolerance 1.0e-02): 1 of 3 contractions lowered {{.*}}; on random normal inputs (seeded): relative error {{[0-9.]+}}e-0{{[3-9]}} against Kiln's fp32 build {{.*}}, top-1 agreement {{[0-9]}}/4; 6 trial builds

// A fixed precision measured on given inputs: everything lowered, the
// cancellation lost (relative error of order 1).
// MEASURED: - precision (--precision=bf16): 3 of 3 contractions lowered {{.*}}; on the --calibrate inputs: relative error {{[0-9.]+}}e{{[-+]}}0{{[01]}} against Kiln's fp32 build
// MEASURED-SAME: 2 trial builds

// Out of trials (--auto-trials=2: all lowered and prefix [a], both out; with
// the reference 3 builds): what is undecided stays fp32.
// FEW: - precision (--precision=auto, --tolerance 1.0e-02): 0 of 3 contractions lowered {{.*}}; 3 trial builds

// The CUDA form (tensor-core bf16 products; trial builds through the
// emulation) makes the same choice.
// EMU: | kiln_k{{[0-9]+}}_matmul | matmul | c | row-major | bf16 | bf16 |
// EMU: - precision (--precision=auto, --tolerance 1.0e-02): 1 of 3 contractions lowered

// --keep-fp32 holds in every trial: with c kept by name nothing else can
// lower, so nothing does.
// KEEP: - precision (--precision=auto, --tolerance 1.0e-02): 0 of 3 contractions lowered

// BADNAME: error: {{.*}}--calibrate names 'y', which is not an input of the model
// FP32: error: --calibrate needs --precision=bf16, fp16, auto or int8 (fp32 is the reference)
// TOL: error: --tolerance must be positive

func.func @main(%x: tensor<4x8xf32> {kiln.name = "x"}) -> (tensor<4x8xf32> {kiln.name = "y"}) {
  %wa = kiln.constant dense<0.3> : tensor<8x8xf32>
  %wb = kiln.constant dense<0.3001> : tensor<8x8xf32>
  %wc = kiln.constant dense<0.5> : tensor<8x8xf32>
  %a = kiln.matmul %x, %wa : tensor<4x8xf32>, tensor<8x8xf32> loc("a")
  %b = kiln.matmul %x, %wb : tensor<4x8xf32>, tensor<8x8xf32> loc("b")
  %d = kiln.sub %a, %b : tensor<4x8xf32>, tensor<4x8xf32>
  %c = kiln.matmul %d, %wc : tensor<4x8xf32>, tensor<8x8xf32> loc("c")
  return %c : tensor<4x8xf32>
}
