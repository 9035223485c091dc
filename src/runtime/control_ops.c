/* The control plane's requests, run on its service thread (control.c): hello (ctl list),
 * status, maps, dump, update, reload, detach. Each reply is human text, or JSON when the
 * request has NBC_FLAG_JSON. Map and object access happens under the registry lock, so
 * a reload's reclamation cannot free what a reply is reading. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "maps/map.h"
#include "runtime/control_internal.h"
#include "runtime/registry_internal.h"

#define JSON(req) ((req)->flags & NBC_FLAG_JSON)

static const char *type_name(uint32_t t)
{
	switch (t) {
	case NB_MAP_TYPE_HASH: return "hash";
	case NB_MAP_TYPE_ARRAY: return "array";
	case NB_MAP_TYPE_PERCPU_ARRAY: return "percpu_array";
	case NB_MAP_TYPE_LRU_HASH: return "lru_hash";
	default: return "unknown";
	}
}

static void iso_time(uint64_t ns, char *buf, size_t len)
{
	time_t s = (time_t)(ns / 1000000000ull);
	struct tm tm;
	gmtime_r(&s, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ---- hello ---- */

static void count_comm(const struct runtime_comm_stats *s, void *arg)
{
	(void)s;
	(*(size_t *)arg)++;
}

static void hello(const struct nbc_request *req, struct ctl_buf *o)
{
	char host[256] = "?";
	size_t ncomm = 0, nprog = 0;
	gethostname(host, sizeof(host) - 1);
	control_foreach_comm(count_comm, &ncomm);
	if (JSON(req)) {
		cb_printf(o, "{\"schema\":\"ncclbpf.ctl.hello/1\",\"pid\":%d,\"uid\":%u,\"host\":",
			  (int)getpid(), (unsigned)geteuid());
		cb_json_str(o, host);
		cb_printf(o, ",\"socket\":");
		cb_json_str(o, runtime_control_path());
		cb_printf(o, ",\"communicators\":%zu,\"programs\":[", ncomm);
	} else {
		cb_printf(o, "%-8d %-20s %5zu  ", (int)getpid(), host, ncomm);
	}
	pthread_mutex_lock(&registry_lock);
	for (unsigned h = 0; h < NB_HOOK_COUNT; h++) {
		const struct nb_hook_chain *c = runtime_hook_chain((enum nb_hook_type)h);
		for (size_t i = 0; c && i < c->len; i++, nprog++) {
			if (JSON(req)) {
				cb_printf(o, "%s", nprog ? "," : "");
				cb_json_str(o, c->items[i].label);
			} else {
				cb_printf(o, "%s%s", nprog ? "," : "", c->items[i].label);
			}
		}
	}
	pthread_mutex_unlock(&registry_lock);
	if (JSON(req))
		cb_printf(o, "]}\n");
	else
		cb_printf(o, "%s\n", nprog ? "" : "-");
}

/* ---- status ---- */

struct status_ctx {
	const struct nbc_request *req;
	struct ctl_buf *o;
	int n;
	uint64_t tuner_active; /* version of the tuner chain straight decisions run, 0: none */
};

void runtime_comm_sources(const struct runtime_comm_stats *s, uint64_t *out)
{
	uint64_t counted = 0;
	for (int i = 0; i < NB_DSRC_COUNT; i++) {
		out[i] = atomic_load_explicit(&s->src[i], memory_order_relaxed);
		counted += out[i];
	}
	/* the rest took the straight path: the policy's when they changed something, else
	 * keep_src's (counters read without a lock: clamped, never negative) */
	uint64_t calls = atomic_load_explicit(&s->calls, memory_order_relaxed);
	uint64_t changed = atomic_load_explicit(&s->changed, memory_order_relaxed);
	uint64_t gen_changed = atomic_load_explicit(&s->src_changed, memory_order_relaxed);
	uint64_t straight = calls > counted ? calls - counted : 0;
	uint64_t straight_changed = changed > gen_changed ? changed - gen_changed : 0;
	if (straight_changed > straight)
		straight_changed = straight;
	out[NB_DSRC_POLICY] += straight_changed;
	out[s->keep_src < NB_DSRC_COUNT ? s->keep_src : NB_DSRC_UNKNOWN] +=
		straight - straight_changed;
}

