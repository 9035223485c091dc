/* Latency model of the mock NCCL host: what a collective of n bytes takes with a given
 * algorithm, protocol and channel count under an injectable contention factor c (1 = quiet
 * network, 10 = a 10x contention spike):
 *
 *   t = base[algo][proto] + c * bytes / (ch * bw[proto] * algo_eff) + ovh * ch
 *       + (c - 1) * q * ch^2
 *
 * Quiet: more channels help until the per-channel overhead wins (optimum ~24 channels at
 * 8 MiB). Contended: every channel adds incast pressure (the ch^2 term), so the optimum
 * falls to ~3 channels and latency at many channels explodes. */
#ifndef NCCLBPF_MOCK_PROFILER_MODEL_H
#define NCCLBPF_MOCK_PROFILER_MODEL_H

#include <stdint.h>

uint64_t pm_latency_ns(uint64_t bytes, int algo, int proto, int n_channels, double contention);

#endif
