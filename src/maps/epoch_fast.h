/* The read side of the epoch mechanism (epoch.c) as inline functions, for decision paths
 * that enter a section on every call (runtime_chain_enter): the outermost enter is a TLS
 * load, a load of the global epoch and one store; an exit is one store. map_epoch_enter /
 * map_epoch_exit (map.h) are the same code out of line. Private to the library: the TLS
 * variable and the globals are hidden symbols of libncclbpf.so. */
#ifndef NCCLBPF_MAPS_EPOCH_FAST_H
#define NCCLBPF_MAPS_EPOCH_FAST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct epoch_record {
	_Atomic uint64_t epoch;      /* 0 = not in a critical section */
	atomic_bool in_use;          /* owned by a live thread (or an object, below) */
	bool object;                 /* owned by an object (map_epoch_record_acquire) */
	_Atomic(struct epoch_record *) next; /* global list, append-only */
	char pad[64 - 24];           /* one record per cache line: no false sharing */
};
_Static_assert(sizeof(struct epoch_record) == 64, "one record per cache line");

struct epoch_tls {
	struct epoch_record *rec;
	unsigned nesting;
};

/* Declared hidden (not only defined so: -fvisibility=hidden leaves extern declarations
 * alone): a PIC access is then one rip-relative load instead of a GOT load plus a load. */
extern __thread struct epoch_tls map_epoch_tls
	__attribute__((tls_model("initial-exec"), visibility("hidden")));
extern _Atomic uint64_t map_epoch_global __attribute__((visibility("hidden")));
extern bool map_epoch_membarrier __attribute__((visibility("hidden")));
void map_epoch_enter_slow(void);
void map_epoch_exit_unregistered(void);

static inline void map_epoch_publish(struct epoch_record *rec)
{
	atomic_store_explicit(&rec->epoch,
			      atomic_load_explicit(&map_epoch_global, memory_order_relaxed),
			      memory_order_release);
	/* StoreLoad: our epoch is visible before we read any map pointer. With
	 * membarrier the writer supplies the hardware barrier (epoch.c, at the top). */
	if (__builtin_expect(map_epoch_membarrier, 1))
		atomic_signal_fence(memory_order_seq_cst);
	else
		atomic_thread_fence(memory_order_seq_cst);
}

/* A record of its own for an object whose read sections never overlap one another (a
 * tuner communicator: NCCL serializes getCollInfo per communicator). Its sections are one
 * store each way: no thread-local lookup, no nesting count. Sections on it do not nest with
 * the thread's (both are scanned; either keeps what it read alive). NULL when out of memory
 * (use the thread's sections). Kept across fork() (the object lives on in the child). */
struct epoch_record *map_epoch_record_acquire(void);
void map_epoch_record_release(struct epoch_record *rec);

static inline void map_epoch_record_enter(struct epoch_record *rec)
{
	map_epoch_publish(rec);
}

static inline void map_epoch_record_exit(struct epoch_record *rec)
{
	atomic_store_explicit(&rec->epoch, 0, memory_order_release);
}

static inline void map_epoch_enter_fast(void)
{
	struct epoch_tls *t = &map_epoch_tls;
	if (t->nesting++)
		return;
	struct epoch_record *rec = t->rec;
	if (__builtin_expect(!rec, 0)) {
		map_epoch_enter_slow();
		return;
	}
	map_epoch_publish(rec);
}

static inline void map_epoch_exit_fast(void)
{
	struct epoch_tls *t = &map_epoch_tls;
	if (__builtin_expect(t->nesting == 0, 0))
		return; /* unbalanced exit: ignore rather than corrupt state */
	if (--t->nesting)
		return;
	struct epoch_record *rec = t->rec;
	if (__builtin_expect(rec != NULL, 1))
		atomic_store_explicit(&rec->epoch, 0, memory_order_release);
	else
		map_epoch_exit_unregistered();
}

#endif