static void status_comm(const struct runtime_comm_stats *s, void *arg)
{
	struct status_ctx *sc = arg;
	uint64_t calls = atomic_load_explicit(&s->calls, memory_order_relaxed);
	uint64_t changed = atomic_load_explicit(&s->changed, memory_order_relaxed);
	uint64_t faults = atomic_load_explicit(&s->faults, memory_order_relaxed);
	uint64_t clamps = atomic_load_explicit(&s->clamps, memory_order_relaxed);
	uint64_t ver = atomic_load_explicit(&s->chain_version, memory_order_relaxed);
	uint64_t general = atomic_load_explicit(&s->general, memory_order_relaxed);
	/* decisions since the last general-path one took the straight path: they run the
	 * active chain (straight decisions run only while no gate is open) */
	if (calls != atomic_load_explicit(&s->general_mark, memory_order_relaxed) &&
	    sc->tuner_active)
		ver = sc->tuner_active;
	uint64_t by_src[NB_DSRC_COUNT];
	runtime_comm_sources(s, by_src);
	if (JSON(sc->req)) {
		cb_printf(sc->o, "%s{\"kind\":\"%s\",\"comm\":\"0x%016" PRIx64 "\",\"ranks\":%u,"
			  "\"nodes\":%u,\"abi\":%u,\"decisions\":%" PRIu64 ",\"changed\":%" PRIu64
			  ",\"faults\":%" PRIu64 ",\"clamps\":%" PRIu64 ",\"chain_version\":%" PRIu64
			  ",\"general_path\":%" PRIu64 ",\"sources\":{", sc->n ? "," : "", s->kind,
			  s->comm_id, s->n_ranks, s->n_nodes, s->abi_version, calls, changed, faults,
			  clamps, ver, general);
		for (int i = 0; i < NB_DSRC_COUNT; i++)
			cb_printf(sc->o, "%s\"%s\":%" PRIu64, i ? "," : "", nb_dsrc_name((unsigned)i),
				  by_src[i]);
		cb_printf(sc->o, "}}");
	} else {
		cb_printf(sc->o, "  %-6s 0x%016" PRIx64 " %5u %5u  v%-2u %12" PRIu64 " %10" PRIu64
			  " %7" PRIu64 " %7" PRIu64 "  %" PRIu64 "\n", s->kind, s->comm_id, s->n_ranks,
			  s->n_nodes, s->abi_version, calls, changed, faults, clamps, ver);
		int n = 0;
		for (int i = 0; i < NB_DSRC_COUNT; i++)
			if (by_src[i])
				cb_printf(sc->o, "%s %s %" PRIu64, n++ ? "," : "         decided by:",
					  nb_dsrc_name((unsigned)i), by_src[i]);
		if (n)
			cb_printf(sc->o, "\n");
	}
	sc->n++;
}

struct emit_ctx {
	struct runtime_status_emit e;
	struct status_ctx *sc;
	int n;
};

static void emit_u64(struct runtime_status_emit *e, const char *key, uint64_t v)
{
	struct emit_ctx *ec = (struct emit_ctx *)e;
	if (JSON(ec->sc->req)) {
		cb_printf(ec->sc->o, "%s", ec->n++ ? "," : "");
		cb_json_str(ec->sc->o, key);
		cb_printf(ec->sc->o, ":%" PRIu64, v);
	} else {
		cb_printf(ec->sc->o, "  %-24s %" PRIu64 "\n", key, v);
	}
}

static void emit_str(struct runtime_status_emit *e, const char *key, const char *v)
{
	struct emit_ctx *ec = (struct emit_ctx *)e;
	if (JSON(ec->sc->req)) {
		cb_printf(ec->sc->o, "%s", ec->n++ ? "," : "");
		cb_json_str(ec->sc->o, key);
		cb_printf(ec->sc->o, ":");
		cb_json_str(ec->sc->o, v);
	} else {
		cb_printf(ec->sc->o, "  %-24s %s\n", key, v);
	}
}

