/* The NCCL release this process runs in, for behaviour the plugin ABI version does not tell
 * (2.30 and 2.31 both bind tuner v6; 2.29/2.30 use the tuner's channel count unclamped for
 * batched broadcasts, 2.31+ cap it). Looked up at communicator init, never on a decision
 * path. */
#ifndef NCCLBPF_PLUGIN_NCCL_VERSION_H
#define NCCLBPF_PLUGIN_NCCL_VERSION_H

#include <stdint.h>

/* major*10000 + minor*100 + patch (23206 = 2.32.6), or 0 when unknown: what NCCL told the
 * env plugin, else ncclGetVersion from the process (the global scope, or a loaded
 * libnccl.so* when NCCL was opened RTLD_LOCAL). */
uint32_t nccl_version_get(void);
/* The env plugin's init carries NCCL's version: the most direct source. */
void nccl_version_note(uint32_t version);
/* Tests: forget what the env plugin noted. */
void nccl_version_reset(void);

#endif
