/* SPDX-License-Identifier: MIT */
#include "text.h"
#include "prom.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

const char *fo_text_shown_n(const char *s, size_t len, char buf[FO_SHOWN_BUF])
{
	size_t i, o = 0;

	for (i = 0; i < len && i < FO_SHOWN_MAX; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
			o += (size_t)snprintf(buf + o, 5, "\\x%02x", c);
		else
			buf[o++] = (char)c;
	}
	if (i < len) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}

const char *fo_text_shown(const char *s, char buf[FO_SHOWN_BUF])
{
	/* Only the bytes that can be shown are looked at: s may be long. */
	return fo_text_shown_n(s, strnlen(s, FO_SHOWN_MAX + 1), buf);
}

long fo_text_utf8_invalid_at(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;

	while (i < len) {
		unsigned char c = u[i];
		size_t n;
		uint32_t cp, min;

		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0)
			n = 1, cp = c & 0x1f, min = 0x80;
		else if ((c & 0xf0) == 0xe0)
			n = 2, cp = c & 0x0f, min = 0x800;
		else if ((c & 0xf8) == 0xf0)
			n = 3, cp = c & 0x07, min = 0x10000;
		else
			return (long)i;
		if (len - i <= n)
			return (long)i;
		for (size_t k = 1; k <= n; k++) {
			if ((u[i + k] & 0xc0) != 0x80)
				return (long)i;
			cp = (cp << 6) | (u[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return (long)i;
		i += n + 1;
	}
	return -1;
}

long fo_text_json_nul_escape_at(const char *s, size_t len)
{
	bool in_string = false;

	for (size_t i = 0; i < len; i++) {
		if (!in_string) {
			in_string = s[i] == '"';
			continue;
		}
		if (s[i] == '"') {
			in_string = false;
		} else if (s[i] == '\\' && i + 1 < len) {
			if (s[i + 1] == 'u' && len - i >= 6 && memcmp(s + i + 2, "0000", 4) == 0)
				return (long)i;
			i++; /* the escaped character, whatever it is */
		}
	}
	return -1;
}

const char *fo_text_prom_label(const char *s, char *buf, size_t len)
{
	size_t o = 0;

	for (; *s && o + 3 <= len; s++) {
		const char *e = fo_prom_escape_of(*s); /* two characters, or NULL */

		if (e) {
			buf[o++] = e[0];
			buf[o++] = e[1];
		} else {
			buf[o++] = *s;
		}
	}
	if (len)
		buf[o < len ? o : len - 1] = '\0';
	return buf;
}
