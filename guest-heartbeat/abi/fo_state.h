/* SPDX-License-Identifier: MIT */
/*
 * fo_state.h - the state-handover region: how an application's state travels
 * from the active member to the standby (libfoguest writes it, failoverd's
 * relay validates and copies it, the standby reads it back). Header-only,
 * libc only, no Xen: the same code is unit-tested on the host (ASan/UBSan).
 *
 * A region is FO_ST_REGION_PAGES pages: one header page, then two data slots
 * of FO_ST_SLOT_SIZE bytes. A guest shares two regions with dom0:
 *   state-out  its own commits; granted READ-ONLY to dom0
 *   state-in   what dom0 copied from the peer; granted writable to dom0
 * Grant refs: xenstore data/failover/state-out and state-in, each a list of
 * FO_ST_REGION_PAGES decimal refs separated by single spaces, written in the
 * same transaction as gref/port/abi/ready.
 *
 * Writing (one writer per region): commits alternate between the two slots.
 * Each slot has its own sequence lock: `seq` odd while the slot is written,
 * even when it is stable. The slot's record (len, cycle, commit, crc) and its
 * data are written between the two increments, with release fences, so the
 * other slot always holds the previous complete commit.
 *
 * Reading (any number of readers, none trusted by the writer and the writer
 * trusted by none): slots in the order of the commit number they claim,
 * newest first; for each, read seq (acquire), copy the record and at most
 * FO_ST_SLOT_SIZE bytes of data, fence, read seq again; a slot whose seq was
 * odd or changed is torn and skipped. The copy is then checked on its own
 * (length bound, CRC32C over record + data); nothing is ever read from the
 * shared memory twice. The first valid one wins. The reader's constants
 * (slot size, slot count) are its own: the header's copies are only
 * checked, never used as bounds.
 */
#ifndef FO_STATE_ABI_H
#define FO_STATE_ABI_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FO_ST_MAGIC        0x54534f46u /* "FOST" little-endian */
#define FO_ST_VERSION      1u
#define FO_ST_PAGE_SIZE    4096u
#define FO_ST_SLOT_SIZE    (16u * 1024u)  /* the largest state one commit carries */
#define FO_ST_SLOTS        2u
#define FO_ST_REGION_PAGES (1u + FO_ST_SLOTS * (FO_ST_SLOT_SIZE / FO_ST_PAGE_SIZE))
#define FO_ST_REGION_SIZE  (FO_ST_REGION_PAGES * FO_ST_PAGE_SIZE)

/* xenstore keys, relative to /local/domain/<domid>/ (optional: an agent
 * without state handover publishes neither). */
#define FO_ST_XS_OUT "data/failover/state-out"
#define FO_ST_XS_IN  "data/failover/state-in"

/* One slot's record, in the header page. */
struct fo_st_slot {
	uint32_t seq;      /* odd: being written; even: stable */
	uint32_t len;      /* bytes of data, 1..FO_ST_SLOT_SIZE */
	uint64_t cycle;    /* the application's cycle this state belongs to */
	uint64_t commit;   /* per-writer commit counter, > 0, grows by one per commit */
	uint32_t crc;      /* CRC32C over len, cycle, commit (little-endian) then data */
	uint32_t reserved;
};

struct fo_st_header {
	uint32_t magic;        /* FO_ST_MAGIC */
	uint32_t version;      /* FO_ST_VERSION */
	uint32_t slot_size;    /* FO_ST_SLOT_SIZE (checked, never used) */
	uint32_t n_slots;      /* FO_ST_SLOTS (checked, never used) */
	uint64_t writer_id;    /* random per writer instance (state-out), or the relay's */
	/* state-in only, written by dom0's relay: */
	uint64_t src_last_cycle; /* the source's newest application cycle the relay saw */
	uint32_t src_domid;      /* where the state came from */
	uint32_t relay_flags;    /* FO_ST_RELAY_* */
	uint64_t relay_passes;   /* +1 per relay visit (liveness of the relay) */
	uint64_t reserved[4];
	struct fo_st_slot slot[FO_ST_SLOTS];
};

