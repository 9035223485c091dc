/* Translation of a policy decision into NCCL's cost table (rules in tuner.h). Pure
 * functions, no allocation, no logging: the decision path calls them for every collective. */
#include <float.h>
#include <stdbool.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "plugin/tuner/tuner.h"

static const char *const issue_names[TUNER_ISSUE_COUNT] = {
	[TUNER_ISSUE_FAULT] = "policy fault",
	[TUNER_ISSUE_BAD_ALGO] = "algorithm out of range",
	[TUNER_ISSUE_BAD_PROTO] = "protocol out of range",
	[TUNER_ISSUE_UNAVAILABLE] = "algorithm/protocol marked unavailable by NCCL",
	[TUNER_ISSUE_NO_PROTO_FOR_ALGO] = "no protocol available for the requested algorithm",
	[TUNER_ISSUE_NO_ALGO_FOR_PROTO] = "no algorithm available for the requested protocol",
	[TUNER_ISSUE_BAD_CHANNELS] = "negative channel count",
	[TUNER_ISSUE_CHANNELS_CLAMPED] = "channel count clamped",
	[TUNER_ISSUE_BAD_CHUNK] = "chunk size below the protocol grain",
	[TUNER_ISSUE_CHANNELS_COLLNET] = "channel count not applied to CollNet (NCCL uses it unclamped)",
	[TUNER_ISSUE_BAD_CONSTANT] = "tuning constant out of bounds (tuner/init)",
	[TUNER_ISSUE_NO_COMPCAP_ROW] = "compute-capability row 4 written, but NCCL's constants "
				       "have 4 rows (tuner ABI v5/v6; tuner/init)",
	[TUNER_ISSUE_CHANNELS_UNCLAMPED] = "channel count not applied to AllGather: NCCL 2.29/2.30 "
					   "batch broadcasts as an AllGather and use the tuner's "
					   "count there without clamping it to the communicator's "
					   "channels",
};

uint32_t tuner_channels_unclamped_mask(unsigned abi_version, uint32_t nccl_version,
				       const char *allgatherv_enable)
{
	if (allgatherv_enable && allgatherv_enable[0] == '0' && !allgatherv_enable[1])
		return 0; /* no broadcast batching */
	bool batching = nccl_version ? nccl_version >= 22900 && nccl_version < 23100
				     : abi_version == 5 || abi_version == 6;
	return batching ? 1u << NCCLBPF_COLL_ALLGATHER : 0;
}

const char *tuner_issue_name(enum tuner_issue issue)
{
	if ((unsigned)issue >= TUNER_ISSUE_COUNT)
		return "unknown";
	return issue_names[issue];
}

/* NCCL accepts an entry iff it is >= 0 (NaN and negatives are skipped). */
static inline int entry_available(float v)
{
	return v >= 0.0f;
}

static void ctx_fill_outputs(struct ncclbpf_tuner_ctx *ctx)
{
	/* algo and proto (both KEEP = -1) as one word: tuner_ctx_keeps reads them so */
	const uint64_t keep2 = ~0ull;
	memcpy(&ctx->algo, &keep2, sizeof(keep2));
	ctx->n_channels = NCCLBPF_CHANNELS_KEEP;
	ctx->comm_seq = 0;
	ctx->band_seq = 0;
}

#if defined(__SSE2__)
/* The table is exactly 7 x 3 (every NCCL release the tuner ABIs cover): the costs are one
 * copy, the masks and NCCL's choice are computed four entries at a time without a branch
 * per entry (the scalar loop's "available?" branches mispredicted on real tables: ~8 ns).
 * NCCL's choice: the smallest eligible value (>= 0 and < FLT_MAX, exactly the scan in
 * tuner_nccl_select), then the lowest index holding it (+0 and -0 compare equal there as
 * in the scan). */
struct sse_acc {
	__m128 zero, fmax, inf;
	uint32_t avail, elig, zeros;
};

/* Entries 4k..4k+3 in v: their bits, and v with non-eligible entries as +inf. */
static inline __attribute__((always_inline)) __m128 sse_chunk(struct sse_acc *s, __m128 v, int k)
{
	__m128 ge = _mm_cmpge_ps(v, s->zero);
	__m128 el = _mm_and_ps(ge, _mm_cmplt_ps(v, s->fmax));
	s->avail |= (uint32_t)_mm_movemask_ps(ge) << (4 * k);
	s->elig |= (uint32_t)_mm_movemask_ps(el) << (4 * k);
	s->zeros |= (uint32_t)_mm_movemask_ps(_mm_cmpeq_ps(v, s->zero)) << (4 * k);
	return _mm_or_ps(_mm_and_ps(el, v), _mm_andnot_ps(el, s->inf));
}

static void fill_exact_sse2(struct ncclbpf_tuner_ctx *ctx, const float *t,
			    struct tuner_fill_info *info)
{
	enum { N = NCCLBPF_NUM_ALGOS * NCCLBPF_NUM_PROTOS };
	_Static_assert(N == 21, "five vectors and one entry");
	struct sse_acc s = { _mm_setzero_ps(), _mm_set1_ps(FLT_MAX), _mm_set1_ps(__builtin_inff()),
			     0, 0, 0 };

