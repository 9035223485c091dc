/* maps: BPF maps with the kernel's semantics, shared safely between many threads.
 *
 * Types (kernel numbers): HASH 1, ARRAY 2, PERCPU_ARRAY 6 (one copy: user space has no
 * CPU binding; kept for declaration compatibility), LRU_HASH 9.
 * Update flags ANY 0 / NOEXIST 1 / EXIST 2. Errors as the kernel: -ENOENT missing key,
 * -EEXIST with NOEXIST, -E2BIG when full (hash), -EINVAL bad flags or array index,
 * -ENOMEM.
 *
 * Concurrency contract: map_lookup never blocks and never allocates. A value pointer
 * returned by map_lookup stays valid until the calling thread leaves its read-side
 * critical section (map_epoch_exit). Deleted/replaced hash elements are reclaimed only
 * after every thread that was inside a critical section at the time has left it
 * (epoch-based reclamation). Updates and deletes of hash maps may take a per-bucket lock;
 * array updates are lock-free (value copied in place; torn multi-word values are possible
 * exactly as in the kernel when no lock is used).
 */
#ifndef NCCLBPF_MAPS_MAP_H
#define NCCLBPF_MAPS_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NB_MAP_TYPE_HASH 1
#define NB_MAP_TYPE_ARRAY 2
#define NB_MAP_TYPE_PERCPU_ARRAY 6
#define NB_MAP_TYPE_LRU_HASH 9

#define NB_ANY 0
#define NB_NOEXIST 1
#define NB_EXIST 2

#define NB_MAP_F_RDONLY_PROG (1u << 7) /* BPF_F_RDONLY_PROG: programs may not write */

struct nb_map_spec {
	const char *name;
	uint32_t type;
	uint32_t key_size;
	uint32_t value_size;
	uint32_t max_entries;
	uint32_t map_flags;
};

struct nb_map; /* opaque */

/* Creates a map. Validates the spec like the kernel does (array key_size must be 4,
 * sizes > 0, value_size <= 1 MiB, max_entries > 0, known type). */
int map_create(const struct nb_map_spec *spec, struct nb_map **out, char *err, size_t errlen);
/* Frees the map. Caller guarantees no thread uses it any more. */
void map_free(struct nb_map *map);

const char *map_name(const struct nb_map *map);
uint32_t map_type(const struct nb_map *map);
uint32_t map_key_size(const struct nb_map *map);
uint32_t map_value_size(const struct nb_map *map);
uint32_t map_max_entries(const struct nb_map *map);
uint32_t map_flags(const struct nb_map *map);
/* true for types whose elements can be freed (hash, LRU): callers need an epoch. */
bool map_needs_epoch(const struct nb_map *map);

/* Fast path, called from programs (through helpers) and the JIT. Returns a pointer to the
 * value, or NULL. Must be called inside map_epoch_enter/exit for hash/LRU maps. */
void *map_lookup(struct nb_map *map, const void *key);
int map_update(struct nb_map *map, const void *key, const void *value, uint64_t flags);
int map_delete(struct nb_map *map, const void *key);
/* Iteration as the kernel: key NULL or missing -> first key; -ENOENT after the last. */
int map_get_next_key(struct nb_map *map, const void *key, void *next_key);

/* Array maps only: base address of entry 0 (entries are value_size apart, 8-byte
 * aligned stride), for global data and JIT inlining. NULL for other types. */
void *map_array_base(struct nb_map *map);
/* Array maps only: stride between entries in bytes (value_size rounded up to 8). */
uint32_t map_array_stride(const struct nb_map *map);

/* Read-side critical section for the calling thread. Cheap (no lock, no syscall);
 * nestable. */
void map_epoch_enter(void);
void map_epoch_exit(void);
/* Reclaims everything retired before all current readers started; called by writers
 * opportunistically and at map_free. Exposed for tests. */
void map_epoch_reclaim(void);

#endif