#define FO_ST_RELAY_SOURCE_BAD (1u << 0) /* the source's last pages were rejected */

/* Region layout: header page, then the slots. */
static inline size_t fo_st_slot_offset(unsigned i)
{
	return FO_ST_PAGE_SIZE + (size_t)i * FO_ST_SLOT_SIZE;
}

/* ------------------------------------------------------------- CRC32C */

static const uint32_t fo_crc32c_table[256] = {
	0x00000000u, 0xf26b8303u, 0xe13b70f7u, 0x1350f3f4u, 0xc79a971fu, 0x35f1141cu,
	0x26a1e7e8u, 0xd4ca64ebu, 0x8ad958cfu, 0x78b2dbccu, 0x6be22838u, 0x9989ab3bu,
	0x4d43cfd0u, 0xbf284cd3u, 0xac78bf27u, 0x5e133c24u, 0x105ec76fu, 0xe235446cu,
	0xf165b798u, 0x030e349bu, 0xd7c45070u, 0x25afd373u, 0x36ff2087u, 0xc494a384u,
	0x9a879fa0u, 0x68ec1ca3u, 0x7bbcef57u, 0x89d76c54u, 0x5d1d08bfu, 0xaf768bbcu,
	0xbc267848u, 0x4e4dfb4bu, 0x20bd8edeu, 0xd2d60dddu, 0xc186fe29u, 0x33ed7d2au,
	0xe72719c1u, 0x154c9ac2u, 0x061c6936u, 0xf477ea35u, 0xaa64d611u, 0x580f5512u,
	0x4b5fa6e6u, 0xb93425e5u, 0x6dfe410eu, 0x9f95c20du, 0x8cc531f9u, 0x7eaeb2fau,
	0x30e349b1u, 0xc288cab2u, 0xd1d83946u, 0x23b3ba45u, 0xf779deaeu, 0x05125dadu,
	0x1642ae59u, 0xe4292d5au, 0xba3a117eu, 0x4851927du, 0x5b016189u, 0xa96ae28au,
	0x7da08661u, 0x8fcb0562u, 0x9c9bf696u, 0x6ef07595u, 0x417b1dbcu, 0xb3109ebfu,
	0xa0406d4bu, 0x522bee48u, 0x86e18aa3u, 0x748a09a0u, 0x67dafa54u, 0x95b17957u,
	0xcba24573u, 0x39c9c670u, 0x2a993584u, 0xd8f2b687u, 0x0c38d26cu, 0xfe53516fu,
	0xed03a29bu, 0x1f682198u, 0x5125dad3u, 0xa34e59d0u, 0xb01eaa24u, 0x42752927u,
	0x96bf4dccu, 0x64d4cecfu, 0x77843d3bu, 0x85efbe38u, 0xdbfc821cu, 0x2997011fu,
	0x3ac7f2ebu, 0xc8ac71e8u, 0x1c661503u, 0xee0d9600u, 0xfd5d65f4u, 0x0f36e6f7u,
	0x61c69362u, 0x93ad1061u, 0x80fde395u, 0x72966096u, 0xa65c047du, 0x5437877eu,
	0x4767748au, 0xb50cf789u, 0xeb1fcbadu, 0x197448aeu, 0x0a24bb5au, 0xf84f3859u,
	0x2c855cb2u, 0xdeeedfb1u, 0xcdbe2c45u, 0x3fd5af46u, 0x7198540du, 0x83f3d70eu,
	0x90a324fau, 0x62c8a7f9u, 0xb602c312u, 0x44694011u, 0x5739b3e5u, 0xa55230e6u,
	0xfb410cc2u, 0x092a8fc1u, 0x1a7a7c35u, 0xe811ff36u, 0x3cdb9bddu, 0xceb018deu,
	0xdde0eb2au, 0x2f8b6829u, 0x82f63b78u, 0x709db87bu, 0x63cd4b8fu, 0x91a6c88cu,
	0x456cac67u, 0xb7072f64u, 0xa457dc90u, 0x563c5f93u, 0x082f63b7u, 0xfa44e0b4u,
	0xe9141340u, 0x1b7f9043u, 0xcfb5f4a8u, 0x3dde77abu, 0x2e8e845fu, 0xdce5075cu,
	0x92a8fc17u, 0x60c37f14u, 0x73938ce0u, 0x81f80fe3u, 0x55326b08u, 0xa759e80bu,
	0xb4091bffu, 0x466298fcu, 0x1871a4d8u, 0xea1a27dbu, 0xf94ad42fu, 0x0b21572cu,
	0xdfeb33c7u, 0x2d80b0c4u, 0x3ed04330u, 0xccbbc033u, 0xa24bb5a6u, 0x502036a5u,
	0x4370c551u, 0xb11b4652u, 0x65d122b9u, 0x97baa1bau, 0x84ea524eu, 0x7681d14du,
	0x2892ed69u, 0xdaf96e6au, 0xc9a99d9eu, 0x3bc21e9du, 0xef087a76u, 0x1d63f975u,
	0x0e330a81u, 0xfc588982u, 0xb21572c9u, 0x407ef1cau, 0x532e023eu, 0xa145813du,
	0x758fe5d6u, 0x87e466d5u, 0x94b49521u, 0x66df1622u, 0x38cc2a06u, 0xcaa7a905u,
	0xd9f75af1u, 0x2b9cd9f2u, 0xff56bd19u, 0x0d3d3e1au, 0x1e6dcdeeu, 0xec064eedu,
	0xc38d26c4u, 0x31e6a5c7u, 0x22b65633u, 0xd0ddd530u, 0x0417b1dbu, 0xf67c32d8u,
	0xe52cc12cu, 0x1747422fu, 0x49547e0bu, 0xbb3ffd08u, 0xa86f0efcu, 0x5a048dffu,
	0x8ecee914u, 0x7ca56a17u, 0x6ff599e3u, 0x9d9e1ae0u, 0xd3d3e1abu, 0x21b862a8u,
	0x32e8915cu, 0xc083125fu, 0x144976b4u, 0xe622f5b7u, 0xf5720643u, 0x07198540u,
	0x590ab964u, 0xab613a67u, 0xb831c993u, 0x4a5a4a90u, 0x9e902e7bu, 0x6cfbad78u,
	0x7fab5e8cu, 0x8dc0dd8fu, 0xe330a81au, 0x115b2b19u, 0x020bd8edu, 0xf0605beeu,
	0x24aa3f05u, 0xd6c1bc06u, 0xc5914ff2u, 0x37faccf1u, 0x69e9f0d5u, 0x9b8273d6u,
	0x88d28022u, 0x7ab90321u, 0xae7367cau, 0x5c18e4c9u, 0x4f48173du, 0xbd23943eu,
	0xf36e6f75u, 0x0105ec76u, 0x12551f82u, 0xe03e9c81u, 0x34f4f86au, 0xc69f7b69u,
	0xd5cf889du, 0x27a40b9eu, 0x79b737bau, 0x8bdcb4b9u, 0x988c474du, 0x6ae7c44eu,
	0xbe2da0a5u, 0x4c4623a6u, 0x5f16d052u, 0xad7d5351u,
};

