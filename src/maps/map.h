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
 *
 * Details of this implementation (additions to the contract above):
 *  - Hash/LRU updates of an existing key publish a new element and retire the old one (as
 *    the kernel's htab): a reader holding the old value pointer keeps seeing the old,
 *    untorn value until it leaves its section. Array updates copy in place with 64-bit
 *    relaxed atomic stores (words never tear, the value as a whole may).
 *  - Elements are preallocated (max_entries plus a slack of 256..8192 for retired ones);
 *    updates never call malloc. If the slack is exhausted because readers still hold
 *    retired elements, an update made outside any critical section reclaims and waits
 *    (up to 1 s) for them; one made inside a section (a program) fails with -ENOMEM
 *    instead of waiting for itself.
 *  - LRU: lookups set a reference bit (no lock); writers serialise on one lock per map;
 *    when full, an insert evicts the least recently inserted/updated element, giving a
 *    second chance to one looked up since (the kernel's ref-bit scheme). Failed updates
 *    (-EEXIST/-ENOENT/-EINVAL) evict nothing.
 *  - Arrays: update of index >= max_entries -> -E2BIG, NOEXIST -> -EEXIST, delete ->
 *    -EINVAL, lookup out of range -> NULL (all as the kernel).
 *  - Flags: update flags other than ANY/NOEXIST/EXIST (BPF_F_LOCK included: values have
 *    no spin lock) give -EINVAL. Known map_flags (NB_MAP_F_*) are validated per type as
 *    the kernel does and recorded; LRU with NO_PREALLOC gives -ENOTSUP.
 *  - Hash iteration order is deterministic (fixed hash seed).
 *  - Epoch records: one 64-byte record per thread, allocated at its first
 *    map_epoch_enter, released by a thread-exit destructor (and in a forked child) and
 *    reused. A thread that exits inside a section does not block reclamation. Readers
 *    need no fence when membarrier(PRIVATE_EXPEDITED) works: writers issue it before
 *    scanning the records (env NCCLBPF_EPOCH_FENCE=1 forces the fence instead).
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

/* Other kernel map_flags accepted by map_create (recorded, mostly no effect here). */
#define NB_MAP_F_NO_PREALLOC (1u << 0)   /* hash: accepted, we always preallocate */
#define NB_MAP_F_NO_COMMON_LRU (1u << 1) /* LRU only: accepted, one LRU list */
#define NB_MAP_F_NUMA_NODE (1u << 2)
#define NB_MAP_F_RDONLY (1u << 3)        /* user-space access flags */
#define NB_MAP_F_WRONLY (1u << 4)
#define NB_MAP_F_ZERO_SEED (1u << 6)     /* hash: our seed is fixed anyway */
#define NB_MAP_F_WRONLY_PROG (1u << 8)
#define NB_MAP_F_MMAPABLE (1u << 10)     /* array (not per-CPU) */
#define NB_MAP_F_PRESERVE_ELEMS (1u << 11)
#define NB_MAP_F_INNER_MAP (1u << 12)

/* ncclbpf's own flag (policy.h NCCLBPF_F_AGREED; bits 25..31 carry the reduce operation
 * and log2 of the epoch length): an ARRAY agreed across ranks (src/agree). Its storage is
 * per communicator and per role: lookups and updates resolve through the calling thread's
 * binding (map_agreed_bind). Unbound threads (CLI, host API) use the map's own array.
 * map_array_base() is NULL for agreed maps, so nothing inlines or aliases that storage. */
#define NB_MAP_F_AGREED (1u << 24)
#define NB_MAP_AGREED_BITS 0xff000000u
#define NB_MAP_AGREED_SLOTS 32

/* Limits as the kernel's (value_size is capped lower than kmalloc's limit). */
#define NB_MAP_MAX_KEY_SIZE 512u           /* MAX_BPF_STACK */
#define NB_MAP_MAX_VALUE_SIZE (1u << 20)
#define NB_MAP_MAX_PERCPU_VALUE_SIZE (32u << 10) /* PCPU_MIN_UNIT_SIZE */

struct nb_map_spec {
	const char *name;
	uint32_t type;
	uint32_t key_size;
	uint32_t value_size;
	uint32_t max_entries;
	uint32_t map_flags;
};

struct nb_map; /* opaque */

/* Everything map_create checks before it allocates: known type (kernel-only types are named),
 * flags per type, agreed-map attributes, sizes (array key_size 4, sizes > 0, value_size
 * <= 1 MiB, storage <= 4 GiB). 0 or a negative errno with the reason in err. Allocation may
 * still fail (-ENOMEM) in map_create, and agreed maps need a free slot (map_agreed_slots_free). */
int map_spec_check(const struct nb_map_spec *spec, char *err, size_t errlen);
/* Bytes a direct value reference (BPF_PSEUDO_MAP_VALUE: global data) may point into: the
 * entries of an array map (map_array_base .. + stride * max_entries); 0 for other types and
 * agreed maps, whose storage is per communicator. */
uint64_t map_spec_value_span(const struct nb_map_spec *spec);
/* Creates a map. Validates the spec with map_spec_check (the kernel's rules and errors). */
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

/* ---- agreed maps (map_agreed.c) ---- */
/* A thread's view of every agreed map: base[slot] is the storage lookups of that map
 * resolve to (max_entries entries, map_array_stride apart), NULL = the map's all-zero
 * view when reading, its own array when writing. */
enum nb_map_bind_mode { NB_BIND_READ = 1, NB_BIND_WRITE = 2 };
struct nb_map_binding {
	enum nb_map_bind_mode mode;
	uint8_t *base[NB_MAP_AGREED_SLOTS];
};
/* Binds (or with NULL unbinds) the calling thread. The binding must stay valid until
 * unbound. READ bindings make updates fail with -EPERM. */
void map_agreed_bind(const struct nb_map_binding *b);
const struct nb_map_binding *map_agreed_binding(void);
/* Immutable description of the agreed map in a slot (registered by map_create). */
struct nb_map_agreed_desc {
	char name[64];
	uint32_t value_size, stride, max_entries, map_flags;
	uint32_t op;         /* NCCLBPF_AGREE_* */
	uint32_t epoch;      /* K */
	uint64_t generation; /* changes when the slot is reused */
};
/* Copies the descriptor of slot i; false when the slot is empty. Thread-safe. */
bool map_agreed_desc(uint32_t slot, struct nb_map_agreed_desc *out);
/* Slot of an agreed map, or -1. */
int map_agreed_slot(const struct nb_map *map);
/* Agreed-map slots this process has left (map_create of an agreed map takes one). */
unsigned map_agreed_slots_free(void);

/* Read-side critical section for the calling thread. Cheap (no lock, no syscall; the
 * outermost enter is one store, plus a full fence only where membarrier() is
 * unavailable or NCCLBPF_EPOCH_FENCE is set); nestable. */
void map_epoch_enter(void);
void map_epoch_exit(void);
/* Reclaims everything retired before all current readers started; called by writers
 * opportunistically and at map_free. Exposed for tests. */
void map_epoch_reclaim(void);

#endif
