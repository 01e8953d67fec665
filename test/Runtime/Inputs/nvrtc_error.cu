// A CUDA source with an error on line 4 (for kiln-nvrtc's diagnostics).
extern "C" __global__ void broken(float *x) {
  int i = threadIdx.x;
  x[i] = no_such_value;
}