static inline uint32_t fo_crc32c_sw(uint32_t crc, const unsigned char *p, size_t len)
{
	while (len--)
		crc = fo_crc32c_table[(crc ^ *p++) & 0xffu] ^ (crc >> 8);
	return crc;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(FO_ST_NO_HW_CRC)
/* SSE4.2's crc32 instruction computes exactly this CRC, 8 bytes at a time:
 * a 16 KiB commit costs about a microsecond instead of tens. */
__attribute__((target("sse4.2"))) static inline uint32_t fo_crc32c_hw(uint32_t crc, const unsigned char *p,
									size_t len)
{
	uint64_t c = crc;

	for (; len >= 8; len -= 8, p += 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
	}
	crc = (uint32_t)c;
	for (; len; len--)
		crc = __builtin_ia32_crc32qi(crc, *p++);
	return crc;
}

static inline int fo_crc32c_have_hw(void)
{
	static int have = -1; /* racy but idempotent */

	if (have < 0) {
		__builtin_cpu_init();
		have = __builtin_cpu_supports("sse4.2") ? 1 : 0;
	}
	return have;
}
#else
static inline int fo_crc32c_have_hw(void)
{
	return 0;
}
#endif

/* Raw update (no pre/post inversion). */
static inline uint32_t fo_crc32c_update(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)buf;

#if defined(__x86_64__) && defined(__GNUC__) && !defined(FO_ST_NO_HW_CRC)
	if (fo_crc32c_have_hw())
		return fo_crc32c_hw(crc, p, len);
#endif
	return fo_crc32c_sw(crc, p, len);
}

