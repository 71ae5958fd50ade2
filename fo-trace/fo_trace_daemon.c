// SPDX-License-Identifier: MIT
/*
 * fo_trace_daemon.c - fo-trace's contact with failoverd: its control
 * socket (the daemon's pid, a drill request and its reply) and the event
 * files a run is read back from (--events).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include "fo_trace_tool.h"

static int connect_socket(const char *path, char *err, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 5 };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, len, "control socket path too long: %s", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, len, "socket: %s", strerror(errno));
		return -1;
	}
	/* Never hang on a wedged daemon: every read and write gives up after 5 s. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		snprintf(err, len, "cannot connect to failoverd's control socket %s: %s (is failoverd running? "
				   "-s PATH names another socket, --pid PID skips the socket)",
			 path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* The daemon's pid, from the peer credentials of its control socket:
 * no protocol change, and it is the process actually serving the socket. */
pid_t fo_trace_daemon_pid_from_socket(const char *path)
{
	char err[512];
	struct ucred cred;
	socklen_t sl = sizeof(cred);
	int fd = connect_socket(path, err, sizeof(err));

	if (fd < 0)
		fo_trace_die("%s", err);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &sl) < 0 || cred.pid <= 0) {
		close(fd);
		fo_trace_die("cannot read the peer credentials of %s: %s; pass --pid", path, strerror(errno));
	}
	close(fd);
	return cred.pid;
}

/* One request line, one reply line. Returns the parsed reply or NULL. */
cJSON *fo_trace_control_request(const char *path, const char *req, char *err, size_t len)
{
	size_t cap = 1 << 16, used = 0;
	char *buf = malloc(cap);
	cJSON *reply = NULL;
	int fd = connect_socket(path, err, len);

	if (fd < 0 || !buf) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
		snprintf(err, len, "writing to %s: %s", path, strerror(errno));
		goto out;
	}
	for (;;) {
		ssize_t r;
		if (used + 1 >= cap) {
			char *n = cap < (64u << 20) ? realloc(buf, cap * 2) : NULL;
			if (!n) {
				snprintf(err, len, "reply from %s larger than 128 MB", path);
				goto out;
			}
			buf = n;
			cap *= 2;
		}
		r = read(fd, buf + used, cap - used - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(err, len, "reading from %s: %s", path,
				 errno == EAGAIN ? "no reply within 5 s" : strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		used += (size_t)r;
		if (memchr(buf + used - r, '\n', (size_t)r))
			break;
	}
	buf[used] = 0;
	reply = cJSON_Parse(buf);
	if (!reply)
		snprintf(err, len, "malformed reply from %s", path);
out:
	free(buf);
	close(fd);
	return reply;
}

/* Events from a file: `failoverctl events --json` (one object per line), a
 * JSON array, or a reply object {"events":[...]}. Returns an array. */
cJSON *fo_trace_events_from_file(const char *path)
{
	FILE *f = fopen(path, "r");
	cJSON *arr, *doc;
	char *text = NULL;
	size_t len = 0;

	if (!f)
		fo_trace_die("--events %s: %s", path, strerror(errno));
	{
		char chunk[65536];
		size_t r;
		while ((r = fread(chunk, 1, sizeof(chunk), f)) > 0) {
			char *n = realloc(text, len + r + 1);
			if (!n)
				fo_trace_die("--events %s: out of memory", path);
			text = n;
			memcpy(text + len, chunk, r);
			len += r;
		}
	}
	fclose(f);
	if (!text)
		fo_trace_die("--events %s: empty file", path);
	text[len] = 0;
	doc = cJSON_Parse(text);
	if (doc && cJSON_IsArray(doc)) {
		free(text);
		return doc;
	}
	if (doc && cJSON_IsObject(doc) && cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "events"))) {
		arr = cJSON_DetachItemFromObjectCaseSensitive(doc, "events");
		cJSON_Delete(doc);
		free(text);
		return arr;
	}
	cJSON_Delete(doc);
	arr = cJSON_CreateArray();
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		cJSON *o;
		if (!line[strspn(line, " \t\r")])
			continue;
		o = cJSON_Parse(line);
		if (!o || !cJSON_IsObject(o))
			fo_trace_die("--events %s: not JSON lines, an array or {\"events\":[...]}", path);
		cJSON_AddItemToArray(arr, o);
	}
	free(text);
	return arr;
}
