/* Policy registry: one chain per hook, published through an atomic pointer.
 *
 * Readers (the plugin shims, on every collective) enter an epoch section
 * (runtime_chain_enter = map_epoch_enter + one acquire load), run the chain and leave. A
 * chain is immutable once published.
 *
 * Reclamation reuses the maps' epoch mechanism (src/maps/epoch.c): a writer swaps the
 * pointer, then takes a retire tag (which advances the global epoch). A reader that can
 * still hold the old chain entered before the swap, so its record holds an epoch <= tag;
 * every later reader reads an epoch > tag and sees the new pointer. A retired chain is
 * therefore freed once map_epoch_min_active() > tag. Freeing a chain drops its references
 * to the objects behind it; an object no chain uses is closed. Memory stays flat however
 * many reloads happen (tests/control: the stress test).
 *
 * Everything on the writer side is serialized by registry_lock; readers take no lock. */
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maps/map_internal.h"
#include "runtime/registry_internal.h"

pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
struct registry_obj *registry_objs;
_Atomic(struct nb_hook_chain *) runtime_hook_slots[NB_HOOK_COUNT];
_Atomic(const struct nb_hook_chain *) runtime_hook_direct[NB_HOOK_COUNT];

static struct nb_hook_chain *retired;        /* waiting for readers, under the lock */
static size_t retired_cnt;
static size_t freed_since_trim;
static uint64_t version_counter;
static uint64_t stat_reloads, stat_reload_failures;
static _Atomic uint64_t fault_counts[NB_HOOK_COUNT];
static struct runtime_ratelimit fault_limit;

/* Activation seam: ops published with release, read on the decision path with acquire. */
static _Atomic(const struct runtime_activation_ops *) activation_ops;
static struct runtime_activation_ops activation_copy;
static uint64_t activation_version; /* gated version, 0 = none (under the lock) */
static _Atomic uint64_t activation_version_pub;

const struct nb_hook_chain *runtime_hook_chain(enum nb_hook_type hook)
{
	if ((unsigned)hook >= NB_HOOK_COUNT)
		return NULL;
	return atomic_load_explicit(&runtime_hook_slots[hook], memory_order_acquire);
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

/* ---- the activation seam ---- */

const struct nb_hook_chain *runtime_chain_gate(const struct nb_hook_chain *c, uint64_t comm_id,
					       uint64_t seq)
{
	const struct runtime_activation_ops *ops =
		atomic_load_explicit(&activation_ops, memory_order_acquire);
	/* Gated without a layer cannot happen (ops are cleared only with no gate pending);
	 * keeping the old chain is the safe answer anyway. */
	if (!ops || !ops->activation_seq)
		return c->prev;
	uint64_t at = ops->activation_seq(comm_id, c->version, ops->arg);
	return seq >= at ? c : c->prev;
}

void runtime_set_activation_ops(const struct runtime_activation_ops *ops)
{
	pthread_mutex_lock(&registry_lock);
	if (ops) {
		activation_copy = *ops;
		atomic_store_explicit(&activation_ops, &activation_copy, memory_order_release);
	} else if (!activation_version) {
		atomic_store_explicit(&activation_ops, NULL, memory_order_release);
	}
	pthread_mutex_unlock(&registry_lock);
}

int registry_activation_begin(uint64_t version, uint64_t content)
{
	const struct runtime_activation_ops *ops =
		atomic_load_explicit(&activation_ops, memory_order_acquire);
	if (!ops || !ops->begin)
		return 0;
	return ops->begin(version, content, ops->arg) > 0;
}

void runtime_activation_poll(void)
{
	uint64_t v = atomic_load_explicit(&activation_version_pub, memory_order_relaxed);
	const struct runtime_activation_ops *ops =
		atomic_load_explicit(&activation_ops, memory_order_acquire);
	if (!v || !ops || !ops->poll)
		return;
	int verdict = ops->poll(v, ops->arg);
	if (verdict)
		runtime_activation_done(v, verdict > 0);
}

uint64_t runtime_activation_pending(void)
{
	return atomic_load_explicit(&activation_version_pub, memory_order_relaxed);
}

/* ---- chains and objects ---- */

struct nb_hook_chain *registry_chain_alloc(enum nb_hook_type hook, size_t n)
{
	struct nb_hook_chain *c = calloc(1, sizeof(*c) + n * sizeof(c->items[0]));
	if (c) {
		c->hook = hook;
		c->len = n;
	}
	return c;
}

void registry_obj_put(struct registry_obj *o)
{
	if (!o || --o->refs)
		return;
	for (struct registry_obj **pp = &registry_objs; *pp; pp = &(*pp)->next) {
		if (*pp == o) {
			*pp = o->next;
			break;
		}
	}
	reload_release_maps(o->obj);
	ncclbpf_object_close(o->obj);
	free(o->entry);
	free(o);
}

void registry_chain_discard(struct nb_hook_chain *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->len; i++) {
		free((char *)c->items[i].label);
		registry_obj_put(c->items[i].owner);
	}
	free(c);
}

