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
#include "runtime/runtime.h"

struct pinned_entry {
	struct pinned_entry *next;
	struct nb_map *map;
	char owner[160]; /* who declared it first, for the mismatch message */
};

static pthread_mutex_t pinned_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pinned_entry *pinned_head;

struct nb_map *runtime_pinned_map(const struct nb_map_spec *spec, char *err, size_t errlen)
{
	return runtime_pinned_map_owned(spec, "the plugin", err, errlen);
}

/* Every attribute must match, flags included: a reader that declares the map read-only
 * while another object writes it would have its loads treated as rank-invariant. */
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
		struct nb_map *m = e->map;
		if (strcmp(map_name(m), spec->name))
			continue;
		if (map_type(m) != spec->type || map_key_size(m) != spec->key_size ||
		    map_value_size(m) != spec->value_size ||
		    map_max_entries(m) != spec->max_entries || map_flags(m) != spec->map_flags) {
			snprintf(err, errlen,
				 "shared (pinned) map '%s': %s declares flags 0x%x type %u key %u "
				 "value %u max_entries %u, %s declared flags 0x%x type %u key %u "
				 "value %u max_entries %u; every attribute must match",
				 spec->name, owner ? owner : "this object", spec->map_flags,
				 spec->type, spec->key_size, spec->value_size, spec->max_entries,
				 e->owner, map_flags(m), map_type(m), map_key_size(m),
				 map_value_size(m), map_max_entries(m));
			pthread_mutex_unlock(&pinned_lock);
			return NULL;
		}
		found = m;
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
