/* dynlib.c: libmicrohttpd and libcurl loaded at run time, only when the
 * HTTP server (--http-addr) or failsafe is configured. A node without them
 * keeps their pages and those of the libraries they pull in (nghttp2,
 * libssh2, librtmp, brotli, libpsl: about 0.6 MiB) out of its resident
 * memory. libsystemd likewise, only under a service manager that asks for
 * notifications (NOTIFY_SOCKET, WATCHDOG_USEC) or a journal that takes
 * native lines: loading it and what it pulls in (libgcrypt, liblzma,
 * libzstd, liblz4, libcap) costs every other start, a one-shot's too, about
 * 0.7 ms of CPU. The functions pgleader calls are defined here under their own
 * names and forward to the loaded library, so http.c, curlev.c and
 * failsafe.c call them as usual; the unit tests link the libraries
 * directly instead of this file. The package names both libraries as
 * dependencies, since the linker no longer records them. */
#define CURL_DISABLE_TYPECHECK /* the real prototypes, not the macros */
#define SD_JOURNAL_SUPPRESS_LOCATION /* the same for sd_journal_sendv */
#include "dynlib.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>

#ifndef PGLEADER_MHD_SONAME
#define PGLEADER_MHD_SONAME "libmicrohttpd.so.12"
#endif
#ifndef PGLEADER_CURL_SONAME
#define PGLEADER_CURL_SONAME "libcurl.so.4"
#endif
#ifndef PGLEADER_SYSTEMD_SONAME
#define PGLEADER_SYSTEMD_SONAME "libsystemd.so.0"
#endif

struct sym {
	const char *name;
	void **fn;
};

/* A function pointer through void *: dlsym's way, which POSIX requires to
 * work. */
#define SYM(table, f) { #f, (void **)&table.f }

static struct {
	bool loaded;
	__typeof__(MHD_start_daemon_va) *start_daemon_va;
	__typeof__(MHD_stop_daemon) *stop_daemon;
	__typeof__(MHD_run) *run;
	__typeof__(MHD_get_timeout) *get_timeout;
	__typeof__(MHD_get_daemon_info) *get_daemon_info;
	__typeof__(MHD_get_connection_info) *get_connection_info;
	__typeof__(MHD_get_version) *get_version;
	__typeof__(MHD_lookup_connection_value) *lookup_connection_value;
	__typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
	__typeof__(MHD_add_response_header) *add_response_header;
	__typeof__(MHD_queue_response) *queue_response;
	__typeof__(MHD_destroy_response) *destroy_response;
	__typeof__(MHD_http_unescape) *http_unescape;
} mhd;

static struct {
	bool loaded;
	__typeof__(curl_global_init) *global_init;
	__typeof__(curl_global_cleanup) *global_cleanup;
	__typeof__(curl_easy_init) *easy_init;
	__typeof__(curl_easy_cleanup) *easy_cleanup;
	__typeof__(curl_easy_setopt) *easy_setopt;
	__typeof__(curl_easy_getinfo) *easy_getinfo;
	__typeof__(curl_easy_strerror) *easy_strerror;
	__typeof__(curl_multi_init) *multi_init;
	__typeof__(curl_multi_cleanup) *multi_cleanup;
	__typeof__(curl_multi_setopt) *multi_setopt;
	__typeof__(curl_multi_add_handle) *multi_add_handle;
	__typeof__(curl_multi_remove_handle) *multi_remove_handle;
	__typeof__(curl_multi_assign) *multi_assign;
	__typeof__(curl_multi_info_read) *multi_info_read;
	__typeof__(curl_multi_socket_action) *multi_socket_action;
	__typeof__(curl_slist_append) *slist_append;
	__typeof__(curl_slist_free_all) *slist_free_all;
} cu;

static struct {
	bool loaded, failed;
	char why[256];
	__typeof__(sd_notify) *notify;
	__typeof__(sd_watchdog_enabled) *watchdog_enabled;
	__typeof__(sd_journal_sendv) *journal_sendv;
} sd;

static bool load(const char *soname, const char *prefix, const struct sym *syms,
		 size_t n, char *err, size_t errlen)
{
	char name[64];
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		snprintf(err, errlen, "cannot load %s: %s", soname, dlerror());
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s%s", prefix, syms[i].name);
		*syms[i].fn = dlsym(h, name);
		if (!*syms[i].fn) {
			snprintf(err, errlen, "cannot load %s: it has no %s", soname, name);
			dlclose(h);
			return false;
		}
	}
	return true; /* never closed: its functions are used until exit */
}