/* CRC32C (Castagnoli), standard: init ~0, final xor ~0. */
static inline uint32_t fo_crc32c(const void *buf, size_t len)
{
	return ~fo_crc32c_update(~0u, buf, len);
}

static inline uint32_t fo_st_record_crc(uint32_t len, uint64_t cycle, uint64_t commit, const void *data)
{
	unsigned char rec[20];
	uint32_t c;
	unsigned i;

	for (i = 0; i < 4; i++)
		rec[i] = (unsigned char)(len >> (8 * i));
	for (i = 0; i < 8; i++) {
		rec[4 + i] = (unsigned char)(cycle >> (8 * i));
		rec[12 + i] = (unsigned char)(commit >> (8 * i));
	}
	c = fo_crc32c_update(~0u, rec, sizeof(rec));
	return ~fo_crc32c_update(c, data, len);
}

/* ------------------------------------------------------------- writing */

static inline volatile struct fo_st_header *fo_st_hdr(volatile void *region)
{
	return (volatile struct fo_st_header *)region;
}

/* A fresh region: no valid slot. Only before anyone else looks at it. */
static inline void fo_st_init(volatile void *region, uint64_t writer_id)
{
	volatile struct fo_st_header *h = fo_st_hdr(region);

	memset((void *)region, 0, FO_ST_PAGE_SIZE);
	h->magic = FO_ST_MAGIC;
	h->version = FO_ST_VERSION;
	h->slot_size = FO_ST_SLOT_SIZE;
	h->n_slots = FO_ST_SLOTS;
	h->writer_id = writer_id;
	atomic_thread_fence(memory_order_release);
}

/* Writer's private bookkeeping (never in shared memory). */
struct fo_st_writer {
	uint64_t commit;   /* last commit number written */
	unsigned next;     /* slot the next commit goes to */
};

/*
 * Publish `len` bytes as the state of `cycle`. Returns 0, or -1 if len is 0
 * or larger than FO_ST_SLOT_SIZE (nothing written). Wait-free: two stores
 * to seq, a copy, a CRC.
 */
static inline int fo_st_commit(volatile void *region, struct fo_st_writer *w, const void *data, size_t len,
			       uint64_t cycle)
{
	volatile struct fo_st_header *h = fo_st_hdr(region);
	volatile struct fo_st_slot *s;
	unsigned i = w->next % FO_ST_SLOTS;
	uint32_t seq;
	uint64_t commit = w->commit + 1;

	if (len == 0 || len > FO_ST_SLOT_SIZE)
		return -1;
	s = &h->slot[i];
	seq = s->seq;
	seq += (seq & 1u) ? 2u : 1u; /* odd: writing (a stray odd value is skipped past) */
	s->seq = seq;
	atomic_thread_fence(memory_order_release);
	memcpy((unsigned char *)region + fo_st_slot_offset(i), data, len);
	s->len = (uint32_t)len;
	s->cycle = cycle;
	s->commit = commit;
	s->crc = fo_st_record_crc((uint32_t)len, cycle, commit, data);
	atomic_thread_fence(memory_order_release);
	s->seq = seq + 1u; /* even: stable */
	w->commit = commit;
	w->next = i + 1;
	return 0;
}

/* ------------------------------------------------------------- reading */

enum fo_st_result {
	FO_ST_OK = 0,
	FO_ST_NONE,     /* no slot was ever committed (or the region is not set up) */
	FO_ST_CORRUPT,  /* something is there, nothing in it is valid */
	FO_ST_TORN,     /* every candidate changed under the reader: try again */
};

