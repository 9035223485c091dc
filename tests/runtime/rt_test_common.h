/* Shared by the runtime tests: a logger that captures every runtime_log line, and
 * helpers to open/prepare the test objects (built into build/tests/progs). */
#ifndef RT_TEST_COMMON_H
#define RT_TEST_COMMON_H

#include <stddef.h>

#include "ncclbpf/policy.h"
#include "runtime/runtime.h"

#define RT_PROG(name) "tests/progs/" name ".bpf.o"

/* Installs the capturing logger (first call wins, as runtime_set_logger). */
void rt_capture_logs(void);
/* Everything logged since the last rt_clear_logs(). */
const char *rt_logs(void);
void rt_clear_logs(void);
/* Number of captured lines at WARN level since the last clear. */
int rt_warn_count(void);

/* Opens an object; aborts the test binary (exit 2) when it cannot: nothing else can run. */
struct ncclbpf_object *rt_open(const char *path);
/* Prepares with the given modes; returns the rc, err printed on failure. */
int rt_prepare(struct ncclbpf_program *p, enum ncclbpf_hook hook, enum ncclbpf_exec_mode em,
	       enum ncclbpf_verify_mode vm, char *err, size_t errlen);
void rt_tuner_ctx(struct ncclbpf_tuner_ctx *c, uint64_t comm, uint64_t bytes, uint32_t coll);

#endif