static void status_provider(const char *section, void (*prov)(struct runtime_status_emit *e),
			    void *arg)
{
	struct status_ctx *sc = arg;
	struct emit_ctx ec = {{emit_u64, emit_str}, sc, 0};
	if (JSON(sc->req)) {
		cb_printf(sc->o, ",");
		cb_json_str(sc->o, section);
		cb_printf(sc->o, ":{");
	} else {
		cb_printf(sc->o, "\n%s:\n", section);
	}
	prov(&ec.e);
	if (JSON(sc->req))
		cb_printf(sc->o, "}");
}

static void status_chain(const struct nbc_request *req, struct ctl_buf *o,
			 const struct nb_hook_chain *c, const char *role, int *n)
{
	for (size_t i = 0; c && i < c->len; i++) {
		const struct nb_attachment *a = &c->items[i];
		const struct registry_obj *ob = a->owner;
		char when[64] = "-";
		if (ob)
			iso_time(ob->loaded_ns, when, sizeof(when));
		const char *mode = ncclbpf_program_is_jitted(a->prog) ? "JIT" : "interpreter";
		if (JSON(req)) {
			cb_printf(o, "%s{\"label\":", (*n)++ ? "," : "");
			cb_json_str(o, a->label);
			cb_printf(o, ",\"object\":");
			cb_json_str(o, ob ? ob->entry : "");
			cb_printf(o, ",\"name\":");
			cb_json_str(o, ncclbpf_program_name(a->prog));
			cb_printf(o, ",\"mode\":\"%s\",\"insns\":%zu,\"loaded_at\":\"%s\","
				  "\"version\":%" PRIu64 ",\"role\":\"%s\"}", mode,
				  ncclbpf_program_insn_count(a->prog), when, c->version, role);
		} else {
			cb_printf(o, "    %-36s %-11s %5zu insns  loaded %s  version %" PRIu64 "%s%s\n",
				  a->label, mode, ncclbpf_program_insn_count(a->prog), when, c->version,
				  *role ? "  " : "", role);
			cb_printf(o, "      object %s\n", ob ? ob->entry : "-");
		}
	}
}

static void status(const struct nbc_request *req, struct ctl_buf *o)
{
	char host[256] = "?";
	struct runtime_registry_stats rs;
	gethostname(host, sizeof(host) - 1);
	runtime_registry_stats(&rs);
	uint64_t pending = runtime_activation_pending();
	if (JSON(req)) {
		cb_printf(o, "{\"schema\":\"ncclbpf.ctl.status/1\",\"pid\":%d,\"uid\":%u,\"host\":",
			  (int)getpid(), (unsigned)geteuid());
		cb_json_str(o, host);
		cb_printf(o, ",\"protocol\":%u,\"version\":%" PRIu64 ",\"reloads\":%" PRIu64
			  ",\"reload_failures\":%" PRIu64 ",\"retired_pending\":%zu,"
			  "\"objects_live\":%zu,\"activation_pending\":%" PRIu64 ",\"hooks\":[",
			  NBC_VERSION, rs.version, rs.reloads, rs.reload_failures, rs.retired_pending,
			  rs.objects_live, pending);
	} else {
		cb_printf(o, "pid %d on %s: policy version %" PRIu64 ", %" PRIu64 " reload(s), %" PRIu64
			  " failed; %zu live object(s), %zu retired chain(s) awaiting readers%s\n",
			  (int)getpid(), host, rs.version, rs.reloads, rs.reload_failures,
			  rs.objects_live, rs.retired_pending,
			  pending ? "; a reload is activating across ranks" : "");
	}
	pthread_mutex_lock(&registry_lock);
	const struct nb_hook_chain *tuner = runtime_hook_chain(NB_HOOK_TUNER);
	uint64_t tuner_active = tuner && !atomic_load(&tuner->gated) ? tuner->version : 0;
	int nh = 0;
	for (unsigned h = NB_HOOK_TUNER; h < NB_HOOK_COUNT; h++) {
		const struct nb_hook_chain *c = runtime_hook_chain((enum nb_hook_type)h);
		bool gated = c && atomic_load(&c->gated);
		int np = 0;
		if (JSON(req)) {
			cb_printf(o, "%s{\"hook\":\"%s\",\"version\":%" PRIu64 ",\"gated\":%s,"
				  "\"faults\":%" PRIu64 ",\"programs\":[", nh++ ? "," : "",
				  hook_desc((enum nb_hook_type)h)->name, c ? c->version : 0,
				  gated ? "true" : "false", runtime_fault_count((enum nb_hook_type)h));
		} else {
			cb_printf(o, "\nhook %s: %zu program(s)%s, %" PRIu64 " fault(s)\n",
				  hook_desc((enum nb_hook_type)h)->name, c ? c->len : 0,
				  gated ? " (staged, activating across ranks)" : "",
				  runtime_fault_count((enum nb_hook_type)h));
		}
		status_chain(req, o, c, gated ? "staged" : "", &np);
		if (gated)
			status_chain(req, o, c->prev, "running until activation", &np);
		if (JSON(req))
			cb_printf(o, "]}");
	}
	pthread_mutex_unlock(&registry_lock);
	struct status_ctx sc = {req, o, 0, tuner_active};
	if (JSON(req)) {
		cb_printf(o, "],\"communicators\":[");
	} else {
		cb_printf(o, "\ncommunicators:\n  %-6s %-18s %5s %5s  %-3s %12s %10s %7s %7s  %s\n",
			  "kind", "comm", "ranks", "nodes", "abi", "decisions", "changed", "faults",
			  "clamps", "chain");
	}
	control_foreach_comm(status_comm, &sc);
	if (JSON(req))
		cb_printf(o, "]");
	else if (!sc.n)
		cb_printf(o, "  (none)\n");
	control_foreach_provider(status_provider, &sc);
	if (JSON(req))
		cb_printf(o, "}\n");
}

