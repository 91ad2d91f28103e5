#!/bin/sh
# embed.sh NAME FILE...: prints a C definition `const char NAME[]` holding
# the files' text, so the runtime sources can be written into emitted files.
name=$1
shift
printf 'const char %s[] =\n' "$name"
for f in "$@"; do
	sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$/\\n"/' "$f"
done
printf ';\n'
