/*
 * test_seqs.c - several sequences in one step, their caches in pages (mkc
 * --max-seqs, issue 30), on the C target: tests/programs/seqs_batch.c
 * (sequences in shared, interleaved steps against each alone; forks,
 * closing, bad steps, a full pool) under the sanitizers, with static
 * queues and shuffled ones; the golden tests through sequence 0 of a paged
 * file (its pages handed out backwards, so a body that ignored the table
 * would read other positions); generate on a paged file against the dense
 * one; and the compile-time refusals.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "../mkc_run.h"

static char out[1 << 16];

#define FOLDER "tests/models/hf_chunk/llama_tiny_bf16"

Test(seqs, shared_steps_are_each_sequence_alone, .timeout = 300)
{
	char cmd[4096];
	snprintf(cmd, sizeof cmd,
		 "d=$(mktemp -d) && %s " FOLDER " -o $d/batch.c --max-seqs 4 --max-chunk 8 "
		 "--page-size 4 --max-seq 32 --cache-pages 12 --workers 2 && "
		 "cc -std=c11 -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined "
		 "-fno-sanitize-recover=all -DDIR=\\\"" FOLDER "\\\" -pthread -I$d -o $d/t "
		 "tests/programs/seqs_batch.c $d/batch.c -lm && timeout 120 $d/t && "
		 "timeout 120 $d/t 17; rc=$?; rm -rf $d; exit $rc", mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	/* both runs: static queues, then the shuffled one */
	const char *twice[] = {
		"together: logits same, greedy tokens same, caches same, lengths 9 13 7\n",
		"fork: 9 positions, 0 pages taken\n",
		"fork: same token, logits same\n",
		"fork: the source's cache kept, lengths 10 and 16\n",
		"unchanged: yes\n",
	};
	for (size_t i = 0; i < sizeof twice / sizeof *twice; i++) {
		const char *a = strstr(out, twice[i]);
		cr_expect(a && strstr(a + 1, twice[i]), "not twice: %s\n%s", twice[i], out);
	}
	cr_expect(strstr(out, "max_seqs 4, page 4, caches 4, vocab 256\n"), "%s", out);
	cr_expect(strstr(out, "unknown: -1 row 1 of the step: there is no sequence 99 (the model "
			 "keeps 0 to 3)"), "%s", out);
	cr_expect(strstr(out, "closed: -1 row 0 of the step: sequence 2 is not open"), "%s", out);
	cr_expect(strstr(out, "twice: -1 seq_close: sequence 2 is not open"), "%s", out);
	cr_expect(strstr(out, "positions: -1 row 0 of the step (sequence 1) has position_ids 3, but "
			 "its position is 13: a sequence's tokens come in order"), "%s", out);
	cr_expect(strstr(out, "none: -1 step_seqs needs at least one token and its sequence"), "%s",
		  out);
	cr_expect(strstr(out, "rows: -1 a step of 9 tokens; the file takes at most 8"), "%s", out);
	cr_expect(strstr(out, "close: 4 pages back (of 4 held)\n"), "%s", out);
	cr_expect(strstr(out, "full: the cache pool is full: the step needs 2 more pages of 4 "
			 "positions and 1 of 12 are free; close a sequence, or compile with more "
			 "--cache-pages; sequence 1 holds 24\n"), "%s", out);
}

/*
 * Caches in pages read by the split attention's parts (passes/split_attn.c:
 * each query row's chunks of its own sequence's positions), kept in bf16
 * (--kv bf16): the shared steps still give each sequence its logits and
 * caches alone, exactly (the same bodies round the same values alike).
 */
