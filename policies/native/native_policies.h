/* Native C implementations of the shipped tuner policies: the same logic as
 * policies/<name>.bpf.c, used only as the decision benchmark's baseline and as the oracle of
 * the policy decision tests. Each takes the same context the eBPF program gets. */
#ifndef NCCLBPF_POLICIES_NATIVE_H
#define NCCLBPF_POLICIES_NATIVE_H

#include "ncclbpf/policy.h"

typedef int (*native_policy_fn)(struct ncclbpf_tuner_ctx *ctx);

struct native_policy {
	const char *name; /* policies/<name>.bpf.o */
	native_policy_fn fn;
};

int native_noop(struct ncclbpf_tuner_ctx *ctx);
int native_size_aware(struct ncclbpf_tuner_ctx *ctx);
int native_nvlink_ring_mid(struct ncclbpf_tuner_ctx *ctx);
int native_bad_channels(struct ncclbpf_tuner_ctx *ctx);
int native_lookup_only(struct ncclbpf_tuner_ctx *ctx);
int native_lookup_update(struct ncclbpf_tuner_ctx *ctx);
int native_table_rules(struct ncclbpf_tuner_ctx *ctx);

/* NULL-terminated list of every native policy. */
extern const struct native_policy native_policies[];
const struct native_policy *native_policy_find(const char *name);

#endif