/* What one read found. */
struct fo_st_found {
	uint32_t len;
	uint64_t cycle;
	uint64_t commit;
	unsigned slot;
	unsigned rejected;   /* slots that held something invalid */
	const char *why;     /* for the last rejected slot (static string) */
};

/*
 * Copy the newest complete commit out of `region` (untrusted, may change
 * under us) into `buf` (at least FO_ST_SLOT_SIZE bytes: the reader never
 * lets the writer choose a bound). Never blocks, never loops on the writer.
 */
static inline enum fo_st_result fo_st_read(const volatile void *region, void *buf, struct fo_st_found *ret)
{
	const volatile struct fo_st_header *h = (const volatile struct fo_st_header *)region;
	unsigned char *out = (unsigned char *)buf;
	unsigned order[FO_ST_SLOTS], n, i, torn = 0;
	uint64_t c0, c1;

	ret->rejected = 0;
	ret->why = NULL;
	if (h->magic != FO_ST_MAGIC || h->version != FO_ST_VERSION || h->slot_size != FO_ST_SLOT_SIZE ||
	    h->n_slots != FO_ST_SLOTS) {
		if (h->magic == 0 && h->version == 0)
			return FO_ST_NONE;
		ret->rejected = 1;
		ret->why = "bad region header";
		return FO_ST_CORRUPT;
	}
	/* The slot that claims the newer commit is tried first: most reads
	 * then verify one slot, not two (the claim itself proves nothing). */
	c0 = h->slot[0].commit;
	c1 = h->slot[1].commit;
	order[0] = c1 > c0 ? 1u : 0u;
	order[1] = 1u - order[0];
	for (n = 0; n < FO_ST_SLOTS; n++) {
		const volatile struct fo_st_slot *s;
		uint32_t seq1, seq2, len, crc;
		uint64_t cycle, commit;
		const char *why = NULL;

		i = order[n];
		s = &h->slot[i];
		seq1 = s->seq;
		atomic_thread_fence(memory_order_acquire);
		if (seq1 & 1u) {
			torn++;
			continue;
		}
		len = s->len;
		cycle = s->cycle;
		commit = s->commit;
		crc = s->crc;
		if (seq1 == 0 && len == 0 && commit == 0)
			continue; /* never written */
		if (len == 0 || len > FO_ST_SLOT_SIZE)
			why = "length out of range";
		else
			memcpy(out, (const unsigned char *)region + fo_st_slot_offset(i), len);
		atomic_thread_fence(memory_order_acquire);
		seq2 = s->seq;
		if (seq2 != seq1) {
			torn++;
			continue;
		}
		if (!why && commit == 0)
			why = "commit number 0";
		if (!why && fo_st_record_crc(len, cycle, commit, out) != crc)
			why = "checksum mismatch";
		if (why) {
			ret->rejected++;
			ret->why = why;
			continue;
		}
		/* Valid. The other slot can only be newer if its claim was
		 * (it was tried first and failed, or is being rewritten). */
		ret->len = len;
		ret->cycle = cycle;
		ret->commit = commit;
		ret->slot = i;
		return FO_ST_OK;
	}
	if (torn)
		return FO_ST_TORN;
	if (ret->rejected)
		return FO_ST_CORRUPT;
	return FO_ST_NONE;
}

static inline const char *fo_st_result_name(enum fo_st_result r)
{
	switch (r) {
	case FO_ST_OK: return "ok";
	case FO_ST_NONE: return "none";
	case FO_ST_CORRUPT: return "corrupt";
	case FO_ST_TORN: return "torn";
	}
	return "?";
}

/* ------------------------------------------------------------- relaying */

/*
 * dom0's relay: the newest valid commit of `src` (the active's state-out,
 * mapped read-only) re-committed into `dst` (the standby's state-in), with
 * the same cycle. `rs` is the relay's private memory for this destination;
 * `tmp` holds FO_ST_SLOT_SIZE bytes. Copies only what is new (another
 * commit, or another writer); returns what reading `src` found, and in
 * *copied whether `dst` changed. `dst` is written only with data that passed
 * every check, so whatever the source does, the destination keeps its last
 * valid state.
 */
