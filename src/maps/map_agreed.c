/* Agreed maps, local side: validation, the process-wide slot registry the agree module
 * enumerates, and the per-thread binding that routes a program's lookups to the storage of
 * its role (tuner: the published version active for the current collective; profiler: the
 * communicator's local contribution). The agree module owns those buffers; this file only
 * resolves addresses, so the lookup stays a TLS load, an index check and an add. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maps/map_internal.h"
#include "ncclbpf/policy.h"

_Static_assert(NB_MAP_F_AGREED == NCCLBPF_F_AGREED, "agreed flag");

/* initial-exec: the default TLS model would make libncclbpf.so need __tls_get_addr. */
static __thread const struct nb_map_binding *tls_binding __attribute__((tls_model("initial-exec")));

static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nb_map_agreed_desc slot_desc[NB_MAP_AGREED_SLOTS];
static bool slot_used[NB_MAP_AGREED_SLOTS];
static uint64_t slot_generation;

void map_agreed_bind(const struct nb_map_binding *b)
{
	tls_binding = b;
}

const struct nb_map_binding *map_agreed_binding(void)
{
	return tls_binding;
}

int map_agreed_validate(const struct nb_map_spec *s, const char *name, char *err, size_t errlen)
{
	uint32_t op = NCCLBPF_AGREE_OP_OF(s->map_flags);
	if (!(s->map_flags & NB_MAP_F_AGREED)) {
		snprintf(err, errlen, "map '%s': map_flags 0x%x: agreed-map fields without "
			 "NCCLBPF_F_AGREED", name, s->map_flags & NB_MAP_AGREED_BITS);
		return -EINVAL;
	}
	if (s->type != NB_MAP_TYPE_ARRAY) {
		snprintf(err, errlen, "map '%s': agreed maps must be BPF_MAP_TYPE_ARRAY (type %u)",
			 name, s->type);
		return -EINVAL;
	}
	if (s->value_size % 8) {
		snprintf(err, errlen, "map '%s': agreed map value_size %u is not a multiple of 8 "
			 "(values are reduced as __u64 words)", name, s->value_size);
		return -EINVAL;
	}
	if (op >= NCCLBPF_AGREE_NUM_OPS) {
		snprintf(err, errlen, "map '%s': unknown agreed reduce operation %u", name, op);
		return -EINVAL;
	}
	if ((uint64_t)s->value_size * s->max_entries > (1u << 20)) {
		snprintf(err, errlen, "map '%s': agreed map of %u x %u bytes exceeds 1 MiB (it is "
			 "shipped between ranks)", name, s->max_entries, s->value_size);
		return -E2BIG;
	}
	if (s->map_flags & (NB_MAP_F_RDONLY_PROG | NB_MAP_F_WRONLY_PROG | NB_MAP_F_MMAPABLE)) {
		snprintf(err, errlen, "map '%s': agreed maps take no access or mmap flags", name);
		return -EINVAL;
	}
	return 0;
}

int map_agreed_init(struct nb_map *m, char *err, size_t errlen)
{
	size_t bytes = (size_t)m->stride * m->max_entries;
	m->agreed_zero = calloc(1, bytes ? bytes : 1);
	if (!m->agreed_zero) {
		snprintf(err, errlen, "map '%s': out of memory", m->name);
		return -ENOMEM;
	}
	pthread_mutex_lock(&slots_lock);
	int slot = -1;
	for (int i = 0; i < NB_MAP_AGREED_SLOTS; i++)
		if (!slot_used[i]) {
			slot = i;
			break;
		}
	if (slot >= 0) {
		struct nb_map_agreed_desc *d = &slot_desc[slot];
		memset(d, 0, sizeof(*d));
		snprintf(d->name, sizeof(d->name), "%s", m->name);
		d->value_size = m->value_size;
		d->stride = m->stride;
		d->max_entries = m->max_entries;
		d->map_flags = m->map_flags;
		d->op = NCCLBPF_AGREE_OP_OF(m->map_flags);
		d->epoch = NCCLBPF_AGREE_EPOCH_OF(m->map_flags);
		d->generation = ++slot_generation;
		slot_used[slot] = true;
	}
	pthread_mutex_unlock(&slots_lock);
	if (slot < 0) {
		free(m->agreed_zero);
		m->agreed_zero = NULL;
		snprintf(err, errlen, "map '%s': more than %d agreed maps in this process", m->name,
			 NB_MAP_AGREED_SLOTS);
		return -E2BIG;
	}
	m->agreed_slot = slot;
	return 0;
}

unsigned map_agreed_slots_free(void)
{
	unsigned n = 0;
	pthread_mutex_lock(&slots_lock);
	for (int i = 0; i < NB_MAP_AGREED_SLOTS; i++)
		n += !slot_used[i];
	pthread_mutex_unlock(&slots_lock);
	return n;
}

void map_agreed_destroy(struct nb_map *m)
{
	if (m->agreed_slot >= 0) {
		pthread_mutex_lock(&slots_lock);
		slot_used[m->agreed_slot] = false;
		pthread_mutex_unlock(&slots_lock);
		m->agreed_slot = -1;
	}
	free(m->agreed_zero);
	m->agreed_zero = NULL;
}

bool map_agreed_desc(uint32_t slot, struct nb_map_agreed_desc *out)
{
	if (slot >= NB_MAP_AGREED_SLOTS)
		return false;
	pthread_mutex_lock(&slots_lock);
	bool used = slot_used[slot];
	if (used)
		*out = slot_desc[slot];
	pthread_mutex_unlock(&slots_lock);
	return used;
}

int map_agreed_slot(const struct nb_map *m)
{
	return m ? m->agreed_slot : -1;
}

static inline uint8_t *resolve(struct nb_map *m, bool *readonly)
{
	const struct nb_map_binding *b = tls_binding;
	*readonly = false;
	if (!b)
		return m->array_base;
	uint8_t *base = b->base[m->agreed_slot];
	if (b->mode == NB_BIND_READ) {
		*readonly = true;
		return base ? base : m->agreed_zero;
	}
	return base ? base : m->array_base;
}

void *map_agreed_lookup(struct nb_map *m, const void *key)
{
	uint32_t idx;
	bool ro;
	__builtin_memcpy(&idx, key, sizeof(idx));
	if (MAP_UNLIKELY(idx >= m->max_entries))
		return NULL;
	return resolve(m, &ro) + (size_t)idx * m->stride;
}

int map_agreed_update(struct nb_map *m, const void *key, const void *value, uint64_t flags)
{
	uint32_t idx;
	bool ro;
	if (flags > NB_EXIST)
		return -EINVAL;
	memcpy(&idx, key, sizeof(idx));
	if (idx >= m->max_entries)
		return -E2BIG;
	if (flags == NB_NOEXIST)
		return -EEXIST;
	uint8_t *base = resolve(m, &ro);
	if (ro)
		return -EPERM; /* published versions are immutable */
	uint8_t *dst = base + (size_t)idx * m->stride;
	for (uint32_t i = 0; i + 8 <= m->value_size; i += 8) {
		uint64_t w;
		memcpy(&w, (const uint8_t *)value + i, 8);
		atomic_store_explicit((_Atomic uint64_t *)(void *)(dst + i), w, memory_order_relaxed);
	}
	return 0;
}
