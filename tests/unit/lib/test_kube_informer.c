/*
 * test_kube_informer.c - the informer's state machine against a scripted
 * in-process HTTP server: paged list, watch events split across tiny
 * chunks, bookmarks, a clean end of stream (re-watch from the last RV), an
 * ERROR 410 event and an HTTP 410 (relist, with synthetic deletes for
 * vanished objects), an oversized event line (relist), a 500 on list
 * (backoff) and has_synced; an idle loop with a quiet watch does not wake.
 * Also the work queue fed from informer events.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tau/clock.h"
#include "tau/error.h"
#include "tau/json.h"
#include "tau/kube.h"
#include "tau/kube_informer.h"
#include "tau/workqueue.h"

/* ---- scripted server ---- */

#define MAX_REQ 64

static pthread_mutex_t srv_lock = PTHREAD_MUTEX_INITIALIZER;
static char requests[MAX_REQ][512];
static int n_requests;
static int list_calls, watch_calls;

#define OBJ(name, rv)                                                                              \
	"{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name             \
	"\",\"namespace\":\"ns\",\"resourceVersion\":\"" rv "\"}}"

static int send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void reply(int fd, int code, const char *body)
{
	char hdr[256];

	snprintf(hdr, sizeof(hdr),
	         "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
	         code, strlen(body));
	send_all(fd, hdr, strlen(hdr));
	send_all(fd, body, strlen(body));
}

/* A watch response: headers, then `body` in 7-byte chunks, then close. */
static void stream(int fd, const char *body, bool hang)
{
	static const char hdr[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	                          "Connection: close\r\n\r\n";
	size_t n = strlen(body);

	send_all(fd, hdr, sizeof(hdr) - 1);
	for (size_t i = 0; i < n; i += 7) {
		send_all(fd, body + i, n - i < 7 ? n - i : 7);
		usleep(200);
	}
	if (hang) {
		char tmp[64];

		while (recv(fd, tmp, sizeof(tmp), 0) > 0)
			;
	}
}

static void handle(int fd, const char *req)
{
	bool watch = strstr(req, "watch=true") != NULL;
	int l, w;

	pthread_mutex_lock(&srv_lock);
	if (n_requests < MAX_REQ)
		snprintf(requests[n_requests++], sizeof(requests[0]), "%.*s",
		         (int)strcspn(req, "\r"), req);
	l = watch ? list_calls : list_calls++;
	w = watch ? watch_calls++ : watch_calls;
	pthread_mutex_unlock(&srv_lock);
	if (!watch) {
		if (l == 0)
			reply(fd, 500,
			      "{\"kind\":\"Status\",\"code\":500,\"reason\":\"InternalError\","
			      "\"message\":\"boom\"}");
		else if (l == 1)
			reply(fd, 200,
			      "{\"kind\":\"ConfigMapList\",\"metadata\":{\"resourceVersion\":"
			      "\"10\",\"continue\":\"p2\"},\"items\":[" OBJ("a", "1") "," OBJ(
			              "b", "2") "]}");
		else if (l == 2)
			reply(fd, 200,
			      "{\"kind\":\"ConfigMapList\",\"metadata\":{\"resourceVersion\":"
			      "\"10\"},\"items\":[" OBJ("c", "3") "]}");
		else
			reply(fd, 200,
			      "{\"kind\":\"ConfigMapList\",\"metadata\":{\"resourceVersion\":"
			      "\"15\"},\"items\":[" OBJ("a", "12") "," OBJ("d", "11") "," OBJ(
			              "e", "15") "]}");
		return;
	}
	if (w == 0) {
		stream(fd,
		       "{\"type\":\"ADDED\",\"object\":" OBJ(
		               "d",
		               "11") "}\n"
		                     "{\"type\":\"MODIFIED\",\"object\":" OBJ(
		                             "a",
		                             "12") "}\r\n"
		                                   "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":"
		                                   "\"ConfigMap\",\"apiVersion\":\"v1\","
		                                   "\"metadata\":{\"resourceVersion\":\"13\"}}}\n"
		                                   "{\"type\":\"DELETED\",\"object\":" OBJ(
		                                           "b", "14") "}\n",
		       false);
	} else if (w == 1) {
		stream(fd,
		       "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
		       "\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource "
		       "version: "
		       "14 (20)\",\"reason\":\"Expired\",\"code\":410}}\n",
		       false);
	} else if (w == 2) {
		reply(fd, 410,
		      "{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\",\"message\":"
		      "\"The resourceVersion for the provided watch is too old.\"}");
	} else if (w == 3) {
		/* One event line larger than the client's line cap (4 KiB in this test). */
		static char big[16384];

		memset(big, ' ', sizeof(big) - 2);
		memcpy(big, "{\"type\":\"MODIFIED\",\"object\":", 28);
		big[sizeof(big) - 2] = '\n';
		big[sizeof(big) - 1] = '\0';
		stream(fd, big, false);
	} else {
		stream(fd, "", true);
	}
}

static void *conn_main(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char req[8192];
	size_t have = 0;

	for (;;) {
		char *end;
		ssize_t n = recv(fd, req + have, sizeof(req) - 1 - have, 0);
		bool watch;

		if (n <= 0)
			break;
		have += (size_t)n;
		req[have] = '\0';
		end = strstr(req, "\r\n\r\n");
		if (end == NULL)
			continue;
		*end = '\0';
		watch = strstr(req, "watch=true") != NULL;
		handle(fd, req);
		if (watch)
			break;
		have -= (size_t)(end + 4 - req);
		memmove(req, end + 4, have);
	}
	close(fd);
	return NULL;
}

static void *server_main(void *arg)
{
	int lfd = (int)(intptr_t)arg;

	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		pthread_t th;

		if (fd < 0)
			break;
		pthread_create(&th, NULL, conn_main, (void *)(intptr_t)fd);
		pthread_detach(th);
	}
	return NULL;
}

