/* ncclbpf trace DIR [-o trace.json]: merges the per-process JSON-lines logs that
 * NCCLBPF_TRACE=DIR writes (src/plugin/profiler/trace_writer.c) into one Chrome trace / Perfetto
 * JSON file:
 *   - one process per rank (pid = the rank of the process in its largest communicator);
 *   - thread lanes: "API" (GroupApi, CollApi, P2pApi, KernelLaunch, CE events), "enqueue"
 *     (Group, Coll, P2p: host enqueue), "collectives" (enqueue-to-completion of each
 *     collective, nccl:<Func>), "proxy" (ProxyOp, ProxyStep, NetPlugin, ProxyCtrl), and
 *     "GPU ch N" (KernelCh and, NCCL 2.31+, its KernelPhase slices, on GPU timestamps
 *     converted to the host clock; userTag and phase durations in the args). A lane whose
 *     events would partially overlap is split ("proxy #2", ...) so that complete events on
 *     one lane always nest;
 *   - parent links as flow arrows (cat "parent"), and the same collective on different
 *     ranks linked by (communicator, sequence number) in start-time order (cat "coll").
 * Input lines are flat JSON objects; anything malformed is skipped and counted. */
#define _GNU_SOURCE /* qsort_r */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loader/object.h"
#include "runtime/decision_src.h"
#include "tools/cli.h"

/* ---- flat JSON object lines ---- */
#define TR_MAX_KV 32
struct tr_kv {
	char key[24];
	char val[96];
	bool is_str;
};
struct tr_line {
	int n;
	struct tr_kv kv[TR_MAX_KV];
};

static const char *tr_get(const struct tr_line *l, const char *k)
{
	for (int i = 0; i < l->n; i++)
		if (!strcmp(l->kv[i].key, k))
			return l->kv[i].val;
	return NULL;
}

static uint64_t tr_u64(const struct tr_line *l, const char *k)
{
	const char *v = tr_get(l, k);
	return v ? strtoull(v, NULL, 0) : 0;
}

static int64_t tr_i64(const struct tr_line *l, const char *k, int64_t dflt)
{
	const char *v = tr_get(l, k);
	return v && *v ? strtoll(v, NULL, 0) : dflt;
}

static const char *tr_skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
		p++;
	return p;
}

/* Parses a string starting at the opening quote into out; returns the char after it. */
static const char *tr_str(const char *p, char *out, size_t cap)
{
	size_t n = 0;
	if (*p != '"')
		return NULL;
	p++;
	while (*p && *p != '"') {
		char c = *p++;
		if (c == '\\') {
			if (!*p)
				return NULL;
			c = *p++;
			if (c == 'n')
				c = '\n';
			else if (c == 't')
				c = '\t';
			else if (c == 'u') { /* our writer never emits \u (names are sanitized): map to '?' */
				for (int i = 0; i < 4 && *p; i++)
					p++;
				c = '?';
			}
		}
		if (n + 1 < cap)
			out[n++] = c;
	}
	if (*p != '"')
		return NULL;
	out[n] = 0;
	return p + 1;
}

static bool tr_parse(const char *s, struct tr_line *l)
{
	l->n = 0;
	const char *p = tr_skip_ws(s);
	if (*p++ != '{')
		return false;
	p = tr_skip_ws(p);
	if (*p == '}')
		return true;
	for (;;) {
		if (l->n >= TR_MAX_KV)
			return false;
		struct tr_kv *kv = &l->kv[l->n];
		p = tr_str(tr_skip_ws(p), kv->key, sizeof(kv->key));
		if (!p)
			return false;
		p = tr_skip_ws(p);
		if (*p++ != ':')
			return false;
		p = tr_skip_ws(p);
		if (*p == '"') {
			p = tr_str(p, kv->val, sizeof(kv->val));
			if (!p)
				return false;
			kv->is_str = true;
		} else {
			size_t n = 0;
			while (*p && *p != ',' && *p != '}' && *p != ' ') {
				if (n + 1 < sizeof(kv->val))
					kv->val[n++] = *p;
				p++;
			}
			kv->val[n] = 0;
			kv->is_str = false;
			if (!n)
				return false;
		}
		l->n++;
		p = tr_skip_ws(p);
		if (*p == '}')
			return true;
		if (*p++ != ',')
			return false;
	}
}

/* ---- the model ---- */
enum tr_lane { LANE_API, LANE_ENQ, LANE_COLL, LANE_PROXY, LANE_GPU };

