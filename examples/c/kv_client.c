/* A C client of Ferry's key-value service (crates/ferry-kv, proto/ferry/kv.proto): for each
 * address given (tcp://HOST:PORT or shm:///PATH), put a small value and a 4 KiB one from a pool
 * buffer, read them back in place, delete one, and see NOT_FOUND and UNIMPLEMENTED as gRPC
 * codes. Prints "kv_client: ok ADDR" per address; exits 1 at the first failed check.
 *
 *   kv_client crates/ferry-kv/proto tcp://127.0.0.1:7000 shm:///tmp/kv.sock
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define TIMEOUT_MS 10000

enum { KEY, KEYS, PUT, VALUE, VALUES, COUNT, NTYPES };
static const char *type_names[NTYPES] = {"ferry.kv.Key",   "ferry.kv.Keys",   "ferry.kv.Put",
                                         "ferry.kv.Value", "ferry.kv.Values", "ferry.kv.Count"};
static ferry_type *types[NTYPES];

static ferry_msg *key_msg(int type, const char *key) {
    ferry_msg *m;
    CHECK(ferry_msg_new(types[type], &m));
    if (type == KEYS)
        CHECK(ferry_msg_push_bytes(m, 1, (const uint8_t *)key, strlen(key)));
    else
        CHECK(ferry_msg_set_bytes(m, 1, (const uint8_t *)key, strlen(key)));
    return m;
}

/* Calls `method` with `request` (freed here); returns the response view. */
static ferry_view *call(ferry_channel *ch, const char *method, ferry_msg *request, int response) {
    ferry_view *v;
    CHECK(ferry_channel_call(ch, method, request, types[response], TIMEOUT_MS, &v));
    ferry_msg_free(request);
    return v;
}

static uint64_t count_of(ferry_view *v) {
    uint64_t n;
    CHECK(ferry_view_u64(v, 1, &n));
    ferry_view_free(v);
    return n;
}

static void exercise(const char *addr, ferry_pool *pool) {
    ferry_channel *ch;
    CHECK(ferry_channel_open(addr, &ch));

    ferry_msg *put = key_msg(PUT, "greeting");
    CHECK(ferry_msg_push_bytes(put, 2, (const uint8_t *)"hello", 5));
    EXPECT(count_of(call(ch, "/ferry.kv.Kv/Put", put, COUNT)) == 1);

    put = key_msg(PUT, "big");
    ferry_buf *buf;
    CHECK(ferry_buf_new(pool, 4096, &buf));
    uint8_t *data = ferry_buf_data(buf);
    for (size_t i = 0; i < 4096; i++) data[i] = (uint8_t)(i * 7);
    CHECK(ferry_msg_push_buf(put, 2, buf));
    EXPECT(count_of(call(ch, "/ferry.kv.Kv/Put", put, COUNT)) == 1);

    ferry_view *v = call(ch, "/ferry.kv.Kv/Get", key_msg(KEY, "greeting"), VALUE);
    ferry_slice s;
    CHECK(ferry_view_bytes(v, 1, &s));
    EXPECT(s.len == 5 && memcmp(s.ptr, "hello", 5) == 0);
    ferry_view_free(v);

    ferry_msg *keys = key_msg(KEYS, "big");
    CHECK(ferry_msg_push_bytes(keys, 1, (const uint8_t *)"greeting", 8));
    v = call(ch, "/ferry.kv.Kv/GetM", keys, VALUES);
    ferry_slice values[2];
    size_t n;
    CHECK(ferry_view_bytes_list(v, 1, values, 2, &n));
    EXPECT(n == 2 && values[0].len == 4096);
    for (size_t i = 0; i < 4096; i++) EXPECT(values[0].ptr[i] == (uint8_t)(i * 7));
    EXPECT(values[1].len == 5 && memcmp(values[1].ptr, "hello", 5) == 0);
    ferry_view_free(v);

    EXPECT(count_of(call(ch, "/ferry.kv.Kv/Delete", key_msg(KEYS, "greeting"), COUNT)) == 1);

    /* Failed calls: the gRPC code, and a message naming the key or method. */
    ferry_msg *get = key_msg(KEY, "greeting");
    EXPECT(ferry_channel_call(ch, "/ferry.kv.Kv/Get", get, types[VALUE], TIMEOUT_MS, &v) ==
           FERRY_RPC);
    EXPECT(ferry_last_error_rpc_code() == 5 && strstr(ferry_last_error(), "greeting") != NULL);
    EXPECT(ferry_channel_call(ch, "/ferry.kv.Kv/Nope", get, types[VALUE], TIMEOUT_MS, &v) ==
           FERRY_RPC);
    EXPECT(ferry_last_error_rpc_code() == 12);
    ferry_msg_free(get);

    /* Leave the store as it was, for the next transport. */
    EXPECT(count_of(call(ch, "/ferry.kv.Kv/Delete", key_msg(KEYS, "big"), COUNT)) == 1);
    ferry_channel_free(ch);
    printf("kv_client: ok %s\n", addr);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s PROTO_DIR ADDR...\n", argv[0]);
        return 2;
    }
    const char *files[] = {"ferry/kv.proto"};
    ferry_schema *schema;
    CHECK(ferry_schema_load(files, 1, (const char **)&argv[1], 1, &schema));
    for (int t = 0; t < NTYPES; t++) CHECK(ferry_schema_type(schema, type_names[t], &types[t]));
    ferry_schema_free(schema);
    ferry_pool *pool;
    CHECK(ferry_pool_new(0, &pool));

    ferry_channel *ch;
    EXPECT(ferry_channel_open("bogus://x", &ch) == FERRY_INVALID_ARGUMENT);
    for (int i = 2; i < argc; i++) exercise(argv[i], pool);

    ferry_pool_free(pool);
    for (int t = 0; t < NTYPES; t++) ferry_type_free(types[t]);
    return 0;
}
