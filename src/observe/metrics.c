/* metrics.c: Prometheus text and /status JSON from the election's snapshot. */
#include "metrics.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "jobs_retry.h"

#define PREFIX "pgleader_"

/* The faults that can end a term (the session broke, the server ended it,
 * pings went unanswered, an answer made no sense, a pooler appeared). They
 * are shown with 0 from the first scrape, so that increase() sees the first
 * loss; any other fault appears once it has counted. */
static const enum fault loss_reasons[] = {
	FAULT_CONNECTION, FAULT_TERMINATED, FAULT_PING_TIMEOUT,
	FAULT_PROTOCOL, FAULT_POOLER,
};

void metrics_buf_free(struct metrics_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

static bool reserve(struct metrics_buf *b, size_t more)
{
	size_t cap;
	char *p;

	if (b->failed)
		return false;
	if (b->len + more < b->cap)
		return true;
	for (cap = b->cap ? b->cap : 4096; cap <= b->len + more; cap *= 2)
		;
	p = realloc(b->data, cap);
	if (!p) {
		b->failed = true;
		return false;
	}
	b->data = p;
	b->cap = cap;
	return true;
}

static void append(struct metrics_buf *b, const char *s, size_t n)
{
	if (!reserve(b, n))
		return;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

__attribute__((format(printf, 2, 3)))
static void put(struct metrics_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->failed = true;
		return;
	}
	if (!reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

/* A label value as the text format wants it: \\, \" and \n escaped. */
static void put_label_value(struct metrics_buf *b, const char *s)
{
	size_t run;

	while (*s) {
		run = strcspn(s, "\\\"\n");
		append(b, s, run);
		s += run;
		if (*s == '\n')
			append(b, "\\n", 2);
		else if (*s)
			append(b, (const char[]){ '\\', *s }, 2);
		if (*s)
			s++;
	}
}

/* The shorter of %.15g and %.17g that reads back as the same number, so that
 * 0.005 stays 0.005. The C locale is never changed, so '.' is the point. */
static const char *fmt_double(double v, char buf[32])
{
	if (isnan(v))
		return "NaN";
	if (isinf(v))
		return v > 0 ? "+Inf" : "-Inf";
	snprintf(buf, 32, "%.15g", v);
	if (strtod(buf, NULL) != v)
		snprintf(buf, 32, "%.17g", v);
	return buf;
}

static void head(struct metrics_buf *b, const char *name, const char *type,
		 const char *help)
{
	put(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void gauge(struct metrics_buf *b, const char *name, const char *help,
		  double v)
{
	char num[32];

	head(b, name, "gauge", help);
	put(b, "%s %s\n", name, fmt_double(v, num));
}

/* Counters and other integers are printed exactly, not through a double. */
static void integer(struct metrics_buf *b, const char *name, const char *type,
		    const char *help, uint64_t v)
{
	head(b, name, type, help);
	put(b, "%s %" PRIu64 "\n", name, v);
}

/* name{k1="v1",k2="v2",...} 1 */
static void labelled_one(struct metrics_buf *b, const char *name,
			 const char *const kv[], size_t n)
{
	put(b, "%s{", name);
	for (size_t i = 0; i + 1 < n; i += 2) {
		put(b, "%s%s=\"", i ? "," : "", kv[i]);
		put_label_value(b, kv[i + 1]);
		append(b, "\"", 1);
	}
	append(b, "} 1\n", 4);
}

static void put_identity(struct metrics_buf *b, const struct election_snapshot *s,
			 const struct metrics_versions *v)
{
	char key[24];
	const char *build[] = {
		"version", v && v->version ? v->version : "",
		"libpq_version", v && v->libpq_version ? v->libpq_version : "",
	};
	char priority[16];
	const char *info[] = {
		"node_id", s->node_id ? s->node_id : "",
		"lock_key", key,
		"lock_name", s->lock_name ? s->lock_name : "",
		"priority", priority,
	};

	snprintf(key, sizeof(key), "%" PRId64, s->lock_key);
	snprintf(priority, sizeof(priority), "%d", s->priority);
	head(b, PREFIX "build_info", "gauge",
	     "pgleader's version and the libpq it runs with; always 1.");
	labelled_one(b, PREFIX "build_info", build, 4);
	head(b, PREFIX "info", "gauge",
	     "This node's id, the lock it competes for and its priority; always 1.");
	labelled_one(b, PREFIX "info", info, 8);
}

static void put_state(struct metrics_buf *b, const struct election_snapshot *s)
{
	char label[32];

	/* lock_key here too, so that sum by (lock_key) (pgleader_is_leader)
	 * counts the leaders of each lock, several fleets in one Prometheus */
	head(b, PREFIX "is_leader", "gauge",
	     "1 when this node holds the lock and its command runs or is due.");
	put(b, PREFIX "is_leader{lock_key=\"%" PRId64 "\"} %d\n", s->lock_key,
	    metrics_is_leader(s));
	head(b, PREFIX "state", "gauge",
	     "1 for the state of the election this node is in, 0 for the others.");
	for (int st = 0; st < ELECTION_STATE_COUNT; st++)
		put(b, PREFIX "state{state=\"%s\"} %d\n",
		    metrics_state_label((enum election_state)st, label, sizeof(label)),
		    st == (int)s->state);
	gauge(b, PREFIX "paused",
	      "1 when the operator paused the lock (pgleader pause), as this node last "
	      "read it.", s->paused);
	gauge(b, PREFIX "database_connected",
	      "1 when the lock connection to the database is up.",
	      s->db_connected);
	gauge(b, PREFIX "failsafe_members_agreeing",
	      "Members that agreed to the last failsafe claim round; 0 unless failsafe.",
	      s->state == ELECTION_FAILSAFE ? s->failsafe_agree : 0);
	gauge(b, PREFIX "failsafe_members_asked",
	      "Members asked in the last failsafe claim round; 0 unless failsafe.",
	      s->state == ELECTION_FAILSAFE ? s->failsafe_asked : 0);
	gauge(b, PREFIX "leader_since_timestamp_seconds",
	      "When this node became leader, since the Unix epoch; 0 unless leader.",
	      s->leader_since_wall);
	gauge(b, PREFIX "last_ping_reply_timestamp_seconds",
	      "When the database last answered a ping, since the Unix epoch; 0 if never.",
	      s->last_ping_reply_wall);
}

/* election_histogram counts per bucket; Prometheus wants them cumulative,
 * with +Inf equal to the count. */
static void histogram(struct metrics_buf *b, const char *name, const char *help,
		      const struct election_histogram *h)
{
	char num[32];
	uint64_t total = 0;

	head(b, name, "histogram", help);
	for (int i = 0; i < ELECTION_BUCKETS; i++) {
		total += h->counts[i];
		put(b, "%s_bucket{le=\"%s\"} %" PRIu64 "\n", name,
		    fmt_double(election_bucket_bounds[i], num), total);
	}
	total += h->counts[ELECTION_BUCKETS];
	put(b, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", name, total);
	put(b, "%s_sum %s\n", name, fmt_double(h->sum, num));
	put(b, "%s_count %" PRIu64 "\n", name, total);
}

static bool always_shown(int f)
{
	for (size_t i = 0; i < sizeof(loss_reasons) / sizeof(loss_reasons[0]); i++)
		if ((int)loss_reasons[i] == f)
			return true;
	return false;
}

static void put_leadership(struct metrics_buf *b, const struct election_counters *c)
{
	histogram(b, PREFIX "ping_duration_seconds",
		  "Time from sending a ping on the lock connection to its answer.",
		  &c->ping_duration);
	histogram(b, PREFIX "lock_wait_seconds",
		  "Time a standby waited until the lock was granted.",
		  &c->lock_wait);
	integer(b, PREFIX "acquisitions_total", "counter",
		"Times this node acquired the lock.", c->acquisitions);
	head(b, PREFIX "leadership_lost_total", "counter",
	     "Terms that ended without a release, by the fault that ended them.");
	for (int f = 0; f < FAULT_COUNT; f++)
		if (always_shown(f) || c->losses[f])
			put(b, PREFIX "leadership_lost_total{reason=\"%s\"} %" PRIu64 "\n",
			    fault_label((enum fault)f), c->losses[f]);
	integer(b, PREFIX "database_connect_failures_total", "counter",
		"Attempts to open the lock connection that failed.",
		c->connect_failures);
}

static void put_command(struct metrics_buf *b, const struct election_snapshot *s)
{
	const struct election_counters *c = &s->counters;

	gauge(b, PREFIX "command_running", "1 while the command's process runs.",
	      s->command_pid > 0);
	integer(b, PREFIX "command_starts_total", "counter",
		"Times the command was started.", c->command_starts);
	head(b, PREFIX "command_exits_total", "counter",
	     "Times the command ended, by how: success (0), failure (1-128) or "
	     "signal (killed).");
	for (int o = 0; o < ELECTION_OUTCOME_COUNT; o++)
		put(b, PREFIX "command_exits_total{outcome=\"%s\"} %" PRIu64 "\n",
		    election_outcome_label((enum election_outcome)o),
		    c->command_exits[o]);
	integer(b, PREFIX "command_kills_total", "counter",
		"Times the command's group got SIGKILL after the grace period.",
		c->command_kills);
	integer(b, PREFIX "fencing_token", "gauge",
		"The fencing token of the current or last term; 0 before the first.",
		s->fencing_token);
}

/* The names client libraries use, without the pgleader_ prefix, so that
 * existing dashboards find them. */
static void put_process(struct metrics_buf *b, const struct metrics_process *p)
{
	const struct {
		const char *name, *type, *help;
		double v;
	} rows[] = {
		{ "process_start_time_seconds", "gauge",
		  "Start time of the process since the Unix epoch in seconds.",
		  p->start_time_seconds },
		{ "process_cpu_seconds_total", "counter",
		  "Total user and system CPU time spent in seconds.", p->cpu_seconds },
		{ "process_resident_memory_bytes", "gauge",
		  "Resident memory size in bytes.", p->resident_bytes },
		{ "process_virtual_memory_bytes", "gauge",
		  "Virtual memory size in bytes.", p->virtual_bytes },
		{ "process_open_fds", "gauge",
		  "Number of open file descriptors.", (double)p->open_fds },
		{ "process_max_fds", "gauge",
		  "Maximum number of open file descriptors.", (double)p->max_fds },
	};
	char num[32];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		if (!(rows[i].v >= 0))
			continue;
		head(b, rows[i].name, rows[i].type, rows[i].help);
		put(b, "%s %s\n", rows[i].name, fmt_double(rows[i].v, num));
	}
}

static struct metrics_jobs jobs_source;

void metrics_set_jobs(const struct metrics_jobs *jobs)
{
	jobs_source = *jobs;
}

static size_t jobs_n(void)
{
	return jobs_source.count ? jobs_source.count(jobs_source.arg) : 0;
}

static void put_job_histogram(struct metrics_buf *b, const struct jobs_view *v)
{
	char num[32];
	uint64_t total = 0;

	for (int i = 0; i < JOBS_BUCKETS; i++) {
		total += v->duration_counts[i];
		put(b, PREFIX "job_run_duration_seconds_bucket{job=\"");
		put_label_value(b, v->name);
		put(b, "\",le=\"%s\"} %" PRIu64 "\n",
		    fmt_double(jobs_duration_bound(i), num), total);
	}
	total += v->duration_counts[JOBS_BUCKETS];
	put(b, PREFIX "job_run_duration_seconds_bucket{job=\"");
	put_label_value(b, v->name);
	put(b, "\",le=\"+Inf\"} %" PRIu64 "\n", total);
	put(b, PREFIX "job_run_duration_seconds_sum{job=\"");
	put_label_value(b, v->name);
	put(b, "\"} %s\n", fmt_double(v->duration_sum, num));
	put(b, PREFIX "job_run_duration_seconds_count{job=\"");
	put_label_value(b, v->name);
	put(b, "\"} %" PRIu64 "\n", total);
}

static double job_last_success(const struct jobs_view *v)
{
	return v->last_success;
}

static double job_next_tick(const struct jobs_view *v)
{
	return v->next_tick;
}

static double job_paused(const struct jobs_view *v)
{
	return v->paused ? 1 : 0;
}

/* One gauge per job, each family under its own header. */
static void put_job_gauge(struct metrics_buf *b, const char *name, const char *help,
			  double (*field)(const struct jobs_view *))
{
	struct jobs_view v;
	char num[32];

	head(b, name, "gauge", help);
	for (size_t i = 0; i < jobs_n(); i++) {
		jobs_source.view(jobs_source.arg, i, &v);
		put(b, "%s{job=\"", name);
		put_label_value(b, v.name);
		put(b, "\"} %s\n", fmt_double(field(&v), num));
	}
}

static uint64_t job_retries(const struct jobs_view *v)
{
	return v->retries;
}

static uint64_t job_triggers(const struct jobs_view *v)
{
	return v->triggers;
}

/* One counter per job, printed exactly, under its own header. */
static void put_job_counter(struct metrics_buf *b, const char *name, const char *help,
			    uint64_t (*field)(const struct jobs_view *))
{
	struct jobs_view v;

	head(b, name, "counter", help);
	for (size_t i = 0; i < jobs_n(); i++) {
		jobs_source.view(jobs_source.arg, i, &v);
		put(b, "%s{job=\"", name);
		put_label_value(b, v.name);
		put(b, "\"} %" PRIu64 "\n", field(&v));
	}
}

/* DESIGN 13: the retries and the runs asked for now started here, the
 * on_failure commands run here. */
static void put_job_failures(struct metrics_buf *b)
{
	struct jobs_view v;

	put_job_counter(b, PREFIX "job_retries_total",
			"Retry attempts (2 and later) of the job's ticks started by this node.",
			job_retries);
	put_job_counter(b, PREFIX "job_triggers_total",
			"Runs of the job asked for now (pgleader trigger) started by this node.",
			job_triggers);
	head(b, PREFIX "job_on_failure_total", "counter",
	     "The job's on_failure commands run by this node, by how they ended.");
	for (size_t i = 0; i < jobs_n(); i++) {
		jobs_source.view(jobs_source.arg, i, &v);
		for (int r = 0; r < JOBS_HOOK_RESULTS; r++) {
			put(b, PREFIX "job_on_failure_total{job=\"");
			put_label_value(b, v.name);
			put(b, "\",result=\"%s\"} %" PRIu64 "\n",
			    jobs_hook_result_name((enum jobs_hook_result)r), v.on_failure[r]);
		}
	}
}

static void put_jobs(struct metrics_buf *b)
{
	struct jobs_view v;

	if (!jobs_n())
		return;
	put_job_gauge(b, PREFIX "job_last_success_timestamp_seconds",
		      "End of the job's last run here that exited 0 (database clock); 0: none.",
		      job_last_success);
	put_job_gauge(b, PREFIX "job_next_tick_timestamp_seconds",
		      "The job's next tick while this node leads; 0 otherwise.",
		      job_next_tick);
	put_job_gauge(b, PREFIX "job_paused",
		      "1 while the job is paused (pgleader pause), as part of the lock or by name.",
		      job_paused);
	head(b, PREFIX "job_runs_total", "counter",
	     "The job's ticks handled by this node, by outcome.");
	for (size_t i = 0; i < jobs_n(); i++) {
		jobs_source.view(jobs_source.arg, i, &v);
		for (int o = 0; o < JOBS_OUTCOME_COUNT; o++) {
			put(b, PREFIX "job_runs_total{job=\"");
			put_label_value(b, v.name);
			put(b, "\",outcome=\"%s\"} %" PRIu64 "\n",
			    jobs_outcome_name((enum jobs_outcome)o), v.runs[o]);
		}
	}
	head(b, PREFIX "job_run_duration_seconds", "histogram",
	     "How long the job's runs here took.");
	for (size_t i = 0; i < jobs_n(); i++) {
		jobs_source.view(jobs_source.arg, i, &v);
		put_job_histogram(b, &v);
	}
	put_job_failures(b);
}

int metrics_prometheus(const struct election_snapshot *s,
		       const struct metrics_process *p,
		       const struct metrics_versions *v,
		       struct metrics_buf *out)
{
	put_identity(out, s, v);
	put_state(out, s);
	put_leadership(out, &s->counters);
	put_command(out, s);
	put_jobs(out);
	if (p)
		put_process(out, p);
	return out->failed ? -1 : 0;
}

/* In failsafe the node leads without the lock, by the members' consent. */
bool metrics_is_leader(const struct election_snapshot *s)
{
	return s->state == ELECTION_LEADER || s->state == ELECTION_FAILSAFE;
}

bool metrics_is_standby(const struct election_snapshot *s)
{
	return s->state == ELECTION_STANDBY && s->db_connected;
}

bool metrics_is_live(const struct election_snapshot *s)
{
	switch (s->state) {
	case ELECTION_INIT:
	case ELECTION_CONNECTING:
	case ELECTION_BACKOFF:
	case ELECTION_STANDBY:
	case ELECTION_LEADER:
	case ELECTION_FAILSAFE:
	case ELECTION_DEMOTING:
		return true;
	case ELECTION_SHUTTING_DOWN:
	case ELECTION_RELEASING:
	case ELECTION_DONE:
	case ELECTION_STATE_COUNT:
		break;
	}
	return false;
}

bool metrics_is_ready(const struct election_snapshot *s)
{
	return s->db_connected && (metrics_is_leader(s) || metrics_is_standby(s));
}

const char *metrics_state_label(enum election_state st, char *buf, size_t len)
{
	const char *name = election_state_name(st);
	size_t i;

	if (len == 0)
		return "";
	for (i = 0; name[i] && i + 1 < len; i++)
		buf[i] = isalnum((unsigned char)name[i])
			? (char)tolower((unsigned char)name[i]) : '_';
	buf[i] = '\0';
	return buf;
}

/* A JSON string; bytes that are not UTF-8 (a node id from a host name
 * could have them) become '?', since jansson refuses them. */
static json_t *jstr(const char *s)
{
	json_t *j;
	char *copy;

	if (!s)
		return json_null();
	j = json_string(s);
	if (j || !(copy = strdup(s)))
		return j;
	for (char *c = copy; *c; c++)
		if ((unsigned char)*c >= 0x80)
			*c = '?';
	j = json_string(copy);
	free(copy);
	return j;
}

/* 2024-05-01T12:00:00.250Z, or null for "never". */
static json_t *jtime(double wall)
{
	char buf[40];
	struct tm tm;
	time_t t;
	size_t n;

	if (!(wall > 0))
		return json_null();
	t = (time_t)floor(wall);
	if (!gmtime_r(&t, &tm))
		return json_null();
	n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, sizeof(buf) - n, ".%03dZ",
		 (int)((wall - floor(wall)) * 1000));
	return json_string(buf);
}

/* 64-bit numbers as strings: JavaScript's doubles lose their low bits. */
static json_t *jint64(int64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRId64, v);
	return json_string(buf);
}

static json_t *juint64(uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return json_string(buf);
}

/* The operator controls (DESIGN 11) as this node last read them. */
static void fill_controls(json_t *o, const struct election_snapshot *s)
{
	json_object_set_new(o, "priority", json_integer(s->priority));
	json_object_set_new(o, "paused", s->paused
			    ? json_pack("{s:o, s:o}", "by", jstr(s->paused_by),
					"at", jstr(s->paused_at)) : json_null());
	json_object_set_new(o, "switchover", s->switchover
			    ? json_pack("{s:o, s:o, s:o, s:o}",
					"leader", jstr(s->switchover_leader),
					"target", s->switchover_target[0]
					? jstr(s->switchover_target) : json_null(),
					"asked_by", jstr(s->switchover_by),
					"asked_at", jstr(s->switchover_at)) : json_null());
	json_object_set_new(o, "holding_off_until",
			    jtime(s->hold_until > 0 ? s->hold_until + s->now_wall - s->now : 0));
}

static void fill_status(json_t *o, const struct election_snapshot *s,
			const struct metrics_versions *v)
{
	char label[32];

	json_object_set_new(o, "node_id", jstr(s->node_id));
	json_object_set_new(o, "state",
			    jstr(metrics_state_label(s->state, label, sizeof(label))));
	json_object_set_new(o, "since", jtime(s->since_wall));
	json_object_set_new(o, "lock_key", jint64(s->lock_key));
	json_object_set_new(o, "lock_name", jstr(s->lock_name));
	json_object_set_new(o, "fencing_token", s->fencing_token
			    ? juint64(s->fencing_token) : json_null());
	json_object_set_new(o, "term", json_integer((json_int_t)s->term));
	json_object_set_new(o, "command_pid", s->command_pid > 0
			    ? json_integer(s->command_pid) : json_null());
	json_object_set_new(o, "last_ping_reply_age_seconds", s->last_ping_reply > 0
			    ? json_real(s->now - s->last_ping_reply) : json_null());
	json_object_set_new(o, "database_connected", json_boolean(s->db_connected));
	json_object_set_new(o, "failsafe", s->state == ELECTION_FAILSAFE
			    ? json_pack("{s:i, s:i}", "agree", s->failsafe_agree,
					"asked", s->failsafe_asked) : json_null());
	json_object_set_new(o, "version", jstr(v && v->version ? v->version : ""));
	fill_controls(o, s);
}

static json_t *status_jobs(void)
{
	json_t *a = json_array();
	struct jobs_view v;

	for (size_t i = 0; a && i < jobs_n(); i++) {
		jobs_source.view(jobs_source.arg, i, &v);
		json_array_append_new(a, json_pack(
			"{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
			"job", jstr(v.name), "schedule", jstr(v.schedule),
			"pid", v.pid > 0 ? json_integer(v.pid) : json_null(),
			"next_tick", jtime(v.next_tick),
			"last_tick", jtime(v.last_tick),
			"last_success", jtime(v.last_success),
			"paused", json_boolean(v.paused),
			"paused_by", jstr(v.paused_by), "paused_at", jstr(v.paused_at)));
	}
	return a;
}

char *metrics_status_json(const struct election_snapshot *s,
			  const struct metrics_versions *v)
{
	json_t *o = json_object();
	char *text, *nl;
	size_t n;

	if (!o)
		return NULL;
	fill_status(o, s, v);
	if (jobs_n())
		json_object_set_new(o, "jobs", status_jobs());
	text = json_dumps(o, JSON_INDENT(2));
	json_decref(o);
	if (!text)
		return NULL;
	/* A final newline, for a person reading curl's output. */
	n = strlen(text);
	nl = realloc(text, n + 2);
	if (!nl) {
		free(text);
		return NULL;
	}
	memcpy(nl + n, "\n", 2);
	return nl;
}