	memcpy(ctx->cost, t, sizeof(ctx->cost));
	/* written out: a loop kept w[] in memory and cost ~2x (measured) */
	__m128 w0 = sse_chunk(&s, _mm_loadu_ps(t), 0);
	__m128 w1 = sse_chunk(&s, _mm_loadu_ps(t + 4), 1);
	__m128 w2 = sse_chunk(&s, _mm_loadu_ps(t + 8), 2);
	__m128 w3 = sse_chunk(&s, _mm_loadu_ps(t + 12), 3);
	__m128 w4 = sse_chunk(&s, _mm_loadu_ps(t + 16), 4);
	/* entry 20 and three unavailable pads */
	__m128 w5 = sse_chunk(&s, _mm_set_ps(-1.0f, -1.0f, -1.0f, t[20]), 5);
	__m128 m = _mm_min_ps(_mm_min_ps(_mm_min_ps(w0, w1), _mm_min_ps(w2, w3)),
			      _mm_min_ps(w4, w5));
	m = _mm_min_ps(m, _mm_shuffle_ps(m, m, _MM_SHUFFLE(1, 0, 3, 2)));
	m = _mm_min_ps(m, _mm_shuffle_ps(m, m, _MM_SHUFFLE(2, 3, 0, 1)));
	uint32_t eq = (uint32_t)_mm_movemask_ps(_mm_cmpeq_ps(w0, m)) |
		      (uint32_t)_mm_movemask_ps(_mm_cmpeq_ps(w1, m)) << 4 |
		      (uint32_t)_mm_movemask_ps(_mm_cmpeq_ps(w2, m)) << 8 |
		      (uint32_t)_mm_movemask_ps(_mm_cmpeq_ps(w3, m)) << 12 |
		      (uint32_t)_mm_movemask_ps(_mm_cmpeq_ps(w4, m)) << 16 |
		      (uint32_t)_mm_movemask_ps(_mm_cmpeq_ps(w5, m)) << 20;
	eq &= s.elig;
	ctx->avail_mask = s.avail & ((1u << N) - 1);
	info->best = eq ? __builtin_ctz(eq) : -1;
	info->zero_mask = s.zeros & ((1u << N) - 1);
	info->exact_dims = true;
}
#endif

void tuner_ctx_fill_info(struct ncclbpf_tuner_ctx *ctx, const float *table, int num_algo,
			 int num_proto, struct tuner_fill_info *info)
{
#if defined(__SSE2__)
	if (num_algo == NCCLBPF_NUM_ALGOS && num_proto == NCCLBPF_NUM_PROTOS) {
		fill_exact_sse2(ctx, table, info);
		ctx_fill_outputs(ctx);
		return;
	}
#endif
	uint32_t mask = 0;
	for (int a = 0; a < NCCLBPF_NUM_ALGOS; a++) {
		for (int p = 0; p < NCCLBPF_NUM_PROTOS; p++) {
			float v = NB_NCCL_ALGO_PROTO_IGNORE;
			if (a < num_algo && p < num_proto)
				v = table[a * num_proto + p];
			ctx->cost[a][p] = v;
			if (entry_available(v))
				mask |= 1u << (a * NCCLBPF_NUM_PROTOS + p);
		}
	}
	ctx->avail_mask = mask;
	ctx_fill_outputs(ctx);
	int na = num_algo < NCCLBPF_NUM_ALGOS ? num_algo : NCCLBPF_NUM_ALGOS;
	int np = num_proto < NCCLBPF_NUM_PROTOS ? num_proto : NCCLBPF_NUM_PROTOS;
	int a, p;
	info->best = tuner_general_best(table, na, np, &a, &p) == 0 ? a * num_proto + p : -1;
	info->zero_mask = 0;
	info->exact_dims = false;
}

void tuner_ctx_fill(struct ncclbpf_tuner_ctx *ctx, const float *table, int num_algo,
		    int num_proto)
{
	struct tuner_fill_info info;
	tuner_ctx_fill_info(ctx, table, num_algo, num_proto, &info);
}

int tuner_nccl_select(const float *table, int num_algo, int num_proto, int *algo, int *proto)
{
	float best = FLT_MAX;
	int ba = -1, bp = -1;
	for (int a = 0; a < num_algo; a++) {
		for (int p = 0; p < num_proto; p++) {
			float v = table[a * num_proto + p];
			if (entry_available(v) && v < best) {
				best = v;
				ba = a;
				bp = p;
			}
		}
	}
	if (ba < 0)
		return -1;
	*algo = ba;
	*proto = bp;
	return 0;
}

/* Makes (a, p) NCCL's pick under both selection rules: lower it to 0 and nudge every
 * OTHER available entry that is also 0 (at any index) to the smallest positive normal float.
 * <= 2.30 breaks ties towards the lowest index, 2.31 towards the highest (push-front
 * candidate list): a unique minimum wins under both. Never writes a negative value (2.31
 * would select it: a negative is a time there, not "excluded"). */
