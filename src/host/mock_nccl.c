/* Mock NCCL host (see mock_nccl.h). Behaviour follows ref/nccl-plugin-abi.md: §1.1 for
 * library resolution, §0 for the symbols per release, §2.2-2.4 for how getCollInfo is
 * called and how its result is consumed. */
#define _GNU_SOURCE
#include "mock_nccl.h"

#include <dlfcn.h>
#include <errno.h>
#include <float.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

int mock_nccl_parse_release(const char *s)
{
	if (!s)
		return -1;
	if (!strcmp(s, "2.27"))
		return 227;
	if (!strcmp(s, "2.28"))
		return 228;
	if (!strcmp(s, "2.29"))
		return 229;
	if (!strcmp(s, "2.30"))
		return 230;
	if (!strcmp(s, "2.31"))
		return 231;
	if (!strcmp(s, "2.32"))
		return 232;
	return -1;
}

/* ncclGetVersion of the release the host emulates (the plugin looks it up in the process,
 * as it finds NCCL's in a real job): the patch levels of the releases the ABI facts were
 * read from. Exported (mock_nccl links its executables with -rdynamic). */
static _Atomic int emulated_version;

int mock_nccl_version_code(int release)
{
	switch (release) {
	case 227: return 22707;
	case 228: return 22809;
	case 229: return 22907;
	case 230: return 23007;
	case 231: return 23102;
	case 232: return 23206;
	default: return 0;
	}
}

__attribute__((visibility("default"))) int ncclGetVersion(int *version)
{
	int v = atomic_load(&emulated_version);
	if (!version || !v)
		return 4; /* ncclInvalidArgument: no release emulated */
	*version = v;
	return 0;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && !strcmp(s + a - b, suffix);
}

/* openPluginLib(type="tuner", name): §1.1 steps 1-3. */
static void *open_plugin_lib(struct mock_nccl *m, const char *name)
{
	const int flags = RTLD_NOW | RTLD_LOCAL;
	char candidate[512];
	void *h;

	if (!name || !name[0]) {
		snprintf(candidate, sizeof(candidate), "libnccl-tuner.so");
		h = dlopen(candidate, flags);
		if (h)
			snprintf(m->opened_as, sizeof(m->opened_as), "%.300s", candidate);
		else
			snprintf(m->err, sizeof(m->err), "Could not find: %.200s", candidate);
		return h;
	}
	h = dlopen(name, flags);
	if (h) {
		snprintf(m->opened_as, sizeof(m->opened_as), "%.300s", name);
		return h;
	}
	snprintf(m->err, sizeof(m->err), "dlopen(%.200s): %.200s", name, dlerror());
	int is_lib_so = !strncmp(name, "lib", 3) && ends_with(name, ".so");
	if (strchr(name, '/') || is_lib_so)
		return NULL;
	snprintf(candidate, sizeof(candidate), "libnccl-tuner-%.200s.so", name);
	h = dlopen(candidate, flags);
	if (h)
		snprintf(m->opened_as, sizeof(m->opened_as), "%.300s", candidate);
	else
		snprintf(m->err, sizeof(m->err), "Could not find: %.120s nor %.150s (%.200s)", name, candidate,
			 dlerror());
	return h;
}

static int release_max_tuner(int release)
{
	if (release >= 232)
		return 7;
	if (release >= 230)
		return 6;
	if (release >= 228)
		return 5;
	return 4;
}

