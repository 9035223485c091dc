/* Process-wide registry of maps shared by name (LIBBPF_PIN_BY_NAME declarations and the
 * plugin's built-in maps such as "ncclbpf_latency"). A pinned map lives until the process
 * exits, like a bpffs pin nobody removes: objects that bind it may be closed and reloaded
 * while other objects (and the profiler) keep using it, so no refcount can say "unused". */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maps/map.h"
#include "ncclbpf/policy.h"
#include "runtime/runtime.h"

struct pinned_entry {
	struct pinned_entry *next;
	struct nb_map *map;
	char owner[160]; /* who declared it first, for the mismatch message */
};

static pthread_mutex_t pinned_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pinned_entry *pinned_head;

/* The maps the plugin pins itself (the profiler's statistics and sampling requests). A
 * policy declares them with NCCLBPF_LATENCY_MAP / NCCLBPF_SAMPLE_CTL_MAP and binds to them;
 * the load check compares a declaration with these whether or not the profiler created them
 * yet, so the verdict does not depend on which side came first. */
static const struct nb_map_spec builtin_pins[] = {
	{ .name = "ncclbpf_latency", .type = NB_MAP_TYPE_HASH,
	  .key_size = sizeof(struct ncclbpf_latency_key),
	  .value_size = sizeof(struct ncclbpf_latency_stats), .max_entries = 4096 },
	{ .name = "ncclbpf_sample_ctl", .type = NB_MAP_TYPE_ARRAY, .key_size = 4,
	  .value_size = 4, .max_entries = RUNTIME_SAMPLE_CTL_ENTRIES },
};

const struct nb_map_spec *runtime_builtin_pinned(const char *name)
{
	for (size_t i = 0; name && i < sizeof(builtin_pins) / sizeof(builtin_pins[0]); i++)
		if (!strcmp(builtin_pins[i].name, name))
			return &builtin_pins[i];
	return NULL;
}

bool runtime_pinned_conflict(const struct nb_map_spec *have, const char *have_owner,
			     const struct nb_map_spec *want, const char *want_owner, char *err,
			     size_t errlen)
{
	if (have->type == want->type && have->key_size == want->key_size &&
	    have->value_size == want->value_size && have->max_entries == want->max_entries &&
	    have->map_flags == want->map_flags)
		return false;
	snprintf(err, errlen,
		 "shared (pinned) map '%s': %s declares flags 0x%x type %u key %u value %u "
		 "max_entries %u, %s declared flags 0x%x type %u key %u value %u max_entries %u; "
		 "every attribute must match",
		 want->name, want_owner ? want_owner : "this object", want->map_flags, want->type,
		 want->key_size, want->value_size, want->max_entries, have_owner, have->map_flags,
		 have->type, have->key_size, have->value_size, have->max_entries);
	return true;
}

static void spec_of_map(const struct nb_map *m, struct nb_map_spec *s)
{
	*s = (struct nb_map_spec){ map_name(m), map_type(m), map_key_size(m), map_value_size(m),
				   map_max_entries(m), map_flags(m) };
}

bool runtime_pinned_find(const char *name, struct nb_map_spec *spec, char *owner,
			 size_t ownerlen)
{
	bool found = false;
	pthread_mutex_lock(&pinned_lock);
	for (struct pinned_entry *e = pinned_head; e && !found; e = e->next) {
		if (strcmp(map_name(e->map), name))
			continue;
		spec_of_map(e->map, spec);
		snprintf(owner, ownerlen, "%s", e->owner);
		found = true;
	}
	pthread_mutex_unlock(&pinned_lock);
	return found;
}

struct nb_map *runtime_pinned_map(const struct nb_map_spec *spec, char *err, size_t errlen)
{
	return runtime_pinned_map_owned(spec, "the plugin", err, errlen);
}

/* Every attribute must match, flags included: a reader that declares the map read-only
 * while another object writes it would have its loads treated as rank-invariant. Objects
 * were checked against this registry before (runtime_check_maps); this check closes the
 * window between that check and the creation. */
struct nb_map *runtime_pinned_map_owned(const struct nb_map_spec *spec, const char *owner,
					char *err, size_t errlen)
{
	struct nb_map *found = NULL;

	if (!spec || !spec->name || !*spec->name) {
		snprintf(err, errlen, "pinned map needs a name");
		return NULL;
	}
	pthread_mutex_lock(&pinned_lock);
	for (struct pinned_entry *e = pinned_head; e; e = e->next) {
		struct nb_map_spec have;
		if (strcmp(map_name(e->map), spec->name))
			continue;
		spec_of_map(e->map, &have);
		if (runtime_pinned_conflict(&have, e->owner, spec, owner, err, errlen)) {
			pthread_mutex_unlock(&pinned_lock);
			return NULL;
		}
		found = e->map;
		break;
	}
	if (!found) {
		struct pinned_entry *e = calloc(1, sizeof(*e));
		if (!e) {
			snprintf(err, errlen, "out of memory");
		} else if (map_create(spec, &e->map, err, errlen) < 0) {
			free(e);
		} else {
			snprintf(e->owner, sizeof(e->owner), "%s", owner ? owner : "an object");
			e->next = pinned_head;
			pinned_head = e;
			found = e->map;
		}
	}
	pthread_mutex_unlock(&pinned_lock);
	return found;
}

void runtime_pinned_foreach(void (*fn)(struct nb_map *m, void *arg), void *arg)
{
	pthread_mutex_lock(&pinned_lock);
	for (struct pinned_entry *e = pinned_head; e; e = e->next)
		fn(e->map, arg);
	pthread_mutex_unlock(&pinned_lock);
}
