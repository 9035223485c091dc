/* Logging of the net and env plugins: through NCCL's logger (subsystem NET / ENV), prefixed
 * "ncclbpf: ". In the standalone TCP build (NCCLBPF_NET_STANDALONE, no runtime) the logger
 * NCCL passed to init is called directly. */
#ifndef NCCLBPF_PLUGIN_NET_LOG_H
#define NCCLBPF_PLUGIN_NET_LOG_H

#include <stdarg.h>

#define NET_WARN 2
#define NET_INFO 3
#define NET_TRACE 5
#define NET_SUBSYS_INIT 0x1
#define NET_SUBSYS_NET 0x10
#define NET_SUBSYS_ENV 0x80

typedef void (*net_logger_fn)(int level, unsigned long flags, const char *file, int line,
			      const char *fmt, ...);
void net_set_logger(net_logger_fn fn);
void net_log(int level, unsigned long flags, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Configuration lookups of the net plugin: through the env plugin when it is active in this
 * process (so NCCLBPF_ENV_FILE can set them too), else getenv. */
const char *net_getenv(const char *name);

#endif
