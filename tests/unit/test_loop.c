/* SPDX-License-Identifier: MIT */
/*
 * test_loop.c - the loop's order within a turn (io/loop.c): the ready
 * real-time fds' handlers first, then what they left for after all of
 * them (fo_loop_set_rt_done: the daemon's switches' after-work), then the
 * other handlers. On eventfds.
 */
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "check.h"
#include "io/loop.h"

static char order[32];
static size_t n_order;

static void note(char c)
{
	if (n_order < sizeof(order) - 1)
		order[n_order++] = c;
	order[n_order] = '\0';
}

/* ctx: the letter to note. Reads the eventfd so that it is not ready again. */
static void on_fd(void *ctx, int fd, uint32_t events)
{
	uint64_t v;

	(void)events;
	(void)!read(fd, &v, sizeof(v));
	note(*(const char *)ctx);
}

static void on_rt_done(void *ctx)
{
	(void)ctx;
	note('D');
}

static void ready(int fd)
{
	uint64_t one = 1;

	(void)!write(fd, &one, sizeof(one));
}

static void test_rt_done_after_all_rt_before_others(void)
{
	static const char rt1 = 'R', rt2 = 'S', other = 'O';
	int a = eventfd(0, EFD_NONBLOCK), b = eventfd(0, EFD_NONBLOCK), c = eventfd(0, EFD_NONBLOCK);
	struct fo_loop *l = NULL;

	CHECK(a >= 0 && b >= 0 && c >= 0 && fo_loop_new(&l) == 0, "loop and eventfds");
	if (!l)
		return;
	CHECK(fo_loop_add_rt(l, a, EPOLLIN, on_fd, (void *)&rt1) == 0 &&
		      fo_loop_add_rt(l, b, EPOLLIN, on_fd, (void *)&rt2) == 0 &&
		      fo_loop_add(l, c, EPOLLIN, on_fd, (void *)&other) == 0,
	      "fds added");
	fo_loop_set_rt_done(l, on_rt_done, NULL);

	/* Two real-time fds and another one ready in one turn. */
	ready(a);
	ready(b);
	ready(c);
	n_order = 0;
	CHECK(fo_loop_run_once_timeout(l, 100) == 0, "a turn");
	CHECK(n_order == 4 && order[2] == 'D' && order[3] == 'O' && strchr("RS", order[0]) && strchr("RS", order[1]) &&
		      order[0] != order[1],
	      "both real-time handlers, then the rt-done work once, then the other handler: %s", order);

	/* No real-time fd ready: no rt-done work. */
	ready(c);
	n_order = 0;
	order[0] = '\0';
	CHECK(fo_loop_run_once_timeout(l, 100) == 0, "a turn");
	CHECK(!strcmp(order, "O"), "only the other handler: %s", order);

	fo_loop_free(l);
	close(a);
	close(b);
	close(c);
}

int main(void)
{
	RUN(test_rt_done_after_all_rt_before_others);
	return check_summary("test_loop");
}
