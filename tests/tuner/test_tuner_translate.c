/* Unit tests of the translation rules (src/plugin/tuner/tuner_translate.c, rules in tuner.h):
 * every rule, the tie handling and the invariant that -1 entries are never raised. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/tuner/tuner.h"
#include "test_util.h"

#define NA 7
#define NP 3
#define U NB_NCCL_ALGO_PROTO_IGNORE

/* A realistic NVLink-node AllReduce table: Tree, Ring, NVLS/Simple available. */
static void table_nvlink(float t[NA][NP])
{
	const float v[NA][NP] = {
		{ 20.f, 25.f, 30.f }, { 15.f, 18.f, 40.f }, { U, U, U }, { U, U, U },
		{ U, U, 12.f },       { U, U, U },          { U, U, U },
	};
	memcpy(t, v, sizeof(v));
}

static int select_pair(float t[NA][NP], int *a, int *p)
{
	return tuner_nccl_select(&t[0][0], NA, NP, a, p);
}

static void check_negatives_untouched(float before[NA][NP], float after[NA][NP])
{
	for (int a = 0; a < NA; a++)
		for (int p = 0; p < NP; p++)
			if (!(before[a][p] >= 0.0f))
				CHECK(memcmp(&before[a][p], &after[a][p], sizeof(float)) == 0);
}

static void translate(float t[NA][NP], int algo, int proto, int nch, int *out_nch,
		      struct tuner_applied *ap)
{
	tuner_translate(&t[0][0], NA, NP, algo, proto, nch, out_nch, ap);
}

static void test_select_rule(void)
{
	float t[NA][NP];
	int a, p;
	table_nvlink(t);
	CHECK(select_pair(t, &a, &p) == 0 && a == 4 && p == 2);
	/* Ties go to the lowest index. */
	for (int i = 0; i < NA; i++)
		for (int j = 0; j < NP; j++)
			t[i][j] = 1.0f;
	CHECK(select_pair(t, &a, &p) == 0 && a == 0 && p == 0);
	/* NaN and negatives are skipped; nothing available -> -1. */
	for (int i = 0; i < NA; i++)
		for (int j = 0; j < NP; j++)
			t[i][j] = U;
	t[3][1] = NAN;
	CHECK(select_pair(t, &a, &p) == -1);
	t[6][2] = 0.0f;
	CHECK(select_pair(t, &a, &p) == 0 && a == 6 && p == 2);
}

static void test_both_set(void)
{
	float t[NA][NP], before[NA][NP];
	int nch = 0, a, p;
	struct tuner_applied ap;

	table_nvlink(t);
	memcpy(before, t, sizeof(t));
	translate(t, NCCLBPF_ALGO_RING, NCCLBPF_PROTO_LL128, 0, &nch, &ap);
	CHECK(ap.issues == 0 && ap.algo == 1 && ap.proto == 1 && nch == 0);
	CHECK(t[1][1] == 0.0f);
	CHECK(select_pair(t, &a, &p) == 0 && a == 1 && p == 1);
	/* Other available entries are untouched. */
	CHECK(t[0][0] == 20.f && t[1][0] == 15.f && t[4][2] == 12.f);
	check_negatives_untouched(before, t);

	/* Unavailable pair: NCCL's choice stays, channels discarded too. */
	table_nvlink(t);
	memcpy(before, t, sizeof(t));
	nch = 0;
	translate(t, NCCLBPF_ALGO_COLLNET_DIRECT, NCCLBPF_PROTO_SIMPLE, 6, &nch, &ap);
	CHECK(ap.issues == (1u << TUNER_ISSUE_UNAVAILABLE));
	CHECK(ap.algo == -1 && nch == 0);
	CHECK(memcmp(before, t, sizeof(t)) == 0);
}