Test(seqs, bf16_pages_through_parts, .timeout = 300)
{
	char cmd[4096];
	snprintf(cmd, sizeof cmd,
		 "d=$(mktemp -d) && %s " FOLDER " -o $d/batch.c --max-seqs 4 --max-chunk 8 "
		 "--page-size 4 --max-seq 32 --cache-pages 12 --workers 2 --kv bf16 -v 2>&1 | "
		 "grep -E 'split_attn:|kv:' && grep -c 'mkc_attn_part_c(.*&m->pages' $d/batch.c && "
		 "cc -std=c11 -O1 -g -Wall -Wextra -Werror -DDIR=\\\"" FOLDER "\\\" -pthread -I$d "
		 "-o $d/t tests/programs/seqs_batch.c $d/batch.c -lm && timeout 120 $d/t; rc=$?; "
		 "rm -rf $d; exit $rc", mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	cr_expect(strstr(out, "split_attn: 2 attention nodes over chunks of positions\n"), "%s", out);
	cr_expect(strstr(out, "kv: 4 of 4 KV caches stored as bf16\n"), "%s", out);
	cr_expect(strstr(out, "\n2\n"), "two parts through the page table: %s", out);
	cr_expect(strstr(out, "together: logits same, greedy tokens same, caches same, lengths 9 13 7\n"),
		  "%s", out);
	cr_expect(strstr(out, "fork: same token, logits same\n"), "%s", out);
}

/*
 * generate_batch: requests through fewer sequences than requests, each as
 * alone; then through a pool of 12 pages, where a request waits until the
 * pages of its whole life are free (the last needs 9: it runs alone), and
 * a request of 14 pages is refused there.
 */
Test(seqs, generate_batch_is_each_request_alone, .timeout = 300)
{
	char cmd[4096];
	snprintf(cmd, sizeof cmd,
		 "d=$(mktemp -d) && m=tests/models/hf/qwen3_tiny && for p in 64 12; do "
		 "mkdir $d/$p && %s $m -o $d/$p/gb.c --max-seqs 4 --max-chunk 8 --page-size 4 "
		 "--max-seq 64 --cache-pages $p --workers 2 && "
		 "cc -std=c11 -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined "
		 "-fno-sanitize-recover=all -DDIR=\\\"$m\\\" -pthread -I$d/$p -o $d/$p/t "
		 "tests/programs/gen_batch.c $d/$p/gb.c -lm && { timeout 120 $d/$p/t; echo rc $?; } "
		 "|| exit 1; done; rm -rf $d", mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	cr_expect(strstr(out, "batch of 6: same as alone, 60 tokens heard, sequence 0 open with 0, "
			 "free pages 64\n"), "%s", out);
	cr_expect(strstr(out, "batch of 6: same as alone, 60 tokens heard, sequence 0 open with 0, "
			 "free pages 12\n"), "%s", out);
	cr_expect(strstr(out, "long: 0 ok\nrc 0\n"), "%s", out);
	cr_expect(strstr(out, "long: -1 request 0: 55 positions need 14 pages of 4; the pool holds "
			 "12 (--cache-pages)\nrc 0\n"), "%s", out);
	cr_expect(strstr(out, "stopped: 4 tokens (4 expected), others same\n"), "%s", out);
	cr_expect(strstr(out, "none: -1 generate_batch needs at least one request"), "%s", out);
	cr_expect(strstr(out, "empty: -1 request 2 needs at least one prompt token, one new token"),
		  "%s", out);
	cr_expect(strstr(out, "bad: -1 sampling.top_k is -1"), "%s", out);
}

/*
 * bench/mkc_batch.c's mixed run (a server's loop: requests arriving while
 * others decode, a step of decode tokens and prompt chunks together):
 * every request gets the tokens it gets alone, through 4 sequences and a
 * pool of 24 pages (6 requests of 4 pages: they wait for a sequence) and
 * of 8 (they wait for pages, two at a time); a request longer than the
 * pool is refused. STRICT also checks the replay that judges, on a GPU,
 * where a request parted from its tokens alone: request 0's prompt and
 * first tokens fed again alone put its next token on top (exit 1 if not).
 */
Test(seqs, a_mixed_run_gives_each_request_its_tokens_alone, .timeout = 300)
{
	char cmd[4096];
	snprintf(cmd, sizeof cmd,
		 "d=$(mktemp -d) && m=tests/models/hf/qwen3_tiny && for p in 24 8; do "
		 "mkdir $d/$p && %s $m -o $d/$p/llama.c --max-seqs 4 --max-chunk 8 --page-size 4 "
		 "--max-seq 64 --cache-pages $p --workers 2 && "
		 "cc -std=c11 -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined "
		 "-fno-sanitize-recover=all -pthread -I$d/$p -Ibench -o $d/$p/t bench/mkc_batch.c "
		 "$d/$p/llama.c -lm && timeout 120 $d/$p/t $m mixed 6 9 5 0.5 1 || exit 1; done; "
		 "timeout 120 $d/8/t $m mixed 2 30 5 0 1 2>&1; echo rc $?; rm -rf $d", mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	const char *a = strstr(out, "mixed: 6 requests, prompt 9, new 5, 0.500 ms apart: ");
	cr_expect(a && strstr(a, "same as alone: 6 of 6\n"), "%s", out);
	cr_expect(a && strstr(a + 1, "mixed: 6 requests") &&
		  strstr(strstr(a + 1, "mixed: 6 requests"), "same as alone: 6 of 6\n"), "%s", out);
	cr_expect(strstr(out, "a request's PROMPT + N_NEW within a sequence's capacity (64) and the "
			 "page pool\nrc 2\n"), "%s", out);
}

/* The golden steps through sequence 0, pages of 3 positions (not a divisor
 * of anything), chunks and single tokens. llama_tiny_d64's single tokens
 * take HeadProj (passes/fuse_qkv.c) into the pages: its appends at the
 * row the page table gives (a body that wrote at the position instead
 * fails its second case). */
Test(seqs, golden_tests_through_pages, .timeout = 300)
{
	cr_assert_eq(mkc_test_run("--max-seqs 2 --page-size 3 --max-chunk 8 "
				  "tests/models/hf_chunk/qwen3_tiny tests/models/hf_chunk/llama_tiny_d64 "
				  FOLDER, out, sizeof out),
		     0, "%s", out);
	cr_expect(strstr(out, "9 passed, 0 failed"), "%s", out);
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "d=$(mktemp -d) && %s tests/models/hf_chunk/llama_tiny_d64 "
		 "--max-seqs 2 --page-size 3 --max-chunk 8 -v -o $d/m.c 2>&1 | grep -c 'fuse_qkv: 2 "
		 "rotary embeddings and 4 cache appends'; rm -rf $d", mkc_bin());
	mkc_shell(cmd, out, sizeof out);
	cr_expect_str_eq(out, "1\n", "the one-token plan's HeadProj: %s", out);
}

/* generate on sequence 0 of a paged file: the dense file's greedy tokens. */
Test(seqs, generate_on_pages_is_generate, .timeout = 300)
{
	char cmd[4096];
	snprintf(cmd, sizeof cmd,
		 "d=$(mktemp -d) && mkdir $d/p $d/q && "
		 "%s tests/models/hf/qwen3_tiny -o $d/p/llama.c --max-seqs 2 --page-size 4 --max-seq 64 && "
		 "%s tests/models/hf/qwen3_tiny -o $d/q/llama.c --max-seq 64 && "
		 "for v in p q; do cc -std=c11 -O1 -pthread -I$d/$v -o $d/$v/gen examples/generate.c "
		 "$d/$v/llama.c -lm || exit 1; done && "
		 "$d/p/gen tests/models/hf/qwen3_tiny 24 seq:30 2 | head -1 && "
		 "$d/q/gen tests/models/hf/qwen3_tiny 24 seq:30 | head -1 && "
		 "$d/p/gen tests/models/hf/qwen3_tiny 40 seq:30 2>&1; rm -rf $d; exit 0",
		 mkc_bin(), mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	char *a = strstr(out, "tokens:"), *b = a ? strstr(a + 1, "tokens:") : NULL;
	cr_assert(a && b, "%s", out);
	cr_expect(strcspn(a, "\n") == strcspn(b, "\n") && !strncmp(a, b, strcspn(a, "\n")),
		  "paged and dense generate differ: %s", out);
	cr_expect(strstr(out, "generate: sequence 0 holds 0 positions of at most 64, and 69 more do "
			 "not fit; compile with a larger --max-seq"), "%s", out);
}

Test(seqs, refused_at_compile_time, .timeout = 120)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd, "(%s tests/models/tiny_llama_decode_op23 --max-seqs 2; "
		 "%s " FOLDER " --max-seqs 2 --kv-io; %s " FOLDER " --page-size 8; "
		 "%s " FOLDER " --max-seqs 0) 2>&1; exit 0", mkc_bin(), mkc_bin(), mkc_bin(), mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	cr_expect(strstr(out, "--max-seqs 2: the model's step takes a fixed number of tokens"),
		  "%s", out);
	cr_expect(strstr(out, "--max-seqs keeps the caches in pages the model owns; --kv-io keeps "
			 "them as inputs and outputs: give one of them"), "%s", out);
	cr_expect(strstr(out, "--page-size and --cache-pages size the pages of --max-seqs's caches"),
		  "%s", out);
	cr_expect(strstr(out, "--max-seqs needs a sequence count from 1 to 65536"), "%s", out);
}

/*
 * A few-token plan (--few-tokens 16) cuts a value append's block of rows in
 * pieces of about 512 elements a head (passes/tile.c): rows 0-7 and 8-15 of
 * a head of 64 in tiles of their own. A mixed run whose steps carry up to
 * 16 rows (prompts of 12 in chunks beside decode tokens) gives every
 * request its tokens alone, and the golden steps pass through that plan.
 */
Test(seqs, a_few_token_plan_appends_in_pieces, .timeout = 300)
{
	const char *flags = "--max-seqs 4 --max-chunk 16 --few-tokens 16 --page-size 4 --max-seq 64 "
			    "--cache-pages 24 --workers 2";
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "d=$(mktemp -d) && %s tests/models/hf_chunk/llama_tiny_d64 %s "
		 "--dump-after=tile -o $d/m.c 2>&1 | grep -cE 'layers.0.self_attn.attn/value_concat "
		 "\\(CacheAppend\\) tile [0-3]/4 out \\[0:1,[01]:[12],"
		 "past_len(\\+8)?:past_len\\+(8|16),'; "
		 "rm -rf $d", mkc_bin(), flags);
	mkc_shell(cmd, out, sizeof out);
	cr_expect_str_eq(out, "4\n", "two pieces of 8 rows for each of 2 heads: %s", out);
	snprintf(cmd, sizeof cmd,
		 "d=$(mktemp -d) && m=tests/models/hf_chunk/llama_tiny_d64 && "
		 "%s $m -o $d/llama.c %s && "
		 "cc -std=c11 -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined "
		 "-fno-sanitize-recover=all -pthread -I$d -Ibench -o $d/t bench/mkc_batch.c "
		 "$d/llama.c -lm && timeout 120 $d/t $m mixed 6 12 5 0.5 1; rc=$?; rm -rf $d; "
		 "exit $rc", mkc_bin(), flags);
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	cr_expect(strstr(out, "same as alone: 6 of 6\n"), "%s", out);
	cr_assert_eq(mkc_test_run("--max-seqs 2 --page-size 3 --max-chunk 16 --few-tokens 16 "
				  "tests/models/hf_chunk/llama_tiny_d64", out, sizeof out),
		     0, "%s", out);
	cr_expect(strstr(out, "3 passed, 0 failed"), "%s", out);
}