/* ---- maps ---- */

struct map_ref {
	const char *object; /* "" for process-wide pinned maps */
	const char *name;
	struct nb_map *map;
	bool readonly;
	const char *how;    /* "own", "shared", "pinned" */
};

struct pinned_list {
	struct map_ref refs[64];
	size_t n;
};

static void collect_pinned(struct nb_map *m, void *arg)
{
	struct pinned_list *pl = arg;
	if (pl->n < 64)
		pl->refs[pl->n++] = (struct map_ref){"", map_name(m), m, false, "pinned"};
}

/* Calls fn for every map of every published object, then the pinned maps, until fn
 * returns non-zero. Registry lock held by the caller. */
static int foreach_map(int (*fn)(const struct map_ref *r, void *arg), void *arg)
{
	for (struct registry_obj *o = registry_objs; o; o = o->next) {
		if (!registry_obj_published(o))
			continue; /* retired, freed once its readers leave */
		for (size_t i = 0; i < o->obj->map_cnt; i++) {
			struct ncclbpf_map *m = &o->obj->maps[i];
			if (!m->map || m->pinned)
				continue;
			struct map_ref r = {ncclbpf_object_name(o->obj), m->def->name, m->map,
					    m->readonly_prog,
					    reload_map_is_shared(m->map) ? "shared" : "own"};
			int rc = fn(&r, arg);
			if (rc)
				return rc;
		}
	}
	struct pinned_list pl = {.n = 0};
	runtime_pinned_foreach(collect_pinned, &pl);
	for (size_t i = 0; i < pl.n; i++) {
		int rc = fn(&pl.refs[i], arg);
		if (rc)
			return rc;
	}
	return 0;
}

static size_t map_entries(struct nb_map *m)
{
	uint8_t key[NB_MAP_MAX_KEY_SIZE], next[NB_MAP_MAX_KEY_SIZE];
	size_t n = 0;
	const void *k = NULL;
	if (map_type(m) == NB_MAP_TYPE_ARRAY || map_type(m) == NB_MAP_TYPE_PERCPU_ARRAY)
		return map_max_entries(m);
	while (n <= map_max_entries(m) && map_get_next_key(m, k, next) == 0) {
		memcpy(key, next, map_key_size(m));
		k = key;
		n++;
	}
	return n;
}

struct maps_ctx {
	const struct nbc_request *req;
	struct ctl_buf *o;
	int n;
};

