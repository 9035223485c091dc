/* A reload across ranks that ends mixed (NCCLBPF_RELOAD_AGREE=1, src/plugin/tuner/
 * tuner_reload.c ops_poll): some communicators of this process switched to the new chain,
 * others abandoned it (their ranks did not all stage it). Before the fix ops_poll logged its
 * WARN on every poll (every 20 ms from the control thread, for the rest of the job) and the
 * message promised "both stay until the next reload", although every later reload is
 * refused (-EBUSY) while the activation stays open. Checked:
 *  - 50 polls of the mixed state log the WARN once, and it says what happens;
 *  - each communicator keeps what its ranks agreed (switched: new chain from its switch
 *    seq; abandoned: old chain); a reload is refused with -EBUSY; `ctl status` shows
 *    reload_mixed = the version;
 *  - once the abandoned communicator is destroyed the activation ends as activated, and a
 *    next reload is staged; the same for the other side (switched one destroyed: abandoned).
 *
 * The mixed state needs two communicators whose agreed views differ; no agreement group
 * forms in one process, so the test sets the slots' states directly: it compiles
 * tuner_reload.c itself (its statics are then visible here; the library's copy of that
 * object is not linked, every symbol of it being defined by this file). */
#define _GNU_SOURCE
#include "plugin/tuner/tuner_reload.c"

#include <stdarg.h>

#include "runtime/control_proto.h"
#include "test_util.h"

static atomic_int warn_mixed, info_activated, info_abandoned;
static char mixed_text[1024];

static void logger(int level, unsigned long flags, const char *file, int line,
		   const char *fmt, ...)
{
	(void)flags;
	(void)file;
	(void)line;
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (level == NB_LOG_WARN && strstr(buf, "communicator(s) switched")) {
		if (atomic_fetch_add(&warn_mixed, 1) == 0)
			snprintf(mixed_text, sizeof(mixed_text), "%s", buf);
	}
	if (strstr(buf, "across ranks") && strstr(buf, "activated"))
		atomic_fetch_add(&info_activated, 1);
	if (strstr(buf, "across ranks") && strstr(buf, "abandoned (old policy kept)"))
		atomic_fetch_add(&info_abandoned, 1);
}

static struct reload_slot *slot_of(uint64_t comm_id)
{
	for (int i = 0; i < RELOAD_SLOTS; i++)
		if (atomic_load(&slots[i].comm_id) == comm_id)
			return &slots[i];
	return NULL;
}

/* The number after `name` in the status text ("name: N"); UINT64_MAX when absent. */
static uint64_t counter(const char *text, const char *name)
{
	const char *p = text ? strstr(text, name) : NULL;
	if (!p)
		return UINT64_MAX;
	p += strlen(name);
	p += strspn(p, "\": =\t");
	return strtoull(p, NULL, 10);
}

static uint64_t status_counter(const char *sock, const char *name)
{
	char *reply = NULL, err[256];
	int st = -1;
	int rc = runtime_control_call(sock, NBC_OP_STATUS, 0, 0, NULL, 30000, &st, &reply, NULL,
				      err, sizeof(err));
	CHECK(rc == 0 && st == 0);
	uint64_t v = counter(reply, name);
	free(reply);
	return v;
}

/* Stages spec on both communicators and makes comm `sw` switch at seq 100, comm `ab`
 * abandon: the mixed outcome. Returns the version. */
static uint64_t stage_mixed(const char *spec, uint64_t sw, uint64_t ab)
{
	char msg[4096];
	int rc = runtime_reload(spec, NB_HOOK_TUNER, 0, msg, sizeof(msg));
	printf("reload: %d: %s", rc, msg);
	CHECK(rc > 0);
	CHECK_STR_CONTAINS(msg, "staged (activating across ranks");
	uint64_t v = runtime_activation_pending();
	CHECK(v != 0);
	struct reload_slot *s = slot_of(sw), *a = slot_of(ab);
	CHECK(s && a);
	if (!s || !a)
		return v;
	CHECK_EQ_U64(atomic_load(&s->state), RS_PENDING);
	CHECK_EQ_U64(atomic_load(&a->state), RS_PENDING);
	/* what tuner_reload_gate stores when the agreed view says so */
	atomic_store(&s->switch_at, 100);
	atomic_store(&s->state, RS_SWITCHED);
	atomic_store(&a->state, RS_ABANDONED);
	return v;
}

