/* Epoch-based reclamation for map elements.
 *
 * Readers: each thread owns a record (allocated once, found through a thread-local
 * pointer, kept on a global list and reused after the thread exits). map_epoch_enter
 * stores the current global epoch into the record, then needs store-load ordering
 * against the writer's unlink; map_epoch_exit stores 0. Nesting is a thread-local
 * counter, so only the outermost pair touches the record.
 *
 * The store-load fence: a full fence (a locked instruction) costs ~10-40 cycles on
 * every enter. Where the kernel offers membarrier(PRIVATE_EXPEDITED) (Linux >= 4.14) the
 * fence is made asymmetric, as liburcu's "memb" flavour does: readers only keep the
 * compiler from reordering, and a writer about to scan the records calls membarrier(),
 * which runs a full barrier on every CPU currently running a thread of this process.
 * Writers scan rarely (batched reclamation), readers enter on every decision. If the
 * syscall is unavailable (old kernel, seccomp), readers use the full fence.
 *
 * Writers: after unlinking an element they take a tag with map_epoch_retire_tag(), which
 * also advances the global epoch. A reader that could still hold the element entered
 * before the unlink, so its record holds an epoch <= tag (or the scan is guaranteed to
 * see it: the enter fence and the scan fence make this a Dekker pair). Every reader that
 * enters later reads an epoch > tag. So an element retired with tag T is free once
 * map_epoch_min_active() > T.
 *
 * Thread exit: a pthread key destructor clears the record and marks it free, so a dead
 * thread never blocks reclamation and records do not leak.
 *
 * Counted readers (struct epoch_seq_reader, epoch_fast.h: tuner communicators) carry no
 * epoch; map_epoch_min_active bounds them from what the previous scan saw. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "maps/env_bool.h"
#include "maps/epoch_fast.h"
#include "maps/map_internal.h"

/* The global epoch starts at 1: 0 marks an idle record. */
_Atomic uint64_t map_epoch_global = 1;
#define global_epoch map_epoch_global
static _Atomic(struct epoch_record *) records;
static atomic_size_t record_count;
/* Readers whose record could not be allocated: while any is inside a section nothing
 * is reclaimed (correct, merely slower; only after malloc failed for 64 bytes). */
static atomic_uint unregistered_readers;
static pthread_mutex_t register_lock = PTHREAD_MUTEX_INITIALIZER;
/* Counted readers and the scanners' state in them. Taken around whole scans, so that each
 * reader's state moves from one scan to the next in order. */
static pthread_mutex_t seq_lock = PTHREAD_MUTEX_INITIALIZER;
static struct epoch_seq_reader *seq_readers;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static bool exit_key_ok;
/* Written once inside key_once (before any reader publishes an epoch or any writer
 * scans), or in a forked child while it has a single thread. */
bool map_epoch_membarrier;
#define use_membarrier map_epoch_membarrier

#define NB_MEMBARRIER_CMD_QUERY 0
#define NB_MEMBARRIER_CMD_PRIVATE_EXPEDITED (1 << 3)
#define NB_MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED (1 << 4)

static bool membarrier_setup(void)
{
#ifdef SYS_membarrier
	long cmds = syscall(SYS_membarrier, NB_MEMBARRIER_CMD_QUERY, 0);
	long need = NB_MEMBARRIER_CMD_PRIVATE_EXPEDITED | NB_MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED;

	/* debugging / measurement: force full fences (runtime/env.c warns about bad values) */
	if (nb_env_bool_parse(getenv("NCCLBPF_EPOCH_FENCE")) == 1)
		return false;
	return cmds > 0 && (cmds & need) == need &&
	       syscall(SYS_membarrier, NB_MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0) == 0;
#else
	return false;
#endif
}

/* initial-exec: the library is loaded once per process and needs 16 bytes of static TLS;
 * this keeps enter/exit free of __tls_get_addr calls (and lets epoch_fast.h inline them). */
__thread struct epoch_tls map_epoch_tls __attribute__((tls_model("initial-exec")));
#define tls map_epoch_tls

static pthread_mutex_t domain_lock = PTHREAD_MUTEX_INITIALIZER;
static struct map_epoch_domain *domains;

static void epoch_thread_exit(void *arg)
{
	struct epoch_record *rec = arg;

	atomic_store_explicit(&rec->epoch, 0, memory_order_release);
	atomic_store_explicit(&rec->in_use, false, memory_order_release);
	if (tls.rec == rec) {
		tls.rec = NULL;
		tls.nesting = 0;
	}
}

/* The counted readers' list stays consistent across fork(): the forking thread holds its
 * lock over the fork. */
