/* Latency statistics and the shipped closed-loop policies:
 *  - the streaming p99 estimator converges on a known distribution;
 *  - adaptive_channels.bpf.o and slo_enforcer.bpf.o (verified and run through the public
 *    API, reading the pinned ncclbpf_latency map) decide exactly like their native
 *    baselines on the same statistics, step by step;
 *  - slo_enforcer escalates while the target is missed and relaxes when it is met.
 * The BPF objects come from $NCCLBPF_POLICY_DIR (set by CTest). */
#include <errno.h>
#include <math.h>

#include "maps/map.h"
#include "ncclbpf/ncclbpf.h"
#include "prof_test_util.h"
#include "runtime/runtime.h"
#include "test_util.h"

typedef int (*native_latency_lookup_fn)(const struct ncclbpf_latency_key *key,
					struct ncclbpf_latency_stats *out);
void native_adaptive_channels_set_lookup(native_latency_lookup_fn fn);
void native_adaptive_channels_reset(void);
int native_adaptive_channels(struct ncclbpf_tuner_ctx *ctx);
void native_slo_enforcer_set_lookup(native_latency_lookup_fn fn);
void native_slo_enforcer_set_target(uint32_t coll_type, uint64_t target_ns);
void native_slo_enforcer_reset(void);
int native_slo_enforcer(struct ncclbpf_tuner_ctx *ctx);

static uint64_t rng = 88172645463325252ull;
static double urand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return ((rng >> 11) + 0.5) / 9007199254740992.0;
}

static void test_p99(void)
{
	/* x = 100 us + Exp(mean 10 us): p99 = 100 + 10 ln 100 = 146.05 us */
	uint64_t q = 0;
	for (int i = 0; i < 60000; i++) {
		uint64_t x = (uint64_t)(100000.0 - 10000.0 * log(urand()));
		q = i ? profiler_p99_step(q, x) : x;
	}
	printf("p99 estimate %.1f us (true 146.1)\n", q / 1000.0);
	CHECK(q > 132000 && q < 160000);
	/* a shift up is followed within a few hundred samples */
	for (int i = 0; i < 400; i++)
		q = profiler_p99_step(q, 1000000 + (uint64_t)(urand() * 1000));
	CHECK(q > 900000);
}

static struct nb_map *lat_map;

static int lookup(const struct ncclbpf_latency_key *k, struct ncclbpf_latency_stats *out)
{
	map_epoch_enter();
	void *v = map_lookup(lat_map, k);
	if (v)
		memcpy(out, v, sizeof(*out));
	map_epoch_exit();
	return v ? 0 : -ENOENT;
}

static struct ncclbpf_program *load(const char *name, struct ncclbpf_object **obj)
{
	const char *dir = getenv("NCCLBPF_POLICY_DIR");
	char path[512], err[1024] = "";
	snprintf(path, sizeof(path), "%s/%s.bpf.o", dir ? dir : "policies", name);
	if (ncclbpf_object_open_file(path, obj, err, sizeof(err))) {
		fprintf(stderr, "open %s: %s\n", path, err);
		return NULL;
	}
	struct ncclbpf_program *p = ncclbpf_object_find_program(*obj, name);
	if (!p || ncclbpf_program_prepare(p, NCCLBPF_HOOK_TUNER, NULL, err, sizeof(err))) {
		fprintf(stderr, "prepare %s: %s\n", name, err);
		return NULL;
	}
	return p;
}

static void fill_ctx(struct ncclbpf_tuner_ctx *c, uint64_t comm)
{
	memset(c, 0, sizeof(*c));
	c->comm_id = comm;
	c->n_bytes = 8u << 20;
	c->coll_type = NCCLBPF_COLL_ALLREDUCE;
	c->n_ranks = 16;
	c->n_nodes = 2;
	c->max_channels = 16;
	c->abi_version = 6;
	for (int a = 0; a < 2; a++)
		for (int p = 0; p < 3; p++)
			c->avail_mask |= 1u << (a * 3 + p);
	c->algo = NCCLBPF_ALGO_KEEP;
	c->proto = NCCLBPF_PROTO_KEEP;
}

static void add_sample(uint64_t comm, uint64_t lat, uint64_t ch)
{
	struct ncclbpf_latency_key k = {.comm_id = comm, .coll_type = NCCLBPF_COLL_ALLREDUCE,
					.size_bucket = 23};
	struct ncclbpf_latency_stats s;
	if (lookup(&k, &s))
		memset(&s, 0, sizeof(s));
	s.count++;
	s.last_ns = lat;
	s.n_channels_last = ch;
	CHECK(map_update(lat_map, &k, &s, NB_ANY) == 0);
}

