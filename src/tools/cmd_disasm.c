/* `ncclbpf disasm OBJ [PROG]`: llvm-objdump-style listing of each program (entry function
 * and the subprograms the loader appended), with source lines from BTF line info. */
#include <stdio.h>
#include <stdlib.h>

#include "ncclbpf/ncclbpf.h"

int cmd_disasm(int argc, char **argv);

static int print_program(struct ncclbpf_program *p, bool header)
{
	int n = ncclbpf_program_disasm(p, NULL, 0);
	if (n < 0)
		return n;
	char *buf = malloc((size_t)n + 1);
	if (!buf)
		return -1;
	ncclbpf_program_disasm(p, buf, (size_t)n + 1);
	if (header)
		printf("Disassembly of program '%s' (section '%s', %zu insns):\n",
		       ncclbpf_program_name(p), ncclbpf_program_section(p),
		       ncclbpf_program_insn_count(p));
	fputs(buf, stdout);
	free(buf);
	return 0;
}

int cmd_disasm(int argc, char **argv)
{
	char err[1024];
	struct ncclbpf_object *obj;
	int rc = 0;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: ncclbpf disasm OBJ [PROG]\n");
		return 1;
	}
	if (ncclbpf_object_open_file(argv[1], &obj, err, sizeof(err)) < 0) {
		fprintf(stderr, "ncclbpf: %s: %s\n", argv[1], err);
		return 1;
	}
	if (argc == 3) {
		struct ncclbpf_program *p = ncclbpf_object_find_program(obj, argv[2]);
		if (!p) {
			fprintf(stderr, "ncclbpf: %s: no program '%s'\n", argv[1], argv[2]);
			rc = 1;
		} else if (print_program(p, true) < 0) {
			rc = 1;
		}
	} else {
		size_t n = ncclbpf_object_program_count(obj);
		for (size_t i = 0; i < n && !rc; i++) {
			if (i)
				printf("\n");
			rc = print_program(ncclbpf_object_program(obj, i), true) < 0;
		}
	}
	ncclbpf_object_close(obj);
	return rc;
}