static void epoch_atfork_prepare(void)
{
	pthread_mutex_lock(&seq_lock);
}

static void epoch_atfork_parent(void)
{
	pthread_mutex_unlock(&seq_lock);
}

/* In a forked child only the forking thread exists: records of the parent's other
 * threads would pin their epochs forever. Release them. Counted readers are objects that
 * live on in the child, as they were (a section the forking thread had open stays open). */
static void epoch_atfork_child(void)
{
	pthread_mutex_init(&register_lock, NULL);
	pthread_mutex_unlock(&seq_lock); /* taken by epoch_atfork_prepare in this thread */
	/* Single-threaded now: safe to (re)decide the fence mode for the child's mm. */
	if (use_membarrier) {
		use_membarrier = membarrier_setup();
		/* their sections carry no fence of their own: without membarrier no scan can be
		 * ordered against them, so nothing is reclaimed while they live */
		for (struct epoch_seq_reader *r = seq_readers; r && !use_membarrier; r = r->next)
			r->unordered = true;
	}
	atomic_store_explicit(&unregistered_readers, !tls.rec && tls.nesting ? 1 : 0,
			      memory_order_relaxed);
	for (struct epoch_record *rec = atomic_load_explicit(&records, memory_order_relaxed); rec;
	     rec = atomic_load_explicit(&rec->next, memory_order_relaxed)) {
		if (rec == tls.rec)
			continue;
		atomic_store_explicit(&rec->epoch, 0, memory_order_relaxed);
		atomic_store_explicit(&rec->in_use, false, memory_order_relaxed);
	}
}

static void epoch_init_once(void)
{
	exit_key_ok = pthread_key_create(&exit_key, epoch_thread_exit) == 0;
	pthread_atfork(epoch_atfork_prepare, epoch_atfork_parent, epoch_atfork_child);
	use_membarrier = membarrier_setup();
}

/* Takes a free record or allocates one. NULL only if malloc fails. */
static struct epoch_record *record_take(void)
{
	struct epoch_record *rec;

	pthread_once(&key_once, epoch_init_once);
	pthread_mutex_lock(&register_lock);
	for (rec = atomic_load_explicit(&records, memory_order_acquire); rec;
	     rec = atomic_load_explicit(&rec->next, memory_order_acquire)) {
		if (!atomic_load_explicit(&rec->in_use, memory_order_acquire))
			break;
	}
	if (!rec) {
		rec = aligned_alloc(64, sizeof(*rec));
		if (rec) {
			atomic_init(&rec->epoch, 0);
			atomic_init(&rec->in_use, false);
			atomic_init(&rec->next, atomic_load_explicit(&records, memory_order_relaxed));
			atomic_store_explicit(&records, rec, memory_order_release);
			atomic_fetch_add_explicit(&record_count, 1, memory_order_relaxed);
		}
	}
	if (rec)
		atomic_store_explicit(&rec->in_use, true, memory_order_relaxed);
	pthread_mutex_unlock(&register_lock);
	return rec;
}

void map_epoch_seq_register(struct epoch_seq_reader *r, const _Atomic uint64_t *enters)
{
	pthread_once(&key_once, epoch_init_once);
	pthread_mutex_lock(&seq_lock);
	r->enters = enters;
	uint64_t now = atomic_load_explicit(enters, memory_order_acquire);
	atomic_store_explicit(&r->exits, now, memory_order_release);
	r->seen = now;
	r->bound = 0;
	/* a section opened after this starts after this load: nothing retired before it */
	r->seen_global = atomic_load_explicit(&global_epoch, memory_order_seq_cst);
	r->unordered = false;
	r->next = seq_readers;
	seq_readers = r;
	pthread_mutex_unlock(&seq_lock);
}

void map_epoch_seq_unregister(struct epoch_seq_reader *r)
{
	pthread_mutex_lock(&seq_lock);
	for (struct epoch_seq_reader **pp = &seq_readers; *pp; pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	}
	r->next = NULL;
	pthread_mutex_unlock(&seq_lock);
}

/* Slow path, once per thread: take a free record or allocate one. Returns NULL only if
 * malloc fails; the caller then runs without a record (see map_epoch_enter). */
static __attribute__((noinline)) struct epoch_record *epoch_register(void)
{
	struct epoch_record *rec = record_take();

	if (rec) {
		tls.rec = rec;
		if (exit_key_ok)
			pthread_setspecific(exit_key, rec);
	}
	return rec;
}

/* First section of this thread (or malloc failed before): kept out of line so the fast
 * path (epoch_fast.h) stays a handful of instructions. Called with nesting already 1. */
