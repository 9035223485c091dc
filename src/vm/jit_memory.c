/* Code memory for the JIT, W^X: a fresh anonymous mapping is written while RW, then
 * mprotect'ed to RX before anything runs. It is never writable and executable at once.
 * Systems that forbid executable anonymous memory (SELinux execmem, PaX MPROTECT) make the
 * mprotect fail; that is reported as -EPERM so the runtime falls back to the interpreter.
 */
#define _GNU_SOURCE
#include "vm/jit_x86_64.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static size_t round_to_pages(size_t size)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t p = pg > 0 ? (size_t)pg : 4096;
	return (size + p - 1) / p * p;
}

void *jit_mem_alloc(size_t size, char *err, size_t errlen)
{
	void *mem = mmap(NULL, round_to_pages(size), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		if (err && errlen)
			snprintf(err, errlen, "jit: cannot map %zu bytes of code memory: %s", size,
				 strerror(errno));
		return NULL;
	}
	return mem;
}

int jit_mem_seal(void *mem, size_t size, char *err, size_t errlen)
{
	if (mprotect(mem, round_to_pages(size), PROT_READ | PROT_EXEC) != 0) {
		int e = errno;
		if (err && errlen)
			snprintf(err, errlen,
				 "jit: the system refuses executable memory (mprotect RX: %s); "
				 "use the interpreter",
				 strerror(e));
		return (e == EACCES || e == EPERM) ? -EPERM : -e;
	}
	return 0;
}

void jit_mem_free(void *mem, size_t size)
{
	if (mem)
		munmap(mem, round_to_pages(size));
}
