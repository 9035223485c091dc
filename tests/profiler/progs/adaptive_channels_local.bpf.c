/* adaptive_channels_local: the rank-local predecessor of policies/adaptive_channels.bpf.c,
 * kept as a test program for the profiler -> latency map -> tuner loop. It decides from THIS
 * rank's statistics, so the verifier rejects it (E-RANK-LOCAL) unless
 * NCCLBPF_RANK_LOCAL=allow: never ship a policy like this (ranks deciding differently hang
 * NCCL); policies/adaptive_channels.bpf.c does the same on agreed maps.
 *
 * Closed-loop channel tuning from the profiler's latency statistics.
 *
 * Per (communicator, collective, size bucket):
 *  - the first call keeps NCCL's choice, so the profiler learns the communicator's channel
 *    count (ctx->max_channels from then on);
 *  - then start conservative at 2 channels and hill-climb: after every window of 3
 *    samples measured at the current channel count, keep moving (+2) while the window's
 *    mean latency improves by >= 3 %, reverse direction when it does not;
 *  - contention: a window mean more than 2x the previous one means the network got
 *    congested: halve the channel count and keep going down while that helps;
 *  - recovery falls out of the climb: when the spike ends latency drops, the climb
 *    resumes upward.
 * Samples are read from the built-in ncclbpf_latency map (last_ns, n_channels_last). */
#include <ncclbpf/policy.h>

#define AC_START 2
#define AC_STEP 2
#define AC_MIN 2
#define AC_WINDOW 3
#define AC_IMPROVE_PCT 3
#define AC_SPIKE_X 2
#define AC_ADOPT_AFTER 8 /* samples at another count in a row: adopt what NCCL ran */

NCCLBPF_LATENCY_MAP;

struct ac_state {
	__u64 seen;     /* latency-map count consumed so far */
	__u64 sum_ns;   /* window sum */
	__u64 prev_avg; /* previous window's mean, 0 = none */
	__u32 n;        /* samples in the window */
	__s32 ch;       /* current channel count */
	__s32 dir;      /* +1 / -1 */
	__u32 mismatch; /* consecutive samples at another channel count */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct ncclbpf_latency_key);
	__type(value, struct ac_state);
} ac_state SEC(".maps");

SEC("tuner")
int adaptive_channels_local(struct ncclbpf_tuner_ctx *ctx)
{
	struct ncclbpf_latency_key key = {};
	key.comm_id = ctx->comm_id;
	key.coll_type = ctx->coll_type;
	key.size_bucket = ncclbpf_size_bucket(ctx->n_bytes);

	struct ac_state *st = bpf_map_lookup_elem(&ac_state, &key);
	if (!st) {
		struct ac_state init = {};
		init.ch = AC_START;
		init.dir = 1;
		bpf_map_update_elem(&ac_state, &key, &init, BPF_NOEXIST);
		return 0; /* calibration call: NCCL's own channel count */
	}
	__s32 max = ctx->max_channels ? (__s32)ctx->max_channels : 64;
	if (max > NCCLBPF_MAX_CHANNELS)
		max = NCCLBPF_MAX_CHANNELS;

	struct ncclbpf_latency_stats *lat = bpf_map_lookup_elem(&ncclbpf_latency, &key);
	if (lat && lat->count > st->seen) {
		st->seen = lat->count;
		if (lat->n_channels_last == (__u64)st->ch) {
			st->sum_ns += lat->last_ns;
			st->n++;
			st->mismatch = 0;
		} else if (++st->mismatch >= AC_ADOPT_AFTER && lat->n_channels_last > 0 &&
			   lat->n_channels_last <= NCCLBPF_MAX_CHANNELS) {
			st->ch = (__s32)lat->n_channels_last;
			st->sum_ns = 0;
			st->n = 0;
			st->mismatch = 0;
		}
	}
	if (st->n >= AC_WINDOW) {
		__u64 avg = st->sum_ns / st->n;
		__u64 prev = st->prev_avg;
		__s32 ch = st->ch;
		if (prev && avg > prev * AC_SPIKE_X) {
			ch = (__s32)((__u32)ch >> 1); /* ch >= 2 here; BPF has no signed div before v4 */
			st->dir = -1;
		} else if (!prev || avg * 100 < prev * (100 - AC_IMPROVE_PCT)) {
			ch += st->dir * AC_STEP;
		} else {
			st->dir = -st->dir;
			ch += st->dir * AC_STEP;
		}
		if (ch <= AC_MIN) {
			ch = AC_MIN;
			st->dir = 1;
		}
		if (ch >= max) {
			ch = max;
			st->dir = -1;
		}
		st->ch = ch;
		st->prev_avg = avg;
		st->sum_ns = 0;
		st->n = 0;
	}
	ctx->n_channels = st->ch;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
