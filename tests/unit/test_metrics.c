/* test_metrics.c: the Prometheus text, the /status JSON and the health answers, from hand-built snapshots. */
#include <check.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "election.h"
#include "metrics.h"
#include "jobs_retry.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const struct metrics_versions versions = { "9.8.7", "15.3" };

/* A standby connected for a minute, nothing counted yet. */
static struct election_snapshot base(void)
{
	struct election_snapshot s;

	memset(&s, 0, sizeof(s));
	s.state = ELECTION_STANDBY;
	s.since = 1000;
	s.since_wall = 1714564800.25; /* 2024-05-01T12:00:00.250Z */
	s.now = 1060;
	s.now_wall = 1714564860.25;
	s.node_id = "node-a";
	s.lock_name = "nightly";
	s.lock_key = -42;
	s.db_connected = true;
	s.command_due = INFINITY;
	s.priority = 1;
	return s;
}

/* Paused, a switchover under way, holding off for it (DESIGN 11). */
static void controlled(struct election_snapshot *s)
{
	s->priority = 0;
	s->paused = true;
	snprintf(s->paused_by, sizeof(s->paused_by), "psql (role ops) from 10.0.0.7");
	snprintf(s->paused_at, sizeof(s->paused_at), "2024-05-01T12:00:30Z");
	s->switchover = true;
	snprintf(s->switchover_leader, sizeof(s->switchover_leader), "b");
	snprintf(s->switchover_by, sizeof(s->switchover_by), "ops");
	snprintf(s->switchover_at, sizeof(s->switchover_at), "2024-05-01T12:00:40Z");
	s->hold_until = s->now + 20;
}

/* The same snapshot as leader of its third term, with a command running. */
static void make_leader(struct election_snapshot *s)
{
	s->state = ELECTION_LEADER;
	s->term = 3;
	s->fencing_token = 123456;
	s->leader_since_wall = 1714564850.5;
	s->command_pid = 4321;
	s->last_ping_reply = 1059.75;
	s->last_ping_reply_wall = 1714564860;
	s->counters.acquisitions = 3;
	s->counters.command_starts = 4;
	s->counters.command_exits[ELECTION_OUTCOME_FAILURE] = 2;
	s->counters.command_exits[ELECTION_OUTCOME_SIGNAL] = 1;
	s->counters.command_kills = 1;
	s->counters.losses[FAULT_TERMINATED] = 1;
	s->counters.losses[FAULT_TIMEOUT] = 1;
	s->counters.connect_failures = 7;
}

static char *render(const struct election_snapshot *s, const struct metrics_process *p)
{
	struct metrics_buf b = { 0 };

	ck_assert_int_eq(metrics_prometheus(s, p, &versions, &b), 0);
	ck_assert_ptr_nonnull(b.data);
	ck_assert_uint_eq(strlen(b.data), b.len);
	return b.data;
}

static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = text; (p = strstr(p, line)); p++)
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return true;
	return false;
}

/* ---- health answers ---------------------------------------------------- */

static const struct {
	enum election_state state;
	bool connected;
	bool leader, standby, live, ready;
} health_rows[] = {
	{ ELECTION_INIT, false, false, false, true, false },
	{ ELECTION_CONNECTING, false, false, false, true, false },
	{ ELECTION_BACKOFF, false, false, false, true, false },
	{ ELECTION_STANDBY, true, false, true, true, true },
	{ ELECTION_STANDBY, false, false, false, true, false },
	{ ELECTION_LEADER, true, true, false, true, true },
	{ ELECTION_LEADER, false, true, false, true, false },
	{ ELECTION_DEMOTING, true, false, false, true, false },
	{ ELECTION_DEMOTING, false, false, false, true, false },
	{ ELECTION_SHUTTING_DOWN, true, false, false, false, false },
	{ ELECTION_RELEASING, true, false, false, false, false },
	{ ELECTION_DONE, false, false, false, false, false },
};

