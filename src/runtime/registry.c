/* Policy registry: NCCLBPF_POLICY -> objects -> prepared programs -> one chain per hook.
 *
 * Readers (the plugin shims, on every collective) do one acquire load of the chain
 * pointer and run it: no lock, no reference count. A chain is immutable once published.
 *
 * Reclamation: runtime_hook_chain hands out a bare pointer and readers never announce
 * themselves, so no grace period can prove a replaced chain unused. Replaced chains and
 * the objects behind them are therefore retired, not freed: they stay valid until
 * runtime_unload_policies, which callers invoke only when no hook can be running (process
 * teardown, tests). A reload thus costs the memory of the previous policy set (kilobytes
 * per policy). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

struct policy_set {
	struct policy_set *next;             /* older sets (retired) */
	struct ncclbpf_object **objs;
	size_t obj_cnt, obj_cap;
	char **labels;
	size_t label_cnt, label_cap;
	struct nb_hook_chain *chains[NB_HOOK_COUNT];
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(struct nb_hook_chain *) hook_chains[NB_HOOK_COUNT];
static struct policy_set *sets; /* newest first; sets->chains are the published ones */
static _Atomic uint64_t fault_counts[NB_HOOK_COUNT];
static struct runtime_ratelimit fault_limit;

const struct nb_hook_chain *runtime_hook_chain(enum nb_hook_type hook)
{
	if ((unsigned)hook >= NB_HOOK_COUNT)
		return NULL;
	return atomic_load_explicit(&hook_chains[hook], memory_order_acquire);
}

uint64_t runtime_fault_count(enum nb_hook_type hook)
{
	if ((unsigned)hook >= NB_HOOK_COUNT)
		return 0;
	return atomic_load_explicit(&fault_counts[hook], memory_order_relaxed);
}

int runtime_chain_run(const struct nb_hook_chain *chain, void *ctx, size_t ctx_size)
{
	int faults = 0;
	if (!chain)
		return 0;
	for (size_t i = 0; i < chain->len; i++) {
		char err[256];
		uint64_t r0;
		if (ncclbpf_program_run(chain->items[i].prog, ctx, ctx_size, &r0, err,
					sizeof(err)) == 0)
			continue;
		faults++;
		atomic_fetch_add_explicit(&fault_counts[chain->hook], 1, memory_order_relaxed);
		if (runtime_ratelimit_ok(&fault_limit, 10))
			runtime_log(NB_LOG_WARN, NB_LOG_TUNING, "%s failed on hook %s: %s",
				    chain->items[i].label, hook_desc(chain->hook)->name, err);
	}
	return faults;
}

/* ---- loading ---- */