struct tr_ev {
	int file;
	char type[16];
	char name[40];
	uint64_t id, parent_id;
	long parent; /* index, -1 none */
	uint64_t t0, t1;
	uint64_t gpu0, gpu1;
	bool stopped;
	int lane, ch;
	int ctx;
	uint64_t seq, bytes;
	int algo, proto, nch, peer, step;
	uint64_t comm;
	int rank;
	int tid; /* assigned */
	int src;    /* coll_done: decision source (runtime/decision_src.h), -1 none */
	long pol;   /* coll_done: index into tr_model.pols, -1 none */
	uint64_t tag;        /* the application's per-call tag (profiler v7), 0 none */
	uint64_t phase[3];   /* collectives: kernel phases, GPU ns (0 none); KernelPhase: -1 */
	int phase_id;        /* KernelPhase events: 0..2, else -1 */
};

struct tr_comm {
	int file, ctx;
	uint64_t comm;
	int rank, nranks;
	char name[48];
};

struct tr_file {
	char path[512];
	int os_pid;
	char host[64];
	int rank;     /* chosen rank (largest communicator) */
	int best_nranks;
	int chrome_pid;
};

struct tr_model {
	struct tr_ev *ev;
	size_t n, cap;
	struct tr_comm *comms;
	size_t ncomm, capcomm;
	struct tr_file *files;
	size_t nfiles;
	size_t bad_lines;
	/* policy names ("file.bpf.o:prog@version") of coll_done lines, each once */
	char (*pols)[96];
	size_t npol, cappol;
};


/* open-addressing map id -> event index of the currently open event (per file) */
struct tr_idmap {
	uint64_t *keys;
	long *vals;
	size_t cap, n;
};

static void idmap_put(struct tr_idmap *m, uint64_t k, long v);

static void idmap_grow(struct tr_idmap *m)
{
	struct tr_idmap old = *m;
	m->cap = old.cap ? old.cap * 2 : 1024;
	m->keys = calloc(m->cap, sizeof(uint64_t));
	m->vals = calloc(m->cap, sizeof(long));
	m->n = 0;
	if (!m->keys || !m->vals) {
		fprintf(stderr, "ncclbpf trace: out of memory\n");
		exit(2);
	}
	for (size_t i = 0; i < old.cap; i++)
		if (old.keys[i] && old.vals[i] >= 0)
			idmap_put(m, old.keys[i], old.vals[i]);
	free(old.keys);
	free(old.vals);
}