START_TEST(test_health)
{
	struct election_snapshot s = base();

	s.state = health_rows[_i].state;
	s.db_connected = health_rows[_i].connected;
	ck_assert_int_eq(metrics_is_leader(&s), health_rows[_i].leader);
	ck_assert_int_eq(metrics_is_standby(&s), health_rows[_i].standby);
	ck_assert_int_eq(metrics_is_live(&s), health_rows[_i].live);
	ck_assert_int_eq(metrics_is_ready(&s), health_rows[_i].ready);
}
END_TEST

/* ---- state labels ------------------------------------------------------ */

static const struct {
	enum election_state state;
	const char *label;
} label_rows[] = {
	{ ELECTION_CONNECTING, "connecting" },
	{ ELECTION_STANDBY, "standby" },
	{ ELECTION_LEADER, "leader" },
	{ ELECTION_DEMOTING, "demoting" },
	{ ELECTION_SHUTTING_DOWN, "shutting_down" },
	{ ELECTION_DONE, "done" },
};

START_TEST(test_state_label)
{
	char buf[32];

	ck_assert_str_eq(metrics_state_label(label_rows[_i].state, buf, sizeof(buf)),
			 label_rows[_i].label);
}
END_TEST

/* Every state, known to this test or not: lower_snake, and one sample each. */
START_TEST(test_state_one_hot)
{
	struct election_snapshot s = base();
	char buf[32], line[96];
	char *text;

	for (int st = 0; st < ELECTION_STATE_COUNT; st++) {
		metrics_state_label((enum election_state)st, buf, sizeof(buf));
		ck_assert_uint_gt(strlen(buf), 0);
		ck_assert_uint_eq(strspn(buf, "abcdefghijklmnopqrstuvwxyz0123456789_"),
				  strlen(buf));
		s.state = (enum election_state)st;
		text = render(&s, NULL);
		for (int other = 0; other < ELECTION_STATE_COUNT; other++) {
			snprintf(line, sizeof(line), "pgleader_state{state=\"%s\"} %d",
				 metrics_state_label((enum election_state)other, buf,
						     sizeof(buf)), other == st);
			ck_assert_msg(has_line(text, line), "state %d: no line %s", st, line);
		}
		free(text);
	}
	ck_assert_str_eq(metrics_state_label(ELECTION_LEADER, buf, 4), "lea");
}
END_TEST

/* ---- the text format --------------------------------------------------- */

static void no_change(struct election_snapshot *s) { (void)s; }

static void odd_names(struct election_snapshot *s)
{
	s->node_id = "a\"b\\c\nd";
	s->lock_name = NULL;
	s->lock_key = INT64_MIN;
}

static void huge_token(struct election_snapshot *s)
{
	make_leader(s);
	s->fencing_token = UINT64_MAX;
}

static void ping_histogram(struct election_snapshot *s)
{
	struct election_histogram *h = &s->counters.ping_duration;

	h->counts[0] = 2;
	h->counts[2] = 3;
	h->counts[ELECTION_BUCKETS] = 1;
	h->count = 6;
	h->sum = 120.5;
}

static void disconnected(struct election_snapshot *s)
{
	s->state = ELECTION_BACKOFF;
	s->db_connected = false;
}