static void test_policies(void)
{
	struct nb_map_spec spec = {.name = "ncclbpf_latency", .type = NB_MAP_TYPE_HASH,
				   .key_size = sizeof(struct ncclbpf_latency_key),
				   .value_size = sizeof(struct ncclbpf_latency_stats),
				   .max_entries = 4096};
	char err[256];
	lat_map = runtime_pinned_map(&spec, err, sizeof(err));
	CHECK(lat_map != NULL);
	if (!lat_map)
		return;
	struct ncclbpf_object *ao = NULL, *so = NULL;
	struct ncclbpf_program *ap = load("adaptive_channels_local", &ao);
	struct ncclbpf_program *sp = load("slo_enforcer_local", &so);
	CHECK(ap != NULL);
	CHECK(sp != NULL);
	if (!ap || !sp)
		goto out;

	/* adaptive_channels: BPF and native agree on every decision of a random walk */
	native_adaptive_channels_reset();
	native_adaptive_channels_set_lookup(lookup);
	uint64_t comm = 0xada;
	int mismatches = 0, ch_seen_max = 0;
	int ch = 0;
	for (int i = 0; i < 400; i++) {
		struct ncclbpf_tuner_ctx b, n;
		fill_ctx(&b, comm);
		fill_ctx(&n, comm);
		uint64_t r = 0;
		CHECK(ncclbpf_program_run(ap, &b, sizeof(b), &r, err, sizeof(err)) == 0);
		native_adaptive_channels(&n);
		if (memcmp(&b, &n, sizeof(b)) && mismatches++ < 3)
			fprintf(stderr, "adaptive step %d: bpf ch %d native ch %d\n", i, b.n_channels,
				n.n_channels);
		ch = b.n_channels ? b.n_channels : 16;
		ch_seen_max = ch > ch_seen_max ? ch : ch_seen_max;
		double c = (i / 100) % 2 ? 10.0 : 1.0;
		uint64_t lat = (uint64_t)(20000 + c * 4.2e6 / ch + 7000.0 * ch + (c - 1) * 60000.0 * ch * ch);
		lat += (uint64_t)(urand() * 5000);
		add_sample(comm, lat, (uint64_t)ch);
	}
	CHECK_EQ_U64(mismatches, 0);
	CHECK(ch_seen_max >= 12);

	/* slo_enforcer: target 1 ms on AllReduce; miss -> escalate, meet -> relax */
	native_slo_enforcer_reset();
	native_slo_enforcer_set_lookup(lookup);
	native_slo_enforcer_set_target(NCCLBPF_COLL_ALLREDUCE, 1000000);
	struct ncclbpf_map *targets = ncclbpf_object_find_map(so, "slo_targets");
	CHECK(targets != NULL);
	uint32_t key = NCCLBPF_COLL_ALLREDUCE;
	uint64_t target = 1000000;
	if (targets)
		CHECK(ncclbpf_map_update(targets, &key, &target, 0) == 0);
	comm = 0x510;
	mismatches = 0;
	int escalated_at = -1, max_level_seen = 0, relaxed_at = -1;
	for (int i = 0; i < 120; i++) {
		struct ncclbpf_tuner_ctx b, n;
		fill_ctx(&b, comm);
		fill_ctx(&n, comm);
		uint64_t r = 0;
		CHECK(ncclbpf_program_run(sp, &b, sizeof(b), &r, err, sizeof(err)) == 0);
		native_slo_enforcer(&n);
		if (memcmp(&b, &n, sizeof(b)) && mismatches++ < 3)
			fprintf(stderr, "slo step %d: bpf %d/%d/%d native %d/%d/%d\n", i, b.algo,
				b.proto, b.n_channels, n.algo, n.proto, n.n_channels);
		int level = b.n_channels == 0 ? 0 : b.proto == NCCLBPF_PROTO_KEEP ? 1
						: b.proto == NCCLBPF_PROTO_LL128 ? 2 : 3;
		if (level > 0 && escalated_at < 0)
			escalated_at = i;
		if (level > max_level_seen)
			max_level_seen = level;
		if (i >= 60 && level == 0 && relaxed_at < 0)
			relaxed_at = i;
		/* first 60 steps miss the target (2 ms), then meet it comfortably (0.4 ms) */
		add_sample(comm, i < 60 ? 2000000 : 400000, (uint64_t)(b.n_channels ? b.n_channels : 16));
	}
	CHECK_EQ_U64(mismatches, 0);
	CHECK(escalated_at > 0 && escalated_at <= 6);
	CHECK_EQ_U64(max_level_seen, 3);
	CHECK(relaxed_at > 60 && relaxed_at < 90);
out:
	if (ao)
		ncclbpf_object_close(ao);
	if (so)
		ncclbpf_object_close(so);
}

int main(void)
{
	test_p99();
	test_policies();
	TEST_DONE();
}
