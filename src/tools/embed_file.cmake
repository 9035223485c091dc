# cmake -DIN=file -DOUT=file.c -DNAME=symbol -P embed_file.cmake: a C array of a file's bytes
# (the tuned_rules template the CLI patches; no compiler is needed where the CLI runs).
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" body "${body}")
file(WRITE ${OUT} "/* generated from ${IN} by embed_file.cmake */\n#include <stddef.h>\n"
     "const unsigned char ${NAME}[] = {\n${body}};\nconst size_t ${NAME}_len = ${len};\n")