static const struct {
	const char *name;
	void (*change)(struct election_snapshot *s);
	const char *lines[8];
	const char *absent[4];
} text_rows[] = {
	{ "standby", no_change, {
		"pgleader_build_info{version=\"9.8.7\",libpq_version=\"15.3\"} 1",
		"pgleader_info{node_id=\"node-a\",lock_key=\"-42\",lock_name=\"nightly\",priority=\"1\"} 1",
		"pgleader_paused 0",
		"pgleader_is_leader{lock_key=\"-42\"} 0",
		"pgleader_database_connected 1",
		"pgleader_command_running 0",
		"pgleader_fencing_token 0",
		"pgleader_leader_since_timestamp_seconds 0",
	}, { "process_open_fds", "pgleader_leadership_lost_total{reason=\"timeout\"}" } },
	{ "losses shown from the start", no_change, {
		"pgleader_leadership_lost_total{reason=\"connection\"} 0",
		"pgleader_leadership_lost_total{reason=\"terminated\"} 0",
		"pgleader_leadership_lost_total{reason=\"ping_timeout\"} 0",
		"pgleader_leadership_lost_total{reason=\"protocol\"} 0",
		"pgleader_leadership_lost_total{reason=\"pooler\"} 0",
		"pgleader_command_exits_total{outcome=\"success\"} 0",
		"pgleader_command_exits_total{outcome=\"failure\"} 0",
		"pgleader_command_exits_total{outcome=\"signal\"} 0",
	}, { "pgleader_leadership_lost_total{reason=\"none\"}",
	     "pgleader_leadership_lost_total{reason=\"unreachable\"}" } },
	{ "leader", make_leader, {
		"pgleader_is_leader{lock_key=\"-42\"} 1",
		"pgleader_command_running 1",
		"pgleader_leader_since_timestamp_seconds 1714564850.5",
		"pgleader_last_ping_reply_timestamp_seconds 1714564860",
		"pgleader_acquisitions_total 3",
		"pgleader_database_connect_failures_total 7",
		"pgleader_fencing_token 123456",
	}, { 0 } },
	{ "leader counters", make_leader, {
		"pgleader_command_starts_total 4",
		"pgleader_command_exits_total{outcome=\"failure\"} 2",
		"pgleader_command_exits_total{outcome=\"signal\"} 1",
		"pgleader_command_kills_total 1",
		"pgleader_leadership_lost_total{reason=\"terminated\"} 1",
		"pgleader_leadership_lost_total{reason=\"timeout\"} 1",
	}, { 0 } },
	{ "escaped labels", odd_names, {
		"pgleader_info{node_id=\"a\\\"b\\\\c\\nd\",lock_key=\"-9223372036854775808\",lock_name=\"\",priority=\"1\"} 1",
		"pgleader_is_leader{lock_key=\"-9223372036854775808\"} 0",
	}, { 0 } },
	{ "exact 64-bit token", huge_token, {
		"pgleader_fencing_token 18446744073709551615",
	}, { 0 } },
	{ "cumulative buckets", ping_histogram, {
		"pgleader_ping_duration_seconds_bucket{le=\"+Inf\"} 6",
		"pgleader_ping_duration_seconds_sum 120.5",
		"pgleader_ping_duration_seconds_count 6",
		"pgleader_lock_wait_seconds_bucket{le=\"+Inf\"} 0",
		"pgleader_lock_wait_seconds_count 0",
		"# TYPE pgleader_ping_duration_seconds histogram",
	}, { 0 } },
	{ "paused", controlled, {
		"pgleader_paused 1",
		"pgleader_info{node_id=\"node-a\",lock_key=\"-42\",lock_name=\"nightly\",priority=\"0\"} 1",
	}, { 0 } },
	{ "disconnected", disconnected, {
		"pgleader_database_connected 0",
		"pgleader_state{state=\"backoff\"} 1",
	}, { "pgleader_leadership_lost_total{reason=\"unreachable\"}" } },
};

START_TEST(test_text)
{
	struct election_snapshot s = base();
	char *text;

	text_rows[_i].change(&s);
	text = render(&s, NULL);
	for (size_t k = 0; k < N(text_rows[_i].lines) && text_rows[_i].lines[k]; k++)
		ck_assert_msg(has_line(text, text_rows[_i].lines[k]), "%s: no line %s\n%s",
			      text_rows[_i].name, text_rows[_i].lines[k], text);
	for (size_t k = 0; k < N(text_rows[_i].absent) && text_rows[_i].absent[k]; k++)
		ck_assert_msg(!strstr(text, text_rows[_i].absent[k]), "%s: has %s",
			      text_rows[_i].name, text_rows[_i].absent[k]);
	free(text);
}
END_TEST

