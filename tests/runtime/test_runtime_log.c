/* runtime_log through NCCL's logger: NCCL drops every message whose subsystem is outside
 * NCCL_DEBUG_SUBSYS (default INIT,BOOTSTRAP,ENV) - WARN included. A WARN must carry INIT so
 * NCCL_DEBUG=WARN shows it whatever subsystem it is about (GPU run g16: the agreement's
 * TUNING WARN naming why every rank fell back was invisible). INFO keeps its subsystem:
 * NCCL_DEBUG_SUBSYS selects it. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "runtime/runtime.h"
#include "test_util.h"

static int got_level;
static unsigned long got_flags;
static char got_text[256];

static void capture(int level, unsigned long flags, const char *file, int line, const char *fmt,
		    ...)
{
	(void)file;
	(void)line;
	got_level = level;
	got_flags = flags;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(got_text, sizeof(got_text), fmt, ap);
	va_end(ap);
}

int main(void)
{
	runtime_set_logger(capture);
	runtime_log(NB_LOG_WARN, NB_LOG_TUNING, "agree: %s", "fell back");
	CHECK(got_level == NB_LOG_WARN);
	CHECK((got_flags & NB_LOG_INIT) != 0);   /* shown with NCCL's default subsystems */
	CHECK((got_flags & NB_LOG_TUNING) != 0); /* and still under its own */
	CHECK(strcmp(got_text, "ncclbpf: agree: fell back") == 0);
	runtime_log(NB_LOG_WARN, NB_LOG_NET | NB_LOG_PROFILE, "x");
	CHECK((got_flags & (NB_LOG_INIT | NB_LOG_NET | NB_LOG_PROFILE)) ==
	      (NB_LOG_INIT | NB_LOG_NET | NB_LOG_PROFILE));
	runtime_log(NB_LOG_INFO, NB_LOG_TUNING, "y");
	CHECK(got_level == NB_LOG_INFO && got_flags == NB_LOG_TUNING);
	TEST_DONE();
}