int mock_nccl_load_tuner(struct mock_nccl *m, int release, const char *plugin_env,
			 int max_version)
{
	memset(m, 0, sizeof(*m));
	m->release = release;
	if (release < 227 || release > 232) {
		snprintf(m->err, sizeof(m->err), "unsupported NCCL release %d", release);
		return -EINVAL;
	}
	atomic_store(&emulated_version, mock_nccl_version_code(release));
	/* 2.28+: "none" disables the tuner (2.27 treats it as a file name). */
	if (release >= 228 && plugin_env && !strcasecmp(plugin_env, "none")) {
		snprintf(m->err, sizeof(m->err), "NCCL_TUNER_PLUGIN=none");
		return -ECANCELED;
	}
	m->handle = open_plugin_lib(m, plugin_env);
	if (!m->handle)
		return -ENOENT;
	int top = release_max_tuner(release);
	if (max_version > 0 && max_version < top)
		top = max_version;
	/* Highest version first; NCCL also tries v2, which ncclbpf does not export. */
	for (int v = top; v >= 2; v--) {
		char sym[64];
		snprintf(sym, sizeof(sym), "ncclTunerPlugin_v%d", v);
		const void *t = dlsym(m->handle, sym);
		if (t) {
			m->tuner = t;
			m->tuner_version = v;
			return 0;
		}
	}
	snprintf(m->err, sizeof(m->err), "%.300s has no ncclTunerPlugin_v2..v%d", m->opened_as, top);
	dlclose(m->handle);
	m->handle = NULL;
	return -ENOSYS;
}

void mock_nccl_unload(struct mock_nccl *m)
{
	if (m->handle)
		dlclose(m->handle);
	m->handle = NULL;
	m->tuner = NULL;
	m->tuner_version = 0;
}

int mock_constants_defaults(double *k, int tuner_version)
{
	int rows = tuner_version >= 7 ? 5 : 4;
	/* plausible values: latencies (µs) 4.4..10.9 for [algo][proto], hw latencies 0.6..5,
	 * bandwidths (GB/s) 10 + 1.3 per entry in the 4-row order; a fifth row (Rubin) of
	 * 200 + table * 10 + scale, so that a row mix-up shows */
	for (int i = 0; i < 21; i++)
		k[i] = 4.4 + 0.3 * i;
	for (int i = 21; i < 84; i++)
		k[i] = 0.6 + 0.07 * (i - 21);
	for (int t = 0; t < 5; t++)
		for (int r = 0; r < rows; r++)
			for (int sc = 0; sc < 3; sc++)
				k[84 + (t * rows + r) * 3 + sc] =
					r < 4 ? 10.0 + (double)((t * 4 + r) * 3 + sc) * 1.3
					      : 200.0 + t * 10 + sc;
	return 84 + 5 * rows * 3;
}

int mock_comm_init(struct mock_nccl *m, struct mock_comm *c, uint64_t comm_id, int n_ranks,
		   int n_nodes)
{
	memset(c, 0, sizeof(*c));
	c->nccl = m;
	c->comm_id = comm_id;
	c->n_ranks = n_ranks;
	c->n_nodes = n_nodes;
	c->nccl_channels = n_ranks <= 1 ? 1 : (n_nodes > 1 ? 16 : 32);
	pthread_mutex_init(&c->lock, NULL);
	switch (m->tuner_version) {
	case 3: {
		const struct nb_nccl_tuner_v3 *t = m->tuner;
		return t->init((size_t)n_ranks, (size_t)n_nodes, mock_logger, &c->ctx);
	}
	case 4: {
		const struct nb_nccl_tuner_v4 *t = m->tuner;
		return t->init((size_t)n_ranks, (size_t)n_nodes, mock_logger, &c->ctx);
	}
	case 5:
	case 6:
	case 7: {
		/* v5, v6 and v7 share init's signature; v7's constants have 5 compute-capability
		 * rows per bandwidth table (159 doubles) instead of 4 (144) */
		const struct nb_nccl_tuner_v5 *t = m->tuner;
		struct nb_nccl_nvl_domain_info_v5 nvl = { n_nodes, n_ranks / (n_nodes ? n_nodes : 1),
							  n_ranks / (n_nodes ? n_nodes : 1) };
		c->n_constants = mock_constants_defaults(c->constants, m->tuner_version);
		return t->init(&c->ctx, comm_id, (size_t)n_ranks, (size_t)n_nodes, mock_logger, &nvl,
			       (struct nb_nccl_tuner_constants_v5 *)(void *)c->constants);
	}
	default:
		return NB_NCCL_INTERNAL_ERROR;
	}
}

