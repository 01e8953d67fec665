//===- DeviceRun.h - running a CUDA or cuda-emu model -----------*- C++ -*-===//
//
// One instance's device side: device memory (the activation arena, the
// weights uploaded once, the inputs and outputs), pinned host staging, one
// stream, and the model's launch schedule (kiln_device_program) with every
// kernel's parameters resolved once at creation. A run copies the inputs
// in, launches every kernel in order, copies the outputs back and waits --
// or, with cuda_graphs, replays a CUDA graph captured on the first run.
//
// The same code drives two backends: the CUDA driver (CUBIN/PTX images,
// libcuda loaded with dlopen) and the emulation (cuda-emu artifacts: host
// memory, each launch's blocks run on the instance's thread pool through
// the `<kernel>_block` entry points). So CI, which has no GPU, runs the
// launch path a GPU runs.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CUDA_DEVICERUN_H
#define KILN_RUNTIME_CUDA_DEVICERUN_H

#include "kiln/runtime.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln::rt {

class ThreadPool;
class DeviceBackend;

class DeviceRun {
public:
  /// Null with `status` and `error` set when the device or the model's
  /// resources cannot be set up (KILN_ERROR_NO_DEVICE without a GPU).
  static std::unique_ptr<DeviceRun> create(const kiln_model_desc &model,
                                           const kiln_options &options, ThreadPool &pool,
                                           kiln_status &status, std::string &error);
  ~DeviceRun();

  /// inputs/outputs: the caller's host buffers, already checked.
  kiln_status run(void *const *inputs, void *const *outputs, std::string &error);
  /// Per-launch milliseconds of the last run (options.profile).
  const std::vector<double> &profile() const { return launchMs; }
  /// "NVIDIA H100 80GB HBM3 (sm_90, CUBIN)" or "cuda-emu (N host threads)".
  const std::string &deviceName() const;

private:
  DeviceRun() = default;
  bool enqueue(bool timed, std::string &error);

  const kiln_model_desc *model = nullptr;
  std::unique_ptr<DeviceBackend> backend;
  uint64_t arena = 0, weights = 0;
  std::vector<uint64_t> inDev, outDev;
  std::vector<void *> inHost, outHost;
  std::vector<size_t> inBytes, outBytes;
  /// The fault word (kiln_model_desc::num_fault_sites): the last hidden
  /// input, read back after each run into this pinned word; null: none.
  void *faultHost = nullptr;
  /// Per launch: parameter values (buffer addresses, then workgroups).
  std::vector<std::vector<uint64_t>> values;
  bool profiling = false, graphs = false, captured = false;
  std::vector<double> launchMs;
};

} // namespace kiln::rt

#endif // KILN_RUNTIME_CUDA_DEVICERUN_H
