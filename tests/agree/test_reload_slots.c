/* Reload slots exhausted (NCCLBPF_RELOAD_AGREE=1, src/plugin/tuner/tuner_reload.c): a
 * process with more live communicators than reload slots (256). A multi-rank communicator
 * without a slot cannot switch at an agreed collective - before the fix its gate kept the
 * old chain until the local commit (a different collective on every rank) and nothing was
 * logged. Checked:
 *  - the 257th communicator logs one WARN naming the exhaustion, the 258th none more;
 *  - `ctl status` counts them (reload_slots_exhausted 2, reload_unmanaged_comms 2);
 *  - while they are live a tuner reload is not staged and refused without --force, with a
 *    WARN saying why;
 *  - once they closed, the same reload is staged across ranks again. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin/tuner/tuner.h"
#include "runtime/control.h"
#include "runtime/control_proto.h"
#include "runtime/runtime.h"
#include "test_util.h"

#define SLOTS 256
#define COMMS (SLOTS + 2)

static atomic_int warn_exhausted, warn_not_staged;

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
	if (level == NB_LOG_WARN && strstr(buf, "reload slots are in use"))
		atomic_fetch_add(&warn_exhausted, 1);
	if (level == NB_LOG_WARN && strstr(buf, "not staged across ranks") &&
	    strstr(buf, "have no reload slot"))
		atomic_fetch_add(&warn_not_staged, 1);
}

static void *ctx[COMMS];

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

static char *status_text(const char *sock)
{
	char *reply = NULL, err[256];
	int st = -1;
	int rc = runtime_control_call(sock, NBC_OP_STATUS, 0, 0, NULL, 30000, &st, &reply, NULL,
				      err, sizeof(err));
	CHECK(rc == 0 && st == 0);
	return reply;
}

int main(void)
{
	char dir[64];
	snprintf(dir, sizeof(dir), "/tmp/nbslots-%d", (int)getpid());
	setenv("NCCLBPF_CONTROL_DIR", dir, 1);
	setenv("NCCLBPF_POLICY", "tests/progs/reload_a.bpf.o", 1);
	setenv("NCCLBPF_RELOAD_AGREE", "1", 1);
	/* agreement on (never reached: no collective runs), so reloads activate across ranks */
	setenv("NCCLBPF_AGREE", "127.0.0.1:9", 1);
	runtime_set_logger(logger);

	for (int c = 0; c < SLOTS; c++) {
		tuner_comm_open(6, 0x9000 + (uint64_t)c, 2, 1, NULL, &ctx[c]);
		CHECK(ctx[c] != NULL);
	}
	CHECK_EQ_U64(atomic_load(&warn_exhausted), 0);
	tuner_comm_open(6, 0x9000 + SLOTS, 2, 1, NULL, &ctx[SLOTS]);
	CHECK_EQ_U64(atomic_load(&warn_exhausted), 1);
	tuner_comm_open(6, 0x9000 + SLOTS + 1, 4, 1, NULL, &ctx[SLOTS + 1]);
	CHECK_EQ_U64(atomic_load(&warn_exhausted), 1); /* once */

	char sock[128];
	snprintf(sock, sizeof(sock), "%s", runtime_control_path());
	CHECK(sock[0] != '\0');
	char *st = status_text(sock);
	CHECK_EQ_U64(counter(st, "reload_slots_exhausted"), 2);
	CHECK_EQ_U64(counter(st, "reload_unmanaged_comms"), 2);
	free(st);

	char cwd[4096], spec_b[4200];
	CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
	snprintf(spec_b, sizeof(spec_b), "%s/tests/progs/reload_b.bpf.o", cwd);
	char msg[4096];
	int rc = runtime_reload(spec_b, NB_HOOK_TUNER, 0, msg, sizeof(msg));
	printf("reload with unmanaged communicators: %d: %s", rc, msg);
	CHECK_EQ_U64((uint64_t)(int64_t)rc, (uint64_t)(int64_t)-EPERM);
	CHECK_STR_CONTAINS(msg, "refused");
	CHECK_EQ_U64(atomic_load(&warn_not_staged), 1);
	CHECK_EQ_U64(runtime_activation_pending(), 0);

	/* the communicators without a slot leave: reloads are staged across ranks again */
	tuner_comm_close(ctx[SLOTS]);
	tuner_comm_close(ctx[SLOTS + 1]);
	rc = runtime_reload(spec_b, NB_HOOK_TUNER, 0, msg, sizeof(msg));
	printf("reload once they closed: %d: %s", rc, msg);
	CHECK(rc > 0);
	CHECK_STR_CONTAINS(msg, "staged (activating across ranks");
	CHECK(runtime_activation_pending() != 0);
	CHECK_EQ_U64(atomic_load(&warn_not_staged), 1);
	st = status_text(sock);
	CHECK_EQ_U64(counter(st, "reload_slots_exhausted"), 2); /* ever */
	CHECK_EQ_U64(counter(st, "reload_unmanaged_comms"), 0); /* live */
	free(st);

	for (int c = 0; c < SLOTS; c++)
		tuner_comm_close(ctx[c]);
	rmdir(dir); /* empty once the control socket is gone (at exit: best effort) */
	TEST_DONE();
}
