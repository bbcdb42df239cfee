# SPDX-License-Identifier: MIT
# Turns a text file into a C array, NUL-terminated: cmake -DIN=file -DOUT=file.h -DNAME=sym -P
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n"
	body "${body}")
get_filename_component(src "${IN}" NAME)
file(WRITE "${OUT}.tmp" "/* Generated from ${src} at build time; do not edit. */\n"
	"static const char ${NAME}[] = {\n${body}0x00};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