bool dynlib_load_mhd(char *err, size_t errlen)
{
	const struct sym syms[] = {
		SYM(mhd, start_daemon_va), SYM(mhd, stop_daemon), SYM(mhd, run),
		SYM(mhd, get_timeout), SYM(mhd, get_daemon_info),
		SYM(mhd, get_connection_info),
		SYM(mhd, get_version), SYM(mhd, lookup_connection_value),
		SYM(mhd, create_response_from_buffer),
		SYM(mhd, add_response_header), SYM(mhd, queue_response),
		SYM(mhd, destroy_response), SYM(mhd, http_unescape),
	};

	if (!mhd.loaded)
		mhd.loaded = load(PGLEADER_MHD_SONAME, "MHD_", syms,
				  sizeof(syms) / sizeof(syms[0]), err, errlen);
	return mhd.loaded;
}

bool dynlib_load_curl(char *err, size_t errlen)
{
	const struct sym syms[] = {
		SYM(cu, global_init), SYM(cu, global_cleanup), SYM(cu, easy_init),
		SYM(cu, easy_cleanup), SYM(cu, easy_setopt), SYM(cu, easy_getinfo),
		SYM(cu, easy_strerror), SYM(cu, multi_init), SYM(cu, multi_cleanup),
		SYM(cu, multi_setopt), SYM(cu, multi_add_handle),
		SYM(cu, multi_remove_handle), SYM(cu, multi_assign),
		SYM(cu, multi_info_read), SYM(cu, multi_socket_action),
		SYM(cu, slist_append), SYM(cu, slist_free_all),
	};

	if (!cu.loaded)
		cu.loaded = load(PGLEADER_CURL_SONAME, "curl_", syms,
				 sizeof(syms) / sizeof(syms[0]), err, errlen);
	return cu.loaded;
}

bool dynlib_load_systemd(char *err, size_t errlen)
{
	const struct sym syms[] = {
		SYM(sd, notify), SYM(sd, watchdog_enabled), SYM(sd, journal_sendv),
	};

	/* tried once, not again for every line */
	if (!sd.loaded && !sd.failed) {
		sd.loaded = load(PGLEADER_SYSTEMD_SONAME, "sd_", syms,
				 sizeof(syms) / sizeof(syms[0]), sd.why, sizeof(sd.why));
		sd.failed = !sd.loaded;
	}
	if (sd.failed)
		snprintf(err, errlen, "%s", sd.why);
	return sd.loaded;
}

static bool systemd_ready(void)
{
	char err[8];

	return dynlib_load_systemd(err, sizeof(err));
}

/* ---- libmicrohttpd ------------------------------------------------------ */

struct MHD_Daemon *MHD_start_daemon(unsigned int flags, uint16_t port,
				    MHD_AcceptPolicyCallback apc, void *apc_cls,
				    MHD_AccessHandlerCallback dh, void *dh_cls, ...)
{
	struct MHD_Daemon *d;
	va_list ap;

	va_start(ap, dh_cls);
	d = mhd.start_daemon_va(flags, port, apc, apc_cls, dh, dh_cls, ap);
	va_end(ap);
	return d;
}

void MHD_stop_daemon(struct MHD_Daemon *daemon)
{
	mhd.stop_daemon(daemon);
}

enum MHD_Result MHD_run(struct MHD_Daemon *daemon)
{
	return mhd.run(daemon);
}

enum MHD_Result MHD_get_timeout(struct MHD_Daemon *daemon,
				MHD_UNSIGNED_LONG_LONG *timeout)
{
	return mhd.get_timeout(daemon, timeout);
}

/* pgleader asks only for what takes no further argument */
const union MHD_DaemonInfo *MHD_get_daemon_info(struct MHD_Daemon *daemon,
						enum MHD_DaemonInfoType info_type, ...)
{
	return mhd.get_daemon_info(daemon, info_type);
}

/* the same: a client's address, socket context or descriptor */
const union MHD_ConnectionInfo *MHD_get_connection_info(struct MHD_Connection *connection,
							enum MHD_ConnectionInfoType info_type,
							...)
{
	return mhd.get_connection_info(connection, info_type);
}

/* --version shows the version of the library that would be loaded */
const char *MHD_get_version(void)
{
	char err[8];

	return dynlib_load_mhd(err, sizeof(err)) ? mhd.get_version() : NULL;
}

const char *MHD_lookup_connection_value(struct MHD_Connection *connection,
					enum MHD_ValueKind kind, const char *key)
{
	return mhd.lookup_connection_value(connection, kind, key);
}

struct MHD_Response *MHD_create_response_from_buffer(size_t size, void *buffer,
						     enum MHD_ResponseMemoryMode mode)
{
	return mhd.create_response_from_buffer(size, buffer, mode);
}

enum MHD_Result MHD_add_response_header(struct MHD_Response *response,
					const char *header, const char *content)
{
	return mhd.add_response_header(response, header, content);
}

enum MHD_Result MHD_queue_response(struct MHD_Connection *connection,
				   unsigned int status_code,
				   struct MHD_Response *response)
{
	return mhd.queue_response(connection, status_code, response);
}