int main(void)
{
	char dir[64];
	snprintf(dir, sizeof(dir), "/tmp/nbmixed-%d", (int)getpid());
	setenv("NCCLBPF_CONTROL_DIR", dir, 1);
	setenv("NCCLBPF_POLICY", "tests/progs/reload_a.bpf.o", 1);
	setenv("NCCLBPF_RELOAD_AGREE", "1", 1);
	/* agreement on (never reached: no collective runs), so reloads activate across ranks */
	setenv("NCCLBPF_AGREE", "127.0.0.1:9", 1);
	runtime_set_logger(logger);

	void *cs = NULL, *ca = NULL, *cx = NULL;
	tuner_comm_open(6, 0xa001, 2, 1, NULL, &cs);
	tuner_comm_open(6, 0xa002, 2, 1, NULL, &ca);
	CHECK(cs && ca);
	CHECK(enabled);
	char sock[128];
	snprintf(sock, sizeof(sock), "%s", runtime_control_path());
	CHECK(sock[0] != '\0');

	char cwd[4096], spec_a[4200], spec_b[4200];
	CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
	snprintf(spec_a, sizeof(spec_a), "%s/tests/progs/reload_a.bpf.o", cwd);
	snprintf(spec_b, sizeof(spec_b), "%s/tests/progs/reload_b.bpf.o", cwd);

	/* 1. mixed: 0xa001 switched, 0xa002 abandoned */
	uint64_t v1 = stage_mixed(spec_b, 0xa001, 0xa002);
	const struct nb_hook_chain *c = runtime_hook_chain(NB_HOOK_TUNER);
	CHECK(c && c->version == v1 && c->gated && c->prev);
	for (int i = 0; i < 50; i++)
		runtime_activation_poll(); /* the control thread polls too: as often as it likes */
	printf("mixed WARNs after 50 polls: %d: %s\n", atomic_load(&warn_mixed), mixed_text);
	CHECK_EQ_U64(atomic_load(&warn_mixed), 1);
	CHECK(strstr(mixed_text, "until the next reload") == NULL); /* the old, false promise */
	CHECK_STR_CONTAINS(mixed_text, "refused");
	CHECK_EQ_U64(runtime_activation_pending(), v1);
	/* each communicator keeps what its ranks agreed */
	if (c && c->prev) {
		CHECK(tuner_reload_gate(cs, c, 99) == c->prev);
		CHECK(tuner_reload_gate(cs, c, 100) == c);
		CHECK(tuner_reload_gate(cs, c, 5000) == c);
		CHECK(tuner_reload_gate(ca, c, 100) == c->prev);
		CHECK(tuner_reload_gate(ca, c, 5000) == c->prev);
	}
	char msg[4096];
	int rc = runtime_reload(spec_a, NB_HOOK_TUNER, 0, msg, sizeof(msg));
	printf("reload while mixed: %d: %s", rc, msg);
	CHECK_EQ_U64((uint64_t)(int64_t)rc, (uint64_t)(int64_t)-EBUSY);
	CHECK_STR_CONTAINS(msg, "ended mixed");
	CHECK_EQ_U64(status_counter(sock, "reload_mixed"), v1);

	/* 2. the abandoned side is destroyed: every remaining communicator switched */
	tuner_comm_close(ca);
	runtime_activation_poll();
	CHECK_EQ_U64(runtime_activation_pending(), 0);
	CHECK_EQ_U64(atomic_load(&info_activated), 1);
	CHECK_EQ_U64(status_counter(sock, "reload_mixed"), 0);
	c = runtime_hook_chain(NB_HOOK_TUNER);
	CHECK(c && c->version == v1 && !c->gated);

	/* 3. a next reload is staged; mixed again (new communicator 0xa003 abandons), a new
	 * version: one WARN more; the switched side is destroyed: abandoned, old chain back */
	tuner_comm_open(6, 0xa003, 2, 1, NULL, &cx);
	CHECK(cx != NULL);
	uint64_t v2 = stage_mixed(spec_a, 0xa001, 0xa003);
	CHECK(v2 > v1);
	for (int i = 0; i < 50; i++)
		runtime_activation_poll();
	CHECK_EQ_U64(atomic_load(&warn_mixed), 2);
	CHECK_EQ_U64(runtime_activation_pending(), v2);
	tuner_comm_close(cs);
	runtime_activation_poll();
	CHECK_EQ_U64(runtime_activation_pending(), 0);
	CHECK_EQ_U64(atomic_load(&info_abandoned), 1);
	c = runtime_hook_chain(NB_HOOK_TUNER);
	CHECK(c && c->version == v1 && !c->gated);
	rc = runtime_reload(spec_a, NB_HOOK_TUNER, 0, msg, sizeof(msg));
	printf("reload after: %d: %s", rc, msg);
	CHECK(rc > 0);

	tuner_comm_close(cx);
	rmdir(dir);
	TEST_DONE();
}
