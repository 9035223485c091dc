/* `ncclbpf exec [MEMHEX] [--interpret|--jit] [--elf] [--verify=on|off] [--debug]`: the
 * bpf_conformance plugin protocol. stdin holds the program as hex byte tokens (raw 8-byte
 * instructions, or an ELF with --elf: program `main`, else the first); the optional MEMHEX
 * argument holds the memory. r1 = a writable copy of the memory (NULL without), r2 = its
 * length, helper 5 returns r1. Prints r0 as hex and exits 0; any error goes to stderr with
 * exit 1.
 *
 * Modes: the default and --interpret run the checked interpreter (conformance programs are
 * not verified by default, so every access is bounds-checked); --jit runs JIT code, which
 * is only ever made from verified code, so --jit verifies (--verify=off with it is
 * refused). --verify=on runs the verifier first, describing r1 as exactly len bytes. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"
#include "tools/cli.h"

static void debug_logger(int level, unsigned long flags, const char *file, int line,
			 const char *fmt, ...)
{
	va_list ap;
	(void)level, (void)flags, (void)file, (void)line;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static char *read_all(FILE *f, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		if (n + 1 >= cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
		size_t r = fread(buf + n, 1, cap - n - 1, f);
		n += r;
		if (r == 0)
			break;
	}
	if (buf)
		buf[n] = '\0';
	*len = n;
	return buf;
}

/* Hex tokens -> bytes. Returns the count or -1 with a message printed. */
static long parse_hex(const char *text, uint8_t **out, const char *what)
{
	size_t cap = strlen(text) / 2 + 1;
	*out = malloc(cap);
	if (!*out) {
		fprintf(stderr, "ncclbpf exec: out of memory\n");
		return -1;
	}
	long n = isa_parse_hex_bytes(text, *out, cap);
	if (n < 0)
		fprintf(stderr, "ncclbpf exec: %s: not whitespace-separated hex bytes (%s)\n", what,
			strerror((int)-n));
	return n;
}

static int cmd_exec(int argc, char **argv)
{
	const char *memhex = NULL;
	bool elf = false, jit = false, verify = false, verify_given = false;
	char err[2048] = "";
	uint8_t *code = NULL, *mem = NULL;
	long code_len = 0, mem_len = 0;
	struct ncclbpf_object *obj = NULL;
	int status = 1;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--jit"))
			jit = true;
		else if (!strcmp(a, "--interpret"))
			jit = false;
		else if (!strcmp(a, "--elf"))
			elf = true;
		else if (!strcmp(a, "--verify=on"))
			verify = verify_given = true;
		else if (!strcmp(a, "--verify=off"))
			verify = false, verify_given = true;
		else if (!strcmp(a, "--debug"))
			runtime_set_logger(debug_logger);
		else if (a[0] == '-' && a[1] == '-')
			return cli_usage_error("exec", "unknown option '%s'", a);
		else if (!memhex)
			memhex = a;
		else
			return cli_usage_error("exec", "unexpected argument '%s' (MEMHEX given twice?)",
					       a);
	}

	size_t text_len;
	char *text = read_all(stdin, &text_len);
	if (!text) {
		fprintf(stderr, "ncclbpf exec: cannot read stdin\n");
		return 1;
	}
	code_len = parse_hex(text, &code, "program on stdin");
	free(text);
	if (code_len < 0)
		goto out;
	if (code_len == 0) {
		fprintf(stderr, "ncclbpf exec: no program on stdin\n");
		goto out;
	}
	if (memhex && (mem_len = parse_hex(memhex, &mem, "memory argument")) < 0)
		goto out;
	if (mem_len > UINT32_MAX) {
		fprintf(stderr, "ncclbpf exec: memory too large\n");
		goto out;
	}

	int rc = elf ? ncclbpf_object_open_mem(code, (size_t)code_len, "<stdin>", &obj, err,
					       sizeof(err))
		     : runtime_object_from_insns(code, (size_t)code_len, "<stdin>", &obj, err,
						 sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "ncclbpf exec: %s\n", err);
		goto out;
	}
	struct ncclbpf_program *prog = ncclbpf_object_find_program(obj, "main");
	if (!prog)
		prog = ncclbpf_object_program(obj, 0);
	if (!prog) {
		fprintf(stderr, "ncclbpf exec: the object has no program\n");
		goto out;
	}
	if (jit && !verify_given) /* only verified code is JIT-compiled */
		verify = true;
	struct ncclbpf_prepare_opts opts = {
		.sz = sizeof(opts),
		.exec_mode = jit ? NCCLBPF_EXEC_JIT : NCCLBPF_EXEC_CHECKED,
		.verify_mode = verify ? NCCLBPF_VERIFY_STRICT : NCCLBPF_VERIFY_OFF,
	};
	rc = runtime_program_prepare_mem(prog, NCCLBPF_HOOK_CONFORMANCE, &opts, (uint32_t)mem_len,
					 err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "ncclbpf exec: %s\n", err[0] ? err : strerror(-rc));
		goto out;
	}
	uint64_t r0 = 0;
	rc = ncclbpf_program_run(prog, mem_len ? mem : NULL, (size_t)mem_len, &r0, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "ncclbpf exec: %s\n", err);
		goto out;
	}
	printf("%llx\n", (unsigned long long)r0);
	status = 0;
out:
	ncclbpf_object_close(obj);
	free(code);
	free(mem);
	return status;
}

NCCLBPF_CLI_COMMAND(
	exec, .name = "exec", .run = cmd_exec,
	.synopsis = "[MEMHEX] [--interpret|--jit] [--elf] [--verify=on|off] [--debug]",
	.summary = "run a program read as hex from stdin (bpf_conformance plugin)",
	.help = "Runs one eBPF program read from stdin as whitespace-separated hex bytes: the\n"
		"bpf_conformance plugin protocol (https://github.com/Alan-Jowett/bpf_conformance).\n"
		"r1 points to a writable copy of MEMHEX (NULL without it), r2 is its length,\n"
		"helper 5 returns r1. Prints r0 in hex.\n"
		"\n"
		"options:\n"
		"  MEMHEX         the memory, as hex bytes (\"01 02 03 04\")\n"
		"  --interpret    run in the checked interpreter (default: every access is\n"
		"                 bounds-checked, so the program need not be verified)\n"
		"  --jit          run JIT-compiled code; only verified code is compiled, so\n"
		"                 --jit verifies (as --verify=on)\n"
		"  --elf          stdin holds an ELF object: program `main`, else the first\n"
		"  --verify=on    verify first (r1 described as exactly MEMHEX's length); the\n"
		"                 default with --jit\n"
		"  --verify=off   do not verify: the default with --interpret, refused with\n"
		"                 --jit\n"
		"  --debug        print the runtime's log lines on stderr\n"
		"\n"
		"exit status: 0 r0 printed; 1 the program was refused or faulted (message on\n"
		"stderr, nothing on stdout); 2 usage error.\n"
		"\n"
		"example:\n"
		"  echo 'b7 00 00 00 2a 00 00 00 95 00 00 00 00 00 00 00' | ncclbpf exec\n");