void MHD_destroy_response(struct MHD_Response *response)
{
	mhd.destroy_response(response);
}

size_t MHD_http_unescape(char *val)
{
	return mhd.http_unescape(val);
}

/* ---- libcurl ------------------------------------------------------------ */

CURLcode curl_global_init(long flags)
{
	return cu.global_init(flags);
}

void curl_global_cleanup(void)
{
	cu.global_cleanup();
}

CURL *curl_easy_init(void)
{
	return cu.easy_init();
}

void curl_easy_cleanup(CURL *curl)
{
	cu.easy_cleanup(curl);
}

/* An option's one argument, read as the type its number says (curl.h:
 * CURLOPTTYPE_*, in steps of 10000) and passed on as that type. */
#define FORWARD_OPTION(call, handle, option, ap) do { \
	switch ((option) / 10000) { \
	case 0: return call(handle, option, va_arg(ap, long)); \
	case 3: return call(handle, option, va_arg(ap, curl_off_t)); \
	default: return call(handle, option, va_arg(ap, void *)); \
	} \
} while (0)

static CURLcode easy_setopt_va(CURL *curl, CURLoption option, va_list ap)
{
	FORWARD_OPTION(cu.easy_setopt, curl, option, ap);
}

CURLcode curl_easy_setopt(CURL *curl, CURLoption option, ...)
{
	CURLcode rc;
	va_list ap;

	va_start(ap, option);
	rc = easy_setopt_va(curl, option, ap);
	va_end(ap);
	return rc;
}

/* every CURLINFO takes a pointer */
CURLcode curl_easy_getinfo(CURL *curl, CURLINFO info, ...)
{
	CURLcode rc;
	va_list ap;

	va_start(ap, info);
	rc = cu.easy_getinfo(curl, info, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

const char *curl_easy_strerror(CURLcode code)
{
	return cu.easy_strerror(code);
}

CURLM *curl_multi_init(void)
{
	return cu.multi_init();
}

CURLMcode curl_multi_cleanup(CURLM *multi_handle)
{
	return cu.multi_cleanup(multi_handle);
}

static CURLMcode multi_setopt_va(CURLM *multi, CURLMoption option, va_list ap)
{
	FORWARD_OPTION(cu.multi_setopt, multi, option, ap);
}

CURLMcode curl_multi_setopt(CURLM *multi_handle, CURLMoption option, ...)
{
	CURLMcode rc;
	va_list ap;

	va_start(ap, option);
	rc = multi_setopt_va(multi_handle, option, ap);
	va_end(ap);
	return rc;
}

CURLMcode curl_multi_add_handle(CURLM *multi_handle, CURL *curl_handle)
{
	return cu.multi_add_handle(multi_handle, curl_handle);
}

CURLMcode curl_multi_remove_handle(CURLM *multi_handle, CURL *curl_handle)
{
	return cu.multi_remove_handle(multi_handle, curl_handle);
}

CURLMcode curl_multi_assign(CURLM *multi_handle, curl_socket_t sockfd, void *sockp)
{
	return cu.multi_assign(multi_handle, sockfd, sockp);
}

CURLMsg *curl_multi_info_read(CURLM *multi_handle, int *msgs_in_queue)
{
	return cu.multi_info_read(multi_handle, msgs_in_queue);
}

CURLMcode curl_multi_socket_action(CURLM *multi_handle, curl_socket_t s,
				   int ev_bitmask, int *running_handles)
{
	return cu.multi_socket_action(multi_handle, s, ev_bitmask, running_handles);
}

struct curl_slist *curl_slist_append(struct curl_slist *list, const char *data)
{
	return cu.slist_append(list, data);
}

void curl_slist_free_all(struct curl_slist *list)
{
	cu.slist_free_all(list);
}

/* ---- libsystemd --------------------------------------------------------- */

/* Without NOTIFY_SOCKET there is nobody to tell: 0, as libsystemd answers,
 * and nothing loaded. */
int sd_notify(int unset_environment, const char *state)
{
	if (!getenv("NOTIFY_SOCKET"))
		return 0;
	return systemd_ready() ? sd.notify(unset_environment, state) : -ENOSYS;
}

/* the same without WATCHDOG_USEC: no watchdog */
int sd_watchdog_enabled(int unset_environment, uint64_t *usec)
{
	if (!getenv("WATCHDOG_USEC"))
		return 0;
	return systemd_ready() ? sd.watchdog_enabled(unset_environment, usec)
			       : -ENOSYS;
}

/* log.c calls it only when stderr is journald's socket, and writes the line
 * to stderr when it fails */
int sd_journal_sendv(const struct iovec *iov, int n)
{
	return systemd_ready() ? sd.journal_sendv(iov, n) : -ENOSYS;
}
