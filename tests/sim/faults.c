/* faults.c: the faults of the simulator (tests/sim/README.md): their
 * schedule, pg_terminate_backend, restarts and failovers, partitions,
 * SIGSTOP, kill -9, SIGTERM, switchovers and pauses, and their healing. */
#include "sim.h"

static void fault_network(const struct simev *e);
static void fault_node_or_controls(const struct simev *e);

/* ---- faults ------------------------------------------------------------- */

static const char *const fault_names[] = { "pg_terminate_backend(lock)",
	"pg_terminate_backend(fence)", "pg_terminate_backend(both)",
	"database restart", "database failover", "partition node-database",
	"partition node-node", "SIGSTOP", "kill -9", "SIGTERM",
	"pgleader switchover", "pgleader pause" };

int current_leader(void)
{
	for (int i = 0; i < W.n; i++)
		if (W.nodes[i].up && cmd_alive(&W.nodes[i]))
			return i;
	return irand(W.n);
}

static int session_of(int node, int skind)
{
	for (int k = W.n_s - 1; k >= 0; k--)
		if (W.s[k].alive && W.s[k].node == node && W.s[k].skind == skind)
			return k;
	return NOBODY;
}

static void terminate(int i, bool lock, bool fence)
{
	int ls = session_of(i, 0), fs = session_of(i, 1);

	/* SAFETY, "Both sessions ended together" and "one after the other":
	 * the lock session and the fence session, or the lock session while
	 * the fence is not held: the leader takes its fence again at once, or
	 * sends SIGKILL at once; the overlap is the time to reconnect (the
	 * network's slack) and for the group to be gone after SIGKILL */
	/* (the command may start after the sessions ended: the fence's
	 * grant was on its way) */
	bool fence_held = W.holder[1] >= 0 && W.s[W.holder[1]].node == i;
	/* "before the fence was taken again": the decider reconnects the
	 * fence session after its backoff (at most retry_interval) */
	bool retaking = T - W.fence_lost_at[i] <= W.retry + 2 * net_slack;
	/* counted from when the leader can learn it: with the node parted
	 * from the database, only the pings tell, and its command is gone
	 * grace_period after that (DIFFERS from the man page, which assumes
	 * the leader hears the end at once) */
	double bound = W.part_db[i] ? W.p.ping_interval * W.p.ping_failures +
		W.p.ping_timeout + W.grace : SIGKILL_GONE;

	if (lock && ls >= 0 && (fence || (!fence_held && retaking)))
		exempt_node(i, T + bound + net_slack, "both sessions ended");
	/* ... or the lock session first, then the fence session while the
	 * command is still stopping */
	if (fence && fs >= 0 && ls < 0)
		exempt_node(i, T + bound + net_slack, "both sessions ended");
	if (lock && ls >= 0)
		db_end(ls, true, "pg_terminate_backend");
	if (fence && fs >= 0)
		db_end(fs, true, "pg_terminate_backend");
}

/* With jobs, half of the lock sessions' ends come while another session
 * holds the lock's row of terms (SELECT ... FOR UPDATE) for 1 to 5 s, so
 * that a claim waits on it, and the end comes within that wait (DESIGN
 * 10: the claim checks the lock again after it). The draws come from the
 * fault's time, not the seed's generator: the seeds' other draws stay. */
static bool terms_row_first(const struct simev *e)
{
	double h = e->t * 7919.0 - floor(e->t * 7919.0);
	double hold = 1 + 4 * (e->t * 104729.0 - floor(e->t * 104729.0));

	if (!with_jobs || e->mask || h >= 0.5 || !W.db_up)
		return false;
	W.terms_held_until = fmax(W.terms_held_until, T + hold);
	say(0, "db: another session holds the terms row for %.3fs", hold);
	push((struct simev){ .t = T + hold * (0.3 + h), .kind = K_FAULT, .node = e->node,
			     .op = F_TERM_LOCK, .arg = e->arg, .from = e->from,
			     .gen = e->gen, .mask = 1 });
	return true;
}

/* With the controls, half of the pauses are followed by an ALTER TABLE
 * of the controls (DESIGN 11: reads fail with lock_timeout while it
 * holds its lock): from 0 to 4 s after the pause, for 2 to 12 s. Drawn
 * from the fault's time, so the seeds' other draws stay. */
static void controls_locked_after(const struct simev *e)
{
	double h = e->t * 6007.0 - floor(e->t * 6007.0);
	double from = T + 4 * (e->t * 3001.0 - floor(e->t * 3001.0));
	double hold = 2 + 10 * (e->t * 12289.0 - floor(e->t * 12289.0));

	if (h >= 0.5)
		return;
	say(0, "db: an ALTER TABLE locks the controls from %.3f for %.3fs", from, hold);
	W.ctl_locked_from = from;
	W.ctl_locked_until = from + hold;
}