static void choose_entry(float *table, int num_algo, int num_proto, int a, int p)
{
	int chosen = a * num_proto + p;
	table[chosen] = 0.0f;
	for (int i = 0; i < num_algo * num_proto; i++)
		if (i != chosen && entry_available(table[i]) && table[i] <= 0.0f)
			table[i] = FLT_MIN;
}

int tuner_general_best(const float *table, int num_algo, int num_proto, int *algo, int *proto)
{
	/* lowest index on ties: what <= 2.30 runs (2.31 differs only on exact ties) */
	return tuner_nccl_select(table, num_algo, num_proto, algo, proto);
}

bool tuner_pin(float *table, int num_algo, int num_proto)
{
	int na = num_algo < NCCLBPF_NUM_ALGOS ? num_algo : NCCLBPF_NUM_ALGOS;
	int np = num_proto < NCCLBPF_NUM_PROTOS ? num_proto : NCCLBPF_NUM_PROTOS;
	int a, p;
	if (tuner_general_best(table, na, np, &a, &p) != 0)
		return false;
	choose_entry(table, num_algo, num_proto, a, p);
	return true;
}

bool tuner_pin_filled(float *table, int num_algo, int num_proto,
		      const struct tuner_fill_info *info)
{
	if (info->best < 0)
		return false;
	if (!info->exact_dims) {
		choose_entry(table, num_algo, num_proto, info->best / num_proto,
			     info->best % num_proto);
		return true;
	}
	/* choose_entry with the zeros the fill found: usually none besides the choice */
	table[info->best] = 0.0f;
	for (uint32_t m = info->zero_mask & ~(1u << info->best); m; m &= m - 1)
		table[__builtin_ctz(m)] = FLT_MIN;
	return true;
}

void tuner_translate(float *table, int num_algo, int num_proto, int algo, int proto,
		     int n_channels, int *nccl_n_channels, struct tuner_applied *out)
{
	int na = num_algo < NCCLBPF_NUM_ALGOS ? num_algo : NCCLBPF_NUM_ALGOS;
	int np = num_proto < NCCLBPF_NUM_PROTOS ? num_proto : NCCLBPF_NUM_PROTOS;
	unsigned issues = 0;
	int ca = -1, cp = -1;

	out->algo = -1;
	out->proto = -1;
	out->n_channels = 0;

	if (algo < NCCLBPF_ALGO_KEEP || algo >= na)
		issues |= 1u << TUNER_ISSUE_BAD_ALGO;
	if (proto < NCCLBPF_PROTO_KEEP || proto >= np)
		issues |= 1u << TUNER_ISSUE_BAD_PROTO;
	if (n_channels < 0)
		issues |= 1u << TUNER_ISSUE_BAD_CHANNELS;

	if (!issues) {
		if (algo >= 0 && proto >= 0) {
			if (entry_available(table[algo * num_proto + proto])) {
				ca = algo;
				cp = proto;
			} else {
				issues |= 1u << TUNER_ISSUE_UNAVAILABLE;
			}
		} else if (algo >= 0) {
			float best = FLT_MAX;
			for (int p = 0; p < np; p++) {
				float v = table[algo * num_proto + p];
				if (entry_available(v) && (cp < 0 || v < best)) {
					best = v;
					cp = p;
				}
			}
			if (cp >= 0)
				ca = algo;
			else
				issues |= 1u << TUNER_ISSUE_NO_PROTO_FOR_ALGO;
		} else if (proto >= 0) {
			float best = FLT_MAX;
			for (int a = 0; a < na; a++) {
				float v = table[a * num_proto + proto];
				if (entry_available(v) && (ca < 0 || v < best)) {
					best = v;
					ca = a;
				}
			}
			if (ca >= 0)
				cp = proto;
			else
				issues |= 1u << TUNER_ISSUE_NO_ALGO_FOR_PROTO;
		}
	}

	if (issues) {
		/* An invalid or unavailable request: NCCL decides everything. */
		out->issues = issues;
		return;
	}

	if (ca >= 0) {
		choose_entry(table, num_algo, num_proto, ca, cp);
		out->algo = ca;
		out->proto = cp;
	}
	int run_algo = -1, run_proto = -1;
	if (n_channels > 0 && tuner_nccl_select(table, num_algo, num_proto, &run_algo, &run_proto) == 0 &&
	    (run_algo == NCCLBPF_ALGO_COLLNET_DIRECT || run_algo == NCCLBPF_ALGO_COLLNET_CHAIN)) {
		out->issues = issues | 1u << TUNER_ISSUE_CHANNELS_COLLNET;
		return;
	}
	if (n_channels > 0) {
		int n = n_channels;
		if (n > NB_NCCL_MAXCHANNELS)
			n = NB_NCCL_MAXCHANNELS;
		if (n != n_channels)
			issues |= 1u << TUNER_ISSUE_CHANNELS_CLAMPED;
		*nccl_n_channels = n;
		out->n_channels = n;
	}
	out->issues = issues;
}
