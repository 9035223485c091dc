/* The native baseline of the tuner decision benchmarks (`ncclbpf bench`,
 * bench_cpu_dispatch): an ncclTunerPlugin_v5 getCollInfo that mirrors the plugin's
 * (src/plugin/tuner/tuner_core.c) with the eBPF chain replaced by a direct call of a native
 * C policy (policies/native/): the same context, the same translation, the same pinning of
 * NCCL's choice. What the plugin costs beyond this is the cost of running eBPF. */
#ifndef NCCLBPF_BENCH_NATIVE_TUNER_SHIM_H
#define NCCLBPF_BENCH_NATIVE_TUNER_SHIM_H

#include "native_policies.h"
#include "plugin/tuner/nccl_tuner_abi.h"

/* The policy every native_tuner_shim communicator runs (set before init). */
extern native_policy_fn native_shim_policy;
extern const struct nb_nccl_tuner_v5 native_tuner_shim;

#endif