/* Recomputes runtime_hook_direct[h] from the slot (under the lock, after every store to
 * the slot or to its chain's gate, and before retiring what they replaced: a reader that
 * still finds the old chain there is inside a section that the retire tag covers). */
static void direct_update(unsigned h)
{
	const struct nb_hook_chain *c = atomic_load_explicit(&runtime_hook_slots[h],
							     memory_order_relaxed);
	bool direct = c && c->direct_entry && !atomic_load_explicit(&c->gated, memory_order_relaxed);
	atomic_store_explicit(&runtime_hook_direct[h], direct ? c : NULL, memory_order_seq_cst);
}

static void retire(struct nb_hook_chain *c)
{
	if (!c)
		return;
	/* the swap that unpublished c is ordered before the tag (seq_cst) */
	c->retire_tag = map_epoch_retire_tag();
	c->retired_next = retired;
	retired = c;
	retired_cnt++;
}

static size_t reclaim_locked(void)
{
	if (!retired)
		return 0;
	uint64_t min = map_epoch_min_active();
	struct nb_hook_chain **pp = &retired;
	while (*pp) {
		struct nb_hook_chain *c = *pp;
		if (c->retire_tag < min) {
			*pp = c->retired_next;
			retired_cnt--;
			freed_since_trim++;
			registry_chain_discard(c);
		} else {
			pp = &c->retired_next;
		}
	}
	return retired_cnt;
}

size_t registry_reclaim_locked(void)
{
	return reclaim_locked();
}

size_t runtime_reclaim(void)
{
	pthread_mutex_lock(&registry_lock);
	size_t n = reclaim_locked();
	bool trim = freed_since_trim != 0;
	freed_since_trim = 0;
	pthread_mutex_unlock(&registry_lock);
#ifdef __GLIBC__
	/* A reload frees a whole policy set (loader, verifier and link buffers of many
	 * sizes): give the free pages back, so resident memory stays flat across reloads
	 * instead of settling at the allocator's high-water mark. */
	if (trim)
		malloc_trim(0);
#else
	(void)trim;
#endif
	return n;
}

uint64_t registry_next_version(void)
{
	return ++version_counter;
}

void registry_count_reload(bool ok)
{
	if (ok)
		stat_reloads++;
	else
		stat_reload_failures++;
}

void registry_publish(struct nb_hook_chain *chains[NB_HOOK_COUNT], unsigned mask,
		      uint64_t version, bool gated)
{
	for (unsigned h = 0; h < NB_HOOK_COUNT; h++) {
		if (!(mask & (1u << h)))
			continue;
		struct nb_hook_chain *old = atomic_load_explicit(&runtime_hook_slots[h],
								 memory_order_relaxed);
		struct nb_hook_chain *c = chains[h];
		if (gated && !c && old) {
			/* an empty chain cannot carry the gate: publish an empty one */
			c = registry_chain_alloc((enum nb_hook_type)h, 0);
			if (!c) {
				gated = false; /* cannot happen with 48 bytes free; stay safe */
			}
		}
		if (c) {
			c->version = version;
			const struct ncclbpf_program *p0 = c->len == 1 ? c->items[0].prog : NULL;
			bool plain = p0 && p0->prepared && !p0->uses_agreed && p0->jit &&
				     !p0->hook->ctx_is_raw_memory && !vm_jit_may_fault(p0->jit);
			c->direct_entry = plain && !p0->needs_epoch ? p0->fast_entry : NULL;
			c->epoch_entry = plain && p0->needs_epoch ? p0->entry : NULL;
			if (gated && old != c) {
				c->prev = old;
				atomic_store_explicit(&c->gated, 1, memory_order_relaxed);
			}
		}
		atomic_store_explicit(&runtime_hook_slots[h], c, memory_order_seq_cst);
		direct_update(h);
		if (gated && c)
			continue; /* old stays as c->prev until the activation ends */
		if (old && atomic_load_explicit(&old->gated, memory_order_relaxed) && old->prev)
			retire((struct nb_hook_chain *)old->prev); /* init load over a gate */
		retire(old);
	}
	activation_version = gated ? version : 0;
	atomic_store_explicit(&activation_version_pub, activation_version, memory_order_relaxed);
	/* reclamation (a membarrier and a scan of the reader records) is left to the caller:
	 * it is not part of the swap */
}

