/* Loading policy specs into chains: NCCLBPF_POLICY at init (entries that fail are skipped)
 * and hot reload (all-or-nothing, the full diagnostic returned), detach, and map reuse.
 *
 * Map reuse: before a new object's programs are verified and linked, each of its maps
 * declared in SEC(".maps") whose name, type, key size, value size, max_entries and flags
 * equal those of a map of a published object is re-bound to that map's storage (the fresh,
 * empty storage is freed). State survives the reload, and the program is verified against
 * exactly the shape it will access. Global data (.rodata/.data/.bss) is never reused: a new
 * version's constants and initial values must win. Storage used by several objects is
 * reference counted here and freed with the last object (registry_obj_put). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "maps/map.h"
#include "runtime/control.h"
#include "runtime/registry_internal.h"

/* ---- report buffer ---- */

struct report {
	char *buf;
	size_t len, cap;
};

static void __attribute__((format(printf, 2, 3))) say(struct report *r, const char *fmt, ...)
{
	va_list ap;
	if (!r || !r->buf || r->cap == 0)
		return;
	size_t room = r->len < r->cap ? r->cap - r->len : 0;
	va_start(ap, fmt);
	int n = vsnprintf(r->buf + r->len, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		r->len += (size_t)n < room ? (size_t)n : room ? room - 1 : 0;
}

/* ---- shared map storage ---- */

struct shared_map {
	struct shared_map *next;
	struct nb_map *map;
	unsigned refs; /* objects using it */
};
static struct shared_map *shared_maps; /* under registry_lock */

static struct shared_map *shared_find(const struct nb_map *m)
{
	for (struct shared_map *s = shared_maps; s; s = s->next)
		if (s->map == m)
			return s;
	return NULL;
}

void reload_release_maps(struct ncclbpf_object *obj)
{
	for (size_t i = 0; obj && i < obj->map_cnt; i++) {
		struct ncclbpf_map *m = &obj->maps[i];
		struct shared_map *s = m->map && !m->pinned ? shared_find(m->map) : NULL;
		if (!s)
			continue;
		m->map = NULL; /* not ours to free any more */
		obj->map_handles[i] = NULL;
		if (--s->refs)
			continue;
		for (struct shared_map **pp = &shared_maps; *pp; pp = &(*pp)->next) {
			if (*pp == s) {
				*pp = s->next;
				break;
			}
		}
		map_free(s->map);
		free(s);
	}
}

bool reload_map_is_shared(const struct nb_map *m)
{
	return shared_find(m) != NULL;
}

static bool reusable(const struct nb_map_def *d)
{
	return d && d->pinning != 1 &&
	       (d->origin == NB_MAP_ORIGIN_BTF || d->origin == NB_MAP_ORIGIN_LEGACY);
}

static bool same_shape(const struct nb_map_def *a, const struct nb_map_def *b)
{
	return !strcmp(a->name, b->name) && a->type == b->type && a->key_size == b->key_size &&
	       a->value_size == b->value_size && a->max_entries == b->max_entries &&
	       a->map_flags == b->map_flags;
}

bool registry_obj_published(const struct registry_obj *o)
{
	for (unsigned h = 0; h < NB_HOOK_COUNT; h++) {
		const struct nb_hook_chain *c = atomic_load_explicit(&runtime_hook_slots[h],
								     memory_order_relaxed);
		for (int pass = 0; c && pass < 2; pass++, c = c->prev) {
			for (size_t i = 0; i < c->len; i++)
				if (c->items[i].owner == o)
					return true;
			if (!atomic_load_explicit(&c->gated, memory_order_relaxed))
				break;
		}
	}
	return false;
}

/* Re-binds the new object's maps to live storage where the shapes match. */
static int reuse_maps(struct ncclbpf_object *obj, struct report *r)
{
	for (size_t i = 0; i < obj->map_cnt; i++) {
		struct ncclbpf_map *m = &obj->maps[i];
		struct ncclbpf_map *live = NULL;
		if (m->pinned) {
			say(r, "map %s: pinned (shared by name)\n", m->def->name);
			continue;
		}
		if (!reusable(m->def)) {
			say(r, "map %s: new (global data is never reused)\n", m->def->name);
			continue;
		}
		for (struct registry_obj *o = registry_objs; o && !live; o = o->next) {
			if (!registry_obj_published(o))
				continue;
			for (size_t j = 0; j < o->obj->map_cnt && !live; j++) {
				struct ncclbpf_map *c = &o->obj->maps[j];
				if (c->map && !c->pinned && reusable(c->def) && same_shape(c->def, m->def))
					live = c;
			}
		}
		if (!live) {
			say(r, "map %s: new\n", m->def->name);
			continue;
		}
		struct shared_map *s = shared_find(live->map);
		if (!s) {
			s = calloc(1, sizeof(*s));
			if (!s)
				return -ENOMEM;
			s->map = live->map;
			s->refs = 1; /* the live object */
			s->next = shared_maps;
			shared_maps = s;
		}
		s->refs++;
		map_free(m->map);
		m->map = live->map;
		obj->map_handles[i] = live->map;
		say(r, "map %s: reused (state kept)\n", m->def->name);
	}
	return 0;
}

/* ---- loading a spec ---- */

struct pending_item {
	struct ncclbpf_program *prog;
	struct registry_obj *owner;
	char *label;
};

struct load {
	bool strict;            /* hot reload: the first failure fails everything */
	unsigned hook_mask;     /* hooks to attach to */
	struct pending_item *items[NB_HOOK_COUNT];
	size_t cnt[NB_HOOK_COUNT], cap[NB_HOOK_COUNT];
	int attached;
	bool failed;
	uint64_t version;
	struct report *r;    /* errors */
	struct report *info; /* what a successful reload did: reported only if it succeeds */
};

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static void fail(struct load *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct load *L, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (L->strict) {
		/* a hot reload is all or nothing: the entry is refused, not skipped */
		char *sk = strstr(line, " skipped");
		if (sk)
			memcpy(sk, " refused", 8);
		L->failed = true;
		say(L->r, "error: %s\n", line);
	} else {
		runtime_log(NB_LOG_WARN, NB_LOG_INIT, "%s", line);
	}
}

static int add_item(struct load *L, struct ncclbpf_program *prog, struct registry_obj *o,
		    const char *file)
{
	unsigned h = (unsigned)prog->hook->type;
	if (L->cnt[h] == L->cap[h]) {
		size_t n = L->cap[h] ? L->cap[h] * 2 : 4;
		void *p = realloc(L->items[h], n * sizeof(*L->items[h]));
		if (!p)
			return -ENOMEM;
		L->items[h] = p;
		L->cap[h] = n;
	}
	size_t len = strlen(base_name(file)) + strlen(prog->nbp->name) + 2;
	char *label = malloc(len);
	if (!label)
		return -ENOMEM;
	snprintf(label, len, "%s:%s", base_name(file), prog->nbp->name);
	L->items[h][L->cnt[h]++] = (struct pending_item){prog, o, label};
	o->refs++;
	return 0;
}

static int prepare_and_add(struct load *L, struct ncclbpf_program *prog,
			   struct registry_obj *o, const char *file)
{
	size_t errlen = 16384;
	char *err = malloc(errlen);
	if (!err)
		return 0;
	err[0] = '\0';
	int rc = ncclbpf_program_prepare(prog, NCCLBPF_HOOK_AUTO, NULL, err, errlen);
	if (rc < 0) {
		if (L->strict) {
			L->failed = true;
			say(L->r, "error: %s:%s rejected:\n%s\n", file, prog->nbp->name, err);
		} else {
			runtime_log(NB_LOG_WARN, NB_LOG_INIT, "policy %s:%s skipped: %s", file,
				    prog->nbp->name, err);
		}
		free(err);
		return 0;
	}
	free(err);
	if (add_item(L, prog, o, file) < 0) {
		fail(L, "policy %s:%s skipped: out of memory", file, prog->nbp->name);
		return 0;
	}
	const char *mode = ncclbpf_program_is_jitted(prog) ? "JIT" : "interpreter";
	if (L->strict)
		say(L->info, "attached %s:%s to hook %s (%s)\n", base_name(file), prog->nbp->name,
		    prog->hook->name, mode);
	else
		runtime_log(NB_LOG_INFO, NB_LOG_INIT, "attached %s:%s to hook %s (%s)", file,
			    prog->nbp->name, prog->hook->name, mode);
	return 1;
}

static bool hook_wanted(const struct load *L, int hook)
{
	return hook >= 0 && (L->hook_mask & (1u << hook));
}

/* One spec entry "file.o" or "file.o:program". */
static void load_entry(struct load *L, const char *entry_in)
{
	char err[1024];
	char *entry = strdup(entry_in);
	struct registry_obj *o = calloc(1, sizeof(*o));
	if (!entry || !o) {
		free(entry);
		free(o);
		fail(L, "policy %s skipped: out of memory", entry_in);
		return;
	}
	char *prog_name = strrchr(entry, ':');
	if (prog_name && !strchr(prog_name, '/'))
		*prog_name++ = '\0';
	else
		prog_name = NULL;
	if (ncclbpf_object_open_file(entry, &o->obj, err, sizeof(err)) < 0) {
		fail(L, "policy %s skipped: %s", entry, err);
		goto out_free;
	}
	o->entry = strdup(entry_in);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	o->loaded_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	o->version = L->version;
	if (!o->entry || reuse_maps(o->obj, L->info) < 0) {
		fail(L, "policy %s skipped: out of memory", entry);
		goto out_close;
	}
	/* Published now (refs 0) so that a failure below releases its maps through put. */
	o->next = registry_objs;
	registry_objs = o;
	o->refs = 1; /* held while loading */
	int attached = 0;
	if (prog_name) {
		struct ncclbpf_program *p = ncclbpf_object_find_program(o->obj, prog_name);
		if (!p) {
			char names[512] = "";
			for (size_t i = 0, n = 0; i < o->obj->prog_cnt; i++)
				n += (size_t)snprintf(names + n, n < sizeof(names) ? sizeof(names) - n : 0,
						      "%s%s", i ? ", " : "", o->obj->progs[i].nbp->name);
			fail(L, "policy %s:%s skipped: no program '%s' in %s (programs: %s)", entry,
			     prog_name, prog_name, entry, names[0] ? names : "none");
		} else if (p->section_hook < 0) {
			fail(L, "policy %s:%s skipped: its section '%s' names no hook "
			     "(tuner, tuner/chunk, profiler, net, env)", entry, prog_name,
			     p->nbp->section);
		} else if (!hook_wanted(L, p->section_hook)) {
			fail(L, "policy %s:%s: its section '%s' is for hook %s, not the one asked for",
			     entry, prog_name, p->nbp->section,
			     hook_desc((enum nb_hook_type)p->section_hook)->name);
		} else {
			attached = prepare_and_add(L, p, o, entry);
		}
	} else {
		bool any_hook = false;
		for (size_t i = 0; i < o->obj->prog_cnt; i++) {
			if (!hook_wanted(L, o->obj->progs[i].section_hook))
				continue;
			any_hook = true;
			attached += prepare_and_add(L, &o->obj->progs[i], o, entry);
		}
		if (!any_hook)
			fail(L, "policy %s skipped: no program in a hook section%s", entry,
			     L->hook_mask == (1u << NB_HOOK_COUNT) - 1
				     ? " (tuner, tuner/chunk, profiler, net, env)"
				     : " for the hook asked for");
	}
	L->attached += attached;
	registry_obj_put(o); /* closes it when nothing of it was attached */
	free(entry);
	return;
out_close:
	reload_release_maps(o->obj);
	ncclbpf_object_close(o->obj);
out_free:
	free(o->entry);
	free(o);
	free(entry);
}

static void load_spec(struct load *L, const char *spec)
{
	char *copy = strdup(spec ? spec : "");
	char *save = NULL;
	if (!copy) {
		fail(L, "cannot load policies: out of memory");
		return;
	}
	for (char *e = strtok_r(copy, ",", &save); e && !L->failed;
	     e = strtok_r(NULL, ",", &save)) {
		while (*e == ' ' || *e == '\t')
			e++;
		char *end = e + strlen(e);
		while (end > e && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n'))
			*--end = '\0';
		if (*e)
			load_entry(L, e);
	}
	free(copy);
}

/* Turns the pending items into chains (chains[h] NULL when a hook has none). */
static int build_chains(struct load *L, struct nb_hook_chain *chains[NB_HOOK_COUNT])
{
	int rc = 0;
	for (unsigned h = 0; h < NB_HOOK_COUNT; h++) {
		chains[h] = NULL;
		if (!L->cnt[h])
			continue;
		chains[h] = registry_chain_alloc((enum nb_hook_type)h, L->cnt[h]);
		if (!chains[h]) {
			rc = -ENOMEM;
			continue;
		}
		for (size_t i = 0; i < L->cnt[h]; i++) {
			struct pending_item *p = &L->items[h][i];
			chains[h]->items[i] = (struct nb_attachment){p->prog, p->label, p->owner};
			p->label = NULL;
			p->owner = NULL; /* the chain holds the reference now */
		}
	}
	return rc;
}

static void load_cleanup(struct load *L)
{
	for (unsigned h = 0; h < NB_HOOK_COUNT; h++) {
		for (size_t i = 0; i < L->cnt[h]; i++) {
			free(L->items[h][i].label);
			registry_obj_put(L->items[h][i].owner);
		}
		free(L->items[h]);
	}
}

static void discard_all(struct nb_hook_chain *chains[NB_HOOK_COUNT])
{
	for (unsigned h = 0; h < NB_HOOK_COUNT; h++)
		registry_chain_discard(chains[h]);
}

int runtime_load_policies(const char *spec)
{
	struct load L = {.strict = false, .hook_mask = (1u << NB_HOOK_COUNT) - 1};
	struct nb_hook_chain *chains[NB_HOOK_COUNT];

	pthread_mutex_lock(&registry_lock);
	L.version = registry_next_version();
	load_spec(&L, spec);
	if (build_chains(&L, chains) < 0) {
		runtime_log(NB_LOG_WARN, NB_LOG_INIT, "cannot load policies: out of memory");
		discard_all(chains);
		load_cleanup(&L);
		pthread_mutex_unlock(&registry_lock);
		return 0;
	}
	load_cleanup(&L);
	registry_reset_faults();
	registry_publish(chains, L.hook_mask, L.version, false);
	registry_reclaim_locked();
	pthread_mutex_unlock(&registry_lock);
	runtime_log(NB_LOG_INFO, NB_LOG_INIT, "%d program(s) attached", L.attached);
	return L.attached;
}

/* FNV-1a over what a reload activates: each entry's file bytes, program name and the hook
 * mask. Paths do not enter it: ranks on other nodes reload the same files from elsewhere. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t spec_content_hash(const char *spec, unsigned mask)
{
	uint64_t h = fnv(0xcbf29ce484222325ull, &mask, sizeof(mask));
	char *copy = strdup(spec), *save = NULL;
	uint8_t buf[65536];
	if (!copy)
		return h;
	for (char *e = strtok_r(copy, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
		while (*e == ' ' || *e == '\t')
			e++;
		char *prog = strrchr(e, ':');
		if (prog && !strchr(prog, '/'))
			*prog++ = '\0';
		else
			prog = NULL;
		FILE *f = fopen(e, "rb");
		for (size_t n; f && (n = fread(buf, 1, sizeof(buf), f)) > 0;)
			h = fnv(h, buf, n);
		if (f)
			fclose(f);
		h = fnv(h, ":", 1);
		if (prog)
			h = fnv(h, prog, strlen(prog));
		h = fnv(h, ",", 1);
	}
	free(copy);
	return h ? h : 1;
}

/* A local switch of the tuner hooks in a multi-rank job: refused unless forced (runtime.h). */
static bool split_risk(unsigned mask, bool gated, unsigned flags, struct report *r)
{
	unsigned tuner_hooks = (1u << NB_HOOK_TUNER) | (1u << NB_HOOK_TUNER_CHUNK);
	if (gated || (flags & RUNTIME_RELOAD_FORCE) || !(mask & tuner_hooks) ||
	    !runtime_comm_multi_rank())
		return false;
	say(r, "error: refused: a communicator with several ranks is live and no agreement layer "
	       "activates the change at the same collective on every rank; ranks switching at "
	       "different collectives can deadlock NCCL. Use --hook profiler/net/env, or force "
	       "it (ctl --force) when every rank sees the same change at a quiet point\n");
	return true;
}

/* The reload being staged (registry lock held) and the last one adopted from another
 * rank's request: runtime.h runtime_reload_in_progress / runtime_activation_note_adopted. */
static const char *staging_spec;
static unsigned staging_mask;
static uint64_t adopted_version, adopted_content;

const char *runtime_reload_in_progress(unsigned *hook_mask)
{
	*hook_mask = staging_mask;
	return staging_spec;
}

void runtime_activation_note_adopted(uint64_t version, uint64_t content)
{
	adopted_version = version;
	adopted_content = content;
}

/* runtime_reload; info collects what the reload does, said only once it succeeded */
static int reload_spec(const char *spec, enum nb_hook_type hook, unsigned flags, char *msg,
		       size_t msglen, struct report *info)
{
	struct report r = {msg, 0, msglen};
	struct load L = {.strict = true, .r = &r, .info = info};
	struct nb_hook_chain *chains[NB_HOOK_COUNT];
	uint64_t busy;

	if (msg && msglen)
		msg[0] = '\0';
	if ((unsigned)hook > NB_HOOK_COUNT || hook == NB_HOOK_CONFORMANCE) {
		say(&r, "error: no such hook\n");
		return -EINVAL;
	}
	L.hook_mask = hook == NB_HOOK_COUNT ? (1u << NB_HOOK_COUNT) - 1 : 1u << hook;
	if (!spec || !*spec) {
		say(&r, "error: empty policy spec (use detach to remove programs)\n");
		return -EINVAL;
	}
	pthread_mutex_lock(&registry_lock);
	if (registry_activation_busy(&busy)) {
		/* `ctl --all` on each node racing the propagation of the first rank's request:
		 * the same policy is already staged here, which is what the caller wants */
		bool same = busy == adopted_version &&
			    spec_content_hash(spec, L.hook_mask) == adopted_content;
		pthread_mutex_unlock(&registry_lock);
		if (same) {
			say(&r, "staged (activating across ranks at an agreed seq; already staged "
				"from another rank's request) version %llu\n", (unsigned long long)busy);
			return 1;
		}
		say(&r, "error: reload version %llu is still activating across ranks (or ended "
			"mixed: switched on some communicators, abandoned on others; see the log)\n",
		    (unsigned long long)busy);
		return -EBUSY;
	}
	L.version = registry_next_version();
	load_spec(&L, spec);
	int rc = L.failed ? -EINVAL : build_chains(&L, chains);
	if (rc == 0 && L.attached == 0) {
		say(&r, "error: no program of '%s' attaches to %s\n", spec,
		    hook == NB_HOOK_COUNT ? "any hook" : hook_desc(hook)->name);
		discard_all(chains);
		rc = -ENOENT;
	} else if (rc == -ENOMEM) {
		say(&r, "error: out of memory\n");
		discard_all(chains);
	}
	load_cleanup(&L);
	if (rc < 0) {
		say(&r, "nothing was reloaded: the running policy is unchanged\n");
		registry_count_reload(false);
		pthread_mutex_unlock(&registry_lock);
		runtime_log(NB_LOG_WARN, NB_LOG_INIT, "reload of %s failed; the old policy keeps "
			    "running", spec);
		return rc;
	}
	unsigned changing = 0; /* hooks whose chain is or becomes non-empty */
	for (unsigned h = 0; h < NB_HOOK_COUNT; h++)
		if ((L.hook_mask & (1u << h)) &&
		    (chains[h] || atomic_load_explicit(&runtime_hook_slots[h], memory_order_relaxed)))
			changing |= 1u << h;
	staging_spec = spec;
	staging_mask = L.hook_mask;
	bool gated = registry_activation_begin(L.version, spec_content_hash(spec, L.hook_mask));
	staging_spec = NULL;
	if (split_risk(changing, gated, flags, &r)) {
		discard_all(chains);
		registry_count_reload(false);
		pthread_mutex_unlock(&registry_lock);
		return -EPERM;
	}
	registry_publish(chains, L.hook_mask, L.version, gated);
	registry_count_reload(true);
	registry_reclaim_locked();
	pthread_mutex_unlock(&registry_lock);
	if (info->buf)
		say(&r, "%s", info->buf);
	say(&r, "%s version %llu\n", gated ? "staged (activating across ranks at an agreed seq)"
					   : "active", (unsigned long long)L.version);
	runtime_log(NB_LOG_INFO, NB_LOG_INIT, "reloaded %s (%d program(s), version %llu%s)", spec,
		    L.attached, (unsigned long long)L.version, gated ? ", activating across ranks" : "");
	return L.attached;
}

int runtime_reload(const char *spec, enum nb_hook_type hook, unsigned flags, char *msg,
		   size_t msglen)
{
	/* "attached" and "map ...: reused" lines wait in info: a reload refused or failed
	 * after its programs were prepared must not read as if they had been attached */
	struct report info = {msglen ? calloc(1, msglen) : NULL, 0, msglen};
	int rc = reload_spec(spec, hook, flags, msg, msglen, &info);
	free(info.buf);
	return rc;
}

int runtime_detach(enum nb_hook_type hook, unsigned flags, char *msg, size_t msglen)
{
	struct report r = {msg, 0, msglen};
	struct nb_hook_chain *none[NB_HOOK_COUNT] = {0};
	uint64_t busy;
	int n = 0;

	if (msg && msglen)
		msg[0] = '\0';
	if ((unsigned)hook > NB_HOOK_COUNT || hook == NB_HOOK_CONFORMANCE) {
		say(&r, "error: no such hook\n");
		return -EINVAL;
	}
	unsigned mask = hook == NB_HOOK_COUNT ? (1u << NB_HOOK_COUNT) - 1 : 1u << hook;
	pthread_mutex_lock(&registry_lock);
	if (registry_activation_busy(&busy)) {
		pthread_mutex_unlock(&registry_lock);
		say(&r, "error: reload version %llu is still activating across ranks (or ended "
			"mixed: switched on some communicators, abandoned on others; see the log)\n",
		    (unsigned long long)busy);
		return -EBUSY;
	}
	for (unsigned h = 0; h < NB_HOOK_COUNT; h++) {
		const struct nb_hook_chain *c = atomic_load_explicit(&runtime_hook_slots[h],
								     memory_order_relaxed);
		if ((mask & (1u << h)) && c)
			n += (int)c->len;
	}
	uint64_t version = registry_next_version();
	/* "no program" is NCCL's own choice on every rank only when every rank detaches at
	 * the same collective: through the activation layer, like a reload */
	bool gated = n > 0 && registry_activation_begin(version, 0);
	unsigned attached_mask = 0;
	for (unsigned h = 0; h < NB_HOOK_COUNT; h++)
		if ((mask & (1u << h)) && atomic_load_explicit(&runtime_hook_slots[h],
							       memory_order_relaxed))
			attached_mask |= 1u << h;
	if (n > 0 && split_risk(attached_mask, gated, flags, &r)) {
		pthread_mutex_unlock(&registry_lock);
		return -EPERM;
	}
	/* said only now: a refused detach must not read as if it had happened */
	for (unsigned h = 0; h < NB_HOOK_COUNT; h++) {
		const struct nb_hook_chain *c = atomic_load_explicit(&runtime_hook_slots[h],
								     memory_order_relaxed);
		for (size_t i = 0; (mask & (1u << h)) && c && i < c->len; i++)
			say(&r, "%s %s from hook %s%s\n", gated ? "detaching" : "detached",
			    c->items[i].label, hook_desc(h)->name,
			    gated ? " (activating across ranks at an agreed seq)" : "");
	}
	registry_publish(none, mask, version, gated);
	registry_reclaim_locked();
	pthread_mutex_unlock(&registry_lock);
	if (n)
		runtime_log(NB_LOG_INFO, NB_LOG_INIT, "detached %d program(s) (version %llu)", n,
			    (unsigned long long)version);
	return n;
}

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static int env_result;

static void load_from_env_once(void)
{
	/* read by the maps module, which cannot log: its bad values are reported here */
	runtime_env_bool("NCCLBPF_EPOCH_FENCE", false);
	const char *spec = getenv("NCCLBPF_POLICY");
	if (!spec || !*spec) {
		runtime_log(NB_LOG_INFO, NB_LOG_INIT, "NCCLBPF_POLICY not set: pass-through");
		return;
	}
	env_result = runtime_load_policies(spec);
}

int runtime_load_policies_from_env(void)
{
	pthread_once(&env_once, load_from_env_once);
	return env_result;
}
