/* A conformance-style ELF for `ncclbpf exec --elf` (tests/tools): only .text, one global
 * function (so it is the object's first program) that reads a little-endian u32 from the
 * memory in r1 and adds the length in r2. */
int conf_entry(unsigned int *mem, unsigned long len)
{
	return (int)(mem[0] + len);
}
