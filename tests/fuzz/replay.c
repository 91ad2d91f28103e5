/*
 * replay.c - a main for a libFuzzer target without libFuzzer: runs the
 * target once on each file named, so that `make test` (and its sanitized
 * build) replays the crashes each target once found.
 *
 *   build/fuzz_replay_hf tests/fuzz/crashes_hf/FILE...
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		if (!f) {
			fprintf(stderr, "replay: cannot open %s\n", argv[i]);
			return 1;
		}
		uint8_t *data = NULL;
		size_t n = 0, cap = 0, k;
		do {
			if (n == cap) {
				uint8_t *more = realloc(data, cap = cap ? 2 * cap : 65536);
				if (!more) {
					fprintf(stderr, "replay: out of memory reading %s\n", argv[i]);
					return 1;
				}
				data = more;
			}
			k = fread(data + n, 1, cap - n, f);
			n += k;
		} while (k);
		fclose(f);
		LLVMFuzzerTestOneInput(data, n);
		free(data);
	}
	printf("replay: %d input(s), no crash\n", argc - 1);
	return 0;
}
