#include <stdatomic.h>
#include <stdio.h>

#include "plugin/net/net_log.h"

#ifdef NCCLBPF_NET_STANDALONE
#include <stdlib.h>

const char *net_getenv(const char *name)
{
	return getenv(name);
}

static _Atomic(net_logger_fn) logger;

void net_set_logger(net_logger_fn fn)
{
	net_logger_fn expected = NULL;
	if (fn)
		atomic_compare_exchange_strong(&logger, &expected, fn);
}

void net_log(int level, unsigned long flags, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	net_logger_fn fn = atomic_load(&logger);
	if (!fn && level > NET_WARN)
		return;
	int n = snprintf(line, sizeof(line), "ncclbpf-tcp: ");
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	if (fn)
		fn(level, flags, __FILE__, __LINE__, "%s", line);
	else
		fprintf(stderr, "%s\n", line);
}
#else
#include "plugin/env/env_plugin.h"
#include "runtime/runtime.h"

const char *net_getenv(const char *name)
{
	return env_plugin_lookup(name);
}

void net_set_logger(net_logger_fn fn)
{
	runtime_set_logger((nb_logger_fn)fn);
}

void net_log(int level, unsigned long flags, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	runtime_log(level, flags, "%s", line);
}
#endif