static void test_ties(void)
{
	float t[NA][NP], before[NA][NP];
	int nch = 0, a, p;
	struct tuner_applied ap;

	/* Every available entry already 0: the chosen Ring/Simple must still win. */
	for (int i = 0; i < NA; i++)
		for (int j = 0; j < NP; j++)
			t[i][j] = (i == 0 || i == 1) ? 0.0f : U;
	t[0][1] = -0.0f; /* NCCL accepts -0.0 (>= 0) too */
	memcpy(before, t, sizeof(t));
	translate(t, NCCLBPF_ALGO_RING, NCCLBPF_PROTO_SIMPLE, 0, &nch, &ap);
	CHECK(ap.issues == 0);
	CHECK(select_pair(t, &a, &p) == 0 && a == 1 && p == 2);
	check_negatives_untouched(before, t);
	/* Lower-index ties nudged to FLT_MIN: still available (>= 0), just not cheaper. */
	CHECK(t[0][0] == FLT_MIN && t[0][1] == FLT_MIN && t[1][0] == FLT_MIN);
	CHECK(t[1][2] == 0.0f);
	/* Higher-index zeros are nudged too: NCCL 2.31 breaks ties towards the HIGHEST index
	 * (regression: <= issue 15 they stayed 0 and PAT/Simple won a 2.31 tie). */
	for (int i = 0; i < NA; i++)
		for (int j = 0; j < NP; j++)
			t[i][j] = 0.0f;
	translate(t, NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_LL, 0, &nch, &ap);
	CHECK(select_pair(t, &a, &p) == 0 && a == 0 && p == 0);
	CHECK(t[6][2] == FLT_MIN);
	for (int i = 0; i < NA; i++)
		for (int j = 0; j < NP; j++)
			CHECK(i + j == 0 || t[i][j] == FLT_MIN);
	/* the 2.31 rule (ties to the highest index) selects the choice as well */
	{
		float best = FLT_MAX;
		int ha = -1, hp = -1;
		for (int i = 0; i < NA; i++)
			for (int j = 0; j < NP; j++)
				if (t[i][j] >= 0.0f && t[i][j] <= best)
					best = t[i][j], ha = i, hp = j;
		CHECK(ha == 0 && hp == 0);
	}
	/* pinning NCCL's own choice: same rule, nothing negative, unavailable untouched */
	for (int i = 0; i < NA; i++)
		for (int j = 0; j < NP; j++)
			t[i][j] = (i + j) % 3 == 0 ? U : (float)(10 - i);
	t[6][1] = 4.0f; /* tie with [6][2] at 4: lowest index is NCCL's (<= 2.30) choice */
	memcpy(before, t, sizeof(t));
	CHECK(tuner_pin(&t[0][0], NA, NP));
	check_negatives_untouched(before, t);
	CHECK(t[6][1] == 0.0f && t[6][2] == 4.0f);
	CHECK(select_pair(t, &a, &p) == 0 && a == 6 && p == 1);
	for (int i = 0; i < NA; i++)
		for (int j = 0; j < NP; j++)
			t[i][j] = U;
	CHECK(!tuner_pin(&t[0][0], NA, NP)); /* nothing available: nothing written */
	for (int i = 0; i < NA; i++)
		for (int j = 0; j < NP; j++)
			CHECK(t[i][j] == U);

	/* Single-rank table: only Ring/Simple = 0. */
	for (int i = 0; i < NA; i++)
		for (int j = 0; j < NP; j++)
			t[i][j] = U;
	t[1][2] = 0.0f;
	memcpy(before, t, sizeof(t));
	translate(t, NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_SIMPLE, 2, &nch, &ap);
	CHECK(ap.issues == (1u << TUNER_ISSUE_UNAVAILABLE));
	CHECK(memcmp(before, t, sizeof(t)) == 0);
	translate(t, NCCLBPF_ALGO_RING, NCCLBPF_PROTO_SIMPLE, 2, &nch, &ap);
	CHECK(ap.issues == 0 && nch == 2);
	CHECK(memcmp(before, t, sizeof(t)) == 0); /* already 0, nothing below it */
}

