/* Logging: every line goes through the logger NCCL handed to a plugin init (so
 * NCCL_DEBUG=INFO shows it; a WARN also under INIT, so NCCL_DEBUG=WARN shows every WARN
 * with NCCL's default NCCL_DEBUG_SUBSYS), prefixed "ncclbpf: ". Without a logger, only
 * WARN lines are printed, to stderr. A WARN about configuration (INIT subsystem: a policy skipped, a bad
 * setting) must be impossible to miss, so when NCCL would hide it (NCCL_DEBUG unset or
 * VERSION) it also goes to stderr: exactly one visible line either way.
 * Also the rate limiter used for per-call messages (faults, printk). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>

#include "runtime/runtime.h"

static _Atomic(nb_logger_fn) runtime_logger;

void runtime_set_logger(nb_logger_fn fn)
{
	nb_logger_fn expected = NULL;
	if (!fn)
		return;
	/* First non-NULL logger wins: every plugin init hands the same NCCL logger. */
	atomic_compare_exchange_strong(&runtime_logger, &expected, fn);
}

/* NCCL prints WARN lines at NCCL_DEBUG=WARN, INFO, ABORT and TRACE (case-insensitive). */
static bool nccl_shows_warnings(void)
{
	const char *d = getenv("NCCL_DEBUG");
	return d && (!strcasecmp(d, "WARN") || !strcasecmp(d, "INFO") || !strcasecmp(d, "ABORT") ||
		     !strcasecmp(d, "TRACE"));
}

void runtime_log(int level, unsigned long flags, const char *fmt, ...)
{
	char line[2048];
	va_list ap;
	nb_logger_fn fn = atomic_load_explicit(&runtime_logger, memory_order_acquire);

	if (!fn && level > NB_LOG_WARN)
		return;
	int n = snprintf(line, sizeof(line), "ncclbpf: ");
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	/* NCCL drops a message whose subsystem is outside NCCL_DEBUG_SUBSYS (default INIT,
	 * BOOTSTRAP,ENV) even at WARN: a WARN also carries INIT, or NCCL_DEBUG=WARN hides e.g.
	 * the agreement's TUNING WARN that says why every rank fell back (GPU run g16) */
	if (fn)
		fn(level, level == NB_LOG_WARN ? flags | NB_LOG_INIT : flags, __FILE__, __LINE__,
		   "%s", line);
	if (!fn || (level == NB_LOG_WARN && (flags & NB_LOG_INIT) && !nccl_shows_warnings()))
		fprintf(stderr, "%s\n", line);
}

bool runtime_ratelimit_ok(struct runtime_ratelimit *rl, uint32_t burst)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	uint64_t now = (uint64_t)ts.tv_sec;
	uint64_t win = atomic_load_explicit(&rl->window, memory_order_relaxed);
	if (win != now &&
	    atomic_compare_exchange_strong_explicit(&rl->window, &win, now, memory_order_relaxed,
						    memory_order_relaxed))
		atomic_store_explicit(&rl->count, 0, memory_order_relaxed);
	return atomic_fetch_add_explicit(&rl->count, 1, memory_order_relaxed) < burst;
}
