/* Epoch-based reclamation, white-box: retired elements wait for readers (same thread,
 * other thread, nested sections), a thread that exits inside a section does not block
 * reclamation, thread records are reused, writers outside a section wait for readers
 * when the pool is exhausted, writers inside one get -ENOMEM instead of deadlocking, and
 * counted readers (epoch_seq_reader) keep exactly what their open sections may hold. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "maps/epoch_fast.h"
#include "maps/map_internal.h"
#include "test_util.h"

#define VWORDS 4

static struct nb_map *mk_hash(uint32_t max)
{
	struct nb_map_spec s = {"h", NB_MAP_TYPE_HASH, 4, VWORDS * 8, max, 0};
	struct nb_map *m = NULL;
	char err[128];
	CHECK_EQ_U64(map_create(&s, &m, err, sizeof(err)), 0);
	return m;
}

static int put(struct nb_map *m, uint32_t k, uint64_t x, uint64_t flags)
{
	uint64_t v[VWORDS];
	for (int i = 0; i < VWORDS; i++)
		v[i] = x;
	return map_update(m, &k, v, flags);
}

static int value_is(const uint64_t *p, uint64_t x)
{
	for (int i = 0; i < VWORDS; i++)
		if (p[i] != x)
			return 0;
	return 1;
}

static void test_same_thread(void)
{
	struct nb_map *m = mk_hash(8);
	uint32_t k = 1;
	uint64_t *p;

	if (!m)
		return;
	CHECK_EQ_U64(put(m, k, 0x1111, NB_ANY), 0);
	map_epoch_enter();
	map_epoch_enter(); /* nested */
	p = map_lookup(m, &k);
	CHECK(p != NULL);
	map_epoch_exit();
	CHECK(map_epoch_in_section());
	CHECK_EQ_U64(map_delete(m, &k), 0);
	map_epoch_reclaim();
	CHECK_EQ_U64(map_pool_pending(m), 1); /* we still hold it */
	CHECK(p && value_is(p, 0x1111));
	/* replace churn on another key: the pinned element is never handed out again */
	for (int i = 0; i < 40; i++) {
		uint32_t k2 = 2;
		CHECK_EQ_U64(put(m, k2, (uint64_t)i, NB_ANY), 0);
		CHECK(map_lookup(m, &k2) != (void *)p);
	}
	CHECK(p && value_is(p, 0x1111));
	map_epoch_exit();
	CHECK(!map_epoch_in_section());
	map_epoch_reclaim();
	CHECK_EQ_U64(map_pool_pending(m), 0);
	map_free(m);
}

/* Inside a section our own epoch pins everything retired meanwhile: once the pool's slack
 * is used up, updates fail with -ENOMEM (they must not wait for themselves). */
static void test_in_section_exhaustion(void)
{
	struct nb_map *m = mk_hash(4);
	uint32_t k = 1;
	int rc = 0, i;

	if (!m)
		return;
	map_epoch_enter();
	for (i = 0; i < 1000 && (rc = put(m, k, (uint64_t)i, NB_ANY)) == 0; i++)
		;
	CHECK_EQ_U64(rc, -ENOMEM);
	CHECK(i >= 256 && i < 1000); /* the slack (>= 256 elements) was usable */
	map_epoch_exit();
	CHECK_EQ_U64(put(m, k, 1, NB_ANY), 0); /* outside: reclaims and succeeds */
	map_free(m);
}

struct reader_arg {
	struct nb_map *m;
	atomic_int phase; /* 1: reader holds pointer, 2: main done, reader may exit */
	int ok;
	int exit_inside; /* leave the thread without map_epoch_exit */
	int hold_ms;
};