static int list_one(const struct map_ref *r, void *arg)
{
	struct maps_ctx *mc = arg;
	struct nb_map *m = r->map;
	const char *how = map_agreed_slot(m) >= 0 ? "agreed" : r->how;
	size_t n = map_entries(m);
	if (JSON(mc->req)) {
		cb_printf(mc->o, "%s{\"object\":", mc->n++ ? "," : "");
		cb_json_str(mc->o, r->object);
		cb_printf(mc->o, ",\"name\":");
		cb_json_str(mc->o, r->name);
		cb_printf(mc->o, ",\"type\":\"%s\",\"key_size\":%u,\"value_size\":%u,"
			  "\"max_entries\":%u,\"flags\":%u,\"entries\":%zu,\"storage\":\"%s\","
			  "\"readonly\":%s}", type_name(map_type(m)), map_key_size(m),
			  map_value_size(m), map_max_entries(m), map_flags(m), n, how,
			  r->readonly ? "true" : "false");
	} else {
		char full[300];
		snprintf(full, sizeof(full), "%s%s%s", r->object, *r->object ? ":" : "", r->name);
		cb_printf(mc->o, "%-40s %-13s %5u %6u %11u %8zu  %s%s\n", full,
			  type_name(map_type(m)), map_key_size(m), map_value_size(m),
			  map_max_entries(m), n, how, r->readonly ? ", read-only" : "");
	}
	return 0;
}

static void maps(const struct nbc_request *req, struct ctl_buf *o)
{
	struct maps_ctx mc = {.req = req, .o = o};
	if (JSON(req))
		cb_printf(o, "{\"schema\":\"ncclbpf.ctl.maps/1\",\"maps\":[");
	else
		cb_printf(o, "%-40s %-13s %5s %6s %11s %8s  %s\n", "map", "type", "key", "value",
			  "max_entries", "entries", "storage");
	pthread_mutex_lock(&registry_lock);
	foreach_map(list_one, &mc);
	pthread_mutex_unlock(&registry_lock);
	if (JSON(req))
		cb_printf(o, "]}\n");
}

struct find_ctx {
	const char *want;
	struct map_ref found;
	int matches;
};

static int find_one(const struct map_ref *r, void *arg)
{
	struct find_ctx *fc = arg;
	const char *colon = strrchr(fc->want, ':');
	bool hit;
	if (colon)
		hit = !strcmp(colon + 1, r->name) && strlen(r->object) == (size_t)(colon - fc->want) &&
		      !strncmp(fc->want, r->object, (size_t)(colon - fc->want));
	else
		hit = !strcmp(fc->want, r->name);
	if (hit && (!fc->matches || fc->found.map != r->map)) {
		if (!fc->matches)
			fc->found = *r;
		fc->matches++;
	}
	return 0;
}

/* Under the registry lock. Fills err and returns NULL when absent or ambiguous. */
static const struct map_ref *find_map(struct find_ctx *fc, const char *name, char *err,
				      size_t errlen)
{
	memset(fc, 0, sizeof(*fc));
	fc->want = name;
	foreach_map(find_one, fc);
	if (!fc->matches) {
		snprintf(err, errlen, "no map '%s' (see 'maps')", name);
		return NULL;
	}
	if (fc->matches > 1) {
		snprintf(err, errlen, "map name '%s' is ambiguous: name it OBJECT:MAP (see 'maps')",
			 name);
		return NULL;
	}
	return &fc->found;
}

static void hex_bytes(struct ctl_buf *o, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cb_printf(o, "%02x", p[i]);
}

static void int_value(struct ctl_buf *o, const uint8_t *p, size_t n)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n && i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	cb_printf(o, "%" PRIu64, v);
}

