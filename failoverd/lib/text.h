/* SPDX-License-Identifier: MIT */
/*
 * text.h - untrusted text: how it is echoed back, and the checks the JSON
 * parser (cJSON) does not make. Used by the config parser (core/config/) and the
 * control socket (io/control_requests.c), so both judge a document the same way.
 */
#ifndef FO_TEXT_H
#define FO_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* Input bytes shown before "...". */
#define FO_SHOWN_MAX 64
/* Every shown byte may become "\xNN", plus "..." and the NUL. */
#define FO_SHOWN_BUF (FO_SHOWN_MAX * 4 + 4)

/*
 * A copy of an untrusted string fit to be quoted in a log line or an
 * error reply: at most FO_SHOWN_MAX input bytes (then "..."), printable
 * ASCII as is, everything else (control characters, DEL, bytes >= 0x80,
 * and the quote and backslash that would make the quoting ambiguous) as
 * \xNN. The result is plain ASCII: one line, valid UTF-8, no terminal
 * escapes. Returns buf.
 */
const char *fo_text_shown(const char *s, char buf[FO_SHOWN_BUF]);
/* The same for a byte range that may hold NULs. */
const char *fo_text_shown_n(const char *s, size_t len, char buf[FO_SHOWN_BUF]);

/* Offset of the first byte that is not part of valid UTF-8 (overlongs,
 * surrogates and code points past U+10FFFF are invalid), or -1. */
long fo_text_utf8_invalid_at(const char *s, size_t len);

/*
 * Offset of the first \u0000 escape inside a JSON string in this text, or
 * -1. cJSON decodes it into a NUL that ends the C string it hands out, so
 * "brake-a\u0000evil" would silently read as "brake-a": a value is then
 * not what was sent, and is refused instead. Scans the raw text (escaped
 * backslashes and text outside strings are skipped).
 */
long fo_text_json_nul_escape_at(const char *s, size_t len);

/* A Prometheus label value into a buffer, escaped by lib/prom.h's rule
 * (backslash, double quote and newline as \\, \" and \n), cut short
 * rather than overflow (never within an escape). Returns buf. */
const char *fo_text_prom_label(const char *s, char *buf, size_t len);

#endif
