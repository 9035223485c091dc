/* Learned channel count per communicator: the profiler records the channel count NCCL
 * actually ran (from Coll events), the tuner shim reads it to fill
 * ncclbpf_tuner_ctx.max_channels and to clamp n_channels. Lock-free fixed table (open
 * addressing on comm_id, relaxed atomics): safe from any thread, no allocation. */
#ifndef NCCLBPF_PLUGIN_COMM_CHANNELS_H
#define NCCLBPF_PLUGIN_COMM_CHANNELS_H

#include <stdint.h>

/* Records the largest channel count seen for comm_id (n in 1..64; others ignored). */
void comm_channels_record(uint64_t comm_id, int n);
/* The learned channel count, or 0 if unknown. */
int comm_channels_get(uint64_t comm_id);
/* Forget everything (tests). */
void comm_channels_reset(void);

#endif