void fault(const struct simev *e)
{
	int i = e->node;
	struct node *n = &W.nodes[i];

	say(1u << i, "FAULT %s on %s for %.3fs", fault_names[e->op], n->name, e->arg);
	unsteady();
	if (e->op == F_TERM_LOCK && terms_row_first(e))
		return;
	if (e->op <= F_TERM_BOTH) { /* pg_terminate_backend */
		terminate(i, e->op != F_TERM_FENCE, e->op != F_TERM_LOCK);
		return;
	}
	if (e->op <= F_PART_NN)
		fault_network(e);
	else
		fault_node_or_controls(e);
}

/* A restart, a failover or a partition. */
static void fault_network(const struct simev *e)
{
	int i = e->node;
	struct node *n = &W.nodes[i];

	switch (e->op) {
	case F_DB_RESTART: case F_DB_FAILOVER:
		if (W.db_up)
			db_down(fault_names[e->op], e->arg);
		return;
	case F_PART_DB:
		W.part_db[i] = true;
		/* a leader parted while a restart's window is open may not
		 * reach the server again in time: the man page's "otherwise" */
		if (cmd_alive(n))
			restart_otherwise(restart_unheard_until(), "a leader parted");
		push((struct simev){ .t = T + e->arg, .kind = K_HEAL, .node = i, .op = 1 });
		return;
	case F_PART_NN:
		W.part_nn[i][e->from] = W.part_nn[e->from][i] = true;
		push((struct simev){ .t = T + e->arg, .kind = K_HEAL, .node = i, .op = 2,
				     .from = e->from });
		return;
	default:
		return;
	}
}

/* A freeze, a kill, a SIGTERM, a switchover or a pause. */
static void fault_node_or_controls(const struct simev *e)
{
	int i = e->node;
	struct node *n = &W.nodes[i];

	switch (e->op) {
	case F_FREEZE:
		if (!n->up || n->frozen)
			return;
		n->frozen = true;
		n->frozen_until = T + e->arg;
		push((struct simev){ .t = T + e->arg, .kind = K_HEAL, .node = i, .op = 3 });
		return;
	case F_KILL:
		if (n->up)
			node_kill(n);
		return;
	case F_SIGTERM:
		if (n->up && !n->frozen)
			send_signal(n, SIGTERM);
		return;
	case F_SWITCHOVER: /* asked of the node running the command */
		if (W.switchover && T < W.so_until)
			return; /* one stands: refused */
		W.switchover = true;
		W.so_leader = i;
		W.so_target = chance(0.5) ? e->from : NOBODY;
		W.so_until = T + e->arg;
		return;
	case F_PAUSE:
		W.paused = true;
		controls_locked_after(e);
		push((struct simev){ .t = T + e->arg, .kind = K_HEAL, .node = i, .op = 4 });
		return;
	default:
		return;
	}
}

void heal(const struct simev *e)
{
	unsteady();
	switch (e->op) {
	case 0:
		if (!W.db_up)
			say(0, "db: accepts connections again");
		W.db_up = true;
		return;
	case 1:
		if (W.part_db[e->node])
			say(1u << e->node, "partition %s-database heals",
			    W.nodes[e->node].name);
		heal_link(e->node);
		return;
	case 2:
		W.part_nn[e->node][e->from] = W.part_nn[e->from][e->node] = false;
		return;
	case 3:
		node_thaw(&W.nodes[e->node]);
		return;
	case 4:
		if (W.paused)
			say(0, "resumed");
		W.paused = false;
		return;
	default:
		return;
	}
}

/* The last fault: everything heals; the liveness clock starts. */
void faults_end(void)
{
	say(0, "faults end: everything heals");
	W.ctl_locked_until = fmin(W.ctl_locked_until, T);
	heal(&(struct simev){ .op = 0 });
	heal(&(struct simev){ .op = 4 });
	W.switchover = false;
	for (int i = 0; i < W.n; i++) {
		heal(&(struct simev){ .op = 1, .node = i });
		heal(&(struct simev){ .op = 3, .node = i });
		for (int j = 0; j < W.n; j++)
			W.part_nn[i][j] = false;
	}
}

void schedule_faults(void)
{
	/* the controls' weights are 0 without --controls: the same draws */
	const int weight[F_COUNT] = { 12, 6, 6, 5, 4, 10, 6, 7, 7, 5,
				      with_controls ? 10 : 0, with_controls ? 5 : 0 };
	int total = 0;

	for (int k = 0; k < F_COUNT; k++)
		total += weight[k];
	for (double t = urand(2, 10); t < W.faults_end; t += urand(2, 25)) {
		int r = irand(total), k = 0;
		struct simev e = { .t = t, .kind = K_FAULT, .node = NOBODY };

		while (r >= weight[k])
			r -= weight[k++];
		e.op = k;
		e.from = irand(W.n);
		e.arg = k == F_DB_RESTART ? urand(0.05, 15) : k == F_DB_FAILOVER
			? urand(1, 30) : k == F_PART_DB ? urand(0.5, 3 * W.server_lease)
			: k == F_FREEZE ? urand(0.2, 2 * W.server_lease) : urand(0.5, 30);
		/* a target: the node running the command, or any */
		e.gen = chance(0.6);
		push(e);
	}
	push((struct simev){ .t = W.faults_end, .kind = K_FAULT, .node = NOBODY, .op = F_END });
}