static size_t idmap_slot(const struct tr_idmap *m, uint64_t k)
{
	uint64_t h = k * 0x9e3779b97f4a7c15ull;
	size_t i = (size_t)(h >> 20) & (m->cap - 1);
	while (m->keys[i] && m->keys[i] != k)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static void idmap_put(struct tr_idmap *m, uint64_t k, long v)
{
	if ((m->n + 1) * 2 > m->cap)
		idmap_grow(m);
	size_t i = idmap_slot(m, k);
	if (!m->keys[i])
		m->n++;
	m->keys[i] = k;
	m->vals[i] = v;
}

static long idmap_get(const struct tr_idmap *m, uint64_t k)
{
	if (!m->cap || !k)
		return -1;
	size_t i = idmap_slot(m, k);
	return m->keys[i] == k ? m->vals[i] : -1;
}

static void *tr_grow(void *p, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return p;
	size_t nc = *cap ? *cap * 2 : 256;
	void *q = realloc(p, nc * elem);
	if (!q) {
		fprintf(stderr, "ncclbpf trace: out of memory\n");
		exit(2);
	}
	*cap = nc;
	return q;
}

/* The index of a policy name in m->pols (added once), -1 for none. */
static long pol_index(struct tr_model *m, const char *name)
{
	if (!name || !*name)
		return -1;
	for (size_t i = 0; i < m->npol; i++)
		if (!strcmp(m->pols[i], name))
			return (long)i;
	m->pols = tr_grow(m->pols, &m->cappol, m->npol, sizeof(*m->pols));
	snprintf(m->pols[m->npol], sizeof(m->pols[0]), "%s", name);
	return (long)m->npol++;
}

/* NCCL 2.31's kernel phases (profiler v7 KernelPhase, phaseId) */
static const char *phase_name(int id)
{
	static const char *const n[] = {"initial_sync", "compute", "final_sync"};
	return id >= 0 && id < 3 ? n[id] : "phase";
}

static int lane_of(const char *type)
{
	if (!strcmp(type, "Coll") || !strcmp(type, "P2p") || !strcmp(type, "Group"))
		return LANE_ENQ;
	if (!strcmp(type, "KernelCh") || !strcmp(type, "KernelPhase"))
		return LANE_GPU;
	if (!strncmp(type, "Proxy", 5) || !strcmp(type, "NetPlugin"))
		return LANE_PROXY;
	return LANE_API;
}

static const char *coll_name(int t)
{
	static const char *const n[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
					"AllReduce"};
	return t >= 0 && t < 5 ? n[t] : "Collective";
}

static void tr_load_file(struct tr_model *m, int fi, FILE *f)
{
	struct tr_idmap open = {0};
	struct tr_line l;
	char *buf = NULL;
	size_t bcap = 0;
	ssize_t len;
	while ((len = getline(&buf, &bcap, f)) > 0) {
		if (!tr_parse(buf, &l)) {
			m->bad_lines++;
			continue;
		}
		const char *ev = tr_get(&l, "ev");
		if (!ev) {
			m->bad_lines++;
			continue;
		}
		struct tr_file *tf = &m->files[fi];
		if (!strcmp(ev, "process")) {
			tf->os_pid = (int)tr_i64(&l, "pid", 0);
			const char *h = tr_get(&l, "host");
			snprintf(tf->host, sizeof(tf->host), "%s", h ? h : "?");
		} else if (!strcmp(ev, "comm")) {
			m->comms = tr_grow(m->comms, &m->capcomm, m->ncomm, sizeof(*m->comms));
			struct tr_comm *c = &m->comms[m->ncomm++];
			c->file = fi;
			c->ctx = (int)tr_i64(&l, "ctx", 0);
			c->comm = tr_u64(&l, "comm");
			c->rank = (int)tr_i64(&l, "rank", 0);
			c->nranks = (int)tr_i64(&l, "nranks", 0);
			const char *nm = tr_get(&l, "name");
			snprintf(c->name, sizeof(c->name), "%s", nm ? nm : "");
			if (c->nranks > tf->best_nranks && c->rank >= 0) {
				tf->best_nranks = c->nranks;
				tf->rank = c->rank;
			}
		} else if (!strcmp(ev, "start")) {
			m->ev = tr_grow(m->ev, &m->cap, m->n, sizeof(*m->ev));
			struct tr_ev *e = &m->ev[m->n];
			memset(e, 0, sizeof(*e));
			e->file = fi;
			e->id = tr_u64(&l, "id");
			e->parent_id = tr_u64(&l, "parent");
			e->parent = idmap_get(&open, e->parent_id);
			const char *ty = tr_get(&l, "type");
			snprintf(e->type, sizeof(e->type), "%s", ty ? ty : "?");
			e->t0 = tr_u64(&l, "t");
			e->gpu0 = tr_u64(&l, "gpu");
			e->lane = lane_of(e->type);
			e->ch = (int)tr_i64(&l, "ch", -1);
			e->ctx = (int)tr_i64(&l, "ctx", -1);
			e->seq = tr_u64(&l, "seq");
			e->bytes = tr_u64(&l, "bytes");
			e->algo = (int)tr_i64(&l, "algo", -1);
			e->proto = (int)tr_i64(&l, "proto", -1);
			e->nch = (int)tr_i64(&l, "nch", 0);
			e->peer = (int)tr_i64(&l, "peer", -1);
			e->step = (int)tr_i64(&l, "step", -1);
			e->tag = tr_u64(&l, "tag");
			e->phase_id = (int)tr_i64(&l, "phase", -1);
			const char *fn = tr_get(&l, "func");
			if (!strcmp(e->type, "Coll") || !strcmp(e->type, "CollApi") ||
			    !strcmp(e->type, "P2p") || !strcmp(e->type, "P2pApi"))
				snprintf(e->name, sizeof(e->name), "%s %s", e->type, fn ? fn : "");
			else if (e->lane == LANE_GPU && e->phase_id >= 0)
				snprintf(e->name, sizeof(e->name), "nccl:%s",
					 phase_name(e->phase_id));
			else if (e->lane == LANE_GPU)
				snprintf(e->name, sizeof(e->name), "nccl:KernelCh %d", e->ch);
			else
				snprintf(e->name, sizeof(e->name), "%s", e->type);
			idmap_put(&open, e->id, (long)m->n);
			m->n++;
		} else if (!strcmp(ev, "stop") || !strcmp(ev, "state")) {
			long i = idmap_get(&open, tr_u64(&l, "id"));
			if (i < 0)
				continue;
			struct tr_ev *e = &m->ev[i];
			if (!strcmp(ev, "stop")) {
				e->t1 = tr_u64(&l, "t");
				e->stopped = true;
				idmap_put(&open, e->id, -1);
			} else if (tr_i64(&l, "state", 0) == 22 || /* KernelChStop */
				   tr_i64(&l, "state", 0) == 31) { /* KernelPhaseStop (v7) */
				e->gpu1 = tr_u64(&l, "gpu");
			}
		} else if (!strcmp(ev, "coll_done")) {
			m->ev = tr_grow(m->ev, &m->cap, m->n, sizeof(*m->ev));
			struct tr_ev *e = &m->ev[m->n];
			memset(e, 0, sizeof(*e));
			e->file = fi;
			e->parent = idmap_get(&open, tr_u64(&l, "id")); /* the Coll event if open */
			if (e->parent < 0)
				e->parent = -1;
			snprintf(e->type, sizeof(e->type), "coll");
			e->id = tr_u64(&l, "id");
			e->ch = e->peer = e->step = -1;
			int ct = (int)tr_i64(&l, "coll", -1);
			snprintf(e->name, sizeof(e->name), "nccl:%s", coll_name(ct));
			e->lane = LANE_COLL;
			e->t0 = tr_u64(&l, "start");
			e->t1 = e->t0 + tr_u64(&l, "host_ns");
			e->gpu0 = tr_u64(&l, "gpu_start");
			e->gpu1 = e->gpu0 ? e->gpu0 + tr_u64(&l, "gpu_ns") : 0;
			e->stopped = true;
			e->ctx = (int)tr_i64(&l, "ctx", -1);
			e->comm = tr_u64(&l, "comm");
			e->seq = tr_u64(&l, "seq");
			e->bytes = tr_u64(&l, "bytes");
			e->algo = (int)tr_i64(&l, "algo", -1);
			e->proto = (int)tr_i64(&l, "proto", -1);
			e->nch = (int)tr_i64(&l, "nch", 0);
			e->rank = (int)tr_i64(&l, "rank", 0);
			const char *src = tr_get(&l, "src");
			e->src = src ? nb_dsrc_from_name(src, strlen(src)) : -1;
			e->pol = pol_index(m, tr_get(&l, "policy"));
			e->tag = tr_u64(&l, "tag");
			e->phase[0] = tr_u64(&l, "ph0");
			e->phase[1] = tr_u64(&l, "ph1");
			e->phase[2] = tr_u64(&l, "ph2");
			e->phase_id = -1;
			m->n++;
		}
	}
	free(buf);
	free(open.keys);
	free(open.vals);
}

/* GPU lanes use the converted GPU clock when both timestamps exist. */
static void ev_span(const struct tr_ev *e, uint64_t *a, uint64_t *b)
{
	if (e->lane == LANE_GPU && e->gpu0 && e->gpu1 >= e->gpu0) {
		*a = e->gpu0;
		*b = e->gpu1;
	} else {
		*a = e->t0;
		*b = e->t1 >= e->t0 ? e->t1 : e->t0;
	}
}

/* ---- lane assignment: complete events on one tid must nest ---- */
struct tr_stack {
	uint64_t *end;
	size_t n, cap;
};

struct tr_lanegroup {
	int file, lane, ch;
	struct tr_stack *sub;
	size_t nsub;
};

static int cmp_by_start(const void *a, const void *b, void *ctx)
{
	const struct tr_ev *ev = ctx;
	const struct tr_ev *x = &ev[*(const long *)a], *y = &ev[*(const long *)b];
	uint64_t xa, xb, ya, yb;
	ev_span(x, &xa, &xb);
	ev_span(y, &ya, &yb);
	if (x->file != y->file)
		return x->file - y->file;
	if (xa != ya)
		return xa < ya ? -1 : 1;
	if (xb != yb)
		return xb > yb ? -1 : 1; /* longer first: it encloses */
	return *(const long *)a < *(const long *)b ? -1 : 1;
}

static int lane_base_tid(int lane, int ch)
{
	switch (lane) {
	case LANE_API: return 1;
	case LANE_ENQ: return 2;
	case LANE_COLL: return 3;
	case LANE_PROXY: return 4;
	default: return 100 + (ch >= 0 && ch < 900 ? ch : 899);
	}
}

static void assign_lanes(struct tr_model *m, long *order, size_t n)
{
	qsort_r(order, n, sizeof(long), cmp_by_start, m->ev);
	/* groups keyed by (file, lane, channel); few of them: linear search */
	struct tr_lanegroup *groups = NULL;
	size_t ng = 0, capg = 0;
	for (size_t k = 0; k < n; k++) {
		struct tr_ev *e = &m->ev[order[k]];
		int ch = e->lane == LANE_GPU ? e->ch : -1;
		struct tr_lanegroup *g = NULL;
		for (size_t i = 0; i < ng; i++)
			if (groups[i].file == e->file && groups[i].lane == e->lane && groups[i].ch == ch)
				g = &groups[i];
		if (!g) {
			groups = tr_grow(groups, &capg, ng, sizeof(*groups));
			g = &groups[ng++];
			memset(g, 0, sizeof(*g));
			g->file = e->file;
			g->lane = e->lane;
			g->ch = ch;
		}
		uint64_t a, b;
		ev_span(e, &a, &b);
		size_t s;
		for (s = 0; s < g->nsub; s++) {
			struct tr_stack *st = &g->sub[s];
			while (st->n && st->end[st->n - 1] <= a)
				st->n--;
			if (!st->n || st->end[st->n - 1] >= b)
				break;
		}
		if (s == g->nsub) {
			g->sub = realloc(g->sub, (g->nsub + 1) * sizeof(*g->sub));
			if (!g->sub)
				exit(2);
			memset(&g->sub[g->nsub], 0, sizeof(*g->sub));
			g->nsub++;
		}
		struct tr_stack *st = &g->sub[s];
		st->end = tr_grow(st->end, &st->cap, st->n, sizeof(uint64_t));
		st->end[st->n++] = b;
		e->tid = lane_base_tid(e->lane, ch) + 1000 * (int)s;
	}
	for (size_t i = 0; i < ng; i++) {
		for (size_t s = 0; s < groups[i].nsub; s++)
			free(groups[i].sub[s].end);
		free(groups[i].sub);
	}
	free(groups);
}

/* ---- output ---- */
/* Writes s as the body of a JSON string (quotes, backslashes and controls escaped). */
static void json_esc(FILE *o, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(o, "\\%c", c);
		else if (c < 0x20)
			fprintf(o, "\\u%04x", c);
		else
			fputc(c, o);
	}
}

