/* network.c: the network model of the simulator (tests/sim/README.md):
 * per-link delays and retransmissions, partitions that hold messages. */
#include "sim.h"

/* ---- the network ---------------------------------------------------------- */

/* One way, node i to the database (dir 0) or back (dir 1): FIFO per link,
 * as TCP is; a lost segment is a retransmission, a late delivery. */
static double net_delay(int i, int dir)
{
	double d = urand(0.0002, 0.003);

	if (chance(0.02))
		d += urand(0, 0.3);       /* a slow moment */
	if (chance(0.005))
		d += urand(0.2, 1.5);     /* a lost segment, retransmitted */
	/* an old leader slowed down while a restart's window is open may not
	 * take its fence back within a standby's settle wait */
	if (d > RESTART_SLOW && cmd_alive(&W.nodes[i]))
		restart_otherwise(W.exempt_db_until, "a leader's network is slow");
	d = fmax(T + d, W.link_last[i][dir] + 1e-7);
	W.link_last[i][dir] = d;
	return d;
}

void hold(struct simev e)
{
	if (W.n_held == W.cap_held) {
		W.cap_held = W.cap_held ? W.cap_held * 2 : 256;
		W.held = realloc(W.held, W.cap_held * sizeof(*W.held));
		if (!W.held)
			abort();
	}
	W.held[W.n_held++] = e;
}

/* A message between node i and the database; held while they are parted
 * and delivered in order when the partition heals (TCP retransmits). */
void send_link(struct simev e, int i, int dir)
{
	if (W.part_db[i]) {
		e.arg = dir;
		hold(e);
		return;
	}
	e.t = net_delay(i, dir);
	push(e);
}

void heal_link(int i)
{
	size_t k = 0;

	W.part_db[i] = false;
	for (size_t j = 0; j < W.n_held; j++) {
		struct simev e = W.held[j];

		if (e.kind == K_TO_DB ? e.from == i : e.node == i) {
			e.t = net_delay(i, (int)e.arg);
			push(e);
		} else {
			W.held[k++] = e;
		}
	}
	W.n_held = k;
}
