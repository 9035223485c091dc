#include "rt_test_common.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_buf[1 << 16];
static size_t log_len;
static int warn_count;

static void capture(int level, unsigned long flags, const char *file, int line, const char *fmt,
		    ...)
{
	va_list ap;
	(void)flags, (void)file, (void)line;
	pthread_mutex_lock(&log_lock);
	va_start(ap, fmt);
	if (log_len < sizeof(log_buf) - 1) {
		int n = vsnprintf(log_buf + log_len, sizeof(log_buf) - log_len, fmt, ap);
		if (n > 0)
			log_len += (size_t)n;
		if (log_len >= sizeof(log_buf) - 1)
			log_len = sizeof(log_buf) - 2;
		log_buf[log_len++] = '\n';
		log_buf[log_len] = '\0';
	}
	va_end(ap);
	if (level == NB_LOG_WARN)
		warn_count++;
	pthread_mutex_unlock(&log_lock);
	if (getenv("RT_TEST_VERBOSE")) {
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
}

void rt_capture_logs(void)
{
	runtime_set_logger(capture);
}

const char *rt_logs(void)
{
	return log_buf;
}

void rt_clear_logs(void)
{
	pthread_mutex_lock(&log_lock);
	log_len = 0;
	log_buf[0] = '\0';
	warn_count = 0;
	pthread_mutex_unlock(&log_lock);
}

int rt_warn_count(void)
{
	return warn_count;
}

struct ncclbpf_object *rt_open(const char *path)
{
	char err[1024];
	struct ncclbpf_object *obj = NULL;
	if (ncclbpf_object_open_file(path, &obj, err, sizeof(err)) < 0) {
		fprintf(stderr, "cannot open %s: %s\n", path, err);
		exit(2);
	}
	return obj;
}

int rt_prepare(struct ncclbpf_program *p, enum ncclbpf_hook hook, enum ncclbpf_exec_mode em,
	       enum ncclbpf_verify_mode vm, char *err, size_t errlen)
{
	struct ncclbpf_prepare_opts o = {.sz = sizeof(o), .exec_mode = em, .verify_mode = vm};
	int rc = ncclbpf_program_prepare(p, hook, &o, err, errlen);
	if (rc < 0 && getenv("RT_TEST_VERBOSE"))
		fprintf(stderr, "prepare %s: %d: %s\n", ncclbpf_program_name(p), rc, err);
	return rc;
}

void rt_tuner_ctx(struct ncclbpf_tuner_ctx *c, uint64_t comm, uint64_t bytes, uint32_t coll)
{
	memset(c, 0, sizeof(*c));
	c->comm_id = comm;
	c->n_bytes = bytes;
	c->coll_type = coll;
	c->n_ranks = 8;
	c->n_nodes = 1;
	c->algo = NCCLBPF_ALGO_KEEP;
	c->proto = NCCLBPF_PROTO_KEEP;
	c->n_channels = NCCLBPF_CHANNELS_KEEP;
}