static void ts_us(FILE *o, uint64_t ns)
{
	fprintf(o, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

static const char *lane_name(int tid, char *buf, size_t cap)
{
	int base = tid % 1000, sub = tid / 1000;
	const char *n;
	char tmp[32];
	switch (base) {
	case 1: n = "API"; break;
	case 2: n = "enqueue"; break;
	case 3: n = "collectives"; break;
	case 4: n = "proxy"; break;
	default:
		snprintf(tmp, sizeof(tmp), "GPU ch %d", base - 100);
		n = tmp;
		break;
	}
	if (sub)
		snprintf(buf, cap, "%s #%d", n, sub + 1);
	else
		snprintf(buf, cap, "%s", n);
	return buf;
}

struct tr_out {
	FILE *o;
	bool first;
	uint64_t flow_id;
	uint64_t t_origin;
};

static void out_sep(struct tr_out *w)
{
	fputs(w->first ? "\n" : ",\n", w->o);
	w->first = false;
}

static void out_flow(struct tr_out *w, const char *cat, int pid0, int tid0, uint64_t ts0,
		     int pid1, int tid1, uint64_t ts1)
{
	uint64_t id = ++w->flow_id;
	out_sep(w);
	fprintf(w->o, "{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"s\",\"id\":%" PRIu64
		",\"pid\":%d,\"tid\":%d,\"ts\":", cat, cat, id, pid0, tid0);
	ts_us(w->o, ts0 - w->t_origin);
	fputs("}", w->o);
	out_sep(w);
	fprintf(w->o, "{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"f\",\"bp\":\"e\",\"id\":%" PRIu64
		",\"pid\":%d,\"tid\":%d,\"ts\":", cat, cat, id, pid1, tid1);
	ts_us(w->o, ts1 - w->t_origin);
	fputs("}", w->o);
}

static int cmp_coll(const void *a, const void *b, void *ctx)
{
	const struct tr_ev *ev = ctx;
	const struct tr_ev *x = &ev[*(const long *)a], *y = &ev[*(const long *)b];
	if (x->comm != y->comm)
		return x->comm < y->comm ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	if (strcmp(x->name, y->name))
		return strcmp(x->name, y->name);
	if (x->t0 != y->t0)
		return x->t0 < y->t0 ? -1 : 1;
	return x->file - y->file;
}

static int tr_write(struct tr_model *m, FILE *o)
{
	struct tr_out w = {.o = o, .first = true, .t_origin = UINT64_MAX};
	long *order = malloc((m->n ? m->n : 1) * sizeof(long));
	if (!order)
		return -ENOMEM;
	size_t n = 0;
	for (size_t i = 0; i < m->n; i++) {
		struct tr_ev *e = &m->ev[i];
		if (!e->stopped)
			continue; /* never stopped (process killed, or a dropped stop) */
		uint64_t a, b;
		ev_span(e, &a, &b);
		if (a < w.t_origin)
			w.t_origin = a;
		order[n++] = (long)i;
	}
	if (w.t_origin == UINT64_MAX)
		w.t_origin = 0;
	for (size_t i = 0; i < m->n; i++)
		m->ev[i].tid = -1;
	assign_lanes(m, order, n);

	/* process ids: the rank, unless two files claim the same one */
	for (size_t f = 0; f < m->nfiles; f++) {
		int pid = m->files[f].best_nranks ? m->files[f].rank : (int)f;
		for (size_t g = 0; g < f; g++)
			if (m->files[g].chrome_pid == pid)
				pid = 100000 + (int)f;
		m->files[f].chrome_pid = pid;
	}
	int world = 0;
	for (size_t f = 0; f < m->nfiles; f++)
		if (m->files[f].best_nranks > world)
			world = m->files[f].best_nranks;

	fprintf(o, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"ncclbpf trace\","
		   "\"clock\":\"CLOCK_MONOTONIC\",\"origin_ns\":%" PRIu64 ",\"world_size\":%d},"
		   "\"traceEvents\":[",
		w.t_origin, world);
	/* metadata: process and lane names */
	for (size_t f = 0; f < m->nfiles; f++) {
		struct tr_file *tf = &m->files[f];
		out_sep(&w);
		fprintf(o, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
			   "\"args\":{\"name\":\"rank %d (",
			tf->chrome_pid, tf->best_nranks ? tf->rank : -1);
		json_esc(o, tf->host);
		fprintf(o, ":%d)\"}}", tf->os_pid);
		out_sep(&w);
		fprintf(o, "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
			   "\"args\":{\"sort_index\":%d}}",
			tf->chrome_pid, tf->chrome_pid);
	}
	{
		/* one thread_name per (file, tid) seen */
		size_t cap = 0, nn = 0;
		uint64_t *seen = NULL;
		for (size_t k = 0; k < n; k++) {
			struct tr_ev *e = &m->ev[order[k]];
			uint64_t key = (uint64_t)e->file << 32 | (uint32_t)e->tid;
			bool dup = false;
			for (size_t i = 0; i < nn && !dup; i++)
				dup = seen[i] == key;
			if (dup)
				continue;
			seen = tr_grow(seen, &cap, nn, sizeof(*seen));
			seen[nn++] = key;
			char nb[48];
			out_sep(&w);
			fprintf(o, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
				   "\"args\":{\"name\":\"%s\"}}",
				m->files[e->file].chrome_pid, e->tid, lane_name(e->tid, nb, sizeof(nb)));
			out_sep(&w);
			fprintf(o, "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
				   "\"args\":{\"sort_index\":%d}}",
				m->files[e->file].chrome_pid, e->tid, e->tid);
		}
		free(seen);
	}
	/* complete events */
	for (size_t k = 0; k < n; k++) {
		struct tr_ev *e = &m->ev[order[k]];
		uint64_t a, b;
		ev_span(e, &a, &b);
		out_sep(&w);
		fputs("{\"name\":\"", o);
		json_esc(o, e->name);
		fputs("\",\"cat\":\"", o);
		json_esc(o, e->type);
		fprintf(o, "\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":",
			m->files[e->file].chrome_pid, e->tid);
		ts_us(o, a - w.t_origin);
		fputs(",\"dur\":", o);
		ts_us(o, b - a);
		fprintf(o, ",\"args\":{\"id\":\"0x%" PRIx64 "\"", e->id);
		if (e->lane == LANE_COLL || !strcmp(e->type, "Coll"))
			fprintf(o, ",\"seq\":%" PRIu64 ",\"bytes\":%" PRIu64
				   ",\"algo\":%d,\"proto\":%d,\"nChannels\":%d",
				e->seq, e->bytes, e->algo, e->proto, e->nch);
		if (e->lane == LANE_COLL)
			fprintf(o, ",\"comm\":\"0x%" PRIx64 "\",\"rank\":%d,\"host_us\":%.3f,"
				   "\"gpu_us\":%.3f",
				e->comm, e->rank, (double)(e->t1 - e->t0) / 1000.0,
				e->gpu1 > e->gpu0 ? (double)(e->gpu1 - e->gpu0) / 1000.0 : 0.0);
		if (e->lane == LANE_COLL && e->src >= 0)
			fprintf(o, ",\"decided_by\":\"%s\"", nb_dsrc_name((unsigned)e->src));
		if (e->lane == LANE_COLL && e->pol >= 0) {
			fputs(",\"policy\":\"", o);
			json_esc(o, m->pols[e->pol]);
			fputs("\"", o);
		}
		if (e->ch >= 0)
			fprintf(o, ",\"channel\":%d", e->ch);
		if (e->peer >= 0)
			fprintf(o, ",\"peer\":%d", e->peer);
		if (e->step >= 0)
			fprintf(o, ",\"step\":%d", e->step);
		if (e->tag)
			fprintf(o, ",\"userTag\":%" PRIu64, e->tag);
		if (e->phase_id >= 0)
			fprintf(o, ",\"phase\":\"%s\"", phase_name(e->phase_id));
		for (int p = 0; p < 3 && e->lane == LANE_COLL; p++)
			if (e->phase[p])
				fprintf(o, ",\"%s_us\":%.3f", phase_name(p),
					(double)e->phase[p] / 1000.0);
		fputs("}}", o);
	}
	/* parent -> child flows (same process; both emitted) */
	for (size_t k = 0; k < n; k++) {
		struct tr_ev *e = &m->ev[order[k]];
		if (e->parent < 0 || e->lane == LANE_COLL)
			continue;
		struct tr_ev *p = &m->ev[e->parent];
		if (!p->stopped || p->tid < 0)
			continue;
		uint64_t pa, pb, ca, cb;
		ev_span(p, &pa, &pb);
		ev_span(e, &ca, &cb);
		/* inside the parent slice: [pa, pb), or pa for a zero-length one */
		uint64_t last = pb > pa ? pb - 1 : pa;
		uint64_t s = ca < pa ? pa : ca > last ? last : ca;
		if (ca < s)
			continue; /* a flow must not go back in time */
		int pid = m->files[e->file].chrome_pid;
		out_flow(&w, "parent", pid, p->tid, s, pid, e->tid, ca);
	}
	/* the same collective on different ranks: (comm, seq, type), in start-time order */
	size_t nc = 0;
	long *colls = malloc((n ? n : 1) * sizeof(long));
	if (colls) {
		for (size_t k = 0; k < n; k++)
			if (m->ev[order[k]].lane == LANE_COLL)
				colls[nc++] = order[k];
		qsort_r(colls, nc, sizeof(long), cmp_coll, m->ev);
		for (size_t i = 0; i + 1 < nc; i++) {
			struct tr_ev *x = &m->ev[colls[i]], *y = &m->ev[colls[i + 1]];
			if (x->comm != y->comm || x->seq != y->seq || strcmp(x->name, y->name) ||
			    x->file == y->file)
				continue;
			out_flow(&w, "coll", m->files[x->file].chrome_pid, x->tid, x->t0,
				 m->files[y->file].chrome_pid, y->tid, y->t0);
		}
		free(colls);
	}
	fputs("\n]}\n", o);
	free(order);
	return 0;
}

static void tr_free(struct tr_model *m)
{
	free(m->ev);
	free(m->comms);
	free(m->files);
	free(m->pols);
}

static int has_suffix(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && !strcmp(s + a - b, suf);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* not static: tests/profiler/test_profiler_trace.c calls it directly */
int cmd_trace(int argc, char **argv);
int cmd_trace(int argc, char **argv)
{
	const char *dir = NULL, *out = "trace.json";
	for (int i = 1; i < argc; i++) {
		int r = cli_opt_value("trace", argc, argv, &i, "-o", &out);
		if (r < 0)
			return CLI_EXIT_USAGE;
		if (r > 0)
			continue;
		if (argv[i][0] == '-' && argv[i][1])
			return cli_usage_error("trace", "unknown option '%s'", argv[i]);
		if (dir)
			return cli_usage_error("trace", "unexpected argument '%s'", argv[i]);
		dir = argv[i];
	}
	if (!dir)
		return cli_usage_error("trace", "no directory given");
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr, "ncclbpf trace: cannot open %s: %s\n", dir, strerror(errno));
		return 1;
	}
	char **names = NULL;
	size_t nn = 0, capn = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!has_suffix(de->d_name, ".jsonl"))
			continue;
		names = tr_grow(names, &capn, nn, sizeof(*names));
		names[nn] = strdup(de->d_name);
		if (names[nn])
			nn++;
	}
	closedir(d);
	if (!nn) {
		fprintf(stderr, "ncclbpf trace: no *.jsonl files in %s\n", dir);
		free(names);
		return 1;
	}
	qsort(names, nn, sizeof(*names), cmp_str);
	struct tr_model m;
	memset(&m, 0, sizeof(m));
	m.files = calloc(nn, sizeof(*m.files));
	if (!m.files)
		return CLI_EXIT_REFUSED;
	for (size_t i = 0; i < nn; i++) {
		struct tr_file *tf = &m.files[m.nfiles];
		snprintf(tf->path, sizeof(tf->path), "%s/%s", dir, names[i]);
		char why[256];
		int fd = loader_open_regular(tf->path, why, sizeof(why)); /* a FIFO never blocks */
		FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
		if (!f) {
			if (fd >= 0) {
				snprintf(why, sizeof(why), "%s", strerror(errno));
				close(fd);
			}
			fprintf(stderr, "ncclbpf trace: cannot read %s: %s\n", tf->path, why);
			continue;
		}
		snprintf(tf->host, sizeof(tf->host), "?");
		size_t n_before = m.n, c_before = m.ncomm;
		tr_load_file(&m, (int)m.nfiles, f);
		fclose(f);
		if (!tf->os_pid) { /* not written by NCCLBPF_TRACE: no process header */
			fprintf(stderr, "ncclbpf trace: %s has no process header, skipped\n",
				tf->path);
			m.n = n_before;
			m.ncomm = c_before;
			memset(tf, 0, sizeof(*tf));
			continue;
		}
		m.nfiles++;
	}
	for (size_t i = 0; i < nn; i++)
		free(names[i]);
	free(names);
	/* fail closed: an empty trace would look like a job that did nothing */
	if (!m.nfiles || !m.n) {
		if (!m.nfiles)
			fprintf(stderr, "ncclbpf trace: none of the %zu *.jsonl files in %s is an "
					"NCCLBPF_TRACE log; nothing written\n", nn, dir);
		else
			fprintf(stderr, "ncclbpf trace: %zu process%s in %s but no events; nothing "
					"written\n", m.nfiles, m.nfiles == 1 ? "" : "es", dir);
		tr_free(&m);
		return CLI_EXIT_REFUSED;
	}
	FILE *o = fopen(out, "w");
	if (!o) {
		fprintf(stderr, "ncclbpf trace: cannot write %s: %s\n", out, strerror(errno));
		tr_free(&m);
		return 1;
	}
	int rc = tr_write(&m, o);
	if (fclose(o) != 0)
		rc = -EIO;
	if (rc) {
		fprintf(stderr, "ncclbpf trace: writing %s failed\n", out);
		tr_free(&m);
		return 1;
	}
	fprintf(stderr, "ncclbpf trace: %zu processes, %zu events -> %s%s\n", m.nfiles, m.n, out,
		m.bad_lines ? " (some malformed lines skipped)" : "");
	tr_free(&m);
	return 0;
}

NCCLBPF_CLI_COMMAND(trace, .name = "trace", .run = cmd_trace, .synopsis = "DIR [-o FILE]",
		    .summary = "merge NCCLBPF_TRACE logs into one Chrome / Perfetto trace",
		    .help = "Merges the per-process JSON-lines logs that NCCLBPF_TRACE=DIR wrote "
			    "(DIR/*.jsonl) into\none Chrome trace / Perfetto JSON file: one "
			    "process per rank, lanes for API calls,\nenqueue, collectives, proxy "
			    "and GPU channels, flow arrows for parent links and\nfor the same "
			    "collective across ranks (docs/observability.md). Open it in\n"
			    "https://ui.perfetto.dev. Malformed lines are skipped and counted.\n"
			    "\n"
			    "options:\n"
			    "  -o FILE   output file (default trace.json)\n"
			    "\n"
			    "exit status: 0 written; 1 DIR unreadable, no *.jsonl file in it, none "
			    "of them an\nNCCLBPF_TRACE log, or no event at all (nothing written); "
			    "2 usage.\n");
