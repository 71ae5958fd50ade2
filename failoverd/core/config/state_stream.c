/* SPDX-License-Identifier: MIT */
/*
 * state_stream.c - state_stream: the state stream across hosts
 * (stream/state_stream.h). One object for the daemon, not one per pair:
 * the two hosts have the same pairs, so one link (and one key) carries
 * them all, each message naming its pair; and which way a pair's state
 * travels follows where it is served, not the configuration, so there is
 * no per-pair role to set.
 *
 * The key file is read here, at load and at every reload: a key that is
 * readable by anyone but its owner, too short, or missing fails the
 * configuration with the file's path in the message.
 */
#include "core/config/config_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static int read_addr(struct parser *p, const cJSON *obj, const char *key, char *dst, size_t dstlen)
{
	char kp[KEYPATH_MAX];
	struct sockaddr_storage ss;
	const char *s = NULL;
	unsigned sslen;
	int rc = fo_config_read_string(p, obj, "state_stream", key, &s);

	if (rc <= 0)
		return rc;
	fo_config_keypath_join(kp, "state_stream", key);
	if (strlen(s) >= dstlen || fo_config_parse_listen(s, &ss, &sslen) < 0)
		return fo_config_fail(p, kp, "must be \"ADDRESS:PORT\" with a numeric IPv4 address or a bracketed IPv6 one "
				      "(\"192.0.2.2:7410\", \"[2001:db8::2]:7410\"), port 1..65535");
	snprintf(dst, dstlen, "%s", s);
	return 1;
}

/* The pre-shared key: a regular file only its owner may read or write,
 * FO_WIRE_KEY_MIN..FO_WIRE_KEY_MAX bytes (one trailing newline dropped). */
static int read_key(struct parser *p, struct fo_state_stream_config *ss)
{
	const char *kp = "state_stream.key_file";
	unsigned char buf[FO_WIRE_KEY_MAX + 2];
	struct stat st;
	ssize_t n;
	int fd, e;

	fd = open(ss->key_file, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		e = errno;
		return fo_config_fail(p, kp, "cannot open %s: %s", ss->key_file, strerror(e));
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return fo_config_fail(p, kp, "%s is not a regular file", ss->key_file);
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		close(fd);
		return fo_config_fail(p, kp, "%s has mode %04o: a key readable or writable by group or others is refused "
				      "(chmod 0600 %s)", ss->key_file, (unsigned)(st.st_mode & 07777), ss->key_file);
	}
	n = read(fd, buf, sizeof(buf));
	e = errno;
	close(fd);
	if (n < 0)
		return fo_config_fail(p, kp, "cannot read %s: %s", ss->key_file, strerror(e));
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if (n < (ssize_t)FO_WIRE_KEY_MIN || n > (ssize_t)FO_WIRE_KEY_MAX) {
		memset(buf, 0, sizeof(buf));
		return fo_config_fail(p, kp, "%s holds %s%zd bytes of key, %u to %u needed (e.g. `openssl rand -hex 32 >%s`)",
				      ss->key_file, n > (ssize_t)FO_WIRE_KEY_MAX ? "more than " : "",
				      n > (ssize_t)FO_WIRE_KEY_MAX ? (ssize_t)FO_WIRE_KEY_MAX : n, FO_WIRE_KEY_MIN,
				      FO_WIRE_KEY_MAX, ss->key_file);
	}
	memcpy(ss->key.k, buf, (size_t)n);
	ss->key.len = (size_t)n;
	memset(buf, 0, sizeof(buf));
	return 0;
}

int fo_config_parse_state_stream(struct parser *p, const cJSON *obj, struct fo_state_stream_config *ss)
{
	const char *const *keys = fo_config_keys(CFG_STATE_STREAM);
	const char *s = NULL;
	int rc;

	rc = fo_config_check_object(p, obj, "state_stream", keys);
	if (rc < 0)
		return rc;
	rc = read_addr(p, obj, "listen", ss->listen, sizeof(ss->listen));
	if (rc < 0)
		return rc;
	rc = read_addr(p, obj, "peer", ss->peer, sizeof(ss->peer));
	if (rc < 0)
		return rc;
	if (!ss->listen[0] && !ss->peer[0])
		return fo_config_fail(p, "state_stream", "needs \"listen\" (to receive the other host's state), \"peer\" (to "
				      "send this host's) or both; omit state_stream for no stream");
	rc = fo_config_require(p, obj, "state_stream", "key_file");
	if (rc < 0)
		return rc;
	rc = fo_config_read_string(p, obj, "state_stream", "key_file", &s);
	if (rc < 0)
		return rc;
	rc = fo_config_check_abs_path(p, "state_stream.key_file", s, sizeof(ss->key_file));
	if (rc < 0)
		return rc;
	snprintf(ss->key_file, sizeof(ss->key_file), "%s", s);
	rc = read_key(p, ss);
	if (rc < 0)
		return rc;
	ss->enabled = true;
	return 0;
}