static int start_server(void)
{
	struct sockaddr_in addr = {.sin_family = AF_INET,
	                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(addr);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	pthread_t th;

	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	assert_int_equal(listen(lfd, 16), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&addr, &alen), 0);
	pthread_create(&th, NULL, server_main, (void *)(intptr_t)lfd);
	pthread_detach(th);
	return ntohs(addr.sin_port);
}

/* ---- recording handlers ---- */

static char log_buf[4096];
static tau_workqueue *queue;

static void record(const char *what, const cJSON *obj)
{
	const char *name = "?", *rv = "?";
	char line[64];

	tau_json_get_string(&name, obj, "metadata.name");
	tau_json_get_string(&rv, obj, "metadata.resourceVersion");
	snprintf(line, sizeof(line), "%s %s@%s;", what, name, rv);
	strncat(log_buf, line, sizeof(log_buf) - strlen(log_buf) - 1);
	if (queue) {
		char key[64];

		snprintf(key, sizeof(key), "ns/%s", name);
		tau_workqueue_add(queue, key);
	}
}

static void h_add(void *arg, const cJSON *o)
{
	(void)arg;
	record("add", o);
}

static void h_update(void *arg, const cJSON *old, const cJSON *o)
{
	(void)arg;
	record("upd-from", old);
	record("upd", o);
}

static void h_delete(void *arg, const cJSON *o)
{
	(void)arg;
	record("del", o);
}

static int synced_calls;

static void h_synced(void *arg)
{
	(void)arg;
	synced_calls++;
}

/* Marks every object, so the test can see the cache holds transformed objects. */
static void h_transform(void *arg, cJSON *obj)
{
	(void)arg;
	cJSON_AddBoolToObject(obj, "transformed", 1);
}