int runtime_activation_done(uint64_t version, bool committed)
{
	pthread_mutex_lock(&registry_lock);
	if (!version || version != activation_version) {
		pthread_mutex_unlock(&registry_lock);
		return -ENOENT;
	}
	for (unsigned h = 0; h < NB_HOOK_COUNT; h++) {
		struct nb_hook_chain *c = atomic_load_explicit(&runtime_hook_slots[h],
							       memory_order_relaxed);
		if (!c || c->version != version || !atomic_load(&c->gated))
			continue;
		struct nb_hook_chain *prev = (struct nb_hook_chain *)c->prev;
		if (committed) {
			/* readers that still pick prev are inside a section: the retire tag
			 * taken after the ungate covers them */
			atomic_store_explicit(&c->gated, 0, memory_order_seq_cst);
			direct_update(h);
			retire(prev);
		} else {
			atomic_store_explicit(&runtime_hook_slots[h], prev, memory_order_seq_cst);
			direct_update(h);
			retire(c);
		}
	}
	activation_version = 0;
	atomic_store_explicit(&activation_version_pub, 0, memory_order_relaxed);
	runtime_log(NB_LOG_INFO, NB_LOG_INIT, "reload version %llu %s across ranks",
		    (unsigned long long)version, committed ? "activated" : "abandoned (old policy kept)");
	reclaim_locked();
	pthread_mutex_unlock(&registry_lock);
	return 0;
}

/* Whether a gated activation blocks a new reload (under the lock). */
bool registry_activation_busy(uint64_t *version)
{
	*version = activation_version;
	return activation_version != 0;
}

void runtime_unload_policies(void)
{
	pthread_mutex_lock(&registry_lock);
	for (size_t h = 0; h < NB_HOOK_COUNT; h++) {
		atomic_store(&runtime_hook_direct[h], NULL);
		struct nb_hook_chain *c = atomic_exchange(&runtime_hook_slots[h], NULL);
		if (c && atomic_load(&c->gated) && c->prev)
			registry_chain_discard((struct nb_hook_chain *)c->prev);
		registry_chain_discard(c);
	}
	while (retired) {
		struct nb_hook_chain *c = retired;
		retired = c->retired_next;
		registry_chain_discard(c);
	}
	retired_cnt = 0;
	activation_version = 0;
	atomic_store(&activation_version_pub, 0);
	pthread_mutex_unlock(&registry_lock);
}

struct ncclbpf_map *runtime_find_map(const char *name)
{
	struct ncclbpf_map *found = NULL;
	if (!name)
		return NULL;
	pthread_mutex_lock(&registry_lock);
	for (struct registry_obj *o = registry_objs; o && !found; o = o->next)
		found = ncclbpf_object_find_map(o->obj, name);
	pthread_mutex_unlock(&registry_lock);
	return found;
}

void runtime_registry_stats(struct runtime_registry_stats *out)
{
	pthread_mutex_lock(&registry_lock);
	out->version = version_counter;
	out->reloads = stat_reloads;
	out->reload_failures = stat_reload_failures;
	out->retired_pending = retired_cnt;
	out->objects_live = 0;
	for (struct registry_obj *o = registry_objs; o; o = o->next)
		out->objects_live++;
	pthread_mutex_unlock(&registry_lock);
}

void registry_reset_faults(void)
{
	for (size_t h = 0; h < NB_HOOK_COUNT; h++)
		atomic_store_explicit(&fault_counts[h], 0, memory_order_relaxed);
}