static void *reader(void *argp)
{
	struct reader_arg *a = argp;
	uint32_t k = 1;
	uint64_t *p;

	map_epoch_enter();
	p = map_lookup(a->m, &k);
	a->ok = p && value_is(p, 0x2222);
	atomic_store(&a->phase, 1);
	if (a->exit_inside)
		return NULL; /* the pthread key destructor must release our record */
	if (a->hold_ms) {
		usleep((useconds_t)a->hold_ms * 1000);
	} else {
		while (atomic_load(&a->phase) != 2)
			usleep(100);
	}
	a->ok = a->ok && value_is(p, 0x2222);
	map_epoch_exit();
	return NULL;
}

static void test_other_thread(int exit_inside)
{
	struct nb_map *m = mk_hash(8);
	struct reader_arg a = {.m = m, .exit_inside = exit_inside};
	pthread_t t;
	uint32_t k = 1;

	if (!m)
		return;
	CHECK_EQ_U64(put(m, k, 0x2222, NB_ANY), 0);
	atomic_init(&a.phase, 0);
	pthread_create(&t, NULL, reader, &a);
	while (atomic_load(&a.phase) != 1)
		usleep(100);
	if (exit_inside)
		pthread_join(t, NULL);
	CHECK_EQ_U64(put(m, k, 0x3333, NB_EXIST), 0); /* replace retires the old element */
	map_epoch_reclaim();
	CHECK_EQ_U64(map_pool_pending(m), exit_inside ? 0 : 1);
	if (!exit_inside) {
		atomic_store(&a.phase, 2);
		pthread_join(t, NULL);
		map_epoch_reclaim();
		CHECK_EQ_U64(map_pool_pending(m), 0);
	}
	CHECK(a.ok);
	map_free(m);
}

static void *enter_exit(void *arg)
{
	(void)arg;
	map_epoch_enter();
	map_epoch_exit();
	return NULL;
}

static void test_record_reuse(void)
{
	size_t before, after;
	pthread_t t;

	/* make sure this thread and one worker record exist */
	map_epoch_enter();
	map_epoch_exit();
	pthread_create(&t, NULL, enter_exit, NULL);
	pthread_join(t, NULL);
	before = map_epoch_record_count();
	for (int i = 0; i < 100; i++) {
		pthread_create(&t, NULL, enter_exit, NULL);
		pthread_join(t, NULL);
	}
	after = map_epoch_record_count();
	CHECK_EQ_U64(after, before);
}

/* Outside a section a writer that finds the pool empty waits for the readers. */
static void test_writer_waits(void)
{
	struct nb_map *m = mk_hash(4);
	struct reader_arg a = {.m = m, .hold_ms = 150};
	pthread_t t;
	uint32_t k = 1;
	int fails = 0;

	if (!m)
		return;
	CHECK_EQ_U64(put(m, k, 0x2222, NB_ANY), 0);
	atomic_init(&a.phase, 0);
	pthread_create(&t, NULL, reader, &a);
	while (atomic_load(&a.phase) != 1)
		usleep(100);
	/* far more replacements than the pool holds while the reader pins them */
	for (int i = 0; i < 1500; i++) {
		uint32_t k2 = 2 + (uint32_t)(i % 3);
		fails += put(m, k2, (uint64_t)i, NB_ANY) != 0;
	}
	CHECK_EQ_U64(fails, 0);
	pthread_join(t, NULL);
	CHECK(a.ok);
	map_free(m);
}

/* A forked child inherits the record of a parent thread that is inside a section; it
 * must not pin reclamation in the child. */
static void test_fork(void)
{
	struct nb_map *m = mk_hash(8);
	struct reader_arg a = {.m = m};
	pthread_t t;
	pid_t pid;
	int status = -1;

	if (!m)
		return;
	CHECK_EQ_U64(put(m, 1, 0x2222, NB_ANY), 0);
	atomic_init(&a.phase, 0);
	pthread_create(&t, NULL, reader, &a);
	while (atomic_load(&a.phase) != 1)
		usleep(100);
	pid = fork();
	if (pid == 0) {
		int ok = put(m, 1, 0x4444, NB_EXIST) == 0;
		map_epoch_reclaim();
		ok = ok && map_pool_pending(m) == 0;
		_exit(ok ? 0 : 1);
	}
	CHECK(pid > 0);
	if (pid > 0)
		waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	atomic_store(&a.phase, 2);
	pthread_join(t, NULL);
	CHECK(a.ok);
	map_free(m);
}