static void test_scripted_server(void **state)
{
	tau_kube_informer_options io = {.namespace = "ns",
	                                .page_size = 2,
	                                .watch_timeout_min_s = 30,
	                                .watch_timeout_max_s = 60,
	                                .backoff_initial_ms = 20,
	                                .backoff_cap_ms = 100,
	                                .transform = h_transform,
	                                .on_synced = h_synced};
	tau_kube_handlers h = {h_add, h_update, h_delete, NULL};
	tau_kube_config *cfg = NULL;
	tau_kube_client *c = NULL;
	tau_kube_loop *loop = NULL;
	tau_kube_informer *inf = NULL;
	tau_kube_informer_stats st;
	cJSON *snap = NULL;
	char rv[32];
	uint64_t end;
	int port = start_server();

	(void)state;
	assert_int_equal(tau_workqueue_new(&queue, NULL), 0);
	assert_int_equal(tau_kube_config_new(&cfg), 0);
	cfg->server = malloc(64);
	snprintf(cfg->server, 64, "http://127.0.0.1:%d", port);
	cfg->watch_line_cap = 4096;
	assert_int_equal(tau_kube_client_new(&c, cfg), 0);
	assert_int_equal(tau_kube_loop_new(&loop, c), 0);
	assert_int_equal(tau_kube_informer_new(&inf, loop, &tau_kube_res_configmaps, &io, &h), 0);
	assert_false(tau_kube_informer_has_synced(inf));
	tau_kube_informer_start(inf);
	/* Run until the fifth watch (the quiet one) is open. */
	end = tau_clock_mono_ms() + 30000;
	for (;;) {
		int w;

		tau_kube_loop_run_for(loop, 50);
		pthread_mutex_lock(&srv_lock);
		w = watch_calls;
		pthread_mutex_unlock(&srv_lock);
		if (w >= 5 || tau_clock_mono_ms() > end)
			break;
	}
	tau_kube_loop_run_for(loop, 100);
	assert_true(tau_kube_informer_has_synced(inf));
	/* The quiet watch is open and nothing is due: an idle loop sleeps through the whole
	 * window and wakes once, when the window ends (no periodic tick of its own). */
	{
		uint64_t w0 = tau_kube_loop_wakeups(loop);

		tau_kube_loop_run_for(loop, 2500);
		assert_true(tau_kube_loop_wakeups(loop) - w0 <= 1);
	}
	tau_kube_informer_stats_get(inf, &st);
	tau_kube_informer_last_rv(inf, rv, sizeof(rv));
	assert_string_equal(rv, "15");
	/* 1 failed list, then 2 pages; 3 relists (ERROR 410, HTTP 410, oversized line). */
	assert_int_equal(st.lists, 4);
	assert_int_equal(synced_calls, 4); /* once per complete list */
	assert_int_equal(st.list_pages, 5);
	assert_int_equal(st.failures, 1);
	assert_int_equal(st.expired, 2);
	assert_int_equal(st.bookmarks, 1);
	assert_int_equal(st.events, 3);
	assert_int_equal(st.synthetic_deletes, 1);              /* c vanished during the relist */
	assert_string_equal(log_buf, "add a@1;add b@2;add c@3;" /* first list */
	                             "add d@11;upd-from a@1;upd a@12;" /* watch 1 */
	                             "del b@14;"                       /* watch 1 */
	                             "add e@15;del c@3;");             /* relist after 410 */
	assert_int_equal(tau_kube_informer_snapshot(&snap, inf), 0);
	assert_int_equal(cJSON_GetArraySize(snap), 3);
	for (int i = 0; i < 3; i++)
		assert_true(cJSON_IsTrue(
		        cJSON_GetObjectItem(cJSON_GetArrayItem(snap, i), "transformed")));
	assert_string_equal(cJSON_GetArrayItem(snap, 0)->child->next->next->child->valuestring,
	                    "a");
	cJSON_Delete(snap);
	/* The re-watch after a clean end resumed from the last RV, bookmarks included. */
	pthread_mutex_lock(&srv_lock);
	{
		int seen_watch = 0;

		for (int i = 0; i < n_requests; i++) {
			if (strstr(requests[i], "watch=true") == NULL) {
				assert_null(strstr(requests[i], "resourceVersion="));
				continue;
			}
			assert_non_null(strstr(requests[i], "allowWatchBookmarks=true"));
			if (seen_watch == 0)
				assert_non_null(strstr(requests[i], "resourceVersion=10&"));
			if (seen_watch == 1)
				assert_non_null(strstr(requests[i], "resourceVersion=14&"));
			if (seen_watch >= 2)
				assert_non_null(strstr(requests[i], "resourceVersion=15&"));
			seen_watch++;
		}
		/* The second page asked with the continue token. */
		assert_non_null(strstr(requests[2], "continue=p2"));
		assert_non_null(strstr(requests[1], "limit=2"));
	}
	pthread_mutex_unlock(&srv_lock);
	/* Events fed a work queue: each key once, however many events it had. */
	assert_int_equal(tau_workqueue_len(queue), 5);
	tau_kube_informer_free(inf);
	tau_kube_loop_free(loop);
	tau_kube_client_free(c);
	tau_kube_config_free(cfg);
	tau_workqueue_free(queue);
	queue = NULL;
}

/* free_all joins a running loop and frees the informers its owner did not. */
static void test_loop_free_all(void **state)
{
	tau_kube_informer_options io = {.namespace = "ns"};
	tau_kube_handlers h = {0};
	tau_kube_config *cfg = NULL;
	tau_kube_client *c = NULL;
	tau_kube_loop *loop = NULL;
	tau_kube_informer *a = NULL, *b = NULL;

	(void)state;
	tau_kube_loop_free_all(NULL);
	assert_int_equal(tau_kube_config_new(&cfg), 0);
	cfg->server = strdup("http://127.0.0.1:1");
	assert_int_equal(tau_kube_client_new(&c, cfg), 0);
	assert_int_equal(tau_kube_loop_new(&loop, c), 0);
	assert_int_equal(tau_kube_informer_new(&a, loop, &tau_kube_res_configmaps, &io, &h), 0);
	assert_int_equal(tau_kube_informer_new(&b, loop, &tau_kube_res_configmaps, &io, &h), 0);
	assert_int_equal(tau_kube_loop_start_thread(loop), 0);
	/* leaks would fail the ASan build, which runs every unit test */
	tau_kube_loop_free_all(loop);
	tau_kube_client_free(c);
	tau_kube_config_free(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_scripted_server),
	        cmocka_unit_test(test_loop_free_all),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