/* Each bucket counts itself and every bucket below it. */
START_TEST(test_buckets_cumulative)
{
	struct election_snapshot s = base();
	char line[128], num[32];
	uint64_t want = 0;
	char *text;

	ping_histogram(&s);
	text = render(&s, NULL);
	for (int i = 0; i < ELECTION_BUCKETS; i++) {
		want += s.counters.ping_duration.counts[i];
		snprintf(num, sizeof(num), "%.15g", election_bucket_bounds[i]);
		snprintf(line, sizeof(line),
			 "pgleader_ping_duration_seconds_bucket{le=\"%s\"} %" PRIu64, num, want);
		ck_assert_msg(has_line(text, line), "no line %s", line);
	}
	free(text);
}
END_TEST

/* Every sample belongs to a family with one HELP and one TYPE before it. */
START_TEST(test_every_family_typed)
{
	struct election_snapshot s = base();
	struct metrics_process p = { 1714564000, 1.5, 4096000, 8192000, 9, 1024 };
	char name[128], want[160];
	char *text, *line, *save = NULL, *copy;
	size_t n;

	make_leader(&s);
	text = render(&s, &p);
	ck_assert(has_line(text, "process_open_fds 9"));
	ck_assert(has_line(text, "process_cpu_seconds_total 1.5"));
	ck_assert(has_line(text, "# TYPE process_cpu_seconds_total counter"));
	copy = strdup(text);
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#')
			continue;
		n = strcspn(line, "{ ");
		ck_assert_uint_lt(n, sizeof(name));
		memcpy(name, line, n);
		name[n] = '\0';
		ck_assert_msg(!strncmp(name, "pgleader_", 9) || !strncmp(name, "process_", 8),
			      "unprefixed %s", name);
		snprintf(want, sizeof(want), "# TYPE %s ", name);
		if (!strstr(text, want)) { /* a histogram's _bucket, _sum, _count */
			*strrchr(name, '_') = '\0';
			snprintf(want, sizeof(want), "# TYPE %s histogram", name);
			ck_assert_msg(strstr(text, want), "no TYPE for %s", line);
		}
	}
	free(copy);
	free(text);
}
END_TEST

START_TEST(test_process_unknown_left_out)
{
	struct election_snapshot s = base();
	struct metrics_process p = { -1, 2, -1, -1, -1, 4096 };
	char *text = render(&s, &p);

	ck_assert(has_line(text, "process_max_fds 4096"));
	ck_assert(has_line(text, "process_cpu_seconds_total 2"));
	ck_assert_ptr_null(strstr(text, "process_open_fds"));
	ck_assert_ptr_null(strstr(text, "process_start_time_seconds"));
	free(text);
}
END_TEST

START_TEST(test_buffer_appends)
{
	struct election_snapshot s = base();
	struct metrics_buf b = { 0 };
	size_t once;

	ck_assert_int_eq(metrics_prometheus(&s, NULL, &versions, &b), 0);
	once = b.len;
	ck_assert_int_eq(metrics_prometheus(&s, NULL, &versions, &b), 0);
	ck_assert_uint_eq(b.len, 2 * once);
	ck_assert_int_eq(memcmp(b.data, b.data + once, once), 0);
	metrics_buf_free(&b);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
}
END_TEST

/* ---- /status ----------------------------------------------------------- */

static void latin1_node(struct election_snapshot *s)
{
	s->node_id = "caf\xe9";
	s->lock_name = NULL;
	s->since_wall = 0;
}

static void in_failsafe(struct election_snapshot *s)
{
	s->state = ELECTION_FAILSAFE;
	s->db_connected = false;
	s->command_pid = 4321;
	s->failsafe_agree = 2;
	s->failsafe_asked = 2;
}

