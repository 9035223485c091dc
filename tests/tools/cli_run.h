/* Runs a shell command and captures its output and exit status (tests/tools). */
#ifndef CLI_RUN_H
#define CLI_RUN_H

#include <stddef.h>

/* Runs `cmd` with sh -c; stdout (and stderr if the command redirects it) into out
 * (NUL-terminated, truncated to cap). Returns the exit status, or -1 if it did not exit. */
int cli_run(const char *cmd, char *out, size_t cap);
/* Like cli_run, growing *out as needed (caller frees). */
int cli_run_alloc(const char *cmd, char **out, size_t *len);

#endif