static void test_partial_requests(void)
{
	float t[NA][NP], before[NA][NP];
	int nch = 0, a, p;
	struct tuner_applied ap;

	/* Only algo: cheapest available protocol of Ring is LL (15). */
	table_nvlink(t);
	translate(t, NCCLBPF_ALGO_RING, NCCLBPF_PROTO_KEEP, 0, &nch, &ap);
	CHECK(ap.issues == 0 && ap.algo == 1 && ap.proto == 0);
	CHECK(select_pair(t, &a, &p) == 0 && a == 1 && p == 0);

	/* Only algo, none of its protocols available. */
	table_nvlink(t);
	memcpy(before, t, sizeof(t));
	translate(t, NCCLBPF_ALGO_PAT, NCCLBPF_PROTO_KEEP, 3, &nch, &ap);
	CHECK(ap.issues == (1u << TUNER_ISSUE_NO_PROTO_FOR_ALGO));
	CHECK(memcmp(before, t, sizeof(t)) == 0);

	/* Only proto: cheapest algorithm with Simple is NVLS (12). */
	table_nvlink(t);
	t[4][2] = 50.f;
	translate(t, NCCLBPF_ALGO_KEEP, NCCLBPF_PROTO_SIMPLE, 0, &nch, &ap);
	CHECK(ap.issues == 0 && ap.algo == 0 && ap.proto == 2); /* Tree/Simple 30 < 40, 50 */
	CHECK(select_pair(t, &a, &p) == 0 && a == 0 && p == 2);

	/* Only proto, unavailable everywhere. */
	table_nvlink(t);
	t[0][1] = U;
	t[1][1] = U;
	memcpy(before, t, sizeof(t));
	translate(t, NCCLBPF_ALGO_KEEP, NCCLBPF_PROTO_LL128, 0, &nch, &ap);
	CHECK(ap.issues == (1u << TUNER_ISSUE_NO_ALGO_FOR_PROTO));
	CHECK(memcmp(before, t, sizeof(t)) == 0);

	/* Nothing set: nothing changes. */
	table_nvlink(t);
	memcpy(before, t, sizeof(t));
	nch = 0;
	translate(t, NCCLBPF_ALGO_KEEP, NCCLBPF_PROTO_KEEP, 0, &nch, &ap);
	CHECK(ap.issues == 0 && nch == 0 && memcmp(before, t, sizeof(t)) == 0);
}

static void test_ranges_and_channels(void)
{
	float t[NA][NP], before[NA][NP];
	int nch, a, p;
	struct tuner_applied ap;

	table_nvlink(t);
	memcpy(before, t, sizeof(t));
	nch = 0;
	translate(t, 7, NCCLBPF_PROTO_SIMPLE, 4, &nch, &ap);
	CHECK(ap.issues == (1u << TUNER_ISSUE_BAD_ALGO) && nch == 0);
	translate(t, -2, NCCLBPF_PROTO_KEEP, 4, &nch, &ap);
	CHECK(ap.issues == (1u << TUNER_ISSUE_BAD_ALGO) && nch == 0);
	translate(t, NCCLBPF_ALGO_RING, 3, 4, &nch, &ap);
	CHECK(ap.issues == (1u << TUNER_ISSUE_BAD_PROTO) && nch == 0);
	translate(t, NCCLBPF_ALGO_RING, NCCLBPF_PROTO_LL, -1, &nch, &ap);
	CHECK(ap.issues == (1u << TUNER_ISSUE_BAD_CHANNELS) && nch == 0);
	CHECK(memcmp(before, t, sizeof(t)) == 0);

	/* Channels alone, clamped to 1..64 only: the same bound on every rank (a clamp to a
	 * per-rank learned count let ranks run different channel counts: deadlock). */
	translate(t, NCCLBPF_ALGO_KEEP, NCCLBPF_PROTO_KEEP, 1, &nch, &ap);
	CHECK(ap.issues == 0 && nch == 1 && memcmp(before, t, sizeof(t)) == 0);
	translate(t, NCCLBPF_ALGO_KEEP, NCCLBPF_PROTO_KEEP, 200, &nch, &ap);
	CHECK(ap.issues == (1u << TUNER_ISSUE_CHANNELS_CLAMPED) && nch == 64);
	translate(t, NCCLBPF_ALGO_KEEP, NCCLBPF_PROTO_KEEP, 64, &nch, &ap);
	CHECK(ap.issues == 0 && nch == 64);
	translate(t, NCCLBPF_ALGO_KEEP, NCCLBPF_PROTO_KEEP, 24, &nch, &ap);
	CHECK(ap.issues == 0 && nch == 24);
	translate(t, NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_LL, 8, &nch, &ap);
	CHECK(ap.issues == 0 && nch == 8 && select_pair(t, &a, &p) == 0 && a == 0 && p == 0);
	/* A clamp keeps the algorithm decision. */
	table_nvlink(t);
	translate(t, NCCLBPF_ALGO_RING, NCCLBPF_PROTO_SIMPLE, 100, &nch, &ap);
	CHECK(ap.issues == (1u << TUNER_ISSUE_CHANNELS_CLAMPED) && nch == 64);
	CHECK(select_pair(t, &a, &p) == 0 && a == 1 && p == 2);

	/* CollNet runs the value as its channel count without NCCL's clamp: never applied
	 * when NCCL will run CollNet, chosen by the policy or kept from NCCL. */
	table_nvlink(t);
	t[NCCLBPF_ALGO_COLLNET_DIRECT][NCCLBPF_PROTO_SIMPLE] = 5.0f;
	t[NCCLBPF_ALGO_COLLNET_CHAIN][NCCLBPF_PROTO_SIMPLE] = 0.5f; /* NCCL's own pick */
	memcpy(before, t, sizeof(t));
	nch = 0;
	translate(t, NCCLBPF_ALGO_KEEP, NCCLBPF_PROTO_KEEP, 8, &nch, &ap);
	CHECK(ap.issues == (1u << TUNER_ISSUE_CHANNELS_COLLNET) && nch == 0 && ap.n_channels == 0);
	CHECK(memcmp(before, t, sizeof(t)) == 0);
	translate(t, NCCLBPF_ALGO_COLLNET_DIRECT, NCCLBPF_PROTO_SIMPLE, 8, &nch, &ap);
	CHECK(ap.issues == (1u << TUNER_ISSUE_CHANNELS_COLLNET) && nch == 0);
	CHECK(select_pair(t, &a, &p) == 0 && a == NCCLBPF_ALGO_COLLNET_DIRECT); /* algo applied */
	memcpy(t, before, sizeof(t));
	translate(t, NCCLBPF_ALGO_RING, NCCLBPF_PROTO_SIMPLE, 8, &nch, &ap); /* away from CollNet */
	CHECK(ap.issues == 0 && nch == 8);
}