/* Expected values in JSON text, compared after a round trip through jansson. */
static const struct {
	const char *name;
	void (*change)(struct election_snapshot *s);
	const char *fields[12][2];
} json_rows[] = {
	{ "standby", no_change, {
		{ "node_id", "\"node-a\"" }, { "state", "\"standby\"" },
		{ "since", "\"2024-05-01T12:00:00.250Z\"" }, { "lock_key", "\"-42\"" },
		{ "lock_name", "\"nightly\"" }, { "fencing_token", "null" },
		{ "term", "0" }, { "command_pid", "null" },
		{ "last_ping_reply_age_seconds", "null" },
		{ "database_connected", "true" }, { "version", "\"9.8.7\"" },
		{ "failsafe", "null" },
	} },
	{ "failsafe", in_failsafe, {
		{ "state", "\"failsafe\"" }, { "failsafe", "{\"agree\": 2, \"asked\": 2}" },
		{ "database_connected", "false" },
	} },
	{ "leader", make_leader, {
		{ "state", "\"leader\"" }, { "fencing_token", "\"123456\"" },
		{ "term", "3" }, { "command_pid", "4321" },
		{ "last_ping_reply_age_seconds", "0.25" },
	} },
	{ "exact 64-bit token", huge_token, {
		{ "fencing_token", "\"18446744073709551615\"" },
	} },
	{ "odd names", odd_names, {
		{ "node_id", "\"a\\\"b\\\\c\\nd\"" }, { "lock_name", "null" },
		{ "lock_key", "\"-9223372036854775808\"" },
	} },
	{ "not UTF-8", latin1_node, {
		{ "node_id", "\"caf?\"" }, { "since", "null" },
	} },
	{ "disconnected", disconnected, {
		{ "state", "\"backoff\"" }, { "database_connected", "false" },
	} },
	{ "no controls", no_change, {
		{ "priority", "1" }, { "paused", "null" }, { "switchover", "null" },
		{ "holding_off_until", "null" },
	} },
	{ "controls", controlled, {
		{ "priority", "0" },
		{ "paused", "{\"by\": \"psql (role ops) from 10.0.0.7\", "
		  "\"at\": \"2024-05-01T12:00:30Z\"}" },
		{ "switchover", "{\"leader\": \"b\", \"target\": null, \"asked_by\": \"ops\", "
		  "\"asked_at\": \"2024-05-01T12:00:40Z\"}" },
		{ "holding_off_until", "\"2024-05-01T12:01:20.250Z\"" },
	} },
};

START_TEST(test_status_json)
{
	struct election_snapshot s = base();
	json_error_t jerr;
	json_t *doc, *want;
	char *text;

	json_rows[_i].change(&s);
	text = metrics_status_json(&s, &versions);
	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(text[strlen(text) - 1], '\n');
	doc = json_loads(text, 0, &jerr);
	ck_assert_msg(doc != NULL, "%s: %s\n%s", json_rows[_i].name, jerr.text, text);
	ck_assert_uint_eq(json_object_size(doc), 16); /* with "failsafe" */
	for (size_t k = 0; k < N(json_rows[_i].fields) && json_rows[_i].fields[k][0]; k++) {
		want = json_loads(json_rows[_i].fields[k][1], JSON_DECODE_ANY, &jerr);
		ck_assert_ptr_nonnull(want);
		ck_assert_msg(json_equal(json_object_get(doc, json_rows[_i].fields[k][0]), want),
			      "%s: %s is not %s\n%s", json_rows[_i].name,
			      json_rows[_i].fields[k][0], json_rows[_i].fields[k][1], text);
		json_decref(want);
	}
	json_decref(doc);
	free(text);
}
END_TEST

/* ---- jobs (DESIGN 10) ---------------------------------------------------- */