static void set_free(struct policy_set *s)
{
	for (size_t i = 0; i < NB_HOOK_COUNT; i++)
		free(s->chains[i]);
	for (size_t i = 0; i < s->obj_cnt; i++)
		ncclbpf_object_close(s->objs[i]);
	for (size_t i = 0; i < s->label_cnt; i++)
		free(s->labels[i]);
	free(s->objs);
	free(s->labels);
	free(s);
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap * 2 : 8;
	void *p = realloc(*arr, n * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = n;
	return 0;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* Appends prog to the chain of hook `type` (chains grow while the set is private). */
static int set_attach(struct policy_set *s, struct ncclbpf_program *prog, const char *file)
{
	int type = prog->hook->type;
	struct nb_hook_chain *c = s->chains[type];
	size_t len = c ? c->len : 0;
	char *label = malloc(strlen(file) + strlen(prog->nbp->name) + 2);
	struct nb_hook_chain *n = realloc(c, sizeof(*c) + (len + 1) * sizeof(c->items[0]));

	if (n)
		s->chains[type] = n;
	if (!label || !n || grow((void **)&s->labels, &s->label_cap, s->label_cnt + 1,
				 sizeof(char *))) {
		free(label);
		return -ENOMEM;
	}
	sprintf(label, "%s:%s", base_name(file), prog->nbp->name);
	s->labels[s->label_cnt++] = label;
	n->hook = (enum nb_hook_type)type;
	n->len = len + 1;
	n->items[len].prog = prog;
	n->items[len].label = label;
	return 0;
}

static int prepare_and_attach(struct policy_set *s, struct ncclbpf_program *prog,
			      const char *file)
{
	char err[2048];
	int rc = ncclbpf_program_prepare(prog, NCCLBPF_HOOK_AUTO, NULL, err, sizeof(err));
	if (rc < 0) {
		runtime_log(NB_LOG_WARN, NB_LOG_INIT, "policy %s:%s skipped: %s", file,
			    prog->nbp->name, err);
		return 0;
	}
	if (set_attach(s, prog, file) < 0) {
		runtime_log(NB_LOG_WARN, NB_LOG_INIT, "policy %s:%s skipped: out of memory", file,
			    prog->nbp->name);
		return 0;
	}
	runtime_log(NB_LOG_INFO, NB_LOG_INIT, "attached %s:%s to hook %s (%s)", file,
		    prog->nbp->name, prog->hook->name,
		    ncclbpf_program_is_jitted(prog) ? "JIT" : "interpreter");
	return 1;
}

/* One spec entry "file.o" or "file.o:program". Returns programs attached. */
static int load_entry(struct policy_set *s, char *entry)
{
	char err[1024];
	char *prog_name = strrchr(entry, ':');
	struct ncclbpf_object *obj = NULL;
	int attached = 0;

	if (prog_name && !strchr(prog_name, '/'))
		*prog_name++ = '\0';
	else
		prog_name = NULL;
	if (ncclbpf_object_open_file(entry, &obj, err, sizeof(err)) < 0) {
		runtime_log(NB_LOG_WARN, NB_LOG_INIT, "policy %s skipped: %s", entry, err);
		return 0;
	}
	if (prog_name) {
		struct ncclbpf_program *p = ncclbpf_object_find_program(obj, prog_name);
		if (!p) {
			char names[512] = "";
			for (size_t i = 0, n = 0; i < obj->prog_cnt; i++)
				n += (size_t)snprintf(names + n, n < sizeof(names) ? sizeof(names) - n : 0,
						      "%s%s", i ? ", " : "", obj->progs[i].nbp->name);
			runtime_log(NB_LOG_WARN, NB_LOG_INIT,
				    "policy %s:%s skipped: no program '%s' in %s (programs: %s)",
				    entry, prog_name, prog_name, entry, names[0] ? names : "none");
		} else if (p->section_hook < 0) {
			runtime_log(NB_LOG_WARN, NB_LOG_INIT,
				    "policy %s:%s skipped: its section '%s' names no hook "
				    "(tuner, tuner/chunk, profiler, net, env)",
				    entry, prog_name, p->nbp->section);
		} else {
			attached = prepare_and_attach(s, p, entry);
		}
	} else {
		bool any_hook = false;
		for (size_t i = 0; i < obj->prog_cnt; i++) {
			if (obj->progs[i].section_hook < 0)
				continue;
			any_hook = true;
			attached += prepare_and_attach(s, &obj->progs[i], entry);
		}
		if (!any_hook)
			runtime_log(NB_LOG_WARN, NB_LOG_INIT,
				    "policy %s skipped: no program in a hook section "
				    "(tuner, tuner/chunk, profiler, net, env)", entry);
	}
	if (!attached || grow((void **)&s->objs, &s->obj_cap, s->obj_cnt + 1, sizeof(void *))) {
		ncclbpf_object_close(obj);
		return 0; /* nothing of it attached (or no memory to keep it): drop it */
	}
	s->objs[s->obj_cnt++] = obj;
	return attached;
}

int runtime_load_policies(const char *spec)
{
	struct policy_set *s = calloc(1, sizeof(*s));
	char *copy = strdup(spec ? spec : "");
	int total = 0;

	if (!s || !copy) {
		free(s);
		free(copy);
		runtime_log(NB_LOG_WARN, NB_LOG_INIT, "cannot load policies: out of memory");
		return 0;
	}
	pthread_mutex_lock(&registry_lock);
	char *save = NULL;
	for (char *e = strtok_r(copy, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
		while (*e == ' ' || *e == '\t')
			e++;
		char *end = e + strlen(e);
		while (end > e && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n'))
			*--end = '\0';
		if (*e)
			total += load_entry(s, e);
	}
	free(copy);
	for (size_t h = 0; h < NB_HOOK_COUNT; h++) {
		atomic_store_explicit(&fault_counts[h], 0, memory_order_relaxed);
		atomic_store_explicit(&hook_chains[h], s->chains[h], memory_order_release);
	}
	s->next = sets; /* the previous set is retired, kept until unload */
	sets = s;
	pthread_mutex_unlock(&registry_lock);
	runtime_log(NB_LOG_INFO, NB_LOG_INIT, "%d program(s) attached", total);
	return total;
}

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static int env_result;

static void load_from_env_once(void)
{
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

void runtime_unload_policies(void)
{
	pthread_mutex_lock(&registry_lock);
	for (size_t h = 0; h < NB_HOOK_COUNT; h++)
		atomic_store_explicit(&hook_chains[h], NULL, memory_order_release);
	while (sets) {
		struct policy_set *s = sets;
		sets = s->next;
		set_free(s);
	}
	pthread_mutex_unlock(&registry_lock);
}

struct ncclbpf_map *runtime_find_map(const char *name)
{
	struct ncclbpf_map *found = NULL;
	if (!name)
		return NULL;
	pthread_mutex_lock(&registry_lock);
	for (size_t i = 0; sets && i < sets->obj_cnt && !found; i++)
		found = ncclbpf_object_find_map(sets->objs[i], name);
	pthread_mutex_unlock(&registry_lock);
	return found;
}
