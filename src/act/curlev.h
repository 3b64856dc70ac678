/* curlev.h: libcurl's multi interface driven by a libev loop: no thread of ours, no blocking call. */
#ifndef PGLEADER_CURLEV_H
#define PGLEADER_CURLEV_H

#include <curl/curl.h>

struct ev_loop;
struct curlev;

/* A transfer ended: easy is already out of the multi handle and the
 * callee's to clean up. Called from the loop, never from within
 * curlev_add or curlev_remove; it must not free the curlev. */
typedef void (*curlev_done_fn)(void *arg, CURL *easy, CURLcode result);

/* NULL when libcurl cannot be set up. */
struct curlev *curlev_new(struct ev_loop *loop, curlev_done_fn done, void *arg);

/* Starts easy's transfer on the loop: 0, or -1 (easy left to the caller). */
int curlev_add(struct curlev *c, CURL *easy);

/* Ends easy's transfer without a done call; the caller cleans easy up. */
void curlev_remove(struct curlev *c, CURL *easy);

/* Every transfer must have been removed or be done; NULL is a no-op. */
void curlev_free(struct curlev *c);

#endif
