/* Shared between the policy registry (registry.c: chains, readers, reclamation, the
 * activation seam), hot reload (reload.c: loading specs, map reuse) and the control plane
 * (control_ops.c: status, maps). Everything here is under registry_lock. */
#ifndef NCCLBPF_RUNTIME_REGISTRY_INTERNAL_H
#define NCCLBPF_RUNTIME_REGISTRY_INTERNAL_H

#include <pthread.h>

#include "runtime/runtime.h"

/* One loaded object, referenced by the chain items that run its programs. */
struct registry_obj {
	struct registry_obj *next;    /* live list, newest first */
	struct ncclbpf_object *obj;
	char *entry;                  /* the spec entry as given: "path" or "path:prog" */
	uint64_t loaded_ns;           /* CLOCK_REALTIME */
	uint64_t version;             /* reload version that loaded it */
	unsigned refs;                /* chain items (published, gated or retired) */
};

extern pthread_mutex_t registry_lock;
extern struct registry_obj *registry_objs;

/* A chain of n items for hook (items filled by the caller; owner refs taken by it). */
struct nb_hook_chain *registry_chain_alloc(enum nb_hook_type hook, size_t n);
/* Frees a chain that was never published: drops its items' object refs and labels. */
void registry_chain_discard(struct nb_hook_chain *c);
/* Drops one reference; closes the object (and releases its shared maps) at zero. */
void registry_obj_put(struct registry_obj *o);
/* Publishes chains[h] for every hook in mask (NULL = empty), retiring the previous ones,
 * as `version`. gated: the activation layer switches each communicator (see runtime.h). */
void registry_publish(struct nb_hook_chain *chains[NB_HOOK_COUNT], unsigned mask,
		      uint64_t version, bool gated);
/* Frees retired chains whose readers left (under the lock). */
size_t registry_reclaim_locked(void);
/* Next reload version (under the lock). */
uint64_t registry_next_version(void);
/* The activation layer's begin(): 1 when it takes charge of `version`. */
int registry_activation_begin(uint64_t version, uint64_t content);
void registry_count_reload(bool ok);
/* true while a gated reload is activating; *version = it. */
bool registry_activation_busy(uint64_t *version);
void registry_reset_faults(void);

/* Map reuse (reload.c): releases the object's references to shared map storage. */
void reload_release_maps(struct ncclbpf_object *obj);
/* Storage used by several objects (a reload reused it). */
bool reload_map_is_shared(const struct nb_map *m);
/* Whether a published chain (or the old chain of a gated one) runs a program of o. */
bool registry_obj_published(const struct registry_obj *o);

#endif