/* One entry: JSON object (after a comma unless first) or a text line. */
static void print_entry(const struct nbc_request *req, struct ctl_buf *o, const uint8_t *key,
			uint32_t ks, const uint8_t *val, uint32_t vs, bool first)
{
	if (JSON(req)) {
		cb_printf(o, "%s{\"key\":\"", first ? "" : ",");
		hex_bytes(o, key, ks);
		cb_printf(o, "\",\"value\":\"");
		hex_bytes(o, val, vs);
		cb_printf(o, "\"");
		if (ks <= 8) {
			cb_printf(o, ",\"key_int\":");
			int_value(o, key, ks);
		}
		if (vs <= 8) {
			cb_printf(o, ",\"value_int\":");
			int_value(o, val, vs);
		}
		cb_printf(o, "}");
		return;
	}
	cb_printf(o, "key ");
	if (ks <= 8)
		int_value(o, key, ks), cb_printf(o, " (hex:"), hex_bytes(o, key, ks), cb_printf(o, ")");
	else
		cb_printf(o, "hex:"), hex_bytes(o, key, ks);
	cb_printf(o, "  value ");
	if (vs <= 8)
		int_value(o, val, vs), cb_printf(o, " (hex:"), hex_bytes(o, val, vs), cb_printf(o, ")");
	else
		cb_printf(o, "hex:"), hex_bytes(o, val, vs);
	cb_printf(o, "\n");
}

/* ---- agreed maps: the published view, per communicator ---- */

struct agreed_dump {
	const struct nbc_request *req;
	struct ctl_buf *o;
	uint32_t max_entries, value_size;
	int n;
};

static void agreed_one(const struct runtime_agreed_view *v, void *arg)
{
	struct agreed_dump *ad = arg;
	struct ctl_buf *o = ad->o;
	static const uint8_t zeros[64];
	if (JSON(ad->req)) {
		cb_printf(o, "%s{\"comm\":\"0x%016" PRIx64 "\",\"version\":%" PRIu64
			  ",\"activation_seq\":%" PRIu64 ",\"tuner_seq\":%" PRIu64 ",\"fallback\":%s,"
			  "\"fallback_seq\":", ad->n ? "," : "", v->comm_id, v->version,
			  v->activation_seq, v->tuner_seq, v->fallback ? "true" : "false");
		if (v->fallback)
			cb_printf(o, "%" PRIu64, v->fallback_seq);
		else
			cb_printf(o, "null");
		cb_printf(o, ",\"entries\":[");
	} else {
		cb_printf(o, "comm 0x%016" PRIx64 ": ", v->comm_id);
		if (v->version)
			cb_printf(o, "version %" PRIu64 " (active from collective %" PRIu64 ")",
				  v->version, v->activation_seq);
		else
			cb_printf(o, "version 0 (nothing published yet: zeros)");
		cb_printf(o, ", last collective %" PRIu64, v->tuner_seq);
		if (v->fallback)
			cb_printf(o, "; falls back to NCCL's defaults from collective %" PRIu64,
				  v->fallback_seq);
		cb_printf(o, "\n");
	}
	for (uint32_t k = 0; k < ad->max_entries; k++) {
		const uint8_t *val = v->data ? v->data + (size_t)k * v->stride : NULL;
		if (!val && ad->value_size > sizeof(zeros))
			break; /* nothing published: said above */
		print_entry(ad->req, o, (const uint8_t *)&k, 4, val ? val : zeros, ad->value_size,
			    k == 0);
	}
	if (JSON(ad->req))
		cb_printf(o, "]}");
	ad->n++;
}

/* What the tuner programs of each communicator read; the map's own storage is only what
 * this rank's profiler programs write outside any communicator, never read by a tuner. */
static int dump_agreed(const struct nbc_request *req, struct ctl_buf *o, const char *name,
		       int slot, uint32_t vs)
{
	struct nb_map_agreed_desc d;
	if (!map_agreed_desc((uint32_t)slot, &d)) {
		cb_printf(o, "map '%s' was unloaded meanwhile\n", name);
		return -ENOENT;
	}
	struct agreed_dump ad = {req, o, d.max_entries, vs, 0};
	if (JSON(req)) {
		cb_printf(o, "{\"schema\":\"ncclbpf.ctl.dump/1\",\"map\":");
		cb_json_str(o, name);
		cb_printf(o, ",\"type\":\"array\",\"agreed\":true,\"key_size\":4,"
			  "\"value_size\":%u,\"epoch\":%u,\"communicators\":[", vs, d.epoch);
	} else {
		cb_printf(o, "agreed map %s (epoch %u collectives): the published version each "
			  "communicator's tuner reads\n", name, d.epoch);
	}
	control_agreed_views((uint32_t)slot, d.generation, agreed_one, &ad);
	if (JSON(req))
		cb_printf(o, "],\"count\":%d}\n", ad.n);
	else if (!ad.n)
		cb_printf(o, "no communicator reads it (yet): every rank reads version 0, zeros\n");
	return 0;
}