static const struct jobs_view sample_jobs[] = {
	{ .name = "refresh", .schedule = "*/15 * * * *", .pid = 77,
	  .next_tick = 1714565700, .last_tick = 1714564800,
	  .last_success = 1714564803.5, .runs = { [JOBS_SUCCEEDED] = 4,
	  [JOBS_MISSED] = 2 }, .duration_counts = { [3] = 3, [JOBS_BUCKETS] = 1 },
	  .duration_count = 4, .duration_sum = 9.5, .retries = 3,
	  .on_failure = { [JOBS_HOOK_FAILED] = 1, [JOBS_HOOK_TIMED_OUT] = 2 } },
	{ .name = "odd \"name\"\n", .schedule = NULL, .paused = true,
	  .paused_by = "psql (role ops) from 10.0.0.7", .paused_at = "2024-05-01T12:10:00Z" },
};

static size_t jobs_count_of(const void *arg)
{
	return arg ? N(sample_jobs) : 0;
}

static void jobs_view_of(const void *arg, size_t i, struct jobs_view *v)
{
	(void)arg;
	*v = sample_jobs[i];
}

static void with_jobs(bool on)
{
	metrics_set_jobs(&(struct metrics_jobs){ jobs_count_of, jobs_view_of,
						 on ? sample_jobs : NULL });
}

START_TEST(test_job_families)
{
	struct election_snapshot s = base();
	struct metrics_buf b = { 0 };
	static const char *const want[] = {
		"# TYPE pgleader_job_last_success_timestamp_seconds gauge\n",
		"pgleader_job_last_success_timestamp_seconds{job=\"refresh\"} 1714564803.5\n",
		"pgleader_job_next_tick_timestamp_seconds{job=\"refresh\"} 1714565700\n",
		"pgleader_job_next_tick_timestamp_seconds{job=\"odd \\\"name\\\"\\n\"} 0\n",
		"pgleader_job_runs_total{job=\"refresh\",outcome=\"succeeded\"} 4\n",
		"pgleader_job_runs_total{job=\"refresh\",outcome=\"missed\"} 2\n",
		"pgleader_job_runs_total{job=\"refresh\",outcome=\"paused\"} 0\n",
		"# TYPE pgleader_job_paused gauge\n",
		"pgleader_job_paused{job=\"refresh\"} 0\n",
		"pgleader_job_paused{job=\"odd \\\"name\\\"\\n\"} 1\n",
		"pgleader_job_run_duration_seconds_bucket{job=\"refresh\",le=\"1\"} 0\n",
		"pgleader_job_run_duration_seconds_bucket{job=\"refresh\",le=\"5\"} 3\n",
		"pgleader_job_run_duration_seconds_bucket{job=\"refresh\",le=\"+Inf\"} 4\n",
		"pgleader_job_run_duration_seconds_sum{job=\"refresh\"} 9.5\n",
		/* DESIGN 13 */
		"# TYPE pgleader_job_retries_total counter\n",
		"pgleader_job_retries_total{job=\"refresh\"} 3\n",
		"pgleader_job_retries_total{job=\"odd \\\"name\\\"\\n\"} 0\n",
		"# TYPE pgleader_job_on_failure_total counter\n",
		"pgleader_job_on_failure_total{job=\"refresh\",result=\"succeeded\"} 0\n",
		"pgleader_job_on_failure_total{job=\"refresh\",result=\"failed\"} 1\n",
		"pgleader_job_on_failure_total{job=\"refresh\",result=\"timed_out\"} 2\n",
	};

	with_jobs(true);
	ck_assert_int_eq(metrics_prometheus(&s, NULL, &versions, &b), 0);
	for (size_t i = 0; i < N(want); i++)
		ck_assert_msg(strstr(b.data, want[i]), "missing: %s\n%s", want[i], b.data);
	metrics_buf_free(&b);
	with_jobs(false);
	ck_assert_int_eq(metrics_prometheus(&s, NULL, &versions, &b), 0);
	ck_assert_ptr_null(strstr(b.data, "pgleader_job_"));
	metrics_buf_free(&b);
}
END_TEST