static void test_ctx_fill(void)
{
	float t[NA][NP];
	struct ncclbpf_tuner_ctx c;
	memset(&c, 0x5a, sizeof(c));
	table_nvlink(t);
	tuner_ctx_fill(&c, &t[0][0], NA, NP);
	CHECK(c.algo == -1 && c.proto == -1 && c.n_channels == 0);
	CHECK(c.cost[1][1] == 18.f && c.cost[2][0] == U);
	/* bits: Tree 0..2, Ring 3..5, NVLS/Simple 14 */
	CHECK_EQ_U64(c.avail_mask, 0x3fu | (1u << 14));
	/* A smaller table (numProto 2): missing entries read as unavailable, stride respected. */
	float small[2][2] = { { 1.f, 2.f }, { 3.f, U } };
	tuner_ctx_fill(&c, &small[0][0], 2, 2);
	CHECK(c.cost[0][1] == 2.f && c.cost[1][0] == 3.f && c.cost[1][1] == U && c.cost[0][2] == U);
	CHECK_EQ_U64(c.avail_mask, 0x1u | 0x2u | 0x8u);
	/* Layout the policies rely on (policy.h offsets). */
	CHECK(offsetof(struct ncclbpf_tuner_ctx, cost) == 56);
	CHECK(offsetof(struct ncclbpf_tuner_ctx, algo) == 140);
	CHECK(sizeof(struct ncclbpf_tuner_ctx) == 192);
	CHECK(offsetof(struct ncclbpf_tuner_ctx, band_seq) == 176);
	CHECK(offsetof(struct ncclbpf_tuner_ctx, nccl_version) == 184);
}

/* The one-pass fill + pin (tuner_ctx_fill_info, tuner_pin_filled: the decision path's
 * vectorised form) against the scalar definitions: the context field by field, NCCL's
 * choice against tuner_general_best, and the pinned table bit for bit against tuner_pin,
 * on random tables of every shape up to 8x4 drawn from the values that matter (unavailable
 * -1, +-0, NaN, +-inf, FLT_MAX, denormals, ties). */