static int dump(const struct nbc_request *req, struct ctl_buf *o)
{
	char err[300];
	struct find_ctx fc;
	pthread_mutex_lock(&registry_lock);
	const struct map_ref *r = find_map(&fc, req->argv[0], err, sizeof(err));
	if (!r) {
		pthread_mutex_unlock(&registry_lock);
		cb_printf(o, "%s\n", err);
		return -ENOENT;
	}
	struct nb_map *m = r->map;
	uint32_t ks = map_key_size(m), vs = map_value_size(m);
	int slot = map_agreed_slot(m);
	if (slot >= 0) {
		/* the agreement layer's lock is taken without ours held (no order between them) */
		char name[300];
		snprintf(name, sizeof(name), "%s", r->name);
		pthread_mutex_unlock(&registry_lock);
		return dump_agreed(req, o, name, slot, vs);
	}
	uint8_t key[NB_MAP_MAX_KEY_SIZE], next[NB_MAP_MAX_KEY_SIZE];
	uint8_t *val = malloc(vs);
	const void *k = NULL;
	size_t n = 0;
	if (!val) {
		pthread_mutex_unlock(&registry_lock);
		cb_printf(o, "out of memory\n");
		return -ENOMEM;
	}
	if (JSON(req)) {
		cb_printf(o, "{\"schema\":\"ncclbpf.ctl.dump/1\",\"map\":");
		cb_json_str(o, r->name);
		cb_printf(o, ",\"type\":\"%s\",\"key_size\":%u,\"value_size\":%u,\"entries\":[",
			  type_name(map_type(m)), ks, vs);
	}
	while (n <= map_max_entries(m) && map_get_next_key(m, k, next) == 0) {
		memcpy(key, next, ks);
		k = key;
		map_epoch_enter();
		void *v = map_lookup(m, key);
		if (v)
			memcpy(val, v, vs);
		map_epoch_exit();
		if (!v)
			continue; /* deleted meanwhile */
		print_entry(req, o, key, ks, val, vs, n == 0);
		n++;
	}
	pthread_mutex_unlock(&registry_lock);
	free(val);
	if (JSON(req))
		cb_printf(o, "],\"count\":%zu}\n", n);
	else
		cb_printf(o, "%zu entr%s\n", n, n == 1 ? "y" : "ies");
	return 0;
}

static int update(const struct nbc_request *req, struct ctl_buf *o)
{
	char err[300];
	struct find_ctx fc;
	uint8_t key[NB_MAP_MAX_KEY_SIZE];
	pthread_mutex_lock(&registry_lock);
	const struct map_ref *r = find_map(&fc, req->argv[0], err, sizeof(err));
	int rc = -ENOENT;
	if (!r) {
		cb_printf(o, "%s\n", err);
		goto out;
	}
	rc = -EPERM;
	if (map_agreed_slot(r->map) >= 0) {
		cb_printf(o, "map '%s' is an agreed map (NCCLBPF_F_AGREED): the tuners of every rank "
			  "read the version the agreement layer published, which a local update "
			  "cannot change (its values come from the profiler programs' contributions "
			  "on all ranks): not updated\n", r->name);
		goto out;
	}
	if (r->readonly || (map_flags(r->map) & NB_MAP_F_RDONLY_PROG)) {
		cb_printf(o, "map '%s' is read-only to programs (constants the verifier may have "
			  "relied on): not updated\n", r->name);
		goto out;
	}
	uint32_t ks = map_key_size(r->map), vs = map_value_size(r->map);
	uint8_t *val = malloc(vs);
	rc = -ENOMEM;
	if (!val) {
		cb_printf(o, "out of memory\n");
		goto out;
	}
	if ((rc = nbc_parse_value(req->argv[1], key, ks, err, sizeof(err))) < 0) {
		cb_printf(o, "key: %s\n", err);
	} else if ((rc = nbc_parse_value(req->argv[2], val, vs, err, sizeof(err))) < 0) {
		cb_printf(o, "value: %s\n", err);
	} else if ((rc = map_update(r->map, key, val, NB_ANY)) < 0) {
		cb_printf(o, "update of '%s' failed: %s\n", r->name, strerror(-rc));
	} else {
		if (JSON(req)) {
			cb_printf(o, "{\"schema\":\"ncclbpf.ctl.update/1\",\"ok\":true,\"map\":");
			cb_json_str(o, r->name);
			cb_printf(o, ",\"updated\":true}\n");
		} else {
			cb_printf(o, "updated %s\n", r->name);
		}
	}
	free(val);
out:
	pthread_mutex_unlock(&registry_lock);
	return rc;
}

