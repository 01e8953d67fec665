//===- PlanMemory.h - kiln-plan-memory: the static activation arena -*- C++ -*-===//
//
// After lowering, every intermediate is an arena buffer used by a range of
// launches (schedule order). kiln-plan-memory
//  1. puts kernels in place: an elementwise kernel whose input (read only at
//     the element it writes, same type and size as the output) dies with it
//     writes its output over that input -- one buffer, the kernel's output
//     argument erased (no two arguments alias: they stay noalias);
//  2. gives each arena buffer an offset so that buffers alive at the same
//     launch never overlap, trying several placement orders (largest first,
//     longest-lived first, largest size x lifetime first, schedule order)
//     and keeping the smallest arena; a concat tree (its inputs written
//     into its output) is placed as one block whose ranges are alive at
//     different times;
//  3. records what that is worth (Program::memory): the live peak (the most
//     bytes alive during one launch, which no placement beats), the sum of
//     all intermediates, and a naive plan (first fit in schedule order, no
//     kernel in place).
// Disabled (CodegenOptions::planMemory false): every buffer its own bytes.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_PROGRAM_PLANMEMORY_H
#define KILN_CODEGEN_PROGRAM_PLANMEMORY_H

#include "codegen/program/Program.h"

#include "llvm/Support/raw_ostream.h"

namespace kiln::codegen {

/// Plans the arena of `program` (its launches and buffers complete, their
/// firstUse/lastUse set): sets Buffer::offset of the arena buffers,
/// Program::arenaBytes and Program::memory; rewrites in-place kernels.
void planMemory(Program &program);

/// The plan as text (--emit=memory-plan): the figures, then one line per
/// arena buffer in offset order and one per in-place kernel.
void printMemoryPlan(const Program &program, llvm::raw_ostream &os);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_PROGRAM_PLANMEMORY_H