static uint64_t prop_rng = 0x9e3779b97f4a7c15ull;
static uint32_t prop_next(void)
{
	prop_rng ^= prop_rng << 13;
	prop_rng ^= prop_rng >> 7;
	prop_rng ^= prop_rng << 17;
	return (uint32_t)(prop_rng >> 32);
}

static float prop_value(void)
{
	static const float special[] = { -1.0f, 0.0f, -0.0f, 1.0f, 2.0f, 3.0f, FLT_MAX, FLT_MIN,
					 1e-42f /* denormal */, -2.0f, INFINITY, -INFINITY, NAN,
					 -NAN, 0.5f, 12.0f };
	uint32_t r = prop_next();
	if (r % 4 == 0) { /* any bit pattern at all */
		uint32_t bits = prop_next();
		float f;
		memcpy(&f, &bits, sizeof(f));
		return f;
	}
	if (r % 4 == 1)
		return (float)(prop_next() % 1000) / 8.0f;
	return special[(r >> 8) % (sizeof(special) / sizeof(special[0]))];
}

/* The scalar fill as it was before the one-pass form (the reference). */
static void ref_fill(struct ncclbpf_tuner_ctx *ctx, const float *table, int na, int np)
{
	uint32_t mask = 0;
	for (int a = 0; a < NCCLBPF_NUM_ALGOS; a++)
		for (int p = 0; p < NCCLBPF_NUM_PROTOS; p++) {
			float v = NB_NCCL_ALGO_PROTO_IGNORE;
			if (a < na && p < np)
				v = table[a * np + p];
			ctx->cost[a][p] = v;
			if (v >= 0.0f)
				mask |= 1u << (a * NCCLBPF_NUM_PROTOS + p);
		}
	ctx->avail_mask = mask;
	ctx->algo = NCCLBPF_ALGO_KEEP;
	ctx->proto = NCCLBPF_PROTO_KEEP;
	ctx->n_channels = NCCLBPF_CHANNELS_KEEP;
	ctx->comm_seq = 0;
	ctx->band_seq = 0;
}

static void test_fill_pin_property(void)
{
	unsigned exact = 0, pinned = 0, none = 0, zero_nudges = 0;
	for (int iter = 0; iter < 200000; iter++) {
		int na = iter % 2 ? NA : 1 + (int)(prop_next() % 8);
		int np = iter % 2 ? NP : 1 + (int)(prop_next() % 4);
		float t[8 * 4], t_ref[8 * 4], t_fast[8 * 4];
		bool sparse = prop_next() % 4 == 0; /* mostly unavailable: edge values decide */
		for (int i = 0; i < na * np; i++)
			t[i] = sparse && prop_next() % 4 ? -1.0f : prop_value();
		if (prop_next() % 3 == 0) /* ties: copy one entry over others */
			for (int k = 0; k < 3; k++)
				t[prop_next() % (unsigned)(na * np)] = t[prop_next() % (unsigned)(na * np)];
		struct ncclbpf_tuner_ctx want, got;
		memset(&want, 0x5a, sizeof(want));
		memset(&got, 0x5a, sizeof(got));
		struct tuner_fill_info info;
		ref_fill(&want, t, na, np);
		tuner_ctx_fill_info(&got, t, na, np, &info);
		test_checks++;
		if (memcmp(&want, &got, sizeof(want))) {
			test_failures++;
			fprintf(stderr, "fill differs (iteration %d, %dx%d)\n", iter, na, np);
			break;
		}
		int ma = na < NA ? na : NA, mp = np < NP ? np : NP, a, p;
		int best = tuner_general_best(t, ma, mp, &a, &p) == 0 ? a * np + p : -1;
		test_checks++;
		if (info.best != best) {
			test_failures++;
			fprintf(stderr, "choice %d, tuner_general_best %d (iteration %d, %dx%d)\n",
				info.best, best, iter, na, np);
			break;
		}
		memcpy(t_ref, t, sizeof(t));
		memcpy(t_fast, t, sizeof(t));
		bool r1 = tuner_pin(t_ref, na, np), r2 = tuner_pin_filled(t_fast, na, np, &info);
		test_checks++;
		if (r1 != r2 || memcmp(t_ref, t_fast, sizeof(float) * (size_t)(na * np))) {
			test_failures++;
			fprintf(stderr, "pin differs (iteration %d, %dx%d)\n", iter, na, np);
			break;
		}
		exact += info.exact_dims;
		pinned += r1;
		none += !r1;
		zero_nudges += r1 && info.zero_mask && (info.zero_mask & ~(1u << info.best));
	}
	/* the generator reached every case */
	CHECK(exact > 50000 && pinned > 50000 && none > 1000 && zero_nudges > 1000);
}

