/* `ncclbpf disasm OBJ [PROG]`: llvm-objdump-style listing of each program (entry function
 * and the subprograms the loader appended), with source lines from BTF line info.
 * Inspection only (no map is created): any object the loader parses can be listed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/object.h"
#include "runtime/runtime.h"
#include "tools/cli.h"

static int print_program(const struct nb_object *o, const struct nb_program *p)
{
	int n = runtime_disasm_loader_program(p, o->maps, o->map_cnt, NULL, 0);
	if (n < 0)
		return n;
	char *buf = malloc((size_t)n + 1);
	if (!buf)
		return -1;
	runtime_disasm_loader_program(p, o->maps, o->map_cnt, buf, (size_t)n + 1);
	printf("Disassembly of program '%s' (section '%s', %zu insns):\n", p->name, p->section,
	       p->insn_cnt);
	fputs(buf, stdout);
	free(buf);
	return 0;
}

static int cmd_disasm(int argc, char **argv)
{
	const char *path = NULL, *prog = NULL;
	for (int i = 1; i < argc; i++) {
		if (argv[i][0] == '-' && argv[i][1])
			return cli_usage_error("disasm", "unknown option '%s'", argv[i]);
		if (!path)
			path = argv[i];
		else if (!prog)
			prog = argv[i];
		else
			return cli_usage_error("disasm", "unexpected argument '%s'", argv[i]);
	}
	if (!path)
		return cli_usage_error("disasm", "no object given");
	char err[1024];
	struct nb_object *o = NULL;
	if (loader_open_file_flags(path, NB_LOADER_INSPECT, &o, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: error: %s\n", path, err);
		return CLI_EXIT_REFUSED;
	}
	int rc = CLI_EXIT_OK, shown = 0;
	for (size_t i = 0; i < o->prog_cnt && rc == CLI_EXIT_OK; i++) {
		if (prog && strcmp(o->progs[i].name, prog))
			continue;
		if (shown++)
			printf("\n");
		if (print_program(o, &o->progs[i]) < 0) {
			fprintf(stderr, "%s: error: out of memory listing '%s'\n", path,
				o->progs[i].name);
			rc = CLI_EXIT_REFUSED;
		}
	}
	if (prog && !shown) {
		fprintf(stderr, "%s: error: no program '%s' (programs:", path, prog);
		for (size_t i = 0; i < o->prog_cnt; i++)
			fprintf(stderr, " %s", o->progs[i].name);
		fprintf(stderr, "%s)\n", o->prog_cnt ? "" : " none");
		rc = CLI_EXIT_REFUSED;
	}
	loader_close(o);
	return rc;
}

NCCLBPF_CLI_COMMAND(disasm, .name = "disasm", .run = cmd_disasm, .synopsis = "OBJ [PROG]",
		    .summary = "disassembly with source lines (llvm-objdump syntax)",
		    .help = "Disassembles every program of OBJ (or only PROG) in llvm-objdump "
			    "syntax, with the\nsubprograms each calls appended, function labels "
			    "and \"; file:line source\" lines\nfrom BTF line info. Map references "
			    "show the map's name. Creates nothing, so any\nobject the loader "
			    "parses can be listed, including ones built for the kernel.\n"
			    "\n"
			    "arguments:\n"
			    "  PROG   a program name (as `ncclbpf info` lists them)\n");