/* A counted reader (epoch_seq_reader: the tuner communicator's): a section it opened before
 * an element was retired keeps the element until it closes; one opened after a scan does
 * not keep what was retired before that scan; closing releases; a forked child keeps the
 * reader as it was and, once it has lost membarrier, reclaims nothing while it lives. */
static void test_seq_reader(void)
{
	if (!map_epoch_uses_membarrier()) {
		printf("  (membarrier unavailable: counted readers are not used here)\n");
		return;
	}
	struct nb_map *m = mk_hash(8);
	if (!m)
		return;
	_Atomic uint64_t calls = 5;
	struct epoch_seq_reader r;
	map_epoch_seq_register(&r, &calls);
	CHECK_EQ_U64(atomic_load(&r.exits), 5);
	CHECK_EQ_U64(map_epoch_min_active(), UINT64_MAX); /* idle: no bound */

	CHECK_EQ_U64(put(m, 1, 0x1111, NB_ANY), 0);
	atomic_store(&calls, 6); /* opens section 6 */
	map_epoch_seq_enter();
	CHECK_EQ_U64(put(m, 1, 0x2222, NB_EXIST), 0); /* retires 0x1111 */
	map_epoch_reclaim();
	CHECK(map_pool_pending(m) >= 1); /* section 6 may hold it */
	map_epoch_reclaim(); /* still the same section at the next scan: same bound */
	CHECK(map_pool_pending(m) >= 1);
	map_epoch_seq_exit(&r, 6);
	map_epoch_reclaim();
	CHECK_EQ_U64(map_pool_pending(m), 0);

	/* retire, scan once (idle), then open a section: it started after that scan, so it
	 * cannot hold the element retired before it */
	CHECK_EQ_U64(put(m, 1, 0x3333, NB_EXIST), 0);
	uint64_t min = map_epoch_min_active(); /* the scan that sees the reader idle */
	CHECK_EQ_U64(min, UINT64_MAX);
	atomic_store(&calls, 7);
	map_epoch_seq_enter();
	map_epoch_reclaim();
	CHECK_EQ_U64(map_pool_pending(m), 0);
	/* but what is retired now stays */
	CHECK_EQ_U64(put(m, 1, 0x4444, NB_EXIST), 0);
	map_epoch_reclaim();
	CHECK(map_pool_pending(m) >= 1);

	pid_t pid = fork();
	if (pid == 0) { /* the reader lives on, as it was: section 7 open */
		map_epoch_reclaim();
		int ok = map_pool_pending(m) >= 1;
		map_epoch_seq_exit(&r, 7);
		map_epoch_reclaim();
		ok = ok && map_pool_pending(m) == 0;
		_exit(ok ? 0 : 1);
	}
	int status = -1;
	CHECK(pid > 0);
	if (pid > 0)
		waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	/* a child that cannot register membarrier again (NCCLBPF_EPOCH_FENCE makes the setup
	 * fail) cannot order its scans against the reader: it reclaims nothing */
	map_epoch_seq_exit(&r, 7);
	setenv("NCCLBPF_EPOCH_FENCE", "1", 1);
	pid = fork();
	if (pid == 0) {
		int ok = !map_epoch_uses_membarrier();
		CHECK_EQ_U64(put(m, 1, 0x5555, NB_EXIST), 0);
		map_epoch_reclaim();
		ok = ok && map_pool_pending(m) >= 1; /* the reader is idle, yet nothing goes */
		map_epoch_seq_unregister(&r);
		map_epoch_reclaim();
		ok = ok && map_pool_pending(m) == 0; /* gone with it */
		_exit(ok ? 0 : 1);
	}
	unsetenv("NCCLBPF_EPOCH_FENCE");
	status = -1;
	CHECK(pid > 0);
	if (pid > 0)
		waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(map_epoch_uses_membarrier()); /* the parent is unaffected */

	map_epoch_reclaim();
	CHECK_EQ_U64(map_pool_pending(m), 0);
	map_epoch_seq_unregister(&r);
	map_free(m);
}