static void test_issue_names(void)
{
	for (int i = 0; i < TUNER_ISSUE_COUNT; i++)
		CHECK(strcmp(tuner_issue_name((enum tuner_issue)i), "unknown") != 0);
	CHECK(strcmp(tuner_issue_name(TUNER_ISSUE_COUNT), "unknown") == 0);
}

/* NCCL_ALGO / NCCL_PROTO as NCCL parses them (tuner_restrict.c), and who kept a request out */
static void test_env_restrictions(void)
{
	uint32_t m[NCCLBPF_NUM_COLLS];
	const uint32_t all_a = (1u << NCCLBPF_NUM_ALGOS) - 1, all_p = (1u << NCCLBPF_NUM_PROTOS) - 1;
	CHECK(tuner_env_allowed(NULL, true, m) == 0 && m[4] == all_a);
	CHECK(tuner_env_allowed("", false, m) == 0 && m[0] == all_p);
	CHECK(tuner_env_allowed("Ring", true, m) == 1);
	for (int c = 0; c < NCCLBPF_NUM_COLLS; c++)
		CHECK(m[c] == 1u << NCCLBPF_ALGO_RING);
	CHECK(tuner_env_allowed("^nvls,nvlstree", true, m) == 1);
	CHECK(m[2] == (all_a & ~(1u << NCCLBPF_ALGO_NVLS | 1u << NCCLBPF_ALGO_NVLS_TREE)));
	CHECK(tuner_env_allowed("tree,ring,collnet", true, m) == 1);
	CHECK(m[4] == (1u << 0 | 1u << 1 | 1u << 2 | 1u << 3));
	/* per-function sections; functions the tuner never sees are skipped */
	CHECK(tuner_env_allowed("allreduce:tree;allgather:^ring;sendrecv:ring", true, m) == 1);
	CHECK(m[NCCLBPF_COLL_ALLREDUCE] == 1u << NCCLBPF_ALGO_TREE);
	CHECK(m[NCCLBPF_COLL_ALLGATHER] == (all_a & ~(1u << NCCLBPF_ALGO_RING)));
	CHECK(m[NCCLBPF_COLL_BROADCAST] == all_a);
	CHECK(tuner_env_allowed("^LL128", false, m) == 1 && m[3] == (1u << 0 | 1u << 2));
	CHECK(tuner_env_allowed("Simple", false, m) == 1 && m[1] == 1u << NCCLBPF_PROTO_SIMPLE);
	CHECK(tuner_env_allowed("Rung", true, m) == -1); /* NCCL rejects it as well */

	struct tuner_comm tc;
	memset(&tc, 0, sizeof(tc));
	setenv("NCCL_ALGO", "allreduce:ring", 1);
	setenv("NCCL_PROTO", "^LL", 1);
	tuner_restrict_open(&tc);
	CHECK(tc.env_forced);
	CHECK(tuner_restriction_of(&tc, NCCLBPF_COLL_ALLREDUCE, NCCLBPF_ALGO_TREE, -1) ==
	      TUNER_RESTRICT_ENV);
	CHECK(tuner_restriction_of(&tc, NCCLBPF_COLL_ALLREDUCE, NCCLBPF_ALGO_RING,
				   NCCLBPF_PROTO_LL) == TUNER_RESTRICT_ENV);
	CHECK(tuner_restriction_of(&tc, NCCLBPF_COLL_ALLREDUCE, NCCLBPF_ALGO_RING,
				   NCCLBPF_PROTO_SIMPLE) == TUNER_RESTRICT_TABLE);
	CHECK(tuner_restriction_of(&tc, NCCLBPF_COLL_ALLGATHER, NCCLBPF_ALGO_NVLS, -1) ==
	      TUNER_RESTRICT_TABLE);
	unsetenv("NCCL_ALGO");
	unsetenv("NCCL_PROTO");
	tuner_restrict_open(&tc);
	CHECK(!tc.env_forced);
	CHECK(tuner_restriction_of(&tc, NCCLBPF_COLL_ALLREDUCE, NCCLBPF_ALGO_TREE, 0) ==
	      TUNER_RESTRICT_TABLE);
}

