/* Test program for the env hook:
 *   NCCL_BUFFSIZE: the largest numeric candidate the file lists
 *   NCCL_PROTO:    the first candidate on NCCL >= 2.28, else the default */
#include <ncclbpf/policy.h>

#define HASH_NCCL_BUFFSIZE 0xb78beb3e3743fcbeull /* FNV-1a 64 */
#define HASH_NCCL_PROTO 0x62f906e3896936d8ull

SEC("env")
int env_pick(struct ncclbpf_env_ctx *ctx)
{
	if (ctx->name_hash == HASH_NCCL_BUFFSIZE) {
		__s64 best = -1;
		int idx = -1;
		for (int i = 0; i < NCCLBPF_ENV_MAX_CANDIDATES; i++) {
			if ((__u32)i >= ctx->n_candidates)
				break;
			if (ctx->cand_num[i] > best) {
				best = ctx->cand_num[i];
				idx = i;
			}
		}
		ctx->value_index = idx;
	} else if (ctx->name_hash == HASH_NCCL_PROTO && ctx->nccl_version >= 22800) {
		ctx->value_index = 0;
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
