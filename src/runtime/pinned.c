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
};

static pthread_mutex_t pinned_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pinned_entry *pinned_head;

struct nb_map *runtime_pinned_map(const struct nb_map_spec *spec, char *err, size_t errlen)
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
		    map_value_size(m) != spec->value_size) {
			snprintf(err, errlen,
				 "pinned map '%s' exists with type %u key %u value %u; this "
				 "declaration has type %u key %u value %u",
				 spec->name, map_type(m), map_key_size(m), map_value_size(m),
				 spec->type, spec->key_size, spec->value_size);
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