/* 2.31+: a table narrower than the band's so far is a per-call selection (provenance) */
static void test_call_restricted(void)
{
	struct tuner_comm tc;
	memset(&tc, 0, sizeof(tc));
	tc.abi_version = 6;
	tc.nccl_version = 23007; /* 2.30: no per-call configuration */
	CHECK(!tuner_call_restricted(&tc, 4, 1 << 20, 0x3f));
	CHECK(!tuner_call_restricted(&tc, 4, 1 << 20, 0x38));
	tc.nccl_version = 23102;
	memset(tc.band_offered, 0, sizeof(tc.band_offered));
	CHECK(!tuner_call_restricted(&tc, 4, 1 << 20, 0x3f)); /* first: nothing to compare */
	CHECK(tuner_call_restricted(&tc, 4, 1 << 20, 0x38));  /* Ring only */
	CHECK(tuner_call_restricted(&tc, 4, (1 << 20) + 5, 0)); /* same band, nothing offered */
	CHECK(!tuner_call_restricted(&tc, 4, 1 << 20, 0x3f)); /* the full table again */
	CHECK(!tuner_call_restricted(&tc, 4, 1 << 10, 0x38)); /* another band: first there */
	CHECK(!tuner_call_restricted(&tc, 2, 1 << 20, 0x38)); /* another collective */
	CHECK(!tuner_call_restricted(&tc, 4, 1 << 20, 0x1ff)); /* wider: recorded */
	CHECK(tuner_call_restricted(&tc, 4, 1 << 20, 0x3f));
	/* the band is ncclbpf_size_bucket's: its edges, 0 and 1 bytes, the top band */
	static const uint64_t sizes[] = {0, 1, 2, 3, 4, 1023, 1024, 1025, (1ull << 40) - 1,
					 1ull << 40, UINT64_MAX};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		memset(tc.band_offered, 0, sizeof(tc.band_offered));
		CHECK(!tuner_call_restricted(&tc, 1, sizes[i], 0x3f));
		CHECK(tc.band_offered[1][ncclbpf_size_bucket(sizes[i])] == 0x3f);
	}
}

/* Where NCCL may use the channel count unclamped (AllGather on 2.29/2.30) */
static void test_channels_unclamped(void)
{
	const uint32_t ag = 1u << NCCLBPF_COLL_ALLGATHER;
	CHECK(tuner_channels_unclamped_mask(4, 22707, NULL) == 0);
	CHECK(tuner_channels_unclamped_mask(5, 22809, NULL) == 0);
	CHECK(tuner_channels_unclamped_mask(5, 22907, NULL) == ag);
	CHECK(tuner_channels_unclamped_mask(6, 23007, NULL) == ag);
	CHECK(tuner_channels_unclamped_mask(6, 23102, NULL) == 0);
	CHECK(tuner_channels_unclamped_mask(7, 23206, NULL) == 0);
	CHECK(tuner_channels_unclamped_mask(6, 23007, "0") == 0); /* no batching */
	CHECK(tuner_channels_unclamped_mask(6, 23007, "1") == ag);
	/* unknown release: v5/v6 may be 2.29/2.30 */
	CHECK(tuner_channels_unclamped_mask(5, 0, NULL) == ag);
	CHECK(tuner_channels_unclamped_mask(6, 0, NULL) == ag);
	CHECK(tuner_channels_unclamped_mask(7, 0, NULL) == 0);
	CHECK(tuner_channels_unclamped_mask(4, 0, NULL) == 0);
}

int main(void)
{
	test_env_restrictions();
	test_channels_unclamped();
	test_call_restricted();
	test_select_rule();
	test_both_set();
	test_ties();
	test_partial_requests();
	test_ranges_and_channels();
	test_ctx_fill();
	test_fill_pin_property();
	test_issue_names();
	TEST_DONE();
}
