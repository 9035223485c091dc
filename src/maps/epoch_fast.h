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
	atomic_bool in_use;          /* owned by a live thread */
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

/* True when readers rely on membarrier() instead of a fence on every enter. */
bool map_epoch_uses_membarrier(void);

/* A reader whose sections never overlap one another and are already counted: a tuner
 * communicator (NCCL serializes getCollInfo per communicator, and the plugin counts its
 * calls anyway). Its section starts with the counter's increment, which the owner stores
 * anyway, and ends with one store of that count into `exits`: no epoch load, no record of
 * its own. In a section while exits != *enters.
 *
 * The reclaimer learns no epoch from such a reader, so it bounds it (epoch.c
 * map_epoch_min_active): a section that was already open at the previous scan keeps the
 * bound it had then; one that opened since started after that scan's membarrier, so it
 * cannot hold anything retired before that scan's global epoch. A busy reader therefore
 * delays reclamation by one scan, an idle one not at all.
 *
 * Only for a process whose fences are membarrier()'s (map_epoch_uses_membarrier(), checked
 * by the owner before registering): the owner's only barrier between the increment and
 * its first load is a compiler barrier. A forked child that cannot register membarrier
 * again reclaims nothing while such readers live. */
struct epoch_seq_reader {
	_Atomic uint64_t exits;          /* *enters when the last section ended */
	const _Atomic uint64_t *enters;  /* the owner's counter: +1 before each section */
	/* the scanners' state (epoch.c, under its lock) */
	uint64_t seen;                   /* *enters at the last scan */
	uint64_t bound;                  /* the open section's bound then, 0 = was idle */
	uint64_t seen_global;            /* the global epoch that scan read first */
	bool unordered;                  /* forked child without membarrier */
	struct epoch_seq_reader *next;
};

/* Registers r for the counter at enters, idle (exits = *enters): from now on every
 * increment of *enters opens a section that map_epoch_seq_exit must close. Requires
 * map_epoch_uses_membarrier(). */
void map_epoch_seq_register(struct epoch_seq_reader *r, const _Atomic uint64_t *enters);
/* Unregisters r (idle) before its memory goes. */
void map_epoch_seq_unregister(struct epoch_seq_reader *r);

/* Opens the section: call right after storing the increment of *enters, before the first
 * load of anything the section protects (the membarrier() of a scan is the other half). */
static inline void map_epoch_seq_enter(void)
{
	atomic_signal_fence(memory_order_seq_cst);
}

/* Closes the section opened when *enters became `count`. */
static inline void map_epoch_seq_exit(struct epoch_seq_reader *r, uint64_t count)
{
	atomic_store_explicit(&r->exits, count, memory_order_release);
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