/* ---- reload / detach ---- */

static int parse_hook(const char *name, enum nb_hook_type *hook, struct ctl_buf *o)
{
	const struct nb_hook_desc *d = name ? hook_by_name(name) : NULL;
	if (!name) {
		*hook = NB_HOOK_COUNT;
		return 0;
	}
	if (!d || d->type == NB_HOOK_CONFORMANCE) {
		cb_printf(o, "unknown hook '%s' (tuner, tuner/chunk, profiler, net, env)\n", name);
		return -EINVAL;
	}
	*hook = d->type;
	return 0;
}

static void result(const struct nbc_request *req, struct ctl_buf *o, int rc, const char *msg)
{
	if (JSON(req)) {
		cb_printf(o, "{\"schema\":\"ncclbpf.ctl.%s/1\",\"ok\":%s,\"status\":%d,"
			  "\"programs\":%d,\"message\":", nbc_op_name(req->op),
			  rc >= 0 ? "true" : "false", rc < 0 ? rc : 0, rc > 0 ? rc : 0);
		cb_json_str(o, msg);
		cb_printf(o, "}\n");
	} else {
		cb_printf(o, "%s", msg);
	}
}

static int reload(const struct nbc_request *req, struct ctl_buf *o)
{
	enum nb_hook_type hook;
	if (parse_hook(req->argc > 1 ? req->argv[1] : NULL, &hook, o))
		return -EINVAL;
	size_t len = 256 * 1024;
	char *msg = malloc(len);
	if (!msg) {
		cb_printf(o, "out of memory\n");
		return -ENOMEM;
	}
	int rc = runtime_reload(req->argv[0], hook,
				(req->flags & NBC_FLAG_FORCE) ? RUNTIME_RELOAD_FORCE : 0, msg, len);
	if (rc >= 0 && hook == NB_HOOK_COUNT)
		control_watch_set_spec(req->argv[0]);
	result(req, o, rc, msg);
	free(msg);
	return rc < 0 ? rc : 0;
}

static int detach(const struct nbc_request *req, struct ctl_buf *o)
{
	enum nb_hook_type hook;
	char msg[8192];
	if (parse_hook(req->argc > 0 ? req->argv[0] : NULL, &hook, o))
		return -EINVAL;
	int rc = runtime_detach(hook, (req->flags & NBC_FLAG_FORCE) ? RUNTIME_RELOAD_FORCE : 0, msg,
				sizeof(msg));
	if (rc == 0)
		snprintf(msg, sizeof(msg), "nothing attached\n");
	result(req, o, rc, msg);
	return rc < 0 ? rc : 0;
}

int control_handle(const struct nbc_request *req, struct ctl_buf *out)
{
	switch (req->op) {
	case NBC_OP_HELLO: hello(req, out); return 0;
	case NBC_OP_STATUS: status(req, out); return 0;
	case NBC_OP_MAPS: maps(req, out); return 0;
	case NBC_OP_DUMP: return dump(req, out);
	case NBC_OP_UPDATE: return update(req, out);
	case NBC_OP_RELOAD: return reload(req, out);
	case NBC_OP_DETACH: return detach(req, out);
	default: cb_printf(out, "unknown request\n"); return -EINVAL;
	}
}
