/* The ncclbpf CLI's shared conventions: command registration, exit codes, option parsing,
 * JSON output, diagnostics. See the top of main.c for how to add a command. */
#ifndef NCCLBPF_TOOLS_CLI_H
#define NCCLBPF_TOOLS_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Exit codes, the same for every command (README.md, docs/cli.md). */
enum {
	CLI_EXIT_OK = 0,      /* success */
	CLI_EXIT_REFUSED = 1, /* the input was refused or the work failed: missing or bad object,
			       * verifier rejection, benchmark failure, I/O error */
	CLI_EXIT_USAGE = 2,   /* usage error: unknown command or option, bad option value,
			       * missing argument */
	CLI_EXIT_NO = 3,      /* a check answered "no": `decisions` found a divergence, `ctl`
			       * reached no process */
};

/* One command. `help` is the body of `ncclbpf help NAME`, `ncclbpf NAME --help` and of
 * the command's section of docs/cli.md: a paragraph saying what it does, then an
 * "options:" block of "  --opt ARG   text" lines, then anything else (exit status
 * details, examples). Plain text, wrapped at 80 columns. */
struct cli_command {
	const char *name;     /* "info" */
	int (*run)(int argc, char **argv); /* argv[0] = name; returns a CLI_EXIT_* code */
	const char *synopsis; /* arguments after the name: "[--json] OBJ" */
	const char *summary;  /* one line for the command list */
	const char *help;
};

/* Registers a command: one line at file scope in cmd_<name>.c. The dispatcher finds every
 * registered command through the linker section (no table to edit); commands are listed
 * in name order. */
#define NCCLBPF_CLI_COMMAND(ident, ...)                                                       \
	static const struct cli_command cli_command_##ident = { __VA_ARGS__ };                \
	__attribute__((used, section("ncclbpf_cli_commands"), aligned(sizeof(void *))))       \
	const struct cli_command *const cli_command_ptr_##ident = &cli_command_##ident

/* Registered commands, sorted by name (main.c). */
size_t cli_commands(const struct cli_command *const **out);
const struct cli_command *cli_find_command(const char *name);

/* Prints "ncclbpf CMD: <message>\n" to stderr. */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* cli_error, then "try 'ncclbpf help CMD'"; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Option parsing shared by the commands. cli_opt_value matches "--name VALUE" and
 * "--name=VALUE": returns 1 with *val set (i advanced past a separate value), 0 when
 * argv[*i] is another option, -1 (message printed) when the value is missing. */
int cli_opt_value(const char *cmd, int argc, char **argv, int *i, const char *name,
		  const char **val);
/* An empty value (`-o ""`, `--lib=`) is a usage error too: -1, message printed. */
/* Reads a whole input file: regular files only (a FIFO, directory or device is refused
 * before a byte is read, so nothing hangs), at most max bytes. On failure prints
 * "PATH: error: why" and returns -errno; *buf is malloc'd and NUL-terminated. */
int cli_read_file(const char *path, size_t max, char **buf, size_t *len);
/* Whether two paths name the same file (same name, or same device and inode): an output
 * must never overwrite an input it is derived from. */
bool cli_same_file(const char *a, const char *b);
/* Decimal (or 0x hex) integer in [min, max]; -1 with "ncclbpf CMD: OPT: ..." otherwise. */
int cli_parse_range(const char *cmd, const char *opt, const char *text, long long min,
		    long long max, long long *out);

/* ---- JSON output (stable schemas, documented in docs/cli.md) ---- */
#define CLI_JSON_MAX_DEPTH 16
struct cli_json {
	FILE *f;
	int depth;
	bool first[CLI_JSON_MAX_DEPTH];
	char kind[CLI_JSON_MAX_DEPTH]; /* '{' or '[' per open level */
};
/* Every value takes a key: pass NULL inside arrays and for the top-level value. */
void cli_json_init(struct cli_json *j, FILE *f);
void cli_json_object(struct cli_json *j, const char *key);
void cli_json_array(struct cli_json *j, const char *key);
void cli_json_end(struct cli_json *j); /* closes the innermost object/array */
void cli_json_str(struct cli_json *j, const char *key, const char *s); /* NULL -> null */
void cli_json_int(struct cli_json *j, const char *key, long long v);
void cli_json_uint(struct cli_json *j, const char *key, unsigned long long v);
void cli_json_num(struct cli_json *j, const char *key, double v); /* non-finite -> null */
void cli_json_bool(struct cli_json *j, const char *key, bool v);
void cli_json_null(struct cli_json *j, const char *key);
/* Ends the document with a newline (all containers must be closed). */
void cli_json_finish(struct cli_json *j);

/* ---- terminal output ---- */
/* Colour for stream f: it is a terminal, NO_COLOR is unset (or empty) and TERM is not
 * "dumb". */
bool cli_use_color(FILE *f);
/* The directory of the running executable (where build/ keeps libncclbpf.so and
 * policies/), "." when /proc/self/exe cannot be read. */
void cli_exe_dir(char *buf, size_t len);

#endif