/* Property: whatever the interleaving of counted readers' sections (each loads the
 * current object one or more times), replacements and scans, no scan frees an object
 * that an open section loaded, and once all sections are closed one scan frees every
 * retired object. Sequential steps in one thread (the fences' part is the membarrier
 * argument in epoch_fast.h; this checks the bookkeeping of the bounds). */
#define MODEL_READERS 3
#define MODEL_OBJECTS 4096
static void test_seq_reader_model(void)
{
	if (!map_epoch_uses_membarrier())
		return;
	_Atomic uint64_t calls[MODEL_READERS];
	struct epoch_seq_reader r[MODEL_READERS];
	bool open[MODEL_READERS] = { false };
	/* held[i][o]: reader i's open section loaded object o */
	static bool held[MODEL_READERS][MODEL_OBJECTS];
	static uint64_t tag[MODEL_OBJECTS];
	static bool retired[MODEL_OBJECTS], freed[MODEL_OBJECTS];
	for (int i = 0; i < MODEL_READERS; i++) {
		atomic_init(&calls[i], (uint64_t)i * 100);
		map_epoch_seq_register(&r[i], &calls[i]);
	}
	unsigned cur = 0, n_obj = 1, violations = 0, scans = 0;
	uint64_t freed_count = 0;
	uint32_t x = 12345;
	for (int step = 0; step < 20000 && n_obj < MODEL_OBJECTS; step++) {
		x = x * 1103515245u + 12345u;
		unsigned what = (x >> 16) % 8, i = (x >> 8) % MODEL_READERS;
		if (what <= 1) { /* open, then load */
			if (!open[i]) {
				atomic_fetch_add(&calls[i], 1);
				map_epoch_seq_enter();
				open[i] = true;
				held[i][cur] = true;
			}
		} else if (what == 2) { /* another load inside the section */
			if (open[i])
				held[i][cur] = true;
		} else if (what <= 4) { /* close */
			if (open[i]) {
				map_epoch_seq_exit(&r[i], atomic_load(&calls[i]));
				open[i] = false;
				memset(held[i], 0, sizeof(held[i]));
			}
		} else if (what <= 6) { /* replace the current object, retire the old one */
			unsigned old = cur;
			cur = n_obj++;
			tag[old] = map_epoch_retire_tag();
			retired[old] = true;
		} else { /* scan and free */
			uint64_t min = map_epoch_min_active();
			scans++;
			for (unsigned o = 0; o < n_obj; o++) {
				if (!retired[o] || freed[o] || tag[o] >= min)
					continue;
				freed[o] = true;
				freed_count++;
				for (int k = 0; k < MODEL_READERS; k++)
					if (open[k] && held[k][o])
						violations++;
			}
		}
	}
	CHECK_EQ_U64(violations, 0);
	CHECK(scans > 1000 && freed_count > 100); /* progress while sections come and go */
	for (int i = 0; i < MODEL_READERS; i++)
		if (open[i])
			map_epoch_seq_exit(&r[i], atomic_load(&calls[i]));
	uint64_t min = map_epoch_min_active();
	unsigned left = 0;
	for (unsigned o = 0; o < n_obj; o++)
		if (retired[o] && !freed[o] && tag[o] >= min)
			left++;
	CHECK_EQ_U64(left, 0);
	for (int i = 0; i < MODEL_READERS; i++)
		map_epoch_seq_unregister(&r[i]);
}

int main(void)
{
	test_same_thread();
	test_in_section_exhaustion();
	test_other_thread(0);
	test_other_thread(1);
	test_record_reuse();
	test_writer_waits();
	test_fork();
	test_seq_reader();
	test_seq_reader_model();
	TEST_DONE();
}