int mock_comm_get_coll_info(struct mock_comm *c, int coll, size_t n_bytes, int num_pipe_ops,
			    int reg_buff, float table[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS],
			    int *n_channels)
{
	int rc;
	float **tbl = (float **)table; /* NCCL casts float[7][3] to float** (§2.3) */
	pthread_mutex_lock(&c->lock);
	switch (c->nccl->tuner_version) {
	case 3: {
		const struct nb_nccl_tuner_v3 *t = c->nccl->tuner;
		rc = t->get_coll_info(c->ctx, coll, n_bytes, num_pipe_ops, tbl, MOCK_NUM_ALGOS,
				      MOCK_NUM_PROTOS, n_channels);
		break;
	}
	case 4: {
		const struct nb_nccl_tuner_v4 *t = c->nccl->tuner;
		rc = t->get_coll_info(c->ctx, coll, n_bytes, num_pipe_ops, tbl, MOCK_NUM_ALGOS,
				      MOCK_NUM_PROTOS, reg_buff, n_channels);
		break;
	}
	case 5:
	case 6:
	case 7: {
		const struct nb_nccl_tuner_v5 *t = c->nccl->tuner;
		rc = t->get_coll_info(c->ctx, coll, n_bytes, num_pipe_ops, tbl, MOCK_NUM_ALGOS,
				      MOCK_NUM_PROTOS, reg_buff, n_channels);
		break;
	}
	default:
		rc = NB_NCCL_INTERNAL_ERROR;
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int mock_comm_get_chunk_size(struct mock_comm *c, int coll, size_t n_bytes, int algo,
			     int proto, int n_channels, size_t *chunk)
{
	if (c->nccl->tuner_version < 6)
		return 0;
	const struct nb_nccl_tuner_v6 *t = c->nccl->tuner;
	if (!t->get_chunk_size)
		return 0;
	pthread_mutex_lock(&c->lock);
	int rc = t->get_chunk_size(c->ctx, coll, n_bytes, algo, proto, n_channels, chunk);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int mock_comm_finalize(struct mock_comm *c)
{
	int rc;
	switch (c->nccl->tuner_version) {
	case 3:
		rc = ((const struct nb_nccl_tuner_v3 *)c->nccl->tuner)->destroy(c->ctx);
		break;
	case 4:
		rc = ((const struct nb_nccl_tuner_v4 *)c->nccl->tuner)->destroy(c->ctx);
		break;
	case 5:
	case 6:
	case 7:
		rc = ((const struct nb_nccl_tuner_v5 *)c->nccl->tuner)->finalize(c->ctx);
		break;
	default:
		rc = NB_NCCL_INTERNAL_ERROR;
	}
	c->ctx = NULL;
	pthread_mutex_destroy(&c->lock);
	return rc;
}

/* ---- cost model ---- */

const char *mock_topo_name(enum mock_topo t)
{
	static const char *const names[MOCK_TOPO_COUNT] = {
		"nvlink-node", "multi-node", "single-rank", "no-ll128", "ring-only",
	};
	return (unsigned)t < MOCK_TOPO_COUNT ? names[t] : "?";
}

int mock_topo_from_name(const char *name)
{
	for (int t = 0; t < MOCK_TOPO_COUNT; t++)
		if (!strcmp(name, mock_topo_name((enum mock_topo)t)))
			return t;
	return -1;
}

enum mock_topo mock_topo_default(int n_ranks, int n_nodes)
{
	return n_ranks <= 1 ? MOCK_TOPO_SINGLE_RANK
	       : n_nodes > 1 ? MOCK_TOPO_MULTI_NODE : MOCK_TOPO_NVLINK_NODE;
}

const char *mock_topo_mismatch(enum mock_topo t, int n_ranks, int n_nodes)
{
	if (t == MOCK_TOPO_SINGLE_RANK)
		return n_ranks == 1 ? NULL : "single-rank is one rank (--ranks 1)";
	if (n_ranks == 1)
		return "one rank has no links: the only shape is single-rank";
	if (t == MOCK_TOPO_MULTI_NODE)
		return n_nodes >= 2 ? NULL : "multi-node needs --nodes 2 or more";
	return n_nodes == 1 ? NULL : "an NVLink-node shape is one node (--nodes 1)";
}

/* Base latency (µs), per-hop latency (µs) and bus bandwidth (GB/s) per algo/proto, loosely
 * shaped after NCCL's tuning.cc for an H100 NVSwitch node and a 400G IB fabric. */
static const float base_lat[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS] = {
	{ 6.8f, 14.0f, 8.4f },  /* Tree */
	{ 6.6f, 14.0f, 8.4f },  /* Ring */
	{ 0, 0, 10.9f },        /* CollNet Direct */
	{ 0, 0, 14.0f },        /* CollNet Chain */
	{ 0, 0, 25.0f },        /* NVLS */
	{ 0, 0, 25.0f },        /* NVLS Tree */
	{ 8.0f, 14.0f, 8.4f },  /* PAT */
};
static const float hop_lat_nvl[MOCK_NUM_PROTOS] = { 0.6f, 1.25f, 4.0f };
static const float hop_lat_net[MOCK_NUM_PROTOS] = { 2.7f, 4.5f, 14.0f };
static const float bw_nvl[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS] = {
	{ 40, 300, 330 }, { 60, 320, 360 }, { 0, 0, 0 }, { 0, 0, 0 },
	{ 0, 0, 480 }, { 0, 0, 0 }, { 0, 0, 0 },
};
static const float bw_net[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS] = {
	{ 12, 42, 48 }, { 15, 40, 46 }, { 0, 0, 0 }, { 0, 0, 0 },
	{ 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 },
};

static int algo_supported(enum mock_topo topo, int coll, int a, int n_ranks, int n_nodes)
{
	switch (a) {
	case 0: /* Tree: AllReduce only */
		return coll == 4 && topo != MOCK_TOPO_RING_ONLY;
	case 1:
		return 1;
	case 4: /* NVLS: single node, AllReduce/AllGather/ReduceScatter */
		return topo != MOCK_TOPO_RING_ONLY && n_nodes == 1 && n_ranks >= 2 &&
		       topo != MOCK_TOPO_MULTI_NODE && (coll == 2 || coll == 3 || coll == 4);
	default: /* no CollNet, no NVLS Tree (single node), no PAT (8 GPUs per node) */
		return 0;
	}
}

void mock_cost_table(float table[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], enum mock_topo topo,
		     int coll, size_t n_bytes, int n_ranks, int n_nodes)
{
	for (int a = 0; a < MOCK_NUM_ALGOS; a++)
		for (int p = 0; p < MOCK_NUM_PROTOS; p++)
			table[a][p] = NB_NCCL_ALGO_PROTO_IGNORE;
	if (topo == MOCK_TOPO_SINGLE_RANK || n_ranks <= 1) {
		table[1][2] = 0.0f; /* §2.3: nRanks == 1 -> only Ring/Simple = 0 */
		return;
	}
	int multi = topo == MOCK_TOPO_MULTI_NODE || n_nodes > 1;
	for (int a = 0; a < MOCK_NUM_ALGOS; a++) {
		if (!algo_supported(topo, coll, a, n_ranks, n_nodes))
			continue;
		for (int p = 0; p < MOCK_NUM_PROTOS; p++) {
			float bw = multi ? bw_net[a][p] : bw_nvl[a][p];
			if (bw <= 0)
				continue;
			if (topo == MOCK_TOPO_NO_LL128 && p == 1)
				continue;
			/* Ring steps: 2(n-1) for AllReduce, n-1 otherwise; Tree: 2 log2(n). */
			float steps;
			if (a == 0) {
				int l = 0;
				while ((1 << l) < n_ranks)
					l++;
				steps = 2.0f * (float)l;
			} else if (a == 4) {
				steps = 2.0f;
			} else {
				steps = (float)(coll == 4 ? 2 * (n_ranks - 1) : n_ranks - 1);
			}
			float hop = multi ? hop_lat_net[p] : hop_lat_nvl[p];
			float factor = coll == 4 ? 2.0f * (float)(n_ranks - 1) / (float)n_ranks
						 : (float)(n_ranks - 1) / (float)n_ranks;
			table[a][p] = base_lat[a][p] + steps * hop +
				      factor * (float)n_bytes / (1000.0f * bw);
		}
	}
}

int mock_select(int release, const float table[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], int *algo,
		int *proto)
{
	/* 2.27/2.28 start from 3.6e9 µs, 2.29+ from FLT_MAX. */
	float best = release >= 229 ? FLT_MAX : 3600000000.0f;
	int ba = -1, bp = -1;
	for (int a = 0; a < MOCK_NUM_ALGOS; a++) {
		for (int p = 0; p < MOCK_NUM_PROTOS; p++) {
			float v = table[a][p];
			if (v == NB_NCCL_ALGO_PROTO_IGNORE || !(v >= 0.0f))
				continue;
			/* 2.31: candidates pushed to the front of a list, strict "<" while walking
			 * it: ties go to the highest index */
			if (v < best || (release >= 231 && v == best)) {
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

int mock_select_231(const float before[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS],
		    const float after[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], int *algo, int *proto,
		    float *time)
{
	/* candidates: the cells NCCL filled (valid general kernels); their time is whatever
	 * the plugin left there, negative included (no >= 0 filter in 2.31) */
	float best = FLT_MAX;
	int ba = -1, bp = -1;
	for (int a = 0; a < MOCK_NUM_ALGOS; a++)
		for (int p = 0; p < MOCK_NUM_PROTOS; p++) {
			if (!(before[a][p] >= 0.0f) || after[a][p] != after[a][p])
				continue;
			if (after[a][p] <= best) {
				best = after[a][p];
				ba = a;
				bp = p;
			}
		}
	if (ba < 0)
		return -1;
	*algo = ba;
	*proto = bp;
	if (time)
		*time = best;
	return 0;
}

/* One tuner call and 2.31's general selection on `table` (the candidates NCCL filled in). */
static int tune_231(struct mock_comm *c, const struct mock_call *call,
		    const float table[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], struct mock_231_result *r,
		    int *a, int *p, float *t, int *nch)
{
	float after[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
	memcpy(after, table, sizeof(after));
	*nch = 0;
	r->calls++;
	/* once per collective call: numPipeOps 1, this call's bytes */
	if (mock_comm_get_coll_info(c, call->coll, call->n_bytes, 1, call->reg_buff, after, nch))
		return -1;
	for (int x = 0; x < MOCK_NUM_ALGOS; x++)
		for (int y = 0; y < MOCK_NUM_PROTOS; y++)
			if (table[x][y] >= 0.0f && after[x][y] < 0.0f)
				r->negative_written = 1;
	*t = FLT_MAX;
	*a = *p = -1;
	return mock_select_231(table, after, a, p, t) == 0 ? 1 : 0;
}

int mock_collective_cfg(struct mock_comm *c, const float table[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS],
			const struct mock_call *call, struct mock_231_result *r)
{
	memset(r, 0, sizeof(*r));
	r->algo = r->proto = -1;
	/* the environment wins over a per-call selection for a function it forced */
	unsigned sel = call->env_forced ? 0 : call->alg_selection;
	float narrowed[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
	memcpy(narrowed, table, sizeof(narrowed));
	if (sel)
		for (int x = 0; x < MOCK_NUM_ALGOS; x++)
			if (!(sel >> x & 1))
				for (int y = 0; y < MOCK_NUM_PROTOS; y++)
					narrowed[x][y] = NB_NCCL_ALGO_PROTO_IGNORE;
	int a, p, nch;
	float t;
	int have = tune_231(c, call, narrowed, r, &a, &p, &t, &nch);
	if (have < 0)
		return -1;
	if (sel && !have) {
		/* the selection matches nothing: the full menu again (a second tuner call) */
		have = tune_231(c, call, table, r, &a, &p, &t, &nch);
		if (have < 0)
			return -1;
		if (call->force_alg_selection)
			return -2; /* ncclInvalidArgument for this call */
	}
	/* symmetric kernels compete after the tuner (not within a per-call selection); they
	 * have higher tuning ids: they win ties */
	if (!sel && call->sym_us >= 0.0f && (!have || call->sym_us <= t)) {
		if (call->sym_can_run) {
			r->sym = 1;
			r->n_channels = c->nccl_channels;
			return 0;
		}
		/* cannot run: selection again, restricted to general kernels */
		have = tune_231(c, call, table, r, &a, &p, &t, &nch);
		if (have < 0)
			return -1;
	}
	if (!have)
		return -1;
	r->algo = a;
	r->proto = p;
	r->tuner_channels = nch;
	/* nChannels is an upper cap of NCCL's own count */
	r->n_channels = nch > 0 && nch < c->nccl_channels ? nch : c->nccl_channels;
	return 0;
}

int mock_collective_231(struct mock_comm *c, int coll, size_t n_bytes, int reg_buff,
			const float table[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], float sym_us,
			int sym_can_run, struct mock_231_result *r)
{
	struct mock_call call = {.coll = coll, .n_bytes = n_bytes, .reg_buff = reg_buff,
				 .force_alg_selection = 1, .sym_us = sym_us,
				 .sym_can_run = sym_can_run};
	return mock_collective_cfg(c, table, &call, r);
}

int mock_check_invariants(int release, const float before[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS],
			  const float after[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], int n_channels,
			  int max_channels, char *why, size_t whylen)
{
	if (release >= 231)
		for (int a = 0; a < MOCK_NUM_ALGOS; a++)
			for (int p = 0; p < MOCK_NUM_PROTOS; p++)
				if (before[a][p] >= 0.0f && !(after[a][p] >= 0.0f)) {
					snprintf(why, whylen,
						 "negative/NaN %g written into candidate [%s][%s]: "
						 "NCCL 2.31 selects it",
						 after[a][p], mock_algo_name(a), mock_proto_name(p));
					return -1;
				}
	for (int a = 0; a < MOCK_NUM_ALGOS; a++) {
		for (int p = 0; p < MOCK_NUM_PROTOS; p++) {
			if (before[a][p] >= 0.0f)
				continue;
			if (memcmp(&before[a][p], &after[a][p], sizeof(float)) != 0) {
				snprintf(why, whylen, "unavailable entry [%s][%s] changed %g -> %g",
					 mock_algo_name(a), mock_proto_name(p), before[a][p],
					 after[a][p]);
				return -1;
			}
		}
	}
	int a, p;
	if (mock_select(release, before, &a, &p) == 0 && mock_select(release, after, &a, &p) != 0) {
		snprintf(why, whylen, "table selects nothing after the plugin");
		return -1;
	}
	if (n_channels < 0 || n_channels > NB_NCCL_MAXCHANNELS ||
	    (int)(int8_t)n_channels != n_channels) {
		snprintf(why, whylen, "nChannels %d outside 0..64", n_channels);
		return -1;
	}
	/* CollNet runs nChannels as its channel count without NCCL's clamp (ABI §2.4): a plugin
	 * must leave it at 0 whenever NCCL will run CollNet */
	if (n_channels > 0 && mock_select(release, after, &a, &p) == 0 && (a == 2 || a == 3)) {
		snprintf(why, whylen, "nChannels %d set while NCCL runs %s", n_channels,
			 mock_algo_name(a));
		return -1;
	}
	if (max_channels > 0 && n_channels > max_channels) {
		snprintf(why, whylen, "nChannels %d above the comm's %d channels", n_channels,
			 max_channels);
		return -1;
	}
	return 0;
}

int mock_nccl_issue_counts(const struct mock_nccl *m, uint64_t *counts, const char **names,
			   size_t n)
{
	if (!m->handle)
		return -1;
	size_t (*cnt)(uint64_t *, size_t) =
		(size_t(*)(uint64_t *, size_t))dlsym(m->handle, "ncclbpf_tuner_issue_counts");
	const char *(*nm)(size_t) = (const char *(*)(size_t))dlsym(m->handle,
								"ncclbpf_tuner_issue_name");
	if (!cnt || !nm)
		return -1;
	size_t k = cnt(counts, n);
	for (size_t i = 0; names && i < n; i++)
		names[i] = i < k ? nm(i) : NULL;
	return (int)k;
}

const char *mock_coll_name(int coll)
{
	static const char *const n[] = { "Broadcast", "Reduce", "AllGather", "ReduceScatter",
					 "AllReduce" };
	return coll >= 0 && coll < 5 ? n[coll] : "?";
}

const char *mock_algo_name(int algo)
{
	static const char *const n[] = { "Tree", "Ring", "CollNetDirect", "CollNetChain",
					 "NVLS", "NVLSTree", "PAT" };
	return algo >= 0 && algo < MOCK_NUM_ALGOS ? n[algo] : "?";
}

const char *mock_proto_name(int proto)
{
	static const char *const n[] = { "LL", "LL128", "Simple" };
	return proto >= 0 && proto < MOCK_NUM_PROTOS ? n[proto] : "?";
}

/* ---- logger ---- */

#define LOG_LINES 1024
#define LOG_LEN 512
static struct {
	int level;
	char text[LOG_LEN];
} log_lines[LOG_LINES];
static int log_n;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned long subsys_mask(void)
{
	static const struct {
		const char *name;
		unsigned long bit;
	} names[] = { { "INIT", 0x1 },     { "COLL", 0x2 },    { "NET", 0x10 },
		      { "GRAPH", 0x20 },   { "TUNING", 0x40 }, { "ENV", 0x80 },
		      { "PROFILE", 0x4000 }, { "ALL", ~0ul } };
	const char *s = getenv("NCCL_DEBUG_SUBSYS");
	if (!s || !s[0])
		return 0x1 | 0x80 | 0x1000; /* NCCL's default: INIT,ENV,BOOTSTRAP */
	unsigned long mask = 0;
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", s);
	for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (!strcasecmp(tok, names[i].name))
				mask |= names[i].bit;
	return mask;
}

void mock_logger(int level, unsigned long flags, const char *file, int line, const char *fmt,
		 ...)
{
	(void)file;
	(void)line;
	char text[LOG_LEN];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&log_lock);
	if (log_n < LOG_LINES) {
		log_lines[log_n].level = level;
		memcpy(log_lines[log_n].text, text, sizeof(text));
		log_n++;
	}
	pthread_mutex_unlock(&log_lock);

	const char *dbg = getenv("NCCL_DEBUG");
	int want = 0;
	if (dbg && !strcasecmp(dbg, "WARN"))
		want = 2;
	else if (dbg && !strcasecmp(dbg, "INFO"))
		want = 3;
	else if (dbg && !strcasecmp(dbg, "TRACE"))
		want = 5;
	if (level > want)
		return;
	if (level != 2 && !(flags & subsys_mask()))
		return;
	fprintf(stderr, "mockhost:%d [0] NCCL %s %s\n", (int)getpid(), level == 2 ? "WARN" : "INFO",
		text);
}

int mock_log_count_level(int level, const char *needle)
{
	int n = 0;
	pthread_mutex_lock(&log_lock);
	for (int i = 0; i < log_n; i++)
		if ((level < 0 || log_lines[i].level == level) && strstr(log_lines[i].text, needle))
			n++;
	pthread_mutex_unlock(&log_lock);
	return n;
}

int mock_log_count(const char *needle)
{
	return mock_log_count_level(-1, needle);
}

void mock_log_reset(void)
{
	pthread_mutex_lock(&log_lock);
	log_n = 0;
	pthread_mutex_unlock(&log_lock);
}

void mock_log_dump(FILE *out)
{
	pthread_mutex_lock(&log_lock);
	for (int i = 0; i < log_n; i++)
		fprintf(out, "  [%s] %s\n", log_lines[i].level == 2 ? "WARN" : "INFO",
			log_lines[i].text);
	pthread_mutex_unlock(&log_lock);
}

int mock_log_find(int from, int level, const char *needle, char *out, size_t len)
{
	int found = -1;
	pthread_mutex_lock(&log_lock);
	for (int i = from < 0 ? 0 : from; i < log_n && found < 0; i++)
		if ((level < 0 || log_lines[i].level == level) && strstr(log_lines[i].text, needle)) {
			found = i;
			snprintf(out, len, "%s", log_lines[i].text);
		}
	pthread_mutex_unlock(&log_lock);
	return found;
}