#define FO_ST_TORN_LIMIT 8

struct fo_st_relay {
	struct fo_st_writer w;     /* our commits into dst */
	uint64_t src_writer;       /* writer_id and commit last copied */
	uint64_t src_commit;
	uint64_t src_cycle;
	uint64_t passes;
	int started;               /* dst initialised by us */
	uint32_t src_seq[FO_ST_SLOTS]; /* the source's slot seqs at the last full read */
	unsigned torn_passes;          /* full reads in a row that found every slot torn */
	enum fo_st_result last_result;
};

/* Take over `dst` (a region someone else may have written before: a daemon
 * that restarted): keep its valid state and continue its commit numbers. */
static inline void fo_st_relay_attach(struct fo_st_relay *rs, volatile void *dst, uint32_t src_domid, void *tmp)
{
	struct fo_st_found f;
	volatile struct fo_st_header *h = fo_st_hdr(dst);

	memset(rs, 0, sizeof(*rs));
	if (fo_st_read(dst, tmp, &f) == FO_ST_OK) {
		rs->w.commit = f.commit;
		rs->w.next = f.slot + 1;
	} else {
		fo_st_init(dst, 0);
	}
	h->src_domid = src_domid;
	/* the new source's cycles are what the standby's age is measured in */
	h->src_last_cycle = rs->w.commit ? f.cycle : 0;
	rs->started = 1;
}

static inline enum fo_st_result fo_st_relay_pass(struct fo_st_relay *rs, const volatile void *src,
						 volatile void *dst, uint64_t src_last_cycle, void *tmp,
						 struct fo_st_found *found, int *copied)
{
	volatile struct fo_st_header *dh = fo_st_hdr(dst);
	const volatile struct fo_st_header *sh = (const volatile struct fo_st_header *)src;
	enum fo_st_result r;
	uint64_t writer = sh->writer_id;

	*copied = 0;
	/* Nothing new (same writer, its newest claimed commit already copied):
	 * no copy, no checksum. The claim is only used to skip work: a hostile
	 * writer that lies here only delays its own state. */
	if (rs->src_commit && writer == rs->src_writer && sh->slot[0].seq == rs->src_seq[0] &&
	    sh->slot[1].seq == rs->src_seq[1]) {
		found->rejected = 0;
		found->why = NULL;
		r = rs->last_result;
		goto stamp;
	}
	rs->src_seq[0] = sh->slot[0].seq;
	rs->src_seq[1] = sh->slot[1].seq;
	r = fo_st_read(src, tmp, found);
	/* A writer is never half-way through both slots for long: slots that
	 * stay torn pass after pass are as bad as a bad checksum. */
	rs->torn_passes = r == FO_ST_TORN ? rs->torn_passes + 1 : 0;
	if (rs->torn_passes >= FO_ST_TORN_LIMIT) {
		r = FO_ST_CORRUPT;
		found->rejected = FO_ST_SLOTS;
		found->why = "slots stay torn";
	}
	rs->last_result = r;
	if (r == FO_ST_OK && (writer != rs->src_writer || found->commit != rs->src_commit) &&
	    /* a valid older commit after a newer one of the same writer is a
	     * writer going backwards: never hand that to the standby */
	    (writer != rs->src_writer || found->commit > rs->src_commit)) {
		if (fo_st_commit(dst, &rs->w, tmp, found->len, found->cycle) == 0) {
			rs->src_writer = writer;
			rs->src_commit = found->commit;
			rs->src_cycle = found->cycle;
			*copied = 1;
		}
	}
stamp:
	/* on a copy: set, not raised (a restarted source counts from its own cycles) */
	if (src_last_cycle > dh->src_last_cycle || *copied)
		dh->src_last_cycle = src_last_cycle > rs->src_cycle ? src_last_cycle : rs->src_cycle;
	dh->relay_flags = r == FO_ST_CORRUPT ? FO_ST_RELAY_SOURCE_BAD : 0;
	dh->relay_passes = ++rs->passes;
	return r;
}

#endif
