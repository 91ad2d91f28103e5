/*
 * load.c - a program that loads a compiled model's weights and says how
 * that went: `load PATH` prints "load: 0" or "load: -1 <the error
 * sentence>" and exits 0 or 1. Built against a C-target file compiled with
 * --name model, by tests/compiler/test_loaders.c and tools/mutate_weights.py.
 */
#include <stdio.h>

#include "model.h"

int
main(int argc, char **argv)
{
	model *m;
	if (argc != 2) {
		fprintf(stderr, "usage: load MODEL_PATH\n");
		return 2;
	}
	if (model_create(&m, NULL)) {
		fprintf(stderr, "load: cannot create the model\n");
		return 2;
	}
	int rc = model_load_weights(m, argv[1]);
	printf("load: %d%s%s\n", rc, rc ? " " : "", rc ? model_last_error(m) : "");
	model_destroy(m);
	return rc ? 1 : 0;
}