START_TEST(test_job_status)
{
	struct election_snapshot s = base();
	json_error_t jerr;
	json_t *doc, *first;
	char *text;

	with_jobs(true);
	text = metrics_status_json(&s, &versions);
	with_jobs(false);
	doc = json_loads(text, 0, &jerr);
	ck_assert_ptr_nonnull(doc);
	ck_assert_int_eq(json_array_size(json_object_get(doc, "jobs")), 2);
	first = json_array_get(json_object_get(doc, "jobs"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(first, "job")), "refresh");
	ck_assert_str_eq(json_string_value(json_object_get(first, "schedule")), "*/15 * * * *");
	ck_assert_int_eq(json_integer_value(json_object_get(first, "pid")), 77);
	ck_assert_str_eq(json_string_value(json_object_get(first, "next_tick")),
			 "2024-05-01T12:15:00.000Z");
	ck_assert(json_is_null(json_object_get(json_array_get(json_object_get(doc, "jobs"), 1),
					       "schedule")));
	ck_assert(json_is_false(json_object_get(first, "paused")));
	ck_assert(json_is_null(json_object_get(first, "paused_by")));
	ck_assert(json_is_null(json_object_get(first, "paused_at")));
	first = json_array_get(json_object_get(doc, "jobs"), 1);
	ck_assert(json_is_true(json_object_get(first, "paused")));
	ck_assert_str_eq(json_string_value(json_object_get(first, "paused_by")),
			 "psql (role ops) from 10.0.0.7");
	ck_assert_str_eq(json_string_value(json_object_get(first, "paused_at")),
			 "2024-05-01T12:10:00Z");
	json_decref(doc);
	free(text);
}
END_TEST

/* ---- promtool samples -------------------------------------------------- */

/* `test_metrics --dump NAME` prints one sample for `make metrics-lint`. */
static int dump(const char *which)
{
	struct election_snapshot s = base();
	struct metrics_process p = { 1714564000, 1.5, 4096000, 8192000, 9, 1024 };
	struct metrics_buf b = { 0 };

	if (!strcmp(which, "leader")) {
		make_leader(&s);
		ping_histogram(&s);
		s.counters.lock_wait = s.counters.ping_duration;
	} else if (!strcmp(which, "odd")) {
		odd_names(&s);
	} else if (!strcmp(which, "jobs")) {
		make_leader(&s);
		with_jobs(true);
	} else if (strcmp(which, "standby")) {
		fprintf(stderr, "test_metrics: --dump leader|standby|odd|jobs\n");
		return 64;
	}
	if (metrics_prometheus(&s, &p, &versions, &b) < 0)
		return 70;
	fputs(b.data, stdout);
	metrics_buf_free(&b);
	return 0;
}

static Suite *metrics_suite(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("health");

	tcase_add_loop_test(tc, test_health, 0, N(health_rows));
	tcase_add_loop_test(tc, test_state_label, 0, N(label_rows));
	tcase_add_test(tc, test_state_one_hot);
	suite_add_tcase(s, tc);

	tc = tcase_create("text");
	tcase_add_loop_test(tc, test_text, 0, N(text_rows));
	tcase_add_test(tc, test_buckets_cumulative);
	tcase_add_test(tc, test_every_family_typed);
	tcase_add_test(tc, test_process_unknown_left_out);
	tcase_add_test(tc, test_buffer_appends);
	suite_add_tcase(s, tc);

	tc = tcase_create("status");
	tcase_add_loop_test(tc, test_status_json, 0, N(json_rows));
	tcase_add_test(tc, test_job_families);
	tcase_add_test(tc, test_job_status);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	SRunner *sr;
	int failed;

	if (argc == 3 && !strcmp(argv[1], "--dump"))
		return dump(argv[2]);
	sr = srunner_create(metrics_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