__attribute__((noinline, cold)) void map_epoch_enter_slow(void)
{
	struct epoch_record *rec = epoch_register();

	if (!rec) {
		atomic_fetch_add_explicit(&unregistered_readers, 1, memory_order_seq_cst);
		atomic_thread_fence(memory_order_seq_cst);
		return;
	}
	map_epoch_publish(rec);
}

/* The outermost exit of a thread that has no record (malloc failed). */
__attribute__((noinline, cold)) void map_epoch_exit_unregistered(void)
{
	atomic_fetch_sub_explicit(&unregistered_readers, 1, memory_order_release);
}

void map_epoch_enter(void)
{
	map_epoch_enter_fast();
}

void map_epoch_exit(void)
{
	map_epoch_exit_fast();
}

bool map_epoch_in_section(void)
{
	return tls.nesting != 0;
}

uint64_t map_epoch_retire_tag(void)
{
	return atomic_fetch_add_explicit(&global_epoch, 1, memory_order_seq_cst);
}

/* The bound of a counted reader (under seq_lock): the smallest epoch a section of it that
 * is open now may have started in, UINT64_MAX when none is open. `global` was read before
 * this scan's fence. */
static uint64_t seq_bound(struct epoch_seq_reader *r, uint64_t global)
{
	/* enters first: exits == that count then means that section is over (a later one
	 * opened after this read, so after our membarrier) */
	uint64_t in = atomic_load_explicit(r->enters, memory_order_acquire);
	uint64_t out = atomic_load_explicit(&r->exits, memory_order_acquire);
	uint64_t b = UINT64_MAX;
	if (out != in)
		/* open at the previous scan: the bound it had; opened since: it started after
		 * that scan's membarrier, so after everything retired before its global epoch */
		b = in == r->seen && r->bound ? r->bound : r->seen_global;
	r->seen = in;
	r->bound = b == UINT64_MAX ? 0 : b;
	r->seen_global = global;
	return b;
}

uint64_t map_epoch_min_active(void)
{
	uint64_t min = UINT64_MAX;

	pthread_once(&key_once, epoch_init_once);
	pthread_mutex_lock(&seq_lock);
	/* before the fence: what counted readers that open a section after this scan cannot
	 * hold (everything retired before it) */
	uint64_t global = atomic_load_explicit(&global_epoch, memory_order_seq_cst);
	/* Pairs with the fence in map_epoch_enter: either we see the reader's epoch, or
	 * the reader sees the unlink that happened before the caller got here. */
	atomic_thread_fence(memory_order_seq_cst);
#ifdef SYS_membarrier
	if (use_membarrier &&
	    syscall(SYS_membarrier, NB_MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) != 0) {
		pthread_mutex_unlock(&seq_lock);
		return 0; /* cannot order against readers now: reclaim nothing */
	}
#endif
	if (atomic_load_explicit(&unregistered_readers, memory_order_acquire))
		min = 0;
	for (struct epoch_record *rec = atomic_load_explicit(&records, memory_order_acquire); rec;
	     rec = atomic_load_explicit(&rec->next, memory_order_acquire)) {
		uint64_t e = atomic_load_explicit(&rec->epoch, memory_order_acquire);
		if (e && e < min)
			min = e;
	}
	/* every counted reader is scanned, so that its state follows each scan */
	for (struct epoch_seq_reader *r = seq_readers; r; r = r->next) {
		uint64_t b = r->unordered ? 0 : seq_bound(r, global);
		if (b < min)
			min = b;
	}
	pthread_mutex_unlock(&seq_lock);
	return min;
}

bool map_epoch_uses_membarrier(void)
{
	pthread_once(&key_once, epoch_init_once);
	return use_membarrier;
}

size_t map_epoch_record_count(void)
{
	return atomic_load_explicit(&record_count, memory_order_relaxed);
}

void map_epoch_domain_register(struct map_epoch_domain *d)
{
	pthread_mutex_lock(&domain_lock);
	d->prev = NULL;
	d->next = domains;
	if (domains)
		domains->prev = d;
	domains = d;
	pthread_mutex_unlock(&domain_lock);
}

void map_epoch_domain_unregister(struct map_epoch_domain *d)
{
	pthread_mutex_lock(&domain_lock);
	if (d->prev)
		d->prev->next = d->next;
	else if (domains == d)
		domains = d->next;
	if (d->next)
		d->next->prev = d->prev;
	d->prev = d->next = NULL;
	pthread_mutex_unlock(&domain_lock);
}

void map_epoch_reclaim(void)
{
	pthread_mutex_lock(&domain_lock);
	for (struct map_epoch_domain *d = domains; d; d = d->next)
		d->reclaim(d);
	pthread_mutex_unlock(&domain_lock);
}
